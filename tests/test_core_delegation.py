"""The compiled core hands the pure core's own options to the pure core (issue 15).

A compiled Connection made with ``on_oversize``, ``piece_size`` or ``diagnostics`` at a
value other than its default creates a pure ``_connection.PyConnection`` with the same
options and forwards every call to it; its ``implementation`` says "python".  With the
defaults (given or not) it parses itself and says "compiled".

The first part checks the forwarding itself against a stand-in pure class that records
what it is asked (the compiled core looks the pure class up when it delegates, so the
stand-in takes its place for a test): which options reach it, which calls, and that its
results and its errors come back unchanged.  The second part runs the real options
through both cores and compares everything observable.

Like tests/test_cores.py, this needs the extension: without it the tests skip, unless
SSE_SANSIO_REQUIRE_EXTENSIONS=1 asks for it (CI), in which case they fail.
"""

from __future__ import annotations

import gc
import inspect
import weakref
from typing import Any, ClassVar

import pytest

from sse_sansio import (
    NEED_DATA,
    Comment,
    EndOfStream,
    Event,
    LocalProtocolError,
    RemoteProtocolError,
    _connection,
)

from .test_cores import CORE, PURE, _observe, compiled, needs_core

pytestmark = needs_core


OPTION_VALUES = [
    {"on_oversize": "skip"},
    {"piece_size": 4},
    {"diagnostics": True},
]


class StandIn(PURE):
    """The pure core, taking any further options and remembering every call."""

    made: ClassVar[list[StandIn]] = []

    def __init__(self, **options: Any) -> None:
        self.options = options
        self.calls: list[str] = []
        known = {k: v for k, v in options.items() if k not in EXTRA}
        super().__init__(**known)
        StandIn.made.append(self)
        pure_next = self.next_event

        def next_event() -> Any:
            self.calls.append("next_event")
            return pure_next()

        self.next_event = next_event  # type: ignore[method-assign]

    def receive_data(self, data: Any) -> None:
        self.calls.append("receive_data")
        super().receive_data(data)

    def take_raw(self) -> bytes:
        self.calls.append("take_raw")
        return super().take_raw()


EXTRA = ("on_oversize", "piece_size", "diagnostics")


@pytest.fixture
def stand_in(monkeypatch: pytest.MonkeyPatch) -> type[StandIn]:
    StandIn.made = []
    monkeypatch.setattr(_connection, "PyConnection", StandIn)
    return StandIn


# --------------------------------------------------------------------------- forwarding


@pytest.mark.parametrize(
    "defaults",
    [{}, {"on_oversize": "error"}, {"piece_size": None}, {"diagnostics": False}],
)
def test_the_defaults_keep_the_compiled_core(
    stand_in: type[StandIn], defaults: dict[str, Any]
) -> None:
    conn = compiled(**defaults)
    assert conn.implementation == "compiled"
    assert stand_in.made == []
    conn.receive_data(b"data: x\n\n")
    assert conn.next_event() == Event(data="x")


@pytest.mark.parametrize("option", OPTION_VALUES)
def test_another_value_makes_a_pure_connection_with_the_same_options(
    stand_in: type[StandIn], option: dict[str, Any]
) -> None:
    options = {"errors": "replace", "last_event_id": "7", "max_event_size": 99, **option}
    conn = compiled(**options)
    assert conn.implementation == "python"
    [made] = stand_in.made
    assert made.options == options


@pytest.mark.parametrize("bad", [{"on_oversize": "drop"}, {"piece_size": 0}, {"diagnostics": 1}])
def test_an_invalid_value_is_judged_by_the_pure_core(
    stand_in: type[StandIn], bad: dict[str, Any]
) -> None:
    conn = compiled(**bad)  # the stand-in accepts anything: what it got is what was given
    assert stand_in.made[0].options == bad
    assert conn.implementation == "python"


def test_the_pure_cores_refusal_is_the_callers_error(monkeypatch: pytest.MonkeyPatch) -> None:
    class Refusing(PURE):
        def __init__(self, **options: Any) -> None:
            raise ValueError(f"refused {sorted(options)}")

    monkeypatch.setattr(_connection, "PyConnection", Refusing)
    with pytest.raises(ValueError, match=r"refused \['diagnostics', 'errors'\]"):
        compiled(errors="strict", diagnostics=True)


def test_every_call_is_forwarded_and_answered_by_the_pure_connection(
    stand_in: type[StandIn],
) -> None:
    conn = compiled(keep_raw=True, diagnostics=True)
    [made] = stand_in.made
    conn.receive_data(b"id: 5\nretry: 300\n\n: hi\ndata: a\n\n")
    assert conn.next_event() == Comment(text="hi")
    assert conn.next_event() == Event(data="a", id="5")
    assert conn.next_event() is NEED_DATA
    assert conn.take_raw() == b""
    assert (conn.last_event_id, conn.retry) == ("5", 300)
    assert (made.last_event_id, made.retry) == ("5", 300)
    conn.receive_data(bytearray(b"\n"))  # the pure core copies what is not bytes
    assert conn.next_event() is NEED_DATA
    assert conn.take_raw() == b"\n"  # a blank line: no item's
    conn.receive_data(b"")
    assert conn.next_event() == EndOfStream()
    assert made.calls == [
        "receive_data",
        "next_event",
        "next_event",
        "next_event",
        "take_raw",
        "receive_data",
        "next_event",
        "take_raw",
        "receive_data",
        "next_event",
    ]


def test_the_pure_connections_errors_come_back_unchanged_and_stay(
    stand_in: type[StandIn],
) -> None:
    conn = compiled(max_event_size=4, diagnostics=True)
    nxt = conn.next_event
    conn.receive_data(b"data: toolong\n\n")
    for call in (nxt, conn.next_event, lambda: conn.receive_data(b"x")):
        with pytest.raises(RemoteProtocolError) as error:
            call()
        assert error.value.offset == 4
    with pytest.raises(TypeError, match="receive_data\\(\\) takes bytes, not str"):
        compiled(diagnostics=True).receive_data("data")
    with pytest.raises(LocalProtocolError, match="keep_raw=True"):
        compiled(diagnostics=True).take_raw()


def test_the_same_items_as_the_pure_core_under_every_chunking(stand_in: type[StandIn]) -> None:
    stream = b"\xef\xbb\xbfid: 1\r\ndata: \xc3\xa9\r\n\r\n:c\rretry: 20\n\ndata: z"
    for cut in range(len(stream) + 1):
        chunks = [c for c in (stream[:cut], stream[cut:]) if c]
        for options in ({"keep_raw": True}, {"errors": "replace"}):
            ours = _observe(compiled, chunks, diagnostics=True, **options)
            assert ours == _observe(PURE, chunks, **options), (cut, options)


def test_a_second_init_forgets_the_delegate(stand_in: type[StandIn]) -> None:
    conn = compiled(diagnostics=True)
    conn.__init__()
    assert conn.implementation == "compiled"
    conn.__init__(piece_size=9)
    assert conn.implementation == "python"
    assert len(stand_in.made) == 2


def test_the_pure_connection_goes_with_its_owner(stand_in: type[StandIn]) -> None:
    conn = compiled(diagnostics=True)
    conn.receive_data(b"data: x\n\n")
    assert conn.next_event() == Event(data="x")
    delegate = weakref.ref(stand_in.made.pop())
    assert delegate() is not None
    del conn
    gc.collect()
    assert delegate() is None


def test_the_property_is_documented() -> None:
    assert CORE is not None
    doc = CORE.Connection.implementation.__doc__
    assert '"compiled"' in doc
    assert '"python"' in doc
    assert "IMPLEMENTATION" in doc


def test_the_signature_shows_the_options() -> None:
    assert CORE is not None
    parameters = inspect.signature(CORE.Connection).parameters
    assert parameters["on_oversize"].default == "error"
    assert parameters["piece_size"].default is None
    assert parameters["diagnostics"].default is False


# --------------------------------------------------------------------------- real options


def test_the_pure_core_says_python() -> None:
    pure: Any = PURE  # typed as the pure core is before issue-15b's options
    assert pure().implementation == "python"
    assert pure(diagnostics=True).implementation == "python"


STREAMS = [
    b"data: " + b"x" * 40 + b"\n\n" + b"data: after\n\n",
    b"foo: 1\nretry: x\nid: a\x00b\nevent: e\n\ndata: \xc3\xa9" + "é".encode() * 9 + b"\n\n",
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: y\r\n\r\n",
    b"id: 1\ndata: " + b"y" * 30 + b"\ndata: z\n\ndata: cut " + b"w" * 30,
]


@pytest.mark.parametrize("stream", STREAMS)
@pytest.mark.parametrize(
    "options",
    [
        {"on_oversize": "skip", "max_event_size": 16},
        {"on_oversize": "skip", "max_event_size": 16, "keep_raw": True},
        {"piece_size": 8},
        {"piece_size": 8, "keep_raw": True, "errors": "replace"},
        {"diagnostics": True},
        {"diagnostics": True, "piece_size": 5, "on_oversize": "skip", "max_event_size": 24},
    ],
)
def test_the_real_options_through_both_cores(stream: bytes, options: dict[str, Any]) -> None:
    assert compiled(**options).implementation == "python"
    for cut in range(0, len(stream) + 1, 3):
        chunks = [c for c in (stream[:cut], stream[cut:]) if c]
        ours = _observe(compiled, chunks, **options)
        assert ours == _observe(PURE, chunks, **options), (cut, options)


@pytest.mark.parametrize(
    ("options", "stream", "kinds"),
    [
        (
            {"on_oversize": "skip", "max_event_size": 16},
            STREAMS[0],
            ["SkippedEvent", "Event", "EndOfStream"],
        ),
        (
            # Pieces go out at chunk granularity: the 40 bytes that arrive at once are
            # one piece (at least piece_size bytes), then the event's end.
            {"piece_size": 16},
            b"data: " + b"x" * 40 + b"\n\n",
            ["DataPiece", "PiecedEvent", "EndOfStream"],
        ),
        ({"diagnostics": True}, b"foo: 1\n", ["Diagnostic", "EndOfStream"]),
    ],
)
def test_each_option_takes_effect_through_the_compiled_core(
    options: dict[str, Any], stream: bytes, kinds: list[str]
) -> None:
    conn = compiled(**options)
    conn.receive_data(stream)
    conn.receive_data(b"")
    seen: list[str] = []
    while not seen or seen[-1] != "EndOfStream":
        seen.append(type(conn.next_event()).__name__)
    assert seen == kinds


def _failure(factory: Any, **options: Any) -> tuple[type[BaseException], str]:
    try:
        factory(**options)
    except (TypeError, ValueError) as exc:
        return type(exc), str(exc)
    raise AssertionError(f"{options} was accepted")


@pytest.mark.parametrize("bad", [{"on_oversize": "drop"}, {"piece_size": 0}])
def test_an_invalid_value_fails_as_in_the_pure_core(bad: dict[str, Any]) -> None:
    # No stand-in: the real pure core refuses it (with a TypeError until it has the
    # options, a ValueError after), and the compiled core passes that refusal on.
    assert _failure(compiled, **bad) == _failure(PURE, **bad)
