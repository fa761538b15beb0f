"""The compiled core runs the opt-in modes itself (issue 20, item 2).

A compiled Connection made with ``on_oversize="skip"``, ``piece_size`` or
``diagnostics=True`` parses in _core.c's second walker (its "opt-in modes" section, the
rules of _modes.py) and says ``implementation == "compiled"``; no pure connection
is made behind it.  These tests check that, the options' checks (the pure core's, from
_contract.py), and everything observable against the pure core on streams that reach
the modes' corners; tests/receive/test_cores.py and tests/fuzz/cores.py compare the two cores
on random streams, chunkings and options, the modes included.

Like tests/receive/test_cores.py, this needs the extension: without it the tests skip, unless
SSE_SANSIO_REQUIRE_EXTENSIONS=1 asks for it (CI), in which case they fail.
"""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from sse_sansio import (
    NEED_DATA,
    DataPiece,
    Diagnostic,
    EndOfStream,
    Event,
    LocalProtocolError,
    PiecedEvent,
    RemoteProtocolError,
    SkippedEvent,
)
from sse_sansio._receive import _connection
from tests.helpers import parser_config
from tests.helpers.cores import CORE, PURE, compiled, needs_core, observe

pytestmark = needs_core


OPTION_VALUES = [
    {"on_oversize": "skip"},
    {"piece_size": 4},
    {"diagnostics": True},
    {"on_oversize": "skip", "piece_size": 4, "diagnostics": True},
]


@pytest.fixture
def no_pure_core(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pure connection made from now on fails the test."""

    class Refusing(PURE):
        def __init__(self, **options: Any) -> None:
            raise AssertionError(f"a pure connection was made: {options}")

    monkeypatch.setattr(_connection, "PyConnection", Refusing)
    monkeypatch.setattr(_connection, "Connection", Refusing)


def full(item: Any) -> tuple[type, tuple[Any, ...]]:
    """An item with every field, its spans and raw bytes too (== compares the values)."""
    return type(item), tuple(item)


# --------------------------------------------------------------------------- the core


@pytest.mark.parametrize(
    "options",
    [{}, {"on_oversize": "error"}, {"piece_size": None}, {"diagnostics": False}, *OPTION_VALUES],
)
def test_every_option_keeps_the_compiled_core(no_pure_core: None, options: dict[str, Any]) -> None:
    conn = compiled(**options)
    assert conn.implementation == "compiled"
    conn.receive_data(b"data: x\n\n")
    assert conn.next_event() == Event(data="x")


@pytest.mark.parametrize(
    ("options", "stream", "kinds"),
    [
        (
            {"on_oversize": "skip", "max_event_size": 16},
            b"data: " + b"x" * 40 + b"\n\n" + b"data: after\n\n",
            ["SkippedEvent", "Event", "EndOfStream"],
        ),
        (
            # The 40 bytes that arrive at once are one piece (at least piece_size
            # bytes), then the event's end.
            {"piece_size": 16},
            b"data: " + b"x" * 40 + b"\n\n",
            ["DataPiece", "PiecedEvent", "EndOfStream"],
        ),
        ({"diagnostics": True}, b"foo: 1\n", ["Diagnostic", "EndOfStream"]),
    ],
)
def test_each_option_takes_effect_in_the_compiled_core(
    no_pure_core: None, options: dict[str, Any], stream: bytes, kinds: list[str]
) -> None:
    conn = compiled(**options)
    conn.receive_data(stream)
    conn.receive_data(b"")
    seen: list[str] = []
    while not seen or seen[-1] != "EndOfStream":
        seen.append(type(conn.next_event()).__name__)
    assert seen == kinds


def test_a_second_init_starts_afresh_with_its_own_options(no_pure_core: None) -> None:
    conn = compiled(diagnostics=True)
    conn.receive_data(b"foo: 1\n")
    assert isinstance(conn.next_event(), Diagnostic)
    conn.__init__()
    conn.receive_data(b"foo: 1\n\ndata: " + b"y" * 20 + b"\n\n")
    assert conn.next_event() == Event(data="y" * 20)
    conn.__init__(piece_size=9)
    conn.receive_data(b"data: " + b"y" * 20 + b"\n\n")
    assert full(conn.next_event()) == (DataPiece, ("y" * 20, 0, 26, None))
    assert full(conn.next_event()) == (PiecedEvent, ("message", "", None, 0, 28, None))


def test_errors_are_sticky_in_the_modes() -> None:
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


def test_the_last_piece_and_the_pieced_event_come_one_call_apart() -> None:
    # The blank line completes both: the piece is returned first, the PiecedEvent on
    # the next call, and take_raw() between them has nothing to give.
    conn = compiled(piece_size=3, keep_raw=True)
    conn.receive_data(b"data: abcd\ndata: e\n\n")
    assert full(conn.next_event()) == (DataPiece, ("abcd", 0, 10, b"data: abcd"))
    assert full(conn.next_event()) == (DataPiece, ("\ne", 10, 19, b"\ndata: e\n"))
    assert conn.take_raw() == b""
    assert full(conn.next_event()) == (PiecedEvent, ("message", "", None, 0, 20, b"\n"))
    assert conn.next_event() is NEED_DATA


def test_a_skipped_block_is_cut_out_of_the_raw_bytes() -> None:
    conn = compiled(on_oversize="skip", max_event_size=8, keep_raw=True)
    conn.receive_data(b"\n\nid: 1\ndata: " + b"z" * 30 + b"\nevent: e\n\ndata: k\n\n")
    assert full(conn.next_event()) == (SkippedEvent, ("e", "1", 52, 2, 55, b""))
    assert conn.take_raw() == b"\n\n"  # the blank lines before it; none of its bytes
    assert full(conn.next_event()) == (Event, ("message", "k", "1", None, 55, 64, b"data: k\n\n"))
    conn.receive_data(b"")
    assert full(conn.next_event()) == (EndOfStream, (0, False, b""))


def test_a_streamed_value_fails_at_its_bad_byte_with_the_pure_message() -> None:
    stream = b"data: " + b"a" * 9 + b"\xe4\xb8" + b"(" + b"\n\n"
    for cut in range(len(stream) + 1):
        chunks = [c for c in (stream[:cut], stream[cut:]) if c]
        ours = observe(compiled, chunks, piece_size=4)
        assert ours == observe(PURE, chunks, piece_size=4), cut
        assert ours[-3][1:] == ("invalid UTF-8 (invalid continuation byte) at byte offset 15", 15)


def test_the_options_are_checked_as_in_the_pure_core() -> None:
    def failure(factory: Any, **options: Any) -> tuple[type[BaseException], str]:
        try:
            factory(**options)
        except (TypeError, ValueError) as exc:
            return type(exc), str(exc)
        raise AssertionError(f"{options} was accepted")

    for bad in (
        {"on_oversize": "drop"},
        {"piece_size": 0},
        {"piece_size": True},
        {"piece_size": 9, "max_event_size": 8},
        {"errors": "bad", "diagnostics": True},
    ):
        assert failure(compiled, **bad) == failure(PURE, **bad)


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


def test_the_pure_core_says_python() -> None:
    pure: Any = PURE
    assert pure().implementation == "python"
    assert pure(diagnostics=True).implementation == "python"


# --------------------------------------------------------------------------- both cores


STREAMS = [
    b"data: " + b"x" * 40 + b"\n\n" + b"data: after\n\n",
    b"foo: 1\nretry: x\nid: a\x00b\nevent: e\n\ndata: \xc3\xa9" + "é".encode() * 9 + b"\n\n",
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: y\r\n\r\n",
    b"id: 1\ndata: " + b"y" * 30 + b"\ndata: z\n\ndata: cut " + b"w" * 30,
    b"\xef\xbb\xbfretry: 7\r\nid: 2\r\n\r\n:c\rdata\rdata:\r\r" + b"\xf0\x9f\x98\x80" * 9,
    b"data: " + b"\xed\xa0" + b"\x80" + b"v" * 12 + b"\n\nid: x\ndata: " + b"q" * 50 + b"\n\n",
    b"\x1f\x8b\x08\x00data: z\n\n",
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
        {"diagnostics": True, "errors": "replace", "keep_raw": True},
        {"diagnostics": True, "piece_size": 5, "on_oversize": "skip", "max_event_size": 24},
    ],
)
def test_the_options_through_both_cores(stream: bytes, options: dict[str, Any]) -> None:
    assert compiled(**options).implementation == "compiled"
    for cut in range(len(stream) + 1):
        chunks = [c for c in (stream[:cut], stream[cut:]) if c]
        ours = observe(compiled, chunks, **options)
        assert ours == observe(PURE, chunks, **options), (cut, options)
    singles = [stream[i : i + 1] for i in range(len(stream))]
    assert observe(compiled, singles, **options) == observe(PURE, singles, **options)


@pytest.mark.parametrize("window", [1, 4, 7])
def test_the_window_is_read_when_the_connection_is_made(window: int) -> None:
    # A streamed value goes out a window at a time: the pieces' edges follow
    # the parser's window (PyConnection._tuning.window) in both cores.
    stream = b"data: " + b"w" * 40 + b"\n\n"
    with parser_config(window=window):
        ours = observe(compiled, [stream], piece_size=2)
        assert ours == observe(PURE, [stream], piece_size=2)
    pieces = [item for item in ours if isinstance(item, tuple) and item[0] is DataPiece]
    assert len(pieces) > 40 // (window + 6)


def _all_at_once(factory: Any, chunks: list[bytes], **options: Any) -> list[Any]:
    """Every chunk and the end of the stream fed before the first next_event()."""
    conn = factory(**options)
    for chunk in [*chunks, b""]:
        conn.receive_data(chunk)
    seen: list[Any] = []
    while not seen or seen[-1][0] is not EndOfStream:
        try:
            seen.append(full(conn.next_event()))
        except RemoteProtocolError as exc:
            return [*seen, (str(exc), exc.offset)]
    return seen


@pytest.mark.parametrize("stream", STREAMS)
@pytest.mark.parametrize(
    "options", [{"diagnostics": True}, {"piece_size": 3, "on_oversize": "skip"}]
)
def test_a_stream_fed_whole_before_the_first_call(stream: bytes, options: dict[str, Any]) -> None:
    # The sniff and the BOM look-ahead take what is queued, the end of the stream too.
    for chunks in ([stream], [stream[:1], stream[1:2], stream[2:]]):
        chunks = [c for c in chunks if c]
        ours = _all_at_once(compiled, chunks, **options)
        assert ours == _all_at_once(PURE, chunks, **options)
    if options.get("diagnostics") and stream.startswith(b"HTTP/"):
        assert ours[0][1][0] == "http-status-line"
