# OpenAI Chat Completions: data-only events, each a chat.completion.chunk, ending with
# the exact data [DONE]; spoken by many OpenAI-compatible servers too.
#
# Sources: API reference, "Create chat completion" (`stream`: "data-only server-sent
# events ... terminated by a data: [DONE] message"; `stream_options.include_usage`: one
# more chunk with empty `choices` before [DONE]) and "The chat completion chunk object"
# (`finish_reason`: stop, length, content_filter, tool_calls, function_call
# (deprecated)); openai-python's _streaming.py raises on a payload whose `error` is set,
# and on `event: error`.  docs/llm-openai-chat.rst is this module's page.
#
# Rules: [DONE] ends the stream, and the finish reasons of the choices seen decide
# (the worst one wins; a choice seen but never finished makes a cut).  Choice 0 is the
# answer.  An error payload, or an event named error, fails the answer.
#
# Compatible servers' shapes read too: Mistral's reasoning models (magistral) send
# `content` as a list of chunks, `{"type": "thinking", "thinking": [{"type": "text",
# "text"}]}` and `{"type": "text", "text"}` (Mistral's "Reasoning" docs, mistralai's
# ThinkChunk and TextChunk); Ollama streams each tool call whole, every one under
# index 0 with its own id, so a new id under a used index is a new call; Qwen sends
# `"id": ""` on each later fragment of a call, which continues it (Dialect.call_key()).

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
    quoted,
)
from ._outcome import Verdict
from ._usage import Usage, count, merge, settled

__all__ = ["OpenAIChat"]

_DONE: Final = "[DONE]"
# The delta fields that carry output, in the chunk object (and the reasoning fields of
# OpenAI-compatible servers: DeepSeek, vLLM, OpenRouter).
_TEXT_FIELDS: Final = ("content", "refusal", "reasoning_content", "reasoning")
_CALL_FIELDS: Final = ("tool_calls", "function_call")


class OpenAIChat(Dialect):
    """OpenAI Chat Completions: ``data: [DONE]`` ends the stream; choices finish."""

    name = "openai-chat"
    terminal = "data: [DONE]"
    json_types = frozenset({NO_EVENT_TYPE, "error"})
    # Compatible servers (vLLM, LiteLLM) end the stream with [DONE] after an error too.
    stream_end = _DONE

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

    # A text delta: {"choices": [{"index", "delta": {"content": TEXT}, "finish_reason":
    # null}], ...}; "obfuscation" is random padding that differs from chunk to chunk.
    text_delta = DeltaShape(
        NO_EVENT_TYPE, ("choices", 0, "delta", "content"), latest=("obfuscation",)
    )

    def __init__(self) -> None:
        super().__init__()
        self.finishes: dict[int, str] = {}
        self.seen: set[int] = set()
        self.usage_last = False  # the latest event carried a usage object

    # -- tracking ------------------------------------------------------------------

    def decode(self, event: Event) -> Any:
        # The end marker is the exact data "[DONE]" (not a prefix: openai-node #2422).
        if event.data == _DONE:
            return None
        return Dialect.decode(self, event)  # (not super(): no object made per event)

    def observe(self, event: Event, payload: Any) -> Verdict | None:
        if event.data == _DONE:
            if self.usage_last and self.figures.provenance == "partial":
                # Usage in the chunk just before [DONE] is the last word on it, even
                # where a compatible server sent it with the choices.
                self.figures = settled(self.figures)
            unfinished = sorted(self.seen - self.finishes.keys())
            return finish_verdict(
                self.finishes,
                unfinished,
                self.FINISH,
                "finish_reason",
                "choice",
                "data: [DONE] arrived",
            )
        # (dict.get after one type test, not get(): this runs for every chunk.)
        chunk = payload if type(payload) is dict else {}
        error = chunk.get("error")
        if event.type == "error" or error:
            return failed(error or payload, "in the stream")
        choices = chunk.get("choices")
        usage = chunk.get("usage")
        if usage is not None or self.usage_last:
            self._usage(usage, final=choices == [])
        for choice in choices if type(choices) is list else ():
            if type(choice) is not dict:
                continue
            index = choice.get("index")
            if not isinstance(index, int):
                continue
            self.seen.add(index)
            if index == 0:
                self._delta(choice.get("delta"))
            reason = choice.get("finish_reason")
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
        if type(delta) is not dict:
            return
        content = delta.get("content")
        if type(content) is str:
            self.parts.text.append(content)
        elif isinstance(content, list):
            self._chunks(content)
        reasoning = delta.get("reasoning_content", delta.get("reasoning"))
        if reasoning is not None:
            self.parts.add_reasoning(reasoning)
        calls = delta.get("tool_calls")
        if calls is None and "function_call" not in delta:
            return  # a text delta: nothing more in it
        for position, call in enumerate(calls if isinstance(calls, list) else ()):
            index = get(call, "index")
            id = get(call, "id")
            key = self.call_key(index if isinstance(index, int) else position, id)
            self.parts.call(key, id=id, name=get(call, "function", "name"))
            self.parts.add_arguments(key, get(call, "function", "arguments"))
        function = delta.get("function_call")  # the deprecated functions API
        if isinstance(function, dict):
            self.parts.call("function_call", name=function.get("name"))
            self.parts.add_arguments("function_call", function.get("arguments"))

    def _chunks(self, content: list[Any]) -> None:
        """Content as a list of chunks (Mistral's reasoning models, magistral):
        ``{"type": "text", "text"}`` is text; ``{"type": "thinking", "thinking":
        [{"type": "text", "text"}, ...]}`` is reasoning."""
        for chunk in content:
            kind = get(chunk, "type")
            if kind == "text":
                self.parts.add_text(get(chunk, "text"))
            elif kind == "thinking":
                thinking = get(chunk, "thinking")
                for inner in thinking if isinstance(thinking, list) else (thinking,):
                    self.parts.add_reasoning(
                        get(inner, "text") if isinstance(inner, dict) else inner
                    )

    def stop_word(self) -> str | None:
        return min(self.finishes.items())[1] if self.finishes else None

    def missing(self) -> str:
        word = self.stop_word()
        if word is None:
            return super().missing()
        return (
            f"data: [DONE], after finish_reason {quoted(word)}: the text may be whole, but "
            "the API's end marker (and the usage chunk, when requested) never came; treat "
            "it as cut, or accept it knowingly"
        )

    # -- progress: output in a delta, a finish reason, [DONE], an error -------------------

    def moves(self, event: Event, payload: Any) -> bool:
        if event.data == _DONE or event.type == "error" or get(payload, "error"):
            return True
        choices = get(payload, "choices")
        for choice in choices if isinstance(choices, list) else ():
            if isinstance(get(choice, "finish_reason"), str):
                return True
            delta = get(choice, "delta")
            if any(get(delta, key) for key in _TEXT_FIELDS + _CALL_FIELDS):
                return True
        return False

    # -- reframing: data-only, the error is {"error": {...}} in an unnamed event --------

    @staticmethod
    def standard_error(event: Event, payload: Any) -> bool:
        return event.type == NO_EVENT_TYPE and isinstance(get(payload, "error"), dict)

    @staticmethod
    def error_event(message: str, kind: str | None) -> Event:
        return Event(data=dumps({"error": {"message": message, "type": kind or "server_error"}}))

    # -- detection: [DONE] is this API's alone; so is a "choices" field ------------------

    @staticmethod
    def claims_event(event: Event) -> bool:
        return event.data == _DONE

    @staticmethod
    def claims_payload(kind: str | None, payload: Any) -> bool:
        return get(payload, "choices") is not None
