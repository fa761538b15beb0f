"""The AI SDK UI message stream: the writer's bytes read back by the tracker."""

from __future__ import annotations

import json

import pytest

from sse_sansio import Event
from sse_sansio.llm import UI_MESSAGE_STREAM_HEADERS, ToolCall, Tracker, UIMessageStreamWriter
from sse_sansio.testing import parse

W = UIMessageStreamWriter()


def judged(stream: bytes, dialect: str = "ai-sdk-ui") -> Tracker:
    tracker = Tracker(dialect)
    for item in parse(stream):
        tracker.feed(item)
    return tracker


def whole_answer() -> bytes:
    return b"".join(
        [
            W.start("msg-1", metadata={"model": "m"}),
            W.start_step(),
            W.reasoning_start("r1"),
            W.reasoning_delta("r1", "Think"),
            W.reasoning_end("r1"),
            W.text_start("t1"),
            W.text_delta("t1", "Hé "),
            W.text_delta("t1", "there\nfriend"),
            W.text_end("t1"),
            W.tool_input_start("call-1", "weather"),
            W.tool_input_delta("call-1", '{"city": '),
            W.tool_input_delta("call-1", '"Paris"}'),
            W.tool_input_available("call-1", "weather", {"city": "Paris"}),
            W.tool_output_available("call-1", {"temp": 21}),
            W.part("data-weather", data={"ok": True}),
            W.finish_step(),
            W.finish("tool-calls", metadata={"usage": {"inputTokens": 5, "outputTokens": 7}}),
            W.done(),
        ]
    )


@pytest.mark.parametrize("dialect", ["ai-sdk-ui", "auto"])
def test_round_trip(dialect: str) -> None:
    tracker = judged(whole_answer(), dialect)
    outcome = tracker.outcome
    assert (outcome.outcome, outcome.stop_reason, outcome.dialect) == (
        "completed",
        "tool-calls",
        "ai-sdk-ui",
    )
    assert (outcome.usage.input_tokens, outcome.usage.output_tokens) == (5, 7)
    assert outcome.usage.provenance == "reported"
    answer = tracker.answer
    assert (answer.text, answer.reasoning, answer.complete) == ("Hé there\nfriend", "Think", True)
    assert answer.tool_calls == (
        ToolCall("call-1", "weather", '{"city": "Paris"}', {"city": "Paris"}, True),
    )


def test_every_event_is_one_json_data_line() -> None:
    items = [item for item in parse(whole_answer()) if isinstance(item, Event)]
    assert items[-1].data == "[DONE]"
    parts = [json.loads(item.data) for item in items[:-1]]
    assert [p["type"] for p in parts][:3] == ["start", "start-step", "reasoning-start"]
    assert parts[0] == {"type": "start", "messageId": "msg-1", "messageMetadata": {"model": "m"}}
    assert all(item.type == "message" and "\n" not in item.data for item in items)
    assert W.done() == b"data: [DONE]\n\n"
    assert W.finish() == b'data: {"type": "finish"}\n\n'


def test_the_response_headers() -> None:
    assert UI_MESSAGE_STREAM_HEADERS["x-vercel-ai-ui-message-stream"] == "v1"
    assert UI_MESSAGE_STREAM_HEADERS["content-type"] == "text/event-stream"


@pytest.mark.parametrize(
    ("parts", "word", "stop_reason"),
    [
        ([W.start(), W.finish("stop"), W.done()], "completed", "stop"),
        ([W.start(), W.finish(), W.done()], "completed", None),
        ([W.start(), W.finish("length"), W.done()], "stopped", "length"),
        ([W.start(), W.finish("made-up")], "stopped", "made-up"),
        ([W.start(), W.error("model overloaded"), W.done()], "failed", None),
        ([W.start(), W.abort("user"), W.done()], "stopped", "abort"),
        ([W.start(), W.abort(), W.done()], "stopped", "abort"),
    ],
)
def test_how_a_stream_ends(parts: list[bytes], word: str, stop_reason: str | None) -> None:
    outcome = judged(b"".join(parts)).outcome
    assert (outcome.outcome, outcome.stop_reason) == (word, stop_reason)
    if word == "failed":
        assert outcome.error_message == "model overloaded"


def test_done_without_finish_and_a_cut_are_cuts() -> None:
    outcome = judged(W.start() + W.text_delta("t", "x") + W.done()).outcome
    assert (outcome.outcome, outcome.cut) == ("cut", "unfinished")
    stream = W.start() + W.text_delta("t", "x")
    for cut in range(len(stream) + 1):
        tracker = judged(stream[:cut])
        assert tracker.outcome.outcome == "cut"
        assert tracker.outcome.usage.provenance == "unavailable"
        assert not tracker.answer.complete


def test_the_writer_refuses_what_json_cannot_say() -> None:
    with pytest.raises(ValueError, match="JSON"):
        W.tool_output_available("c", float("nan"))
    with pytest.raises(TypeError):
        W.part("data-x", data=object())
