"""Every tracker error is a PayloadError, whatever the payload; later events after the
verdict change nothing; the outcome is typed and refused before the end."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sse_sansio import Event, LocalProtocolError
from sse_sansio.llm import DIALECT_NAMES, PayloadError, Tracker
from sse_sansio.testing import parse
from tests.helpers import llm_streams as s

DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize("dialect", DIALECT_NAMES)
def test_json_nested_too_deeply_is_a_payload_error(dialect: str) -> None:
    tracker = Tracker(dialect)
    if dialect == "auto":
        # Before detection every event type is lenient: the data stays text.
        assert tracker.feed(Event(data=DEEP)) == DEEP
        return
    with pytest.raises(PayloadError, match="nested too deeply") as caught:
        tracker.feed(Event(data=DEEP))
    assert caught.value.offset == -1
    with pytest.raises(PayloadError):
        tracker.end()


def test_json_nested_too_deeply_in_an_unknown_event_is_text() -> None:
    tracker = Tracker("anthropic")
    assert tracker.feed(Event(type="future_event", data=DEEP)) == DEEP
    assert tracker.end().outcome == "cut"


@pytest.mark.parametrize(
    ("dialect", "events"),
    [
        ("openai-chat", s.OPENAI_CHAT),
        ("anthropic", s.ANTHROPIC),
        ("openai-responses", s.OPENAI_RESPONSES),
        ("ai-sdk-ui", s.AI_SDK_UI),
    ],
)
def test_events_after_the_verdict_change_nothing(dialect: str, events: list[bytes]) -> None:
    tracker = Tracker(dialect)
    for item in parse(
        b"".join(events) + b"data: {not json\n\nevent: error\ndata: " + DEEP.encode() + b"\n\n"
    ):
        payload = tracker.feed(item)
    assert payload is None  # the end of the stream
    outcome = tracker.outcome
    assert outcome.outcome == "completed"
    assert outcome.events == len(events) + 2
    assert tracker.answer.complete


def test_a_later_event_is_handed_back_as_it_decodes() -> None:
    tracker = Tracker("openai-chat")
    tracker.feed(Event(data="[DONE]"))
    assert tracker.feed(Event(data="{not json")) == "{not json"
    assert tracker.feed(Event(data='{"a": 1}')) == {"a": 1}


def test_the_outcome_before_the_end_is_refused() -> None:
    tracker = Tracker("gemini")
    with pytest.raises(LocalProtocolError, match="before the end of the stream"):
        tracker.outcome  # noqa: B018 - the property raises
    assert tracker.end() is tracker.outcome


_TYPES = [
    "message", "error", "message_start", "message_delta", "content_block_start",
    "content_block_delta", "content_block_stop", "message_stop", "response.completed",
    "response.output_item.added", "response.output_item.done",
    "response.function_call_arguments.delta", "response.function_call_arguments.done",
    "response.output_text.delta",
]  # fmt: skip
_KEYS = [
    "type", "choices", "index", "delta", "content", "tool_calls", "function", "arguments",
    "name", "id", "usage", "prompt_tokens", "message", "input_tokens", "output_index",
    "item", "content_block", "partial_json", "text", "candidates", "parts", "functionCall",
    "args", "usageMetadata", "finishReason", "finish_reason", "messageMetadata", "totalUsage",
    "toolCallId", "inputTextDelta", "input", "thought", "response", "error", "errorText",
]  # fmt: skip
_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-2, max_value=2**70)
    | st.sampled_from(["", "[DONE]", "function_call", "tool_use", "text_delta", "finish", "stop"])
    | st.sampled_from(_TYPES),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(_KEYS), inner, max_size=5)
    ),
    max_leaves=16,
)
_DATA = _JSON.map(json.dumps) | st.sampled_from(["[DONE]", "{", "", "x", DEEP[:3000]])


@settings(max_examples=150)
@given(
    st.sampled_from(DIALECT_NAMES),
    st.lists(st.tuples(st.sampled_from(_TYPES), _DATA), max_size=8),
    st.booleans(),
)
def test_payloads_of_any_shape_raise_only_payload_error(
    dialect: str, events: list[tuple[str, str]], truncated: bool
) -> None:
    tracker = Tracker(dialect)
    for kind, data in events:
        try:
            tracker.feed(Event(type=kind, data=data))
        except PayloadError:
            with pytest.raises(PayloadError):
                tracker.end()
            return
        answer: Any = tracker.answer  # readable at any time
        assert isinstance(answer.text, str)
    outcome = tracker.end(truncated=truncated)
    json.dumps(outcome.to_json())
    assert outcome.usage.provenance in ("reported", "partial", "unavailable")
    for call in tracker.answer.tool_calls:
        assert isinstance(call.arguments, str)
