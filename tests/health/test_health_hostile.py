"""Hostile input to the stream-health machines (issue 36, item 16).

A clock that reads ``10**400`` is as wrong as one that reads NaN, and says so with the
same ValueError (not an OverflowError from the float conversion).  A Coalescer holds a
bounded number of bytes, and refuses bytes that are not whole frames: a field line
without its blank line would be glued to whatever is pushed next.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from sse_sansio import Coalescer, Comment, Event, KeepalivePlanner, LocalProtocolError, Watchdog
from sse_sansio.testing import parse

HUGE = 10**400  # an int no float can hold


@pytest.mark.parametrize(
    "make",
    [
        lambda: Watchdog(now=HUGE),
        lambda: Watchdog(idle=HUGE, now=0),
        lambda: KeepalivePlanner(interval=HUGE, now=0),
        lambda: KeepalivePlanner(interval=1, now=HUGE),
        lambda: Coalescer(max_bytes=10, max_delay=HUGE, now=0),
        lambda: Coalescer(max_bytes=10, max_delay=0.1, now=-HUGE),
    ],
)
def test_a_time_too_big_for_a_float_is_a_value_error(make: Callable[[], Any]) -> None:
    with pytest.raises(ValueError, match="finite"):
        make()


def test_a_too_big_now_passed_later_is_a_value_error_and_changes_nothing() -> None:
    dog = Watchdog(idle=5, now=0)
    with pytest.raises(ValueError, match="finite"):
        dog.check(HUGE)
    assert dog.check(1).deadline == 5.0


@pytest.mark.parametrize(
    "frame",
    [
        b"data: x\n",  # an event without its blank line
        b"data: x\r\n",
        b"id: 7\n",
        b"data: a\n\ndata: b\n",  # the second event unfinished
        b": ok\ndata: x\r",
    ],
)
def test_a_frame_that_is_not_whole_is_refused(frame: bytes) -> None:
    out = Coalescer(max_bytes=1000, max_delay=1.0, now=0)
    with pytest.raises(ValueError, match="whole"):
        out.push(frame, 0)
    assert out.buffered == 0


@pytest.mark.parametrize(
    "frame",
    [b"data: x\n\n", b"data: x\r\n\r\n", b"data: x\r\r", b": ping\n", b": a\r\n: b\n", b"\n"],
)
def test_whole_frames_are_held(frame: bytes) -> None:
    out = Coalescer(max_bytes=1000, max_delay=1.0, now=0)
    out.push(frame, 0)
    assert out.flush() == frame


def test_the_refused_half_frame_is_not_glued_to_the_next_event() -> None:
    out = Coalescer(max_bytes=1000, max_delay=1.0, now=0)
    with pytest.raises(ValueError, match="whole"):
        out.push(b"data: x\n", 0)
    out.push(Event(data="y"), 0)
    assert parse(out.flush())[:-1] == [Event(data="y")]


def test_max_buffer_bounds_what_is_held() -> None:
    out = Coalescer(max_bytes=30, max_delay=1.0, now=0, max_buffer=30)
    out.push(b"data: 0123456789\n\n", 0)  # 18 bytes: due (the caller should pop)
    with pytest.raises(LocalProtocolError, match="max_buffer"):
        out.push(b"data: 0123456789\n\n", 0)  # 36 bytes would be held
    assert out.buffered == 18
    assert out.pop(0) is None  # not due: 18 < max_bytes, no time passed
    assert out.flush() == b"data: 0123456789\n\n"


def test_max_buffer_refuses_items_too_and_one_big_frame_alone_is_held() -> None:
    out = Coalescer(max_bytes=10, max_delay=1.0, now=0, max_buffer=20)
    out.push(Comment(text="a long comment, over the bound"), 0)  # an empty buffer takes it
    with pytest.raises(LocalProtocolError):
        out.push(Event(data="x"), 0)
    assert out.flush() == b": a long comment, over the bound\n"


def test_max_buffer_is_checked() -> None:
    with pytest.raises(ValueError, match="max_buffer"):
        Coalescer(max_bytes=100, max_delay=0, now=0, max_buffer=99)
    with pytest.raises(TypeError, match="max_buffer"):
        Coalescer(max_bytes=10, max_delay=0, now=0, max_buffer=1.5)  # type: ignore[arg-type]


def test_max_buffer_has_a_default_bound_of_16_mib() -> None:
    out = Coalescer(max_bytes=10, max_delay=1.0, now=0)
    nine_mib = b": " + b"x" * (9 << 20) + b"\n"
    out.push(nine_mib, 0)
    with pytest.raises(LocalProtocolError, match="max_buffer"):
        out.push(nine_mib, 0)
    assert out.buffered == len(nine_mib)


def test_a_max_bytes_over_16_mib_raises_the_default_bound_with_it() -> None:
    out = Coalescer(max_bytes=20 << 20, max_delay=1.0, now=0)
    nine_mib = b": " + b"x" * (9 << 20) + b"\n"
    out.push(nine_mib, 0)
    out.push(nine_mib, 0)  # 18 MiB held: under max_bytes, so allowed
    assert out.buffered == 2 * len(nine_mib)


def test_a_merge_that_would_pass_max_buffer_is_refused() -> None:
    class Join:
        def merge(self, first: Event, second: Event) -> Event:
            return Event(data=first.data + second.data)

    out = Coalescer(max_bytes=20, max_delay=1.0, now=0, max_buffer=20, merge=Join())
    out.push(Event(data="abc"), 0)  # "data: abc\n\n": 11 bytes
    with pytest.raises(LocalProtocolError, match="max_buffer"):
        out.push(Event(data="0123456789"), 0)  # merged: 21 bytes
    out.push(Event(data="de"), 0)  # merged: 16 bytes
    assert out.flush() == b"data: abcde\n\n"
