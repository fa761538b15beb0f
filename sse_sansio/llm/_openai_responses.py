# OpenAI Responses: named events, each a JSON object whose "type" is the event's name
# (response.created, response.output_text.delta, ..., response.completed).
#
# Source: API reference, "Responses streaming events" (response.completed,
# response.incomplete with response.incomplete_details.reason max_output_tokens or
# content_filter, response.failed with response.error, and the `error` event, whose
# fields arrive at the top level or, as the API sends them today, under "error").
# docs/llm-openai-responses.rst is this module's page.
#
# Rules: response.completed, .incomplete or .failed ends the answer (completed, stopped,
# failed), as does an error event; the terminal event's response.usage has the figures.
# The answer is the output text deltas, the reasoning deltas and the function calls,
# keyed by their item's id (by their place in the output where an item has no id).

from __future__ import annotations

from typing import Any, Final

from sse_sansio._events import Event

from ._dialect import (
    NO_EVENT_TYPE,
    DeltaShape,
    Dialect,
    dumps,
    failed,
    get,
    kind_of,
    loads,
    loads_lenient,
    quoted,
    text,
)
from ._outcome import Verdict
from ._usage import Usage, count, merge

__all__ = ["OpenAIResponses"]

_PREFIX: Final = "response."  # every documented event's name starts so, but error's
_TERMINAL: Final = ("response.completed", "response.incomplete", "response.failed")
# The events that move the answer besides every "*.delta" and "*.done".
_MOVES: Final = frozenset(
    {
        "response.output_item.added",
        "response.content_part.added",
        *_TERMINAL,
        "error",
    }
)


class OpenAIResponses(Dialect):
    """OpenAI Responses: response.completed, .incomplete or .failed ends the stream."""

    name = "openai-responses"
    terminal = "response.completed, response.incomplete or response.failed"

    INCOMPLETE: Final[dict[str, str]] = {
        "max_output_tokens": "the response reached max_output_tokens: raise it, or continue",
        "content_filter": "the content filter cut the response short",
    }

    # A text delta: event response.output_text.delta, {"type", "item_id",
    # "output_index", "content_index", "delta": TEXT, "sequence_number", "logprobs": []}.
    text_delta = DeltaShape(
        "response.output_text.delta",
        ("delta",),
        fixed=((("type",), "response.output_text.delta"),),
        latest=("sequence_number", "obfuscation"),
        empty=("logprobs",),
    )
    named_events = True
    detect_first = True

    # -- tracking ------------------------------------------------------------------

    def decode(self, event: Event) -> Any:
        # Every documented event is JSON with a "type"; their names all start so.
        if event.type in (NO_EVENT_TYPE, "error") or event.type.startswith(_PREFIX):
            return loads(event)
        return loads_lenient(event)

    def observe(self, event: Event, payload: Any) -> Verdict | None:
        kind = kind_of(event, payload)
        if kind == "response.output_text.delta":  # the hot path: most of the events
            delta = payload.get("delta") if type(payload) is dict else None
            if type(delta) is str:
                self.parts.text.append(delta)
            return None
        if kind in _TERMINAL:
            # The Response object's usage: "input_tokens_details.cached_tokens",
            # "output_tokens_details.reasoning_tokens"; null while it is in progress.
            usage = get(payload, "response", "usage")
            found = Usage(
                count(usage, "input_tokens"),
                count(usage, "output_tokens"),
                count(usage, "input_tokens_details", "cached_tokens"),
                count(usage, "output_tokens_details", "reasoning_tokens"),
                "reported",
            )
            self.figures = merge(self.figures, found)
        else:
            self._assemble(kind, payload)
        if kind == "response.completed":
            return Verdict("completed", "the response completed (response.completed)", "completed")
        if kind == "response.incomplete":
            word = text(get(payload, "response", "incomplete_details", "reason"))
            explanation = self.INCOMPLETE.get(
                word or "", "the response ended incomplete for a reason this version does not know"
            )
            return Verdict(
                "stopped", f"{explanation} (response.incomplete, reason {quoted(word)})", word
            )
        if kind == "response.failed":
            return failed(get(payload, "response", "error"), "(response.failed)")
        if kind == "error":
            error = get(payload, "error")
            return failed(error if isinstance(error, dict) else payload, "(an error event)")
        return None

    def _assemble(self, kind: Any, payload: Any) -> None:
        """The answer's part of an event: text, reasoning, a function call's pieces."""
        parts = self.parts  # (output_text.delta: observe()'s hot path)
        if kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            parts.add_reasoning(get(payload, "delta"))
        elif kind in ("response.output_item.added", "response.output_item.done"):
            item = get(payload, "item")
            if get(item, "type") != "function_call":
                return
            key = self._item_key(get(item, "id"), get(payload, "output_index"))
            if key is None:
                return  # no place in the output to key the call by
            call = parts.call(key, id=get(item, "call_id"), name=get(item, "name"))
            if kind == "response.output_item.done":
                self._done(call, get(item, "arguments"))
        elif kind in (
            "response.function_call_arguments.delta",
            "response.function_call_arguments.done",
        ):
            key = self._fragment_key(get(payload, "item_id"), get(payload, "output_index"))
            if key is None or not parts.known(key):
                return
            if kind.endswith(".delta"):
                parts.add_arguments(key, get(payload, "delta"))
            else:
                self._done(parts.call(key), get(payload, "arguments"))

    # A call is keyed by its item's id (issue 42, item 1): two items at one output_index
    # stay two calls; an item without an id is keyed by its place, as the API places it.

    def _item_key(self, item_id: Any, index: Any) -> object:
        """The key of a function_call item: its id, or else its output_index."""
        if isinstance(item_id, str) and item_id:
            if isinstance(index, int):
                self.slots[index] = item_id  # a fragment naming only its place
            return item_id
        return index if isinstance(index, int) else None

    def _fragment_key(self, item_id: Any, index: Any) -> object:
        """The key of the call an arguments event belongs to: its item's, by id, else
        the call latest begun at its output_index."""
        if isinstance(item_id, str) and self.parts.known(item_id):
            return item_id
        return self.open_key(index) if isinstance(index, int) else None

    @staticmethod
    def _done(call: Any, arguments: Any) -> None:
        # The .done events repeat the whole arguments: they are the API's final text.
        if isinstance(arguments, str):
            call.final = arguments
        call.complete = True

    # -- progress: every delta and done, an item or part added, the end, an error --------

    def moves(self, event: Event, payload: Any) -> bool:
        kind = kind_of(event, payload)
        return isinstance(kind, str) and (kind.endswith((".delta", ".done")) or kind in _MOVES)

    # -- reframing: the error event, {"type": "error", "code", "message", "param"} -------

    @staticmethod
    def standard_error(event: Event, payload: Any) -> bool:
        kind = get(payload, "type")
        if event.type.startswith(_PREFIX) or kind == "response.failed":
            return True  # response.failed carries response.error: standard
        # The error event's fields at the top level, or under "error" (as sent today).
        said = isinstance(get(payload, "message"), str) or isinstance(get(payload, "error"), dict)
        return event.type == "error" and kind == "error" and said

    @staticmethod
    def error_event(message: str, kind: str | None) -> Event:
        body = {"type": "error", "code": kind, "message": message, "param": None}
        return Event(type="error", data=dumps(body))

    # -- detection: the names that start with "response." are this API's ----------------

    @staticmethod
    def claims_event(event: Event) -> bool:
        return event.type.startswith(_PREFIX)

    @staticmethod
    def claims_payload(kind: str | None, payload: Any) -> bool:
        return kind is not None and kind.startswith(_PREFIX)
