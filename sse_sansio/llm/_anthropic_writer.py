# Writing Anthropic Messages streaming events (issue 35, item 1): the Translator's
# target frames for this API.  docs/llm-translation.rst has the stop table.
#
# Source: "Streaming Messages": named events whose data has the same "type":
# message_start {"message": {"id", "type": "message", "role": "assistant", "content":
# [], "model", "stop_reason": null, "stop_sequence": null, "usage"}}; per content block
# content_block_start {"index", "content_block": {"type": "text", "text": ""} or
# {"type": "thinking", "thinking": ""} or {"type": "tool_use", "id", "name", "input":
# {}}}, content_block_delta {"index", "delta": text_delta {"text"}, thinking_delta
# {"thinking"} or input_json_delta {"partial_json"}}, content_block_stop {"index"};
# then message_delta {"delta": {"stop_reason", "stop_sequence"}, "usage"} (cumulative
# figures: input_tokens, output_tokens, cache_read_input_tokens) and message_stop.
#
# Blocks stream one after another: a change of kind closes the open block, and so does
# a tool call that begins once the open call's arguments are whole JSON (every API
# streams calls one after another).  A call that begins before that (calls streamed
# interleaved) waits, its fragments kept, until the open call is whole, then gets its
# own block; at the finish every call that waited is written, but a cut or an error
# leaves them out (a block closed early would claim arguments it never got).  Text
# between a call's fragments closes the call's block, and its later fragments are
# dropped (no API streams that).  A thinking block gets no signature_delta: the
# signature is the API's own and cannot be made here (a client that sends thinking back
# needs the original).
# Usage: figures the source gave, in message_delta; message_start's usage holds the
# input tokens the caller knew up front (Translator's input_tokens), else nothing, as
# no figure is known yet (a figure is never written as 0).  Stops: stop_reason is
# end_turn, tool_use, max_tokens or refusal; a safety or content-filter stop is
# refusal (the nearest: the model's answer was withheld), any other stop pause_turn
# (the turn paused: send the content back to continue).

from __future__ import annotations

from typing import Any, ClassVar, Final

from sse_sansio._events import Event

from ._anthropic import Anthropic
from ._usage import Usage
from ._writing import Writer, figures, frame, parsed_object

__all__ = ["AnthropicWriter"]

_USAGE: Final = ("input_tokens", "output_tokens", "cache_read_input_tokens", None)


class AnthropicWriter(Writer):
    dialect = Anthropic
    STOPS: ClassVar[dict[str, str]] = {
        "max_tokens": "length",
        "model_context_window_exceeded": "length",
        "refusal": "refusal",
    }
    WORDS: ClassVar[dict[str, str]] = {
        "stop": "end_turn",
        "tool_calls": "tool_use",
        "length": "max_tokens",
        "filter": "refusal",
        "refusal": "refusal",
        "other": "pause_turn",
    }

    def __init__(self) -> None:
        self.started = False
        self.blocks = 0  # content blocks begun
        # The open block: [kind, index, call n or None, the call's fragments or None].
        self.open: list[Any] = []
        # Calls that began while another call's block was open and its arguments were
        # not yet whole JSON (parallel calls streamed interleaved): n -> [id, name,
        # fragments, whole], written in order once the open call's block ends.
        self.waiting: dict[int, list[Any]] = {}

    @staticmethod
    def _event(type: str, **fields: Any) -> Event:
        return frame({"type": type, **fields}, type)

    def _begin(self) -> list[Event]:
        if self.started:
            return []
        self.started = True
        message: dict[str, Any] = {
            "id": "msg_translated",
            "type": "message",
            "role": "assistant",
            "content": [],
            "model": "",
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {} if self.input_tokens is None else {"input_tokens": self.input_tokens},
        }
        return [self._event("message_start", message=message)]

    def _close(self) -> list[Event]:
        if not self.open:
            return []
        index = self.open[1]
        self.open = []
        return [self._event("content_block_stop", index=index)]

    def _open(self, kind: str, block: dict[str, Any], call: int | None = None) -> list[Event]:
        out = [*self._begin(), *self._close()]
        index = self.blocks
        self.blocks += 1
        self.open = [kind, index, call, None if call is None else []]
        return [*out, self._event("content_block_start", index=index, content_block=block)]

    def _delta(self, kind: str, delta: dict[str, Any]) -> list[Event]:
        out: list[Event] = []
        if not self.open or self.open[0] != kind:
            out += self._open(kind, {"type": kind, kind: ""})
        return [*out, self._event("content_block_delta", index=self.open[1], delta=delta)]

    def text(self, fragment: str) -> list[Event]:
        return self._delta("text", {"type": "text_delta", "text": fragment})

    def reasoning(self, fragment: str) -> list[Event]:
        return self._delta("thinking", {"type": "thinking_delta", "thinking": fragment})

    def tool_start(self, n: int, id: str, name: str) -> list[Event]:
        # The open call's arguments not whole yet: the calls interleave, and blocks
        # cannot, so this one waits.  Whole: the API streams calls one after another,
        # so the open block ends here (its call may end later in the source).
        if self.open and self.open[2] is not None and parsed_object("".join(self.open[3])) is None:
            self.waiting[n] = [id, name, [], False]
            return []
        return self._open("tool_use", {"type": "tool_use", "id": id, "name": name, "input": {}}, n)

    def tool_delta(self, n: int, fragment: str) -> list[Event]:
        if n in self.waiting:
            self.waiting[n][2].append(fragment)
            return []
        if not self.open or self.open[2] != n:
            return []  # text came between and closed its block: a block never reopens
        self.open[3].append(fragment)
        return [self._input(fragment)]

    def _input(self, fragment: str) -> Event:
        delta = {"type": "input_json_delta", "partial_json": fragment}
        return self._event("content_block_delta", index=self.open[1], delta=delta)

    def tool_end(self, n: int, arguments: str) -> list[Event]:
        if n in self.waiting:
            self.waiting[n][3] = True
            return []
        if not self.open or self.open[2] != n:
            return []
        return [*self._close(), *self._next()]

    def _next(self) -> list[Event]:
        """The calls that waited, in order, up to the first one not yet whole (whose
        block stays open for its next fragments)."""
        out: list[Event] = []
        while self.waiting:
            n = next(iter(self.waiting))
            id, name, fragments, whole = self.waiting.pop(n)
            block = {"type": "tool_use", "id": id, "name": name, "input": {}}
            out += self._open("tool_use", block, n)
            out += [self._input(fragment) for fragment in fragments]
            self.open[3] = fragments
            if not whole:
                break
            out += self._close()
        return out

    def finish(self, kind: str, usage: Usage) -> list[Event]:
        for call in self.waiting.values():
            call[3] = True  # the answer ended: every call that waited is written whole
        out = [*self._begin(), *self._close(), *self._next()]
        delta = {"stop_reason": self.WORDS[kind], "stop_sequence": None}
        return [
            *out,
            self._event("message_delta", delta=delta, usage=figures(usage, _USAGE)),
            self._event("message_stop"),
        ]
