"""Streams of every dialect written by hand from one neutral scenario, for the
Translator's tests (tests/llm/test_llm_translator.py) and its benchmark.

Each writer here follows its API's documented streaming shape on its own (the shapes
of tests/data/llm, which were copied from the documentation), independently of the
package's writers: a test that translates a stream written here compares two separate
readings of the documentation, not the code with itself.

A Scenario says what the model wrote (reasoning, text fragments, tool calls with their
argument fragments), the usage figures, and how the stream ends: ``("stop", word)``
with the API's own stop word, ``("error", message)``, or ``("cut",)`` (the stream
simply stops: no terminal event).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

Call = tuple[str, str, tuple[str, ...]]  # id, name, argument fragments


@dataclass(frozen=True)
class Scenario:
    text: tuple[str, ...] = ()
    reasoning: tuple[str, ...] = ()
    calls: tuple[Call, ...] = ()
    usage: tuple[int, int, int, int] | None = None  # input, output, cached, reasoning
    ending: tuple[str, ...] = ("stop",)
    extra: dict[str, Any] = field(default_factory=dict)


def _data(payload: Any, event: str | None = None) -> bytes:
    line = b"" if event is None else f"event: {event}\n".encode()
    return line + b"data: " + json.dumps(payload).encode() + b"\n\n"


def _named(payload: dict[str, Any]) -> bytes:
    return _data(payload, payload["type"])


# -- OpenAI Chat Completions ------------------------------------------------------------


def openai_chat(s: Scenario) -> bytes:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return _data({"id": "c1", "object": "chat.completion.chunk", "choices": [choice]})

    out = [chunk({"role": "assistant", "content": ""})]
    out += [chunk({"reasoning_content": r}) for r in s.reasoning]
    out += [chunk({"content": t}) for t in s.text]
    for n, (id, name, fragments) in enumerate(s.calls):
        first = {"index": n, "id": id, "type": "function", "function": {"name": name}}
        out.append(chunk({"tool_calls": [{**first, "function": {"name": name, "arguments": ""}}]}))
        for fragment in fragments:
            call = {"index": n, "function": {"arguments": fragment}}
            out.append(chunk({"tool_calls": [call]}))
    if s.ending[0] == "error":
        return b"".join([*out, _data({"error": {"message": s.ending[1], "type": "server_error"}})])
    if s.ending[0] == "cut":
        return b"".join(out)
    out.append(chunk({}, s.ending[1]))
    if s.usage is not None:
        usage = {
            "prompt_tokens": s.usage[0],
            "completion_tokens": s.usage[1],
            "prompt_tokens_details": {"cached_tokens": s.usage[2]},
            "completion_tokens_details": {"reasoning_tokens": s.usage[3]},
        }
        out.append(
            _data({"id": "c1", "object": "chat.completion.chunk", "choices": [], "usage": usage})
        )
    return b"".join([*out, b"data: [DONE]\n\n"])


# -- OpenAI Responses -------------------------------------------------------------------


def openai_responses(s: Scenario) -> bytes:
    seq = iter(range(10_000))

    def ev(type: str, **fields: Any) -> bytes:
        return _named({"type": type, "sequence_number": next(seq), **fields})

    out = [ev("response.created", response={"id": "r1", "status": "in_progress", "output": []})]
    index = 0
    if s.reasoning:
        out.append(
            ev(
                "response.output_item.added",
                output_index=index,
                item={"id": "rs", "type": "reasoning"},
            )
        )
        for r in s.reasoning:
            out.append(
                ev(
                    "response.reasoning_summary_text.delta",
                    item_id="rs",
                    output_index=index,
                    summary_index=0,
                    delta=r,
                )
            )
        out.append(
            ev(
                "response.output_item.done",
                output_index=index,
                item={"id": "rs", "type": "reasoning"},
            )
        )
        index += 1
    if s.text:
        out.append(
            ev(
                "response.output_item.added",
                output_index=index,
                item={"id": "m", "type": "message"},
            )
        )
        for t in s.text:
            out.append(
                ev(
                    "response.output_text.delta",
                    item_id="m",
                    output_index=index,
                    content_index=0,
                    delta=t,
                )
            )
        index += 1
    for id, name, fragments in s.calls:
        item = {
            "id": f"fc{index}",
            "type": "function_call",
            "call_id": id,
            "name": name,
            "arguments": "",
        }
        out.append(ev("response.output_item.added", output_index=index, item=item))
        for fragment in fragments:
            out.append(
                ev(
                    "response.function_call_arguments.delta",
                    item_id=item["id"],
                    output_index=index,
                    delta=fragment,
                )
            )
        whole = "".join(fragments)
        out.append(
            ev(
                "response.function_call_arguments.done",
                item_id=item["id"],
                output_index=index,
                arguments=whole,
            )
        )
        out.append(
            ev("response.output_item.done", output_index=index, item={**item, "arguments": whole})
        )
        index += 1
    if s.ending[0] == "error":
        body = {"type": "error", "code": "server_error", "message": s.ending[1], "param": None}
        return b"".join([*out, _data(body, "error")])
    if s.ending[0] == "cut":
        return b"".join(out)
    usage = None
    if s.usage is not None:
        usage = {
            "input_tokens": s.usage[0],
            "output_tokens": s.usage[1],
            "input_tokens_details": {"cached_tokens": s.usage[2]},
            "output_tokens_details": {"reasoning_tokens": s.usage[3]},
        }
    word = s.ending[1]
    if word == "completed":
        response = {"id": "r1", "status": "completed", "usage": usage}
        return b"".join([*out, ev("response.completed", response=response)])
    response = {
        "id": "r1",
        "status": "incomplete",
        "incomplete_details": {"reason": word},
        "usage": usage,
    }
    return b"".join([*out, ev("response.incomplete", response=response)])


# -- Anthropic Messages -----------------------------------------------------------------


def anthropic(s: Scenario) -> bytes:
    start_usage = {"input_tokens": s.usage[0], "output_tokens": 1} if s.usage else {}
    message = {
        "id": "m1",
        "type": "message",
        "role": "assistant",
        "content": [],
        "usage": start_usage,
    }
    out = [_named({"type": "message_start", "message": message})]
    index = 0

    def block(start: dict[str, Any], deltas: list[dict[str, Any]]) -> None:
        nonlocal index
        out.append(_named({"type": "content_block_start", "index": index, "content_block": start}))
        for delta in deltas:
            out.append(_named({"type": "content_block_delta", "index": index, "delta": delta}))
        out.append(_named({"type": "content_block_stop", "index": index}))
        index += 1

    if s.reasoning:
        block(
            {"type": "thinking", "thinking": ""},
            [{"type": "thinking_delta", "thinking": r} for r in s.reasoning]
            + [{"type": "signature_delta", "signature": "sig"}],
        )
    if s.text:
        block({"type": "text", "text": ""}, [{"type": "text_delta", "text": t} for t in s.text])
    for id, name, fragments in s.calls:
        block(
            {"type": "tool_use", "id": id, "name": name, "input": {}},
            [{"type": "input_json_delta", "partial_json": f} for f in fragments],
        )
    out.append(_named({"type": "ping"}))
    if s.ending[0] == "error":
        body = {"type": "error", "error": {"type": "overloaded_error", "message": s.ending[1]}}
        return b"".join([*out, _data(body, "error")])
    if s.ending[0] == "cut":
        return b"".join(out)
    usage: dict[str, int] = {}
    if s.usage is not None:
        usage = {
            "input_tokens": s.usage[0],
            "output_tokens": s.usage[1],
            "cache_read_input_tokens": s.usage[2],
        }
    delta = {"stop_reason": s.ending[1], "stop_sequence": None}
    out.append(_named({"type": "message_delta", "delta": delta, "usage": usage}))
    return b"".join([*out, _named({"type": "message_stop"})])


# -- Gemini -----------------------------------------------------------------------------


def gemini(s: Scenario) -> bytes:
    def chunk(parts: list[dict[str, Any]], **more: Any) -> bytes:
        candidate = {"content": {"parts": parts, "role": "model"}, **more.pop("candidate", {})}
        return _data({"candidates": [candidate], **more})

    out = [chunk([{"text": r, "thought": True}]) for r in s.reasoning]
    out += [chunk([{"text": t}]) for t in s.text]
    for id, name, fragments in s.calls:
        args = json.loads("".join(fragments) or "{}")
        out.append(chunk([{"functionCall": {"id": id, "name": name, "args": args}}]))
    if s.ending[0] == "error":
        error = {"code": 503, "message": s.ending[1], "status": "UNAVAILABLE"}
        return b"".join([*out, _data({"error": error})])
    if s.ending[0] == "cut":
        return b"".join(out)
    more: dict[str, Any] = {"candidate": {"finishReason": s.ending[1], "index": 0}}
    if s.usage is not None:
        more["usageMetadata"] = {
            "promptTokenCount": s.usage[0],
            "candidatesTokenCount": s.usage[1],
            "cachedContentTokenCount": s.usage[2],
            "thoughtsTokenCount": s.usage[3],
        }
    return b"".join([*out, chunk([], **more)])


# -- the AI SDK UI message stream --------------------------------------------------------


def ai_sdk_ui(s: Scenario) -> bytes:
    out = [_data({"type": "start"}), _data({"type": "start-step"})]
    for kind, fragments in (("reasoning", s.reasoning), ("text", s.text)):
        if fragments:
            out.append(_data({"type": f"{kind}-start", "id": kind}))
            out += [_data({"type": f"{kind}-delta", "id": kind, "delta": f}) for f in fragments]
            out.append(_data({"type": f"{kind}-end", "id": kind}))
    for id, name, fragments in s.calls:
        out.append(_data({"type": "tool-input-start", "toolCallId": id, "toolName": name}))
        for fragment in fragments:
            out.append(
                _data({"type": "tool-input-delta", "toolCallId": id, "inputTextDelta": fragment})
            )
        args = json.loads("".join(fragments) or "{}")
        out.append(
            _data(
                {"type": "tool-input-available", "toolCallId": id, "toolName": name, "input": args}
            )
        )
    if s.ending[0] == "error":
        return b"".join(
            [*out, _data({"type": "error", "errorText": s.ending[1]}), b"data: [DONE]\n\n"]
        )
    if s.ending[0] == "cut":
        return b"".join(out)
    finish: dict[str, Any] = {"type": "finish", "finishReason": s.ending[1]}
    if s.ending[1] == "abort":
        finish = {"type": "abort"}
    if s.usage is not None:
        usage = dict(
            zip(
                ("inputTokens", "outputTokens", "cachedInputTokens", "reasoningTokens"),
                s.usage,
                strict=True,
            )
        )
        finish["messageMetadata"] = {"usage": usage}
    return b"".join([*out, _data({"type": "finish-step"}), _data(finish), b"data: [DONE]\n\n"])


WRITE = {
    "openai-chat": openai_chat,
    "openai-responses": openai_responses,
    "anthropic": anthropic,
    "gemini": gemini,
    "ai-sdk-ui": ai_sdk_ui,
}

#: Each API's stop words that the tests cover: success first (for a call, the second).
WORDS = {
    "openai-chat": ("stop", "tool_calls", "length", "content_filter", "function_call"),
    "openai-responses": ("completed", "max_output_tokens", "content_filter"),
    "anthropic": (
        "end_turn",
        "tool_use",
        "stop_sequence",
        "max_tokens",
        "model_context_window_exceeded",
        "refusal",
        "pause_turn",
    ),
    "gemini": ("STOP", "MAX_TOKENS", "SAFETY", "RECITATION", "OTHER", "MALFORMED_FUNCTION_CALL"),
    "ai-sdk-ui": ("stop", "tool-calls", "length", "content-filter", "other", "error", "abort"),
}


def stream(dialect: str, s: Scenario) -> bytes:
    """The scenario written in ``dialect``'s documented shape."""
    return WRITE[dialect](s)
