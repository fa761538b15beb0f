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
from typing import Any, Final

from sse_sansio._events import Event

from ._outcome import PayloadError, Verdict

__all__ = ["DIALECT_NAMES", "Dialect", "make_dialect"]

# The names --llm and Tracker() accept (besides a dialect object from generic()).
DIALECT_NAMES: Final = ("openai-chat", "openai-responses", "anthropic", "gemini", "auto")

_NO_EVENT_TYPE = "message"  # what Event.type is when the block had no event: field


def _loads(event: Event) -> Any:
    """Decode the event's data as JSON, or raise PayloadError naming the event."""
    try:
        return json.loads(event.data)
    except ValueError as exc:
        where = f"byte offset {event.start}" if event.start >= 0 else "an event built by hand"
        raise PayloadError(
            f"the data of the {event.type!r} event at {where} is not JSON: {exc}",
            offset=event.start,
        ) from None


def _loads_lenient(event: Event) -> Any:
    """JSON when the data is JSON, else the text: for event types nobody documented."""
    try:
        return json.loads(event.data)
    except ValueError:
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

    def decode(self, event: Event) -> Any:
        if event.type in self.json_types:
            return _loads(event)
        return _loads_lenient(event)

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
        self.finishes: dict[int, str] = {}
        self.seen: set[int] = set()

    def decode(self, event: Event) -> Any:
        # The end marker is the exact data "[DONE]" (not a prefix: openai-node #2422).
        if event.data == "[DONE]":
            return None
        return super().decode(event)

    def observe(self, event: Event, payload: Any) -> Verdict | None:
        if event.data == "[DONE]":
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
        for choice in choices if isinstance(choices, list) else ():
            index = _get(choice, "index")
            if not isinstance(index, int):
                continue
            self.seen.add(index)
            reason = _get(choice, "finish_reason")
            if isinstance(reason, str):
                self.finishes[index] = reason
        return None

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
        elif kind == "message_stop":
            finishes = {} if self.stop_reason is None else {0: self.stop_reason}
            return _finish_verdict(
                finishes, [], self.STOP, "stop_reason", "message", "message_stop arrived"
            )
        return None

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
        self.finishes: dict[int, str] = {}
        self.seen: set[int] = set()
        self.last_finish_at: int | None = None

    def observe(self, event: Event, payload: Any) -> Verdict | None:
        error = _get(payload, "error")
        if error:
            return _failed(error, "in the stream")
        blocked = _text(_get(payload, "promptFeedback", "blockReason"))
        if blocked:
            explanation = self.BLOCK.get(blocked, "the prompt was blocked")
            return Verdict(
                "stopped", f"{explanation}: rephrase it (blockReason {_q(blocked)})", blocked
            )
        candidates = _get(payload, "candidates")
        for candidate in candidates if isinstance(candidates, list) else ():
            if not isinstance(candidate, dict):
                continue
            # "index" is left out of the JSON for candidate 0 (proto3 default).
            index = candidate.get("index", 0)
            if not isinstance(index, int):
                continue
            self.seen.add(index)
            reason = candidate.get("finishReason")
            if isinstance(reason, str):
                self.finishes[index] = reason
                self.last_finish_at = event.start
        return None

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


def _detect_payload(payload: Any) -> Dialect | None:
    """The dialect a JSON payload's shape belongs to, or None when it says nothing."""
    kind = _get(payload, "type")
    if isinstance(kind, str) and kind.startswith("response."):
        return OpenAIResponses()
    if kind in _ANTHROPIC_ONLY:
        return Anthropic()
    if _get(payload, "choices") is not None:
        return OpenAIChat()
    if _get(payload, "candidates") is not None or _get(payload, "promptFeedback") is not None:
        return Gemini()
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
    try:
        return _BY_NAME[name]()
    except KeyError:
        raise ValueError(
            f"unknown dialect {name!r}; expected one of {', '.join(DIALECT_NAMES)}, "
            "or a dialect from sse_sansio.llm.generic()"
        ) from None
