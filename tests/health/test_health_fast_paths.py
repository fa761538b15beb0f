"""The health layers' per-event fast paths (issue 33, item 6) change no byte and no check.

- Coalescer.push(Event) holds an event's ``raw`` (keep_raw mode) instead of serializing
  it only when those bytes are what serialize() writes; it writes serialize()'s bytes
  for every other event, crafted ones included, whose raw could carry a second line.
- Coalescer.push(bytes) accepts bytes ending with a blank line without reading them
  line by line, and refuses as before bytes whose last event is left open.
- The clocks' inline test lets through only what Clock.read accepts.
"""

from __future__ import annotations

import math
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sse_sansio import NEED_DATA, Coalescer, Event, KeepalivePlanner, Watchdog, serialize
from sse_sansio._health import _coalescer


def parsed(conn_cls: Any, stream: bytes, **options: Any) -> list[Event]:
    connection = conn_cls(keep_raw=True, **options)
    connection.receive_data(stream)
    connection.receive_data(b"")
    events = []
    while (item := connection.next_event()) is not NEED_DATA and type(item) is Event:
        events.append(item)
    return events


def pushed(events: list[Event], monkeypatch: pytest.MonkeyPatch) -> tuple[bytes, int]:
    """The bytes a Coalescer writes for ``events``, and how many it serialized."""
    calls = []

    def counting(item: Event) -> bytes:
        calls.append(item)
        return serialize(item)

    monkeypatch.setattr(_coalescer, "serialize", counting)
    coalescer = Coalescer(max_bytes=1 << 20, max_delay=1.0, now=0.0)
    for event in events:
        coalescer.push(event, 0.5)
    return coalescer.flush(), len(calls)


CANONICAL = [
    b"data: a\n\n",
    "data: caf\u00e9 \u4f60\u597d\n\n".encode(),
    b"data: \n\n",
    b"data:  two spaces\n\n",  # the data starts with a space, and serialize() says so
]
OTHERS = [
    b"\xef\xbb\xbfdata: bom first\n\n",  # the BOM is in the first event's raw
    b"data: crlf\r\n\r\n",
    b"data: cr\r\r",
    b"data:no space\n\n",
    b"data: one\ndata: two\n\n",
    b"event: typed\ndata: x\n\n",
    b"id: 7\ndata: x\n\n",
    b"retry: 5\ndata: x\n\n",
    b"\ndata: a blank line before\n\n",
    b"unknown: field\ndata: x\n\n",
]


@pytest.mark.parametrize("stream", CANONICAL)
def test_a_canonical_raw_is_held_as_it_is(
    conn_cls: Any, stream: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    (event,) = parsed(conn_cls, stream)
    assert event.raw == stream
    out, serialized = pushed([event], monkeypatch)
    assert (out, serialized) == (stream, 0)
    assert out == serialize(event)


@pytest.mark.parametrize("stream", OTHERS)
def test_any_other_raw_is_serialized(
    conn_cls: Any, stream: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    (event,) = parsed(conn_cls, stream)
    out, serialized = pushed([event], monkeypatch)
    assert serialized == 1
    assert out == serialize(event)


def test_replaced_utf8_is_serialized_not_forwarded(
    conn_cls: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # errors="replace": the raw holds the invalid byte, the data U+FFFD; serialize()
    # writes U+FFFD's UTF-8, which a strict reader accepts.
    (event,) = parsed(conn_cls, b"data: a\xffb\n\n", errors="replace")
    out, serialized = pushed([event], monkeypatch)
    assert (out, serialized) == ("data: a\ufffdb\n\n".encode(), 1)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])  # a class, not state
@given(st.lists(st.text(alphabet="ab \u00e9\u4f60\U0001f600\r\n:\ufeff\0", max_size=6)))
def test_what_is_written_is_what_serialize_writes(conn_cls: Any, lines: list[str]) -> None:
    stream = "".join(f"data: {line}\n\n" for line in lines).encode()
    events = parsed(conn_cls, stream)
    coalescer = Coalescer(max_bytes=1 << 20, max_delay=1.0, now=0.0)
    for event in events:
        coalescer.push(event, 0.0)
    assert coalescer.flush() == b"".join(serialize(event) for event in events)


@pytest.mark.parametrize(
    "raw",
    [
        b"data: a\rid: injected\n\n",  # a CR would end the data line early
        b"data: a\n\ndata: b\n\n",  # two frames
        b"data: a\nid: x\n\n",
        b"data: a\n",  # not whole
        b"data: a\n\r",
        "data: a\n\n",  # not bytes
        bytearray(b"data: a\n\n"),
    ],
)
def test_a_crafted_raw_is_never_written(raw: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # An Event made past its constructor (tuple.__new__) with raw bytes that are not
    # its own: the shape test turns them down, serialize() writes the event.
    event = tuple.__new__(Event, ("message", "a", "", None, -1, -1, raw))
    out, serialized = pushed([event], monkeypatch)
    assert (out, serialized) == (b"data: a\n\n", 1)


# A reading of "whole frames" line by line, independent of the Coalescer's own: every
# line ended, and no field line after the last blank line.
_LINE = re.compile(rb"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")


def whole(frame: bytes) -> bool:
    lines = _LINE.findall(frame)
    if not lines or not lines[-1].endswith((b"\n", b"\r")):
        return False
    open_event = False
    for line in lines:
        text = line.rstrip(b"\r\n")
        open_event = bool(text) and (open_event or not text.startswith(b":"))
    return not open_event


@given(st.lists(st.sampled_from([b"data: x", b": c", b"\n", b"\r", b"\r\n", b"id"]), max_size=8))
def test_bytes_are_taken_exactly_when_whole(parts: list[bytes]) -> None:
    frame = b"".join(parts)
    coalescer = Coalescer(max_bytes=1 << 20, max_delay=1.0, now=0.0)
    if whole(frame):
        coalescer.push(frame, 0.0)
        assert coalescer.flush() == frame
    else:
        with pytest.raises(ValueError, match="whole frames"):
            coalescer.push(frame, 0.0)
        assert coalescer.buffered == 0


@pytest.mark.parametrize("frame", [b"\n", b"\r\n", b"\r", b"data: x\n\r", b"data: x\r\r\n"])
def test_bytes_ending_with_a_blank_line_are_taken(frame: bytes) -> None:
    assert whole(frame)
    coalescer = Coalescer(max_bytes=1 << 20, max_delay=1.0, now=0.0)
    coalescer.push(frame, 0.0)
    assert coalescer.flush() == frame


CALLS = [
    ("Watchdog.saw_item", lambda w, c, k, now: w.saw_item(Event(data="x"), now)),
    ("Coalescer.push", lambda w, c, k, now: c.push(Event(data="x"), now)),
    ("Coalescer.pop", lambda w, c, k, now: c.pop(now)),
    ("KeepalivePlanner.sent", lambda w, c, k, now: k.sent(now)),
]


@pytest.mark.parametrize(("name", "call"), CALLS, ids=[name for name, _ in CALLS])
@pytest.mark.parametrize(
    ("now", "error"),
    [(math.nan, ValueError), (math.inf, ValueError), (4.0, ValueError), (True, TypeError)],
)
def test_the_inline_clock_refuses_what_clock_read_refuses(
    name: str, call: Any, now: Any, error: type[Exception]
) -> None:
    # 4.0 is before 5.0, the time every machine has seen.
    machines = (
        Watchdog(idle=1.0, now=5.0),
        Coalescer(max_bytes=10, max_delay=0.0, now=5.0),
        KeepalivePlanner(interval=1.0, now=5.0),
    )
    with pytest.raises(error, match=re.escape(name)):
        call(*machines, now)
    call(*machines, 5)  # an int that is not backwards: Clock.read takes it
    call(*machines, 6.5)
