"""iter_events() and aiter_events(): chunks in, items out, the end of the stream never missed."""

from __future__ import annotations

import asyncio
import io
import itertools
import pickle
from collections.abc import AsyncIterator, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sse_sansio import (
    Comment,
    Connection,
    EndOfStream,
    Event,
    ProtocolError,
    RemoteProtocolError,
    TruncatedStreamError,
    aiter_events,
    iter_events,
)

pytestmark = pytest.mark.usefixtures("conn_cls")  # both cores: tests/conftest.py

STREAM = 'id: 1\r\ndata: 你好\r\n\r\n: ping\r\nevent: end\r\ndata: {"n": 2}\r\n\r\n'.encode()
ITEMS = [
    Event(data="你好", id="1"),
    Comment(text="ping"),
    Event(type="end", data='{"n": 2}', id="1"),
]


def pieces(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


async def agen(chunks: Iterable[Any]) -> AsyncIterator[Any]:
    for chunk in chunks:
        await asyncio.sleep(0)
        yield chunk


def alist(iterator: AsyncIterator[Any]) -> list[Any]:
    async def run() -> list[Any]:
        return [item async for item in iterator]

    return asyncio.run(run())


# ---- the default shape ----------------------------------------------------------------


@pytest.mark.parametrize("size", [1, 2, 5, len(STREAM)])
def test_iter_events_yields_the_items_whatever_the_chunking(size: int) -> None:
    assert list(iter_events(pieces(STREAM, size))) == ITEMS


@pytest.mark.parametrize("size", [1, 3, len(STREAM)])
def test_aiter_events_yields_the_items_whatever_the_chunking(size: int) -> None:
    assert alist(aiter_events(agen(pieces(STREAM, size)))) == ITEMS


@given(st.lists(st.integers(min_value=1, max_value=len(STREAM)), max_size=10))
def test_any_split_gives_the_same_items(cuts: list[int]) -> None:
    bounds = [0, *sorted(cuts), len(STREAM)]
    chunks = [STREAM[a:b] for a, b in itertools.pairwise(bounds)]  # some of them empty
    assert list(iter_events(chunks)) == ITEMS
    assert alist(aiter_events(agen(chunks))) == ITEMS


def test_empty_chunks_do_not_end_the_stream() -> None:
    # An HTTP client may hand out b"": it is no data, not the end of the stream.
    chunks = [b"", b"data: a", b"", b"", b"\n\n", b""]
    assert list(iter_events(chunks)) == [Event(data="a")]
    assert alist(aiter_events(agen(chunks))) == [Event(data="a")]


def test_bytearray_and_memoryview_chunks() -> None:
    chunks: list[Any] = [bytearray(b"data: a"), memoryview(b"\n\ndata: b"), b"\n\n"]
    assert list(iter_events(chunks)) == [Event(data="a"), Event(data="b")]


def test_no_chunks_at_all_is_a_clean_empty_stream() -> None:
    assert list(iter_events([])) == []
    assert alist(aiter_events(agen([]))) == []


# ---- a cut stream cannot be missed ------------------------------------------------------


def test_a_stream_cut_mid_event_raises_after_every_complete_item() -> None:
    stream = b"data: one\n\n: c\ndata: two\ndata: thr"
    seen: list[Any] = []
    with pytest.raises(TruncatedStreamError) as info:
        seen.extend(iter_events(pieces(stream, 4)))
    assert seen == [Event(data="one"), Comment(text="c")]
    error = info.value
    assert error.end_of_stream == EndOfStream(partial_line=len(b"data: thr"), partial_event=True)
    # The discarded line starts after "data: one\n\n: c\ndata: two\n" (25 bytes).
    assert error.offset == 25
    assert "the middle of an event" in str(error)
    assert str(error).endswith("at byte offset 25")
    assert isinstance(error, RemoteProtocolError)
    assert isinstance(error, ProtocolError)


def test_a_stream_cut_mid_line_outside_an_event() -> None:
    with pytest.raises(TruncatedStreamError) as info:
        list(iter_events([b"data: a\n\nevent: x"]))
    assert info.value.end_of_stream == EndOfStream(partial_line=8, partial_event=False)
    assert info.value.offset == 9
    assert "the middle of a line" in str(info.value)


def test_a_stream_cut_after_a_field_line_has_nothing_left_of_the_line() -> None:
    # The event lost its blank line but no line was cut: the offset is the stream's end.
    with pytest.raises(TruncatedStreamError) as info:
        alist(aiter_events(agen([b"data: a\n"])))
    assert info.value.end_of_stream == EndOfStream(partial_event=True)
    assert info.value.offset == 8


def test_truncated_stream_error_pickles() -> None:
    error = TruncatedStreamError(EndOfStream(partial_line=3, partial_event=True), offset=7)
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is TruncatedStreamError
    assert (str(copy), copy.offset, copy.end_of_stream) == (str(error), 7, error.end_of_stream)


@pytest.mark.parametrize("asynchronous", [False, True])
def test_end_of_stream_yield_hands_out_the_end_instead(asynchronous: bool) -> None:
    chunks = [b"data: a\n\ndata: b"]
    if asynchronous:
        items = alist(aiter_events(agen(chunks), end_of_stream="yield"))
    else:
        items = list(iter_events(chunks, end_of_stream="yield"))
    assert items == [Event(data="a"), EndOfStream(partial_line=7)]
    items = list(iter_events([b": x\n"], end_of_stream="yield"))
    assert items == [Comment(text="x"), EndOfStream()]


def test_end_of_stream_takes_only_its_two_values() -> None:
    with pytest.raises(ValueError, match="end_of_stream"):
        iter_events([], end_of_stream="ignore")  # type: ignore[call-overload]
    with pytest.raises(ValueError, match="end_of_stream"):
        aiter_events(agen([]), end_of_stream="")  # type: ignore[call-overload]


# ---- errors from the parser --------------------------------------------------------------


@pytest.mark.parametrize("asynchronous", [False, True])
def test_protocol_errors_propagate_unchanged(asynchronous: bool) -> None:
    chunks = [b"data: ok\n\n", b"data: \xff\n\n"]
    seen: list[Any] = []

    async def drain() -> None:
        async for item in aiter_events(agen(chunks)):
            seen.append(item)

    def run() -> None:
        if asynchronous:
            asyncio.run(drain())
        else:
            seen.extend(iter_events(chunks))

    with pytest.raises(RemoteProtocolError) as info:
        run()
    assert type(info.value) is RemoteProtocolError
    assert info.value.offset == 16
    assert seen == [Event(data="ok")]


def test_connection_options_reach_the_connection() -> None:
    items = list(iter_events([b"data: \xff\n\n"], errors="replace", last_event_id="7"))
    assert items == [Event(data="\ufffd", id="7")]
    with pytest.raises(RemoteProtocolError, match="max_event_size=8"):
        list(iter_events([b"data: 123456789\n\n"], max_event_size=8))


# ---- a connection of the caller's -----------------------------------------------------------


def test_a_given_connection_keeps_last_event_id_and_retry() -> None:
    conn = Connection()
    chunks = [b"id: 5\ndata: a\n\nretry: 1500\n\nid: 6\n\n"]
    assert list(iter_events(chunks, connection=conn)) == [Event(data="a", id="5")]
    # The id-only and retry-only blocks are not lost: the planner reads them here.
    assert (conn.last_event_id, conn.retry) == ("6", 1500)


def test_a_connection_and_options_do_not_mix() -> None:
    with pytest.raises(TypeError, match="either connection= or Connection options"):
        iter_events([], connection=Connection(), errors="replace")  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="either connection="):
        aiter_events(agen([]), connection=Connection(), max_event_size=5)  # type: ignore[call-overload]


# ---- files ------------------------------------------------------------------------------------


def test_a_binary_file_is_read_in_blocks(tmp_path: Path) -> None:
    path = tmp_path / "capture.sse"
    path.write_bytes(STREAM * 3000)  # bigger than one block
    with path.open("rb") as stream:
        assert list(iter_events(stream)) == ITEMS * 3000
    assert list(iter_events(io.BytesIO(STREAM))) == ITEMS


def test_a_text_file_is_refused_with_advice(tmp_path: Path) -> None:
    path = tmp_path / "capture.sse"
    path.write_bytes(STREAM)
    with path.open(encoding="utf-8") as text, pytest.raises(TypeError, match="binary mode"):
        iter_events(text)  # type: ignore[arg-type]


def test_a_chunk_that_is_not_bytes_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="takes bytes, not str"):
        list(iter_events(["data: a\n\n"]))  # type: ignore[list-item]


# ---- the pull model ---------------------------------------------------------------------------


def test_a_chunk_is_read_only_when_the_parser_needs_it() -> None:
    reads: list[int] = []

    def source() -> Iterator[bytes]:
        for n in range(3):
            reads.append(n)
            yield b"data: %d\n\n" % n

    items = iter_events(source())
    assert next(items) == Event(data="0")
    assert reads == [0]
    assert next(items) == Event(data="1")
    assert reads == [0, 1]
