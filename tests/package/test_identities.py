"""Public identities (issue 32, item 4): what the faces export is named by the faces.

Every class and function in the ``__all__`` of sse_sansio, sse_sansio.llm,
sse_sansio.testing and sse_sansio.stores has that face as ``__module__``, and the face
hands back the very object under its ``__qualname__``, so pickle finds it there.  A
pickle of a public value (the items, the errors, the records, the enums, NEED_DATA)
names public paths only, at every protocol, and comes back equal: a later move inside
the house breaks no pickle made today.

What a pickle names is read back the way unpickling reads it (tests/helpers/pickles.py
says how, and which standard-library helpers are allowed).  The state machines
(Watchdog, Tracker, ReplayWindow, ...) and the handles that refuse pickling are
tests/package/test_state_pickles.py's; every exported class is in one group or another.
"""

from __future__ import annotations

import copy
import pickle
import traceback
from importlib import import_module
from types import ModuleType
from typing import Any

import pytest

import sse_sansio
from sse_sansio import (
    NEED_DATA,
    AttemptEnd,
    Comment,
    DataPiece,
    Diagnostic,
    EndOfStream,
    Event,
    LocalProtocolError,
    PiecedEvent,
    Reconnect,
    RemoteProtocolError,
    ResponseCheck,
    ResponseError,
    Resume,
    SkippedEvent,
    Stop,
    StopCause,
    StoreSnapshot,
    StreamCut,
    TruncatedStreamError,
    Update,
    Verdict,
    llm,
    testing,
)
from sse_sansio._public import is_private_path, publish
from sse_sansio._receive._connection import PyConnection
from tests.helpers.pickles import (
    FACES,
    HANDLES,
    NO_INSTANCES,
    PROTOCOLS,
    STATE_MACHINES,
    STDLIB_HELPERS,
    assert_public,
    exported,
    exported_classes,
    load_recording,
)

# ------------------------------------------------------------------- names and paths


@pytest.mark.parametrize("face", FACES, ids=lambda face: face.__name__)
def test_every_exported_class_and_function_is_named_by_its_face(face: ModuleType) -> None:
    for name, obj in exported(face):
        assert (obj.__module__, obj.__qualname__) == (face.__name__, name)
        assert getattr(import_module(obj.__module__), obj.__qualname__) is obj


@pytest.mark.parametrize("name", ["sse_sansio.asgi", "sse_sansio.aiohttp"])
def test_the_serving_faces_name_their_adapters(name: str) -> None:
    # Faces of their own (they import a framework, so sse_sansio does not import them).
    face = import_module(name)
    assert [n for n, _ in exported(face)] == list(face.__all__)
    for export, obj in exported(face):
        assert (obj.__module__, obj.__qualname__) == (name, export)


def test_the_walk_sees_classes_functions_and_the_compiled_connection() -> None:
    # A walk that found nothing would pass the test above: count what it checks.
    names = {name for face in FACES for name, _ in exported(face)}
    assert {"Event", "check_response", "Connection", "Tracker", "generic"} <= names
    assert {"Cassette", "assert_chunking_invariant", "RedisStreamStore"} <= names
    assert "NEED_DATA" not in names
    assert "DEFAULT_MAX_EVENT_SIZE" not in names


def test_constants_sentinels_and_aliases_are_left_as_they_are() -> None:
    assert sse_sansio.ReceivedItem == Event | Comment | EndOfStream
    assert type(NEED_DATA).__module__ == "sse_sansio"  # its class, NeedData, is named
    assert isinstance(llm.DIALECT_NAMES, tuple)


def test_a_traceback_names_the_public_path() -> None:
    error = RemoteProtocolError("too big", offset=3)
    line = traceback.format_exception_only(type(error), error)[-1]
    assert line == "sse_sansio.RemoteProtocolError: too big\n"
    assert repr(Event) == "<class 'sse_sansio.Event'>"


def test_publish_names_an_alias_by_its_exported_name() -> None:
    # The pure core's class is PyConnection; where it is the chosen core it is exported
    # as Connection, and must be found under that name.
    class Inner:
        pass

    def helper() -> None:
        pass

    Inner.__module__ = helper.__module__ = "pkg._room"
    namespace = {"Outer": Inner, "helper": helper, "LIMIT": 3}
    publish(namespace, ["Outer", "helper", "LIMIT"], "pkg")
    assert (Inner.__module__, Inner.__name__, Inner.__qualname__) == ("pkg", "Outer", "Outer")
    assert (helper.__module__, helper.__qualname__) == ("pkg", "helper")


def test_publish_leaves_an_object_another_face_already_names() -> None:
    class Borrowed:
        pass

    Borrowed.__module__ = "otherpkg"
    publish({"Borrowed": Borrowed, "Event": Event}, ["Borrowed", "Event"], "pkg.sub")
    assert Borrowed.__module__ == "otherpkg"
    assert Event.__module__ == "sse_sansio"  # re-exported by pkg.sub: not moved


@pytest.mark.parametrize(
    ("path", "private"),
    [
        ("sse_sansio.Event", False),
        ("sse_sansio._events._rebuild", True),
        ("builtins.tuple.__new__", False),
        ("copyreg.__newobj__", False),
        ("sse_sansio.llm._openai_chat.OpenAIChat", True),
        ("_codecs.encode", True),
    ],
)
def test_is_private_path(path: str, private: bool) -> None:
    assert is_private_path(path) is private


# ------------------------------------------------------------------------- pickles


def same_error(a: BaseException, b: BaseException) -> bool:
    """Errors have no value equality: same class, message and attributes."""
    return type(a) is type(b) and a.args == b.args and vars(a) == vars(b)


def round_trips(obj: object) -> None:
    """Pickle at every protocol: public paths only, and back equal."""
    for protocol in PROTOCOLS:
        back, names = load_recording(pickle.dumps(obj, protocol))
        assert_public(names)
        if isinstance(obj, BaseException):
            assert isinstance(back, BaseException)
            assert same_error(back, obj), protocol
        else:
            assert back == obj, protocol
            assert type(back) is type(obj)


CHECK = ResponseCheck(
    action="fail",
    reason="status 502 Bad Gateway",
    status=502,
    content_type="text/html; charset=utf-8",
)

VALUES: dict[str, object] = {
    # the items
    "Event": Event(type="update", data="line one\nline two", id="42", retry=1500),
    "Event-default": Event(),
    "Comment": Comment(text="keepalive"),
    "EndOfStream": EndOfStream(partial_line=7, partial_event=True),
    "SkippedEvent": SkippedEvent(type="big", id="9", size=2048),
    "DataPiece": DataPiece(text="half a"),
    "PiecedEvent": PiecedEvent(type="delta", id="3", retry=20),
    "Diagnostic": Diagnostic(code="unknown-field", message="a field named foo"),
    "Update": Update(id="5", retry=2000),
    # the records
    "ResponseCheck": CHECK,
    "Reconnect": Reconnect(
        delay=3.5, at=103.5, headers={"Last-Event-ID": "42"}, attempt=2, reason="cut"
    ),
    "Stop": Stop(cause=StopCause.GAVE_UP, reason="five attempts failed"),
    "Verdict": Verdict(state="stalled", deadline=12.25),
    "Resume": Resume(verdict="gap", events=(Event(data="a", id="1"),), finished=True),
    "StoreSnapshot": StoreSnapshot(
        token="t-1", first=4, last=5, events=((4, Event(data="x")), (5, Event(type="y")))
    ),
    "llm.Usage": llm.Usage(input_tokens=10, output_tokens=5, provenance="partial"),
    "llm.Provenance": llm.Provenance("reported", "given", "reported"),
    "llm.ToolCall": llm.ToolCall(
        id="call_1", name="lookup", arguments='{"q": 1}', arguments_json={"q": 1}, complete=True
    ),
    "llm.Answer": llm.Answer(
        text="It is 4.",
        reasoning="2 + 2",
        tool_calls=(llm.ToolCall(None, "sum", "{", None, False),),
        complete=False,
    ),
    "llm.Outcome": llm.Outcome(
        outcome="cut",
        reason="the stream ended before [DONE]",
        dialect="openai-chat",
        cut="before-terminal",
        offset=812,
        events=6,
        usage=llm.Usage(output_tokens=3, provenance="reported"),
    ),
    "testing.Cassette": testing.Cassette(
        chunks=[(0.0, b"data: a\n\n"), (0.25, b"\xff: bytes, not text\n")],
        end="error",
        error="reset by peer",
        end_time=0.5,
        metadata={"url": "https://example.test/stream", "status": 200},
    ),
    "testing.Outcome": testing.Outcome(
        results=[Event(data="a"), EndOfStream()], error=None, last_event_id="a1", retry=None
    ),
    # the enums and the sentinel
    "AttemptEnd": AttemptEnd.NETWORK_ERROR,
    "StopCause": StopCause.COMPLETED,
    "NEED_DATA": NEED_DATA,
    # the errors
    "LocalProtocolError": LocalProtocolError("data after the end of the stream"),
    "RemoteProtocolError": RemoteProtocolError("an event over 16 bytes", offset=17),
    "StreamCut": StreamCut(),
    "StreamCut-message": StreamCut("upstream reset"),
    "TruncatedStreamError": TruncatedStreamError(EndOfStream(partial_line=3), offset=99),
    "ResponseError": ResponseError(CHECK, b"<html>Bad gateway</html>"),
    "llm.PayloadError": llm.PayloadError("event 'delta' at 5: not JSON", offset=5),
    "testing.CassetteError": testing.CassetteError("no end record", line=12),
    "testing.RecordedError": testing.RecordedError("ConnectionResetError: reset"),
}


@pytest.mark.parametrize("value", VALUES.values(), ids=VALUES.keys())
def test_a_public_value_pickles_by_public_paths_and_back_equal(value: object) -> None:
    round_trips(value)


def test_need_data_pickles_to_itself() -> None:
    for protocol in PROTOCOLS:
        assert pickle.loads(pickle.dumps(NEED_DATA, protocol)) is NEED_DATA


def test_every_exported_class_is_a_value_a_state_machine_a_handle_or_has_no_instances() -> None:
    # Every exported class whose instances are values to keep is built above; a new
    # one must be added there, or to one of the other groups (tests/helpers/pickles.py),
    # which test_state_pickles.py holds to a test case each.  A class in two groups is
    # a mistake too.
    built = {type(value) for value in VALUES.values()}
    values = {name for name, cls in exported_classes().items() if cls in built}
    groups = [values, STATE_MACHINES, HANDLES, NO_INSTANCES]
    for name in exported_classes():
        assert sum(name in group for group in groups) == 1, f"{name}: in none or in two"


def test_the_connection_refuses_pickle_and_copy(conn_cls: Any) -> None:
    # Not a value: a copy would share the parser's state.  Its public name is still
    # what the refusal's traceback shows.
    conn = conn_cls()
    with pytest.raises(TypeError):
        pickle.dumps(conn)
    with pytest.raises(TypeError):
        copy.copy(conn)


def test_an_error_keeps_its_notes_and_extra_attributes() -> None:
    error = RemoteProtocolError("refused", offset=8)
    error.hint = "raise max_event_size"  # type: ignore[attr-defined]
    notes = ["while reading https://example.test/"]
    error.add_note(notes[0])
    for protocol in PROTOCOLS:
        back = pickle.loads(pickle.dumps(error, protocol))
        assert (back.offset, back.hint) == (8, "raise max_event_size")
        assert getattr(back, "__notes__", []) == notes


def test_a_copy_keeps_an_items_metadata() -> None:
    conn = PyConnection()
    conn.receive_data(b": hi\n")
    comment = conn.next_event()
    assert isinstance(comment, Comment)
    for clone in (copy.copy(comment), copy.deepcopy(comment)):
        assert (clone, clone.span) == (comment, (0, 5))


# ------------------------------------------------------- what each core parses

STREAM = (
    b"foo: bar\nid: 7\nevent: big\ndata: " + b"x" * 100 + b"\n\n"
    b": ping\nevent: up\ndata: hello\nretry: 250\n\nid: 8\nretry: 9\n\ndata: cut"
)
OPTIONS: list[dict[str, Any]] = [
    {"keep_raw": True, "diagnostics": True, "on_oversize": "skip", "max_event_size": 64},
    {"keep_raw": True, "updates": True},
    {"keep_raw": True, "piece_size": 4},
    {},
]


def parsed(cls: Any, **options: Any) -> list[Any]:
    conn = cls(**options)
    conn.receive_data(STREAM)
    conn.receive_data(b"")
    items = []
    while not isinstance(item := conn.next_event(), EndOfStream):
        items.append(item)
    return [*items, item]


def test_each_cores_items_and_errors_pickle_alike(conn_cls: Any) -> None:
    # The compiled core builds the same Python classes; its items must pickle to the
    # very bytes of the pure core's, metadata (start, end, raw) included.
    kinds = set()
    for options in OPTIONS:
        items = parsed(conn_cls, **options)
        reference = parsed(PyConnection, **options)
        kinds |= {type(item) for item in items}
        for protocol in PROTOCOLS:
            data = pickle.dumps(items, protocol)
            assert data == pickle.dumps(reference, protocol)
            back, names = load_recording(data)
            assert_public(names)
            assert [(type(i), tuple(i)) for i in back] == [(type(i), tuple(i)) for i in items]
    assert kinds == {
        Event,
        Comment,
        EndOfStream,
        SkippedEvent,
        DataPiece,
        PiecedEvent,
        Diagnostic,
        Update,
    }
    with pytest.raises(RemoteProtocolError) as refused:
        parsed(conn_cls, max_event_size=16)
    round_trips(refused.value)


def test_the_durable_face_names_its_exports() -> None:
    # A face of its own (``import sse_sansio`` does not import it); three of its names
    # load on first use and are named by their own modules as they load.
    face = import_module("sse_sansio.durable")
    names = [n for n, _ in exported(face)]
    assert {"DurableStreams", "Request", "RedisStore", "asgi_app"} <= set(names)
    for export, obj in exported(face):
        assert (obj.__module__, obj.__qualname__) == ("sse_sansio.durable", export)
        assert getattr(face, export) is obj


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_durable_values_pickle_by_public_paths(protocol: int) -> None:
    from sse_sansio.durable import (
        AppendOutcome,
        AppendPlan,
        LiveRead,
        Request,
        Response,
        StreamMeta,
    )

    values = [
        Request("POST", "/v1/stream/a", [("content-type", "text/plain")], "", b"hi"),
        Response(204, [("stream-next-offset", "0000000000000000_0000000000000002")]),
        StreamMeta("/v1/stream/a", "s1", "text/plain", False, tail=2),
        LiveRead("sse", "/v1/stream/a", 2, 30.0, None),
        AppendPlan([b"hi"], 2, "text/plain", False, None, None, 1.0),
        AppendOutcome("appended", 2),
    ]
    if protocol < 2:  # a class with __slots__ and no __getstate__: Python's own refusal
        values = [value for value in values if not isinstance(value, Response)]
    for value in values:
        back, names = load_recording(pickle.dumps(value, protocol))
        assert back == value
        assert ("sse_sansio.durable", type(value).__name__) in names
        for module, name in names:
            path = f"{module}.{name}"
            assert (module, name) in STDLIB_HELPERS or not is_private_path(path), path
            assert module == "sse_sansio.durable" or not module.startswith("sse_sansio"), path
