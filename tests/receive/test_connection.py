"""The Connection contract: NEED_DATA, one item per call, end of stream, errors, limits,
the last event ID and reconnection time, argument checks, and keep_raw mode.

Expected values come from the WHATWG "Interpreting an event stream" rules and from the
documented API, never from running the parser.
"""

from __future__ import annotations

import sys
import typing
from collections.abc import Iterable
from typing import Any

import pytest

import sse_sansio
from sse_sansio import (
    DEFAULT_MAX_EVENT_SIZE,
    NEED_DATA,
    Comment,
    Connection,
    EndOfStream,
    Event,
    LocalProtocolError,
    NeedData,
    ProtocolError,
    ReceivedItem,
    RemoteProtocolError,
)
from tests.helpers import chunkings, drain, feed, remote_error

pytestmark = pytest.mark.usefixtures("conn_cls")  # both cores: tests/conftest.py

END = EndOfStream()


def parse(data: bytes, **options: Any) -> list[ReceivedItem]:
    """Items of ``data`` fed whole, then end of stream."""
    return feed([data], **options)[0]


def error_in_every_chunking(data: bytes, **options: Any) -> tuple[int, list[ReceivedItem]]:
    """The error of ``data``, asserted to be the same in every chunking."""
    expected = remote_error([data], **options)
    for label, chunks in chunkings(data):
        assert remote_error(chunks, **options) == expected, label
    return expected


# ---------------------------------------------------------------- the pull contract


def test_fresh_connection_needs_data() -> None:
    conn = Connection()
    assert conn.next_event() is NEED_DATA
    assert conn.next_event() is NEED_DATA
    assert isinstance(NEED_DATA, NeedData)
    assert repr(NEED_DATA) == "NEED_DATA"


def test_incomplete_line_needs_data() -> None:
    conn = Connection()
    conn.receive_data(b"data: x")
    assert conn.next_event() is NEED_DATA
    conn.receive_data(b"\n")
    assert conn.next_event() is NEED_DATA  # a data line alone dispatches nothing
    conn.receive_data(b"\n")
    assert conn.next_event() == Event(data="x")
    assert conn.next_event() is NEED_DATA


def test_receive_data_only_buffers() -> None:
    conn = Connection()
    conn.receive_data(b"id: 1\nretry: 5\ndata: x\n\n")
    # Nothing is interpreted until next_event() is called.
    assert conn.last_event_id == ""
    assert conn.retry is None
    assert conn.next_event() == Event(data="x", id="1", retry=5)
    assert conn.last_event_id == "1"
    assert conn.retry == 5


def test_next_event_parses_one_item_per_call() -> None:
    conn = Connection()
    conn.receive_data(b"id: 1\ndata: a\n\n: c\nid: 2\nretry: 7\ndata: b\n\n")
    assert conn.next_event() == Event(data="a", id="1")
    # The rest is not parsed yet: the id and retry of the second block are pending.
    assert conn.last_event_id == "1"
    assert conn.retry is None
    assert conn.next_event() == Comment(text="c")
    assert conn.last_event_id == "1"
    assert conn.next_event() == Event(data="b", id="2", retry=7)
    assert conn.last_event_id == "2"
    assert conn.retry == 7
    assert conn.next_event() is NEED_DATA


def test_three_events_in_one_chunk_give_three_items() -> None:
    conn = Connection()
    conn.receive_data(b"data: 1\n\ndata: 2\n\ndata: 3\n\n")
    assert conn.next_event() == Event(data="1")
    assert conn.next_event() == Event(data="2")
    assert conn.next_event() == Event(data="3")
    assert conn.next_event() is NEED_DATA


def test_more_data_between_pulls_keeps_order() -> None:
    conn = Connection()
    conn.receive_data(b"data: 1\n\ndata: 2\n\n")
    assert conn.next_event() == Event(data="1")
    conn.receive_data(b"data: 3\n\n")
    assert drain(conn) == [Event(data="2"), Event(data="3")]


@pytest.mark.parametrize("keep_raw", [False, True])
@pytest.mark.parametrize(
    "chunks",
    [
        # Several chunks queued before the first pull, the first of them starting what
        # may be a BOM (the look-ahead puts bytes back in front of the queue).
        [b"\xef", b"\xbb", b"\xbf", b"data: 1\n", b"\n", b"data: 2\n\n"],
        [b"d", b"ata: 1\n\n", b"data: 2\n\n"],
        [b"d", b"ata: 1", b"\n\n", b"data: 2\n\n"],
        [b"data: 1\n\n", b"data:", b" 2\n", b"\n"],
    ],
)
def test_chunks_queued_before_any_pull_keep_their_order(
    chunks: list[bytes], keep_raw: bool
) -> None:
    conn = Connection(keep_raw=keep_raw)
    for chunk in chunks:
        conn.receive_data(chunk)
    assert drain(conn) == [Event(data="1"), Event(data="2")]
    # Fed again, between pulls this time: the queue empties and fills as before.
    conn.receive_data(b"data: 3\n")
    conn.receive_data(b"\n")
    conn.receive_data(b"data: 4\n\n")
    assert drain(conn) == [Event(data="3"), Event(data="4")]


# ---------------------------------------------------------------- end of stream


def test_empty_stream_ends_cleanly() -> None:
    conn = Connection()
    conn.receive_data(b"")
    end = conn.next_event()
    assert end == EndOfStream(partial_line=0, partial_event=False)
    assert not end.truncated  # type: ignore[union-attr]


def test_end_of_stream_twice_is_harmless() -> None:
    conn = Connection()
    conn.receive_data(b"data: x\n\n")
    conn.receive_data(b"")
    conn.receive_data(b"")
    assert conn.next_event() == Event(data="x")
    assert conn.next_event() == END
    conn.receive_data(b"")  # still harmless after the end was reported
    assert conn.next_event() == END


@pytest.mark.parametrize("empty", [b"", bytearray(), memoryview(b"")], ids=type)
def test_any_empty_buffer_ends_the_stream(empty: Any) -> None:
    conn = Connection()
    conn.receive_data(b"data: x\n\n")
    conn.receive_data(empty)
    assert drain(conn) == [Event(data="x"), END]


def test_same_end_of_stream_on_every_later_call() -> None:
    conn = Connection()
    conn.receive_data(b"data: x")
    conn.receive_data(b"")
    first = conn.next_event()
    assert first == EndOfStream(partial_line=7)
    for _ in range(3):
        assert conn.next_event() is first


def test_items_come_before_end_of_stream() -> None:
    conn = Connection()
    conn.receive_data(b"data: 1\n\n: c\n")
    conn.receive_data(b"")
    assert conn.next_event() == Event(data="1")
    assert conn.next_event() == Comment(text="c")
    assert conn.next_event() == END


@pytest.mark.parametrize(
    ("data", "partial_line", "partial_event"),
    [
        (b"data: x\n\n", 0, False),
        (b"data: x\n\n: c\n", 0, False),
        (b"data: x", 7, False),
        ("data: 你".encode(), 9, False),
        (b"data: x\n", 0, True),
        (b"data: x\ndata: y", 7, True),
        (b"data\n", 0, True),  # an empty data line still makes a partial event
        (b"event: e\nid: 1\n", 0, False),  # no data: nothing would have been dispatched
        (b"event: e\nid: 1\nretry: 3", 8, False),
        (b"data: x\r", 0, True),
        (b": comment", 9, False),
        (b"\n\n\n", 0, False),
    ],
)
def test_end_of_stream_fields(data: bytes, partial_line: int, partial_event: bool) -> None:
    expected = EndOfStream(partial_line=partial_line, partial_event=partial_event)
    for label, chunks in chunkings(data):
        items, _ = feed(chunks)
        assert items[-1] == expected, label
        assert items[-1].truncated == (partial_line > 0 or partial_event)  # type: ignore[union-attr]


def test_end_of_stream_never_dispatches_or_sets_last_event_id() -> None:
    # Spec: "If the file ends in the middle of an event, before the final empty line,
    # the incomplete event is not dispatched."  The id buffer is only copied at a blank
    # line, so an id in the cut-off block never becomes the last event ID.
    items, conn = feed([b"id: 1\n\nid: 2\ndata: x\n"])
    assert items == [EndOfStream(partial_event=True)]
    assert conn.last_event_id == "1"


def test_retry_takes_effect_even_if_its_block_is_cut_off() -> None:
    items, conn = feed([b"retry: 1500\ndata: x\n"])
    assert items == [EndOfStream(partial_event=True)]
    assert conn.retry == 1500


def test_data_after_end_of_stream_is_a_local_error_and_changes_nothing() -> None:
    conn = Connection()
    conn.receive_data(b"data: x\n\n")
    conn.receive_data(b"")
    with pytest.raises(LocalProtocolError):
        conn.receive_data(b"data: y\n\n")
    assert drain(conn) == [Event(data="x"), END]
    with pytest.raises(LocalProtocolError):
        conn.receive_data(bytearray(b"z"))
    assert conn.next_event() == END


@pytest.mark.parametrize("bad", ["data: x\n\n", "", 1, None, [b"x"], 3.0], ids=repr)
def test_receive_data_rejects_other_types(bad: Any) -> None:
    conn = Connection()
    with pytest.raises(TypeError):
        conn.receive_data(bad)
    # Nothing happened: the connection still works.
    conn.receive_data(b"data: ok\n\n")
    assert conn.next_event() == Event(data="ok")


# ---------------------------------------------------------------- input buffer types


def test_bytearray_and_memoryview_input() -> None:
    conn = Connection()
    conn.receive_data(bytearray(b"data: a\n"))
    conn.receive_data(memoryview(b"xxdata: b\n\n")[2:])
    conn.receive_data(memoryview(bytearray(b"data: c\n\n")))
    assert drain(conn) == [Event(data="a\nb"), Event(data="c")]


def test_mutating_the_callers_buffer_after_receive_data_changes_nothing() -> None:
    conn = Connection()
    buffer = bytearray(b"data: one\n")
    conn.receive_data(buffer)
    view_source = bytearray(b"data: two\n\n")
    conn.receive_data(memoryview(view_source))
    buffer[:] = b"data: XXX\n\n\n"
    view_source[:4] = b"junk"
    assert drain(conn) == [Event(data="one\ntwo")]


def test_reusing_one_bytearray_for_every_read() -> None:
    # What a socket loop with recv_into() does: one buffer, overwritten each time.
    conn = Connection()
    buffer = bytearray(4)
    data = b"data: abc\n\ndata: def\n\n"
    items = []
    for i in range(0, len(data), 4):
        chunk = data[i : i + 4]
        buffer[: len(chunk)] = chunk
        conn.receive_data(memoryview(buffer)[: len(chunk)])
        items.extend(drain(conn))
    assert items == [Event(data="abc"), Event(data="def")]


# ---------------------------------------------------------------- invalid UTF-8


@pytest.mark.parametrize(
    ("data", "offset", "before"),
    [
        (b"data: ok\n\ndata: a\xffb\n\n", 17, [Event(data="ok")]),  # in data
        (b"data: ok\n\n: \xfe\n", 12, [Event(data="ok")]),  # in a comment
        (b": fine\nda\xc3ta: x\n\n", 9, [Comment(text="fine")]),  # in a field name
        (b"event: \xe4\xbd\n\n", 7, []),  # sequence cut by the line end
        (b"data: \xed\xa0\x80\n\n", 6, []),  # an encoded surrogate
        (b"data: \xc0\xaf\n\n", 6, []),  # an overlong encoding
        (b"data: \xf4\x90\x80\x80\n\n", 6, []),  # beyond U+10FFFF
    ],
    ids=["data", "comment", "field-name", "cut-sequence", "surrogate", "overlong", "too-big"],
)
def test_invalid_utf8_offset_in_strict_mode(
    data: bytes, offset: int, before: list[ReceivedItem]
) -> None:
    assert error_in_every_chunking(data) == (offset, before)


def test_incomplete_utf8_at_end_of_stream_is_an_error() -> None:
    data = b"data: x\n\ndata: \xe4\xbd"
    conn = Connection()
    conn.receive_data(data)
    # Not an error yet: the rest of the character may still arrive.
    assert drain(conn) == [Event(data="x")]
    conn.receive_data(b"")
    with pytest.raises(RemoteProtocolError) as info:
        conn.next_event()
    assert info.value.offset == 15
    assert error_in_every_chunking(data) == (15, [Event(data="x")])


def test_invalid_byte_in_unterminated_last_line_is_an_error_at_end_of_stream() -> None:
    assert error_in_every_chunking(b"data: x\n\n: a\x80") == (12, [Event(data="x")])


def test_complete_characters_split_across_chunks_are_not_errors() -> None:
    data = "data: 你好🙂é\n\n".encode()
    for label, chunks in chunkings(data):
        items, _ = feed(chunks)
        assert items == [Event(data="你好🙂é"), END], label


@pytest.mark.parametrize(
    ("raw", "text"),
    [
        (b"a\xffb", "a\ufffdb"),
        (b"\xff\xfe", "\ufffd\ufffd"),
        (b"\xe4\xbd", "\ufffd"),  # a truncated sequence is one error (WHATWG)
        (b"\xf0\x9f\x98x", "\ufffdx"),
        (b"\xed\xa0\x80", "\ufffd\ufffd\ufffd"),  # ED A0: A0 is not a valid second byte
        (b"\xc0\xaf", "\ufffd\ufffd"),
        (b"\x80", "\ufffd"),
    ],
)
def test_replace_mode_decodes_like_the_whatwg_utf8_decoder(raw: bytes, text: str) -> None:
    data = b"data: " + raw + b"\n: " + raw + b"\n\n"
    for label, chunks in chunkings(data):
        items, _ = feed(chunks, errors="replace")
        assert items == [Comment(text=text), Event(data=text), END], label


def test_replace_mode_never_raises_for_an_incomplete_tail() -> None:
    items, _ = feed([b"data: x\n\ndata: \xe4\xbd"], errors="replace")
    assert items == [Event(data="x"), EndOfStream(partial_line=8)]


def test_replace_mode_in_a_field_name() -> None:
    # "d\ufffdta" is an unknown field: ignored.
    items, _ = feed([b"d\xfeta: x\n\ndata: y\n\n"], errors="replace")
    assert items == [Event(data="y"), END]


# ---------------------------------------------------------------- sticky errors


def test_remote_error_is_sticky_with_the_same_offset() -> None:
    conn = Connection()
    conn.receive_data(b"data: a\n\ndata: \xff\n\n")
    assert conn.next_event() == Event(data="a")
    with pytest.raises(RemoteProtocolError) as first:
        conn.next_event()
    assert first.value.offset == 15
    with pytest.raises(RemoteProtocolError) as again:
        conn.next_event()
    assert again.value.offset == 15
    assert str(again.value) == str(first.value)
    with pytest.raises(RemoteProtocolError) as on_receive:
        conn.receive_data(b"data: fine\n\n")
    assert on_receive.value.offset == 15
    with pytest.raises(RemoteProtocolError):
        conn.receive_data(b"")
    with pytest.raises(RemoteProtocolError):
        conn.next_event()


def test_size_error_is_sticky() -> None:
    conn = Connection(max_event_size=5)
    conn.receive_data(b"data: xyz")
    with pytest.raises(RemoteProtocolError) as first:
        conn.next_event()
    with pytest.raises(RemoteProtocolError) as again:
        conn.receive_data(b"\n\n")
    assert first.value.offset == again.value.offset == 5


def test_error_classes() -> None:
    assert issubclass(LocalProtocolError, ProtocolError)
    assert issubclass(RemoteProtocolError, ProtocolError)
    assert issubclass(ProtocolError, Exception)
    with pytest.raises(TypeError):
        ProtocolError("raise a subclass instead")
    error = RemoteProtocolError("bad at byte offset 3", offset=3)
    assert error.offset == 3
    assert str(error) == "bad at byte offset 3"
    assert str(LocalProtocolError("misuse")) == "misuse"


# ---------------------------------------------------------------- max_event_size


def test_default_max_event_size_is_16_mib() -> None:
    assert DEFAULT_MAX_EVENT_SIZE == 16 * 1024 * 1024


def test_event_of_exactly_the_limit_passes_and_one_more_byte_fails() -> None:
    # 11 bytes in the stream; the limit leaves out the blank line's own line end.
    event = b"data: xyz\n\n"
    assert parse(event, max_event_size=10) == [Event(data="xyz"), END]
    assert error_in_every_chunking(event, max_event_size=9) == (9, [])


def test_limit_does_not_count_the_final_line_end_of_any_kind() -> None:
    for event in (b"data: xyz\r\n\r\n", b"data: xyz\r\r", b"data: xyz\r\n\n"):
        # Everything but the last line end: 11, 10 and 11 bytes.
        size = len(event) - (2 if event.endswith(b"\r\n") else 1)
        assert parse(event, max_event_size=size) == [Event(data="xyz"), END]
        assert error_in_every_chunking(event, max_event_size=size - 1) == (size - 1, [])


def test_limit_offset_is_block_start_plus_limit() -> None:
    data = b"data: a\n\ndata: bbbbbb\n\n"  # 9 + 14 bytes; the second counts 13
    assert error_in_every_chunking(data, max_event_size=12) == (9 + 12, [Event(data="a")])
    assert parse(data, max_event_size=13) == [Event(data="a"), Event(data="bbbbbb"), END]


def test_limit_counts_comments_among_the_fields_and_every_line_of_the_block() -> None:
    data = b"event: e\n: hi\ndata: x\n\n"  # 9 + 5 + 8 + 1 = 23 bytes, 22 counted
    assert parse(data, max_event_size=22)[1] == Event(type="e", data="x")
    assert error_in_every_chunking(data, max_event_size=21) == (21, [Comment(text="hi")])


def test_limit_resets_after_each_dispatch() -> None:
    data = b"data: 1234\n\n" * 50  # 12 bytes each (11 counted): 600 bytes in all
    assert parse(data, max_event_size=11) == [Event(data="1234")] * 50 + [END]


def test_blank_lines_between_events_do_not_count() -> None:
    data = b"data: a\n\n\n\n\n\r\n\rdata: b\n\n"
    for label, chunks in chunkings(data):
        items, _ = feed(chunks, max_event_size=9)
        assert items == [Event(data="a"), Event(data="b"), END], label


def test_limit_applies_to_a_block_that_dispatches_nothing() -> None:
    # An endless id:/retry: block (no data) is refused like an endless event.
    data = b"id: 1\nid: 2\nid: 3\n\n"
    assert error_in_every_chunking(data, max_event_size=10) == (10, [])


def test_partial_line_over_the_limit_fails_while_waiting_for_data() -> None:
    conn = Connection(max_event_size=10)
    conn.receive_data(b"data: 1234")  # exactly 10 bytes: still allowed
    assert conn.next_event() is NEED_DATA
    conn.receive_data(b"5")
    with pytest.raises(RemoteProtocolError) as info:
        conn.next_event()
    assert info.value.offset == 10


def test_partial_line_over_the_limit_after_earlier_events() -> None:
    conn = Connection(max_event_size=10)
    conn.receive_data(b"data: a\n\n" + b"x" * 11)
    assert conn.next_event() == Event(data="a")
    with pytest.raises(RemoteProtocolError) as info:
        conn.next_event()
    assert info.value.offset == 9 + 10


def test_no_limit_with_none() -> None:
    size = DEFAULT_MAX_EVENT_SIZE + 10
    data = b"data: " + b"x" * size + b"\n\n"
    items, _ = feed([data], max_event_size=None)
    assert len(items) == 2
    assert items[0].data == "x" * size  # type: ignore[union-attr]
    # The same event is refused under the default limit, at the limit's offset.
    assert remote_error([data]) == (DEFAULT_MAX_EVENT_SIZE, [])


def test_limit_of_one_byte() -> None:
    # Blank lines count nothing; a one-byte line fits, a two-byte one does not.
    assert parse(b"\n\n\n", max_event_size=1) == [END]
    assert parse(b"\n:\n", max_event_size=1) == [Comment(text=""), END]
    assert remote_error([b"\n::\n"], max_event_size=1) == (2, [])


# ---------------------------------------------------------------- last event ID


def test_initial_last_event_id() -> None:
    conn = Connection(last_event_id="42")
    assert conn.last_event_id == "42"
    conn.receive_data(b"data: x\n\nid: 43\ndata: y\n\n")
    assert drain(conn) == [Event(data="x", id="42"), Event(data="y", id="43")]
    assert conn.last_event_id == "43"


def test_id_only_block_updates_last_event_id() -> None:
    # Pitfall 5's other half: nothing is dispatched, but the ID still counts.
    items, conn = feed([b"id: 7\n\n"])
    assert items == [END]
    assert conn.last_event_id == "7"
    items, conn = feed([b"id: 7\n\ndata: x\n\n"])
    assert items == [Event(data="x", id="7"), END]


def test_id_is_copied_only_at_the_blank_line() -> None:
    conn = Connection()
    conn.receive_data(b"id: 1\ndata: x\n")
    assert conn.next_event() is NEED_DATA
    assert conn.last_event_id == ""
    conn.receive_data(b"\n")
    assert conn.next_event() == Event(data="x", id="1")
    assert conn.last_event_id == "1"


def test_id_with_nul_is_ignored_without_clearing() -> None:
    # Pitfall 8.
    data = b"id: 1\n\nid: a\x00b\ndata: x\n\nid: \x00\ndata: y\n\n"
    items, conn = feed([data])
    assert items == [Event(data="x", id="1"), Event(data="y", id="1"), END]
    assert conn.last_event_id == "1"


def test_id_persists_across_events() -> None:
    items, _ = feed([b"id: a\ndata: 1\n\ndata: 2\n\nevent: e\ndata: 3\n\n"])
    assert items == [Event(data="1", id="a"), Event(data="2", id="a"),
                     Event(type="e", data="3", id="a"), END]  # fmt: skip


@pytest.mark.parametrize("line", [b"id", b"id:", b"id: "])
def test_empty_id_resets_the_last_event_id(line: bytes) -> None:
    items, conn = feed([b"id: 1\n\n" + line + b"\ndata: x\n\n"], last_event_id="0")
    assert items == [Event(data="x", id=""), END]
    assert conn.last_event_id == ""


def test_id_keeps_spaces_after_the_first() -> None:
    items, _ = feed([b"id:  a b \ndata: x\n\n"])
    assert items == [Event(data="x", id=" a b "), END]


def test_last_id_in_a_block_wins() -> None:
    items, _ = feed([b"id: 1\nid: 2\ndata: x\nid: 3\n\n"])
    assert items == [Event(data="x", id="3"), END]


# ---------------------------------------------------------------- retry


@pytest.mark.parametrize(("value", "expected"), [(b"0", 0), (b"5", 5), (b"007", 7),
                                                 (b"3000", 3000), (b"99999999999999999999",
                                                 99999999999999999999)])  # fmt: skip
def test_valid_retry(value: bytes, expected: int) -> None:
    items, conn = feed([b"retry: " + value + b"\ndata: x\n\n"])
    assert items == [Event(data="x", retry=expected), END]
    assert conn.retry == expected


@pytest.mark.parametrize(
    "value",
    [
        "+5",
        " 5",  # "retry:  5": one space is removed, the second stays
        "5 ",
        "-1",
        "1_0",
        "5.0",
        "0x10",
        "1e3",
        "٣",  # ARABIC-INDIC DIGIT THREE
        "５",  # FULLWIDTH DIGIT FIVE
        "²",  # SUPERSCRIPT TWO: str.isdigit() says yes
        "",
        "five",
    ],
)
def test_invalid_retry_is_ignored(value: str) -> None:
    # Pitfall 6: only ASCII digits are valid; int() would accept several of these.
    data = b"retry: 100\n\nretry: " + value.encode() + b"\ndata: x\n\n"
    items, conn = feed([data])
    assert items == [Event(data="x"), END]
    assert conn.retry == 100


def test_retry_without_colon_is_ignored() -> None:
    items, conn = feed([b"retry: 100\n\nretry\ndata: x\n\n"])
    assert items == [Event(data="x"), END]
    assert conn.retry == 100


def test_retry_with_leading_zeros_past_int_s_limit_is_its_value() -> None:
    # Any run of ASCII digits sets the reconnection time (issue 26/16): 5,000 zeros
    # then 5 is 5, though int() refuses a string of more than 4,300 digits.
    items, conn = feed([b"retry: 20\n\nretry: " + b"0" * 5000 + b"5\ndata: x\n\n"])
    assert items == [Event(data="x", retry=5), END]
    assert conn.retry == 5


def test_retry_with_more_digits_than_int_accepts_is_clamped() -> None:
    # Above 4,300 significant digits CPython's int() refuses the string
    # (CVE-2020-10735), and no Event could write it: the value is clamped to the
    # largest number of 4,300 digits.
    most = int("9" * 4300)
    items, conn = feed([b"retry: 20\n\nretry: " + b"1" + b"0" * 4999 + b"\ndata: x\n\n"])
    assert items == [Event(data="x", retry=most), END]
    assert conn.retry == most


def test_retry_past_a_lowered_int_limit_is_clamped() -> None:
    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(640)
    try:
        items, conn = feed([b"retry: " + b"7" * 700 + b"\n\n"])
    finally:
        sys.set_int_max_str_digits(old)
    assert items == [END]
    assert conn.retry == int("9" * 4300)


def test_retry_in_event_only_from_its_own_block() -> None:
    data = b"retry: 5\ndata: a\n\ndata: b\n\nretry: 6\n\ndata: c\n\n"
    items, conn = feed([data])
    assert items == [Event(data="a", retry=5), Event(data="b"), Event(data="c"), END]
    assert conn.retry == 6


def test_retry_takes_effect_when_its_line_is_complete() -> None:
    conn = Connection()
    conn.receive_data(b"retry: 250\n")
    assert conn.next_event() is NEED_DATA
    assert conn.retry == 250


def test_invalid_retry_after_a_valid_one_in_the_same_block() -> None:
    items, conn = feed([b"retry: 5\nretry: x\ndata: a\n\n"])
    assert items == [Event(data="a", retry=5), END]
    assert conn.retry == 5


# ---------------------------------------------------------------- constructor checks


@pytest.mark.parametrize("errors", ["ignore", "STRICT", "", None, 1])
def test_bad_errors_option(errors: Any) -> None:
    with pytest.raises(ValueError, match="errors"):
        Connection(errors=errors)


@pytest.mark.parametrize("value", ["a\x00", "a\rb", "\n"], ids=repr)
def test_last_event_id_with_nul_cr_or_lf_is_refused(value: str) -> None:
    with pytest.raises(ValueError, match="last_event_id"):
        Connection(last_event_id=value)


@pytest.mark.parametrize("value", [b"1", 1, None])
def test_last_event_id_must_be_str(value: Any) -> None:
    with pytest.raises(TypeError, match="last_event_id"):
        Connection(last_event_id=value)


@pytest.mark.parametrize("size", [0, -1, True, False, "x", 1.5, 10.0])
def test_bad_max_event_size(size: Any) -> None:
    with pytest.raises(ValueError, match="max_event_size"):
        Connection(max_event_size=size)


def test_positional_arguments_are_refused() -> None:
    with pytest.raises(TypeError):
        Connection("replace")  # type: ignore[call-overload]


# ---------------------------------------------------------------- keep_raw


def forward(chunks: Iterable[bytes]) -> tuple[bytes, list[ReceivedItem]]:
    """A verbatim proxy: forward item.raw and take_raw() at each NEED_DATA."""
    conn = Connection(keep_raw=True)
    out = bytearray()
    items: list[ReceivedItem] = []

    def pump() -> bool:
        while True:
            item = conn.next_event()
            if item is NEED_DATA:
                out.extend(conn.take_raw())
                return False
            assert item.raw is not None
            out.extend(item.raw)
            items.append(item)
            if isinstance(item, EndOfStream):
                return True

    for chunk in chunks:
        if chunk:
            conn.receive_data(chunk)
            pump()
    conn.receive_data(b"")
    assert pump()
    return bytes(out), items


RAW_STREAMS = [
    b"data: a\n\n",
    b"\xef\xbb\xbf: hi\r\nevent: e\r\ndata: 1\r\n: inside\r\ndata: 2\r\n\r\n: end\n",
    b"id: 1\n\nretry: 5\n\n\n\nunknown: x\n\ndata: a\rid: 2\r\r: tail\r",
    b"data: a\r\n\r\ndata: b\r\r\n:\n\n\n",
    b"event: e\n: c\nid: 9\n\n: between\ndata: x\n\n",
    b"",
    b"\n",
]


@pytest.mark.parametrize("data", RAW_STREAMS)
def test_keep_raw_forwards_every_byte_in_every_chunking(data: bytes) -> None:
    expected = parse(data)
    for label, chunks in chunkings(data):
        out, items = forward(chunks)
        assert out == data, label
        assert items == expected, label


def test_keep_raw_item_bytes() -> None:
    data = b": hi\nevent: e\n: inside\ndata: x\n\n\n: after\n"
    out, items = forward([data])
    assert out == data
    assert items == [Comment(text="hi"), Comment(text="inside"), Event(type="e", data="x"),
                     Comment(text="after"), END]  # fmt: skip
    raws = [i.raw for i in items]
    # The comment inside the event travels with the event, never on its own.
    assert raws == [b": hi\n", b"", b"event: e\n: inside\ndata: x\n\n", b"\n: after\n", b""]


def test_keep_raw_take_raw_hands_out_blocks_that_are_no_item() -> None:
    conn = Connection(keep_raw=True)
    conn.receive_data(b"id: 1\n\nretry: 2\n\ndata: x")
    assert conn.next_event() is NEED_DATA
    assert conn.take_raw() == b"id: 1\n\nretry: 2\n\n"
    assert conn.take_raw() == b""  # each byte is handed out once
    conn.receive_data(b"\n\n")
    event = conn.next_event()
    assert event == Event(data="x", id="1", retry=None)
    assert event.raw == b"data: x\n\n"  # type: ignore[union-attr]


def test_keep_raw_untaken_bytes_go_out_with_the_next_item() -> None:
    conn = Connection(keep_raw=True)
    conn.receive_data(b"id: 1\n\n")
    assert conn.next_event() is NEED_DATA
    conn.receive_data(b"data: x\n\n")
    event = conn.next_event()
    assert event.raw == b"id: 1\n\ndata: x\n\n"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("data", "forwarded", "end"),
    [
        (b"data: a\n\ndata: b", b"data: a\n\n", EndOfStream(partial_line=7)),
        (
            b"data: a\n\nid: 1\n\ndata: b\n",
            b"data: a\n\nid: 1\n\n",
            EndOfStream(partial_event=True),
        ),
        (b"data: a\n\n: c\nevent: x\nid: 2\n", b"data: a\n\n: c\n", END),
        (b"data: a\n\nevent: x\n: c\n", b"data: a\n\n", END),
        (b"data: a\n\n: c", b"data: a\n\n", EndOfStream(partial_line=3)),
    ],
)
def test_keep_raw_cut_mid_event_forwards_a_prefix(
    data: bytes, forwarded: bytes, end: EndOfStream
) -> None:
    for label, chunks in chunkings(data):
        out, items = forward(chunks)
        assert out == forwarded, label
        assert items[-1] == end, label


def test_take_raw_needs_keep_raw() -> None:
    conn = Connection()
    with pytest.raises(LocalProtocolError, match="keep_raw"):
        conn.take_raw()


def test_raw_is_none_without_keep_raw() -> None:
    items = parse(b": c\ndata: x\n\n")
    assert [i.raw for i in items] == [None, None, None]


# ---------------------------------------------------------------- public names


def test_public_names() -> None:
    for name in (
        "Connection",
        "Event",
        "Comment",
        "EndOfStream",
        "NEED_DATA",
        "NeedData",
        "DEFAULT_MAX_EVENT_SIZE",
        "ReceivedItem",
        "ProtocolError",
        "LocalProtocolError",
        "RemoteProtocolError",
        "serialize",
    ):
        assert name in sse_sansio.__all__
        assert hasattr(sse_sansio, name)
    assert set(typing.get_args(ReceivedItem)) == {Event, Comment, EndOfStream}
    assert isinstance(sse_sansio.__version__, str)


# ---------------------------------------------------------------- field parsing


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        (b"data:a:b", Event(data="a:b")),  # split at the first colon only
        (b"data::x", Event(data=":x")),
        (b"data: : x", Event(data=": x")),
        (b"data:\tx", Event(data="\tx")),  # only a SPACE is removed
        (b"data:  x ", Event(data=" x ")),  # one space, and only at the start
        (b"data", Event(data="")),  # no colon: the whole line is the field name
        (b"data:", Event(data="")),
        (b"data\ndata:\ndata: ", Event(data="\n\n")),
        (b"event:\ndata: x", Event(data="x")),  # empty type means "message"
        (b"event\ndata: x", Event(data="x")),
        (b"event: a\nevent: b\ndata: x", Event(type="b", data="x")),  # last one wins
        (b"event:  a \ndata: x", Event(type=" a ", data="x")),
        (b"id:x:y\ndata: z", Event(data="z", id="x:y")),
        (b" data: x\ndata: y", Event(data="y")),  # the field name is " data"
        (b"data : x\ndata: y", Event(data="y")),  # the field name is "data "
        (b"DATA: x\nData: x\ndata: y", Event(data="y")),  # names are case-sensitive
        (b"dat: x\ndatax: x\ndata: y", Event(data="y")),
        (b"retry: 5\nretry: 6\ndata: y", Event(data="y", retry=6)),
    ],
)
def test_field_parsing(block: bytes, expected: Event) -> None:
    for eol in (b"\n", b"\r", b"\r\n"):
        data = block.replace(b"\n", eol) + eol + eol
        for label, chunks in chunkings(data, seeds=1):
            items, _ = feed(chunks)
            assert items == [expected, END], (eol, label)
