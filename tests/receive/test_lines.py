"""Line splitting: CR, LF, CRLF, the BOM, long lines and pieces, and byte spans.

Spec: WHATWG HTML, "Parsing an event stream" (lines end with CRLF, LF or CR and with
nothing else) and "Interpreting an event stream"; WHATWG Encoding, "UTF-8 decode" (one
leading BOM is dropped).  Every expected value below is written from those rules.
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
    ReceivedItem,
    RemoteProtocolError,
)
from tests.helpers import chunkings, feed

pytestmark = pytest.mark.usefixtures("conn_cls")  # both cores: tests/conftest.py

BOM = b"\xef\xbb\xbf"
# The parser splits chunks in windows of 64 KiB; the tests that straddle window
# boundaries only need to know the size, not how the cut is made.
PIECE = 64 * 1024
END = EndOfStream()


def every_chunking(data: bytes, **options: Any) -> list[ReceivedItem]:
    """Parse ``data`` in every chunking; assert they agree; return the items."""
    expected, _ = feed([data], **options)
    for label, chunks in chunkings(data):
        items, _ = feed(chunks, **options)
        assert items == expected, label
    return expected


# ---------------------------------------------------------------- line terminators


@pytest.mark.parametrize("eol", [b"\n", b"\r", b"\r\n"], ids=["LF", "CR", "CRLF"])
def test_each_line_end_alone(eol: bytes) -> None:
    data = b"event: a" + eol + b"data: 1" + eol + b"data: 2" + eol + eol + b"data: 3" + eol + eol
    assert every_chunking(data) == [
        Event(type="a", data="1\n2"),
        Event(data="3"),
        END,
    ]


def test_mixed_line_ends_in_one_stream() -> None:
    data = b"data: a\r\ndata: b\rdata: c\n\r\ndata: d\r\r\ndata: e\n\r"
    assert every_chunking(data) == [Event(data="a\nb\nc"), Event(data="d"), Event(data="e"), END]


def test_blank_lines_alternating_crlf_and_cr() -> None:
    # Bytes: "data: a" 0-6, CRLF 7-8, CR 9 (the blank line that dispatches: end 10),
    # CRLF 10-11 and CRLF 12-13 (two more blank lines), "data: b" from 14, LF 21, LF 22.
    # 1400 repeats: longer than tests.helpers.EVERY_SPLIT_MAX, so its splits are sampled.
    stream = b"data: a\r\n\r\r\n\r\ndata: b\n\n" + b"\r\n\r" * 1400 + b"data: c\r\r"
    items = every_chunking(stream, keep_raw=True)
    assert items == [Event(data="a"), Event(data="b"), Event(data="c"), END]
    a, b, c = (item for item in items if isinstance(item, Event))
    assert (a.start, a.end, b.start, b.end) == (0, 10, 14, 23)
    assert (c.start, c.end) == (23 + 4200, 23 + 4200 + 9)
    assert a.raw == stream[:10]
    assert b.raw == stream[10:23]
    # The blank lines before it belong to no item, and nothing called take_raw(): the
    # next item's raw carries them.
    assert c.raw == stream[23:]


def test_lf_cr_is_two_line_ends() -> None:
    # "\n\r" is not a terminator pair: LF ends the data line, CR is a blank line.
    assert every_chunking(b"data: x\n\r") == [Event(data="x"), END]


def test_cr_cr_lf_is_two_line_ends() -> None:
    # CR ends the data line; the following CRLF is a single blank line.
    assert every_chunking(b"data: x\r\r\ndata: y\r\r\n") == [Event(data="x"), Event(data="y"), END]


def test_crlf_split_across_chunks_gives_no_extra_event() -> None:
    # Pitfall 1: the LF of a split CRLF must not count as a second line end (a blank
    # line would dispatch the first event early and split it in two).
    chunks = [b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n"]
    items, _ = feed(chunks)
    assert items == [Event(data="a\nb"), END]


def test_split_crlf_lf_alone_in_its_chunk() -> None:
    items, _ = feed([b"data: a\r", b"\n", b"data: b\r\n\r", b"\n", b"\n"])
    # The last LF is a line end of its own: a blank line with nothing pending.
    assert items == [Event(data="a\nb"), END]


def test_split_crlf_lf_is_only_skipped_once() -> None:
    # After the skipped LF, a second LF is a real (blank) line end and dispatches.
    items, _ = feed([b"data: a\r", b"\n\n"])
    assert items == [Event(data="a"), END]


def test_cr_ending_a_chunk_dispatches_at_once() -> None:
    # Pitfall 2: the blank line made by a trailing CR is complete; next_event() must
    # return the event before any more bytes arrive.
    conn = Connection()
    conn.receive_data(b"data: x\r\r")
    assert conn.next_event() == Event(data="x")
    assert conn.next_event() is NEED_DATA
    conn.receive_data(b"\ndata: y\r\n\r\n")
    assert conn.next_event() == Event(data="y")
    assert conn.next_event() is NEED_DATA


def test_cr_ending_a_chunk_ends_a_comment_at_once() -> None:
    conn = Connection()
    conn.receive_data(b": ping\r")
    assert conn.next_event() == Comment(text="ping")
    conn.receive_data(b"\n")
    assert conn.next_event() is NEED_DATA
    conn.receive_data(b"")
    assert conn.next_event() == END


def test_cr_at_end_of_stream_ends_the_line() -> None:
    assert every_chunking(b"data: x\r\r") == [Event(data="x"), END]


@pytest.mark.parametrize(
    "char",
    ["\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"],
    ids=["VT", "FF", "FS", "GS", "RS", "NEL", "LS", "PS"],
)
def test_other_unicode_line_breaks_are_ordinary_characters(char: str) -> None:
    # Pitfall 7: str.splitlines() would split on these; the event stream grammar only
    # knows CR and LF.
    data = f"data: a{char}b\nevent: t{char}\n: c{char}\n\n".encode()
    assert every_chunking(data) == [
        Comment(text=f"c{char}"),
        Event(type=f"t{char}", data=f"a{char}b"),
        END,
    ]


def test_nul_is_an_ordinary_character_in_data() -> None:
    assert every_chunking(b"data: a\x00b\n\n") == [Event(data="a\x00b"), END]


# Bytes next to CR (0x0D) and LF (0x0A) that are not line ends: the compiled core finds
# line ends 16 and 64 bytes at a time (_core_scan.h), so a value of every length across
# those steps, with its line end at each lane, must end exactly where CR or LF is.
NEAR_LINE_ENDS = b"\x09\x0b\x0c\x0e\x1a\x1d\x2a\x2d"


@pytest.mark.parametrize("eol", [b"\n", b"\r", b"\r\n"], ids=["LF", "CR", "CRLF"])
def test_a_line_end_at_every_offset_of_a_long_value(eol: bytes) -> None:
    values = [(NEAR_LINE_ENDS * 20)[:n] for n in range(150)]
    data = b"".join(b"data:" + v + eol + eol for v in values)
    items, _ = feed([data])
    assert items == [Event(data=v.decode()) for v in values] + [END]


@pytest.mark.parametrize("eol", [b"\n", b"\r"], ids=["LF", "CR"])
def test_the_first_of_two_line_ends_in_one_step_wins(eol: bytes) -> None:
    # Both ends inside the same 16- or 64-byte step: the earlier one ends the line.
    data = b"data:" + b"a" * 40 + eol + b"data:" + b"b" * 3 + eol + eol
    assert feed([data])[0] == [Event(data="a" * 40 + "\n" + "bbb"), END]


# ---------------------------------------------------------------- the BOM


def test_leading_bom_is_dropped() -> None:
    assert every_chunking(BOM + b"data: x\n\n") == [Event(data="x"), END]


def test_leading_bom_before_a_field_name_keeps_the_field_name_intact() -> None:
    # Were the BOM kept, the field would be "\ufeffdata" and be ignored.
    items, _ = feed([BOM + b"data: x\n\n"])
    assert items == [Event(data="x"), END]


@pytest.mark.parametrize(
    "chunks",
    [
        [BOM[:1], BOM[1:] + b"data: x\n\n"],
        [BOM[:2], BOM[2:] + b"data: x\n\n"],
        [BOM[:1], BOM[1:2], BOM[2:], b"data: x\n\n"],
        [BOM[:1], BOM[1:2], BOM[2:] + b"data: x\n\n"],
    ],
    ids=["1+2", "2+1", "1+1+1", "1+1+1-with-data"],
)
def test_leading_bom_split_over_chunks(chunks: list[bytes]) -> None:
    conn = Connection()
    for chunk in chunks[:-1]:
        conn.receive_data(chunk)
        # Nothing complete yet (and nothing decided about the BOM before byte three).
        assert conn.next_event() is NEED_DATA
    conn.receive_data(chunks[-1])
    items = []
    while (item := conn.next_event()) is not NEED_DATA:
        items.append(item)
    assert items == [Event(data="x")]


def test_second_bom_is_data() -> None:
    # Only the very first one is dropped; the second becomes part of the field name.
    data = BOM + BOM + b"data: x\n\ndata: y\n\n"
    assert every_chunking(data) == [Event(data="y"), END]


def test_bom_inside_a_value_is_kept() -> None:
    data = b"data: " + BOM + b"x\n\n" + BOM + b"data: y\n\n"
    assert every_chunking(data) == [Event(data="\ufeffx"), END]


def test_bom_after_a_blank_line_is_not_dropped() -> None:
    assert every_chunking(b"\n" + BOM + b"data: x\n\n") == [END]


@pytest.mark.parametrize("prefix", [BOM[:1], BOM[:2]], ids=["EF", "EFBB"])
def test_partial_bom_followed_by_other_bytes_is_data(prefix: bytes) -> None:
    # EF or EF BB then ASCII: not a BOM; in strict mode invalid UTF-8 at offset 0, in
    # replace mode U+FFFD in the field name, which is then an unknown field.
    data = prefix + b"data: x\n\ndata: y\n\n"
    for label, chunks in chunkings(data):
        with pytest.raises(RemoteProtocolError) as info:
            feed(chunks)
        assert info.value.offset == 0, label
        assert info.value.items == [], label  # type: ignore[attr-defined]
    assert every_chunking(data, errors="replace") == [Event(data="y"), END]


def test_partial_bom_prefix_then_comment_in_replace_mode() -> None:
    # "\ufffd:c" is not a comment (the line does not start with a colon): a field
    # named "\ufffd" with value "c", ignored.
    assert every_chunking(BOM[:2] + b":c\n\n", errors="replace") == [END]


@pytest.mark.parametrize("prefix", [b"", BOM[:1], BOM[:2]], ids=["empty", "EF", "EFBB"])
def test_stream_ending_inside_the_bom(prefix: bytes) -> None:
    items, _ = feed([prefix], errors="replace")
    assert items == [EndOfStream(partial_line=len(prefix))]


def test_stream_of_only_a_bom() -> None:
    items, _ = feed([BOM])
    assert items == [END]


# ---------------------------------------------------------------- long lines and pieces


@pytest.mark.parametrize("eol", [b"\n", b"\r", b"\r\n"], ids=["LF", "CR", "CRLF"])
@pytest.mark.parametrize("size", [PIECE - 1, PIECE, PIECE + 1, 3 * PIECE + 7])
def test_line_longer_than_a_piece(eol: bytes, size: int) -> None:
    value = ("0123456789" * (size // 10 + 1))[:size]
    data = b"data: " + value.encode() + eol + b"data: tail" + eol + eol + b": c" + eol
    expected = [Event(data=value + "\ntail"), Comment(text="c"), END]
    for chunks in (
        [data],
        [data[i : i + 4096] for i in range(0, len(data), 4096)],
        [data[i : i + PIECE - 1] for i in range(0, len(data), PIECE - 1)],
        [data[: len(data) // 2], data[len(data) // 2 :]],
    ):
        items, _ = feed(chunks)
        assert items == expected


def test_long_line_one_byte_at_a_time() -> None:
    value = "x" * (PIECE + 100)
    data = b"data: " + value.encode() + b"\n\n"
    items, _ = feed([data[i : i + 1] for i in range(len(data))])
    assert items == [Event(data=value), END]
    assert items[0].span == (0, len(data))  # type: ignore[union-attr]


def _straddling_stream(pad: int, eol: bytes) -> tuple[bytes, list[ReceivedItem], list[int]]:
    """A comment of ``pad`` bytes, one big event, then small events across a piece end.

    Returns the bytes, the expected items and the expected start offset of each item.
    The big event fills most of the first piece, so that only a few small events are
    needed to reach its end; moving ``pad`` moves the piece boundary through every byte
    of a small event, its line ends included.
    """
    head = b":" + b"p" * pad + eol
    big = "z" * (PIECE - 300)
    items: list[ReceivedItem] = [Comment(text="p" * pad), Event(data=big)]
    parts = [head, b"data: " + big.encode() + eol + eol]
    starts = [0, len(head)]
    offset = len(head) + len(parts[1])
    number = 0
    while offset < PIECE + 200:
        block = b"id: " + str(number).encode() + eol + b"data: " + b"d" * 5 + eol + eol
        parts.append(block)
        items.append(Event(data="ddddd", id=str(number)))
        starts.append(offset)
        offset += len(block)
        number += 1
    return b"".join(parts), [*items, END], starts


@pytest.mark.parametrize("eol", [b"\n", b"\r", b"\r\n"], ids=["LF", "CR", "CRLF"])
def test_events_straddling_piece_boundaries(eol: bytes) -> None:
    # Events are 18..25 bytes long; 26 paddings put the boundary at every byte of one.
    for pad in range(26):
        data, expected, starts = _straddling_stream(pad, eol)
        for chunks in (
            [data],
            [data[:PIECE], data[PIECE:]],
            [data[i : i + 1000] for i in range(0, len(data), 1000)],
            [data[: PIECE - 100], *(data[i : i + 7] for i in range(PIECE - 100, len(data), 7))],
        ):
            items, conn = feed(chunks)
            assert items == expected, (pad, len(chunks))
            if len(chunks) == 1:
                assert [i.start for i in items[:-1]] == starts  # type: ignore[union-attr]
                ends = [*starts[1:], len(data)]
                assert [i.end for i in items[:-1]] == ends  # type: ignore[union-attr]
            assert conn.last_event_id == expected[-2].id  # type: ignore[union-attr]


def test_crlf_straddling_the_end_of_a_piece() -> None:
    # Put the CR of a CRLF at every position around the first piece's end, once with
    # its LF in the same chunk and once with the LF in the next chunk.
    for shift in range(-3, 4):
        line = b"data: " + b"a" * (PIECE + shift - 8) + b"\r\n"
        data = b":\r\n" + line + b"\r\ndata: b\r\n\r\n"
        cr_at = data.index(b"\r", 3)
        expected = [Comment(), Event(data="a" * (PIECE + shift - 8)), Event(data="b"), END]
        for chunks in ([data], [data[: cr_at + 1], data[cr_at + 1 :]]):
            items, _ = feed(chunks)
            assert items == expected, shift


def test_many_events_in_one_chunk_are_returned_one_per_call() -> None:
    # A chunk holding several pieces' worth of events; each next_event() gives one.
    block = b"data: 0123456789\n\n"
    count = 3 * PIECE // len(block)
    conn = Connection()
    conn.receive_data(block * count)
    for _ in range(count):
        assert conn.next_event() == Event(data="0123456789")
    assert conn.next_event() is NEED_DATA


# ---------------------------------------------------------------- spans


def test_spans_computed_by_hand() -> None:
    # Offsets: ": hello\n" 0-8, blank 8-9, "event: e\n" 9-18, "data: 1\n" 18-26,
    # blank 26-27 (dispatch), blanks 27-28 and 28-29, "data: 22\r\n" 29-39,
    # ": in\r\n" 39-45, blank 45-47 (dispatch), ":\r" 47-49, "id: 9\r" 49-55, blank 55-56.
    data = b": hello\n\nevent: e\ndata: 1\n\n\n\ndata: 22\r\n: in\r\n\r\n:\rid: 9\r\r"
    assert len(data) == 56
    items = every_chunking(data)
    assert items == [
        Comment(text="hello"),
        Event(type="e", data="1"),
        Comment(text="in"),
        Event(data="22"),
        Comment(text=""),
        END,
    ]
    spans = [i.span for i in items[:-1]]  # type: ignore[union-attr]
    assert spans == [(0, 8), (9, 27), (39, 45), (29, 47), (47, 49)]


def test_spans_count_the_bom() -> None:
    data = BOM + b": c\ndata: x\n\n"
    items, _ = feed([data])
    assert [i.span for i in items[:-1]] == [(3, 7), (7, 16)]  # type: ignore[union-attr]


def test_event_span_starts_at_its_first_field_line_not_at_comments_or_blank_lines() -> None:
    data = b"\n\n: c\nretry: 5\ndata: x\n\n"
    items, _ = feed([data])
    assert items[:2] == [Comment(text="c"), Event(data="x", retry=5)]
    assert items[0].span == (2, 6)  # type: ignore[union-attr]
    # The retry line (offset 6) is the event's first field line.
    assert items[1].span == (6, len(data))  # type: ignore[union-attr]


def test_spans_with_multibyte_text_are_in_bytes() -> None:
    data = "data: 你好\n\n: é\n".encode()
    items, _ = feed([data])
    assert [i.span for i in items[:-1]] == [(0, 14), (14, 19)]  # type: ignore[union-attr]


def test_spans_are_the_same_in_every_chunking_when_no_crlf_is_split() -> None:
    data = BOM + b"data: a\n\n: c\ndata: b\n\n"
    expected = [(3, 12), (12, 16), (16, 25)]
    for label, chunks in chunkings(data):
        items, _ = feed(chunks)
        assert [i.span for i in items[:-1]] == expected, label  # type: ignore[union-attr]


def test_span_of_an_event_dispatched_by_a_cr_that_ends_a_chunk() -> None:
    # The CR is processed at once, before the LF exists: the event ends after the CR,
    # and the LF (which belongs to no item) starts the gap before the next event.
    items, _ = feed([b"data: a\r\n\r", b"\ndata: b\r\n\r\n"])
    assert items == [Event(data="a"), Event(data="b"), END]
    assert [i.span for i in items[:-1]] == [(0, 10), (11, 22)]  # type: ignore[union-attr]


def test_mixed_line_ends_over_several_pieces() -> None:
    # Every event changes line end, and some mix them inside one event: the parser's
    # pieces are cut short at each change.  Long enough to span several pieces.
    eols = [b"\n", b"\r", b"\r\n"]
    parts: list[bytes] = []
    expected: list[ReceivedItem] = []
    spans = []
    offset = 0
    number = 0
    while offset < 2 * PIECE + 500:
        eol = eols[number % 3]
        if number % 7 == 6:
            block = b"id: m\r\ndata: a\rdata: b\n: c\r\n" + eol
            expected += [Comment(text="c"), Event(data="a\nb", id="m")]
            spans += [(offset + 23, offset + 28), (offset, offset + len(block))]
        else:
            block = b"data: " + str(number).encode() + eol + eol
            expected.append(Event(data=str(number), id="" if number < 6 else "m"))
            spans.append((offset, offset + len(block)))
        parts.append(block)
        offset += len(block)
        number += 1
    data = b"".join(parts)
    for chunks in (
        [data],
        [data[i : i + 1] for i in range(len(data))],
        [data[i : i + 4093] for i in range(0, len(data), 4093)],
    ):
        items, _ = feed(chunks)
        assert items == [*expected, END], len(chunks)
        if len(chunks) == 1:
            assert [i.span for i in items[:-1]] == spans  # type: ignore[union-attr]


@pytest.mark.parametrize("prefix", [BOM[:1], BOM[:2]], ids=["EF", "EFBB"])
def test_stream_ending_inside_the_bom_is_an_error_in_strict_mode(prefix: bytes) -> None:
    # An unfinished UTF-8 sequence at end of stream, at offset 0.
    with pytest.raises(RemoteProtocolError) as info:
        feed([prefix])
    assert info.value.offset == 0
