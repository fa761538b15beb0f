"""Threads (issue 43, item 2): many connections in many threads, and threads sharing one.

The contract (the Connection docstring's "Threads"): connections share nothing, so a
thread per connection needs no care; calls on one connection from several threads are
serialized (the compiled core's per-Connection critical section, the GIL or the pure
core's lock where there is no GIL), and a call that meets a running next_event() gets
the documented ValueError and changes nothing.  So: no crash, no item lost or handed
out twice, items in stream order.

The expected items are written from the stream's recipe (event ``t<thread>-<n>`` with
id ``<n>``), not from a parser.  A tiny switch interval makes the GIL build switch
threads inside the calls, as often as it can.
"""

from __future__ import annotations

import random
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from sse_sansio import NEED_DATA, Comment, EndOfStream, Event
from sse_sansio._receive import _stream
from sse_sansio._receive._connection import PyConnection, serialize
from sse_sansio._receive._stream import ChunkQueue

NESTED = ("generator already executing", "while next_event() is running")
EVENTS = 300


@pytest.fixture(autouse=True)
def switch_often() -> Iterator[None]:
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(old)


def _stream_of(name: str) -> tuple[bytes, list[tuple[str, str]]]:
    """A stream of EVENTS events (with comments and blank-line noise) and its events."""
    expected = [(f"{name}-{n}", str(n)) for n in range(EVENTS)]
    parts = [f": {name} {n}\nid: {n}\ndata: {data}\n\n" for n, (data, _) in enumerate(expected)]
    return "".join(parts).encode(), expected


def _chunks(stream: bytes, seed: int) -> list[bytes]:
    rng = random.Random(seed)
    cuts, at = [], 0
    while at < len(stream):
        step = rng.choice((1, 2, 7, 64, 300))
        cuts.append(stream[at : at + step])
        at += step
    return cuts


def _run(threads: list[threading.Thread]) -> None:
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
        assert not thread.is_alive(), "a thread did not finish"


def _events(items: list[object]) -> list[tuple[str, str]]:
    events = sorted((x for x in items if isinstance(x, Event)), key=lambda e: e.start)
    return [(e.data, e.id) for e in events]


def _refused(error: Exception) -> bool:
    return isinstance(error, ValueError) and any(m in str(error) for m in NESTED)


@pytest.mark.parametrize("keep_raw", [False, True])
def test_many_threads_each_with_its_own_connection(conn_cls: Any, keep_raw: bool) -> None:
    results: dict[int, tuple[list[object], bytes]] = {}

    def work(n: int) -> None:
        stream, _ = _stream_of(f"t{n}")
        conn = conn_cls(keep_raw=keep_raw)
        items: list[object] = []
        forwarded = []
        for chunk in [*_chunks(stream, n), b""]:
            conn.receive_data(chunk)
            while (item := conn.next_event()) is not NEED_DATA:
                items.append(item)
                forwarded.append(getattr(item, "raw", None) or b"")
                if isinstance(item, EndOfStream):
                    break
            if keep_raw:
                forwarded.append(conn.take_raw())
        results[n] = (items, b"".join(forwarded))

    _run([threading.Thread(target=work, args=(n,)) for n in range(8)])
    for n, (items, forwarded) in sorted(results.items()):
        stream, expected = _stream_of(f"t{n}")
        assert _events(items) == expected
        assert isinstance(items[-1], EndOfStream)
        assert not items[-1].truncated
        assert forwarded == (stream if keep_raw else b"")


def _share(conn: Any, stream: bytes, drainers: int) -> tuple[list[object], list[Exception]]:
    """One thread feeds ``conn`` while ``drainers`` threads drain it, and one reads it."""
    items: list[object] = []
    errors: list[Exception] = []
    ended = threading.Event()

    def feed() -> None:
        for chunk in [*_chunks(stream, 1), b""]:
            conn.receive_data(chunk)

    def drain() -> None:
        while True:
            try:
                item = conn.next_event()
            except Exception as exc:
                errors.append(exc)
                continue
            if isinstance(item, EndOfStream):
                ended.set()
                return
            if item is not NEED_DATA:
                items.append(item)

    def read() -> None:
        while not ended.is_set():
            assert isinstance(conn.last_event_id, str)
            assert conn.retry is None

    threads = [threading.Thread(target=feed), threading.Thread(target=read)]
    threads += [threading.Thread(target=drain) for _ in range(drainers)]
    _run(threads)
    return items, errors


@pytest.mark.parametrize("keep_raw", [False, True])
def test_threads_sharing_one_connection_lose_nothing(conn_cls: Any, keep_raw: bool) -> None:
    stream, expected = _stream_of("shared")
    conn = conn_cls(keep_raw=keep_raw)
    items, errors = _share(conn, stream, drainers=4)
    assert all(_refused(error) for error in errors), errors[:3]
    assert _events(items) == expected  # each once, in stream order
    assert conn.last_event_id == str(EVENTS - 1)


def test_threads_draining_a_fed_connection_share_its_items(conn_cls: Any) -> None:
    stream, expected = _stream_of("fed")
    conn = conn_cls()
    conn.receive_data(stream)
    conn.receive_data(b"")
    taken: list[list[object]] = [[] for _ in range(4)]
    refused: list[Exception] = []

    def drain(mine: list[object]) -> None:
        while not isinstance(item := _next_or_refusal(conn, refused), EndOfStream):
            if item is not None:
                mine.append(item)

    _run([threading.Thread(target=drain, args=(mine,)) for mine in taken])
    assert all(_refused(error) for error in refused)
    assert _events([x for mine in taken for x in mine]) == expected


def _next_or_refusal(conn: Any, refused: list[Exception]) -> object:
    try:
        return conn.next_event()
    except ValueError as exc:
        refused.append(exc)
        return None


# ------------------------------------------------------------------ the pure core's lock


class Serialized(PyConnection):
    """The pure core as a free-threaded CPython runs it (serialize() applied)."""


serialize(Serialized)


def test_the_serialized_pure_core_shares_a_connection_too() -> None:
    stream, expected = _stream_of("locked")
    conn = Serialized(keep_raw=True)
    items, errors = _share(conn, stream, drainers=4)
    assert all(_refused(error) for error in errors)
    assert _events(items) == expected
    conn.__init__()  # type: ignore[misc]  # again, under the same lock: a fresh stream
    conn.receive_data(b"data: again\n\n")
    again = conn.next_event()
    assert isinstance(again, Event)
    assert again.data == "again"
    assert "NEED_DATA" in (conn.next_event.__doc__ or "")  # help() still shows it


def test_the_serialized_pure_core_lets_its_own_thread_in_again() -> None:
    # The lock is re-entrant: a call made while this thread holds it (as a finalizer
    # inside next_event() does) does not deadlock; the parser's own rules apply.
    conn = Serialized(keep_raw=True)
    conn.receive_data(b": one\n")
    with conn._lock:  # type: ignore[attr-defined]
        first = conn.next_event()
        conn.receive_data(b": late\n")
    assert isinstance(first, Comment)
    assert first.text == "one"
    assert [c.text for c in _drain(conn)] == ["late"]
    assert conn.take_raw() == b""


def _drain(conn: Any) -> list[Any]:
    out = []
    while (item := conn.next_event()) is not NEED_DATA:
        out.append(item)
    return out


def test_serialize_leaves_a_class_alone_where_the_gil_serializes() -> None:
    class Plain(PyConnection):
        pass

    serialize(Plain, when=False)
    assert Plain.receive_data is PyConnection.receive_data
    assert Plain.take_raw is PyConnection.take_raw


# ------------------------------------------- the chunk queue at its one switch point


def _switching_deque(action: Callable[[], object]) -> Callable[..., deque[bytes]]:
    """deque(), but another thread's ``action`` runs at the call, once."""
    calls: list[int] = []

    def make(*args: Any) -> deque[bytes]:
        if not calls:
            calls.append(1)
            action()
        return deque(*args)

    return make


def test_a_chunk_queued_while_the_parser_empties_the_slot_goes_in_the_slot(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    queue = ChunkQueue(plain=True)
    queue.put(b"a")
    monkeypatch.setattr(_stream, "deque", _switching_deque(lambda: queue.take()))
    queue.put(b"b")  # the parser took b"a" inside deque(): b"b" is now the oldest
    assert (queue.chunk, queue.later) == (b"b", None)


def test_a_chunk_queued_while_another_queues_keeps_both(monkeypatch: pytest.MonkeyPatch) -> None:
    queue = ChunkQueue(plain=True)
    queue.put(b"a")
    monkeypatch.setattr(_stream, "deque", _switching_deque(lambda: queue.put(b"x")))
    queue.put(b"b")  # b"x" made ``later`` inside deque(): b"b" goes behind it
    assert [queue.take(), queue.take(), queue.take(), queue.take()] == [b"a", b"x", b"b", None]
