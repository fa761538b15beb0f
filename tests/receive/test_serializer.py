"""serialize(): exact bytes, refusals, and the round trip through a fresh Connection."""

from __future__ import annotations

import pickle
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sse_sansio import Comment, EndOfStream, Event, LocalProtocolError, serialize
from tests.helpers import chunkings, feed


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


# ------------------------------------------------- what is written is what was checked
#
# Each attack below once made serialize() write a line the application never wrote: the
# constructors checked a value with ``in`` while serialize() wrote it through an f-string
# (``__format__``), or the item never met a constructor at all.


class Fmt(str):
    """Formats as another line: the issue's example."""

    def __format__(self, spec: str) -> str:
        return "ok\ndata: injected"


class Blind(str):
    """Claims to contain nothing, so ``"\\n" in value`` is False."""

    def __contains__(self, key: object) -> bool:
        return False


class Sneaky(str):
    """Prints as another line through ``str()``, ``repr()`` and ``format()``."""

    def __str__(self) -> str:
        return "x\n\ndata: injected"

    __format__ = lambda self, spec: "x\n\ndata: injected"  # noqa: E731


class Num(int):
    """An int whose text is a line break and more: it parsed back as data 'x\\ninjected'."""

    def __str__(self) -> str:
        return "5\ninjected"

    __repr__ = __str__
    __format__ = lambda self, spec: "5\ninjected"  # noqa: E731


def _raw_event(*values: object) -> Event:
    """An Event made as the cores make them, past every check of the constructor."""
    return tuple.__new__(Event, (*values, -1, -1, None))


def _parses_back(data: bytes) -> list[object]:
    items, _ = feed([data])
    return list(items)


def test_a_str_subclass_with_format_writes_its_checked_value() -> None:
    event = Event(type=Fmt("ok"), data="x")
    assert serialize(event) == b"event: ok\ndata: x\n\n"
    assert serialize(_raw_event(Fmt("ok"), Fmt("x"), Fmt("7"), None)) == (
        b"event: ok\ndata: x\nid: 7\n\n"
    )
    assert serialize(tuple.__new__(Comment, (Fmt("c"), -1, -1, None))) == b": c\n"


@pytest.mark.parametrize("field", ["type", "id"])
def test_a_str_subclass_that_hides_a_line_break_is_refused(field: str) -> None:
    value = Blind("ok\ndata: injected")
    with pytest.raises(LocalProtocolError, match=rf"Event\.{field} may not contain"):
        Event(**{field: value})  # type: ignore[arg-type]
    values: dict[str, object] = {"type": "message", "data": "x", "id": "", "retry": None}
    values[field] = value
    with pytest.raises(LocalProtocolError, match=rf"Event\.{field} may not contain"):
        serialize(_raw_event(*values.values()))


def test_a_comment_that_hides_a_line_break_is_refused() -> None:
    with pytest.raises(LocalProtocolError, match=r"Comment\.text may not contain"):
        Comment(text=Blind("c\ndata: injected"))
    with pytest.raises(LocalProtocolError, match=r"Comment\.text may not contain"):
        serialize(tuple.__new__(Comment, (Blind("c\ndata: injected"), -1, -1, None)))


def test_a_str_subclass_with_str_writes_its_checked_value() -> None:
    for item in (Event(data=Sneaky("x")), _raw_event("message", Sneaky("x"), "", None)):
        assert serialize(item) == b"data: x\n\n"


def test_an_int_subclass_as_retry_writes_its_checked_digits() -> None:
    for item in (Event(data="x", retry=Num(5)), _raw_event("message", "x", "", Num(5))):
        data = serialize(item)
        assert data == b"data: x\nretry: 5\n\n"
        assert _parses_back(data) == [Event(data="x", retry=5), EndOfStream()]


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (("ok\ndata: injected", "x", "", None), "Event.type may not contain '\\n'"),
        (("ok\r", "x", "", None), "Event.type may not contain '\\r'"),
        (("", "x", "", None), "Event.type may not be empty"),
        ((b"ok", "x", "", None), "Event.type must be str, not bytes"),
        (("message", None, "", None), "Event.data must be str, not NoneType"),
        (("message", "x", "1\ndata: injected", None), "Event.id may not contain '\\n'"),
        (("message", "x", "a\x00b", None), "Event.id may not contain '\\x00'"),
        (("message", "x", "", -1), "Event.retry must be a non-negative int or None"),
        (("message", "x", "", True), "Event.retry must be a non-negative int or None"),
        (("message", "x", "", "5\ndata: injected"), "Event.retry must be a non-negative"),
        (("message", "x", "", 10**5000), "Event.retry has too many digits"),
        (("message", "x"), "malformed Event"),
    ],
)
def test_an_event_made_past_its_constructor_is_checked(
    values: tuple[object, ...], message: str
) -> None:
    item = tuple.__new__(Event, values) if len(values) < 4 else _raw_event(*values)
    with pytest.raises(LocalProtocolError) as info:
        serialize(item)
    assert str(info.value).startswith(message)


def test_a_comment_made_past_its_constructor_is_checked() -> None:
    with pytest.raises(LocalProtocolError, match=r"Comment\.text must be str, not int"):
        serialize(tuple.__new__(Comment, (5, -1, -1, None)))
    with pytest.raises(LocalProtocolError, match="malformed Comment"):
        serialize(tuple.__new__(Comment, ()))


def test_an_item_rebuilt_from_a_crafted_pickle_is_checked() -> None:
    # A pickle of a valid event, with one byte of its type changed to LF: unpickling
    # rebuilds the item without its constructor.
    pickled = pickle.dumps(Event(type="ok~data: injected", data="x"))
    assert pickled.count(b"~") == 1
    item = pickle.loads(pickled.replace(b"~", b"\n"))
    assert isinstance(item, Event)
    with pytest.raises(LocalProtocolError, match=re.escape("Event.type may not contain '\\n'")):
        serialize(item)


def test_a_subclass_that_overrides_the_fields_writes_its_stored_values() -> None:
    class Liar(Event):
        __slots__ = ()

        def __getitem__(self, index: Any) -> Any:
            return "ok\ndata: injected"

        @property
        def type(self) -> str:  # type: ignore[override]
            return "ok\ndata: injected"

    assert serialize(Liar(type="ok", data="x")) == b"event: ok\ndata: x\n\n"


def test_an_object_faking_its_class_is_refused() -> None:
    class Fake:
        @property  # type: ignore[misc]
        def __class__(self) -> type:
            return Event

    fake = Fake()
    assert isinstance(fake, Event)
    with pytest.raises(LocalProtocolError, match="not Fake"):
        serialize(fake)


# The fast path (issue 33, item 6): an exact Event or Comment whose values are exact
# strs skips the copies, never a test.  It must write what the full path writes (an
# Event subclass always takes the full path), and refuse what the full path refuses.


class Plain(Event):
    """An Event subclass that overrides nothing: serialize() takes its full path."""

    __slots__ = ()


_TEXT = st.text(alphabet=st.sampled_from("ab:\r\n\x00 é🙂"), max_size=8)


@given(
    event_type=st.one_of(st.just("message"), _TEXT),
    data=_TEXT,
    event_id=_TEXT,
    retry=st.one_of(st.none(), st.integers(0, 10**6)),
)
def test_the_fast_path_writes_or_refuses_what_the_full_path_does(
    event_type: str, data: str, event_id: str, retry: int | None
) -> None:
    values = (event_type, data, event_id, retry)
    assert _outcome(_raw_event(*values)) == _outcome(_raw_sub(*values))


@given(text=_TEXT)
def test_a_comment_on_the_fast_path_writes_or_refuses_what_the_full_path_does(text: str) -> None:
    class PlainComment(Comment):
        __slots__ = ()

    fast = tuple.__new__(Comment, (text, -1, -1, None))
    assert _outcome(fast) == _outcome(tuple.__new__(PlainComment, (text, -1, -1, None)))


def _outcome(item: Event | Comment) -> bytes | str:
    """What serialize() writes, or the message it refuses with."""
    try:
        return serialize(item)
    except LocalProtocolError as exc:
        return str(exc)


def _raw_sub(*values: object) -> Event:
    return tuple.__new__(Plain, (*values, -1, -1, None))


@pytest.mark.parametrize(
    "values",
    [
        ("message", "x", "1", None, -1, -1, None, "extra"),  # longer than an Event
        ("message", "x", "1"),  # shorter
    ],
)
def test_an_event_of_the_wrong_length_is_checked_by_the_full_path(
    values: tuple[object, ...],
) -> None:
    item = tuple.__new__(Event, values)
    if len(values) < 4:
        with pytest.raises(LocalProtocolError, match="malformed Event"):
            serialize(item)
    else:  # the first four slots are the values, whichever path writes them
        assert serialize(item) == b"data: x\nid: 1\n\n"


@pytest.mark.parametrize(
    "item",
    [
        _raw_event("message", "x", "ok\ndata: injected", None),
        _raw_event("message", "x", "ok\rdata: injected", None),
        _raw_event("message", "x", "ok\x00", None),
        _raw_event("ok\ndata: injected", "x", "", None),
        _raw_event("ok\rdata: injected", "x", "", None),
        _raw_event("", "x", "", None),
        tuple.__new__(Comment, ("ok\ndata: injected", -1, -1, None)),
        tuple.__new__(Comment, ("ok\rdata: injected", -1, -1, None)),
    ],
    ids=repr,
)
def test_exact_items_past_the_constructor_that_could_inject_a_line_are_refused(
    item: Event | Comment,
) -> None:
    with pytest.raises(LocalProtocolError, match="may not"):
        serialize(item)
