"""A call that re-enters a connection while next_event() runs is refused, on both cores.

A finalizer the garbage collector runs inside an allocation of the parser (CPython 3.11
collects there; 3.12 and later at the next bytecode, which the pure core's generator
reaches and the compiled core does not), or a second thread that such a finalizer lets
run, may call the connection while next_event() is half-way through a line.  The
contract (the Connection docstring): a nested next_event() raises ValueError and
changes nothing, so the outer call goes on and every item comes out once, in order,
intact; a nested receive_data() only queues and is accepted.  The compiled core also
refuses a nested take_raw() and __init__() (it would free the buffers under the outer
call): those are tested against it directly, through a finalizer that runs inside
next_event() on every version (the last reference to the initial last_event_id,
dropped when a blank line replaces it).

Before the fix the compiled core read freed memory here: a 300-byte comment split
across two chunks came out as garbage, or as "invalid UTF-8" in a pure-ASCII stream.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from sse_sansio import NEED_DATA, Comment, Event, RemoteProtocolError
from sse_sansio._receive._raw import RawBytes
from tests.helpers.cores import CORE, PURE, needs_core

CORES = [
    pytest.param(PURE, id="py"),
    pytest.param(CORE.Connection if CORE else None, id="c", marks=needs_core),
]
NESTED = ("generator already executing", "while next_event() is running")
LONG = "x" * 300


class _Finalizer:
    """Garbage in a reference cycle whose __del__ runs ``action`` (once)."""

    def __init__(self, action: Callable[[], None]) -> None:
        self.action = action
        self.cycle = self

    def __del__(self) -> None:
        self.action()


@pytest.fixture
def collect_often() -> Iterator[None]:
    """Collect at (nearly) every allocation, as the reproduction of the bug did."""
    gc.collect()
    old = gc.get_threshold()
    gc.set_threshold(1)
    yield
    gc.enable()
    gc.set_threshold(*old)
    gc.collect()


def _drain_with_finalizers(conn: Any, call: Callable[[], object], log: list[object]) -> None:
    """Drain ``conn`` while finalizers, armed before each call, run ``call``."""

    def action() -> None:
        try:
            log.append(call())
        except Exception as exc:
            log.append(exc)

    for _ in range(6):
        gc.disable()  # armed now, collected at the first allocation inside the call
        for _ in range(3):
            _Finalizer(action)
        gc.enable()
        item = conn.next_event()
        log.append(item)
        if item is NEED_DATA:
            break


def _check(log: list[object], expected: list[str]) -> None:
    nested = [x for x in log if isinstance(x, Exception)]
    assert all(isinstance(x, ValueError) and any(m in str(x) for m in NESTED) for x in nested)
    items = sorted((x for x in log if isinstance(x, Comment)), key=lambda c: c.start)
    assert [c.text for c in items] == expected  # each once, in order, intact


@pytest.mark.parametrize("core", CORES)
def test_a_finalizer_calling_next_event_inside_it(core: Any, collect_often: None) -> None:
    conn = core()
    conn.receive_data(b":" + LONG[:150].encode())
    conn.receive_data(LONG[150:].encode() + b"\n: two\n")
    log: list[object] = []
    _drain_with_finalizers(conn, conn.next_event, log)
    _check(log, [LONG, "two"])


@pytest.mark.parametrize("core", CORES)
def test_a_second_thread_calling_next_event_inside_it(core: Any, collect_often: None) -> None:
    conn = core()
    conn.receive_data(b":" + LONG[:150].encode())
    conn.receive_data(LONG[150:].encode() + b"\n: two\n")

    def in_a_thread() -> object:
        box: list[object] = []

        def run() -> None:
            try:
                box.append(conn.next_event())
            except Exception as exc:
                box.append(exc)

        thread = threading.Thread(target=run)
        thread.start()
        thread.join(10)
        assert box, "the second thread did not finish"
        if isinstance(box[0], Exception):
            raise box[0]
        return box[0]

    log: list[object] = []
    _drain_with_finalizers(conn, in_a_thread, log)
    _check(log, [LONG, "two"])


@pytest.mark.parametrize("core", CORES)
def test_a_finalizer_may_feed_while_next_event_runs(core: Any, collect_often: None) -> None:
    conn = core(keep_raw=True)
    conn.receive_data(b":" + LONG[:150].encode())
    conn.receive_data(LONG[150:].encode() + b"\n")
    fed: list[bytes] = []

    def feed() -> object:
        chunk = f": fed {len(fed)}\n".encode()
        fed.append(chunk)
        conn.receive_data(chunk)
        return None

    log: list[object] = []
    _drain_with_finalizers(conn, feed, log)
    while (item := conn.next_event()) is not NEED_DATA:
        log.append(item)
    _check(log, [LONG] + [f"fed {i}" for i in range(len(fed))])
    comments = sorted((x for x in log if isinstance(x, Comment)), key=lambda c: c.start)
    assert b"".join(c.raw or b"" for c in comments) == b":" + LONG.encode() + b"\n" + b"".join(fed)


# --------------------------------------------------------------- the compiled core alone


class _Id(str):
    """An initial last_event_id whose finalizer runs ``action`` when it is dropped."""

    action: Callable[[], None]

    def __del__(self) -> None:
        self.action()


def _inside_next_event(call: Callable[[Any], object], **options: Any) -> tuple[Any, list[object]]:
    """Run ``call(conn)`` from inside the compiled core's next_event(); its outcome."""
    assert CORE is not None
    log: list[object] = []
    initial = _Id("0")
    conn = CORE.Connection(last_event_id=initial, **options)

    def action() -> None:
        try:
            log.append(call(conn))
        except Exception as exc:
            log.append(exc)

    initial.action = action
    del initial
    conn.receive_data(b"id: 1\ndata: a\n\ndata: b\n\n")
    first = conn.next_event()  # the blank line drops "0": the finalizer runs
    assert log, "the finalizer did not run inside next_event()"
    assert isinstance(first, Event)
    assert (first.data, first.id) == ("a", "1")
    second = conn.next_event()
    assert isinstance(second, Event)
    assert (second.data, second.id) == ("b", "1")
    return conn, log


@needs_core
@pytest.mark.parametrize(
    ("name", "call"),
    [
        ("next_event", lambda conn: conn.next_event()),
        ("take_raw", lambda conn: conn.take_raw()),
        ("__init__", lambda conn: conn.__init__(keep_raw=True)),
    ],
)
def test_the_compiled_core_refuses_a_nested(name: str, call: Callable[[Any], object]) -> None:
    _, log = _inside_next_event(call, keep_raw=True)
    assert len(log) == 1
    assert isinstance(log[0], ValueError)
    assert str(log[0]).startswith(f"Connection.{name}() called while next_event() is running")


@needs_core
def test_the_compiled_core_takes_a_nested_receive_data() -> None:
    conn, log = _inside_next_event(lambda conn: conn.receive_data(b"data: c\n\n"))
    assert log == [None]
    third = conn.next_event()
    assert isinstance(third, Event)
    assert third.data == "c"
    assert conn.next_event() is NEED_DATA


# ------------------------------------------- the pure core's keep_raw buffer, held by a read


def _drop_then_hand_out(raw: RawBytes, upto: int, end: int) -> bytes:
    raw.drop(upto)
    return raw.hand_out(end)


READS: dict[str, Callable[[RawBytes], object]] = {
    "hand_out": lambda raw: (raw.hand_out(5), raw.hand_out(7)),
    "copy": lambda raw: raw.copy(1, 6),
    "tail": lambda raw: raw.tail(2),
    "drop": lambda raw: _drop_then_hand_out(raw, 3, 7),
    "check_utf8": lambda raw: raw.check_utf8(0, 7),
}


def _outcome(read: Callable[[RawBytes], object], raw: RawBytes) -> object:
    try:
        return read(raw)
    except RemoteProtocolError as exc:
        return ("refused", exc.offset)


@pytest.mark.parametrize("tail", [b"\n", b"\xff"], ids=["utf8", "bad-utf8"])
@pytest.mark.parametrize("name", list(READS))
def test_a_chunk_fed_while_a_read_holds_the_raw_bytes_waits_its_turn(
    name: str, tail: bytes
) -> None:
    # Python 3.14's collector runs finalizers at any bytecode, so receive_data() from one
    # may come while keep_raw's bytearray is exported (a memoryview in a read): growing
    # it then raised BufferError.  The chunks wait, in order, and every read sees them.
    chunks = [b"ab", b"cd", b"ef", tail]
    plain = RawBytes(100)
    for chunk in chunks:
        plain.receive(chunk)
    held = RawBytes(100)
    held.receive(chunks[0])
    with memoryview(held.buf):  # as a read in progress holds it
        for chunk in chunks[1:]:
            held.receive(chunk)
        assert bytes(held.buf) == chunks[0]
    assert _outcome(READS[name], held) == _outcome(READS[name], plain)
    held.receive(b"g")  # nothing waits any more: straight in
    assert held.tail(held.start) == plain.tail(plain.start) + b"g"
