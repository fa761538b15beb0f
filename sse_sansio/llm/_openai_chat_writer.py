# Writing OpenAI Chat Completions chunks (issue 35, item 1): the Translator's target
# frames for this API.  docs/llm-translation.rst has the stop table.
#
# Source: API reference, "The chat completion chunk object": each event is data-only,
# {"id", "object": "chat.completion.chunk", "created", "model", "choices": [{"index",
# "delta": {"role", "content", "refusal", "tool_calls": [{"index", "id", "type":
# "function", "function": {"name", "arguments"}}]}, "finish_reason"}]}; with
# stream_options.include_usage one more chunk with "choices": [] carries "usage"
# (prompt_tokens, completion_tokens, prompt_tokens_details.cached_tokens,
# completion_tokens_details.reasoning_tokens); "data: [DONE]" ends the stream.
# Reasoning has no field in OpenAI's own chunk: it goes in "reasoning_content", where
# DeepSeek, vLLM and OpenRouter put it (and this package's reading finds it).
#
# Stops: finish_reason is stop, tool_calls, length or content_filter; a refusal and a
# safety stop are content_filter (the nearest: the answer was withheld), any other stop
# length (the nearest that a client treats as "incomplete, may continue").

from __future__ import annotations

from typing import Any, ClassVar, Final

from sse_sansio._events import Event

from ._openai_chat import OpenAIChat
from ._usage import Usage
from ._writing import Writer, figures, frame

__all__ = ["OpenAIChatWriter"]

_DONE: Final = Event(data="[DONE]")
_USAGE: Final = (
    "prompt_tokens",
    "completion_tokens",
    "prompt_tokens_details.cached_tokens",
    "completion_tokens_details.reasoning_tokens",
)


class OpenAIChatWriter(Writer):
    dialect = OpenAIChat
    STOPS: ClassVar[dict[str, str]] = {"length": "length", "content_filter": "filter"}
    WORDS: ClassVar[dict[str, str]] = {
        "stop": "stop",
        "tool_calls": "tool_calls",
        "length": "length",
        "filter": "content_filter",
        "refusal": "content_filter",
        "other": "length",
    }

    def __init__(self) -> None:
        self.started = False

    def _chunk(self, delta: dict[str, Any], finish: str | None = None) -> list[Event]:
        if not self.started:
            self.started = True
            delta = {"role": "assistant", **delta}
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return [
            frame(
                {
                    "id": "chatcmpl-translated",
                    "object": "chat.completion.chunk",
                    "created": 0,
                    "model": "",
                    "choices": [choice],
                }
            )
        ]

    def text(self, fragment: str) -> list[Event]:
        return self._chunk({"content": fragment})

    def reasoning(self, fragment: str) -> list[Event]:
        return self._chunk({"reasoning_content": fragment})

    def tool_start(self, n: int, id: str, name: str) -> list[Event]:
        call = {
            "index": n,
            "id": id,
            "type": "function",
            "function": {"name": name, "arguments": ""},
        }
        return self._chunk({"tool_calls": [call]})

    def tool_delta(self, n: int, fragment: str) -> list[Event]:
        return self._chunk({"tool_calls": [{"index": n, "function": {"arguments": fragment}}]})

    def tool_end(self, n: int, arguments: str) -> list[Event]:
        return []  # a call is whole when its choice finishes

    def finish(self, kind: str, usage: Usage) -> list[Event]:
        out = self._chunk({}, self.WORDS[kind])
        given = figures(usage, _USAGE)
        if usage.input_tokens is not None and usage.output_tokens is not None:
            given["total_tokens"] = usage.input_tokens + usage.output_tokens  # by definition
        if given:
            body = {"id": "chatcmpl-translated", "object": "chat.completion.chunk", "created": 0}
            out += [frame({**body, "model": "", "choices": [], "usage": given})]
        return [*out, _DONE]
