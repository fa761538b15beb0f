"""sse_sansio.llm, rule by rule: the precedence of outcomes, each dialect's edge cases,
the JSON errors, the tracker's contract, and payloads of every shape (never a crash)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sse_sansio import (
    NEED_DATA,
    Comment,
    EndOfStream,
    Event,
    LocalProtocolError,
    RemoteProtocolError,
)
from sse_sansio.llm import (
    DIALECT_NAMES,
    EXIT_STATUS,
    Dialect,
    Outcome,
    PayloadError,
    Tracker,
    generic,
)
from sse_sansio.testing import parse


def block(data: Any, event: str | None = None) -> bytes:
    """One event block; ``data`` as JSON unless it is already text."""
    text = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {text}\n\n".encode()


def judge(dialect: str | Dialect, *blocks: bytes) -> Outcome:
    tracker = Tracker(dialect)
    for item in parse(b"".join(blocks)):
        tracker.feed(item)
    assert tracker.outcome is not None
    return tracker.outcome


def chunk(*choices: dict[str, Any]) -> bytes:
    return block({"object": "chat.completion.chunk", "choices": list(choices)})


DONE = b"data: [DONE]\n\n"
STOP = chunk({"index": 0, "delta": {}, "finish_reason": "stop"})


# --- precedence -------------------------------------------------------------------


def test_a_finish_reason_without_done_is_a_cut() -> None:
    outcome = judge("openai-chat", STOP)
    assert (outcome.outcome, outcome.cut, outcome.stop_reason) == ("cut", "before-terminal", "stop")
    assert "[DONE]" in outcome.reason
    assert "accept it knowingly" in outcome.reason
    assert outcome.offset == len(STOP)  # where the missing part would begin


def test_done_without_a_finish_reason_is_a_cut() -> None:
    outcome = judge("openai-chat", chunk({"index": 0, "delta": {"content": "Hi"}}), DONE)
    assert (outcome.outcome, outcome.cut, outcome.stop_reason) == ("cut", "unfinished", None)
    assert "choice 0 had no finish_reason" in outcome.reason
    assert judge("openai-chat", DONE).reason.startswith("data: [DONE] arrived but no choice")


def test_a_cut_mid_event_names_what_was_missing() -> None:
    raw = STOP + b'data: {"choices": [{"ind'
    outcome = judge("openai-chat", raw)
    assert (outcome.outcome, outcome.cut, outcome.stop_reason) == ("cut", "mid-event", "stop")
    assert outcome.reason.startswith("the stream was cut in the middle of an event")
    assert outcome.offset == len(STOP)


def test_bytes_cut_after_the_terminal_event_lose_nothing() -> None:
    outcome = judge("openai-chat", STOP, DONE, b"data: trailing garba")
    assert (outcome.outcome, outcome.stop_reason, outcome.offset) == (
        "completed",
        "stop",
        len(STOP),
    )


def test_the_first_settling_event_wins() -> None:
    error = block({"error": {"type": "server_error", "message": "late"}})
    outcome = judge("openai-chat", STOP, DONE, error)
    assert outcome.outcome == "completed"
    assert outcome.events == 3  # counted, but judged by the terminal event
    # An error first: later events (even a terminal one) change nothing.
    assert judge("openai-chat", error, STOP, DONE).outcome == "failed"


def test_an_error_then_a_cut_is_a_failure() -> None:
    raw = block({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    outcome = judge("anthropic", raw.replace(b"data", b"event: error\ndata", 1) + b"data: {")
    assert (outcome.outcome, outcome.error_type, outcome.error_message) == (
        "failed",
        "overloaded_error",
        "Overloaded",
    )
    assert outcome.offset == 0


# --- OpenAI Chat Completions ------------------------------------------------------


def test_chat_done_is_matched_exactly() -> None:
    for near in ("[DONE] ", " [DONE]", "[DONE]x", "[done]"):
        raw = STOP + f"data: {near}\n\n".encode()
        with pytest.raises(PayloadError, match="'message' event at byte offset"):
            judge("openai-chat", raw)


def test_chat_error_event_and_error_shapes() -> None:
    outcome = judge("openai-chat", block({"error": {"message": "bad"}}, event="error"))
    assert (outcome.error_type, outcome.error_message) == (None, "bad")
    outcome = judge("openai-chat", block({"detail": "x"}, event="error"))
    assert (outcome.outcome, outcome.error_type, outcome.error_message) == ("failed", None, None)
    assert "no details given" in outcome.reason
    outcome = judge("openai-chat", block({"error": "quota exceeded"}))
    assert outcome.error_message == "quota exceeded"
    outcome = judge("openai-chat", block({"error": {"code": 429, "message": "slow down"}}))
    assert (outcome.error_type, outcome.error_message) == ("429", "slow down")
    outcome = judge("openai-chat", block({"error": {"code": True, "message": 7}}))
    assert (outcome.error_type, outcome.error_message) == (None, "7")  # a bool is no code


def test_chat_finish_reasons() -> None:
    def finish(word: str) -> Outcome:
        return judge("openai-chat", chunk({"index": 0, "finish_reason": word}), DONE)

    assert (finish("function_call").outcome, finish("tool_calls").outcome) == ("completed",) * 2
    assert finish("tool_calls").reason.startswith("the model called tools")
    assert finish("content_filter").outcome == "stopped"
    unknown = finish("a_new_reason")
    assert (unknown.outcome, unknown.stop_reason) == ("stopped", "a_new_reason")
    assert "does not know" in unknown.reason


def test_chat_several_choices() -> None:
    first = chunk({"index": 0, "finish_reason": None}, {"index": 1, "finish_reason": None})
    outcome = judge("openai-chat", first, chunk({"index": 1, "finish_reason": "stop"}), DONE)
    assert (outcome.outcome, outcome.cut) == ("cut", "unfinished")
    assert "choice 0 had no finish_reason" in outcome.reason
    both = chunk({"index": 1, "finish_reason": "stop"}, {"index": 0, "finish_reason": "tool_calls"})
    assert judge("openai-chat", first, both, DONE).stop_reason == "tool_calls"
    mixed = chunk({"index": 0, "finish_reason": "stop"}, {"index": 1, "finish_reason": "length"})
    outcome = judge("openai-chat", mixed, DONE)
    assert (outcome.outcome, outcome.stop_reason) == ("stopped", "length")
    assert outcome.reason.startswith("choice 1: ")


def test_chat_odd_shapes_are_ignored() -> None:
    odd = [
        block([1, 2]),
        block({"choices": "none"}),
        block({"choices": [None, {"index": "0", "finish_reason": "stop"}, {"index": 0}]}),
        block({"choices": [{"index": 0, "finish_reason": 5}]}),
        block("null"),
        block({"error": None}),
        block({"error": {}}),
    ]
    outcome = judge("openai-chat", *odd, DONE)
    assert (outcome.outcome, outcome.cut) == ("cut", "unfinished")


# --- OpenAI Responses -------------------------------------------------------------


def test_responses_types_from_the_payload_without_event_names() -> None:
    created = block({"type": "response.created", "response": {"status": "in_progress"}})
    done = block({"type": "response.completed", "response": {"status": "completed"}})
    assert judge("openai-responses", created, done).outcome == "completed"
    assert judge("openai-responses", created).outcome == "cut"
    assert "response.completed, response.incomplete" in judge("openai-responses", created).reason


def test_responses_incomplete_reasons() -> None:
    def incomplete(details: Any) -> Outcome:
        payload = {"type": "response.incomplete", "response": {"incomplete_details": details}}
        return judge("openai-responses", block(payload, event="response.incomplete"))

    outcome = incomplete({"reason": "content_filter"})
    assert (outcome.outcome, outcome.stop_reason) == ("stopped", "content_filter")
    assert "content filter" in outcome.reason
    outcome = incomplete({"reason": "steered"})
    assert (outcome.outcome, outcome.stop_reason) == ("stopped", "steered")
    outcome = incomplete(None)
    assert (outcome.outcome, outcome.stop_reason) == ("stopped", None)
    assert "reason null" in outcome.reason


def test_responses_error_shapes() -> None:
    # The documented shape (fields at the top level) and the one sent today (nested).
    top = {"type": "error", "code": "ERR_SOMETHING", "message": "Something went wrong"}
    outcome = judge("openai-responses", block(top, event="error"))
    assert (outcome.error_type, outcome.error_message) == ("error", "Something went wrong")
    failed = {"type": "response.failed", "response": {"status": "failed", "error": None}}
    outcome = judge("openai-responses", block(failed, event="response.failed"))
    assert (outcome.outcome, outcome.error_type) == ("failed", None)


def test_responses_strict_json_for_documented_events_only() -> None:
    with pytest.raises(PayloadError, match=re.escape("'response.output_text.delta' event")):
        judge("openai-responses", block("oops", event="response.output_text.delta"))
    with pytest.raises(PayloadError, match="'error' event"):
        judge("openai-responses", block("oops", event="error"))
    assert judge("openai-responses", block("oops", event="custom")).outcome == "cut"


# --- Anthropic --------------------------------------------------------------------


def anthropic(kind: str, **fields: Any) -> bytes:
    return block({"type": kind, **fields}, event=kind)


def delta(word: str | None) -> bytes:
    return anthropic("message_delta", delta={"stop_reason": word})


STOPPED = anthropic("message_stop")


def test_anthropic_stop_reasons() -> None:
    for word in ("end_turn", "stop_sequence", "tool_use"):
        assert judge("anthropic", delta(word), STOPPED).outcome == "completed"
    for word in ("max_tokens", "pause_turn", "refusal", "model_context_window_exceeded"):
        outcome = judge("anthropic", delta(word), STOPPED)
        assert (outcome.outcome, outcome.stop_reason) == ("stopped", word)
    assert (
        "send the assistant content back" in judge("anthropic", delta("pause_turn"), STOPPED).reason
    )
    assert judge("anthropic", delta("brand_new"), STOPPED).outcome == "stopped"


def test_anthropic_message_stop_without_a_stop_reason_is_a_cut() -> None:
    start = anthropic("message_start", message={"stop_reason": None})
    outcome = judge("anthropic", start, delta(None), STOPPED)
    assert (outcome.outcome, outcome.cut) == ("cut", "unfinished")
    assert "no message had a stop_reason" in outcome.reason


def test_anthropic_stop_reason_in_message_start_counts() -> None:
    start = anthropic("message_start", message={"stop_reason": "end_turn"})
    assert judge("anthropic", start, STOPPED).stop_reason == "end_turn"


def test_anthropic_stop_reason_without_message_stop_is_a_cut() -> None:
    outcome = judge("anthropic", delta("end_turn"))
    assert (outcome.outcome, outcome.stop_reason) == ("cut", "end_turn")
    assert 'message_stop, after stop_reason "end_turn"' in outcome.reason


def test_anthropic_types_from_the_payload_without_event_names() -> None:
    plain = [block({"type": "message_delta", "delta": {"stop_reason": "end_turn"}})]
    assert judge("anthropic", *plain, block({"type": "message_stop"})).outcome == "completed"
    error = block({"type": "error", "error": {"type": "api_error", "message": "boom"}})
    assert judge("anthropic", error).error_type == "api_error"


def test_anthropic_known_events_must_be_json() -> None:
    with pytest.raises(PayloadError, match=r"'ping' event at byte offset 0 is not JSON"):
        judge("anthropic", block("{", event="ping"))


# --- Gemini -----------------------------------------------------------------------


def gemini(*candidates: Any, **fields: Any) -> bytes:
    return block({"candidates": list(candidates), **fields})


def test_gemini_finish_reasons() -> None:
    assert judge("gemini", gemini({"finishReason": "STOP"})).outcome == "completed"
    for word in ("RECITATION", "TOO_MANY_TOOL_CALLS", "MALFORMED_FUNCTION_CALL", "SOMETHING_NEW"):
        outcome = judge("gemini", gemini({"content": {}}), gemini({"finishReason": word}))
        assert (outcome.outcome, outcome.stop_reason) == ("stopped", word)
        assert outcome.offset == len(gemini({"content": {}}))


def test_gemini_without_a_finish_reason_is_a_cut() -> None:
    outcome = judge("gemini", gemini({"content": {"parts": [{"text": "Hi"}]}}))
    assert (outcome.outcome, outcome.cut, outcome.stop_reason) == ("cut", "before-terminal", None)
    assert "every candidate had a finishReason" in outcome.reason
    # A cut inside an event after the finish reason: the lost event may have said more.
    outcome = judge("gemini", gemini({"finishReason": "STOP"}) + b"data: {")
    assert (outcome.outcome, outcome.cut, outcome.stop_reason) == ("cut", "mid-event", "STOP")


def test_gemini_several_candidates() -> None:
    first = gemini({"index": 0}, {"index": 1})
    outcome = judge("gemini", first, gemini({"finishReason": "STOP"}))
    assert (outcome.outcome, outcome.cut) == ("cut", "unfinished")
    assert outcome.reason.startswith("the stream ended but candidate 1 had no finishReason")
    both = gemini({"finishReason": "STOP"}, {"index": 1, "finishReason": "STOP"})
    assert judge("gemini", first, both).outcome == "completed"


def test_gemini_prompt_block_reasons() -> None:
    outcome = judge("gemini", block({"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}}))
    assert (outcome.outcome, outcome.stop_reason) == ("stopped", "PROHIBITED_CONTENT")
    outcome = judge("gemini", block({"promptFeedback": {"blockReason": "NEW_REASON"}}))
    assert outcome.reason.startswith("the prompt was blocked: rephrase it")


def test_gemini_odd_shapes_are_ignored() -> None:
    odd = gemini(None, {"index": "1", "finishReason": "STOP"}, {"finishReason": 3})
    outcome = judge("gemini", odd, block({"candidates": {}}), block({"promptFeedback": {}}))
    assert (outcome.outcome, outcome.cut) == ("cut", "before-terminal")


def test_gemini_offsets_of_hand_built_events_are_unknown() -> None:
    tracker = Tracker("gemini")
    tracker.feed(Event(data=json.dumps({"candidates": [{"finishReason": "STOP"}]})))
    outcome = tracker.end()
    assert (outcome.outcome, outcome.offset) == ("completed", None)


# --- generic ----------------------------------------------------------------------


def test_generic_dialect() -> None:
    done = block("bye", event="done")
    outcome = judge(generic("done"), block("hello"), done)
    assert (outcome.outcome, outcome.dialect) == ("completed", "generic")
    assert "'done' event" in outcome.reason
    assert judge(generic("done"), block("hello")).outcome == "cut"
    outcome = judge(generic("done", error="oops"), block("disk full", event="oops"))
    assert (outcome.outcome, outcome.error_message) == ("failed", "disk full")
    error = block({"error": {"type": "quota", "message": "no more"}}, event="oops")
    outcome = judge(generic("done", error="oops", json=True), error)
    assert (outcome.error_type, outcome.error_message) == ("quota", "no more")
    with pytest.raises(PayloadError, match="'message' event"):
        judge(generic("done", json=True), block("not json"))


def test_generic_feed_returns_text_or_json() -> None:
    tracker = Tracker(generic("done"))
    assert tracker.feed(Event(data='{"a": 1}')) == '{"a": 1}'
    tracker = Tracker(generic("done", json=True))
    assert tracker.feed(Event(data='{"a": 1}')) == {"a": 1}


# --- auto -------------------------------------------------------------------------


def test_auto_detects_from_payload_shapes() -> None:
    cases = {
        "openai-chat": block({"choices": []}),
        "openai-responses": block({"type": "response.created"}),
        "anthropic": block({"type": "message_start", "message": {}}),
        "gemini": block({"promptFeedback": {"blockReason": "OTHER"}}),
    }
    for name, raw in cases.items():
        tracker = Tracker("auto")
        assert tracker.dialect == "auto"
        for item in parse(raw):
            tracker.feed(item)
        assert tracker.dialect == name
    assert judge("auto", cases["gemini"]).outcome == "stopped"


def test_auto_before_any_known_event() -> None:
    outcome = judge("auto", b": keepalive\n\n", block({"hello": 1}), block("plain text"))
    assert (outcome.outcome, outcome.cut, outcome.dialect) == ("cut", "before-terminal", "auto")
    assert "known API" in outcome.reason
    outcome = judge("auto", block({"hello": 1}) + b"data: {")
    assert (outcome.outcome, outcome.cut) == ("cut", "mid-event")
    assert "known API" in outcome.reason


def test_auto_errors_before_detection() -> None:
    gemini_error = {
        "error": {"code": 429, "message": "Resource exhausted", "status": "RESOURCE_EXHAUSTED"}
    }
    outcome = judge("auto", block(gemini_error))
    assert (outcome.outcome, outcome.error_type, outcome.dialect) == (
        "failed",
        "RESOURCE_EXHAUSTED",
        "auto",
    )
    outcome = judge("auto", block("upstream went away", event="error"))
    assert (outcome.outcome, outcome.error_message) == ("failed", "upstream went away")


def test_auto_keeps_the_detected_dialects_rules() -> None:
    # Detected as Anthropic: a later non-JSON ping is a PayloadError, as it would be there.
    start = anthropic("message_start", message={})
    with pytest.raises(PayloadError):
        judge("auto", start, block("x", event="ping"))


# --- the tracker's contract -------------------------------------------------------


def test_payload_error_names_the_event_and_its_offset_and_sticks() -> None:
    tracker = Tracker("openai-chat")
    items = parse(STOP + b"event: error\ndata: {oops\n\n")
    tracker.feed(items[0])
    with pytest.raises(PayloadError) as caught:
        tracker.feed(items[1])
    error = caught.value
    assert isinstance(error, RemoteProtocolError)
    assert error.offset == len(STOP)
    assert re.match(
        rf"the data of the 'error' event at byte offset {len(STOP)} is not JSON", str(error)
    )
    for again in (lambda: tracker.feed(items[2]), tracker.end):
        with pytest.raises(PayloadError) as repeated:
            again()
        assert repeated.value is error
    with pytest.raises(PayloadError) as on_outcome:
        tracker.outcome  # noqa: B018 - the property raises
    assert on_outcome.value is error


def test_payload_error_for_an_event_built_by_hand() -> None:
    with pytest.raises(PayloadError, match="at an event built by hand is not JSON") as caught:
        Tracker("gemini").feed(Event(data="{"))
    assert caught.value.offset == -1


def test_end_is_idempotent_and_feeding_after_it_is_misuse() -> None:
    tracker = Tracker("openai-chat")
    tracker.feed(Comment(text="ping"))
    outcome = tracker.end(truncated=True)
    assert (outcome.outcome, outcome.offset) == ("cut", None)  # hand-built: offsets unknown
    assert tracker.end() is outcome
    assert tracker.feed(EndOfStream()) is None
    assert tracker.outcome is outcome
    with pytest.raises(LocalProtocolError, match="after the end of the stream"):
        tracker.feed(Event(data="[DONE]"))
    with pytest.raises(LocalProtocolError):
        tracker.feed(Comment(text="late"))


def test_feed_refuses_what_is_not_an_item() -> None:
    with pytest.raises(TypeError, match=r"NEED_DATA|NeedData"):
        Tracker("openai-chat").feed(NEED_DATA)  # type: ignore[arg-type]


def test_unknown_dialect_name() -> None:
    with pytest.raises(ValueError, match="unknown dialect 'openai'; expected one of openai-chat"):
        Tracker("openai")


def test_outcome_json_and_exit_status() -> None:
    outcome = judge("anthropic", delta("max_tokens"), STOPPED)
    record = outcome.to_json()
    assert list(record)[:3] == ["kind", "outcome", "reason"]
    assert record["kind"] == "outcome"
    assert record["outcome"] == "stopped"
    assert record["stop_reason"] == "max_tokens"
    assert record["dialect"] == "anthropic"
    assert json.loads(json.dumps(record)) == record
    assert outcome.exit_status == 4
    assert EXIT_STATUS == {"completed": 0, "cut": 3, "stopped": 4, "failed": 5}
    assert DIALECT_NAMES == (
        "openai-chat",
        "openai-responses",
        "anthropic",
        "gemini",
        "ai-sdk-ui",
        "auto",
    )


# --- forward compatibility: payloads of any shape ----------------------------------

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=12,
)
_KEYS = [
    "error", "choices", "index", "finish_reason", "type", "response", "incomplete_details",
    "reason", "delta", "message", "stop_reason", "candidates", "finishReason",
    "promptFeedback", "blockReason", "code", "status",
]  # fmt: skip
_SHAPED = st.recursive(
    st.none() | st.integers(0, 2) | st.sampled_from(["stop", "STOP", "end_turn", "x", "error"]),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(_KEYS), inner, max_size=4)
    ),
    max_leaves=16,
)
_TYPES = st.sampled_from(
    ["message", "error", "ping", "message_start", "message_delta", "message_stop",
     "response.completed", "response.failed", "response.incomplete", "done", "unknown"]
)  # fmt: skip


@given(
    dialect=st.sampled_from([*DIALECT_NAMES, "generic"]),
    events=st.lists(st.tuples(_TYPES, _JSON | _SHAPED | st.just("[DONE]")), max_size=8),
    truncated=st.booleans(),
)
def test_payloads_of_any_shape_never_crash_the_tracker(
    dialect: str, events: list[tuple[str, Any]], truncated: bool
) -> None:
    tracker = Tracker(
        generic("done", error="error", json=True) if dialect == "generic" else dialect
    )
    for kind, data in events:
        text = data if data == "[DONE]" else json.dumps(data)
        try:
            tracker.feed(Event(type=kind, data=text))
        except PayloadError:
            assert text == "[DONE]"
            return
    outcome = tracker.end(truncated=truncated)
    assert outcome.outcome in EXIT_STATUS
    assert outcome.reason
    json.dumps(outcome.to_json())
