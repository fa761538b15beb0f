"""Regression tests, one per bug found, each named after what must hold.

Each bug made a result depend on how the stream was chunked, or let an item compare
or print wrongly; the fixes are in _connection.py and _events.py.
"""

from __future__ import annotations

import pytest

from sse_sansio import (
    NEED_DATA,
    Connection,
    EndOfStream,
    Event,
    LocalProtocolError,
    ReceivedItem,
    RemoteProtocolError,
)

from .helpers import chunkings, feed


def forward(chunks: list[bytes]) -> bytes:
    """What a verbatim proxy sends: every item's raw, and take_raw() at each NEED_DATA."""
    conn = Connection(keep_raw=True)
    out = b""
    for chunk in [*chunks, b""]:
        conn.receive_data(chunk)
        while True:
            item = conn.next_event()
            if item is NEED_DATA:
                out += conn.take_raw()
                break
            assert item.raw is not None
            out += item.raw
            if isinstance(item, EndOfStream):
                return out
    raise AssertionError("no EndOfStream")  # pragma: no cover - fails the test


def outcome(data: bytes, **options: object) -> list[tuple[str, list[ReceivedItem] | int]]:
    """For every chunking: the items, or the error offset."""
    results: list[tuple[str, list[ReceivedItem] | int]] = []
    for label, chunks in chunkings(data):
        try:
            items, _ = feed(chunks, **options)
        except RemoteProtocolError as exc:
            results.append((label, exc.offset))
        else:
            results.append((label, items))
    return results


def test_a_crlf_split_after_its_cr_counts_toward_the_event_it_ends() -> None:
    # The LF used to be counted in the next event, so a split after byte 9 refused
    # the second event that the whole input accepted.
    data = b"data: a\n\r\ndata: bb\n\n"
    expected = [Event(data="a"), Event(data="bb"), EndOfStream()]
    assert {str(result) for _, result in outcome(data, max_event_size=9)} == {str(expected)}


def test_the_final_line_end_of_an_event_never_counts_toward_the_limit() -> None:
    # Whole, the final CRLF counted two bytes; split after its CR, one: the same event
    # was refused or accepted depending on the chunking.
    data = b"data: x\r\n\r\n"  # 9 bytes before the final line end
    accepted = outcome(data, max_event_size=9)
    assert all(result == [Event(data="x"), EndOfStream()] for _, result in accepted)
    refused = outcome(data, max_event_size=8)
    assert all(result == 8 for _, result in refused)


def test_keep_raw_forwards_the_lf_of_a_crlf_split_at_the_end() -> None:
    assert forward([b"data: x\r\n\r", b"\n"]) == b"data: x\r\n\r\n"


def test_take_raw_hands_out_the_lf_of_a_split_crlf() -> None:
    conn = Connection(keep_raw=True)
    conn.receive_data(b"data: x\r\n\r")
    event = conn.next_event()
    assert isinstance(event, Event)
    assert event.raw == b"data: x\r\n\r"
    conn.receive_data(b"\n")
    assert conn.next_event() is NEED_DATA
    assert conn.take_raw() == b"\n"


def test_an_item_never_equals_or_orders_against_a_plain_tuple() -> None:
    event = Event(data="x")
    as_tuple = ("message", "x", "", None, -1, -1, None)
    assert event != as_tuple
    assert as_tuple != event
    assert not event == as_tuple  # noqa: SIM201 - __eq__ itself is under test
    with pytest.raises(TypeError):
        event < ("z",)  # noqa: B015
    with pytest.raises(TypeError):
        event < ("z",)  # noqa: B015


def test_a_retry_too_long_to_print_is_refused_when_built() -> None:
    # It used to be accepted, then serialize() and repr() raised ValueError.
    with pytest.raises(LocalProtocolError, match="retry"):
        Event(data="x", retry=10**4300)


def test_a_leading_bom_does_not_count_toward_the_first_event() -> None:
    data = b"\xef\xbb\xbfdata: x\n\n"  # the event itself: 8 bytes before its last LF
    assert all(
        result == [Event(data="x"), EndOfStream()] for _, result in outcome(data, max_event_size=8)
    )


def test_keep_raw_size_checks_do_not_depend_on_chunking() -> None:
    # Blank lines waiting for take_raw() counted toward the next event only when they
    # arrived in the same chunk as it.
    data = b"\n\n\ndata"
    for _, chunks in chunkings(data):
        conn = Connection(keep_raw=True, max_event_size=5)
        for chunk in filter(None, chunks):
            conn.receive_data(chunk)
            while conn.next_event() is not NEED_DATA:
                pass  # pragma: no cover - no item in this stream
            conn.take_raw()


def test_a_proxy_that_never_takes_raw_bytes_is_told_so() -> None:
    conn = Connection(keep_raw=True, max_event_size=4)
    conn.receive_data(b"\n" * 5)
    assert conn.next_event() is NEED_DATA
    with pytest.raises(LocalProtocolError, match="take_raw"):
        conn.receive_data(b"\n")
    assert conn.take_raw() == b"\n" * 5
    conn.receive_data(b"\n")  # accepted again once taken


def test_invalid_utf8_in_a_big_data_line_is_reported_at_its_byte() -> None:
    # Data lines over 64 KiB are decoded without their prefix (memory); the offset of
    # the bad byte must still count from the start of the stream.
    data = b"data: ok\n\n" + b"data: " + b"x" * 70_000 + b"\xff" + b"y" * 10 + b"\n\n"
    for _, chunks in [("whole", [data]), ("split", [data[:40_000], data[40_000:]])]:
        with pytest.raises(RemoteProtocolError) as info:
            feed(chunks)
        assert info.value.offset == data.index(b"\xff")
        assert info.value.items == [Event(data="ok")]  # type: ignore[attr-defined]


def test_a_big_data_line_without_a_space_keeps_its_value_whole() -> None:
    value = "z" * 70_000
    items, _ = feed([b"data:" + value.encode() + b"\n\n"])
    assert items == [Event(data=value), EndOfStream()]


def test_next_event_called_through_the_class_behaves_like_the_instance() -> None:
    # conn.next_event is the parser generator's own __next__ (speed); the method on the
    # class does the same, error stickiness included.
    conn = Connection()
    conn.receive_data(b"data: a\n\ndata: \xff\n\n")
    assert Connection.next_event(conn) == Event(data="a")
    with pytest.raises(RemoteProtocolError):
        conn.next_event()
    with pytest.raises(RemoteProtocolError):
        Connection.next_event(conn)
    fresh = Connection()
    assert Connection.next_event(fresh) is NEED_DATA
