# Writing the AI SDK's UI message stream (issue 35, item 1): the Translator's target
# frames for this protocol.  docs/llm-translation.rst has the stop table.
#
# Source: the AI SDK documentation, "Stream Protocols" (ai-sdk.dev/docs/ai-sdk-ui/
# stream-protocol) and its chunk schema: data-only events, each one JSON part with a
# "type": start, start-step, text-start/-delta/-end {"id", "delta"}, reasoning-start/
# -delta/-end, tool-input-start {"toolCallId", "toolName"}, tool-input-delta
# {"toolCallId", "inputTextDelta"}, tool-input-available {"toolCallId", "toolName",
# "input"}, finish-step, finish {"finishReason", "messageMetadata"}, error
# {"errorText"}; the stream ends with data: [DONE]; the response carries
# x-vercel-ai-ui-message-stream: v1 (UI_MESSAGE_STREAM_HEADERS).
#
# The protocol has no usage field: the figures go in the finish part's
# messageMetadata.usage in the SDK's LanguageModelUsage names (inputTokens,
# outputTokens, cachedInputTokens, reasoningTokens), where the SDK's own examples put
# them.  Stops: finishReason is stop, tool-calls, length, content-filter or other; a
# refusal is content-filter (the nearest: the answer was withheld).  An error part is
# followed by data: [DONE], as the SDK ends every stream.

from __future__ import annotations

from typing import Any, ClassVar, Final

from sse_sansio._events import Event

from ._ai_sdk_ui import AISDKUI, UI_MESSAGE_STREAM_HEADERS
from ._usage import Usage
from ._writing import Writer, figures, frame, parsed

__all__ = ["AISDKUIWriter"]

_DONE: Final = Event(data="[DONE]")
_USAGE: Final = ("inputTokens", "outputTokens", "cachedInputTokens", "reasoningTokens")


class AISDKUIWriter(Writer):
    dialect = AISDKUI
    headers = UI_MESSAGE_STREAM_HEADERS
    STOPS: ClassVar[dict[str, str]] = {"length": "length", "content-filter": "filter"}
    WORDS: ClassVar[dict[str, str]] = {
        "stop": "stop",
        "tool_calls": "tool-calls",
        "length": "length",
        "filter": "content-filter",
        "refusal": "content-filter",
        "other": "other",
    }

    def __init__(self) -> None:
        self.started = False
        self.parts = 0  # text and reasoning parts begun
        self.open: list[Any] = []  # the open text or reasoning part: [kind, id]
        self.calls: dict[int, list[str]] = {}  # call n -> [toolCallId, toolName]

    @staticmethod
    def _part(type: str, **fields: Any) -> Event:
        return frame({"type": type, **fields})

    def _begin(self) -> list[Event]:
        if self.started:
            return []
        self.started = True
        return [self._part("start"), self._part("start-step")]

    def _close(self) -> list[Event]:
        if not self.open:
            return []
        kind, id = self.open
        self.open = []
        return [self._part(f"{kind}-end", id=id)]

    def _delta(self, kind: str, fragment: str) -> list[Event]:
        out = self._begin()
        if self.open and self.open[0] != kind:
            out += self._close()
        if not self.open:
            id = f"{kind}-{self.parts}"
            self.parts += 1
            self.open = [kind, id]
            out.append(self._part(f"{kind}-start", id=id))
        out.append(self._part(f"{kind}-delta", id=self.open[1], delta=fragment))
        return out

    def text(self, fragment: str) -> list[Event]:
        return self._delta("text", fragment)

    def reasoning(self, fragment: str) -> list[Event]:
        return self._delta("reasoning", fragment)

    def tool_start(self, n: int, id: str, name: str) -> list[Event]:
        self.calls[n] = [id, name]
        out = [*self._begin(), *self._close()]
        return [*out, self._part("tool-input-start", toolCallId=id, toolName=name)]

    def tool_delta(self, n: int, fragment: str) -> list[Event]:
        return [
            self._part("tool-input-delta", toolCallId=self.calls[n][0], inputTextDelta=fragment)
        ]

    def tool_end(self, n: int, arguments: str) -> list[Event]:
        id, name = self.calls[n]
        if not arguments.strip():
            arguments = "{}"  # no arguments streamed: a call without arguments
        ok, value = parsed(arguments)
        if ok:
            return [self._part("tool-input-available", toolCallId=id, toolName=name, input=value)]
        # Not JSON: the protocol's own part for input that failed to parse, the text
        # carried as it was (issue 41, item 8), never an object made up for it.
        return [
            self._part(
                "tool-input-error",
                toolCallId=id,
                toolName=name,
                input=arguments,
                errorText="the tool call's arguments are not JSON",
            )
        ]

    def finish(self, kind: str, usage: Usage) -> list[Event]:
        out = [*self._begin(), *self._close(), self._part("finish-step")]
        fields: dict[str, Any] = {"finishReason": self.WORDS[kind]}
        given = figures(usage, _USAGE)
        if given:
            fields["messageMetadata"] = {"usage": given}
        return [*out, self._part("finish", **fields), _DONE]

    def fail(self, message: str, error_type: str | None) -> list[Event]:
        return [*super().fail(message, error_type), _DONE]
