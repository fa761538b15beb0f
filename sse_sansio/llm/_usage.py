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

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["UNAVAILABLE", "Provenance", "Usage", "count", "merge"]

Provenance = Literal["reported", "partial", "unavailable"]


@dataclass(frozen=True)
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
            some figures arrived, but not the final ones (Anthropic's
            ``message_start`` before a cut, a Gemini chunk before the last).
            ``"unavailable"``: no figures arrived (every figure is ``None``).

    A figure the API did not give is ``None``, never a guessed 0.
    """

    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    reasoning_tokens: int | None = None
    provenance: Provenance = "unavailable"


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
        new.provenance,
    )
