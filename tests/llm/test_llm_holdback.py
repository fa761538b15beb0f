"""llm.HoldBack (issue 35, item 2): the guardrail's window.

What is checked, in every dialect, on streams written here by hand in each API's
documented shapes, split into text deltas every way hypothesis finds: a vetoed
character is never released (whatever the window, wherever the veto falls); what is
released is a prefix of what was pushed, in order, the very objects; the deadline is
when the oldest held text may go, not a moment before; approve() releases everything;
and the released stream, serialized and parsed again, is read by the dialect's own
Tracker as the same answer and outcome (held whole, each delta stays a valid frame).
"""

from __future__ import annotations

import copy
import json
import pickle
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sse_sansio import Comment, Connection, Event, LocalProtocolError, serialize
from sse_sansio.llm import HoldBack, Tracker
from sse_sansio.testing import chunkings, parse
from tests.helpers.llm_streams import data, named

# -- one stream per dialect, its text split into the deltas given --------------------


def _openai_chat(pieces: list[str]) -> list[bytes]:
    chunk = {"id": "c1", "object": "chat.completion.chunk", "model": "m"}
    out = [data({**chunk, "choices": [{"index": 0, "delta": {"role": "assistant"}}]})]
    for piece in pieces:
        delta = {"index": 0, "delta": {"content": piece}, "finish_reason": None}
        out.append(data({**chunk, "choices": [delta]}))
    out.append(data({**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}))
    return [*out, b"data: [DONE]\n\n"]


def _openai_responses(pieces: list[str]) -> list[bytes]:
    out = [named({"type": "response.created", "response": {"id": "r1", "status": "in_progress"}})]
    for n, piece in enumerate(pieces):
        out.append(
            named(
                {
                    "type": "response.output_text.delta",
                    "item_id": "msg_1",
                    "output_index": 0,
                    "content_index": 0,
                    "sequence_number": n + 1,
                    "delta": piece,
                }
            )
        )
    done = {"type": "response.completed", "response": {"id": "r1", "status": "completed"}}
    return [*out, named(done)]


def _anthropic(pieces: list[str]) -> list[bytes]:
    out = [
        named({"type": "message_start", "message": {"id": "m1", "stop_reason": None}}),
        named({"type": "content_block_start", "index": 0, "content_block": {"type": "text"}}),
    ]
    for piece in pieces:
        delta = {"type": "text_delta", "text": piece}
        out.append(named({"type": "content_block_delta", "index": 0, "delta": delta}))
    return [
        *out,
        named({"type": "content_block_stop", "index": 0}),
        named({"type": "message_delta", "delta": {"stop_reason": "end_turn"}}),
        named({"type": "message_stop"}),
    ]


def _gemini(pieces: list[str]) -> list[bytes]:
    out = []
    for piece in pieces:
        content = {"parts": [{"text": piece}], "role": "model"}
        out.append(data({"candidates": [{"content": content}]}))
    # Gemini's last chunk carries the finish reason (and here no text).
    return [*out, data({"candidates": [{"finishReason": "STOP"}]})]


def _ai_sdk_ui(pieces: list[str]) -> list[bytes]:
    out = [data({"type": "start"}), data({"type": "text-start", "id": "t"})]
    for piece in pieces:
        out.append(data({"type": "text-delta", "id": "t", "delta": piece}))
    end = [data({"type": "text-end", "id": "t"}), data({"type": "finish", "finishReason": "stop"})]
    return [*out, *end, b"data: [DONE]\n\n"]


STREAMS: dict[str, Callable[[list[str]], list[bytes]]] = {
    "openai-chat": _openai_chat,
    "openai-responses": _openai_responses,
    "anthropic": _anthropic,
    "gemini": _gemini,
    "ai-sdk-ui": _ai_sdk_ui,
}
DIALECTS = list(STREAMS)


def items(dialect: str, pieces: list[str]) -> list[Any]:
    """The stream's events (and no EndOfStream: the caller decides the end)."""
    return [item for item in parse(b"".join(STREAMS[dialect](pieces))) if isinstance(item, Event)]


def judged(dialect: str, released: list[Any]) -> tuple[str, str]:
    """The outcome and answer text the dialect's Tracker reads from the released
    stream, sent as bytes and parsed again (so each frame must be a valid one)."""
    tracker = Tracker(dialect)
    for item in parse(b"".join(serialize(item) for item in released)):
        tracker.feed(item)
    return tracker.outcome.outcome, tracker.answer.text


def text_of(dialect: str, released: list[Any]) -> str:
    tracker = Tracker(dialect)
    for item in released:
        tracker.feed(item)
    return tracker.answer.text


# -- the guarantees, at every split and window ----------------------------------------

pieces_st = st.lists(st.text(min_size=1, max_size=6), min_size=1, max_size=8)


@pytest.mark.parametrize("dialect", DIALECTS)
@settings(max_examples=60, deadline=None)
@given(
    pieces=pieces_st,
    chars=st.one_of(st.none(), st.integers(0, 12)),
    seconds=st.one_of(st.none(), st.sampled_from([0.5, 1.0, 3.0])),
    veto_at=st.integers(0, 12),
    pops=st.lists(st.booleans(), min_size=12, max_size=12),
)
def test_a_vetoed_character_is_never_released(
    dialect: str,
    pieces: list[str],
    chars: int | None,
    seconds: float | None,
    veto_at: int,
    pops: list[bool],
) -> None:
    stream = items(dialect, pieces)
    hold = HoldBack(dialect, chars=chars, seconds=seconds, now=0.0)
    released: list[Any] = []
    pushed: list[Any] = []
    for step, item in enumerate(stream[: veto_at + 1]):
        now = step * 0.5
        if pops[step % len(pops)]:
            released += hold.pop(now)
        pushed.append(item)
        released += hold.push(item, now)
    # Order kept: the released items are the pushed ones, the very objects, in order.
    assert all(a is b for a, b in zip(released, pushed, strict=False))
    assert len(released) <= len(pushed)
    # Nothing lost, nothing doubled: released text then held text is the text pushed.
    held = hold.held_text
    released_text = text_of(dialect, released)
    assert released_text + held == text_of(dialect, pushed)
    ending = hold.veto("the answer broke the policy")
    # After the veto nothing more: the rest of the stream, the clock running on.
    for item in stream[veto_at + 1 :]:
        assert hold.push(item, 100.0) == []
    assert hold.pop(1000.0) == []
    assert hold.approve() == []
    outcome, text = judged(dialect, released + ending)
    if judged(dialect, released)[0] == "cut":  # the terminal was not released before
        assert outcome == "failed"
    assert text == released_text  # not one character of the held text
    full = "".join(pieces)
    assert full.startswith(released_text)


@pytest.mark.parametrize("dialect", DIALECTS)
@settings(max_examples=40, deadline=None)
@given(pieces=pieces_st, chars=st.one_of(st.none(), st.integers(0, 12)))
def test_approve_releases_all_and_the_dialect_reads_the_same_answer(
    dialect: str, pieces: list[str], chars: int | None
) -> None:
    stream = items(dialect, pieces)
    hold = HoldBack(dialect, chars=chars, now=0.0)
    released: list[Any] = []
    for item in stream:
        released += hold.push(item, 0.0)
    released += hold.approve()
    assert hold.held_text == ""
    assert released == stream
    assert all(a is b for a, b in zip(released, stream, strict=True))
    assert judged(dialect, released) == ("completed", "".join(pieces))


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_checked_word_never_reaches_the_client_at_any_chunking(dialect: str) -> None:
    # A guard as docs/llm-gateway.rst describes it: after each push it checks the tail
    # of the text (its own copy, from last_text) and vetoes before sending what that
    # push returned.  With chars >= the word's length, no character of the word goes
    # out, however the upstream's bytes were cut and the deltas split the word.
    pieces = ["The intro is fine. ", "Now the forb", "id", "den word", " and more."]
    whole = b"".join(STREAMS[dialect](pieces))
    start = "".join(pieces).index("forbidden")
    for label, chunks in chunkings(whole, seeds=3):
        connection = Connection()
        hold = HoldBack(dialect, chars=len("forbidden"), now=0.0)
        sent: list[Any] = []
        seen = ""
        for at, chunk in enumerate([*chunks, b""]):
            connection.receive_data(chunk)
            while isinstance(item := connection.next_event(), Event) and not hold.vetoed:
                out = hold.push(item, float(at))
                seen = (seen + hold.last_text)[-20:]
                sent += hold.veto("blocked") if "forbidden" in seen else out
        tracker = Tracker(dialect)
        for item in sent:
            tracker.feed(item)
        assert tracker.end().outcome == "failed", label
        assert len(tracker.answer.text) <= start, label
        assert "".join(pieces).startswith(tracker.answer.text), label


# -- the window, by hand --------------------------------------------------------------


def test_a_delta_goes_once_chars_more_characters_followed_it() -> None:
    # Deltas "ab", "cde", "f", "gh" with chars=3: "ab" may go when 3 characters
    # followed it ("cde"), "cde" after "f" and "gh" (3), "f" and "gh" wait.
    stream = items("openai-chat", ["ab", "cde", "f", "gh"])
    role, ab, cde, f, gh, finish, done = stream
    hold = HoldBack("openai-chat", chars=3, now=0.0)
    assert hold.push(role, 0.0) == [role]  # nothing held: a control frame goes at once
    assert hold.last_text == ""
    assert hold.push(ab, 0.0) == []
    assert hold.last_text == "ab"
    assert hold.push(cde, 0.0) == [ab]
    assert hold.push(f, 0.0) == []
    assert hold.push(gh, 0.0) == [cde]
    assert hold.held_text == "fgh"
    # The finish chunk and [DONE] wait behind the held text...
    assert hold.push(finish, 0.0) == []
    assert hold.push(done, 0.0) == []
    # ...and go with it, in order, when the checker approves.
    assert hold.approve() == [f, gh, finish, done]


def test_chars_zero_holds_nothing() -> None:
    stream = items("anthropic", ["Hel", "lo"])
    hold = HoldBack("anthropic", chars=0, now=0.0)
    assert [out for item in stream for out in hold.push(item, 0.0)] == stream


def test_without_chars_or_seconds_text_waits_for_approve() -> None:
    stream = items("gemini", ["Hel", "lo"])
    hold = HoldBack("gemini", now=0.0)
    assert [out for item in stream for out in hold.push(item, 0.0)] == []
    assert hold.deadline is None
    assert hold.pop(1e9) == []
    assert hold.approve() == stream


def test_the_deadline_is_when_the_oldest_held_text_may_go() -> None:
    stream = items("openai-responses", ["one", "two"])
    created, one, two, completed = stream
    hold = HoldBack("openai-responses", seconds=0.5, now=1.0)
    assert hold.deadline is None  # nothing held
    assert hold.push(created, 1.0) == [created]
    assert hold.push(one, 1.25) == []
    assert hold.deadline == 1.75  # 1.25 + 0.5
    assert hold.push(two, 1.5) == []
    assert hold.deadline == 1.75  # still the oldest's
    assert hold.pop(1.7) == []  # not a moment before
    assert hold.pop(1.75) == [one]
    assert hold.deadline == 2.0  # now "two"'s: 1.5 + 0.5
    assert hold.push(completed, 1.8) == []  # waits behind "two"
    assert hold.pop(2.0) == [two, completed]
    assert hold.deadline is None


def test_seconds_also_release_on_push() -> None:
    stream = items("ai-sdk-ui", ["a", "b"])
    hold = HoldBack("ai-sdk-ui", chars=100, seconds=1.0, now=0.0)
    start, text_start, a, b = stream[:4]
    assert hold.push(start, 0.0) + hold.push(text_start, 0.0) == [start, text_start]
    assert hold.push(a, 0.0) == []
    assert hold.push(b, 1.0) == [a]  # "a" is a second old; "b" just came


def test_comments_and_tool_deltas_keep_their_place_in_line() -> None:
    chunk = {"id": "c1", "object": "chat.completion.chunk", "model": "m"}
    call = {"index": 0, "id": "call_1", "function": {"name": "f", "arguments": "{}"}}
    text, tool = [
        Event(data=serialize_payload(chunk, delta))
        for delta in ({"content": "hi"}, {"tool_calls": [call]})
    ]
    ping = Comment(text=" ping")
    hold = HoldBack("openai-chat", chars=5, now=0.0)
    assert hold.push(text, 0.0) == []
    assert hold.push(ping, 0.0) == []
    assert hold.push(tool, 0.0) == []  # a tool delta carries no text: it is not counted
    assert hold.held_text == "hi"
    assert hold.approve() == [text, ping, tool]
    assert hold.push(ping, 0.0) == [ping]  # the window goes on after approve()


def serialize_payload(chunk: dict[str, Any], delta: dict[str, Any]) -> str:
    return json.dumps({**chunk, "choices": [{"index": 0, "delta": delta}]})


# -- the veto's events ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("dialect", "ends_with_done"),
    [
        ("openai-chat", True),
        ("openai-responses", False),
        ("anthropic", False),
        ("gemini", False),
        ("ai-sdk-ui", True),
    ],
)
def test_the_veto_is_the_dialects_error_event_then_its_end(
    dialect: str, ends_with_done: bool
) -> None:
    hold = HoldBack(dialect, chars=10, now=0.0)
    ending = hold.veto("blocked by policy", error_type="content_filter")
    assert (ending[-1].data == "[DONE]") is ends_with_done
    assert len(ending) == 1 + ends_with_done
    tracker = Tracker(dialect)
    for event in ending:
        tracker.feed(event)
    outcome = tracker.end()
    assert (outcome.outcome, outcome.error_message) == ("failed", "blocked by policy")


def test_a_second_veto_is_refused() -> None:
    hold = HoldBack("anthropic", now=0.0)
    hold.veto("no")
    assert hold.vetoed
    with pytest.raises(LocalProtocolError, match="after a veto"):
        hold.veto("no again")


def test_a_broken_payload_is_no_text_and_keeps_its_place() -> None:
    hold = HoldBack("openai-chat", chars=1, now=0.0)
    broken = Event(data="{not json")
    assert hold.push(broken, 0.0) == [broken]


# -- arguments and the clock ------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"dialect": "auto"}, ValueError, "one of openai-chat"),
        ({"dialect": "nope"}, ValueError, "got 'nope'"),
        ({"chars": -1}, ValueError, "chars must be >= 0"),
        ({"chars": True}, TypeError, "chars must be an int"),
        ({"chars": 2.5}, TypeError, "chars must be an int"),
        ({"seconds": -1.0}, ValueError, "seconds must be >= 0"),
        ({"seconds": float("nan")}, ValueError, "finite"),
    ],
)
def test_bad_arguments_are_refused(kwargs: dict[str, Any], error: type, match: str) -> None:
    arguments: dict[str, Any] = {"dialect": "anthropic", "now": 0.0, **kwargs}
    dialect = arguments.pop("dialect")
    with pytest.raises(error, match=match):
        HoldBack(dialect, **arguments)


def test_time_never_goes_backwards() -> None:
    hold = HoldBack("anthropic", seconds=1.0, now=5.0)
    with pytest.raises(ValueError, match="went backwards"):
        hold.pop(4.0)


def test_a_holdback_pickled_mid_window_carries_on_as_its_twin() -> None:
    stream = items("openai-chat", ["ab", "cd", "ef"])
    hold = HoldBack("openai-chat", chars=3, seconds=2.0, now=0.0)
    for item in stream[:3]:
        hold.push(item, 1.0)
    for back in (pickle.loads(pickle.dumps(hold)), copy.deepcopy(hold)):
        assert back.held_text == hold.held_text == "abcd"
        assert back.deadline == 3.0
        assert back.push(stream[3], 1.5) == [stream[1]]
        with pytest.raises(ValueError, match="went backwards"):
            back.pop(0.5)
