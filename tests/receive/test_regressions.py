"""Regression tests, one per bug found, each named after what must hold.

Each bug made a result depend on how the stream was chunked, or let an item compare
or print wrongly; the fixes are in _connection.py and _events.py.
"""

from __future__ import annotations

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
)
from sse_sansio._receive import _connection
from tests.helpers import chunkings, feed

pytestmark = pytest.mark.usefixtures("conn_cls")  # both cores: tests/conftest.py


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


# ------------------------------------------------------------- issue 10's defects


class _Boom(Exception):
    """Stands for anything raised while parsing that is not a protocol error."""


def _interrupted(conn: _connection.Connection, exc: BaseException) -> BaseException:
    """Make the parser raise ``exc`` in the middle of a chunk, as a signal handler can."""
    conn.receive_data(b"data: a\n\ndata: b\n\n")
    # keep_raw's bookkeeping hands the event its bytes: make that raise.
    from sse_sansio._receive import _raw

    real = _raw.RawBytes.hand_out

    def hand_out(self: _raw.RawBytes, end: int) -> bytes:
        raise exc

    _raw.RawBytes.hand_out = hand_out  # type: ignore[method-assign]
    try:
        with pytest.raises(type(exc)) as info:
            conn.next_event()
    finally:
        _raw.RawBytes.hand_out = real  # type: ignore[method-assign]
    assert info.value is exc
    return exc


@pytest.mark.parametrize("exc", [_Boom("bad luck"), KeyboardInterrupt(), MemoryError()])
def test_any_exception_leaves_the_connection_failed_for_good(exc: BaseException) -> None:
    # Defect 1: after an exception that was not a RemoteProtocolError, every later
    # next_event() raised a bare StopIteration, and receive_data() still took data.
    # The pure core's, whose keep_raw bookkeeping can be made to raise; tests/receive/test_cores.py
    # fails the compiled core with a real MemoryError instead.
    conn = _connection.Connection(keep_raw=True)
    nxt = conn.next_event  # saved before the failure, as hot loops do
    _interrupted(conn, exc)
    want = f"the connection failed earlier: {type(exc).__name__}: {exc}"
    for call in (
        conn.next_event,
        nxt,
        lambda: _connection.Connection.next_event(conn),
        lambda: conn.receive_data(b"data: c\n\n"),
        lambda: conn.receive_data(b""),
        conn.next_event,
    ):
        with pytest.raises(LocalProtocolError) as info:
            call()
        assert str(info.value) == want
        assert info.value.__cause__ is exc


def test_a_remote_error_sticks_through_a_saved_next_event() -> None:
    # Defect 1: nxt = conn.next_event, then invalid UTF-8: the second nxt() raised a bare
    # StopIteration instead of the same error again.
    conn = Connection()
    nxt = conn.next_event
    conn.receive_data(b"data: a\n\ndata: \xff\n\n")
    assert nxt() == Event(data="a")
    for _ in range(3):
        with pytest.raises(RemoteProtocolError) as info:
            nxt()
        assert info.value.offset == 15
        assert str(info.value) == "invalid UTF-8 (invalid start byte) at byte offset 15"
    with pytest.raises(RemoteProtocolError):
        conn.receive_data(b"data: c\n\n")


def test_help_on_next_event_shows_its_contract() -> None:
    # Defect 2: help(conn.next_event) printed "Implement next(self).".
    import pydoc

    text = pydoc.render_doc(Connection().next_event, renderer=pydoc.plaintext)  # type: ignore[attr-defined]
    assert "Return the next complete item, or ``NEED_DATA``." in text
    assert "Implement next(self)" not in text


def test_the_functions_that_always_raise_are_typed_as_never_returning() -> None:
    # Defect 3: Connection._fail() always raised, but was annotated as returning None.
    # (It is _lines.fail() now, with the other functions that only raise.)
    import typing

    from sse_sansio._receive import _connection, _interpret, _lines

    for function in (
        _lines.fail,
        _lines.exceeds,
        _interpret._bad_utf8,
        _connection.Connection._raise_error,
    ):
        assert typing.get_type_hints(function)["return"] is typing.NoReturn, function


@pytest.mark.parametrize("keep_raw", [False, True])
@pytest.mark.parametrize("stream", [b":\n", b":\r"])
def test_the_first_byte_that_rules_out_a_bom_ends_the_look_ahead(
    stream: bytes, keep_raw: bool
) -> None:
    # Defect 5: the BOM look-ahead held the first item until a third byte arrived.
    for label, chunks in chunkings(stream):
        conn = Connection(keep_raw=keep_raw)
        got = []
        for chunk in filter(None, chunks):  # (b"" would end the stream)
            conn.receive_data(chunk)
            while (item := conn.next_event()) is not NEED_DATA:
                got.append(item)
        assert got == [Comment(text="")], label
        assert isinstance(got[0], Comment)
        assert got[0].span == (0, 2), label
        if keep_raw:
            assert got[0].raw == stream
            assert conn.take_raw() == b""


def test_a_stream_opening_with_a_split_crlf_has_the_span_rule_s_spans() -> None:
    # Defect 4: at the start of a stream the BOM look-ahead joined the first bytes, so
    # b":\r" + b"\n" gave the comment end=3 instead of 2, unlike the same bytes later on.
    for prefix in (b"", b"\xef\xbb\xbf", b": x\n"):
        base = len(prefix)
        for chunks in ([prefix + b":\r", b"\n"], [prefix + b":", b"\r", b"\n"]):
            items, _ = feed(chunks)
            comment = items[-2]
            assert isinstance(comment, Comment)
            assert comment == Comment(text=""), chunks
            assert comment.span == (base, base + 2), chunks
