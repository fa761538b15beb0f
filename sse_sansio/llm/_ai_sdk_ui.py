# The Vercel AI SDK's UI message stream: how a useChat() front end reads a streamed
# answer, read here as the fifth dialect and written for Python backends.
#
# Source: the AI SDK documentation, "Stream Protocols", section "Data Stream Protocol"
# (ai-sdk.dev/docs/ai-sdk-ui/stream-protocol), and the chunk schema in the SDK's
# packages/ai/src/ui-message-stream/ui-message-chunks.ts: server-sent events, each
# data: line one JSON object with a "type" (start, text-start/-delta/-end, reasoning-
# start/-delta/-end, tool-input-start/-delta/-available/-error, tool-output-available/
# -error, start-step, finish-step, message-metadata, data-*, finish with an optional
# finishReason, error with errorText, abort with an optional reason), the stream ending
# with the literal data: [DONE]; the response carries the header
# x-vercel-ai-ui-message-stream: v1.
#
# Reading: the finish part settles the outcome (completed, or stopped for a
# finishReason that is not success), as do error (failed) and abort (stopped);
# [DONE] without any of them, or an end before them, is a cut.  The protocol has no
# usage field of its own: backends send usage in messageMetadata (the SDK's own
# examples put the LanguageModelUsage of the finish event there), so figures are read
# from messageMetadata's "usage" or "totalUsage", in the SDK's names.
#
# Progress is the base rule (every event but a ping); there are no merge rules (a
# TextMerge of this protocol is refused); the Reframer writes the error part.
#
# Writing: UIMessageStreamWriter turns each part into its complete event bytes through
# serialize(), so what a backend writes is what a fresh Connection parses back.

from __future__ import annotations

from typing import Any, Final

from sse_sansio._events import Event
from sse_sansio._serializer import serialize

from ._dialect import NO_EVENT_TYPE, Dialect, dumps, failed, get, quoted, text
from ._outcome import Verdict
from ._usage import Usage, count, merge

__all__ = ["AISDKUI", "UI_MESSAGE_STREAM_HEADERS", "UIMessageStreamWriter"]

#: The response headers of a UI message stream, as the SDK's own responses send them.
UI_MESSAGE_STREAM_HEADERS: Final = {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    "x-vercel-ai-ui-message-stream": "v1",
    "x-accel-buffering": "no",
}

_DONE: Final = "[DONE]"

# The part types only this protocol sends (for "auto"): plain words another API's
# payload could carry as its "type" too, so "auto" asks the shapes of the others first.
_ONLY: Final = frozenset(
    {
        "start",
        "text-start",
        "text-delta",
        "text-end",
        "reasoning-start",
        "reasoning-delta",
        "reasoning-end",
        "tool-input-start",
        "tool-input-delta",
        "tool-input-available",
        "tool-input-error",
        "tool-output-available",
        "tool-output-error",
        "start-step",
        "finish-step",
        "message-metadata",
        "finish",
        "abort",
    }
)


class AISDKUI(Dialect):
    """The AI SDK UI message stream: a finish part ends the answer; [DONE] the stream."""

    name = "ai-sdk-ui"
    terminal = "a finish part"
    json_types = frozenset({NO_EVENT_TYPE})
    # The SDK's SSE writer ends every stream with [DONE], after an error part too.
    stream_end = _DONE

    FINISH: Final[dict[str, tuple[bool, str]]] = {
        "stop": (True, "the model reached a natural stop point or a stop sequence"),
        "tool-calls": (True, "the model called tools: run them and send back the results"),
        "length": (False, "the answer reached the token limit: raise it, or continue"),
        "content-filter": (False, "the content filter cut the answer short"),
        "error": (False, "the model call ended with an error"),
        "other": (False, "the model stopped for a reason the provider did not map"),
    }

    def decode(self, event: Event) -> Any:
        if event.data == _DONE:
            return None
        return Dialect.decode(self, event)  # (not super(): no object made per event)

    def observe(self, event: Event, payload: Any) -> Verdict | None:
        if event.data == _DONE:
            return Verdict(
                "cut",
                "data: [DONE] arrived but no finish part: the server (or a proxy) ended the "
                "stream without saying why the answer ended; retry the request",
                cut="unfinished",
            )
        chunk = payload if type(payload) is dict else {}  # dict.get: runs per event
        kind = chunk.get("type")
        metadata = chunk.get("messageMetadata")
        if metadata is not None:
            self._metadata(kind, metadata)
        if kind == "text-delta" and event.type == NO_EVENT_TYPE:
            delta = chunk.get("delta")  # the hot path: most of a stream's events
            if type(delta) is str:
                self.parts.text.append(delta)
            return None
        if kind == "finish":
            return self._finish(get(payload, "finishReason"))
        if kind == "error" or event.type == "error":
            message = get(payload, "errorText")
            return failed(message if isinstance(message, str) else payload, "(an error part)")
        if kind == "abort":
            why = text(get(payload, "reason"))
            said = f", reason {quoted(why)}" if why else ""
            return Verdict(
                "stopped",
                f"the stream was aborted (an abort part{said}): the answer is incomplete",
                "abort",
            )
        self._assemble(kind, payload)
        return None

    def _finish(self, reason: Any) -> Verdict:
        if not isinstance(reason, str):
            # finishReason is optional (AI SDK 5 sent none): the finish part says the
            # message is whole.
            return Verdict("completed", "the stream's finish part arrived")
        success, explanation = self.FINISH.get(
            reason, (False, "the model stopped for a reason this version does not know")
        )
        said = f"{explanation} (finishReason {quoted(reason)})"
        return Verdict("completed" if success else "stopped", said, reason)

    def _metadata(self, kind: Any, metadata: Any) -> None:
        """Usage a backend put in messageMetadata, in the SDK's LanguageModelUsage names
        (AI SDK 5's flat cachedInputTokens and reasoningTokens, or 6's details)."""
        usage = get(metadata, "totalUsage")
        if not isinstance(usage, dict):
            usage = get(metadata, "usage")
        if not isinstance(usage, dict):
            return
        cached = count(usage, "cachedInputTokens")
        reasoning = count(usage, "reasoningTokens")
        found = Usage(
            count(usage, "inputTokens"),
            count(usage, "outputTokens"),
            count(usage, "inputTokenDetails", "cacheReadTokens") if cached is None else cached,
            count(usage, "outputTokenDetails", "reasoningTokens")
            if reasoning is None
            else reasoning,
            "reported" if kind == "finish" else "partial",
        )
        self.figures = merge(self.figures, found)

    def _assemble(self, kind: Any, payload: Any) -> None:
        parts = self.parts
        if kind == "text-delta":
            parts.add_text(get(payload, "delta"))
        elif kind == "reasoning-delta":
            parts.add_reasoning(get(payload, "delta"))
        elif kind in ("tool-input-start", "tool-input-available"):
            key = get(payload, "toolCallId")
            if not isinstance(key, str):
                return
            call = parts.call(key, id=key, name=get(payload, "toolName"))
            if kind == "tool-input-available":
                # The whole input, parsed by the SDK: it wins over the streamed text.
                call.parts = []
                call.value = get(payload, "input")
                call.complete = True
        elif kind == "tool-input-delta":
            key = get(payload, "toolCallId")
            if isinstance(key, str) and parts.known(key):
                parts.add_arguments(key, get(payload, "inputTextDelta"))
        elif kind == "tool-input-error":
            # The input the model wrote failed to parse: its text, as it was.
            key = get(payload, "toolCallId")
            text = get(payload, "input")
            if isinstance(key, str) and isinstance(text, str):
                call = parts.call(key, id=key, name=get(payload, "toolName"))
                call.final = text
                call.complete = True

    # Progress: the base rule (every event but a ping): each part the protocol sends
    # is a step of the answer's making.

    # -- reframing: data-only, the error part {"type": "error", "errorText"} ------------

    @staticmethod
    def standard_error(event: Event, payload: Any) -> bool:
        return get(payload, "type") == "error" and isinstance(get(payload, "errorText"), str)

    @staticmethod
    def error_event(message: str, kind: str | None) -> Event:
        return Event(data=dumps({"type": "error", "errorText": message}))

    # -- detection: a part type of this protocol's (asked after the others' shapes) ------

    @staticmethod
    def claims_payload(kind: str | None, payload: Any) -> bool:
        return kind in _ONLY


class UIMessageStreamWriter:
    """Write an AI SDK UI message stream, one part at a time, as event bytes.

    Each method returns the complete bytes of one event (``data: {...}`` and the blank
    line), made by :func:`sse_sansio.serialize`; send them as they come, with
    :data:`UI_MESSAGE_STREAM_HEADERS` on the response.  Stateless: one writer can
    serve any number of streams.  The order of parts is the caller's (start, then
    start-step, the text, reasoning and tool parts, finish-step, finish, and
    :meth:`done`).

    Any value JSON can carry is written, strings with lone surrogates included (they
    are escaped, ``\\ud800``: UTF-8 cannot carry them raw).

    Raises (every method):
        TypeError: a value JSON cannot encode (an object of your own, say).
        ValueError: NaN or infinity, a circular reference, a value nested too deeply.
    """

    # Pickling (issue 32, item 4): no state, so its default pickle is its public name,
    # sse_sansio.llm.UIMessageStreamWriter, and any copy writes the same bytes.

    def part(self, type: str, **fields: Any) -> bytes:
        """Any part: ``{"type": type, **fields}`` (a ``data-*`` part, say)."""
        try:
            text = dumps({"type": type, **fields}, allow_nan=False)
        except RecursionError:
            raise ValueError(
                f"UIMessageStreamWriter: the {type!r} part is nested too deeply"
            ) from None
        return serialize(Event(data=text))

    def start(self, message_id: str | None = None, *, metadata: Any = None) -> bytes:
        return self.part("start", **_given(messageId=message_id, messageMetadata=metadata))

    def start_step(self) -> bytes:
        return self.part("start-step")

    def text_start(self, id: str) -> bytes:
        return self.part("text-start", id=id)

    def text_delta(self, id: str, delta: str) -> bytes:
        return self.part("text-delta", id=id, delta=delta)

    def text_end(self, id: str) -> bytes:
        return self.part("text-end", id=id)

    def reasoning_start(self, id: str) -> bytes:
        return self.part("reasoning-start", id=id)

    def reasoning_delta(self, id: str, delta: str) -> bytes:
        return self.part("reasoning-delta", id=id, delta=delta)

    def reasoning_end(self, id: str) -> bytes:
        return self.part("reasoning-end", id=id)

    def tool_input_start(self, tool_call_id: str, tool_name: str) -> bytes:
        return self.part("tool-input-start", toolCallId=tool_call_id, toolName=tool_name)

    def tool_input_delta(self, tool_call_id: str, delta: str) -> bytes:
        return self.part("tool-input-delta", toolCallId=tool_call_id, inputTextDelta=delta)

    def tool_input_available(self, tool_call_id: str, tool_name: str, input: Any) -> bytes:
        return self.part(
            "tool-input-available", toolCallId=tool_call_id, toolName=tool_name, input=input
        )

    def tool_output_available(self, tool_call_id: str, output: Any) -> bytes:
        return self.part("tool-output-available", toolCallId=tool_call_id, output=output)

    def finish_step(self) -> bytes:
        return self.part("finish-step")

    def finish(self, finish_reason: str | None = None, *, metadata: Any = None) -> bytes:
        """The finish part; ``metadata`` (messageMetadata) may carry ``usage``."""
        return self.part("finish", **_given(finishReason=finish_reason, messageMetadata=metadata))

    def error(self, error_text: str) -> bytes:
        return self.part("error", errorText=error_text)

    def abort(self, reason: str | None = None) -> bytes:
        return self.part("abort", **_given(reason=reason))

    def done(self) -> bytes:
        """The literal ``data: [DONE]`` that ends the stream."""
        return serialize(Event(data=_DONE))


def _given(**fields: Any) -> dict[str, Any]:
    """The fields that are not None (the protocol's optional fields are left out)."""
    return {name: value for name, value in fields.items() if value is not None}
