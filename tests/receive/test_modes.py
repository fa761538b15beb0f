"""The opt-in modes' rooms (sse_sansio/_receive/_modes.py) against the model and the fast loop.

A connection that sets on_oversize="skip" or piece_size hands a block to _modes.py when
it grows near the limit or piece_size.  With none of the new behaviour in play, a block
handed over must be indistinguishable from one the fast loop keeps: the same items
(values, spans, raw bytes), the same take_raw() bytes, the same error at the same
offset, the same last_event_id and retry.  Here every block of a plain connection is
handed over at its first byte (a test switch of the parser, Tuning.hand_over_at=0), so
the reference model referees _modes.py and every handover point, under the same
chunkings as the default path.  Diagnostics, which both hand out, must agree as well.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from sse_sansio import (
    NEED_DATA,
    Comment,
    EndOfStream,
    Event,
    RemoteProtocolError,
)
from sse_sansio._receive._connection import Connection, PyConnection
from tests.helpers.model import MComment, MEnd, MError, MEvent, ModelResult, interpret
from tests.helpers.strategies import chunked, max_event_sizes, streams

_BUDGET = settings().max_examples


@contextmanager
def forced() -> Iterator[None]:
    """Every pure Connection made inside hands each block to _modes.py at its first
    byte (a test switch of the parser, _interpret.Tuning, that PyConnection passes on)."""
    saved = PyConnection._tuning
    PyConnection._tuning = saved._replace(hand_over_at=0)
    try:
        yield
    finally:
        PyConnection._tuning = saved


def run(chunks: list[bytes], **options: Any) -> tuple[ModelResult, list[Any]]:
    """Feed chunks, draining after each (and taking raw bytes in keep_raw mode)."""
    conn = Connection(**options)
    result = ModelResult()
    trace: list[Any] = []
    try:
        for chunk in [*chunks, b""]:
            conn.receive_data(chunk)
            while (item := conn.next_event()) is not NEED_DATA:
                trace.append((item, getattr(item, "start", None), item.raw))
                if isinstance(item, Event):
                    result.items.append(
                        MEvent(item.type, item.data, item.id, item.retry, item.start, item.end)
                    )
                elif isinstance(item, Comment):
                    result.items.append(MComment(item.text, item.start, item.end))
                else:
                    assert isinstance(item, EndOfStream)
                    result.items.append(MEnd(item.partial_line, item.partial_event))
                    break
            if options.get("keep_raw"):
                trace.append(conn.take_raw())
    except RemoteProtocolError as exc:
        kind = "size" if "max_event_size" in str(exc) else "utf8"
        result.error = MError(kind, exc.offset)
        trace.append(str(exc))
    result.last_event_id = conn.last_event_id
    result.retry = conn.retry
    return result, trace


def agree(data: bytes, chunks: list[bytes], **options: Any) -> None:
    cuts = itertools.accumulate(map(len, chunks))
    got, _ = run(chunks, **options)
    want = interpret(data, **{k: v for k, v in options.items() if k != "keep_raw"}, cuts=cuts)
    assert got == want, chunks


@settings(
    max_examples=max(25, _BUDGET // 4),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data(), stream=streams(), limit=max_event_sizes)
@example(data=None, stream=b"data: x\r\n\r\n", limit=None)
@example(data=None, stream=b"\xef\xbb\xbfdata: \xff\n\ndata: y\n\n", limit=None)
@example(data=None, stream=b"\xef\xbb", limit=1)
def test_forced_path_agrees_with_model(data: Any, stream: bytes, limit: int | None) -> None:
    chunkings = [[stream] if stream else []]
    if data is not None:
        chunkings.append(data.draw(chunked(stream), label="chunks"))
    with forced():
        for chunks in chunkings:
            for errors in ("strict", "replace"):
                agree(stream, chunks, errors=errors, max_event_size=limit)


@settings(max_examples=max(25, _BUDGET // 4), deadline=None)
@given(data=st.data(), stream=streams(allow_long=False))
def test_forced_path_every_byte_and_split(data: Any, stream: bytes) -> None:
    limit = data.draw(st.one_of(st.none(), st.integers(1, len(stream) + 2)), label="limit")
    errors = data.draw(st.sampled_from(("strict", "replace")), label="errors")
    last_event_id = data.draw(st.sampled_from(("", "7", "é")), label="last_event_id")
    chunkings = [[stream[i : i + 1] for i in range(len(stream))]]
    chunkings += [[stream[:cut], stream[cut:]] for cut in range(1, len(stream))]
    with forced():
        for chunks in chunkings:
            agree(stream, chunks, errors=errors, max_event_size=limit, last_event_id=last_event_id)


@settings(max_examples=max(25, _BUDGET // 4), deadline=None)
@given(data=st.data(), stream=streams(allow_long=False))
def test_forced_path_keeps_raw_as_the_default_path(data: Any, stream: bytes) -> None:
    # keep_raw: the same raw bytes on every item and the same take_raw() bytes as the
    # default path (the model does not track them; the default path is the referee).
    limit = data.draw(st.one_of(st.none(), st.integers(1, len(stream) + 2)), label="limit")
    chunks = data.draw(chunked(stream), label="chunks")
    options: dict[str, Any] = {"keep_raw": True, "max_event_size": limit}
    want = run(chunks, **options)
    with forced():
        got = run(chunks, **options)
    assert got == want


@pytest.mark.parametrize("stream", [b"data: a\r\n\r\n: c\r\n\r\n", b": c\r\n\r\ndata: a\r\n\r\n"])
def test_split_crlfs_in_keep_raw_mode(stream: bytes) -> None:
    # A chunk that ends at the CR of a blank line's CRLF: the LF is forwarded by
    # take_raw() on both paths alike.
    for cut in range(1, len(stream)):
        chunks = [stream[:cut], stream[cut:]]
        want = run(chunks, keep_raw=True)
        with forced():
            assert run(chunks, keep_raw=True) == want


def test_the_end_of_stream_is_returned_again() -> None:
    conn = Connection(on_oversize="skip")
    conn.receive_data(b"data: x\n")
    conn.receive_data(b"")
    assert conn.next_event() == EndOfStream(partial_line=0, partial_event=True)
    assert conn.next_event() is conn.next_event()


def test_many_data_lines_are_folded_into_one_text() -> None:
    # Forced into _modes.py (the default limit is far away), where the data buffer folds
    # every 256 texts: 1000 lines fold three times and leave 232 texts unfolded.
    stream = b"data: ab\n" * 1000 + b"\n"
    with forced():
        conn = Connection(on_oversize="skip")
        conn.receive_data(stream)
        assert conn.next_event() == Event(data="\n".join(["ab"] * 1000))


def test_a_connection_says_which_core_parses_it() -> None:
    assert Connection().implementation == "python"
    assert Connection(on_oversize="skip").implementation == "python"


# ------------------------------------------------ diagnostics in both rooms

# diagnostics=True alone runs the fast loop; with on_oversize="skip" and no limit (so
# that nothing is ever skipped) and every block handed over, _modes.py.  Both must hand
# out the same Diagnostic items, at the same places among the other items, with the
# same raw bytes, the same error and the same state.


def _diagnosed(chunks: list[bytes], **options: Any) -> list[Any]:
    """Every item with its raw bytes, take_raw()'s bytes, the error, the state."""
    conn = Connection(diagnostics=True, max_event_size=None, **options)
    trace: list[Any] = []
    try:
        for chunk in [*chunks, b""]:
            conn.receive_data(chunk)
            while (item := conn.next_event()) is not NEED_DATA:
                trace.append((item, item.raw))
                if isinstance(item, EndOfStream):
                    break
            if options.get("keep_raw"):
                trace.append(conn.take_raw())
    except RemoteProtocolError as exc:
        trace.append((str(exc), exc.offset))
    return [*trace, conn.last_event_id, conn.retry]


@settings(
    max_examples=max(25, _BUDGET // 4),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data(), stream=streams())
@example(data=None, stream=b"HTTP/1.1 200 OK\r\nid: a\0b\r\nretry: x\r\nfoo: 1\r\n\r\n")
@example(data=None, stream=b"id: 1\nretry: 5\n\ndata: x\n\n\xef\xbb")
@example(data=None, stream=b"\xef\xbb")
def test_diagnostics_are_the_same_on_both_parsers(data: Any, stream: bytes) -> None:
    chunkings = [[stream] if stream else []]
    if data is not None:
        chunkings.append(data.draw(chunked(stream), label="chunks"))
        chunkings.append([stream[i : i + 1] for i in range(len(stream))][:600])
    for chunks in chunkings:
        for keep_raw in (False, True):
            for errors in ("strict", "replace"):
                with forced():
                    want = _diagnosed(chunks, errors=errors, keep_raw=keep_raw, on_oversize="skip")
                got = _diagnosed(chunks, errors=errors, keep_raw=keep_raw)
                assert got == want, chunks


def test_the_end_of_stream_inside_a_handed_over_block_is_returned_again() -> None:
    with forced():
        conn = Connection()
    conn.receive_data(b"data: x\n")
    conn.receive_data(b"")
    assert conn.next_event() == EndOfStream(partial_line=0, partial_event=True)
    assert conn.next_event() is conn.next_event()


@pytest.mark.parametrize("options", [{"on_oversize": "skip"}, {"piece_size": 1 << 20}])
def test_a_line_spilled_below_the_bound_in_keep_raw_mode(options: dict[str, Any]) -> None:
    # keep_raw: a line longer than the spill size (256 KiB), short of the bound, stays
    # in the fast loop, read back from keep_raw's buffer; a plain connection referees.
    line = b"data: " + b"x" * (600 * 1024) + b"\n"
    stream = b": hi\n" + line + b"id: 4\n\n"
    chunks = [stream[i : i + 65536] for i in range(0, len(stream), 65536)]
    want = run(chunks, keep_raw=True)
    got = run(chunks, keep_raw=True, **options)
    assert got[0].items[0] == MComment("hi", 0, 5)
    assert got == want  # (the data is short of the piece size: one Event, no piece)
