"""Connection(piece_size=n): a huge event handed out in DataPiece items as it arrives.

The referee is a connection without piece_size: the pieces joined must be its Event's
data, the PiecedEvent its type, id, retry and span, under every chunking; a strict-mode
error must come at the same offset, after the pieces before it.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sse_sansio import (
    NEED_DATA,
    DataPiece,
    EndOfStream,
    Event,
    LocalProtocolError,
    PiecedEvent,
    RemoteProtocolError,
    SkippedEvent,
)
from sse_sansio._receive._connection import Connection
from sse_sansio.testing import chunkings
from tests.helpers.strategies import chunked, streams

pytestmark = pytest.mark.usefixtures("conn_cls")  # both cores: tests/conftest.py

_BUDGET = settings().max_examples


def feed(chunks: list[bytes], **options: Any) -> tuple[list[Any], list[bytes]]:
    """Feed chunks then the end, draining after each; the items and take_raw() bytes."""
    conn = Connection(**options)
    items: list[Any] = []
    taken: list[bytes] = []
    try:
        for chunk in [*chunks, b""]:
            conn.receive_data(chunk)
            while (item := conn.next_event()) is not NEED_DATA:
                items.append(item)
                if isinstance(item, EndOfStream):
                    break
            if options.get("keep_raw"):
                taken.append(conn.take_raw())
    except RemoteProtocolError as exc:
        items.append(("error", exc.offset))
    return items, taken


def joined(items: list[Any]) -> list[Any]:
    """The items with each run of pieces and its PiecedEvent made one Event again."""
    out: list[Any] = []
    text: list[str] = []
    for item in items:
        if isinstance(item, DataPiece):
            text.append(item.text)
        elif isinstance(item, PiecedEvent):
            event = Event(type=item.type, data="".join(text), id=item.id, retry=item.retry)
            out.append((event, item.start, item.end))
            text = []
        elif type(item) is tuple:
            out.append(item)  # an error
        else:
            out.append((item, getattr(item, "start", None), getattr(item, "end", None)))
    return out


# "data: " 0-5, 20 x "é" (40 bytes) 6-45, "\n" 46; "data: b\n" 47-54; blank line 55.
STREAM = b"data: " + "é".encode() * 20 + b"\ndata: b\n\ndata: s\n\n"


@pytest.mark.parametrize(("label", "chunks"), list(chunkings(STREAM)))
def test_pieces_join_to_the_event(label: str, chunks: list[bytes]) -> None:
    items, _ = feed(chunks, piece_size=8)
    pieces = [i for i in items if isinstance(i, DataPiece)]
    assert "".join(p.text for p in pieces) == "é" * 20 + "\nb"
    # Each piece holds more than 8 bytes of data, but the last.
    assert all(len(p.text.encode()) >= 8 for p in pieces[:-1])
    # The pieces' spans tile the event from its first line to its blank line.
    assert pieces[0].start == 0
    assert [a.end for a in pieces[:-1]] == [b.start for b in pieces[1:]]
    # The last ends at the blank line, or before the line end of the last data line
    # when that line was streamed as it came.
    assert pieces[-1].end in (54, 55)
    assert items[len(pieces)] == PiecedEvent()
    assert (items[len(pieces)].start, items[len(pieces)].end) == (0, 56)
    # A small event comes as a plain Event.
    assert items[len(pieces) + 1 :] == [Event(data="s"), EndOfStream()]


@pytest.mark.parametrize(("label", "chunks"), list(chunkings(STREAM)))
def test_keep_raw_forwards_an_event_still_arriving(label: str, chunks: list[bytes]) -> None:
    items, taken = feed(chunks, piece_size=8, keep_raw=True)
    assert b"".join([*(i.raw for i in items), *taken]) == STREAM
    if len(chunks) > 2:
        # Fed in small chunks, the first piece goes out before the line is complete.
        assert len(items[0].raw) < 47


def test_a_huge_line_is_streamed_within_the_limit() -> None:
    # 100 KB of data under a 1000-byte limit: the limit bounds what is held.
    value = b"0123456789" * 10_000
    chunks = [b"event: e\nid: 3\nretry: 5\ndata: "]
    chunks += [value[i : i + 300] for i in range(0, len(value), 300)]
    chunks.append(b"\n\n")
    items, _ = feed(chunks, piece_size=500, max_event_size=1000)
    assert joined(items) == [
        (Event(type="e", data=value.decode(), id="3", retry=5), 0, 30 + len(value) + 2),
        (EndOfStream(), None, None),
    ]
    # But a big id line is still refused at the block's first byte + the limit.
    items, _ = feed([b"id: " + b"1" * 2000 + b"\n"], piece_size=500, max_event_size=1000)
    assert items == [("error", 1000)]


def test_a_block_handed_over_with_two_data_lines_keeps_both() -> None:
    # Two short data lines (bytes 0-15), then one that passes piece_size=20 in its
    # "data: " prefix: the block goes on in pieces with its first two values joined.
    stream = b"data: a\ndata: b\ndata: " + b"c" * 40 + b"\n\n"
    for label, chunks in chunkings(stream):
        items, _ = feed(chunks, piece_size=20)
        assert joined(items) == [
            (Event(data="a\nb\n" + "c" * 40), 0, len(stream)),
            (EndOfStream(), None, None),
        ], label


def test_strict_errors_come_at_the_byte_after_the_pieces_before() -> None:
    # The bad byte is at 6 + 30 = 36; pieces of the 30 good bytes came before it.
    stream = b"data: " + b"a" * 30 + b"\xff" + b"b" * 10 + b"\n\n"
    for _, chunks in chunkings(stream):
        items, _ = feed(chunks, piece_size=8)
        assert items[-1] == ("error", 36)
        text = "".join(i.text for i in items[:-1])
        assert text == "a" * len(text)
    # A sequence split across chunks and left unfinished at the end of the stream.
    items, _ = feed([b"data: " + b"a" * 20, b"\xe2\x82"], piece_size=8)
    assert items[-1] == ("error", 26)


def test_end_of_stream_inside_a_pieced_event() -> None:
    items, _ = feed([b"data: " + b"a" * 20, b"\ndata: b"], piece_size=8)
    assert isinstance(items[0], DataPiece)
    assert items[-1] == EndOfStream(partial_line=7, partial_event=True)
    items, _ = feed([b"data: " + b"a" * 20], piece_size=8, errors="replace")
    assert items[-1] == EndOfStream(partial_line=26, partial_event=True)


@pytest.mark.parametrize("size", [0, -1, True, 1.5, 101])
def test_the_option_is_checked(size: Any) -> None:
    with pytest.raises(ValueError, match="piece_size"):
        Connection(piece_size=size, max_event_size=100)


def test_the_items_constructors_validate() -> None:
    piece = DataPiece(text="x")
    assert (piece.text, piece.start, piece.end, piece.raw) == ("x", -1, -1, None)
    assert repr(piece) == "DataPiece(text='x')"
    event = PiecedEvent(type="t", id="i", retry=3)
    assert (event.type, event.id, event.retry, event.start, event.end, event.raw) == (
        "t",
        "i",
        3,
        -1,
        -1,
        None,
    )
    with pytest.raises(LocalProtocolError):
        DataPiece(text=b"x")  # type: ignore[arg-type]
    with pytest.raises(LocalProtocolError):
        PiecedEvent(type="")
    with pytest.raises(LocalProtocolError):
        PiecedEvent(retry=-1)


@settings(
    max_examples=max(25, _BUDGET // 4),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data(), stream=streams(), size=st.integers(1, 100))
def test_pieces_joined_equal_the_whole_event(data: Any, stream: bytes, size: int) -> None:
    chunks = data.draw(chunked(stream), label="chunks")
    errors = data.draw(st.sampled_from(("strict", "replace")), label="errors")
    want, _ = feed(chunks, errors=errors, max_event_size=None)
    got, _ = feed(chunks, errors=errors, max_event_size=None, piece_size=size)
    got_joined, want_joined = joined(got), joined(want)
    if cut_inside_pieces(got):
        # The stream ended inside a pieced event: its pieces went out, so the end says
        # partial_event=True even where no data line of the block was complete yet
        # (b"data: xx" then the end, with piece_size=1); the docs say to discard them.
        end, start, stop = got_joined[-1]
        assert end.partial_event
        want_end = want_joined[-1][0]
        assert isinstance(want_end, EndOfStream)
        end = EndOfStream(partial_line=end.partial_line, partial_event=want_end.partial_event)
        got_joined[-1] = (end, start, stop)
    assert got_joined == want_joined


def cut_inside_pieces(items: list[Any]) -> bool:
    """Whether the items end with an EndOfStream after pieces of an unfinished event."""
    if not items or not isinstance(items[-1], EndOfStream):
        return False
    for item in reversed(items[:-1]):
        if isinstance(item, PiecedEvent):
            return False
        if isinstance(item, DataPiece):
            return True
    return False


def test_a_line_end_alone_can_make_the_data_too_big() -> None:
    # "a" is 1 byte, then each bare "data" line adds one LF: the third byte passes 2.
    items, _ = feed([b"data: a\ndata\ndata\n\n"], piece_size=2)
    assert items == [DataPiece(text="a\n\n"), PiecedEvent(), EndOfStream()]
    assert (items[0].start, items[0].end) == (0, 18)


def test_a_pieced_event_that_then_outgrows_the_limit_is_skipped() -> None:
    # Pieces of the 30 bytes go out, then the 40-byte id line passes the limit of 20
    # (counted from the end of that piece): the block ends as a SkippedEvent, whose
    # size counts the whole block, 37 + 45 = 82.
    stream = b"data: " + b"a" * 30 + b"\nid: " + b"7" * 40 + b"\n\ndata: ok\n\n"
    for _, chunks in chunkings(stream):
        items, _ = feed(chunks, piece_size=10, max_event_size=20, on_oversize="skip")
        # What was handed out is a start of the data (the rest was dropped with the block).
        text = "".join(i.text for i in items if isinstance(i, DataPiece))
        assert len(text) > 10
        assert ("a" * 30).startswith(text)
        assert [i for i in items if not isinstance(i, DataPiece)] == [
            SkippedEvent(size=82),
            Event(data="ok"),
            EndOfStream(),
        ]


def test_a_stream_cut_inside_its_first_pieced_line_is_a_partial_event() -> None:
    # Found by Hypothesis: the piece "x" went out, so the end is inside a pieced event,
    # though no data line was complete (without pieces: partial_event=False).
    items, _ = feed([b"data: xx"], piece_size=1)
    assert isinstance(items[0], DataPiece)
    assert items[-1] == EndOfStream(partial_line=8, partial_event=True)
    assert feed([b"data: xx"])[0] == [EndOfStream(partial_line=8, partial_event=False)]
    assert cut_inside_pieces(items)
    assert not cut_inside_pieces(feed([b"data: xx"])[0])
