"""The item classes: construction, validation, value semantics, immutability, pickling."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import pytest

from sse_sansio import (
    Comment,
    Connection,
    EndOfStream,
    Event,
    LocalProtocolError,
    ReceivedItem,
    RemoteProtocolError,
)
from tests.helpers import drain, feed

pytestmark = pytest.mark.usefixtures("conn_cls")  # both cores: tests/conftest.py

# ---------------------------------------------------------------- construction


def test_event_defaults() -> None:
    event = Event()
    assert (event.type, event.data, event.id, event.retry) == ("message", "", "", None)
    assert (event.start, event.end, event.span, event.raw) == (-1, -1, (-1, -1), None)


def test_event_fields() -> None:
    event = Event(type="update", data="a\nb", id="42", retry=0)
    assert (event.type, event.data, event.id, event.retry) == ("update", "a\nb", "42", 0)


def test_comment_defaults_and_fields() -> None:
    assert Comment().text == ""
    comment = Comment(text=" ping ")
    assert comment.text == " ping "
    assert (comment.start, comment.end, comment.span, comment.raw) == (-1, -1, (-1, -1), None)


def test_end_of_stream_defaults_and_fields() -> None:
    end = EndOfStream()
    assert (end.partial_line, end.partial_event, end.raw) == (0, False, None)
    end = EndOfStream(partial_line=5, partial_event=True)
    assert (end.partial_line, end.partial_event) == (5, True)


def test_end_of_stream_partial_event_is_a_bool() -> None:
    assert EndOfStream(partial_event=1).partial_event is True  # type: ignore[arg-type]
    assert EndOfStream(partial_event=0).partial_event is False  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("partial_line", "partial_event", "truncated"),
    [(0, False, False), (1, False, True), (0, True, True), (3, True, True)],
)
def test_end_of_stream_truncated(partial_line: int, partial_event: bool, truncated: bool) -> None:
    end = EndOfStream(partial_line=partial_line, partial_event=partial_event)
    assert end.truncated is truncated


def test_data_may_hold_any_text() -> None:
    # CR, LF and NUL are fine in data: the serializer splits data into lines.
    assert Event(data="a\r\nb\x00").data == "a\r\nb\x00"
    assert Comment(text="nul \x00 ok").text == "nul \x00 ok"


def test_items_take_keyword_arguments_only() -> None:
    with pytest.raises(TypeError):
        Event("message")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Comment("x")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        EndOfStream(1)  # type: ignore[call-arg]


# ---------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"type": 1}, "Event.type must be str, not int"),
        ({"type": b"x"}, "Event.type must be str, not bytes"),
        ({"type": "a\rb"}, "Event.type may not contain '\\r'"),
        ({"type": "a\nb"}, "Event.type may not contain '\\n'"),
        ({"type": ""}, "Event.type may not be empty"),
        ({"data": None}, "Event.data must be str, not NoneType"),
        ({"data": b"x"}, "Event.data must be str, not bytes"),
        ({"id": 5}, "Event.id must be str, not int"),
        ({"id": "a\rb"}, "Event.id may not contain '\\r'"),
        ({"id": "a\nb"}, "Event.id may not contain '\\n'"),
        ({"id": "a\x00b"}, "Event.id may not contain '\\x00'"),
        ({"retry": -1}, "Event.retry must be a non-negative int or None"),
        ({"retry": True}, "Event.retry must be a non-negative int or None"),
        ({"retry": 1.0}, "Event.retry must be a non-negative int or None"),
        ({"retry": "5"}, "Event.retry must be a non-negative int or None"),
    ],
)
def test_event_validation(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(LocalProtocolError) as info:
        Event(**kwargs)
    assert str(info.value).startswith(message)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (None, "Comment.text must be str, not NoneType"),
        (b"x", "Comment.text must be str, not bytes"),
        ("a\rb", "Comment.text may not contain '\\r'"),
        ("a\nb", "Comment.text may not contain '\\n'"),
    ],
)
def test_comment_validation(text: Any, message: str) -> None:
    with pytest.raises(LocalProtocolError) as info:
        Comment(text=text)
    assert str(info.value).startswith(message)


@pytest.mark.parametrize("partial_line", [-1, True, 1.0, "3", None])
def test_end_of_stream_validation(partial_line: Any) -> None:
    with pytest.raises(LocalProtocolError, match="partial_line must be a non-negative int"):
        EndOfStream(partial_line=partial_line)


def test_validation_errors_are_protocol_errors_not_remote_ones() -> None:
    with pytest.raises(LocalProtocolError) as info:
        Event(type="")
    assert not isinstance(info.value, RemoteProtocolError)


# ---------------------------------------------------------------- equality and hashing


def _parsed(data: bytes) -> list[ReceivedItem]:
    return feed([data], keep_raw=True)[0]


def test_equality_is_by_value_only() -> None:
    comment, event, end = _parsed(b": hi\n\n\nid: 1\ndata: x\n\n")
    # Parsed items carry spans and raw bytes; hand-built ones carry -1 and None.
    assert event.span == (7, 22)  # type: ignore[union-attr]
    assert event.raw == b"\n\nid: 1\ndata: x\n\n"
    assert event == Event(data="x", id="1")
    assert comment == Comment(text="hi")
    assert end == EndOfStream()


def test_items_differing_in_one_value_are_unequal() -> None:
    base = Event(type="t", data="d", id="i", retry=1)
    for changed in (
        Event(type="u", data="d", id="i", retry=1),
        Event(type="t", data="e", id="i", retry=1),
        Event(type="t", data="d", id="j", retry=1),
        Event(type="t", data="d", id="i", retry=2),
        Event(type="t", data="d", id="i"),
    ):
        assert base != changed
        assert not base == changed  # noqa: SIM201 - __eq__ itself is under test
    assert Comment(text="a") != Comment(text="b")
    assert EndOfStream(partial_line=1) != EndOfStream(partial_line=2)
    assert EndOfStream(partial_event=True) != EndOfStream()


def test_items_of_different_classes_are_unequal() -> None:
    assert Event(data="") != Comment(text="")
    assert Comment(text="") != EndOfStream()
    assert Event() != EndOfStream()


@pytest.mark.parametrize(
    "other",
    [
        ("message", "x", "", None),
        ["message", "x", "", None],
        {"type": "message", "data": "x", "id": "", "retry": None},
        "x",
        None,
        0,
    ],
    ids=["tuple", "list", "dict", "str", "None", "int"],
)
def test_event_is_unequal_to_other_types(other: object) -> None:
    event = Event(data="x")
    assert event != other
    assert other != event
    assert not event == other  # noqa: SIM201 - __eq__ itself is under test


def test_comment_is_unequal_to_a_plain_tuple_of_its_value() -> None:
    assert Comment(text="x") != ("x",)
    assert ("x",) != Comment(text="x")  # noqa: SIM300 - the reflected operand order
    assert EndOfStream() != (0, False)


def test_equal_items_hash_equal() -> None:
    comment, event, _ = _parsed(b": hi\ndata: x\n\n")
    assert hash(event) == hash(Event(data="x"))
    assert hash(comment) == hash(Comment(text="hi"))
    assert hash(EndOfStream(partial_line=2)) == hash(EndOfStream(partial_line=2))
    assert len({event, Event(data="x"), comment, Comment(text="hi")}) == 2


def test_items_work_as_dict_keys() -> None:
    counts = {Event(data="a"): 0, Comment(text="a"): 0}
    for item in _parsed(b"data: a\n\n: a\ndata: a\n\n"):
        if item in counts:
            counts[item] += 1
    assert counts == {Event(data="a"): 2, Comment(text="a"): 1}


@pytest.mark.parametrize(
    ("left", "right"),
    [
        (Event(data="a"), Event(data="b")),
        (Comment(text="a"), Comment(text="b")),
        (EndOfStream(), EndOfStream(partial_line=1)),
        (Event(), Comment()),
        (Event(), 1),
    ],
)
def test_items_are_not_ordered(left: Any, right: Any) -> None:
    with pytest.raises(TypeError):
        left < right  # noqa: B015
    with pytest.raises(TypeError):
        left <= right  # noqa: B015
    with pytest.raises(TypeError):
        left > right  # noqa: B015
    with pytest.raises(TypeError):
        left >= right  # noqa: B015
    with pytest.raises(TypeError):
        sorted([left, right])


# ---------------------------------------------------------------- immutability


@pytest.mark.parametrize(
    ("item", "name"),
    [
        (Event(), "type"),
        (Event(), "data"),
        (Event(), "id"),
        (Event(), "retry"),
        (Event(), "start"),
        (Event(), "end"),
        (Event(), "span"),
        (Event(), "raw"),
        (Event(), "extra"),
        (Comment(), "text"),
        (Comment(), "start"),
        (Comment(), "extra"),
        (EndOfStream(), "partial_line"),
        (EndOfStream(), "truncated"),
        (EndOfStream(), "extra"),
    ],
)
def test_items_are_immutable(item: object, name: str) -> None:
    with pytest.raises(AttributeError):
        setattr(item, name, "changed")
    with pytest.raises(AttributeError):
        delattr(item, name)


# ---------------------------------------------------------------- repr


@pytest.mark.parametrize(
    "item",
    [
        Event(),
        Event(type="t", data="a\nb'\"", id="é", retry=3),
        Comment(text="ping"),
        EndOfStream(partial_line=2, partial_event=True),
    ],
    ids=repr,
)
def test_repr_evaluates_back_to_an_equal_item(item: object) -> None:
    namespace = {"Event": Event, "Comment": Comment, "EndOfStream": EndOfStream}
    assert eval(repr(item), namespace) == item


def test_repr_shows_values_not_metadata() -> None:
    (event, _) = _parsed(b"data: x\n\n")
    assert repr(event) == "Event(type='message', data='x', id='', retry=None)"
    assert repr(Comment(text="c")) == "Comment(text='c')"
    assert repr(EndOfStream()) == "EndOfStream(partial_line=0, partial_event=False)"


# ---------------------------------------------------------------- pickle and copy


def test_pickle_and_copy_round_trip_keep_values_and_metadata() -> None:
    items = _parsed(b": c\r\nevent: e\r\nid: 1\r\nretry: 9\r\ndata: x\r\n\r\ndata: y")
    assert items == [
        Comment(text="c"),
        Event(type="e", data="x", id="1", retry=9),
        EndOfStream(partial_line=7),
    ]
    for item in items:
        for clone in (
            pickle.loads(pickle.dumps(item)),
            pickle.loads(pickle.dumps(item, protocol=0)),
            copy.copy(item),
            copy.deepcopy(item),
        ):
            assert clone == item
            assert type(clone) is type(item)
            assert clone.raw == item.raw
            if not isinstance(item, EndOfStream):
                assert clone.span == item.span  # type: ignore[union-attr]


def test_pickle_hand_built_items() -> None:
    for item in (Event(type="x", data="y", id="z", retry=1), Comment(text="t"), EndOfStream()):
        clone = pickle.loads(pickle.dumps(item))
        assert clone == item
        assert hash(clone) == hash(item)


def test_remote_protocol_error_pickles_with_its_offset() -> None:
    conn = Connection()
    conn.receive_data(b"data: \xff\n\n")
    with pytest.raises(RemoteProtocolError) as info:
        drain(conn)
    clone = pickle.loads(pickle.dumps(info.value))
    assert type(clone) is RemoteProtocolError
    assert clone.offset == info.value.offset == 6
    assert str(clone) == str(info.value)


def test_local_protocol_error_pickles() -> None:
    clone = pickle.loads(pickle.dumps(LocalProtocolError("misuse")))
    assert type(clone) is LocalProtocolError
    assert str(clone) == "misuse"


# ---------------------------------------------------------------- exact values, public names


class _Str(str):
    def __format__(self, spec: str) -> str:
        return "other"


class _Int(int):
    def __str__(self) -> str:
        return "other"


def test_constructors_store_exact_str_and_int_values() -> None:
    # What the constructor checked is what it stores: a plain copy, not the subclass.
    event = Event(type=_Str("t"), data=_Str("d"), id=_Str("i"), retry=_Int(3))
    assert [type(value) for value in (event.type, event.data, event.id, event.retry)] == [
        str,
        str,
        str,
        int,
    ]
    assert (event.type, event.data, event.id, event.retry) == ("t", "d", "i", 3)
    assert type(Comment(text=_Str("c")).text) is str
    end = EndOfStream(partial_line=_Int(2))
    assert type(end.partial_line) is int
    assert end.partial_line == 2


@pytest.mark.parametrize(
    ("item", "positional"),
    [
        (Event(type="t", data="d", id="i", retry=1), ("t", "d", "i", 1)),
        (Comment(text="c"), ("c",)),
        (EndOfStream(partial_line=3, partial_event=True), (3, True)),
    ],
)
def test_match_args_name_the_value_fields_in_order(
    item: ReceivedItem, positional: tuple[object, ...]
) -> None:
    assert tuple(getattr(item, name) for name in type(item).__match_args__) == positional


@pytest.mark.parametrize(
    "cls", [Event, Comment, EndOfStream, LocalProtocolError, RemoteProtocolError]
)
def test_public_classes_print_their_public_path(cls: type) -> None:
    assert repr(cls) == f"<class 'sse_sansio.{cls.__name__}'>"


def test_a_traceback_names_the_public_error_class() -> None:
    import traceback

    import sse_sansio

    error = RemoteProtocolError("bad byte at byte offset 3", offset=3)
    line = traceback.format_exception_only(type(error), error)[-1]
    assert line == "sse_sansio.RemoteProtocolError: bad byte at byte offset 3\n"
    assert repr(sse_sansio.ProtocolError) == "<class 'sse_sansio.ProtocolError'>"
