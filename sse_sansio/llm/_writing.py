# Writing a dialect: the neutral steps of an answer, and the base class of the writers
# that turn them into one API's own streaming frames (issue 35, item 1).
#
# The Translator (_translator.py) reads a source stream with the source dialect's own
# reading (its Tracker and the Parts it fills) and hands the target's writer neutral
# steps, in order:
#   text(fragment), reasoning(fragment)           the answer's text and thinking;
#   tool_start(n, id, name), tool_delta(n, text)  a tool call begins, its arguments
#   tool_end(n, arguments)                        stream, and it is whole (the final
#                                                 arguments text, which may be resent);
#   finish(kind, usage)                           the answer ended: completed or stopped,
#                                                 with a neutral stop kind (KINDS below);
#   fail(message, error_type)                     the API reported an error.
# A cut gets only flush() (content a writer held back, where one holds any back), never
# the target's terminal frame (nor, for Gemini, a finishReason); an error gets flush()
# before fail().
#
# Each writer lives in its own module beside its dialect's (_<dialect>_writer.py) and
# names its dialect by class, never by a quoted name (tests/llm/test_llm_registry.py);
# the registry (_registry.py) pairs it with its dialect, and the Translator finds it
# there by the dialect's name.  A writer holds plain data only (counters, ids, open
# blocks), so a Translator pickles through its public class.
#
# Invariant: every frame is an Event built by the Event constructor from json.dumps
# output (so it serializes to a valid event), each in the shape the API documents;
# a figure of usage the source did not give is left out, never written as 0.

from __future__ import annotations

import json
from typing import Any, ClassVar, Final

from sse_sansio._events import Event, new_event

from ._dialect import Dialect
from ._usage import Usage

__all__ = [
    "EVENT_STREAM_HEADERS",
    "KINDS",
    "Writer",
    "figures",
    "frame",
    "parsed",
    "parsed_object",
]

#: The neutral stop kinds: why an answer ended, in words every writer maps to its API's.
#: "stop" and "tool_calls" are success (completed); the rest are stops (stopped).
KINDS: Final = ("stop", "tool_calls", "length", "filter", "refusal", "other")

#: What every event-stream response needs (the AI SDK adds its own header).
EVENT_STREAM_HEADERS: Final[dict[str, str]] = {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
}


_ENCODE: Final = json.JSONEncoder(ensure_ascii=False).encode  # made once: dumps() makes
# a new encoder on every call that passes an option.


_ENCODE_ASCII: Final = json.JSONEncoder().encode


def frame(payload: Any, type: str = "message") -> Event:
    """One event whose data is ``payload`` in JSON (characters beyond ASCII kept, but
    when a string holds a lone surrogate, valid JSON that UTF-8 cannot carry, every
    character beyond ASCII is escaped: issue 41, item 8).

    Made past the Event constructor's checks, which hold already: ``type`` is one of
    the writers' constants, and JSON text has no line break (json escapes every
    control character inside a string).
    """
    data = _ENCODE(payload)
    if not data.isascii():
        try:
            data.encode()
        except UnicodeEncodeError:
            data = _ENCODE_ASCII(payload)
    return new_event(Event, (type, data, "", None, -1, -1, None))


def figures(usage: Usage, names: tuple[str | None, str | None, str | None, str | None]) -> Any:
    """The usage figures the source gave, as a JSON object under the API's ``names``
    (input, output, cached, reasoning: a dotted path such as
    ``"prompt_tokens_details.cached_tokens"``, or None where the API has no field)."""
    values = (usage.input_tokens, usage.output_tokens, usage.cached_tokens, usage.reasoning_tokens)
    found: dict[str, Any] = {}
    for name, value in zip(names, values, strict=True):
        if name is None or value is None:
            continue
        *outer, last = name.split(".")
        place = found
        for key in outer:
            place = place.setdefault(key, {})
        place[last] = value
    return found


def parsed(arguments: str) -> tuple[bool, Any]:
    """A tool call's arguments decoded: (True, the JSON value), or (False, None) when
    they are not JSON (the model wrote something else, or a cut left half of it)."""
    try:
        return True, json.loads(arguments)
    except (ValueError, RecursionError):
        return False, None


def parsed_object(arguments: str) -> dict[str, Any] | None:
    """A tool call's arguments as a JSON object, or None when they are not one (empty,
    cut half-way, another JSON value): an API that sends arguments whole needs one."""
    try:
        value = json.loads(arguments)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


class Writer:
    """One API's frames for the neutral steps of an answer; state of one stream."""

    #: The dialect this writer writes.
    dialect: ClassVar[type[Dialect]]
    #: The response headers the API's stream carries.
    headers: ClassVar[dict[str, str]] = EVENT_STREAM_HEADERS
    #: Reading: the API's own words for a stop that is not success -> neutral kind
    #: (a word not listed is "other").
    STOPS: ClassVar[dict[str, str]] = {}
    #: Writing: neutral kind -> the API's word (the nearest where none is exact).
    WORDS: ClassVar[dict[str, str]] = {}
    #: The prompt's tokens known before the stream (Translator's input_tokens), for an
    #: opening frame that carries usage; None: unknown.
    input_tokens: int | None = None

    def text(self, fragment: str) -> list[Event]:  # pragma: no cover - every writer has it
        raise NotImplementedError

    def reasoning(self, fragment: str) -> list[Event]:  # pragma: no cover
        raise NotImplementedError

    def tool_start(self, n: int, id: str, name: str) -> list[Event]:  # pragma: no cover
        raise NotImplementedError

    def tool_delta(self, n: int, fragment: str) -> list[Event]:  # pragma: no cover
        raise NotImplementedError

    def tool_end(self, n: int, arguments: str) -> list[Event]:  # pragma: no cover
        raise NotImplementedError

    def finish(self, kind: str, usage: Usage) -> list[Event]:  # pragma: no cover
        raise NotImplementedError

    def flush(self) -> list[Event]:
        """What the writer holds back that the answer has, before a cut or an error
        ends the stream (content only: never a terminal frame)."""
        return []

    def fail(self, message: str, error_type: str | None) -> list[Event]:
        """The API's own error event (the one its Reframer writes)."""
        return [self.dialect.error_event(message, error_type)]
