# Anthropic Messages: named events, each a JSON object whose "type" is the event's name.
#
# Sources: "Streaming Messages" (message_start, content_block_start/delta/stop,
# message_delta carrying stop_reason, message_stop; ping; `event: error` such as
# overloaded_error; "handle unknown event types gracefully") and "Handling stop reasons"
# (end_turn, stop_sequence, tool_use, max_tokens, pause_turn, refusal,
# model_context_window_exceeded).  docs/llm-anthropic.rst is this module's page.
#
# Rules: message_stop ends the answer, and the stop_reason of message_delta (or
# message_start) says how; an error event fails it.  Usage is split across
# message_start and the cumulative message_delta.  The answer is the content blocks:
# text, thinking, tool_use inputs streamed as partial JSON.

from __future__ import annotations

from typing import Any, Final

from sse_sansio._events import Event

from ._dialect import (
    NO_EVENT_TYPE,
    DeltaShape,
    Dialect,
    dumps,
    failed,
    finish_verdict,
    get,
    kind_of,
    quoted,
)
from ._outcome import Verdict
from ._usage import Usage, count, merge

__all__ = ["Anthropic"]

_EVENTS: Final = frozenset(
    {
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
        "ping",
        "error",
    }
)
# The event names only this API uses ("error" and "ping" are left out: other APIs send
# events of those names too).
_ONLY: Final = _EVENTS - {"error", "ping"}
# Progress: all but message_start (sent before the model writes) and ping.
_MOVES: Final = _EVENTS - {"message_start", "ping"}


class Anthropic(Dialect):
    """Anthropic Messages: message_stop ends the stream; message_delta says why."""

    name = "anthropic"
    terminal = "message_stop"
    json_types = _EVENTS | {NO_EVENT_TYPE}

    STOP: Final[dict[str, tuple[bool, str]]] = {
        "end_turn": (True, "the model finished its turn"),
        "stop_sequence": (True, "the model emitted one of your stop sequences"),
        "tool_use": (True, "the model is calling tools: run them and send back the results"),
        "max_tokens": (False, "the answer reached max_tokens: raise it, or continue the answer"),
        "pause_turn": (
            False,
            "a server-tool loop paused the turn: send the assistant content back to continue",
        ),
        "refusal": (False, "the model declined to respond: rephrase, or try another model"),
        "model_context_window_exceeded": (
            False,
            "the answer filled the model's context window: treat it as truncated",
        ),
    }

    # A text delta: event content_block_delta, {"type": "content_block_delta", "index",
    # "delta": {"type": "text_delta", "text": TEXT}}.
    text_delta = DeltaShape(
        "content_block_delta",
        ("delta", "text"),
        fixed=((("type",), "content_block_delta"), (("delta", "type"), "text_delta")),
    )
    named_events = True
    detect_first = True

    def __init__(self) -> None:
        super().__init__()
        self.stop_reason: str | None = None

    # -- tracking ------------------------------------------------------------------

    def observe(self, event: Event, payload: Any) -> Verdict | None:
        kind = kind_of(event, payload)
        if kind == "content_block_delta" and type(payload) is dict:
            # The hot path: a text delta, most of a stream's events.
            delta = payload.get("delta")
            if type(delta) is dict and delta.get("type") == "text_delta":
                text = delta.get("text")
                if type(text) is str and isinstance(payload.get("index"), int):
                    self.parts.text.append(text)
                return None
        if kind == "error":
            return failed(get(payload, "error"), "in the stream (event: error)")
        if kind in ("message_start", "message_delta"):
            where = "message" if kind == "message_start" else "delta"
            reason = get(payload, where, "stop_reason")
            if isinstance(reason, str):
                self.stop_reason = reason
            self._usage(kind, payload)
        elif kind in ("content_block_start", "content_block_delta", "content_block_stop"):
            self._block(kind, payload)
        elif kind == "message_stop":
            finishes = {} if self.stop_reason is None else {0: self.stop_reason}
            return finish_verdict(
                finishes, [], self.STOP, "stop_reason", "message", "message_stop arrived"
            )
        return None

    def _usage(self, kind: str, payload: Any) -> None:
        # message_start's message.usage has the input figures (and an output count
        # that is only a start); "the token counts shown in the usage field of the
        # message_delta event are cumulative": each figure it gives replaces the one
        # before, and the figures it leaves out (older API versions give only
        # output_tokens there) stay those of message_start.
        usage = (
            get(payload, "message", "usage") if kind == "message_start" else get(payload, "usage")
        )
        found = Usage(
            count(usage, "input_tokens"),
            count(usage, "output_tokens"),
            count(usage, "cache_read_input_tokens"),
            None,  # thinking tokens are counted in output_tokens, not apart
            "partial" if kind == "message_start" else "reported",
        )
        self.figures = merge(self.figures, found)

    def _block(self, kind: str, payload: Any) -> None:
        """A content block's part of the answer: text, thinking, a tool call's input."""
        index = get(payload, "index")
        if not isinstance(index, int):
            return
        parts = self.parts
        if kind == "content_block_start":
            block = get(payload, "content_block")
            kind_of_block = get(block, "type")
            if kind_of_block in ("tool_use", "server_tool_use"):
                # A second block at one index is a second call (issue 41, item 8).
                key = self.call_key(index, None, new=True)
                call = parts.call(key, id=get(block, "id"), name=get(block, "name"))
                call.value = get(block, "input")
            elif kind_of_block == "text":
                parts.add_text(get(block, "text"))
            elif kind_of_block == "thinking":
                parts.add_reasoning(get(block, "thinking"))
            return
        key = self.open_key(index)
        if kind == "content_block_delta":  # (text_delta: observe()'s hot path)
            delta = get(payload, "delta")
            kind_of_delta = get(delta, "type")
            if kind_of_delta == "thinking_delta":
                parts.add_reasoning(get(delta, "thinking"))
            elif kind_of_delta == "input_json_delta" and parts.known(key):
                parts.add_arguments(key, get(delta, "partial_json"))
        elif parts.known(key):  # content_block_stop
            parts.call(key).complete = True

    def stop_word(self) -> str | None:
        return self.stop_reason

    def missing(self) -> str:
        if self.stop_reason is None:
            return super().missing()
        return (
            f"message_stop, after stop_reason {quoted(self.stop_reason)}: the answer may be "
            "whole, but the API's end marker never came; treat it as cut, or accept it "
            "knowingly"
        )

    # -- progress: the content blocks, message_delta, message_stop, an error -------------

    def moves(self, event: Event, payload: Any) -> bool:
        kind = kind_of(event, payload)
        return isinstance(kind, str) and kind in _MOVES  # a list is unhashable

    # -- reframing: event: error, {"type": "error", "error": {"type", "message"}} --------

    @staticmethod
    def standard_error(event: Event, payload: Any) -> bool:
        return (
            event.type == "error"
            and get(payload, "type") == "error"
            and isinstance(get(payload, "error"), dict)
        )

    @staticmethod
    def error_event(message: str, kind: str | None) -> Event:
        body = {"type": "error", "error": {"type": kind or "api_error", "message": message}}
        return Event(type="error", data=dumps(body))

    # -- detection: the event names only this API uses ---------------------------------

    @staticmethod
    def claims_event(event: Event) -> bool:
        return event.type in _ONLY

    @staticmethod
    def claims_payload(kind: str | None, payload: Any) -> bool:
        return kind in _ONLY
