"""Bounded memory and linear time on endless and enormous streams, measured.

Each case runs in a fresh subprocess that feeds a stream generated chunk by chunk (never
held whole), pulls items one at a time and drops them, and reports its peak resident
memory (``ru_maxrss``) above a baseline taken once its chunk exists, and its CPU time.
Peak memory must stay within the configured ``max_event_size`` plus the chunk being
parsed plus a constant; the CPU time per megabyte at the full size must stay within 3x
of that at a quarter of the size (a quadratic parser would show 4x), measured in the
same process.

The default sizes keep this file to a few seconds (CI runs the suite five times).  Set
``SSE_SANSIO_MEMORY_MB=200`` to feed 200 MB streams instead; ``-s`` shows the figures.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sse_sansio._receive._implementation import NO_EXTENSIONS
from tests.helpers.cores import needs_core

pytestmark = pytest.mark.skipif(
    sys.platform == "win32", reason="ru_maxrss (the resource module) is POSIX only"
)

MIB = 1024 * 1024
ROOT = Path(__file__).resolve().parents[2]
SIZE_MB = int(os.environ.get("SSE_SANSIO_MEMORY_MB", "0"))
LIMIT = 1 * MIB  # max_event_size for the cases that test the limit
CHUNK = 64 * 1024  # what a socket read typically returns
# Interpreter noise, the parser's one piece of lines (PIECE_SIZE bytes cut into lines),
# allocator slack: what "plus a constant" allows.
SLACK = 8 * MIB

# The subprocess.  argv: case, stream bytes, chunk bytes, limit (0: none), timing, errors.
WORKER = r"""
import json, sys, time
from sse_sansio import NEED_DATA, Connection, RemoteProtocolError
from tests.helpers.rss import peak, reset_peak

case, total, chunk_size, limit, timing = sys.argv[1], *map(int, sys.argv[2:6])
errors = sys.argv[6]
HEAD, PATTERN, TAIL = {
    "endless-line": (b"data: ", b"x", b""),
    "big-event": (b"data: ", b"x", b"\n\n"),
    "endless-data-lines": (b"event: big\n", b"data: " + b"y" * 73 + b"\n", b""),
    "endless-short-data-lines": (b"", b"data: ab\n", b""),
    "endless-comments": (b"", b": keepalive\n", b""),
    "endless-blank-lines": (b"", b"\r\n", b""),
    "many-events": (b"", b"data: x\n\n", b""),
    "many-events-one-call": (b"", b"data: x\n\n", b""),
}[case]


def run(total, chunk_size):
    # The stream is generated as it is fed, never held whole.  Each chunk is a fresh
    # copy, as from a socket: a parser that keeps references to the chunks it was given
    # must pay for them here.
    chunk = PATTERN * max(1, chunk_size // len(PATTERN))
    n_chunks = max(1, (total - len(HEAD)) // len(chunk))
    conn = Connection(max_event_size=limit or None, errors=errors)
    base = reset_peak()
    start = time.process_time()
    fed = items = 0
    error = None
    try:
        for i in range(n_chunks + 3):
            if i == 0:
                data = HEAD
            elif i <= n_chunks:
                data = chunk if n_chunks == 1 else memoryview(chunk).tobytes()
            elif i == n_chunks + 1:
                data = TAIL
            else:
                data = b""
            if data or (fed and i > n_chunks + 1):
                conn.receive_data(data)
                fed += len(data)
            while True:
                # Pull one item at a time and drop it, as a consumer would.
                item = conn.next_event()
                if item is NEED_DATA:
                    break
                items += 1
                if item.__class__.__name__ == "EndOfStream":
                    break
    except RemoteProtocolError as exc:
        error = exc.offset
    return {
        "seconds": time.process_time() - start,
        "fed": fed,
        "items": items,
        "error": error,
        "growth": peak() - base,
        "chunk": len(chunk),
    }


big = run(total, chunk_size)  # first: its peak must not hide behind an earlier one
small = run(total // 4, chunk_size // 4 if chunk_size >= total else chunk_size) if timing else None
print(json.dumps({"big": big, "small": small}))
"""


def run_child(script: str, *args: str, env: dict[str, str] | None = None) -> Any:
    """Run ``python -c script *args`` in the checkout's root; what it printed, as JSON."""
    proc = subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def measure(
    case: str,
    total: int,
    *,
    chunk: int = CHUNK,
    limit: int = 0,
    timing: bool = True,
    errors: str = "strict",
) -> dict[str, Any]:
    args = [case, str(total), str(chunk), str(limit), str(int(timing)), errors]
    result: dict[str, Any] = run_child(WORKER, *args)
    big = result["big"]
    print(
        f"\n{case}: fed {big['fed'] / MIB:.1f} MiB in chunks of {big['chunk'] / MIB:.2f} MiB, "
        f"limit {limit / MIB if limit else 'none'} MiB: peak +{big['growth'] / MIB:.1f} MiB, "
        f"{big['seconds']:.2f} s CPU, {big['items']} items, error at {big['error']}"
    )
    if result["small"]:
        small = result["small"]
        per_mb_big = big["seconds"] / big["fed"]
        per_mb_small = small["seconds"] / small["fed"]
        result["ratio"] = per_mb_big / per_mb_small
        print(f"  time per MB at full size / at a quarter: {result['ratio']:.2f}")
    return result


def size(default_mb: int) -> int:
    return (SIZE_MB or default_mb) * MIB


@pytest.mark.parametrize(
    ("case", "max_overhead"),
    [
        # One line that never ends: refused once it passes the limit.
        ("endless-line", 1.0),
        # Data lines of a realistic length in one event that never ends.
        ("endless-data-lines", 2.0),
        # The worst shape: tiny data lines (the data buffer folds them every 256 lines,
        # or each would cost a string's 50 bytes of overhead).
        ("endless-short-data-lines", 2.0),
        # (Comments without a blank line are no block: nothing is held for them, and the
        # limit does not stop them; the next test runs them in constant memory.)
    ],
)
def test_limit_bounds_memory(case: str, max_overhead: float) -> None:
    result = measure(case, size(32), limit=LIMIT, timing=False)["big"]
    # Refused exactly at the limit (the block starts at offset 0).
    assert result["error"] == LIMIT
    assert result["fed"] <= LIMIT + 2 * CHUNK
    # Peak: what the block holds (max_overhead times its bytes: a data line's str costs
    # more than its bytes), plus the chunk, plus the constant.
    assert result["growth"] <= max_overhead * LIMIT + CHUNK + SLACK


@pytest.mark.parametrize(
    ("case", "default_mb", "chunk"),
    [
        ("endless-comments", 4, CHUNK),  # no limit: each comment is an item, dropped
        ("endless-blank-lines", 2, CHUNK),
        ("many-events", 4, CHUNK),
        # Millions of events in ONE receive_data(): items are built only as pulled.
        ("many-events-one-call", 4, 0),
    ],
)
def test_endless_streams_run_in_constant_memory_and_linear_time(
    case: str, default_mb: int, chunk: int
) -> None:
    total = size(default_mb)
    one_call = chunk == 0
    result = measure(case, total, chunk=total if one_call else chunk)
    big = result["big"]
    assert big["error"] is None
    assert big["fed"] >= 0.9 * total
    if case != "endless-blank-lines":
        assert big["items"] > total // 20
    # The parser's copy of the chunk being parsed, plus a constant: not the stream.
    assert big["growth"] <= big["chunk"] + SLACK
    assert result["ratio"] < 3


# A line still arriving is held once, as the chunks it came in.  When it ends it is
# joined, then decoded (a big data line's value straight from the joined bytes): two
# copies at the peak.  A line discarded at the end of the stream is never joined.
HELD_LINE_COPIES = 1
ENDED_LINE_COPIES = 2


def test_endless_line_without_limit_is_linear() -> None:
    # No limit: the line is held (that is what None asks for), but fed in small chunks
    # it is still scanned once, not once per chunk.
    total = size(16)
    chunk = 128
    result = measure("endless-line", total, chunk=chunk, errors="replace")
    big = result["big"]
    assert big["error"] is None
    assert big["items"] == 1  # the EndOfStream, which discards the line
    # Each chunk held also costs its bytes object's header and a list slot.
    assert big["growth"] <= HELD_LINE_COPIES * total + total // chunk * 48 + SLACK
    assert result["ratio"] < 3


@pytest.mark.parametrize("errors", ["strict", "replace"])
def test_line_cut_at_end_of_stream(errors: str) -> None:
    # A peer sends one line just under the limit and hangs up: the line is discarded.
    limit = 16 * MIB
    result = measure("endless-line", limit - 1000, limit=limit, timing=False, errors=errors)["big"]
    assert result["error"] is None
    assert result["items"] == 1
    assert result["growth"] <= HELD_LINE_COPIES * limit + CHUNK + SLACK


def test_one_big_event() -> None:
    # One event of one line just under the default limit (a base64 image, say).
    limit = 16 * MIB
    result = measure("big-event", limit - 1000, limit=limit, timing=False)["big"]
    assert result["error"] is None
    assert result["items"] == 2  # the event, then the EndOfStream
    assert result["growth"] <= ENDED_LINE_COPIES * limit + CHUNK + SLACK


# ------------------------------------------------------------- tracemalloc, in-process

# What 300 connections hold each is measured with tracemalloc (Python's own allocations,
# exact), not ru_maxrss: the figures are a few KiB per connection.
N_IDLE = 300
_EVENT = b'data: {"choices": [{"delta": {"content": "hello world"}}]}\n\n'
_CHUNK_16K = _EVENT * (16 * 1024 // len(_EVENT))
_CUT_16K = (_EVENT * 300)[: 16 * 1024]  # ends 16 bytes into an event


def _held_per_connection(chunks: list[bytes], n: int = N_IDLE, **options: Any) -> float:
    """Bytes each connection still holds after ``chunks`` were fed and drained."""
    import gc
    import tracemalloc

    from sse_sansio import NEED_DATA, Connection

    # A connection first, unmeasured: what the first use of a path allocates once per
    # process (a codec's state, a cached regex) is not what each connection holds.
    warm = Connection(**options)
    for chunk in chunks:
        warm.receive_data(chunk)
        while warm.next_event() is not NEED_DATA:
            pass
    del warm
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        conns = []
        for _ in range(n):
            conn = Connection(**options)
            for chunk in chunks:
                conn.receive_data(chunk)
                while conn.next_event() is not NEED_DATA:
                    pass
            # A connection asked once at least: a tracer (coverage) gives a started
            # generator a frame object, which belongs to every used connection.
            assert conn.next_event() is NEED_DATA
            conns.append(conn)
        gc.collect()
        return (tracemalloc.get_traced_memory()[0] - base) / n
    finally:
        tracemalloc.stop()


# (label, chunks, how many connections to measure)
IDLE_CASES = [
    ("one 16 KiB chunk", [_CHUNK_16K], N_IDLE),
    # Issue 21: the compiled keep_raw buffer kept its 16 KiB capacity here.
    ("one 16 KiB chunk cut inside an event", [_CUT_16K], N_IDLE),
    ("the same in 64-byte chunks", [_CHUNK_16K[i : i + 64] for i in range(0, 16384, 64)], 50),
    ("one 1 MiB event", [b"data: " + b"x" * MIB + b"\n\n"], 20),
    ("a 1 MiB comment", [b": " + b"x" * MIB + b"\n"], 20),
]


@pytest.mark.slow  # an exhaustive search: every split of big inputs
@pytest.mark.parametrize(("label", "chunks", "n"), IDLE_CASES)
@pytest.mark.parametrize("keep_raw", [False, True])
def test_an_idle_connection_keeps_nothing_it_handed_out(
    label: str, chunks: list[bytes], n: int, keep_raw: bool
) -> None:
    # Issue 10, defect 7: after one 16 KiB chunk a drained connection held 58 KB (the
    # last batch of events and the window's lines), after one 1 MiB event 2 MiB.  Now it
    # holds what a new one does, plus a few integers (offsets past 256 are objects).
    fresh = _held_per_connection([], keep_raw=keep_raw)
    held = _held_per_connection(chunks, n, keep_raw=keep_raw)
    print(f"\nidle connection after {label}: {held:.0f} bytes (new: {fresh:.0f})")
    assert held <= fresh + 512, label


# The child for the absolute bar: without a tracer (coverage gives each suspended
# generator a frame object and its own bookkeeping, about 700 bytes more).
_IDLE_WORKER_OF = """
import json
import sse_sansio
assert sse_sansio.IMPLEMENTATION == %r, sse_sansio.IMPLEMENTATION
from tests.receive.test_memory import IDLE_CASES, _held_per_connection
print(json.dumps([
    [label, keep_raw, _held_per_connection(chunks, n, keep_raw=keep_raw)]
    for label, chunks, n in IDLE_CASES
    for keep_raw in (False, True)
]))
"""


@pytest.mark.slow
@pytest.mark.parametrize(
    ("core", "bound"),
    [
        # Issue 21's bar for the compiled core: at most 1 KiB after any input, drained
        # (CPython 3.12: 500 to 850 bytes, the Conn struct and the buffers it keeps).
        pytest.param("compiled", 1024, id="c", marks=needs_core),
        # The pure core holds its parser generator's frame (about 860 bytes on 3.12), the
        # connection's attributes and the queue: 1.8 to 2.0 KB on CPython 3.11 to 3.13.
        # Issue 21 asked for 1 KiB on both cores; the pure core would have to drop its
        # generator at every idle NEED_DATA and build it again on the next chunk, which
        # this bound keeps from regressing until it does.  (Issue 10's bar was 2 KiB,
        # measured on the compiled core only.  The bound keeps the room it had for
        # 3.10's bigger frames, 2.15 to 2.35 KB, until 3.14 and 3.15 are measured.)
        pytest.param("python", 2560, id="py"),
    ],
)
def test_an_idle_connection_takes_a_bounded_size(core: str, bound: int) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COV", "COVERAGE"))}
    env[NO_EXTENSIONS] = "" if core == "compiled" else "1"
    figures = run_child(_IDLE_WORKER_OF % core, env=env)
    assert len(figures) == 2 * len(IDLE_CASES)
    for label, keep_raw, held in figures:
        print(f"\nidle {core} connection after {label} (keep_raw={keep_raw}): {held:.0f} bytes")
        assert held <= bound, (label, keep_raw)


def _keep_raw_peak(stream: list[bytes]) -> int:
    """tracemalloc's peak while a keep_raw proxy handles ``stream`` and keeps its items.

    The pure core's (tests/receive/test_core_limits.py bounds the compiled core's, which has
    buffers of its own).
    """
    import tracemalloc

    from sse_sansio import NEED_DATA, Event
    from sse_sansio._receive._connection import Connection

    tracemalloc.start()
    try:
        conn = Connection(keep_raw=True, max_event_size=None)
        items = []
        for chunk in stream:
            conn.receive_data(chunk)
            while (item := conn.next_event()) is not NEED_DATA:
                items.append(item)
            conn.take_raw()
        assert sum(isinstance(item, Event) for item in items) == 1
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize(
    "variant", ["blank line apart", "blank line in the last chunk", "one chunk", "fields first"]
)
def test_keep_raw_holds_a_big_event_at_most_twice(variant: str) -> None:
    # Issue 10, defect 6: one big data line peaked at 4x (5x when its blank line came
    # in the same window): the hand-out copied the raw bytes twice and the joined line
    # stayed in the window's list.  Then 3x: the parser held the line as it arrived
    # while keep_raw's buffer held it too, and decoded it while that buffer lived.  The
    # item itself is 2x (its data as text, its raw bytes), so nothing else may hold a
    # further copy of the line at any moment.  (The pure core's: the compiled core is
    # not expected to reach 2x, see _keep_raw_peak.)
    size = 8 * MIB
    head = b"event: big\nid: 7\n: note\n" if variant == "fields first" else b""
    body = head + b"data: " + b"x" * size + b"\n"
    if variant == "one chunk":
        stream = [body + b"\n"]
    else:
        stream = [body[i : i + CHUNK] for i in range(0, len(body), CHUNK)]
        if variant == "blank line in the last chunk":
            stream[-1] += b"\n"
        else:
            stream.append(b"\n")
    peak = _keep_raw_peak(stream)
    print(f"\nkeep_raw peak on one {size // MIB} MiB event, {variant}: {peak / size:.3f}x")
    assert peak <= 2 * size + 2 * CHUNK + MIB


@pytest.mark.parametrize("line_size", [1000, 64 * 1024], ids=["1000 B lines", "64 KiB lines"])
def test_keep_raw_holds_a_big_event_of_many_lines_at_most_three_times(line_size: int) -> None:
    # Issue 21: an event of many data lines peaked at 4 times its size in keep_raw mode
    # (the lines, their join, keep_raw's bytearray and its copy at once).  The raw bytes
    # now go out before the join: 3 times (a str cannot grow in place, so the lines and
    # their join coexist for a moment; _interpret._deferred_event says more).
    size = 8 * MIB
    line = b"data: " + b"x" * (line_size - 7) + b"\n"
    body = line * (size // line_size)
    stream = [body[i : i + CHUNK] for i in range(0, len(body), CHUNK)] + [b"\n"]
    peak = _keep_raw_peak(stream)
    print(
        f"\nkeep_raw peak on one {size // MIB} MiB event of {line_size} B lines: {peak / size:.3f}x"
    )
    assert peak <= 3 * size + 2 * CHUNK + MIB
