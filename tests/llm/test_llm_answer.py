"""Tracker.answer: the text, the reasoning and the tool calls, put together and marked
whole or cut, for every dialect; tool-call arguments split at every position, and
streams cut at every byte."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from sse_sansio.llm import Answer, ToolCall, Tracker
from sse_sansio.llm._answer import Parts
from sse_sansio.testing import parse
from tests.helpers import llm_streams as s

ARGS = '{"city": "Paris", "days": [1, 2]}'
ARGS_JSON = {"city": "Paris", "days": [1, 2]}


def answer_of(dialect: str, stream: bytes) -> Answer:
    tracker = Tracker(dialect)
    for item in parse(stream):
        tracker.feed(item)
    return tracker.answer


# --- each dialect's tool call, its arguments in two fragments ------------------------


def openai_chat(first: str, second: str) -> list[bytes]:
    def call(**fields: Any) -> bytes:
        delta = {"tool_calls": [{"index": 0, **fields}]}
        return s.data({"choices": [{"index": 0, "delta": delta, "finish_reason": None}]})

    return [
        call(id="call_1", type="function", function={"name": "weather", "arguments": first}),
        call(function={"arguments": second}),
        s.data({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
        b"data: [DONE]\n\n",
    ]


def openai_responses(first: str, second: str) -> list[bytes]:
    item = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "weather"}
    return [
        s.named(
            {
                "type": "response.output_item.added",
                "output_index": 1,
                "item": {**item, "arguments": ""},
            }
        ),
        s.named(
            {"type": "response.function_call_arguments.delta", "output_index": 1, "delta": first}
        ),
        s.named(
            {"type": "response.function_call_arguments.delta", "output_index": 1, "delta": second}
        ),
        s.named(
            {
                "type": "response.function_call_arguments.done",
                "output_index": 1,
                "arguments": first + second,
            }
        ),
        s.named(
            {
                "type": "response.output_item.done",
                "output_index": 1,
                "item": {**item, "arguments": first + second},
            }
        ),
        s.named({"type": "response.completed", "response": {"status": "completed"}}),
    ]


def anthropic(first: str, second: str) -> list[bytes]:
    block = {"type": "tool_use", "id": "call_1", "name": "weather", "input": {}}

    def delta(text: str) -> bytes:
        return s.named(
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": text},
            }
        )

    return [
        s.named({"type": "message_start", "message": {"usage": {"input_tokens": 1}}}),
        s.named({"type": "content_block_start", "index": 1, "content_block": block}),
        delta(first),
        delta(second),
        s.named({"type": "content_block_stop", "index": 1}),
        s.named({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {}}),
        s.named({"type": "message_stop"}),
    ]


def ai_sdk_ui(first: str, second: str) -> list[bytes]:
    def delta(text: str) -> bytes:
        return s.data({"type": "tool-input-delta", "toolCallId": "call_1", "inputTextDelta": text})

    return [
        s.data({"type": "start"}),
        s.data({"type": "tool-input-start", "toolCallId": "call_1", "toolName": "weather"}),
        delta(first),
        delta(second),
        s.data(
            {
                "type": "tool-input-available",
                "toolCallId": "call_1",
                "toolName": "weather",
                "input": ARGS_JSON,
            }
        ),
        s.data({"type": "finish", "finishReason": "tool-calls"}),
        b"data: [DONE]\n\n",
    ]


# (dialect, the stream's events, and the indexes of the events that begin the call,
# make it complete, and end the answer)
TOOL_STREAMS: list[tuple[str, Callable[[str, str], list[bytes]], int, int, int]] = [
    ("openai-chat", openai_chat, 0, 2, 3),
    ("openai-responses", openai_responses, 0, 3, 5),
    ("anthropic", anthropic, 1, 4, 6),
    ("ai-sdk-ui", ai_sdk_ui, 1, 4, 5),
]
IDS = [case[0] for case in TOOL_STREAMS]


@pytest.mark.parametrize(
    ("dialect", "make", "first", "completing", "terminal"), TOOL_STREAMS, ids=IDS
)
def test_arguments_split_at_every_position(
    dialect: str,
    make: Callable[[str, str], list[bytes]],
    first: int,
    completing: int,
    terminal: int,
) -> None:
    for at in range(len(ARGS) + 1):
        answer = answer_of(dialect, b"".join(make(ARGS[:at], ARGS[at:])))
        assert answer.tool_calls == (ToolCall("call_1", "weather", ARGS, ARGS_JSON, True),)
        assert answer.complete


@pytest.mark.parametrize(
    ("dialect", "make", "first", "completing", "terminal"), TOOL_STREAMS, ids=IDS
)
def test_a_tool_call_cut_at_every_byte(
    dialect: str,
    make: Callable[[str, str], list[bytes]],
    first: int,
    completing: int,
    terminal: int,
) -> None:
    events = make(ARGS[:9], ARGS[9:])
    stream = b"".join(events)
    ends = [len(b"".join(events[: n + 1])) for n in range(len(events))]
    for cut in range(len(stream) + 1):
        answer = answer_of(dialect, stream[:cut])
        whole = sum(1 for end in ends if end <= cut)
        calls = answer.tool_calls
        if whole <= first:
            assert calls == (), cut
            continue
        (call,) = calls
        # The arguments so far, never more: half an object is text, not JSON.
        assert ARGS.startswith(call.arguments), cut
        assert call.complete is (whole > completing), cut
        assert call.arguments_json == (ARGS_JSON if call.arguments == ARGS else None), cut
        assert answer.complete is (whole > terminal), cut


def test_text_and_reasoning_of_each_dialect() -> None:
    assert answer_of("openai-chat", b"".join(s.OPENAI_CHAT)) == Answer("Hello", "", (), True)
    assert answer_of("openai-responses", b"".join(s.OPENAI_RESPONSES)).text == "Hi there"
    assert answer_of("anthropic", b"".join(s.ANTHROPIC)).text == "Hello"
    assert answer_of("gemini", b"".join(s.GEMINI)) == Answer("Hello", "", (), True)
    assert answer_of("ai-sdk-ui", b"".join(s.AI_SDK_UI)) == Answer("Hi", "", (), True)


def test_reasoning_where_the_api_streams_it() -> None:
    chat = s.data({"choices": [{"index": 0, "delta": {"reasoning_content": "hmm"}}]})
    assert answer_of("openai-chat", chat).reasoning == "hmm"
    responses = s.named({"type": "response.reasoning_summary_text.delta", "delta": "plan"})
    assert answer_of("openai-responses", responses).reasoning == "plan"
    thinking = s.named(
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "thinking", "thinking": ""},
        }
    ) + s.named(
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "thinking_delta", "thinking": "so"},
        }
    )
    assert answer_of("anthropic", thinking).reasoning == "so"
    gemini = s.data(
        {
            "candidates": [
                {"content": {"parts": [{"text": "think", "thought": True}, {"text": "A"}]}}
            ]
        }
    )
    answer = answer_of("gemini", gemini)
    assert (answer.reasoning, answer.text, answer.complete) == ("think", "A", False)
    ui = s.data({"type": "reasoning-delta", "id": "r", "delta": "why"})
    assert answer_of("ai-sdk-ui", ui).reasoning == "why"


def test_gemini_function_calls_arrive_whole() -> None:
    part = {"functionCall": {"name": "weather", "args": ARGS_JSON}}
    stream = s.data({"candidates": [{"content": {"parts": [part, part]}, "finishReason": "STOP"}]})
    call = ToolCall(None, "weather", json.dumps(ARGS_JSON), ARGS_JSON, True)
    assert answer_of("gemini", stream).tool_calls == (call, call)


def test_tool_calls_stay_incomplete_when_the_choice_stops_at_the_limit() -> None:
    events = openai_chat(ARGS[:5], "")
    events[2] = s.data({"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]})
    (call,) = answer_of("openai-chat", b"".join(events)).tool_calls
    assert (call.arguments, call.arguments_json, call.complete) == (ARGS[:5], None, False)


def test_the_deprecated_function_call_delta() -> None:
    delta = {"function_call": {"name": "weather", "arguments": ARGS}}
    stream = s.data({"choices": [{"index": 0, "delta": delta, "finish_reason": "function_call"}]})
    (call,) = answer_of("openai-chat", stream).tool_calls
    assert (call.name, call.arguments_json, call.complete) == ("weather", ARGS_JSON, True)


def test_an_anthropic_tool_call_without_input_deltas_has_its_start_input() -> None:
    block = {"type": "tool_use", "id": "t", "name": "now", "input": {}}
    stream = s.named({"type": "content_block_start", "index": 0, "content_block": block})
    (call,) = answer_of("anthropic", stream).tool_calls
    assert (call.arguments, call.arguments_json, call.complete) == ("", None, False)
    stream += s.named({"type": "content_block_stop", "index": 0})
    (call,) = answer_of("anthropic", stream).tool_calls
    assert (call.arguments, call.arguments_json, call.complete) == ("{}", {}, True)


def test_ai_sdk_input_available_is_the_whole_input() -> None:
    stream = s.data({"type": "tool-input-delta", "toolCallId": "x", "inputTextDelta": "{"})
    stream += s.data(
        {"type": "tool-input-available", "toolCallId": "x", "toolName": "f", "input": ARGS_JSON}
    )
    (call,) = answer_of("ai-sdk-ui", stream).tool_calls
    assert call == ToolCall("x", "f", json.dumps(ARGS_JSON), ARGS_JSON, True)


def test_fragments_of_other_shapes_are_ignored() -> None:
    stream = s.data(
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {"content": 3, "tool_calls": [{"function": {"arguments": 5}}]},
                }
            ]
        }
    )
    answer = answer_of("openai-chat", stream)
    assert (answer.text, answer.tool_calls) == ("", (ToolCall(None, None, "", None, False),))
    unknown = s.named(
        {"type": "response.function_call_arguments.delta", "output_index": 9, "delta": "x"}
    )
    assert answer_of("openai-responses", unknown).tool_calls == ()
    # An Anthropic block whose index is no number belongs to no block: its text is dropped.
    delta = {"type": "text_delta", "text": "A"}
    for index, text in ((0, "A"), ("0", "")):
        block = s.named({"type": "content_block_delta", "index": index, "delta": delta})
        assert answer_of("anthropic", block).text == text


def _responses_call(index: Any) -> bytes:
    item = {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}
    events = b""
    for kind in ("response.output_item.added", "response.output_item.done"):
        events += s.named({"type": kind, "output_index": index, "item": item})
    delta = {"type": "response.function_call_arguments.delta", "output_index": index}
    return events + s.named({**delta, "delta": "x"})


@pytest.mark.parametrize("index", [[], {}, "0", None, 1.5])
def test_a_responses_call_whose_output_index_is_no_number_is_dropped(index: Any) -> None:
    # Found by hypothesis: {"output_index": []} was used as a dict key (TypeError).
    assert answer_of("openai-responses", _responses_call(index)).tool_calls == ()
    # The same events with a number for the index make the call.
    (call,) = answer_of("openai-responses", _responses_call(0)).tool_calls
    assert call.name == "f"


def test_arguments_too_deep_to_encode_are_empty() -> None:
    parts = Parts()
    nested: list[Any] = []
    for _ in range(100_000):
        nested = [nested]
    call = parts.call("k")
    call.value, call.complete = nested, True
    (made,) = parts.snapshot(False).tool_calls
    assert (made.arguments, made.arguments_json) == ("", None)


def test_parts_of_shapes_no_api_documents() -> None:
    # A tool-input-start without an id, a .done event without arguments, a content
    # block of another type, a Gemini part that is not an object: skipped, never a crash.
    ui = s.data({"type": "tool-input-start", "toolCallId": 7, "toolName": "f"})
    assert answer_of("ai-sdk-ui", ui).tool_calls == ()
    item = {"type": "function_call", "call_id": "c", "name": "f"}
    responses = s.named({"type": "response.output_item.added", "output_index": 0, "item": item})
    responses += s.named(
        {"type": "response.function_call_arguments.delta", "output_index": 0, "delta": "{}"}
    )
    responses += s.named({"type": "response.function_call_arguments.done", "output_index": 0})
    (call,) = answer_of("openai-responses", responses).tool_calls
    assert (call.arguments, call.complete) == ("{}", True)
    image = {"type": "image", "source": {}}
    anthropic = s.named({"type": "content_block_start", "index": 0, "content_block": image})
    assert answer_of("anthropic", anthropic) == Answer("", "", (), False)
    gemini = s.data({"candidates": [{"content": {"parts": ["text", {"text": "A"}]}}]})
    assert answer_of("gemini", gemini).text == "A"
