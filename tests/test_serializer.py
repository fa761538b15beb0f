"""serialize(): exact bytes, refusals, and the round trip through a fresh Connection."""

from __future__ import annotations

from typing import Any

import pytest

from sse_sansio import Comment, EndOfStream, Event, LocalProtocolError, serialize

from .helpers import chunkings, feed


@pytest.mark.parametrize(
    ("item", "expected"),
    [
        (Event(data="hello"), b"data: hello\n\n"),
        (Event(), b"data: \n\n"),
        (Event(type="message", data="x"), b"data: x\n\n"),
        (Event(type="update", data="x"), b"event: update\ndata: x\n\n"),
        (Event(data="a\nb\nc"), b"data: a\ndata: b\ndata: c\n\n"),
        (Event(data="a\r\nb\rc\nd"), b"data: a\ndata: b\ndata: c\ndata: d\n\n"),
        (Event(data="a\r\rb"), b"data: a\ndata: \ndata: b\n\n"),
        (Event(data="a\n"), b"data: a\ndata: \n\n"),
        (Event(data="\n"), b"data: \ndata: \n\n"),
        (Event(data="x", id="7"), b"data: x\nid: 7\n\n"),
        (Event(data="x", id="0"), b"data: x\nid: 0\n\n"),
        (Event(data="x", retry=0), b"data: x\nretry: 0\n\n"),
        (Event(data="x", retry=2500), b"data: x\nretry: 2500\n\n"),
        (
            Event(type="delta", data='{"t":"你好"}', id="a:1", retry=10),
            'event: delta\ndata: {"t":"你好"}\nid: a:1\nretry: 10\n\n'.encode(),
        ),
        (Comment(text="ping"), b": ping\n"),
        (Comment(), b": \n"),
        (Comment(text=" two spaces"), b":  two spaces\n"),
        (Comment(text="é"), ": é\n".encode()),
    ],
    ids=repr,
)
def test_exact_bytes(item: Event | Comment, expected: bytes) -> None:
    assert serialize(item) == expected


def test_empty_id_writes_no_id_line() -> None:
    assert b"id" not in serialize(Event(data="x", id=""))


@pytest.mark.parametrize("item", [EndOfStream(), "data: x", b"data: x\n\n", None, 1, ("x",)])
def test_only_events_and_comments_are_serialized(item: Any) -> None:
    with pytest.raises(LocalProtocolError):
        serialize(item)


@pytest.mark.parametrize(
    "item",
    [
        Event(data="a\ud800"),
        Event(type="\udfff"),
        Event(data="x", id="\udc80"),
        Comment(text="\ud83d"),
    ],
    ids=["data", "type", "id", "comment"],
)
def test_lone_surrogate_is_refused(item: Event | Comment) -> None:
    with pytest.raises(LocalProtocolError, match="cannot encode"):
        serialize(item)


def test_surrogate_pair_as_one_character_is_fine() -> None:
    assert serialize(Comment(text="\U0001f642")) == b": \xf0\x9f\x99\x82\n"


# Hand-written round-trip cases: each is an Event whose data uses LF line ends only
# (CR and CRLF in data necessarily come back as LF).
ROUND_TRIP_EVENTS = [
    Event(),
    Event(data="plain"),
    Event(data="  two leading spaces"),
    Event(data=" one leading space"),
    Event(data="trailing space "),
    Event(data=""),
    Event(data="\n"),
    Event(data="\n\n\n"),
    Event(data="a\n\n\nb"),
    Event(data="a:b::c"),
    Event(data=":starts with a colon"),
    Event(data="data: inside data"),
    Event(data="data:\nevent: x\nid: 5\nretry: 9\n"),
    Event(data="你好\n🙂 é"),
    Event(data="\ufeffBOM-first data"),
    Event(data="nul\x00inside"),
    Event(data="line\u2028sep\u2029para\x85nel\x0bvt\x0cff"),
    Event(data='{"json": [1, 2, {"k": "v"}]}'),
    Event(type="update", data="x"),
    Event(type=" spaced type ", data="x"),
    Event(type="a:b", data="x"),
    Event(type="类型", data="x"),
    Event(data="x", id="1"),
    Event(data="x", id=" spaced id "),
    Event(data="x", id="a:b"),
    Event(data="x", retry=0),
    Event(data="x", retry=10**30),
    Event(type="t", data="a\nb", id="i", retry=5),
]


@pytest.mark.parametrize("event", ROUND_TRIP_EVENTS, ids=repr)
def test_event_round_trip(event: Event) -> None:
    data = serialize(event)
    for label, chunks in chunkings(data, seeds=2):
        items, conn = feed(chunks)
        assert items == [event, EndOfStream()], label
        assert conn.last_event_id == event.id
        assert conn.retry == event.retry


@pytest.mark.parametrize(
    "comment",
    [Comment(), Comment(text="ping"), Comment(text=" x"), Comment(text=":"), Comment(text="é")],
    ids=repr,
)
def test_comment_round_trip(comment: Comment) -> None:
    items, _ = feed([serialize(comment)])
    assert items == [comment, EndOfStream()]


def test_stream_of_many_items_round_trips() -> None:
    items: list[Event | Comment] = [*ROUND_TRIP_EVENTS, Comment(text="between")]
    # A fresh connection carries the last event ID over: give every event an explicit
    # id so each one parses back with its own (an empty id cannot be re-sent).
    expected: list[Event | Comment] = []
    for n, item in enumerate(items):
        if isinstance(item, Event) and not item.id:
            item = Event(type=item.type, data=item.data, id=f"n{n}", retry=item.retry)
        expected.append(item)
    data = b"".join(serialize(item) for item in expected)
    parsed, _ = feed([data])
    assert parsed == [*expected, EndOfStream()]


def test_data_with_cr_comes_back_with_lf() -> None:
    items, _ = feed([serialize(Event(data="a\r\nb\rc"))])
    assert items == [Event(data="a\nb\nc"), EndOfStream()]
