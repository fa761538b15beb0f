"""Cassettes: the file format, recording, replay, faults, redaction, the server helper,
the command line and the pytest plugin (docs/cassettes.rst).

Clocks are injected everywhere: no assertion depends on how fast this machine runs.
The HTTP tests share one loopback server per module, and swap the cassette it plays.
"""

from __future__ import annotations

import asyncio
import io
import json
import math
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import pytest

import sse_sansio
from sse_sansio import (
    Comment,
    EndOfStream,
    Event,
    TruncatedStreamError,
    iter_events,
)
from sse_sansio._cli import _cassette as _cassette_cli
from sse_sansio._cli import _main as _cli
from sse_sansio.pytest_plugin import CassetteFolder
from sse_sansio.testing import (
    Cassette,
    CassetteError,
    CassetteServer,
    RecordedError,
    _cassette_file,
    arecord,
    chunkings,
    parse,
    record,
    replay,
    serve_cassette,
)
from tests.helpers.examples import (
    TICKS,
    ServerFactory,
    example_server,
    load_example,
    subprocess_env,
)

pytest_plugins = ["pytester"]
__all__ = ["example_server"]  # a fixture, used by name

# A stream with a bit of everything: a BOM, CRLF and CR line ends, a comment, an id, a
# retry, a two-line event, a character of three bytes, and a cut at the end.
STREAM = (
    b"\xef\xbb\xbfretry: 500\r\n: hello\r\n\r\nid: 7\rdata: caf\xc3\xa9\r\r"
    b"event: two\ndata: a\ndata: b\n\ndata: cut he"
)


def ticking(step: float = 0.25) -> Any:
    """A clock that advances ``step`` seconds at each reading, from 10."""
    state = {"now": 10.0 - step}

    def clock() -> float:
        state["now"] += step
        return state["now"]

    return clock


def spanned(items: list[Any]) -> list[tuple[Any, Any, Any]]:
    """Items with their spans: items compare without them."""
    return [(item, getattr(item, "start", None), getattr(item, "end", None)) for item in items]


def replayed_items(cassette: Cassette) -> list[Any]:
    return parse(chunk for _, chunk in replay(cassette))


# ---- the format ------------------------------------------------------------------------


def test_a_saved_cassette_loads_back_the_same(tmp_path: Path) -> None:
    cassette = Cassette.from_chunks(
        [(0, b"data: \xe2\x82"), (0.5, b"\xac\n\n"), (1.25, b"data: caf\xc3\xa9\n\n")],
        end="error",
        error="ConnectionResetError: reset by peer",
        end_time=2,
        metadata={"url": "http://127.0.0.1/", "status": 200, "note": ["free", 1]},
    )
    path = tmp_path / "c.jsonl"
    cassette.save(path)
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert lines[0] == {
        "format": "sse-sansio-cassette",
        "version": 1,
        "metadata": {"url": "http://127.0.0.1/", "status": 200, "note": ["free", 1]},
    }
    # A chunk that splits a character is not UTF-8 on its own: base64.
    assert lines[1] == {"t": 0, "base64": "ZGF0YTog4oI="}
    assert lines[2] == {"t": 0.5, "base64": "rAoK"}
    assert lines[3] == {"t": 1.25, "text": "data: café\n\n"}
    assert lines[4] == {"end": "error", "t": 2, "message": "ConnectionResetError: reset by peer"}
    assert Cassette.load(path) == cassette
    assert cassette.data == b"data: \xe2\x82\xac\n\ndata: caf\xc3\xa9\n\n"


def test_from_chunks_drops_empty_chunks_and_secret_headers() -> None:
    headers = {"Content-Type": "text/event-stream", "Set-Cookie": "s=1", "X-API-Key": "k"}
    cassette = Cassette.from_chunks(
        [(0, b""), (1, bytearray(b"data: x\n\n")), (2, memoryview(b""))],
        metadata={"headers": headers},
    )
    assert cassette.chunks == [(1, b"data: x\n\n")]
    assert cassette.end == "clean"
    assert cassette.end_time == 1
    assert cassette.metadata == {"headers": [["Content-Type", "text/event-stream"]]}
    pairs = [("Authorization", "Bearer t"), ("Cookie", "c"), ("Proxy-Authorization", "p")]
    kept = Cassette.from_chunks([], metadata={"headers": [*pairs, ("api-key", "a")]})
    assert kept.metadata == {"headers": []}
    assert kept.end_time == 0
    secret = Cassette.from_chunks([], metadata={"headers": pairs}, keep_secrets=True)
    assert secret.metadata["headers"] == [list(pair) for pair in pairs]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Cassette.from_chunks([(-1, b"x")]), "not negative"),
        (lambda: Cassette.from_chunks([(1, b"x"), (0.5, b"y")]), "goes back"),
        (lambda: Cassette.from_chunks([(math.nan, b"x")]), "finite"),
        (lambda: Cassette.from_chunks([(True, b"x")]), "finite"),
        (lambda: Cassette([(0, b"")]), "non-empty bytes"),
        (lambda: Cassette([(0, "x")]), "non-empty bytes"),  # type: ignore[list-item]
        (lambda: Cassette.from_chunks([], end="done"), "not 'done'"),  # type: ignore[arg-type]
        (lambda: Cassette.from_chunks([], end="error"), "has a message"),
        (lambda: Cassette.from_chunks([], error="boom"), "only an error end"),
        (lambda: Cassette.from_chunks([(2, b"x")], end_time=1), "goes back"),
        (lambda: Cassette.from_chunks([], metadata={"x": {1, 2}}), "not JSON"),
        (lambda: Cassette.from_chunks([], metadata={"x": math.inf}), "not JSON"),
    ],
)
def test_a_cassette_breaking_the_invariants_is_refused(make: Any, message: str) -> None:
    with pytest.raises(CassetteError, match=message) as caught:
        make()
    assert caught.value.line is None


HEADER = '{"format": "sse-sansio-cassette", "version": 1, "metadata": {}}'
CHUNK = '{"t": 0, "text": "data: x\\n\\n"}'
END = '{"end": "clean", "t": 0}'


@pytest.mark.parametrize(
    ("lines", "line", "message"),
    [
        ([], 1, "the file is empty"),
        (["not json"], 1, "not a JSON object"),
        (["[1]"], 1, "not a JSON object: list"),
        (['{"format": "other"}'], 1, "not a cassette"),
        (['{"format": "sse-sansio-cassette", "version": 2, "metadata": {}}'], 1, "version 2"),
        (['{"format": "sse-sansio-cassette", "version": 1}'], 1, "missing ['metadata']"),
        (['{"format": "sse-sansio-cassette", "version": 1, "metadata": [], "x": 1}'], 1, "x"),
        (['{"format": "sse-sansio-cassette", "version": 1, "metadata": []}'], 1, "object"),
        ([HEADER, HEADER], 2, "a second header"),
        ([HEADER, '{"text": "x"}'], 2, "missing ['t']"),
        ([HEADER, '{"t": 0, "text": "x", "base64": "eA=="}'], 2, "exactly one"),
        ([HEADER, '{"t": 0}'], 2, "exactly one"),
        ([HEADER, '{"t": 0, "text": "x", "more": 1}'], 2, "unknown ['more']"),
        ([HEADER, '{"t": 0, "text": ""}'], 2, "non-empty string"),
        ([HEADER, '{"t": 0, "text": 5}'], 2, "non-empty string"),
        ([HEADER, '{"t": 0, "text": "\\ud800"}'], 2, "lone surrogate"),
        ([HEADER, '{"t": 0, "base64": 5}'], 2, '"base64" is a string'),
        ([HEADER, '{"t": 0, "base64": "e!=="}'], 2, "not base64"),
        ([HEADER, '{"t": 0, "base64": ""}'], 2, "not empty"),
        ([HEADER, '{"t": "0", "text": "x"}'], 2, "finite number"),
        ([HEADER, '{"t": 2, "text": "x"}', '{"t": 1, "text": "y"}'], 3, "goes back"),
        ([HEADER, '{"t": 2, "text": "x"}', '{"end": "clean", "t": 1}'], 3, "goes back"),
        ([HEADER, '{"end": "cut", "t": 0, "message": "m"}'], 2, "only an error end"),
        ([HEADER, '{"end": "clean"}'], 2, "missing ['t']"),
        ([HEADER, END, CHUNK], 3, "after the end record"),
        ([HEADER, CHUNK], 3, "no end record"),
    ],
)
def test_a_malformed_file_names_its_line(
    lines: list[str], line: int, message: str, tmp_path: Path
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text("".join(f"{text}\n" for text in lines), encoding="utf-8")
    with pytest.raises(CassetteError, match="line") as caught:
        Cassette.load(path)
    assert caught.value.line == line
    assert message in str(caught.value)
    assert str(caught.value).startswith(f"line {line}: ")


def test_a_file_that_is_not_utf8_or_too_long_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(HEADER.encode() + b'\n{"t": 0, "text": "\xff"}\n')
    with pytest.raises(CassetteError, match="line 2: not a JSON object"):
        Cassette.load(path)
    monkeypatch.setattr(_cassette_file, "MAX_LINE", 80)
    path.write_text(f'{HEADER}\n{{"t": 0, "text": "{"x" * 80}"}}\n{END}\n', encoding="utf-8")
    with pytest.raises(CassetteError, match="line 2: a line longer than 80 bytes"):
        Cassette.load(path)


def test_is_header_recognizes_a_first_line() -> None:
    assert _cassette_file.is_header(HEADER.encode() + b"\n")
    assert not _cassette_file.is_header(b"data: x\n")
    assert not _cassette_file.is_header(b'["sse-sansio-cassette"]\n')


# ---- recording, then replaying -----------------------------------------------------------


def test_recorded_then_replayed_gives_the_same_items_spans_and_outcome(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    for label, chunks in chunkings(STREAM, seeds=3, max_every_split=40):
        recorder = record(chunks, clock=ticking())
        assert list(recorder) == chunks  # handed on unchanged
        recorder.cassette.save(path)
        cassette = Cassette.load(path)
        assert cassette.chunks == [(0.25 * (i + 1), c) for i, c in enumerate(chunks)], label
        assert cassette.end == "clean"
        got = replayed_items(cassette)
        assert spanned(got) == spanned(parse(chunks)), label
        assert got[-1] == EndOfStream(partial_line=len(b"data: cut he"), partial_event=False)


def test_a_recorder_keeps_an_error_and_raises_it() -> None:
    def failing() -> Iterator[bytes]:
        yield b"data: one\n\n"
        yield b""
        raise ConnectionResetError("reset by peer")

    recorder = record(failing(), clock=ticking(), metadata={"url": "u"})
    assert next(recorder) == b"data: one\n\n"
    assert next(recorder) == b""
    with pytest.raises(ConnectionResetError):
        next(recorder)
    with pytest.raises(StopIteration):
        next(recorder)
    cassette = recorder.cassette
    assert cassette.chunks == [(0.25, b"data: one\n\n")]
    assert (cassette.end, cassette.error) == ("error", "ConnectionResetError: reset by peer")
    assert cassette.end_time == 0.5  # the clock: 10 at the start, 10.25, 10.5 at the error
    assert cassette.metadata == {"url": "u"}
    with pytest.raises(RecordedError, match="reset by peer"):
        list(replay(cassette))


def test_a_recording_read_no_further_is_a_cut_and_a_clock_going_back_is_no_time() -> None:
    times = iter([5.0, 6.0, 5.5])
    recorder = record([b"data: a\n\n", b"data: b\n\n"], clock=lambda: next(times))
    assert next(recorder) == b"data: a\n\n"
    assert next(recorder) == b"data: b\n\n"
    cassette = recorder.cassette
    assert cassette.chunks == [(1.0, b"data: a\n\n"), (1.0, b"data: b\n\n")]
    assert (cassette.end, cassette.end_time) == ("cut", 1.0)
    assert iter(recorder) is recorder


def test_arecord_records_an_async_stream() -> None:
    async def chunks() -> AsyncIterator[bytes]:
        yield b"data: a"
        yield b"\n\n"

    async def failing() -> AsyncIterator[bytes]:
        yield b"data: a\n\n"
        raise OSError("gone")

    async def main() -> tuple[list[bytes], Cassette, Cassette]:
        recorder = arecord(chunks(), clock=ticking())
        assert recorder.__aiter__() is recorder
        got = [chunk async for chunk in recorder]
        with pytest.raises(StopAsyncIteration):
            await recorder.__anext__()
        broken = arecord(failing(), clock=ticking())
        with pytest.raises(OSError, match="gone"):
            async for _ in broken:
                pass
        return got, recorder.cassette, broken.cassette

    got, cassette, broken = asyncio.run(main())
    assert got == [b"data: a", b"\n\n"]
    assert cassette.chunks == [(0.25, b"data: a"), (0.5, b"\n\n")]
    assert (cassette.end, cassette.end_time) == ("clean", 0.75)
    assert (broken.end, broken.error, broken.chunks) == ("error", "OSError: gone", broken.chunks)
    assert [chunk for _, chunk in broken.chunks] == [b"data: a\n\n"]


def test_replay_paces_chunks_by_the_recorded_times() -> None:
    cassette = Cassette.from_chunks([(0, b"a"), (1.5, b"b")], end_time=4)
    now = {"t": 100.0}
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now["t"] += seconds

    def clock() -> float:
        return now["t"]

    assert list(replay(cassette, sleep=sleep, clock=clock)) == [(0, b"a"), (1.5, b"b")]
    assert slept == [1.5, 2.5]
    # Without a clock, a paced replay reads time.monotonic(); times of 0 never wait.
    instant = Cassette.from_chunks([(0, b"a")])
    assert list(replay(instant, sleep=slept.append)) == [(0, b"a")]
    assert slept == [1.5, 2.5]


# ---- faults ------------------------------------------------------------------------------

EVENTS = Cassette.from_chunks(
    [(0.0, b"data: one\n\nda"), (0.5, b"ta: two\n\n"), (2.0, b"data: three\n\n")], end_time=2.5
)


def test_a_cut_inside_an_event_raises_truncated_stream_error() -> None:
    cut = EVENTS.cut_at(15)
    assert cut.chunks == [(0.0, b"data: one\n\nda"), (0.5, b"ta")]
    assert (cut.end, cut.end_time) == ("cut", 0.5)
    items = iter_events(chunk for _, chunk in replay(cut))
    assert next(items) == Event(data="one")
    with pytest.raises(TruncatedStreamError) as caught:
        next(items)
    assert caught.value.offset == 11


def test_a_cut_between_events_ends_as_a_cut_with_the_events_before_it() -> None:
    cut = EVENTS.cut_at(22)
    assert cut.data == b"data: one\n\ndata: two\n\n"
    assert cut.end == "cut"
    assert list(iter_events(chunk for _, chunk in replay(cut))) == [
        Event(data="one"),
        Event(data="two"),
    ]
    whole = EVENTS.cut_at(len(EVENTS.data))
    assert (whole.chunks, whole.end, whole.end_time) == (EVENTS.chunks, "cut", 2.5)
    assert EVENTS.cut_at(0).chunks == []
    assert EVENTS.cut_at(0).end_time == 0
    for offset in (-1, len(EVENTS.data) + 1):
        with pytest.raises(ValueError, match="outside the stream"):
            EVENTS.cut_at(offset)


def test_a_stall_is_a_recorded_gap_that_trips_a_deadline_at_its_time() -> None:
    stalled = EVENTS.stall_at(16, 30.0)
    assert stalled.chunks == [
        (0.0, b"data: one\n\nda"),
        (0.5, b"ta:"),
        (30.5, b" two\n\n"),
        (32.0, b"data: three\n\n"),
    ]
    assert stalled.end_time == 32.5
    # A deadline of 10 s without bytes, checked on the recorded clock, fires 10 s after
    # the last bytes before the stall, in the middle of the event "two".
    deadline = 10.0
    last = 0.0
    fired = None
    for t, _ in replay(stalled):
        if t - last > deadline:
            fired = last + deadline
            break
        last = t
    assert fired == 10.5
    assert parse(c for _, c in replay(stalled)) == parse(EVENTS.data)
    assert EVENTS.stall_at(0, 1).chunks[0] == (1.0, b"data: one\n\nda")
    assert EVENTS.stall_at(len(EVENTS.data), 1).chunks == EVENTS.chunks
    for seconds in (-1.0, math.inf):
        with pytest.raises(ValueError, match="finite, non-negative"):
            EVENTS.stall_at(3, seconds)


def test_rechunk_keeps_the_bytes_and_gives_each_chunk_its_last_byte_time() -> None:
    bytewise = EVENTS.rechunk(1)
    assert bytewise.data == EVENTS.data
    assert len(bytewise.chunks) == len(EVENTS.data)
    assert bytewise.chunks[12] == (0.0, b"a")
    assert bytewise.chunks[13] == (0.5, b"t")
    cycled = EVENTS.rechunk([10, 5])  # the chunks end at bytes 13, 22 and 35
    assert [len(c) for _, c in cycled.chunks] == [10, 5, 10, 5, 5]
    assert [t for t, _ in cycled.chunks] == [0.0, 0.5, 2.0, 2.0, 2.0]
    for sizes in ([], [0], 0):
        with pytest.raises(ValueError, match="at least 1"):
            EVENTS.rechunk(sizes)
    for _, chunks in chunkings(STREAM, seeds=2, max_every_split=0):
        sizes = [len(chunk) for chunk in chunks]
        again = Cassette.from_chunks([(0, STREAM)]).rechunk(sizes)
        assert [c for _, c in again.chunks] == chunks


def test_keepalives_fill_the_silences_between_events_only() -> None:
    cassette = Cassette.from_chunks(
        [(0.0, b"data: a\r\n\r\n"), (2.5, b"data: b\n"), (5.0, b"\n"), (5.0, b"data: c\r\r")],
        end_time=7,
    )
    kept = cassette.with_keepalives(1.0)
    assert kept.chunks == [
        (0.0, b"data: a\r\n\r\n"),
        (1.0, b": keepalive\n"),
        (2.0, b": keepalive\n"),
        (2.5, b"data: b\n"),
        (5.0, b"\n"),
        (5.0, b"data: c\r\r"),  # after a CR-only blank line: none
    ]
    assert kept.end_time == 7
    assert [i for i in parse(c for _, c in kept.chunks) if not isinstance(i, Comment)] == parse(
        cassette.data
    )
    late = Cassette.from_chunks([(2.0, b"data: x\n\n")], end_time=3.0)
    assert late.with_keepalives(1.0, line=b":\n").chunks == [
        (1.0, b":\n"),
        (2.0, b":\n"),
        (2.0, b"data: x\n\n"),
        (3.0, b":\n"),
    ]
    for every in (0.0, math.nan):
        with pytest.raises(ValueError, match="positive, finite"):
            cassette.with_keepalives(every)
    for line in (b"x\n", b": a\n: b\n", b": a"):
        with pytest.raises(ValueError, match="one comment line"):
            cassette.with_keepalives(1, line=line)
    with pytest.raises(ValueError, match="no CR"):
        cassette.with_keepalives(1, line=b": \r\n")


# ---- redaction ---------------------------------------------------------------------------

SECRET = "sk-4f9a1c"


def hide(data: str) -> str:
    return data.replace(SECRET, "[redacted]")


def test_a_secret_split_across_chunks_is_redacted() -> None:
    cassette = Cassette.from_chunks(
        [
            (0.0, b": keep me\nid: 1\ndata: key sk-4f"),
            (0.5, b"9a1c ok\r\n"),
            (0.75, b"\r\ndata: clean\n\n"),
        ]
    )
    redacted = cassette.redact(hide)
    assert redacted.data == (b": keep me\nid: 1\ndata: key [redacted] ok\r\n\r\ndata: clean\n\n")
    # The boundary inside the secret moved to the start of the changed bytes; the
    # others stayed among the same bytes, with their times.
    assert redacted.chunks == [
        (0.0, b": keep me\nid: 1\ndata: key "),
        (0.5, b"[redacted] ok\r\n"),
        (0.75, b"\r\ndata: clean\n\n"),
    ]
    assert parse(redacted.data)[:2] == [
        Comment(text="keep me"),
        Event(data="key [redacted] ok", id="1"),
    ]
    assert SECRET.encode() not in redacted.data
    assert cassette.redact(lambda data: data) is cassette
    # A chunk that held only secret bytes is gone; the boundary between two redacted
    # events stays between them.
    inside = Cassette.from_chunks(
        [(0, b"data: sk-"), (1, b"4f9"), (2, b"a1c\n\n"), (3, b"data: sk-4f9a1c\n\n")]
    ).redact(hide)
    assert inside.chunks == [(0, b"data: "), (2, b"[redacted]\n\n"), (3, b"data: [redacted]\n\n")]


def test_redaction_rewrites_data_lines_only_and_keeps_their_prefixes() -> None:
    stream = b"\xef\xbb\xbfevent: e\ndata:sk-4f9a1c\r: c\rdata\rdata: x\n\n"
    redacted = Cassette.from_chunks([(0, stream)]).redact(lambda d: d.replace("x", "y\nz"))
    assert redacted.data == b"\xef\xbb\xbfevent: e\ndata:sk-4f9a1c\r: c\rdata\rdata: y\ndata: z\n\n"
    fewer = Cassette.from_chunks([(0, stream)]).redact(lambda d: "one")
    assert fewer.data == b"\xef\xbb\xbfevent: e\n: c\rdata: one\n\n"
    assert parse(fewer.data)[1] == Event(type="e", data="one")
    more = Cassette.from_chunks([(0, stream)]).redact(lambda d: "1\n2\n3\n4")
    assert parse(more.data)[1] == Event(type="e", data="1\n2\n3\n4")


def test_redaction_reaches_the_unfinished_event_a_cut_leaves() -> None:
    cassette = Cassette.from_chunks(
        [(0, b"\xef\xbb\xbfdata: sk-4f"), (1, b"9a1c\ndata: sk-4f9a1c")], end="cut"
    )
    redacted = cassette.redact(hide)
    assert redacted.data == b"\xef\xbb\xbfdata: [redacted]\ndata: [redacted]"
    assert redacted.chunks == [(0, b"\xef\xbb\xbfdata: "), (1, b"[redacted]\ndata: [redacted]")]
    assert redacted.end == "cut"
    # A comment inside the unfinished event does not hide its first data line.
    interrupted = Cassette.from_chunks([(0, b"id: 1\n\ndata: sk-4f9a1c\n: ping\ndata: more")])
    assert interrupted.redact(lambda d: d.replace(SECRET, "x")).data == (
        b"id: 1\n\ndata: x\n: ping\ndata: more"
    )
    only_comment = Cassette.from_chunks([(0, b"data: a\n\n: sk-4f9a1c")])
    assert only_comment.redact(hide) is only_comment
    untouched = Cassette.from_chunks([(0, b"data: a\n\ndata: b")])
    assert untouched.redact(lambda d: d) is untouched


# ---- the HTTP server helper --------------------------------------------------------------

CLEAN = Cassette.from_chunks(
    [(0.0, b"id: 1\ndata: caf\xc3"), (0.001, b"\xa9\n\n: ping\n"), (0.002, b"data: [DONE]\n\n")],
    metadata={
        "status": 200,
        "headers": [
            ["Content-Type", "text/event-stream; charset=utf-8"],
            ["Content-Length", "99"],
            ["X-Trace", "t-1"],
            ["Set-Cookie", "secret"],
        ],
    },
)
CLEAN_ITEMS = [Event(data="café", id="1"), Comment(text="ping"), Event(data="[DONE]", id="1")]


@pytest.fixture(scope="module")
def server() -> Iterator[CassetteServer]:
    with serve_cassette(CLEAN, time_scale=1.0) as running:
        yield running


def test_the_server_plays_a_cassette_to_httpx(server: CassetteServer) -> None:
    server.cassette = CLEAN
    with (
        httpx.Client(timeout=10) as client,
        client.stream("GET", server.url, headers={"Last-Event-ID": "0"}) as response,
    ):
        assert response.status_code == 200
        assert response.headers["content-type"] == "text/event-stream; charset=utf-8"
        assert response.headers["x-trace"] == "t-1"
        assert "set-cookie" not in response.headers
        assert response.headers["transfer-encoding"] == "chunked"
        assert list(iter_events(response.iter_raw())) == CLEAN_ITEMS
    assert server.requests[-1]["Last-Event-ID"] == "0"


def test_a_cut_cassette_is_a_body_cut_short_for_httpx(server: CassetteServer) -> None:
    server.cassette = CLEAN.cut_at(len(CLEAN.data))  # every byte, but no last chunk
    got: list[Any] = []
    with (
        httpx.Client(timeout=10) as client,
        client.stream("GET", server.url) as response,
        pytest.raises(httpx.RemoteProtocolError),
    ):
        got.extend(iter_events(response.iter_raw()))
    assert got == CLEAN_ITEMS
    server.cassette = Cassette.from_chunks([(0, b"data: x\n\n")], metadata={"status": 503})
    assert httpx.get(server.url, timeout=10).status_code == 503
    plain = httpx.post(server.url, timeout=10)
    assert plain.headers["content-type"] == "text/event-stream"


def test_the_server_plays_a_cassette_to_aiohttp(server: CassetteServer) -> None:
    async def main(cassette: Cassette) -> tuple[list[Any], BaseException | None]:
        server.cassette = cassette
        items: list[Any] = []
        timeout = aiohttp.ClientTimeout(total=10)
        async with (
            aiohttp.ClientSession(timeout=timeout) as session,
            session.get(server.url) as response,
        ):
            try:
                async for item in sse_sansio.aiter_events(response.content.iter_any()):
                    items.append(item)
            except aiohttp.ClientPayloadError as exc:
                return items, exc
        return items, None

    assert asyncio.run(main(CLEAN)) == (CLEAN_ITEMS, None)
    items, error = asyncio.run(main(CLEAN.cut_at(len(CLEAN.data))))
    assert items == CLEAN_ITEMS
    assert isinstance(error, aiohttp.ClientPayloadError)


def test_closing_the_server_ends_a_stalled_response_as_a_cut() -> None:
    stalled = Cassette.from_chunks([(0, b"data: a\n\n"), (60, b"data: b\n\n")])
    with pytest.raises(ValueError, match="time_scale"):
        serve_cassette(stalled, time_scale=-1)
    running = serve_cassette(stalled)
    with httpx.Client(timeout=10) as client, client.stream("GET", running.url) as response:
        chunks = response.iter_raw()
        assert next(chunks) == b"data: a\n\n"
        running.close()
        with pytest.raises(httpx.RemoteProtocolError):
            next(chunks)


# ---- the command line --------------------------------------------------------------------


def run_cli(
    argv: list[str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    stdin: bytes = b"",
) -> tuple[int, list[dict[str, Any]], str]:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    status = _cli.main(argv)
    out, err = capsys.readouterr()
    return status, [json.loads(line) for line in out.splitlines()], err


def test_the_command_line_records_its_input_and_replays_the_cassette(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "c.jsonl"
    status, live, _ = run_cli(
        ["-", "--record", str(path), "--chunk-size", "7"], capsys, monkeypatch, STREAM
    )
    assert status == 3
    cassette = Cassette.load(path)
    assert cassette.data == STREAM
    assert [len(c) for _, c in cassette.chunks][:2] == [7, 7]
    assert cassette.end == "clean"
    status, replayed, _ = run_cli([str(path)], capsys, monkeypatch)
    assert status == 3
    assert replayed == live
    # Recorded chunks larger than --chunk-size are split further.
    # (A CR that ends a chunk ends its line there: the spans then stop before the LF.)
    status, small, _ = run_cli([str(path), "--chunk-size", "2"], capsys, monkeypatch)
    assert [{**line, "start": 0, "end": 0} for line in small] == [
        {**line, "start": 0, "end": 0} for line in live
    ]


def test_the_command_line_replays_recorded_times_and_paces_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "c.jsonl"
    chunks = [(0.5, b"data: a\n\n"), (2.0, b"data: b\n\n"), (2.0, b": c\n")]
    Cassette.from_chunks(chunks, end_time=3).save(path)
    status, lines, _ = run_cli([str(path), "--timing"], capsys, monkeypatch)
    assert status == 0
    assert [(line["time"], line["gap"]) for line in lines] == [
        (0.5, 0.5),
        (2.0, 1.5),
        (2.0, 0),
        (2.0, 0),
    ]
    now = {"t": 0.0}
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now["t"] += seconds

    out = io.StringIO()
    with open(path, "rb") as source:
        status = _cassette_cli.run_input(
            source, out, name="c", pace=True, sleep=sleep, clock=lambda: now["t"], chunk_size=64
        )
    assert status == 0
    assert slept == [0.5, 1.5, 1.0]  # nothing for the chunk due with the one before
    assert len(out.getvalue().splitlines()) == 4


class Unseekable(io.RawIOBase):
    """A pipe's reader: no seek."""

    def readable(self) -> bool:
        return True


def test_the_command_line_reports_a_recorded_cut_error_and_bad_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "c.jsonl"
    EVENTS.cut_at(11).save(path)
    status, lines, err = run_cli([str(path)], capsys, monkeypatch)
    assert (status, len(lines)) == (3, 2)
    assert lines[-1]["truncated"] is False
    assert "the recorded connection was cut" in err
    Cassette.from_chunks([(0, b"data: a\n\n")], end="error", error="OSError: gone").save(path)
    status, lines, err = run_cli([str(path)], capsys, monkeypatch)
    assert (status, len(lines)) == (74, 1)
    assert "ended with an error: OSError: gone" in err
    path.write_text(f"{HEADER}\n{CHUNK}\nbroken\n", encoding="utf-8")
    status, lines, err = run_cli([str(path)], capsys, monkeypatch)
    assert (status, len(lines)) == (74, 1)
    assert "not a valid cassette: line 3: not a JSON object" in err
    # Only a seekable file is looked at: a pipe is read as it is.
    closed = io.BytesIO(HEADER.encode())
    assert _cassette_cli._is_cassette(closed)
    closed.close()
    assert not _cassette_cli._is_cassette(closed)
    assert not _cassette_cli._is_cassette(io.BufferedReader(Unseekable()))
    assert not _cassette_cli._is_cassette(object())  # type: ignore[arg-type]
    status, lines, err = run_cli([str(tmp_path / "demo.sse"), "--pace"], capsys, monkeypatch)
    assert status == 74  # no such file
    (tmp_path / "demo.sse").write_bytes(b"data: a\n\n")
    status, lines, err = run_cli([str(tmp_path / "demo.sse"), "--pace"], capsys, monkeypatch)
    assert status == 2
    assert "--pace replays a cassette" in err


def test_recording_keeps_how_reading_ended(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    class Failing(io.RawIOBase):
        def readable(self) -> bool:
            return True

        def readinto(self, buffer: Any) -> int:
            raise OSError("the disk is gone")

    path = tmp_path / "c.jsonl"
    out = io.StringIO()
    with pytest.raises(OSError, match="disk"):
        _cassette_cli.run_input(Failing(), out, name="-", record=str(path), chunk_size=4)  # type: ignore[arg-type]
    assert Cassette.load(path).error == "OSError: the disk is gone"
    status, _, _ = run_cli(["-", "--record", str(path)], capsys, monkeypatch, b"data: \xff\n\n")
    assert status == 1
    assert Cassette.load(path).end == "cut"
    # Recording a replay copies the recorded times.
    copy = tmp_path / "copy.jsonl"
    EVENTS.save(path)
    status, _, _ = run_cli([str(path), "--record", str(copy)], capsys, monkeypatch)
    assert status == 0
    assert Cassette.load(copy).chunks == EVENTS.chunks


def test_a_replay_reads_nothing_after_its_end(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    EVENTS.save(path)
    with open(path, "rb") as file:
        reader = _cassette_cli._Replay(file, pace=False, sleep=print, clock=lambda: 0.0)
        data = b"".join(iter(lambda: reader.read(1000), b""))
        assert data == EVENTS.data
        assert reader.read(1000) == b""
        assert reader.recorded_time() == 2.0


@pytest.mark.slow
def test_python_m_sse_sansio_records_standard_input(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    result = subprocess.run(
        [sys.executable, "-m", "sse_sansio", "-", "--record", str(path)],
        input=b"data: a\n\n",
        capture_output=True,
        env=subprocess_env(),
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.splitlines()[0])["data"] == "a"
    assert Cassette.load(path).data == b"data: a\n\n"


# ---- the pytest plugin -------------------------------------------------------------------


def test_the_cassette_folder_loads_records_or_fails(tmp_path: Path) -> None:
    folder = CassetteFolder(tmp_path / "cassettes", recording=False)
    with pytest.raises(pytest.fail.Exception, match="run pytest with --sse-record"):
        folder("first", lambda: [b"data: a\n\n"])
    recording = CassetteFolder(tmp_path / "cassettes", recording=True)
    with pytest.raises(pytest.fail.Exception, match="no source was given"):
        recording("first")
    cassette = recording("first", lambda: [b"data: a\n\n"], clock=ticking(), metadata={"n": 1})
    assert cassette.chunks == [(0.25, b"data: a\n\n")]
    assert folder("first") == cassette  # saved, and never recorded over
    assert recording("first", lambda: [b"other"]) == cassette

    def failing() -> Iterator[bytes]:
        yield b"data: a\n\n"
        raise ConnectionError("dropped")

    broken = recording("broken", failing)
    assert (broken.end, broken.error) == ("error", "ConnectionError: dropped")
    assert recording("ready", lambda: EVENTS) == EVENTS
    assert folder.path("ready").exists()
    for name in ("../x", "a/b", ".hidden", ""):
        with pytest.raises(ValueError, match="plain file name"):
            folder.path(name)


PLUGIN_TEST = """
def test_stream(sse_cassette):
    cassette = sse_cassette("live", lambda: [b"data: a\\n\\n", b"data: b\\n\\n"])
    assert cassette.data == b"data: a\\n\\ndata: b\\n\\n"
"""


def test_the_plugin_fixture_records_with_the_option_and_loads_without(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_live=PLUGIN_TEST)
    plugin = ["-p", "no:sse_sansio", "-p", "sse_sansio.pytest_plugin", "--strict-config"]
    pytester.runpytest(*plugin).assert_outcomes(failed=1)
    pytester.runpytest(*plugin, "--sse-record").assert_outcomes(passed=1)
    assert (pytester.path / "cassettes" / "live.jsonl").exists()
    pytester.runpytest(*plugin).assert_outcomes(passed=1)
    pytester.makeini("[pytest]\nsse_cassette_dir = recorded\n")
    pytester.runpytest(*plugin, "--sse-record").assert_outcomes(passed=1)
    assert (pytester.path / "recorded" / "live.jsonl").exists()


# ---- the example -------------------------------------------------------------------------


@pytest.mark.slow
def test_the_example_records_a_live_stream_and_replays_it(
    example_server: ServerFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    example = load_example("record_replay")
    port = example_server(count=3, interval=0.01, keepalive=0.005)
    url = f"http://127.0.0.1:{port}/"
    path = tmp_path / "live.jsonl"
    cassette = example.record_stream(url, str(path), timeout=10)
    assert cassette.end == "clean"
    assert cassette.metadata["url"] == url
    assert cassette.metadata["status"] == 200
    items = example.replay_items(str(path))
    assert [item for item in items if isinstance(item, Event)] == TICKS
    assert Comment(text="keepalive") in items
    assert items == list(iter_events([cassette.data]))
    assert example.main(["replay", str(path)]) == 0
    assert "tick" in capsys.readouterr().out
    assert example.main(["record", url, str(tmp_path / "again.jsonl")]) == 0
    assert "chunks, clean end" in capsys.readouterr().out
    assert example.main(["replay", str(tmp_path / "missing.jsonl")]) == 1


def test_a_stall_trips_a_watchdog_at_the_recorded_time() -> None:
    # Three events a second apart; then the cassette stalls 30 s after the second one.
    # Driven by the replay's recorded clock, a watchdog with a 10 s idle clock sees the
    # stream healthy until 10 s after the last byte before the stall, then idle, and
    # healthy again once the stalled bytes arrive.
    events = [b"data: one\n\n", b"data: two\n\n", b"data: three\n\n"]
    tape = Cassette.from_chunks([(float(i), chunk) for i, chunk in enumerate(events)])
    stalled = tape.stall_at(len(events[0]) + len(events[1]), 30.0)
    dog = sse_sansio.Watchdog(first_byte=5.0, idle=10.0, now=0.0)
    conn = sse_sansio.Connection()
    verdicts: list[tuple[float, str]] = []
    last = 0.0
    for seconds, chunk in replay(stalled):
        # Before each chunk arrives, ask the watchdog at the deadline it last gave.
        due = dog.check(last).deadline
        if due is not None and due <= seconds:
            verdicts.append((due, dog.check(due).state))
        dog.saw_bytes(len(chunk), seconds)
        conn.receive_data(chunk)
        while isinstance(item := conn.next_event(), sse_sansio.Event):
            dog.saw_item(item, seconds)
        last = seconds
    # The second chunk came at 1 s: idle exactly at 11 s, the third arrives at 32 s.
    assert [s for s, _ in stalled.chunks] == [0.0, 1.0, 32.0]
    assert verdicts == [(11.0, "idle")]
    assert dog.check(32.0).state == "ok"
