"""The WHATWG HTML standard's own event stream examples, one test each.

Section 9.2 "Server-sent events": the introduction (9.2.1), "Interpreting an event
stream" (9.2.6) and the authoring notes (9.2.7).  Each stream is run through every
chunking (whole, byte by byte, every two-part split, random splits), and with its line
ends rewritten as CRLF and as CR, which the grammar allows equally.
"""

from __future__ import annotations

from typing import Any

import pytest

from sse_sansio import Comment, EndOfStream, Event, ReceivedItem
from tests.helpers import chunkings, feed

pytestmark = pytest.mark.usefixtures("conn_cls")  # both cores: tests/conftest.py


def check_example(
    stream: bytes,
    expected: list[ReceivedItem],
    *,
    last_event_id: str = "",
    end: EndOfStream | None = None,
    **options: Any,
) -> None:
    """Assert ``stream`` gives ``expected`` (then ``end``) in every chunking and with
    every line end."""
    end = end or EndOfStream()
    for eol in (b"\n", b"\r\n", b"\r"):
        data = stream.replace(b"\n", eol)
        for label, chunks in chunkings(data):
            items, conn = feed(chunks, **options)
            assert items == [*expected, end], (eol, label)
            assert conn.last_event_id == last_event_id, (eol, label)


def test_whatwg_introduction_three_messages() -> None:
    # 9.2.1: "data: This is the first message." ... a second message with two lines.
    stream = (
        b"data: This is the first message.\n"
        b"\n"
        b"data: This is the second message, it\n"
        b"data: has two lines.\n"
        b"\n"
        b"data: This is the third message.\n"
        b"\n"
    )
    check_example(
        stream,
        [
            Event(data="This is the first message."),
            Event(data="This is the second message, it\nhas two lines."),
            Event(data="This is the third message."),
        ],
    )


def test_whatwg_introduction_add_and_remove_event_types() -> None:
    # 9.2.1: "a stream that has two event types, "add" and "remove"".
    stream = (
        b"event: add\ndata: 73857293\n\nevent: remove\ndata: 2153\n\nevent: add\ndata: 113411\n\n"
    )
    check_example(
        stream,
        [
            Event(type="add", data="73857293"),
            Event(type="remove", data="2153"),
            Event(type="add", data="113411"),
        ],
    )


def test_whatwg_interpreting_stock_ticker_yhoo() -> None:
    # 9.2.6: "The following event stream, once followed by a blank line ... would cause
    # an event message ... The event's data attribute would contain the string
    # "YHOO\n+2\n10"".
    check_example(b"data: YHOO\ndata: +2\ndata: 10\n\n", [Event(data="YHOO\n+2\n10")])


def test_whatwg_interpreting_stock_ticker_without_blank_line_fires_nothing() -> None:
    # The same example is only dispatched "once followed by a blank line".
    check_example(
        b"data: YHOO\ndata: +2\ndata: 10\n",
        [],
        end=EndOfStream(partial_event=True),
    )


def test_whatwg_interpreting_four_blocks_first_second_third_event() -> None:
    # 9.2.6: "The following stream contains four blocks.  The first block has just a
    # comment, and will fire nothing.  The second block has two fields with names
    # "data" and "id" respectively; an event will be fired for this block, with the
    # data "first event", and will then set the last event ID to "1" ...  The third
    # block fires an event with data "second event", and also has an "id" field, this
    # time with no value, which resets the last event ID to the empty string ...
    # Finally, the last block just fires an event with the data " third event" (with a
    # single leading space character)."
    stream = (
        b": test stream\n"
        b"\n"
        b"data: first event\n"
        b"id: 1\n"
        b"\n"
        b"data:second event\n"
        b"id\n"
        b"\n"
        b"data:  third event\n"
        b"\n"
    )
    check_example(
        stream,
        [
            Comment(text="test stream"),
            Event(data="first event", id="1"),
            Event(data="second event", id=""),
            Event(data=" third event", id=""),
        ],
        last_event_id="",
    )


def test_whatwg_interpreting_four_blocks_last_event_id_after_first_event() -> None:
    # "... so that if the connection died between this block and the next, the server
    # would be sent a `Last-Event-ID` header with the value "1"."
    stream = b": test stream\n\ndata: first event\nid: 1\n\n"
    check_example(
        stream,
        [Comment(text="test stream"), Event(data="first event", id="1")],
        last_event_id="1",
    )


def test_whatwg_interpreting_four_blocks_last_block_needs_its_blank_line() -> None:
    # "Note that the last still has to end with a blank line, the end of the stream is
    # not enough to trigger the dispatch of the last event."
    stream = b"data: first event\nid: 1\n\ndata:  third event\n"
    check_example(
        stream,
        [Event(data="first event", id="1")],
        last_event_id="1",
        end=EndOfStream(partial_event=True),
    )


def test_whatwg_interpreting_empty_data_and_newline_data() -> None:
    # 9.2.6: "The following stream fires two events: ... The first block fires events
    # with the data set to the empty string, as would the last block if it was followed
    # by a blank line.  The middle block fires an event with the data set to a single
    # newline character.  The last block is discarded because it is not followed by a
    # blank line."
    stream = b"data\n\ndata\ndata\n\ndata:"
    check_example(
        stream,
        [Event(data=""), Event(data="\n")],
        end=EndOfStream(partial_line=5),
    )


def test_whatwg_interpreting_empty_data_last_block_followed_by_blank_line() -> None:
    # "... as would the last block if it was followed by a blank line."
    check_example(b"data\n\ndata\ndata\n\ndata:\n\n", [Event(), Event(data="\n"), Event()])


def test_whatwg_interpreting_two_identical_events_space_after_colon() -> None:
    # 9.2.6: "The following stream fires two identical events ... This is because the
    # space after the colon is ignored if present."
    stream = b"data:test\n\ndata: test\n\n"
    check_example(stream, [Event(data="test"), Event(data="test")])


def test_whatwg_authoring_notes_comment_keepalive() -> None:
    # 9.2.7: "authors can include a comment line (one starting with a ':' character)
    # every 15 seconds or so" to keep legacy proxies from dropping the connection.  The
    # comments change nothing about the events around them, even inside an event.
    stream = (
        b":\ndata: before\n\n: keepalive\n: keepalive\ndata: split\n:\ndata: around a comment\n\n"
    )
    check_example(
        stream,
        [
            Comment(text=""),
            Event(data="before"),
            Comment(text="keepalive"),
            Comment(text="keepalive"),
            Comment(text=""),
            Event(data="split\naround a comment"),
        ],
    )


def test_whatwg_interpreting_unknown_fields_and_lines_without_colon_are_ignored() -> None:
    # 9.2.6: "Otherwise: The field is ignored." / a line without a colon is a field name
    # with an empty value.
    stream = b"foo: bar\nData: x\ndata : y\nevent\ndata: z\n\n"
    check_example(stream, [Event(data="z")])
