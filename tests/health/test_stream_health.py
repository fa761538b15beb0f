"""The stream-health state machines: Watchdog, KeepalivePlanner, Coalescer.

Every test drives them with plain numbers for ``now``: nothing here sleeps or reads a
clock.  The properties: a watchdog's verdict never turns back to "ok" without new
input, and its deadlines never move earlier (but at the first byte); a keepalive
planner's deadline never moves earlier with ``now``; a coalescer's output, parsed,
is its input items in order, cut only between frames.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sse_sansio import (
    NEED_DATA,
    Coalescer,
    Comment,
    Connection,
    DataPiece,
    Diagnostic,
    EndOfStream,
    Event,
    KeepalivePlanner,
    LocalProtocolError,
    Verdict,
    Watchdog,
    serialize,
)
from sse_sansio.testing import parse

# ---- Watchdog ---------------------------------------------------------------------------


def test_no_first_byte_before_the_first_byte() -> None:
    dog = Watchdog(first_byte=5, idle=1, progress=2, now=100)
    assert dog.check(100) == Verdict("ok", 105.0)
    assert dog.check(104.9) == Verdict("ok", 105.0)  # idle does not run yet
    assert dog.check(105) == Verdict("no-first-byte", None)
    assert not dog.check(200).ok


def test_without_first_byte_the_idle_clock_guards_the_wait() -> None:
    dog = Watchdog(idle=3, now=0)
    assert dog.check(2) == Verdict("ok", 3.0)
    assert dog.check(3) == Verdict("idle", None)


def test_no_clock_no_deadline() -> None:
    dog = Watchdog(now=0)
    assert dog.check(5) == Verdict("ok", None)
    dog.saw_bytes(10, 5)
    assert dog.check(1e9) == Verdict("ok", None)


def test_bytes_are_life_and_reset_the_idle_clock() -> None:
    dog = Watchdog(first_byte=10, idle=2, now=0)
    dog.saw_bytes(1, 4)
    assert dog.check(4) == Verdict("ok", 6.0)
    dog.saw_bytes(0, 5.5)  # the end of the body is not a sign of life
    assert dog.check(5.9) == Verdict("ok", 6.0)
    dog.saw_bytes(100, 5.9)
    assert dog.check(7) == Verdict("ok", 7.9)
    assert dog.check(7.9) == Verdict("idle", None)


def test_keepalives_without_progress_are_stalled() -> None:
    # A comment heartbeat every second keeps the stream alive, not moving.
    dog = Watchdog(idle=2, progress=5, now=0)
    dog.saw_bytes(10, 1)
    dog.saw_item(Event(data="token"), 1)
    for t in range(2, 6):
        dog.saw_bytes(3, t)
        dog.saw_item(Comment(text="ping"), t)
        # The idle clock runs 2 s from each ping; the progress clock, from the event at 1.
        assert dog.check(t) == Verdict("ok", min(t + 2.0, 6.0))
    dog.saw_bytes(3, 6)
    assert dog.check(6) == Verdict("stalled", 8.0)  # "idle" may still follow
    assert dog.check(7.9) == Verdict("stalled", 8.0)
    assert dog.check(8) == Verdict("idle", None)
    dog.saw_item(Event(data="more"), 8.5)  # new input: back to ok
    assert dog.check(8.5) == Verdict("ok", 10.5)


def test_progress_counts_from_the_first_byte() -> None:
    dog = Watchdog(first_byte=30, progress=4, now=0)
    dog.saw_bytes(5, 20)  # headers of the body, a thinking model
    assert dog.check(20) == Verdict("ok", 24.0)
    assert dog.check(24) == Verdict("stalled", None)


def test_what_counts_as_progress() -> None:
    dog = Watchdog(progress=1, now=0)
    dog.saw_item(Comment(text=""), 0)
    assert dog.check(1).state == "stalled"  # a comment is life only
    dog.saw_item(Comment(text="go"), 2, progress=True)  # ...unless the caller says so
    assert dog.check(2.5) == Verdict("ok", 3.0)
    dog.saw_item(Event(data="ping"), 3, progress=False)  # an event the caller discounts
    assert dog.check(3).state == "stalled"
    dog.saw_item(DataPiece(text="x"), 4)
    assert dog.check(4) == Verdict("ok", 5.0)
    dog.saw_item(Diagnostic(code="unknown-field"), 5)
    assert dog.check(5).state == "stalled"


def test_the_end_of_the_stream_stops_every_clock() -> None:
    dog = Watchdog(first_byte=1, idle=1, progress=1, now=0)
    dog.saw_item(EndOfStream(), 0.5)
    assert dog.check(100) == Verdict("ok", None)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"idle": -1}, ValueError, "idle must be >= 0"),
        ({"progress": math.inf}, ValueError, "progress must be finite"),
        ({"first_byte": math.nan}, ValueError, "first_byte must be finite"),
        ({"idle": "5"}, TypeError, "idle must be a number"),
        ({"idle": True}, TypeError, "idle must be a number"),
        ({"now": math.nan}, ValueError, "now must be finite"),
        ({"now": None}, TypeError, "now must be a number"),
    ],
)
def test_watchdog_refuses_bad_options(
    kwargs: dict[str, Any], error: type[Exception], message: str
) -> None:
    options: dict[str, Any] = {"now": 0, **kwargs}
    with pytest.raises(error, match=message):
        Watchdog(**options)


def test_watchdog_refuses_bad_calls() -> None:
    dog = Watchdog(idle=1, now=10)
    with pytest.raises(
        ValueError, match=r"Watchdog.check\(\): now went backwards \(9 after 10.0\)"
    ):
        dog.check(9)
    with pytest.raises(ValueError, match="now must be finite"):
        dog.saw_bytes(1, math.inf)
    with pytest.raises(TypeError, match="n must be an int"):
        dog.saw_bytes(1.0, 10)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="n must be an int"):
        dog.saw_bytes(True, 10)
    with pytest.raises(ValueError, match="n must be >= 0"):
        dog.saw_bytes(-1, 10)
    with pytest.raises(TypeError, match="takes an item of the parser"):
        dog.saw_item(NEED_DATA, 10)
    with pytest.raises(TypeError, match="progress must be a bool"):
        dog.saw_item(Event(data="x"), 10, progress=1)  # type: ignore[arg-type]
    assert dog.check(10.5) == Verdict("ok", 11.0)  # none of that changed anything


# One input to a watchdog: (delay since the last step, what happened).
_steps = st.lists(
    st.tuples(
        st.floats(0, 3, allow_nan=False),
        st.sampled_from(["check", "bytes", "nothing-read", "event", "comment", "marked"]),
    ),
    max_size=25,
)
_clock = st.one_of(st.none(), st.floats(0, 4, allow_nan=False))


@settings(max_examples=150)
@given(first_byte=_clock, idle=_clock, progress=_clock, steps=_steps)
def test_verdicts_and_deadlines_without_new_input(
    first_byte: float | None,
    idle: float | None,
    progress: float | None,
    steps: list[tuple[float, str]],
) -> None:
    dog = Watchdog(first_byte=first_byte, idle=idle, progress=progress, now=0)
    now = 0.0
    last: Verdict | None = None  # the latest verdict since the latest input
    first_seen = False
    for delay, step in steps:
        now += delay
        if step == "check":
            verdict = dog.check(now)
            assert verdict.deadline is None or verdict.deadline > now
            if verdict.ok:
                # "ok" until the deadline, whatever the time until then.
                assert dog.check(now) == verdict
            if last is not None:
                # Without new input a verdict never turns back to "ok"...
                assert last.ok or not verdict.ok
                # ...and the deadline never moves earlier (None is "never").
                if verdict.deadline is not None:
                    assert last.deadline is not None
                    assert verdict.deadline >= last.deadline
            last = verdict
            continue
        before = dog.check(now)
        if step == "bytes":
            dog.saw_bytes(7, now)
        elif step == "nothing-read":
            dog.saw_bytes(0, now)
        elif step == "event":
            dog.saw_item(Event(data="x"), now)
        elif step == "comment":
            dog.saw_item(Comment(text="keepalive"), now)
        else:
            dog.saw_item(Comment(text="marked"), now, progress=True)
        after = dog.check(now)
        if step != "nothing-read":
            if first_seen and before.ok and before.deadline is not None:
                # After the first byte, input only moves an "ok" deadline later.
                assert after.deadline is not None
                assert after.deadline >= before.deadline
            first_seen = True
        last = after


# ---- KeepalivePlanner -----------------------------------------------------------------


def test_a_keepalive_is_due_after_interval_of_silence() -> None:
    plan = KeepalivePlanner(interval=15, now=0)
    assert plan.deadline == 15
    assert plan.due(14.9) is None
    assert plan.due(15) == b":\n"
    assert plan.deadline == 30  # the keepalive counts as written
    assert plan.due(15) is None
    plan.sent(20)  # an event
    assert plan.deadline == 35
    assert list(parse(b":\n")) == [Comment(text=""), EndOfStream()]


def test_first_byte_has_its_own_interval_until_a_real_write() -> None:
    plan = KeepalivePlanner(interval=15, first_byte=1, now=0)
    assert plan.deadline == 1
    assert plan.due(1) == b":\n"
    assert plan.deadline == 2  # a keepalive does not end the wait for the first event
    assert plan.due(3.5) == b":\n"
    assert plan.deadline == 4.5
    plan.sent(4)
    assert plan.deadline == 19


def test_padding_fills_a_buffering_proxy() -> None:
    comment = KeepalivePlanner(interval=1, padding=2048, now=0).due(1)
    assert comment is not None
    assert len(comment) == 2048
    assert list(parse(comment)) == [Comment(text=" " * 2045), EndOfStream()]
    for small in (1, 2):
        assert KeepalivePlanner(interval=1, padding=small, now=0).due(1) == b":\n"
    assert KeepalivePlanner(interval=1, padding=3, now=0).due(1) == b": \n"


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"interval": 0}, ValueError, "interval must be > 0"),
        ({"interval": None}, TypeError, "interval must be a number"),
        ({"interval": 1, "first_byte": 0}, ValueError, "first_byte must be > 0"),
        ({"interval": 1, "padding": -1}, ValueError, "padding must be 0 to 65536"),
        ({"interval": 1, "padding": 65537}, ValueError, "padding must be 0 to 65536"),
        ({"interval": 1, "padding": 1.5}, TypeError, "padding must be an int"),
        ({"interval": 1, "now": math.inf}, ValueError, "now must be finite"),
    ],
)
def test_keepalive_planner_refuses_bad_options(
    kwargs: dict[str, Any], error: type[Exception], message: str
) -> None:
    options: dict[str, Any] = {"now": 0, **kwargs}
    with pytest.raises(error, match=message):
        KeepalivePlanner(**options)


def test_keepalive_planner_refuses_time_going_backwards() -> None:
    plan = KeepalivePlanner(interval=1, now=5)
    with pytest.raises(ValueError, match=r"KeepalivePlanner.sent\(\): now went backwards"):
        plan.sent(4)
    with pytest.raises(ValueError, match=r"KeepalivePlanner.due\(\): now went backwards"):
        plan.due(4)


@settings(max_examples=150)
@given(
    interval=st.floats(0.01, 5),
    first_byte=st.one_of(st.none(), st.floats(0.01, 5)),
    steps=st.lists(st.tuples(st.floats(0, 6), st.booleans()), max_size=30),
)
def test_keepalive_deadlines(
    interval: float, first_byte: float | None, steps: list[tuple[float, bool]]
) -> None:
    plan = KeepalivePlanner(interval=interval, first_byte=first_byte, now=0)
    now, real = 0.0, False
    for delay, write in steps:
        now += delay
        before = plan.deadline
        if write:
            plan.sent(now)
            switched = not real
            real = True
            if not switched or first_byte is None:
                assert plan.deadline >= before
        else:
            comment = plan.due(now)
            assert (comment is not None) == (now >= before)
            assert plan.deadline >= before  # never earlier
            assert plan.deadline > now  # nothing more is due at this time
            assert plan.due(now) is None


# ---- Coalescer --------------------------------------------------------------------------


def test_frames_wait_max_delay_then_go_out_together() -> None:
    out = Coalescer(max_bytes=1000, max_delay=0.05, now=0)
    assert out.deadline is None
    assert out.pop(0) is None
    out.push(b"data: a\n\n", 1)
    out.push(Event(data="b"), 1.01)
    out.push(Comment(text="c"), 1.02)
    assert out.deadline == 1.05
    assert out.buffered == len(b"data: a\n\ndata: b\n\n: c\n")
    assert out.pop(1.04) is None
    assert out.pop(1.05) == b"data: a\n\ndata: b\n\n: c\n"
    assert out.deadline is None
    assert out.buffered == 0
    assert out.pop(2) is None


def test_max_bytes_makes_the_frames_due_at_once() -> None:
    out = Coalescer(max_bytes=20, max_delay=10, now=0)
    out.push(b"data: 12345\n\n", 1)  # 13 bytes
    assert out.deadline == 11
    out.push(b"data: 67890\n\n", 2)  # 26: over max_bytes, sent whole
    assert out.deadline == 2
    assert out.pop(2) == b"data: 12345\n\ndata: 67890\n\n"
    big = serialize(Event(data="x" * 100))
    out.push(big, 3)  # a frame bigger than max_bytes is never split
    assert out.pop(3) == big


def test_urgent_frames_flush_everything_at_once_in_order() -> None:
    out = Coalescer(max_bytes=1000, max_delay=10, now=0)
    out.push(Event(data="token"), 1)
    out.push(Event(type="message_stop", data="{}"), 1.5, urgent=True)
    assert out.deadline == 1.5
    assert out.pop(1.5) == b"data: token\n\nevent: message_stop\ndata: {}\n\n"
    out.push(Event(data="reconnect later", retry=5000), 2)  # a retry field is urgent
    assert out.pop(2) == b"data: reconnect later\nretry: 5000\n\n"
    out.push(b": now\n", 3, urgent=True)
    assert out.pop(3) == b": now\n"


def test_flush_hands_out_everything_held() -> None:
    out = Coalescer(max_bytes=1000, max_delay=10, now=0)
    assert out.flush() == b""
    out.push(b"data: a\r\n\r\n", 1)
    out.push(bytearray(b"data: b\r\r"), 1)
    out.push(memoryview(b": c\n"), 1)
    assert out.flush() == b"data: a\r\n\r\ndata: b\r\r: c\n"
    assert out.deadline is None


def test_zero_delay_writes_each_push() -> None:
    out = Coalescer(max_bytes=1000, max_delay=0, now=0)
    out.push(b"data: a\n\n", 1)
    assert out.pop(1) == b"data: a\n\n"


def test_coalescer_refuses_bad_frames_and_options() -> None:
    out = Coalescer(max_bytes=10, max_delay=1, now=0)
    with pytest.raises(ValueError, match="an empty frame"):
        out.push(b"", 0)
    with pytest.raises(ValueError, match=r"a frame that ends with b'data: hal'"):
        out.push(b"data: hal", 0)
    with pytest.raises(TypeError, match="takes bytes, an Event or a Comment"):
        out.push("data: x\n\n", 0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not EndOfStream"):
        out.push(EndOfStream(), 0)  # type: ignore[arg-type]
    with pytest.raises(LocalProtocolError, match="cannot encode"):
        out.push(Event(data="\ud800"), 0)  # a lone surrogate
    with pytest.raises(ValueError, match=r"Coalescer.pop\(\): now went backwards"):
        Coalescer(max_bytes=10, max_delay=1, now=5).pop(4)
    assert out.deadline is None  # nothing was held
    bad: list[tuple[dict[str, Any], type[Exception]]] = [
        ({"max_bytes": 0}, ValueError),
        ({"max_bytes": 1.5}, TypeError),
        ({"max_bytes": False}, TypeError),
        ({"max_delay": -0.1}, ValueError),
        ({"max_delay": math.nan}, ValueError),
    ]
    for kwargs, error in bad:
        options: dict[str, Any] = {"max_bytes": 10, "max_delay": 1, "now": 0, **kwargs}
        with pytest.raises(error):
            Coalescer(**options)


_items = st.lists(
    st.one_of(
        st.builds(
            Event,
            type=st.sampled_from(["message", "delta", "done"]),
            data=st.text(st.characters(codec="utf-8", exclude_characters="\r"), max_size=30),
            id=st.sampled_from(["", "1", "2"]),
            retry=st.one_of(st.none(), st.integers(0, 9)),
        ),
        st.builds(Comment, text=st.text(st.characters(codec="utf-8", exclude_characters="\r\n"))),
    ),
    max_size=20,
)


@settings(max_examples=150)
@given(
    items=_items,
    as_bytes=st.lists(st.booleans(), min_size=20, max_size=20),
    urgent=st.lists(st.booleans(), min_size=20, max_size=20),
    delays=st.lists(st.floats(0, 0.1), min_size=20, max_size=20),
    max_bytes=st.integers(1, 200),
    max_delay=st.floats(0, 0.2),
)
def test_coalesced_output_parses_to_the_input_items_in_order(
    items: list[Event | Comment],
    as_bytes: list[bool],
    urgent: list[bool],
    delays: list[float],
    max_bytes: int,
    max_delay: float,
) -> None:
    out = Coalescer(max_bytes=max_bytes, max_delay=max_delay, now=0)
    writes: list[bytes] = []
    now = 0.0
    for index, item in enumerate(items):
        now += delays[index]
        if (data := out.pop(now)) is not None:
            writes.append(data)
        frame = serialize(item) if as_bytes[index] else item
        out.push(frame, now, urgent=urgent[index])
        if urgent[index]:
            assert out.deadline == now  # due at once...
            data = out.pop(now)
            assert data is not None
            assert data.endswith(serialize(item))  # ...this frame too
            writes.append(data)
        deadline = out.deadline
        assert deadline is None or deadline <= now + max_delay
    writes.append(out.flush())
    assert out.deadline is None
    writes = [data for data in writes if data]  # b"" would be the end of the stream
    # Every write ends between two frames: a fresh parser has nothing half-read.
    conn = Connection()
    parsed: list[Any] = []
    for data in writes:
        conn.receive_data(data)
        while (received := conn.next_event()) is not NEED_DATA:
            parsed.append(received)
    conn.receive_data(b"")
    end = conn.next_event()
    assert end == EndOfStream()
    expected: list[Any] = []
    last_id = ""
    for item in items:
        if isinstance(item, Event):
            last_id = item.id or last_id  # an empty id writes no id line
            item = Event(type=item.type, data=item.data, id=last_id, retry=item.retry)
        expected.append(item)
    assert parsed == expected


# Clock.read() settles an exact float that is finite and not backwards with one
# comparison chain (issue 33, item 6); every float it must refuse falls through to the
# full check.  Each clocked machine, after a float time:
_CLOCKED: dict[str, Callable[[], Callable[..., object]]] = {
    "Watchdog.saw_bytes": lambda: Watchdog(idle=1, now=1.0).saw_bytes,
    "KeepalivePlanner.due": lambda: KeepalivePlanner(interval=1, now=1.0).due,
    "Coalescer.pop": lambda: Coalescer(max_bytes=1, max_delay=0, now=1.0).pop,
}


@pytest.mark.parametrize("method", list(_CLOCKED), ids=str)
@pytest.mark.parametrize(
    ("now", "message"),
    [
        (math.nan, "now must be finite"),
        (math.inf, "now must be finite"),
        (-math.inf, "now must be finite"),
        (0.5, "now went backwards"),
    ],
    ids=["nan", "inf", "-inf", "backwards"],
)
def test_a_float_the_clock_must_refuse_never_takes_its_fast_path(
    method: str, now: float, message: str
) -> None:
    call = _CLOCKED[method]()
    if method == "Watchdog.saw_bytes":
        call(1, 2.0)
    else:
        call(2.0)
    with pytest.raises(ValueError, match=message):
        call(1, now) if method == "Watchdog.saw_bytes" else call(now)


def test_the_clock_fast_path_remembers_the_time_it_took() -> None:
    planner = KeepalivePlanner(interval=1, now=1.0)
    assert planner.due(1.5) is None
    assert planner.due(2.25) == b":\n"  # 2.25 >= 1.0 + 1: read through the fast path
    with pytest.raises(ValueError, match=r"now went backwards \(2.0 after 2.25\)"):
        planner.due(2.0)
