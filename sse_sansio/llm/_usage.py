# Token usage: the figures an API reports for one streamed response, and how far to
# trust them.
#
# Every API reports usage in its own chunk and its own words (docs/llm-usage-answer.rst
# has the table, each dialect's page the source): OpenAI Chat Completions in one last
# chunk before [DONE] (only with stream_options.include_usage), OpenAI Responses in the
# terminal event's response.usage, Anthropic split across message_start and the
# cumulative message_delta, Gemini in every chunk's usageMetadata (the last one final),
# the AI SDK UI stream only where the backend puts it in messageMetadata.
#
# Strategy: a dialect reads the figures out of the payload it already decoded (a dict
# lookup or four: reading usage never decodes anything again, so a 1 MiB event costs
# one json.loads), merges them by its API's rules with merge(), and says whether they
# are the API's final ones.  Invariant: a figure is an exact non-negative int or None;
# whatever else a payload holds there (a string, a bool, a negative number) is None.
#
# Provenance, figure by figure (issue 42, item 4): a usage's ``provenance`` is its word
# for the whole ("reported", "partial", "unavailable") and says, for each figure, where
# that one came from: the API's final report, an interim one, or the caller ("given":
# the input tokens a gateway counted itself, Translator(input_tokens=)).  It is a str
# that compares, hashes and prints in JSON as its word, so code that asks
# ``usage.provenance == "reported"`` reads as it always did.  Figures from the API all
# carry the usage's word: an API's final report includes, by its own rules, what its
# earlier events said (Anthropic's message_start input under message_delta's output),
# so only a caller's figure stands apart.  A dialect names a word, never a Provenance:
# Usage turns the word into the shared instance for its figures (33 of them, made
# once), a dict lookup per usage report.

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import product
from typing import Any, Literal, cast

__all__ = ["FIGURES", "UNAVAILABLE", "Provenance", "Usage", "count", "given", "merge", "settled"]

#: The word for a usage as a whole.
Word = Literal["reported", "partial", "unavailable"]
#: Where one figure came from.
Source = Literal["reported", "partial", "given"]
#: The four figures, in the order Usage holds them.
FIGURES = ("input_tokens", "output_tokens", "cached_tokens", "reasoning_tokens")


class Provenance(str):
    """Where a :class:`Usage`'s figures came from: a word for the whole, one per figure.

    It is the str of its word (``"reported"``, ``"partial"`` or ``"unavailable"``: see
    :class:`Usage`), and compares and hashes as that word.  Each figure's attribute
    says where that figure came from:

    - ``"reported"``: the API's final report (by the API's rules, which may spread it
      over several events, as Anthropic's ``message_start`` and ``message_delta``);
    - ``"partial"``: an interim report, the final one never came (a cut);
    - ``"given"``: the caller, not the API (the input tokens a gateway counted,
      :class:`Translator`'s ``input_tokens``);
    - ``None``: there is no such figure.

    Args:
        word: The word for the whole.
        input_tokens, output_tokens, cached_tokens, reasoning_tokens: Each figure's
            source.
    """

    __figures: tuple[Source | None, ...]

    def __new__(
        cls,
        word: Word,
        input_tokens: Source | None = None,
        output_tokens: Source | None = None,
        cached_tokens: Source | None = None,
        reasoning_tokens: Source | None = None,
    ) -> Provenance:
        sources = (input_tokens, output_tokens, cached_tokens, reasoning_tokens)
        known = [s for s in sources if s is not None]
        if (
            word not in _WORDS
            or not all(s in _SOURCES for s in known)
            or (word == "unavailable" and known)  # "unavailable": no figure at all
        ):
            raise ValueError(
                f"Provenance: the word is one of {_WORDS} ('unavailable' only when no "
                f"figure has a source) and each figure's source one of {_SOURCES} or "
                f"None; got {word!r}, {sources!r}"
            )
        self = super().__new__(cls, word)
        self.__figures = sources
        return self

    @property
    def word(self) -> Word:
        """The word for the whole, as a plain str."""
        return cast("Word", str(self))

    @property
    def input_tokens(self) -> Source | None:
        """Where ``input_tokens`` came from (None: there is none)."""
        return self.__figures[0]

    @property
    def output_tokens(self) -> Source | None:
        """Where ``output_tokens`` came from (None: there is none)."""
        return self.__figures[1]

    @property
    def cached_tokens(self) -> Source | None:
        """Where ``cached_tokens`` came from (None: there is none)."""
        return self.__figures[2]

    @property
    def reasoning_tokens(self) -> Source | None:
        """Where ``reasoning_tokens`` came from (None: there is none)."""
        return self.__figures[3]

    def __repr__(self) -> str:
        named = ", ".join(f"{n}={s!r}" for n, s in zip(FIGURES, self.__figures, strict=True) if s)
        return f"Provenance({str(self)!r}{', ' if named else ''}{named})"

    # A value: it pickles as itself, through its public name (a str subclass would
    # otherwise pickle through copyreg's private reconstructor).
    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (str(self), *self.__figures))

    def __deepcopy__(self, memo: dict[int, Any]) -> Provenance:
        return self  # immutable


_WORDS: tuple[Word, ...] = ("reported", "partial", "unavailable")
_SOURCES: tuple[Source, ...] = ("reported", "partial", "given")


def _uniform(word: str, missing: tuple[bool, ...]) -> Provenance:
    """The provenance of figures that all came from the API, the usage's word for each."""
    source = cast("Source | None", None if word == "unavailable" else word)
    return Provenance(cast("Word", word), *(None if gone else source for gone in missing))


# Every uniform provenance, made once: (word, which figures are None) -> Provenance.
_UNIFORM: dict[tuple[str, tuple[bool, ...]], Provenance] = {
    (word, missing): _uniform(word, missing)
    for word in _WORDS
    for missing in product((False, True), repeat=4)
    if word != "unavailable" or all(missing)
}


@dataclass(frozen=True, init=False)  # __init__ below: the word becomes a Provenance
class Usage:
    """The token usage of one streamed response, as far as the stream reported it.

    Attributes:
        input_tokens: The prompt's tokens, as the API counts them (for Anthropic,
            without the cached ones: see :doc:`/llm-usage-answer`).
        output_tokens: The answer's tokens (for OpenAI, reasoning tokens included; for
            Gemini, without the thoughts).
        cached_tokens: Prompt tokens read from the API's prompt cache.
        reasoning_tokens: Tokens the model spent thinking, where the API counts them.
        provenance: ``"reported"``: the API's final figures arrived.  ``"partial"``:
            some figures are known, but not the API's final ones (Anthropic's
            ``message_start`` before a cut, a Gemini chunk before the last, or only
            the figure a caller gave).  ``"unavailable"``: no figures (every figure
            is ``None``).  Given as one of these words, it is kept as a
            :class:`Provenance`, which also says where each figure came from.

    A figure the API did not give is ``None``, never a guessed 0.

    Raises:
        ValueError: a provenance that is none of the words, ``"unavailable"`` with a
            figure, or a :class:`Provenance` whose figures are not this usage's.
    """

    input_tokens: int | None
    output_tokens: int | None
    cached_tokens: int | None
    reasoning_tokens: int | None
    provenance: Provenance

    def __init__(
        self,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        cached_tokens: int | None = None,
        reasoning_tokens: int | None = None,
        provenance: Provenance | Word = "unavailable",
    ) -> None:
        put = object.__setattr__  # frozen
        put(self, "input_tokens", input_tokens)
        put(self, "output_tokens", output_tokens)
        put(self, "cached_tokens", cached_tokens)
        put(self, "reasoning_tokens", reasoning_tokens)
        missing = (
            input_tokens is None,
            output_tokens is None,
            cached_tokens is None,
            reasoning_tokens is None,
        )
        # A dialect's word, the common case, in one lookup (a Provenance would match
        # its word's key too, so it goes the long way).
        uniform = _UNIFORM.get((provenance, missing)) if type(provenance) is str else None
        put(self, "provenance", uniform or _provenance(provenance, missing))


def _provenance(word: Provenance | str, missing: tuple[bool, ...]) -> Provenance:
    """The Provenance a usage with these figures keeps for ``word``."""
    if word.__class__ is Provenance:
        sources = [getattr(word, name) for name in FIGURES]
        if missing == tuple(source is None for source in sources):
            return word
        if "given" in sources:  # a caller's figure is not the API's to re-mark
            raise ValueError(f"Usage: {word!r} does not name this usage's figures")
        word = str(word)  # dataclasses.replace() with other figures: the API's word
    uniform = _UNIFORM.get((word, missing))
    if uniform is None:
        raise ValueError(
            f"Usage: provenance must be one of {_WORDS}, and 'unavailable' only without "
            f"figures; got {word!r} with {sum(not m for m in missing)} figure(s)"
        )
    return uniform


UNAVAILABLE = Usage()


def count(obj: Any, *path: str) -> int | None:
    """``obj[path[0]][path[1]]...`` when it is a non-negative int (not a bool), else None."""
    for key in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    if isinstance(obj, int) and not isinstance(obj, bool) and obj >= 0:
        return obj
    return None


def merge(old: Usage, new: Usage) -> Usage:
    """``new``'s figures where it has them, ``old``'s elsewhere; ``new``'s provenance.

    ``new`` with no figure at all changes nothing: an empty usage object is no report.
    """
    figures = (new.input_tokens, new.output_tokens, new.cached_tokens, new.reasoning_tokens)
    if all(figure is None for figure in figures):
        return old
    return Usage(
        old.input_tokens if new.input_tokens is None else new.input_tokens,
        old.output_tokens if new.output_tokens is None else new.output_tokens,
        old.cached_tokens if new.cached_tokens is None else new.cached_tokens,
        old.reasoning_tokens if new.reasoning_tokens is None else new.reasoning_tokens,
        new.provenance.word,  # the API's word for every figure: see Provenance
    )


def settled(usage: Usage) -> Usage:
    """``usage``'s figures as the API's final report."""
    figures = (usage.input_tokens, usage.output_tokens, usage.cached_tokens)
    return Usage(*figures, usage.reasoning_tokens, "reported")


def given(usage: Usage, input_tokens: int | None) -> Usage:
    """``usage`` with the caller's input tokens where the API gave none.

    The API's figures win; a figure of the caller's makes a usage without any other
    ``"partial"`` (known, but not the API's final report), and is marked ``"given"``.
    """
    if input_tokens is None or usage.input_tokens is not None:
        return usage
    word = usage.provenance.word
    provenance = Provenance(
        "partial" if word == "unavailable" else word,
        "given",
        *(getattr(usage.provenance, n) for n in FIGURES[1:]),
    )
    return replace(usage, input_tokens=input_tokens, provenance=provenance)
