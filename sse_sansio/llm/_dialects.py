# Dialects: each API's rules for when a streamed answer is over, and how it went.
#
# A dialect sees the events of one response in order.  decode() turns an event's data
# into its payload (JSON where the API documents JSON); observe() looks at the payload
# and returns a Verdict when the event settles the outcome (the API's terminal event,
# an in-band error), else None; at_end() judges a stream that ended cleanly without
# such an event (a cut, except where the API has no terminal event: Gemini).
#
# Sources, one per dialect (public documentation; the SDKs' streaming code for how the
# vendors' own clients read the same bytes):
# - OpenAI Chat Completions: API reference, "Create chat completion" (`stream`: "data-only
#   server-sent events ... terminated by a data: [DONE] message"; `stream_options.
#   include_usage`: one more chunk with empty `choices` before [DONE]) and "The chat
#   completion chunk object" (`finish_reason`: stop, length, content_filter, tool_calls,
#   function_call (deprecated)); openai-python's _streaming.py raises on a payload whose
#   `error` is set, and on `event: error`.
# - OpenAI Responses: API reference, "Responses streaming events" (response.completed,
#   response.incomplete with response.incomplete_details.reason max_output_tokens or
#   content_filter, response.failed with response.error, and the `error` event, whose
#   fields arrive at the top level or, as the API sends them today, under "error").
# - Anthropic Messages: "Streaming Messages" (message_start, content_block_start/delta/
#   stop, message_delta carrying stop_reason, message_stop; ping; `event: error` such as
#   overloaded_error; "handle unknown event types gracefully") and "Handling stop
#   reasons" (end_turn, stop_sequence, tool_use, max_tokens, pause_turn, refusal,
#   model_context_window_exceeded).
# - Google Gemini `streamGenerateContent?alt=sse`: API reference, GenerateContentResponse
#   (candidates[].finishReason, promptFeedback.blockReason "sent only in the first
#   stream chunk"), the FinishReason and BlockReason enums; errors are Google API error
#   objects {"error": {"code", "message", "status"}}.  No terminal event: the stream's
#   clean end is the only end marker.
#
# Forward compatibility (anthropic-sdk-python #993, #1357): an event type a dialect does
# not know passes through untouched, its data decoded as JSON when it is JSON and kept
# as text when not; a payload of an unexpected shape is ignored, never trusted and never
# a crash (every field is checked with isinstance before use).  An unknown finish or stop
# reason is reported as "stopped" with the API's word kept: claiming success for a word
# nobody has read the documentation of is the mistake this module exists to prevent.

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any, Final

from sse_sansio._events import Event

from ._answer import Parts
from ._outcome import PayloadError, Verdict
from ._usage import UNAVAILABLE, Usage, count, merge

__all__ = ["DIALECT_NAMES", "Dialect", "make_dialect"]

# The names --llm and Tracker() accept (besides a dialect object from generic()).
DIALECT_NAMES: Final = (
    "openai-chat",
    "openai-responses",
    "anthropic",
    "gemini",
    "ai-sdk-ui",
    "auto",
)

_NO_EVENT_TYPE = "message"  # what Event.type is when the block had no event: field


def _loads(event: Event) -> Any:
    """Decode the event's data as JSON, or raise PayloadError naming the event."""
    try:
        return json.loads(event.data)
    except (ValueError, RecursionError) as exc:
        # RecursionError: JSON nested deeper than the interpreter's stack allows; the
        # payload is the peer's, so it is the peer's error, like any other bad JSON.
        why = exc if isinstance(exc, ValueError) else "it is nested too deeply to decode"
        where = f"byte offset {event.start}" if event.start >= 0 else "an event built by hand"
        raise PayloadError(
            f"the data of the {event.type!r} event at {where} is not JSON: {why}",
            offset=event.start,
        ) from None


def _loads_lenient(event: Event) -> Any:
    """JSON when the data is JSON, else the text: for event types nobody documented."""
    try:
        return json.loads(event.data)
    except (ValueError, RecursionError):
        return event.data


def _q(word: str | None) -> str:
    """A word of the API's, quoted as it appears in the JSON ("stop", null)."""
    return json.dumps(word, ensure_ascii=False)


def _get(obj: Any, *path: str) -> Any:
    """``obj[path[0]][path[1]]...``, or None where a step is missing or not a dict."""
    for key in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def _text(value: Any) -> str | None:
    """A field as a string: str kept, int (an HTTP-like code) written out, else None."""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def _failed(error: Any, where: str) -> Verdict:
    """The verdict for an in-band error object (or a bare message string)."""
    if isinstance(error, dict):
        kind = _text(error.get("type")) or _text(error.get("status")) or _text(error.get("code"))
        message = _text(error.get("message"))
    else:
        kind, message = None, _text(error)
    said = ": ".join(part for part in (kind, message) if part) or "no details given"
    return Verdict(
        "failed",
        f"the API reported an error {where} ({said}); the answer is incomplete: "
        "retry if the error is transient (overloaded, rate limit, server error)",
        error_type=kind,
        error_message=message,
    )


class Dialect:
    """One API's rules: what :func:`generic` returns and :class:`Tracker` accepts.

    A dialect keeps the state of one stream, so use a fresh one per :class:`Tracker`.
    Its methods are not part of the API (they may change in any release).
    """

    name: str = ""
    #: The API's end marker, in the words a reason uses ("data: [DONE]").
    terminal: str = ""
    #: The event types whose data the API documents as JSON (strict decoding).
    json_types: frozenset[str] = frozenset()

    def __init__(self) -> None:
        self.parts = Parts()
        self.figures = UNAVAILABLE

    def decode(self, event: Event) -> Any:
        if event.type in self.json_types:
            return _loads(event)
        return _loads_lenient(event)

    def usage(self) -> Usage:
        """The usage figures so far, merged by the API's rules."""
        return self.figures

    def answer_parts(self) -> Parts:
        """The answer's fragments so far."""
        return self.parts

    def observe(self, event: Event, payload: Any) -> Verdict | None:  # pragma: no cover
        raise NotImplementedError  # every dialect below defines it

    def at_end(self) -> Verdict:
        return Verdict("cut", f"the stream ended before {self.missing()}", cut="before-terminal")

    def missing(self) -> str:
        """What a cut stream lacks, in words that follow "the stream ended before"."""
        return f"{self.terminal}, so the answer may be incomplete: retry the request"

    def stop_word(self) -> str | None:
        """The last finish or stop reason seen, for the report of a cut."""
        return None


def _finish_verdict(
    finishes: dict[int, str],
    unfinished: list[int],
    table: dict[str, tuple[bool, str]],
    field: str,
    unit: str,
    ended: str,
) -> Verdict:
    """Judge the finish reasons of every choice (candidate); the worst one decides.

    ``table`` maps each documented word to (success, explanation).  A choice seen but
    never finished makes the stream a cut; an unknown word is a stop.
    """
    if unfinished or not finishes:
        which = (
            f"{unit} {unfinished[0]} had no {field}" if unfinished else f"no {unit} had a {field}"
        )
        return Verdict(
            "cut",
            f"{ended} but {which}: the server (or a "
            "proxy) ended the stream without saying why the answer ended; retry the request",
            cut="unfinished",
        )
    several = len(finishes) > 1
    for index, word in sorted(finishes.items()):
        success, explanation = table.get(
            word, (False, "the model stopped for a reason this version does not know")
        )
        if not success:
            prefix = f"{unit} {index}: " if several else ""
            return Verdict("stopped", f"{prefix}{explanation} ({field} {_q(word)})", word)
    index, word = min(finishes.items())
    return Verdict("completed", f"{table[word][1]} ({field} {_q(word)})", word)


class OpenAIChat(Dialect):
    """OpenAI Chat Completions: ``data: [DONE]`` ends the stream; choices finish."""

    name = "openai-chat"
    terminal = "data: [DONE]"
    json_types = frozenset({_NO_EVENT_TYPE, "error"})

    FINISH: Final[dict[str, tuple[bool, str]]] = {
        "stop": (True, "the model reached a natural stop point or a stop sequence"),
        "tool_calls": (True, "the model called tools: run them and send back the results"),
        "function_call": (
            True,
            "the model called a function (the deprecated functions API): run it and "
            "send back the result",
        ),
        "length": (
            False,
            "the answer reached the request's token limit (max_completion_tokens) or the "
            "context window: raise the limit, or ask the model to continue",
        ),
        "content_filter": (False, "the content filter omitted part of the answer"),
    }

    def __init__(self) -> None:
        super().__init__()
        self.finishes: dict[int, str] = {}
        self.seen: set[int] = set()
        self.usage_last = False  # the latest event carried a usage object

    def decode(self, event: Event) -> Any:
        # The end marker is the exact data "[DONE]" (not a prefix: openai-node #2422).
        if event.data == "[DONE]":
            return None
        return super().decode(event)

    def observe(self, event: Event, payload: Any) -> Verdict | None:
        if event.data == "[DONE]":
            if self.usage_last and self.figures.provenance == "partial":
                # Usage in the chunk just before [DONE] is the last word on it, even
                # where a compatible server sent it with the choices.
                self.figures = replace(self.figures, provenance="reported")
            unfinished = sorted(self.seen - self.finishes.keys())
            return _finish_verdict(
                self.finishes,
                unfinished,
                self.FINISH,
                "finish_reason",
                "choice",
                "data: [DONE] arrived",
            )
        error = _get(payload, "error")
        if event.type == "error" or error:
            return _failed(error or payload, "in the stream")
        choices = _get(payload, "choices")
        self._usage(_get(payload, "usage"), final=choices == [])
        for choice in choices if isinstance(choices, list) else ():
            index = _get(choice, "index")
            if not isinstance(index, int):
                continue
            self.seen.add(index)
            if index == 0:
                self._delta(_get(choice, "delta"))
            reason = _get(choice, "finish_reason")
            if isinstance(reason, str):
                self.finishes[index] = reason
                if index == 0 and self.FINISH.get(reason, (False,))[0]:
                    for call in self.parts.calls.values():
                        call.complete = True
        return None

    def _usage(self, usage: Any, *, final: bool) -> None:
        # "An additional chunk will be streamed before the data: [DONE] message. The
        # usage field on this chunk shows the token usage statistics for the entire
        # request, and the choices field will always be an empty array."  Every other
        # chunk has "usage": null, unless a server streams running figures.
        self.usage_last = isinstance(usage, dict)
        if isinstance(usage, dict):
            found = Usage(
                count(usage, "prompt_tokens"),
                count(usage, "completion_tokens"),
                count(usage, "prompt_tokens_details", "cached_tokens"),
                count(usage, "completion_tokens_details", "reasoning_tokens"),
                "reported" if final else "partial",
            )
            self.figures = merge(self.figures, found)

    def _delta(self, delta: Any) -> None:
        """Choice 0's delta: content, reasoning (compatible servers), tool calls."""
        if not isinstance(delta, dict):
            return
        self.parts.add_text(delta.get("content"))
        self.parts.add_reasoning(delta.get("reasoning_content", delta.get("reasoning")))
        calls = delta.get("tool_calls")
        for position, call in enumerate(calls if isinstance(calls, list) else ()):
            index = _get(call, "index")
            key = index if isinstance(index, int) else position
            self.parts.call(key, id=_get(call, "id"), name=_get(call, "function", "name"))
            self.parts.add_arguments(key, _get(call, "function", "arguments"))
        function = delta.get("function_call")  # the deprecated functions API
        if isinstance(function, dict):
            self.parts.call("function_call", name=function.get("name"))
            self.parts.add_arguments("function_call", function.get("arguments"))

    def stop_word(self) -> str | None:
        return min(self.finishes.items())[1] if self.finishes else None

    def missing(self) -> str:
        word = self.stop_word()
        if word is None:
            return super().missing()
        return (
            f"data: [DONE], after finish_reason {_q(word)}: the text may be whole, but the "
            "API's end marker (and the usage chunk, when requested) never came; treat it "
            "as cut, or accept it knowingly"
        )


class OpenAIResponses(Dialect):
    """OpenAI Responses: response.completed, .incomplete or .failed ends the stream."""

    name = "openai-responses"
    terminal = "response.completed, response.incomplete or response.failed"

    INCOMPLETE: Final[dict[str, str]] = {
        "max_output_tokens": "the response reached max_output_tokens: raise it, or continue",
        "content_filter": "the content filter cut the response short",
    }

    def decode(self, event: Event) -> Any:
        # Every documented event is JSON with a "type"; their names all start so.
        if event.type in (_NO_EVENT_TYPE, "error") or event.type.startswith("response."):
            return _loads(event)
        return _loads_lenient(event)

    def observe(self, event: Event, payload: Any) -> Verdict | None:
        kind = event.type if event.type != _NO_EVENT_TYPE else _get(payload, "type")
        if kind in ("response.completed", "response.incomplete", "response.failed"):
            # The Response object's usage: "input_tokens_details.cached_tokens",
            # "output_tokens_details.reasoning_tokens"; null while it is in progress.
            usage = _get(payload, "response", "usage")
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
            word = _text(_get(payload, "response", "incomplete_details", "reason"))
            explanation = self.INCOMPLETE.get(
                word or "", "the response ended incomplete for a reason this version does not know"
            )
            return Verdict(
                "stopped", f"{explanation} (response.incomplete, reason {_q(word)})", word
            )
        if kind == "response.failed":
            return _failed(_get(payload, "response", "error"), "(response.failed)")
        if kind == "error":
            error = _get(payload, "error")
            return _failed(error if isinstance(error, dict) else payload, "(an error event)")
        return None

    def _assemble(self, kind: Any, payload: Any) -> None:
        """The answer's part of an event: text, reasoning, a function call's pieces."""
        parts = self.parts
        if kind == "response.output_text.delta":
            parts.add_text(_get(payload, "delta"))
        elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            parts.add_reasoning(_get(payload, "delta"))
        elif kind in ("response.output_item.added", "response.output_item.done"):
            item = _get(payload, "item")
            if _get(item, "type") != "function_call":
                return
            index = _get(payload, "output_index")
            if not isinstance(index, int):
                return  # a call's key is its place in the output, a number
            call = parts.call(index, id=_get(item, "call_id"), name=_get(item, "name"))
            if kind == "response.output_item.done":
                self._done(call, _get(item, "arguments"))
        elif kind in (
            "response.function_call_arguments.delta",
            "response.function_call_arguments.done",
        ):
            key = _get(payload, "output_index")
            if not isinstance(key, int) or not parts.known(key):
                return
            if kind.endswith(".delta"):
                parts.add_arguments(key, _get(payload, "delta"))
            else:
                self._done(parts.call(key), _get(payload, "arguments"))

    @staticmethod
    def _done(call: Any, arguments: Any) -> None:
        # The .done events repeat the whole arguments: they are the API's final text.
        if isinstance(arguments, str):
            call.final = arguments
        call.complete = True


class Anthropic(Dialect):
    """Anthropic Messages: message_stop ends the stream; message_delta says why."""

    name = "anthropic"
    terminal = "message_stop"
    EVENTS: Final = frozenset(
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
    json_types = EVENTS | {_NO_EVENT_TYPE}

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

    def __init__(self) -> None:
        super().__init__()
        self.stop_reason: str | None = None

    def observe(self, event: Event, payload: Any) -> Verdict | None:
        kind = event.type if event.type != _NO_EVENT_TYPE else _get(payload, "type")
        if kind == "error":
            return _failed(_get(payload, "error"), "in the stream (event: error)")
        if kind in ("message_start", "message_delta"):
            where = "message" if kind == "message_start" else "delta"
            reason = _get(payload, where, "stop_reason")
            if isinstance(reason, str):
                self.stop_reason = reason
            self._usage(kind, payload)
        elif kind in ("content_block_start", "content_block_delta", "content_block_stop"):
            self._block(kind, payload)
        elif kind == "message_stop":
            finishes = {} if self.stop_reason is None else {0: self.stop_reason}
            return _finish_verdict(
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
            _get(payload, "message", "usage") if kind == "message_start" else _get(payload, "usage")
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
        index = _get(payload, "index")
        if not isinstance(index, int):
            return
        parts = self.parts
        if kind == "content_block_start":
            block = _get(payload, "content_block")
            kind_of_block = _get(block, "type")
            if kind_of_block in ("tool_use", "server_tool_use"):
                call = parts.call(index, id=_get(block, "id"), name=_get(block, "name"))
                call.value = _get(block, "input")
            elif kind_of_block == "text":
                parts.add_text(_get(block, "text"))
            elif kind_of_block == "thinking":
                parts.add_reasoning(_get(block, "thinking"))
        elif kind == "content_block_delta":
            delta = _get(payload, "delta")
            kind_of_delta = _get(delta, "type")
            if kind_of_delta == "text_delta":
                parts.add_text(_get(delta, "text"))
            elif kind_of_delta == "thinking_delta":
                parts.add_reasoning(_get(delta, "thinking"))
            elif kind_of_delta == "input_json_delta" and parts.known(index):
                parts.add_arguments(index, _get(delta, "partial_json"))
        elif parts.known(index):  # content_block_stop
            parts.call(index).complete = True

    def stop_word(self) -> str | None:
        return self.stop_reason

    def missing(self) -> str:
        if self.stop_reason is None:
            return super().missing()
        return (
            f"message_stop, after stop_reason {_q(self.stop_reason)}: the answer may be "
            "whole, but the API's end marker never came; treat it as cut, or accept it "
            "knowingly"
        )


class Gemini(Dialect):
    """Google Gemini: no terminal event; every candidate's finishReason decides."""

    name = "gemini"
    terminal = "every candidate had a finishReason"
    json_types = frozenset({_NO_EVENT_TYPE})

    FINISH: Final[dict[str, tuple[bool, str]]] = {
        "STOP": (True, "the model reached a natural stop point or a stop sequence"),
        "MAX_TOKENS": (False, "the answer reached maxOutputTokens: raise it, or continue"),
        "SAFETY": (False, "the answer was flagged for safety reasons"),
        "RECITATION": (False, "the answer was flagged for recitation"),
        "LANGUAGE": (False, "the answer was flagged for using an unsupported language"),
        "OTHER": (False, "the model stopped for an unknown reason"),
        "BLOCKLIST": (False, "the answer contains forbidden terms"),
        "PROHIBITED_CONTENT": (False, "the answer may contain prohibited content"),
        "SPII": (False, "the answer may contain sensitive personally identifiable information"),
        "MALFORMED_FUNCTION_CALL": (False, "the model generated an invalid function call"),
        "IMAGE_SAFETY": (False, "a generated image was flagged for safety reasons"),
        "UNEXPECTED_TOOL_CALL": (False, "the model called a tool, but no tools are enabled"),
        "TOO_MANY_TOOL_CALLS": (False, "the model called too many tools in a row"),
        "FINISH_REASON_UNSPECIFIED": (False, "the API gave no finish reason"),
    }
    BLOCK: Final[dict[str, str]] = {
        "SAFETY": "the prompt was blocked for safety reasons (see promptFeedback.safetyRatings)",
        "BLOCKLIST": "the prompt contains terms from the terminology blocklist",
        "PROHIBITED_CONTENT": "the prompt was blocked for prohibited content",
        "IMAGE_SAFETY": "the prompt was blocked for unsafe image generation content",
        "OTHER": "the prompt was blocked for an unknown reason",
    }

    def __init__(self) -> None:
        super().__init__()
        self.finishes: dict[int, str] = {}
        self.seen: set[int] = set()
        self.last_finish_at: int | None = None
        self.calls = 0

    def observe(self, event: Event, payload: Any) -> Verdict | None:
        error = _get(payload, "error")
        if error:
            return _failed(error, "in the stream")
        blocked = _text(_get(payload, "promptFeedback", "blockReason"))
        if not blocked:
            self._candidates(event, payload)
        usage = _get(payload, "usageMetadata")
        if isinstance(usage, dict):
            # Each chunk's usageMetadata gives the figures so far; the last chunk's,
            # the one whose candidates carry their finishReason, are the final ones.
            final = bool(blocked) or (bool(self.finishes) and self.seen <= self.finishes.keys())
            found = Usage(
                count(usage, "promptTokenCount"),
                count(usage, "candidatesTokenCount"),
                count(usage, "cachedContentTokenCount"),
                count(usage, "thoughtsTokenCount"),
                "reported" if final else "partial",
            )
            self.figures = merge(self.figures, found)
        if blocked:
            explanation = self.BLOCK.get(blocked, "the prompt was blocked")
            return Verdict(
                "stopped", f"{explanation}: rephrase it (blockReason {_q(blocked)})", blocked
            )
        return None

    def _candidates(self, event: Event, payload: Any) -> None:
        candidates = _get(payload, "candidates")
        for candidate in candidates if isinstance(candidates, list) else ():
            if not isinstance(candidate, dict):
                continue
            # "index" is left out of the JSON for candidate 0 (proto3 default).
            index = candidate.get("index", 0)
            if not isinstance(index, int):
                continue
            self.seen.add(index)
            if index == 0:
                self._content(_get(candidate, "content", "parts"))
            reason = candidate.get("finishReason")
            if isinstance(reason, str):
                self.finishes[index] = reason
                self.last_finish_at = event.start

    def _content(self, parts: Any) -> None:
        """Candidate 0's parts: text, thoughts (``"thought": true``), function calls,
        which Gemini sends whole, each in one part."""
        for part in parts if isinstance(parts, list) else ():
            if not isinstance(part, dict):
                continue
            if part.get("thought") is True:
                self.parts.add_reasoning(part.get("text"))
            else:
                self.parts.add_text(part.get("text"))
            function = part.get("functionCall")
            if isinstance(function, dict):
                self.calls += 1
                call = self.parts.call(self.calls, id=function.get("id"), name=function.get("name"))
                call.value = function.get("args", {})
                call.complete = True

    def at_end(self) -> Verdict:
        if not self.finishes:
            return super().at_end()
        unfinished = sorted(self.seen - self.finishes.keys())
        verdict = _finish_verdict(
            self.finishes, unfinished, self.FINISH, "finishReason", "candidate", "the stream ended"
        )
        offset = (
            self.last_finish_at
            if self.last_finish_at is not None and self.last_finish_at >= 0
            else None
        )
        return verdict._replace(offset=offset)

    def stop_word(self) -> str | None:
        return min(self.finishes.items())[1] if self.finishes else None


class Generic(Dialect):
    """A stream whose terminal event (and error event) the caller names."""

    name = "generic"

    def __init__(self, terminal: str, error: str | None, json_data: bool) -> None:
        super().__init__()
        self.terminal_type = terminal
        self.error_type = error
        self.terminal = f"the {terminal!r} event"
        self.json_data = json_data

    def decode(self, event: Event) -> Any:
        return _loads(event) if self.json_data else event.data

    def observe(self, event: Event, payload: Any) -> Verdict | None:
        if event.type == self.terminal_type:
            return Verdict("completed", f"the stream ended with {self.terminal}")
        if event.type == self.error_type:
            error = _get(payload, "error")
            return _failed(error if error else payload, f"(the {event.type!r} event)")
        return None


# The event names that only Anthropic's Messages stream uses ("error" and "ping" are
# left out: other APIs send events of those names too).
_ANTHROPIC_ONLY = Anthropic.EVENTS - {"error", "ping"}


class Auto(Dialect):
    """Detects the dialect from the first event that only one API would send."""

    name = "auto"

    def __init__(self) -> None:
        super().__init__()
        self.inner: Dialect | None = None

    def decode(self, event: Event) -> Any:
        if self.inner is not None:
            return self.inner.decode(event)
        if event.data == "[DONE]" or event.type in _ANTHROPIC_ONLY:
            self.inner = OpenAIChat() if event.data == "[DONE]" else Anthropic()
            return self.inner.decode(event)
        if event.type.startswith("response."):
            self.inner = OpenAIResponses()
            return self.inner.decode(event)
        # Every known API sends JSON; data that is not JSON is some unknown event's.
        payload = _loads_lenient(event)
        self.inner = _detect_payload(payload)
        return payload

    def observe(self, event: Event, payload: Any) -> Verdict | None:
        if self.inner is not None:
            return self.inner.observe(event, payload)
        error = _get(payload, "error")
        if event.type == "error" or error:
            return _failed(error or payload, "before any event showed which API this is")
        return None

    def at_end(self) -> Verdict:
        return super().at_end() if self.inner is None else self.inner.at_end()

    def missing(self) -> str:
        if self.inner is not None:
            return self.inner.missing()
        return (
            "any event of a known API arrived: nothing says the answer finished; retry "
            "the request, or name the dialect"
        )

    def stop_word(self) -> str | None:
        return None if self.inner is None else self.inner.stop_word()

    def usage(self) -> Usage:
        return self.figures if self.inner is None else self.inner.usage()

    def answer_parts(self) -> Parts:
        return self.parts if self.inner is None else self.inner.answer_parts()


def _detect_payload(payload: Any) -> Dialect | None:
    """The dialect a JSON payload's shape belongs to, or None when it says nothing."""
    kind = _get(payload, "type")
    if not isinstance(kind, str):
        kind = None  # a type that is no string names no dialect (and may be unhashable)
    elif kind.startswith("response."):
        return OpenAIResponses()
    if kind in _ANTHROPIC_ONLY:
        return Anthropic()
    if _get(payload, "choices") is not None:
        return OpenAIChat()
    if _get(payload, "candidates") is not None or _get(payload, "promptFeedback") is not None:
        return Gemini()
    from ._ai_sdk_ui import AI_SDK_ONLY, AISDKUI  # it builds on this module

    if kind in AI_SDK_ONLY:
        return AISDKUI()
    return None


_BY_NAME: Final[dict[str, type[Dialect]]] = {
    "openai-chat": OpenAIChat,
    "openai-responses": OpenAIResponses,
    "anthropic": Anthropic,
    "gemini": Gemini,
    "auto": Auto,
}


def make_dialect(name: str) -> Dialect:
    """A fresh dialect object for one of DIALECT_NAMES."""
    if name == "ai-sdk-ui":
        from ._ai_sdk_ui import AISDKUI  # it builds on this module

        return AISDKUI()
    try:
        return _BY_NAME[name]()
    except KeyError:
        raise ValueError(
            f"unknown dialect {name!r}; expected one of {', '.join(DIALECT_NAMES)}, "
            "or a dialect from sse_sansio.llm.generic()"
        ) from None
