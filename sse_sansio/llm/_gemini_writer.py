# Writing Gemini streamGenerateContent?alt=sse chunks (issue 35, item 1): the
# Translator's target frames for this API.  docs/llm-translation.rst has the stop table.
#
# Source: API reference, GenerateContentResponse: each event is data-only,
# {"candidates": [{"content": {"parts": [...], "role": "model"}, "finishReason",
# "index"}], "usageMetadata": {"promptTokenCount", "candidatesTokenCount",
# "cachedContentTokenCount", "thoughtsTokenCount"}, "modelVersion"}; a part is
# {"text"}, {"text", "thought": true} (a thought summary) or {"functionCall": {"id",
# "name", "args"}}.  There is no terminal event: the last chunk's finishReason says
# how the answer ended, so a cut gets no finishReason at all.
#
# Function calls arrive whole in Gemini, one part each: a call is written when it is
# whole (its arguments parsed into "args"; arguments that are not a JSON object become
# {}).  A call the source never said was whole (OpenAI Chat marks calls whole only when
# the choice finishes with success) is written before the finish chunk when its
# arguments parse as a JSON object, and left out when they do not (cut half-way: never
# sent as {}); after a cut, no call that was not whole is written.  Stops: finishReason is STOP
# (tool calls included), MAX_TOKENS, SAFETY or OTHER; a refusal is SAFETY (the
# nearest: the answer was withheld).

from __future__ import annotations

from typing import Any, ClassVar, Final

from sse_sansio._events import Event

from ._gemini import Gemini
from ._outcome import PayloadError
from ._usage import Usage
from ._writing import Writer, figures, frame, parsed_object

__all__ = ["GeminiWriter"]

_USAGE: Final = (
    "promptTokenCount",
    "candidatesTokenCount",
    "cachedContentTokenCount",
    "thoughtsTokenCount",
)
# The finish reasons and block reasons that withhold the answer for its content.
_FILTERS: Final = (
    "SAFETY",
    "RECITATION",
    "BLOCKLIST",
    "PROHIBITED_CONTENT",
    "SPII",
    "IMAGE_SAFETY",
)


class GeminiWriter(Writer):
    dialect = Gemini
    STOPS: ClassVar[dict[str, str]] = {"MAX_TOKENS": "length", **dict.fromkeys(_FILTERS, "filter")}
    WORDS: ClassVar[dict[str, str]] = {
        "stop": "STOP",
        "tool_calls": "STOP",
        "length": "MAX_TOKENS",
        "filter": "SAFETY",
        "refusal": "SAFETY",
        "other": "OTHER",
    }

    def __init__(self) -> None:
        # Call n -> [id, name, argument fragments, the whole arguments once it is whole],
        # in the order the calls began, until it is written.
        self.pending: dict[int, list[Any]] = {}

    @staticmethod
    def _chunk(parts: list[Any], **candidate: Any) -> Event:
        content = {"parts": parts, "role": "model"}
        return frame({"candidates": [{"content": content, **candidate, "index": 0}]})

    def text(self, fragment: str) -> list[Event]:
        return [self._chunk([{"text": fragment}])]

    def reasoning(self, fragment: str) -> list[Event]:
        return [self._chunk([{"text": fragment, "thought": True}])]

    def tool_start(self, n: int, id: str, name: str) -> list[Event]:
        self.pending[n] = [id, name, [], None]
        return []

    def tool_delta(self, n: int, fragment: str) -> list[Event]:
        self.pending[n][2].append(fragment)  # Gemini sends a call whole: see tool_end
        return []

    def tool_end(self, n: int, arguments: str) -> list[Event]:
        self.pending[n][3] = arguments
        return self._ready()

    def _ready(self) -> list[Event]:
        """The whole calls at the front, in the order they began (a call that ends
        before an earlier one waits for it)."""
        out: list[Event] = []
        while self.pending:
            n = next(iter(self.pending))
            id, name, _, arguments = self.pending[n]
            if arguments is None:
                break
            del self.pending[n]
            call = {"id": id, "name": name, "args": _args(id, name, arguments)}
            out.append(self._chunk([{"functionCall": call}]))
        return out

    def _unfinished(self) -> list[Event]:
        """At the finish: the calls never said whole go when their arguments are a
        JSON object all the same, and are left out when they are not."""
        for n, call in list(self.pending.items()):
            if call[3] is None:
                arguments = "".join(call[2])
                if parsed_object(arguments) is None:
                    del self.pending[n]
                else:
                    call[3] = arguments
        return self._ready()

    def finish(self, kind: str, usage: Usage) -> list[Event]:
        out = self._unfinished()
        last: dict[str, Any] = {
            "candidates": [
                {
                    "content": {"parts": [], "role": "model"},
                    "finishReason": self.WORDS[kind],
                    "index": 0,
                }
            ]
        }
        given = figures(usage, _USAGE)
        if given:
            last["usageMetadata"] = given
        return [*out, frame(last)]


def _args(id: str, name: str, arguments: str) -> dict[str, Any]:
    """A whole call's arguments as functionCall.args, which holds an object only: no
    arguments are ``{}``; arguments that are not a JSON object cannot be written, and
    are never replaced by an object made up for them (issue 41, item 8)."""
    if not arguments.strip():
        return {}
    value = parsed_object(arguments)
    if value is None:
        raise PayloadError(
            f"the tool call {name!r} (id {id!r}) has arguments that are not a JSON object "
            f"({arguments[:80]!r}); Gemini's functionCall.args holds an object only, so "
            "the call cannot be written in Gemini's dialect",
            offset=-1,
        )
    return value
