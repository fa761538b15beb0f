"""Every tracker error is a PayloadError, whatever the payload; later events after the
verdict change nothing; the outcome is typed and refused before the end; through the
Translator, lone surrogates are escaped and arguments that are not JSON are carried as
they were, in every target (issue 41, item 8)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sse_sansio import Event, LocalProtocolError, serialize
from sse_sansio.llm import DIALECT_NAMES, PayloadError, Tracker, Translator
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


# -- payloads through the Translator (issue 41, item 8) ---------------------------------


def _named(payload: dict[str, Any]) -> bytes:
    return f"event: {payload['type']}\ndata: {json.dumps(payload)}\n\n".encode()


def _chat_call(id: str, name: str, arguments: str, text: str = "") -> bytes:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return b"data: " + json.dumps({"choices": [choice]}).encode() + b"\n\n"

    call = {"index": 0, "id": id, "type": "function", "function": {"name": name}}
    return b"".join(
        [
            chunk({"content": text}),
            chunk({"tool_calls": [{**call, "function": {"name": name, "arguments": ""}}]}),
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": arguments}}]}),
            chunk({}, "tool_calls"),
            b"data: [DONE]\n\n",
        ]
    )


def _anthropic_call(id: str, name: str, arguments: str, text: str = "") -> bytes:
    text_block = {"type": "text", "text": ""}
    tool = {"type": "tool_use", "id": id, "name": name, "input": {}}
    delta = {"type": "input_json_delta", "partial_json": arguments}
    return b"".join(
        _named(payload)
        for payload in (
            {"type": "message_start", "message": {"usage": {"input_tokens": 1}}},
            {"type": "content_block_start", "index": 0, "content_block": text_block},
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": text},
            },
            {"type": "content_block_stop", "index": 0},
            {"type": "content_block_start", "index": 1, "content_block": tool},
            {"type": "content_block_delta", "index": 1, "delta": delta},
            {"type": "content_block_stop", "index": 1},
            {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {}},
            {"type": "message_stop"},
        )
    )


def _responses_call(id: str, name: str, arguments: str, text: str = "") -> bytes:
    item = {"id": "fc_1", "type": "function_call", "call_id": id, "name": name}
    at = {"item_id": "fc_1", "output_index": 1}
    return b"".join(
        _named(payload)
        for payload in (
            {"type": "response.created", "response": {}},
            {
                "type": "response.output_text.delta",
                "item_id": "m",
                "output_index": 0,
                "delta": text,
            },
            {"type": "response.output_item.added", "output_index": 1, "item": item},
            {"type": "response.function_call_arguments.delta", **at, "delta": arguments},
            {"type": "response.function_call_arguments.done", **at, "arguments": arguments},
            {"type": "response.output_item.done", "output_index": 1, "item": item},
            {"type": "response.completed", "response": {"usage": None}},
        )
    )


CALL_SOURCES = {
    "openai-chat": _chat_call,
    "anthropic": _anthropic_call,
    "openai-responses": _responses_call,
}
TARGETS = ("openai-chat", "openai-responses", "anthropic", "gemini", "ai-sdk-ui")


def _translated(source: str, target: str, stream: bytes) -> Tracker:
    translator = Translator(source, target)
    out: list[Any] = []
    for item in parse(stream):
        out += translator.feed(item)
    tracker = Tracker(target)
    for item in parse(b"".join(serialize(item) for item in out)):  # serialize() refuses none
        tracker.feed(item)
    return tracker


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("source", sorted(CALL_SOURCES))
def test_lone_surrogates_in_text_tool_id_and_name_are_escaped_in_every_target(
    source: str, target: str
) -> None:
    stream = CALL_SOURCES[source]("call_\ud800", "look\udc00up", '{"q": "\ud83d"}', "a\ud800b")
    tracker = _translated(source, target, stream)
    assert tracker.outcome.outcome == "completed"
    assert tracker.answer.text == "a\ud800b"
    (call,) = tracker.answer.tool_calls
    assert (call.name, call.arguments_json) == ("look\udc00up", {"q": "\ud83d"})
    if target != "gemini":  # (Gemini's reading keeps the id where the API gives one)
        assert call.id == "call_\ud800"


@pytest.mark.parametrize("arguments", ["not json", '{"cut": "half', "[1, 2]", "7"])
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("source", sorted(CALL_SOURCES))
def test_arguments_that_are_not_a_json_object_are_carried_as_they_were(
    source: str, target: str, arguments: str
) -> None:
    stream = CALL_SOURCES[source]("call_1", "f", arguments)
    if target == "gemini":  # functionCall.args holds an object only: the documented error
        with pytest.raises(PayloadError, match="not a JSON object"):
            _translated(source, target, stream)
        return
    (call,) = _translated(source, target, stream).answer.tool_calls
    assert call.name == "f"
    assert call.arguments != "{}"
    try:
        assert json.loads(call.arguments) == json.loads(arguments)  # the same value
    except ValueError:
        assert call.arguments == arguments  # not JSON: the very text


# What a call streamed with no argument text at all becomes: the APIs that stream the
# text carry it as it was (""), those whose call holds an object say "no arguments".
NO_ARGUMENTS = {
    "openai-chat": "",
    "openai-responses": "",
    "anthropic": "{}",
    "gemini": "{}",
    "ai-sdk-ui": "{}",
}


@pytest.mark.parametrize("target", TARGETS)
def test_a_call_without_arguments(target: str) -> None:
    stream = _chat_call("call_1", "now", "")
    (call,) = _translated("openai-chat", target, stream).answer.tool_calls
    assert (call.name, call.arguments) == ("now", NO_ARGUMENTS[target])


def test_an_ai_sdk_input_error_is_read_as_its_text() -> None:
    parts = [
        {"type": "tool-input-start", "toolCallId": "c1", "toolName": "f"},
        {"type": "tool-input-error", "toolCallId": "c1", "toolName": "f", "input": "x{"},
        {"type": "tool-input-error", "toolCallId": 7, "input": "ignored"},
        {"type": "tool-input-error", "toolCallId": "c2", "input": {"not": "text"}},
    ]
    stream = b"".join(b"data: " + json.dumps(part).encode() + b"\n\n" for part in parts)
    tracker = Tracker("ai-sdk-ui")
    for item in parse(stream):
        tracker.feed(item)
    (call,) = tracker.answer.tool_calls
    assert (call.id, call.name, call.arguments, call.arguments_json, call.complete) == (
        "c1",
        "f",
        "x{",
        None,
        True,
    )
