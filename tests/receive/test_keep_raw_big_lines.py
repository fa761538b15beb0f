"""keep_raw on lines past SPILL: the same items, spans and errors as without keep_raw.

In keep_raw mode the pure core does not keep its own copy of a big line as it arrives
(keep_raw's buffer has its bytes) and defers a big data line's value to dispatch, when it
is decoded from the bytes the event hands out (issue 10: peak memory at most twice the
event).  These tests hold that path to the default one, which is the reference: for
each stream and chunking, a connection with ``keep_raw=True`` must give the same items
with the same offsets, the same error at the same offset, and each item's ``raw`` must
be exactly the stream's bytes it says it ends at.  Where the reference model applies
(tests/helpers/model.py), the keep_raw connection must agree with it too.
"""

from __future__ import annotations

from typing import Any

import pytest

from sse_sansio import (
    NEED_DATA,
    Comment,
    Connection,
    EndOfStream,
    Event,
    RemoteProtocolError,
)
from sse_sansio._receive._connection import PyConnection
from tests.helpers import parser_config
from tests.helpers.differential import run_library
from tests.helpers.model import interpret

pytestmark = pytest.mark.usefixtures("conn_cls")  # both cores: tests/conftest.py

SPILL = 256 * 1024  # written out: the tests must not borrow the code's constant
WINDOW = 64 * 1024  # the strict check of a deferred value goes a window at a time
BIG = 2 * SPILL + 1234


def _run(chunks: list[bytes], **options: Any) -> tuple[list[tuple[Any, ...]], Any, list[bytes]]:
    """Feed ``chunks`` and the end, draining after each (take_raw() at every NEED_DATA).

    Returns the items as plain tuples of their fields and offsets, the error (message
    and offset) or None, and, in keep_raw mode, everything handed out, in order: each
    item's raw and each take_raw().
    """
    conn = Connection(**options)
    items: list[tuple[Any, ...]] = []
    handed: list[bytes] = []
    keep_raw = options.get("keep_raw", False)

    def drain() -> None:
        while (item := conn.next_event()) is not NEED_DATA:
            if isinstance(item, Event):
                items.append(("event", item.type, item.data, item.id, item.retry))
            elif isinstance(item, Comment):
                items.append(("comment", item.text))
            else:
                assert isinstance(item, EndOfStream)
                items.append(("end", item.partial_line, item.partial_event))
            if not isinstance(item, EndOfStream):
                items[-1] += (item.start, item.end)
            if keep_raw:
                assert item.raw is not None
                handed.append(item.raw)
                # An item's raw ends where the item does (a comment inside an event
                # leaves its bytes to the event: raw b"").
                if item.raw and not isinstance(item, EndOfStream):
                    assert sum(map(len, handed)) == item.end
            if isinstance(item, EndOfStream):
                return
        if keep_raw:
            handed.append(conn.take_raw())

    try:
        for chunk in chunks:
            conn.receive_data(chunk)
            drain()
        conn.receive_data(b"")
        drain()
    except RemoteProtocolError as exc:
        return items, (str(exc), exc.offset), handed
    return items, None, handed


def _chunkings(stream: bytes) -> list[list[bytes]]:
    """The whole stream, small, odd, window-sized and SPILL+1 chunks, and ones cut just
    before and just after its first LF or CR past SPILL (a big line's end then comes
    alone, or a CR that ends a chunk may be half a CRLF)."""
    out = [[stream]]
    for size in (4093, 65536, SPILL + 1):
        out.append([stream[i : i + size] for i in range(0, len(stream), size)])
    for end in (stream.find(b"\n", SPILL), stream.find(b"\r", SPILL)):
        if end > 0:
            out.append([stream[:end], stream[end:]])
            out.append([stream[: end + 1], stream[end + 1 :]])
    return out


def check(stream: bytes, **options: Any) -> None:
    """keep_raw gives the default path's items, spans and error under every chunking."""
    for chunks in _chunkings(stream):
        want, want_error, _ = _run(chunks, **options)
        got, error, handed = _run(chunks, keep_raw=True, **options)
        assert (got, error) == (want, want_error), [len(c) for c in chunks]
        # Nothing twice, nothing lost: what was handed out is the stream, but for what
        # an error or the end of the stream cut off (an unfinished block is discarded).
        sent = b"".join(handed)
        assert stream.startswith(sent)
        if error is None and stream.endswith((b"\n\n", b"\r\r")):
            assert sent == stream


# Invalid UTF-8 at places in a big data line's value ("data: " + 6 + this + "\n\n"): its
# first byte, the middle, across the strict check's window edges (a sequence cut by
# one, a bad byte just after one), and its last byte.
_A = b"a" * BIG
_BAD_VALUES = {
    "start": b"\xff" + _A,
    "middle": _A[: BIG // 2] + b"\xc3(" + _A[BIG // 2 :],
    "sequence across a window edge": _A[: WINDOW - 1] + b"\xe4\xb8(" + _A,
    "good sequence across a window edge": _A[: WINDOW - 2] + "中".encode() + b"\xff" + _A,
    "bad byte after a window edge": _A[:WINDOW] + b"\x80" + _A,
    "cut sequence as the last byte": _A + b"\xe4",
    "last byte": _A + b"\xff",
}


@pytest.mark.parametrize("errors", ["strict", "replace"])
@pytest.mark.parametrize("where", list(_BAD_VALUES))
def test_invalid_utf8_in_a_big_data_line(where: str, errors: str) -> None:
    value = _BAD_VALUES[where]
    stream = b"data: ok\n\nid: 3\ndata: " + value + b"\n\ndata: after\n\n"
    check(stream, errors=errors, max_event_size=None)


@pytest.mark.parametrize(
    ("name", "stream"),
    [
        ("ascii", b"data: " + _A + b"\n\ndata: next\n\n"),
        ("no space after the colon", b"data:" + _A + b"\n\n"),
        ("a space kept", b"data:  " + _A + b"\n\n"),
        ("crlf", b"data: " + _A + b"\r\n\r\ndata: next\r\n\r\n"),
        ("cr", b"data: " + _A + b"\r\rdata: next\r\r"),
        ("three-byte characters", b"data: " + "中".encode() * (BIG // 3) + b"\n\n"),
        ("fields and a comment first", b"event: e\nid: 7\n: c\nretry: 5\ndata: " + _A + b"\n\n"),
        ("a big line among others", b"data: a\ndata: " + _A + b"\ndata: b\n\n"),
        ("two big lines", b"data: " + _A + b"\ndata: \xff" + _A + b"\n\n"),
        ("big, then a short data line", b"data: " + _A + b"\ndata: b\n\n"),
        ("short, then a big data line", b"data: b\ndata: " + _A + b"\n\n"),
        ("a big comment", b": " + _A + b"\n\ndata: x\n\n"),
        ("a big comment in an event", b"data: x\n: " + _A + b"\n\n"),
        ("a big id", b"id: " + _A + b"\ndata: x\n\n"),
        ("a big event type", b"event: " + _A + b"\ndata: x\n\n"),
        ("a big unknown field", b"data: x\nfoo: " + _A + b"\n\n"),
        ("a big line without a colon", _A + b"\ndata: x\n\n"),
        ("a big data line and no data dispatch", b"data: " + _A + b"\n"),
        ("cut off in a big line", b"data: x\n\ndata: " + _A),
        ("cut off in a big line, bad UTF-8", b"data: \xff" + _A),
        ("bytes after the event", b"data: " + _A + b"\n\n" + b": " + b"z" * (3 * SPILL)),
    ],
)
@pytest.mark.parametrize("errors", ["strict", "replace"])
def test_big_lines_agree_with_the_default_path(name: str, stream: bytes, errors: str) -> None:
    check(stream, errors=errors, max_event_size=None)


@pytest.mark.parametrize("over", [-1, 0, 1, 7])
def test_the_limit_is_the_same_to_the_byte(over: int) -> None:
    # A big data line whose block is max_event_size + over bytes (its line end not
    # counted), with invalid UTF-8 in it: the size error comes first, at the same byte.
    line = b"data: " + b"\xff" + _A
    check(b"id: 1\n" + line + b"\n\n", errors="strict", max_event_size=6 + len(line) - over)


def test_the_strict_check_of_a_deferred_value_at_tiny_windows() -> None:
    # The check goes a window at a time: with windows of a few bytes every edge falls
    # inside a multibyte sequence somewhere.
    value = "é中😀".encode() * (SPILL // 9) + b"\xf0\x9f\x98" + b"(" + b"b" * SPILL
    stream = b"data: " + value + b"\n\n"
    with parser_config(window=7):
        assert PyConnection._tuning.window == 7
        for errors in ("strict", "replace"):
            check(stream, errors=errors, max_event_size=None)


@pytest.mark.parametrize(
    "stream",
    [
        b"data: " + _A + b"\n\ndata: \xff\n\n",
        b": c\nevent: e\ndata: " + "中".encode() * (BIG // 3) + b"\xc3\n\n",
        b"data: a\r\ndata: " + _A + b"\r\n\r\n",
        b"data: " + _A,
    ],
)
@pytest.mark.parametrize("errors", ["strict", "replace"])
def test_keep_raw_agrees_with_the_model(stream: bytes, errors: str) -> None:
    options: dict[str, Any] = {"errors": errors, "max_event_size": None, "last_event_id": ""}
    want = interpret(stream, **options)
    for chunks in _chunkings(stream):
        assert run_library(chunks, keep_raw=True, **options) == want


def test_handing_out_a_big_event_keeps_no_big_allocation() -> None:
    # The pure core's raw buffer, with a big event and the start of the next in it:
    # once the event is handed out (and dropped), the connection holds about what
    # stays, not the allocation the event grew (see _raw.py's invariants).
    import tracemalloc

    from sse_sansio._receive._connection import Connection as PureConnection

    size = 4 * 1024 * 1024
    stream = b"data: " + b"x" * size + b"\n\ndata: " + b"y" * 1000
    chunks = [stream[i : i + 65536] for i in range(0, len(stream), 65536)]
    tracemalloc.start()
    try:
        conn = PureConnection(keep_raw=True, max_event_size=None)
        base = tracemalloc.get_traced_memory()[0]
        events = []
        for chunk in chunks:
            conn.receive_data(chunk)
            while (item := conn.next_event()) is not NEED_DATA:
                events.append(item)
        assert len(events) == 1
        assert len(events[0].raw or b"") == len(stream) - 1006
        del events, item
        held = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert held < 64 * 1024, held
