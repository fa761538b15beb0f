"""Hostile input: every refusal says what was wrong and where, after the good items.

Each case is run under every chunking (sse_sansio.testing.assert_chunking_invariant):
the items completed before the bad byte are delivered, then a RemoteProtocolError whose
message names the problem and ends with "at byte offset N", and whose ``offset`` is N.
Once failed, the connection stays failed.
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
    LocalProtocolError,
    ReceivedItem,
    RemoteProtocolError,
    serialize,
)
from sse_sansio.testing import assert_chunking_invariant

pytestmark = pytest.mark.usefixtures("conn_cls")  # both cores: tests/conftest.py


def refused(data: bytes, **options: Any) -> tuple[list[ReceivedItem], RemoteProtocolError]:
    """The items and the error, identical under every chunking (or AssertionError)."""
    outcome = assert_chunking_invariant(data, seeds=3, max_every_split=300, **options)
    assert outcome.error is not None, "the stream was accepted"
    return outcome.results, outcome.error


# A sequence cut short, by a line end or by the end of the stream: CPython's codec (whose
# reason the message quotes) sees the line without its line end.
TRUNCATED = "unexpected end of data"

# (id, stream, offset of the bad byte, what the message must say, items before)
UTF8_CASES = [
    ("lone-continuation", b"data: a\n\ndata: \x80\n\n", 15, "invalid start byte", 1),
    ("bad-continuation", b"data: \xe2\x28\xa1\n\n", 6, "invalid continuation byte", 0),
    ("overlong-nul", b"data: \xc0\x80\n\n", 6, "invalid start byte", 0),
    ("surrogate", b": ok\ndata: \xed\xa0\x80\n\n", 11, "invalid continuation byte", 1),
    ("beyond-u10ffff", b"data: \xf4\x90\x80\x80\n\n", 6, "invalid continuation byte", 0),
    ("never-valid-ff", b"data: x\n\n\xff\n", 9, "invalid start byte", 1),
    ("in-comment", b"data: 1\n\n: caf\xe9\n", 14, TRUNCATED, 1),
    ("in-field-name", b"da\xfeta: x\n\n", 2, "invalid start byte", 0),
    ("in-event-type", b"event: \xc3\n\n", 7, TRUNCATED, 0),
    ("in-id", b"data: a\nid: 1\xff\n\n", 13, "invalid start byte", 0),
    ("in-retry", b"retry: 1\xa0\n\n", 8, "invalid start byte", 0),
    ("after-bom", b"\xef\xbb\xbf: \xff\n", 5, "invalid start byte", 0),
    ("broken-bom", b"\xef\xbb\ndata: x\n\n", 0, TRUNCATED, 0),
    ("truncated-before-lf", b"data: \xe2\x82\n\n", 6, TRUNCATED, 0),
    ("truncated-at-eof", b"data: a\n\n: \xe2\x82", 11, TRUNCATED, 1),
    ("invalid-in-partial-line", b"data: a\n\ndata: b\xff", 16, "invalid start byte", 1),
    ("crlf-then-bad", b"data: a\r\n\r\n\xf0\x9f\x98\r\n", 11, TRUNCATED, 1),
]


@pytest.mark.parametrize(
    ("stream", "offset", "reason", "n_before"),
    [case[1:] for case in UTF8_CASES],
    ids=[case[0] for case in UTF8_CASES],
)
def test_invalid_utf8_is_reported_with_reason_and_offset(
    stream: bytes, offset: int, reason: str, n_before: int
) -> None:
    items, error = refused(stream)
    message = str(error)
    assert message.startswith("invalid UTF-8")
    assert reason in message
    assert message.endswith(f"at byte offset {offset}")
    assert error.offset == offset
    assert len(items) == n_before
    assert not any(isinstance(item, EndOfStream) for item in items)
    if stream.endswith((b"\n", b"\r")):
        assert "end of stream" not in message
    else:
        assert "at end of stream" in message
    # The same bytes decoded like a browser are accepted, the byte as U+FFFD.
    outcome = assert_chunking_invariant(stream, seeds=1, max_every_split=50, errors="replace")
    assert outcome.error is None


def test_items_before_the_bad_byte_are_delivered_exactly() -> None:
    stream = b"id: 1\ndata: a\n\n: ping\nevent: x\ndata: b\n\ndata: \xff\n\n"
    items, error = refused(stream)
    assert items == [
        Event(data="a", id="1"),
        Comment(text="ping"),
        Event(type="x", data="b", id="1"),
    ]
    assert error.offset == stream.index(b"\xff")


# The limit counts a block's bytes from its first line (comments and earlier line ends
# included) to the end of the current line's text; a line still arriving counts with
# what it has.  The offset is where the block starts plus the limit.
# (id, stream, limit, offset, items before)
SIZE_CASES = [
    ("one-long-line", b"data: 0123456789\n\n", 10, 10, 0),
    ("line-end-tips-it", b"data: 01234\n\n", 11, 11, 0),
    ("partial-line", b"data: x\n\ndata: 0123456789012345", 12, 21, 1),
    # Comments among a block's fields count; those before its first field do not.
    ("comments-among-fields-count", b"data: x\n: aaaa\n: bbbb\n\n", 15, 15, 1),
    ("second-block", b"data: 1\n\ndata: 123456789\n\n", 12, 9 + 12, 1),
    # A leading BOM is no part of the first block, which starts at 3.
    ("after-bom", b"\xef\xbb\xbfdata: 1234\n\n", 10, 3 + 10, 0),
    # The block's earlier line ends count, CRLF as two bytes, whatever the chunking.
    ("crlf-line-ends", b"data: 1\r\n\r\ndata: 12\r\n\r\n", 9, 11 + 9, 1),
    ("id-only-block-then-big", b"id: 1\n\ndata: 0123456789\n\n", 12, 19, 0),
    ("size-before-utf8", b"data: \xff" + b"x" * 20 + b"\n\n", 10, 10, 0),
    # A comment line still counts while it arrives, from its own start.
    ("long-comment-line", b": x\n" * 100 + b": " + b"y" * 70, 64, 400 + 64, 100),
]


@pytest.mark.parametrize(
    ("stream", "limit", "offset", "n_before"),
    [case[1:] for case in SIZE_CASES],
    ids=[case[0] for case in SIZE_CASES],
)
def test_oversized_event_is_reported_with_limit_and_offset(
    stream: bytes, limit: int, offset: int, n_before: int
) -> None:
    items, error = refused(stream, max_event_size=limit)
    assert str(error) == f"event exceeds max_event_size={limit} bytes at byte offset {offset}"
    assert error.offset == offset
    assert len(items) == n_before


@pytest.mark.parametrize(
    ("stream", "limit"),
    [
        (b"data: 12345\n\n" * 3, 13),  # each block exactly at the limit
        (b"\n" * 50, 1),  # blank lines each end an (empty) block
        (b"\xef\xbb\xbfdata: 1234\n\n", 11),
        (b"data: 1\r\n\r\ndata: 2\r\n\r\n", 9),
        (b"id: 1\n\nid: 2\n\n", 7),
    ],
)
def test_events_at_the_limit_pass(stream: bytes, limit: int) -> None:
    outcome = assert_chunking_invariant(stream, seeds=2, max_event_size=limit)
    assert outcome.error is None
    assert outcome.results[-1] == EndOfStream()


def _failed_connection() -> tuple[Connection, RemoteProtocolError]:
    conn = Connection(max_event_size=30)
    conn.receive_data(b"id: 9\nretry: 5\ndata: a\n\ndata: \xff\n\n")
    assert conn.next_event() == Event(data="a", id="9", retry=5)
    with pytest.raises(RemoteProtocolError) as info:
        conn.next_event()
    return conn, info.value


def test_the_connection_stays_failed() -> None:
    conn, first = _failed_connection()
    for call in (
        conn.next_event,
        lambda: conn.receive_data(b"data: fine\n\n"),
        lambda: conn.receive_data(b""),
        conn.next_event,
    ):
        with pytest.raises(RemoteProtocolError) as info:
            call()
        assert str(info.value) == str(first)
        assert info.value.offset == first.offset == 30
    # What was learnt before the error is still there for a reconnect.
    assert conn.last_event_id == "9"
    assert conn.retry == 5


def test_size_error_is_sticky_while_waiting_for_data() -> None:
    conn = Connection(max_event_size=8)
    conn.receive_data(b"data: 1234")
    with pytest.raises(RemoteProtocolError) as info:
        conn.next_event()
    assert info.value.offset == 8
    with pytest.raises(RemoteProtocolError):
        conn.receive_data(b"\n\n")


def test_local_misuse_does_not_fail_the_connection() -> None:
    conn = Connection()
    conn.receive_data(b"data: a\n\n")
    conn.receive_data(b"")
    with pytest.raises(LocalProtocolError, match="after end of stream"):
        conn.receive_data(b"data: b\n\n")
    assert conn.next_event() == Event(data="a")
    assert conn.next_event() == EndOfStream()
    assert conn.next_event() == EndOfStream()


def test_need_data_never_hides_a_complete_line() -> None:
    # A hostile peer may stop sending mid-stream: everything complete is out already.
    conn = Connection()
    conn.receive_data(b"data: a\r\n\r\n: keepalive\rdata: b\n")
    assert [conn.next_event() for _ in range(3)] == [
        Event(data="a"),
        Comment(text="keepalive"),
        NEED_DATA,
    ]


# --------------------------------------------------------------------------- injection


@pytest.mark.parametrize("bad", ["\n", "\r", "\r\n", "a\nid: 1", "x\rdata: evil"])
def test_line_breaks_in_type_id_or_comment_are_refused(bad: str) -> None:
    for build in (
        lambda: Event(type=bad),
        lambda: Event(id=bad),
        lambda: Comment(text=bad),
    ):
        with pytest.raises(LocalProtocolError, match="may not contain"):
            build()


def test_nul_in_id_is_refused() -> None:
    with pytest.raises(LocalProtocolError, match="may not contain"):
        Event(id="a\0b")


@pytest.mark.parametrize(
    "text",
    ["\x85", "\u2028", "\u2029", "\x0b", "\x0c", "\ufeff", " lead", "a:b", ": x", "\x00", "é中😀"],
)
def test_unusual_characters_round_trip(text: str) -> None:
    # Characters that other line-splitting rules treat as line ends are ordinary in SSE.
    event = Event(type="t" + text, data=text + "\n" + text, id=text.replace("\x00", ""))
    comment = Comment(text=text)
    outcome = assert_chunking_invariant(serialize(event) + serialize(comment), seeds=2)
    assert outcome.results == [event, comment, EndOfStream()]


# --------------------------------------------------------------------------- big lines

SPILL = 256 * 1024


def _big_line_chunkings(stream: bytes) -> list[list[bytes]]:
    """Chunkings of a line past SPILL: small, odd-sized and big chunks, and ones that end
    the line's text exactly at a chunk end (its line end then starts the next chunk)."""
    line_end = stream.index(b"\n") if b"\n" in stream else len(stream)
    out = [[stream]]
    for size in (4093, 65536, SPILL + 1):
        out.append([stream[i : i + size] for i in range(0, len(stream), size)])
    out.append([stream[:line_end], stream[line_end:]])
    out.append([stream[i : min(i + 4096, line_end)] for i in range(0, line_end, 4096)])
    out[-1].append(stream[line_end:])
    return [[c for c in chunks if c] for chunks in out]


@pytest.mark.slow  # an exhaustive search: every split of big inputs
@pytest.mark.parametrize(
    ("name", "stream"),
    [
        ("ascii", b"data: " + b"a" * (3 * SPILL) + b"\n\ndata: next\n\n"),
        # Three-byte characters: spills cut them at every possible byte.
        ("cjk", b"data: " + "中".encode() * SPILL + b"\n\n"),
        ("bad byte early", b"data: " + b"a" * 1000 + b"\xff" + b"a" * (2 * SPILL) + b"\n\n"),
        ("bad byte late", b"data: ok\n\ndata: " + b"a" * (2 * SPILL) + b"\xc3(\n\n"),
        ("cut at the end", b"data: " + "é".encode() * SPILL + b"\xe4\xb8"),
        ("bad and cut at the end", b": " + b"a" * (SPILL + 5) + b"\xff" + b"a" * SPILL),
        ("comment", b": " + b"b" * (2 * SPILL) + b"\r\n\r\ndata: x\r\n\r\n"),
    ],
)
def test_big_lines_agree_with_the_model(name: str, stream: bytes) -> None:
    from tests.helpers.differential import check

    splits = _big_line_chunkings(stream)
    for errors in ("strict", "replace"):
        check(stream, splits, errors=errors, max_event_size=None)
    for limit in (SPILL - 1, SPILL + 7, 2 * SPILL + 6, len(stream)):
        check(stream, splits, errors="strict", max_event_size=limit)


def test_a_crlf_split_across_chunks_counts_toward_the_limit_of_the_next_line() -> None:
    # The LF that completes a CRLF arrives alone; the line after it is cut off by the
    # end of the stream, one byte within, at or past the limit.
    from tests.helpers.differential import check

    for n in range(3):
        stream = b"data: a\r\n" + b"data: " + b"b" * (10 + n)
        bytewise = [stream[i : i + 1] for i in range(9, len(stream))]
        splits = [[b"data: a\r", b"\n", stream[9:]], [b"data: a\r", b"\n", *bytewise]]
        check(stream, splits, errors="strict", max_event_size=25)
