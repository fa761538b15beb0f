"""The sse_sansio benchmark suite: throughput against other Python SSE parsers.

Run ``python benchmarks/run.py`` (or ``nox -s bench``); ``--quick`` for a short run,
``--help`` for the options.  It prints the tables and writes them, as markdown, to
benchmarks/results.md (``--out``).  See benchmarks/README.md for the method.

Method, in short: every parser runs in this one process on pre-cut chunks.  Per cell
(workload x chunk size) each parser's output is first checked against the expected
events, then the parsers are timed round-robin (the order rotates every round) for
several rounds, and the median is kept, so a burst of load from other jobs on the machine
hits every parser alike.  The compiled core's floor (benchmarks/floor.py) is timed in the
same rounds, part by part; ``--node`` adds JavaScript's eventsource-parser
(benchmarks/node_compare.py) as a reference row.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import gc
import hashlib
import os
import platform
import signal
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

# The clock: CPU time of this thread.  On a machine shared with other jobs, wall time
# also counts the time this process waits for a core, which is most of the noise; the
# parsers are single-threaded (and run in this thread), so their CPU time is their cost.
# Not time.process_time(): while time_limit()'s ITIMER_PROF is armed, Linux reads the
# process clock from the thread group's timer, which moves only at scheduler ticks
# (measured: steps of 2.8-4 ms, so a 0.4 ms run read as 0 s), whereas the thread clock
# stays exact (steps of 1 microsecond) with or without the timer.
clock = time.thread_time

# The benchmarks package lives beside sse_sansio.  Appended, not prepended: an installed
# sse_sansio (nox installs the project) or one on PYTHONPATH wins over the checkout.
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))

from benchmarks import floor as floor_mod  # noqa: E402
from benchmarks import node_compare  # noqa: E402
from benchmarks import peers as peers_mod  # noqa: E402
from benchmarks import workloads as wl  # noqa: E402
from benchmarks.peers import COUNTING, FLOORS, OURS, PEERS, Peer  # noqa: E402

# Rows that are not peers: never the fastest peer, never in the memory table.
NOT_PEERS = FLOORS | floor_mod.PART_NAMES
NODE_ROW = "eventsource-parser (node)"

Parse = Callable[[Iterable[bytes], Callable[[Any], None]], None]

CHUNK_SIZES = (1, 64, 1500, 16384, 0)  # 0 = the whole stream in one receive
BYTEWISE_MAX = 200_000  # 1-byte chunks run on a prefix of at most this many bytes
SCALING_SIZES = (256 * 1024, 512 * 1024, 1 << 20, 2 << 20, 4 << 20, 8 << 20)
MEMORY_CHUNK = 16384

# The targets the lead must reach (issue 4): sse_sansio's speed over the fastest peer.
TARGET_BIG_CHUNKS = 1.5  # llm, llm-typed, crlf, big with chunks of 64 bytes or more
TARGET_BYTEWISE = 1.0  # the same workloads with 1-byte chunks
TARGET_KEEPALIVE = 1.0  # keepalive, every chunk size
TARGET_SCALING = 1.25  # time per MiB at 8 MiB over time per MiB at 1 MiB
TARGET_MEMORY_SLOPE = 2.0  # peak memory grows by at most twice the largest event


class Aborted(Exception):
    """A parser ran past its time budget (the timer fired)."""


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise Aborted inside the block after ``seconds`` of this process's CPU time.

    Some peers are quadratic on long lines; this keeps one of them from eating the run.
    ITIMER_PROF counts CPU time, like the measurements, so the budget does not shrink when
    other jobs load the machine.  (SIGPROF; main thread only.)
    """

    def fire(signum: int, frame: FrameType | None) -> None:
        raise Aborted

    old = signal.signal(signal.SIGPROF, fire)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, old)


def discard() -> Callable[[Any], None]:
    """A sink that drops every item at once (a consumer that handles and forgets)."""
    return collections.deque(maxlen=0).append


def chunk_label(size: int) -> str:
    """'1', '64', ... or 'whole' for 0."""
    return "whole" if size == 0 else str(size)


def chunk_words(size: int) -> str:
    """'64-byte chunks', or 'the whole stream at once' for 0."""
    return "the whole stream at once" if size == 0 else f"{size}-byte chunks"


# --------------------------------------------------------------------------- checking


def check(
    peer: Peer, parse: Parse, workload: wl.Workload, chunks: list[bytes]
) -> tuple[str | None, float]:
    """Run once and compare with the expected events.

    Returns:
        (None if the output is right, else what is wrong; the run's time in seconds).
    """
    out: list[Any] = []
    start = clock()
    parse(chunks, out.append)
    elapsed = clock() - start
    if peer.name == "floor":
        ok = out == [workload.n_lines]
        return (None if ok else f"{out} lines, expected {workload.n_lines}"), elapsed
    if peer.name == "drain floor":
        ok = out == [len(chunks)]
        return (None if ok else f"{out} chunks, expected {len(chunks)}"), elapsed
    if peer.name in floor_mod.PART_NAMES:
        want = floor_mod.expected_count(peer.name.removeprefix("floor: "), workload)
        return (None if out == [want] else f"counted {out}, expected {want}"), elapsed
    got = [item for item in map(peer.to_items, out) if item is not None]
    expected = workload.items if peer.comments else workload.events
    if got == expected:
        return None, elapsed
    if len(got) != len(expected):
        return f"{len(got)} items, expected {len(expected)}", elapsed
    index = next(i for i, (a, b) in enumerate(zip(got, expected, strict=True)) if a != b)
    return f"item {index} differs: {got[index]!r:.60} vs {expected[index]!r:.60}", elapsed


# --------------------------------------------------------------------------- timing


@dataclass
class Cell:
    """The result of one workload x chunk size."""

    workload: str
    chunk: int
    n_bytes: int
    n_items: int
    reps: int
    times: dict[str, list[float]] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)  # peer -> why it was not timed
    node: float | str | None = None  # eventsource-parser's median seconds, or why not

    def floor_time(self) -> float | None:
        """The C floor: the sum of its parts' medians (benchmarks/floor.py)."""
        parts = [self.median(name) for name in sorted(floor_mod.PART_NAMES)]
        if any(t is None for t in parts):
            return None
        return sum(t for t in parts if t is not None)

    def median(self, name: str) -> float | None:
        runs = self.times.get(name)
        return statistics.median(runs) if runs else None

    def fastest_peer(self) -> tuple[str, float] | None:
        best: tuple[str, float] | None = None
        for name in self.times:
            if name in OURS or name in NOT_PEERS:
                continue
            t = self.median(name)
            if t is not None and (best is None or t < best[1]):
                best = (name, t)
        return best

    def ratio(self, mine_name: str = "sse_sansio") -> float | None:
        """sse_sansio's speed over the fastest peer's (> 1: sse_sansio is faster)."""
        best = self.fastest_peer()
        mine = self.median(mine_name)
        if best is None or mine is None:
            return None
        return best[1] / mine

    def ratio_range(self) -> tuple[float, float] | None:
        """The lowest and highest ratio of one round (sse_sansio's run against the fastest
        peer's run in the same round): how far the noise moves the ratio."""
        best = self.fastest_peer()
        if best is None or "sse_sansio" not in self.times:
            return None
        pairs = zip(self.times[best[0]], self.times["sse_sansio"], strict=False)
        per_round = [theirs / mine for theirs, mine in pairs]
        return min(per_round), max(per_round)

    def target(self) -> float:
        if self.workload == "keepalive":
            return TARGET_KEEPALIVE
        return TARGET_BYTEWISE if self.chunk == 1 else TARGET_BIG_CHUNKS


def run_cell(
    parsers: Sequence[tuple[Peer, Parse]],
    workload: wl.Workload,
    chunk: int,
    reps: int,
    budget: float,
    min_sample: float,
    cell_seconds: float,
    log: Callable[[str], None],
    floor_c: Any = None,
) -> Cell:
    """Check every parser on this cell, then time the good ones round-robin.

    ``reps`` rounds, but fewer (down to 3) when a round would make the cell's timing last
    longer than ``cell_seconds``: that is what keeps a full run time-boxed.  With
    ``floor_c`` (benchmarks/floor.py's compiled module) the C floor's parts are timed
    in the same rounds as the parsers.
    """
    stream = workload.stream
    chunks = wl.chunked(stream, chunk)
    if floor_c is not None:
        parsers = [*parsers, *floor_mod.as_parsers(floor_c, workload, chunks)]
    n_items = len(workload.items)
    cell = Cell(workload.name, chunk, len(stream), n_items, reps)
    # Move the workload and its chunks (up to 262,144 objects) out of the collector's
    # reach: else every full collection walks them, at a cost charged to whichever parser
    # happens to trigger it, and each gc.collect() below takes longer.
    gc.collect()
    gc.freeze()
    try:
        return _run_cell(
            parsers, workload, chunks, cell, reps, budget, min_sample, cell_seconds, log
        )
    finally:
        gc.unfreeze()


def _run_cell(
    parsers: Sequence[tuple[Peer, Parse]],
    workload: wl.Workload,
    chunks: list[bytes],
    cell: Cell,
    reps: int,
    budget: float,
    min_sample: float,
    cell_seconds: float,
    log: Callable[[str], None],
) -> Cell:
    timed: list[tuple[Peer, Parse]] = []
    rounds: dict[str, int] = {}
    inner: dict[str, int] = {}
    first_runs: dict[str, float] = {}
    for peer, parse in parsers:
        gc.collect()
        try:
            with time_limit(budget):
                problem, first = check(peer, parse, workload, chunks)
        except Aborted:
            cell.failed[peer.name] = f"too slow: one run > {budget:g} s"
            continue
        except Exception as exc:
            cell.failed[peer.name] = f"raised {type(exc).__name__}: {exc}".splitlines()[0][:80]
            continue
        if problem is not None:
            cell.failed[peer.name] = f"wrong output: {problem}"
            continue
        cell.times[peer.name] = []
        first_runs[peer.name] = first
        # A parser whose single run eats much of the budget gets fewer rounds.
        rounds[peer.name] = max(1, min(reps, int(3 * budget / max(first, 1e-9))))
        # A fast run is repeated within one sample until the sample lasts min_sample
        # seconds, so timer resolution and scheduler blips matter less.
        inner[peer.name] = max(1, min(1000, round(min_sample / max(first, 1e-9))))
        timed.append((peer, parse))
    round_cost = sum(max(first_runs[p.name], min_sample) for p, _ in timed)
    if round_cost * reps > cell_seconds:
        reps = max(3, int(cell_seconds / max(round_cost, 1e-9)))
    cell.reps = reps
    for rep in range(reps):
        shift = rep % len(timed) if timed else 0
        for peer, parse in timed[shift:] + timed[:shift]:
            if len(cell.times[peer.name]) >= rounds[peer.name]:
                continue
            sink = discard()
            n = inner[peer.name]
            gc.collect()
            try:
                with time_limit(3 * budget + 2 * min_sample):
                    start = clock()
                    for _ in range(n):
                        parse(chunks, sink)
                    elapsed = clock() - start
            except Aborted:
                continue
            cell.times[peer.name].append(elapsed / n)
    for name in [n for n, runs in cell.times.items() if not runs]:
        del cell.times[name]
        cell.failed[name] = f"too slow: timed runs > {3 * budget:g} s"
    ratio = cell.ratio()
    log(
        f"  [{time.strftime('%H:%M:%S')}] {workload.name:<10} chunk {chunk_label(cell.chunk):>6}: "
        + (f"sse_sansio/fastest peer = {ratio:.2f}x" if ratio is not None else "no ratio")
        + (f"  (not timed: {', '.join(cell.failed)})" if cell.failed else "")
    )
    return cell


def run_scaling(
    parse: Parse, reps: int, budget: float, min_sample: float, log: Callable[[str], None]
) -> dict[tuple[str, int], float]:
    """sse_sansio on one event of each size, 64-byte chunks: median seconds per MiB."""
    cases: list[tuple[str, int, list[bytes], list[wl.Item]]] = []
    for shape, lines_of in (("one line", 0), ("1 KiB lines", wl.KIB)):
        for size in SCALING_SIZES:
            block, items = wl.single_event(size, lines_of=lines_of)
            cases.append((shape, size, wl.chunked(block, 64), items))
    runs: dict[tuple[str, int], list[float]] = {(s, n): [] for s, n, _, _ in cases}
    inner: dict[tuple[str, int], int] = {}
    for shape, size, chunks, items in cases:
        out: list[Any] = []
        start = clock()
        parse(chunks, out.append)
        first = clock() - start
        got = [("event", e.type, e.data) for e in out]
        if got != items:
            raise SystemExit(f"sse_sansio gave the wrong event on scaling {shape} {size}")
        # Small events are repeated within a sample, as in the cells.
        inner[shape, size] = max(1, min(1000, round(min_sample / max(first, 1e-9))))
    for rep in range(reps):
        shift = rep % len(cases)
        for shape, size, chunks, _ in cases[shift:] + cases[:shift]:
            sink = discard()
            n = inner[shape, size]
            gc.collect()
            with time_limit(3 * budget + 2 * min_sample):
                start = clock()
                for _ in range(n):
                    parse(chunks, sink)
                runs[shape, size].append((clock() - start) / n)
    result = {key: statistics.median(t) / (key[1] / wl.MIB) for key, t in runs.items()}
    for shape in ("one line", "1 KiB lines"):
        log(f"  scaling {shape}: 8 MiB / 1 MiB = {scaling_ratio(result, shape):.2f}")
    return result


def scaling_ratio(result: dict[tuple[str, int], float], shape: str) -> float:
    """Time per MiB at the largest size over time per MiB at 1 MiB."""
    return result[shape, SCALING_SIZES[-1]] / result[shape, 1 << 20]


def idle_connection_bytes(chunks: list[bytes], n: int = 200) -> float:
    """What one drained sse_sansio connection still holds after ``chunks`` (tracemalloc)."""
    from sse_sansio import NEED_DATA, Connection

    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        conns = []
        for _ in range(n):
            conn = Connection()
            for chunk in chunks:
                conn.receive_data(chunk)
                while conn.next_event() is not NEED_DATA:
                    pass
            conns.append(conn)
        gc.collect()
        return (tracemalloc.get_traced_memory()[0] - base) / n
    finally:
        tracemalloc.stop()


def peak_memory(parse: Parse, chunks: list[bytes], budget: float) -> int | str:
    """Peak bytes allocated (tracemalloc) while parsing; the chunks exist beforehand."""
    sink = discard()
    gc.collect()
    tracemalloc.start()
    try:
        with time_limit(budget):
            parse(chunks, sink)
    except Aborted:
        return f"too slow under tracemalloc (> {budget:g} s)"
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak


# --------------------------------------------------------------------------- reporting


def machine() -> dict[str, str]:
    """CPU, cores, Python, OS and date, for the results header."""
    cpu = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "CPU": cpu,
        "cores": str(os.cpu_count()),
        "Python": f"{peers_mod.python_version()} ({platform.python_build()[1]})",
        "OS": platform.platform(terse=True),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }


def sse_sansio_provenance() -> str:
    """Which sse_sansio was measured: its version and whether it is a committed state."""
    import sse_sansio
    from sse_sansio._receive import _connection

    source = Path(_connection.__file__).read_bytes()
    blob = hashlib.sha1(b"blob %d\0" % len(source) + source).hexdigest()
    # Which core was measured: a compiled build and the pure fallback differ severalfold.
    text = f"sse_sansio {sse_sansio.__version__} ({sse_sansio.IMPLEMENTATION} core)"
    try:
        head = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        ).stdout.strip()
        committed = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "HEAD:sse_sansio/_receive/_connection.py"],
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return text + f", _connection.py blob {blob[:10]}"
    state = "as committed" if committed == blob else "with uncommitted changes"
    return text + f", _connection.py {state} at {head} (blob {blob[:10]})"


def fmt_rate(n: float, unit: str) -> str:
    """1234567 -> '1.23M' etc."""
    if n >= 1e6:
        return f"{n / 1e6:.2f}M{unit}"
    if n >= 1e3:
        return f"{n / 1e3:.1f}k{unit}"
    return f"{n:.0f}{unit}"


def reference_rows(group: list[Cell]) -> list[str]:
    """The C floor's sum and eventsource-parser's row, each with sse_sansio against it."""
    out: list[str] = []
    floors = [c.floor_time() for c in group]
    if any(t is not None for t in floors):
        speed, versus = [], []
        for c, t in zip(group, floors, strict=True):
            mine = c.median("sse_sansio")
            if t is None or t == 0:
                speed.append("n/a")
                versus.append("n/a")
                continue
            speed.append(f"{c.n_bytes / t / 1e6:.1f} MB/s, {t / c.n_items * 1e9:.1f} ns/item")
            versus.append(f"**{mine / t:.2f}x** the floor's time" if mine else "n/a")
        out.append("| **C floor** (sum of the parts) | " + " | ".join(speed) + " |")
        out.append("| sse_sansio / C floor (time) | " + " | ".join(versus) + " |")
    if any(c.node is not None for c in group):
        speed, versus = [], []
        for c in group:
            mine = c.median("sse_sansio")
            if isinstance(c.node, float) and c.node > 0:
                speed.append(
                    f"{c.n_bytes / c.node / 1e6:.1f} MB/s, {fmt_rate(c.n_items / c.node, ' ev/s')}"
                )
                versus.append(f"**{c.node / mine:.2f}x**" if mine else "n/a")
            else:
                speed.append(str(c.node) if c.node is not None else "n/a")
                versus.append("n/a")
        out.append(f"| {NODE_ROW} | " + " | ".join(speed) + " |")
        out.append("| sse_sansio / node (speed) | " + " | ".join(versus) + " |")
    return out


def markdown(
    info: dict[str, str],
    provenance: str,
    peer_rows: list[tuple[str, str, str]],
    cells: list[Cell],
    notes: dict[str, str],
    scaling: dict[tuple[str, int], float] | None,
    memory: list[tuple[str, str, int | str, int]] | None,
    options: str,
) -> str:
    """The whole results report as markdown."""
    out: list[str] = ["# sse_sansio benchmark results", ""]
    out.append(
        "Generated by `python benchmarks/run.py"
        + (f" {options}" if options else "")
        + "`; see benchmarks/README.md for the method. Medians of interleaved runs in one "
        "process, timed in CPU time. MB = 10^6 bytes; ev/s counts events and comments "
        "(every item in the stream, whether or not the parser delivers comments). A ratio "
        "above 1 means sse_sansio is faster than the fastest peer (the one with the best "
        "median); beside it, the lowest and highest ratio of a single round, which shows "
        "how much the machine's noise moves it."
    )
    out.append("")
    for key, value in info.items():
        out.append(f"- {key}: {value}")
    out.append(f"- measured: {provenance}")
    out += ["", "## Parsers", "", "| parser | version | driven through |", "|---|---|---|"]
    for name, version, entry in peer_rows:
        out.append(f"| {name} | {version} | `{entry}` |")

    missed: list[str] = []
    by_workload: dict[str, list[Cell]] = {}
    for cell in cells:
        by_workload.setdefault(cell.workload, []).append(cell)
    for name, group in by_workload.items():
        out += ["", f"## {name}", "", f"{notes[name]}", ""]
        header = "| parser | " + " | ".join(
            f"{chunk_label(c.chunk)} B chunks ({c.n_bytes / 1e6:.2f} MB, {c.reps} rounds)"
            if c.chunk
            else f"whole ({c.n_bytes / 1e6:.2f} MB, {c.reps} rounds)"
            for c in group
        )
        out += [header + " |", "|---" * (len(group) + 1) + "|"]
        names = [n for n, _, _ in peer_rows]
        for peer in names:
            row = []
            present = False
            for c in group:
                t = c.median(peer)
                if t == 0:
                    # The drain floor on the whole stream: one chunk, a few
                    # microseconds, below what the CPU-time clock resolves.
                    present = True
                    row.append("below the clock's resolution")
                elif t is not None and peer in floor_mod.PART_NAMES:
                    present = True
                    row.append(f"{t / c.n_items * 1e9:.1f} ns/item")
                elif t is not None:
                    present = True
                    runs = len(c.times[peer])
                    row.append(
                        f"{c.n_bytes / t / 1e6:.1f} MB/s, {fmt_rate(c.n_items / t, ' ev/s')}"
                        + (f" ({runs} runs)" if runs < c.reps else "")
                    )
                elif peer in c.failed:
                    present = True
                    row.append(c.failed[peer])
                else:
                    row.append("n/a")
            if present:
                out.append(f"| {peer} | " + " | ".join(row) + " |")
        out += reference_rows(group)
        ratio_row, target_row = [], []
        for c in group:
            ratio = c.ratio()
            best = c.fastest_peer()
            if ratio is None or best is None:
                ratio_row.append("n/a")
                target_row.append("n/a")
                continue
            spread = c.ratio_range()
            ratio_row.append(
                f"**{ratio:.2f}x** vs {best[0]}"
                + (f" (rounds: {spread[0]:.2f}-{spread[1]:.2f})" if spread else "")
            )
            ok = ratio >= c.target()
            target_row.append(f"≥ {c.target():.1f}x: " + ("met" if ok else "**MISSED**"))
            if not ok:
                missed.append(
                    f"- {c.workload}, {chunk_words(c.chunk)}: {ratio:.2f}x vs "
                    f"{best[0]}, target {c.target():.1f}x (needs {c.target() / ratio:.2f}x "
                    "faster)"
                )
        out.append("| **sse_sansio / fastest peer** | " + " | ".join(ratio_row) + " |")
        counted = [c.ratio(COUNTING) for c in group]
        if any(r is not None for r in counted):
            cells_text = ["n/a" if r is None else f"**{r:.2f}x**" for r in counted]
            out.append(f"| **{COUNTING} / fastest peer** | " + " | ".join(cells_text) + " |")
        out.append("| target | " + " | ".join(target_row) + " |")

    if scaling is not None:
        out += [
            "",
            "## Scaling: one event, 64-byte chunks (sse_sansio)",
            "",
            "Time per MiB must stay flat as the event grows.",
            "",
            "| event size | one `data:` line, ms/MiB | 1 KiB `data:` lines, ms/MiB |",
            "|---|---|---|",
        ]
        for size in SCALING_SIZES:
            label = f"{size // wl.MIB} MiB" if size >= wl.MIB else f"{size // wl.KIB} KiB"
            out.append(
                f"| {label} | {scaling['one line', size] * 1e3:.1f} | "
                f"{scaling['1 KiB lines', size] * 1e3:.1f} |"
            )
        row = []
        for shape in ("one line", "1 KiB lines"):
            r = scaling_ratio(scaling, shape)
            ok = r <= TARGET_SCALING
            row.append(f"**{r:.2f}** ({'met' if ok else 'MISSED'})")
            if not ok:
                missed.append(f"- scaling, {shape}: 8 MiB / 1 MiB = {r:.2f}, target ≤ 1.25")
        out.append("| **8 MiB / 1 MiB** (target ≤ 1.25) | " + " | ".join(row) + " |")

    if memory is not None:
        out += [
            "",
            f"## Peak memory (tracemalloc, {MEMORY_CHUNK}-byte chunks)",
            "",
            "Allocations made while parsing; the input chunks exist beforehand and every "
            "item is dropped as soon as it is delivered.",
            "",
            "| parser | workload | peak | peak / largest event |",
            "|---|---|---|---|",
        ]
        sse_peaks: dict[int, int] = {}
        llm = wl.build("llm", quick=True).stream
        idle = {
            "new": idle_connection_bytes([]),
            "after one 16 KiB chunk of `llm`": idle_connection_bytes([llm[: 16 * wl.KIB]]),
            "after one 1 MiB event": idle_connection_bytes(
                [b"data: " + b"x" * wl.MIB + b"\n\n"], n=20
            ),
        }
        idle_text = ", ".join(f"{what} {size:.0f} bytes" for what, size in idle.items())
        for name, what, peak, largest in memory:
            if isinstance(peak, str):
                out.append(f"| {name} | {what} | {peak} | n/a |")
                continue
            out.append(f"| {name} | {what} | {peak / wl.MIB:.2f} MiB | {peak / largest:.2f} |")
            if name == "sse_sansio":
                sse_peaks[largest] = peak
        if len(sse_peaks) >= 2:
            (small, p_small), (large, p_large) = sorted(sse_peaks.items())[:2]
            slope = (p_large - p_small) / (large - small)
            constant = p_small - slope * small
            ok = slope <= TARGET_MEMORY_SLOPE
            out += [
                "",
                f"sse_sansio: peak ≈ **{slope:.2f} x largest event + "
                f"{constant / wl.KIB:.0f} KiB** (fit on the two sizes); target ≤ 2 x largest "
                f"+ a constant: {'met' if ok else '**MISSED**'}.",
            ]
            if not ok:
                missed.append(f"- memory: peak grows {slope:.2f} x the largest event, target ≤ 2")
        out += ["", f"An idle sse_sansio connection, drained (tracemalloc): {idle_text}."]

    out += ["", "## Targets missed", ""]
    out += missed or ["None."]
    out.append("")
    return "\n".join(out)


# --------------------------------------------------------------------------- main


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--quick", action="store_true", help="few rounds, smaller workloads")
    ap.add_argument(
        "--workloads", default=",".join(wl.NAMES), help="comma-separated (default: all)"
    )
    ap.add_argument(
        "--peers",
        default=",".join(p.name for p in PEERS),
        help="comma-separated parser names (sse_sansio and the floors are always included)",
    )
    ap.add_argument(
        "--chunks",
        default=",".join(chunk_label(c) for c in CHUNK_SIZES),
        help="comma-separated chunk sizes, 'whole' for the whole stream",
    )
    ap.add_argument("--reps", type=int, default=0, help="rounds per cell (default 5; quick 3)")
    ap.add_argument(
        "--budget", type=float, default=0.0, help="seconds one run may take (default 4; quick 2)"
    )
    ap.add_argument(
        "--min-sample",
        type=float,
        default=0.0,
        help="seconds one timed sample lasts at least, repeating fast runs (default 0.1)",
    )
    ap.add_argument(
        "--time-box",
        type=float,
        default=0.0,
        help="seconds the timed rounds should take in all; cells drop to 3 rounds to fit "
        "(default 360; quick 60)",
    )
    ap.add_argument("--no-scaling", action="store_true", help="skip the scaling table")
    ap.add_argument("--no-floor", action="store_true", help="skip the C floor (needs a C compiler)")
    ap.add_argument(
        "--node",
        action="store_true",
        help="also time JavaScript's eventsource-parser under node (benchmarks/node/)",
    )
    ap.add_argument("--no-memory", action="store_true", help="skip the peak-memory table")
    ap.add_argument(
        "--out",
        default=str(Path(__file__).with_name("results.md")),
        help="markdown output ('-' for none)",
    )
    return ap.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the suite; return the exit status."""
    args = parse_args(argv)
    reps = args.reps or (3 if args.quick else 5)
    budget = args.budget or (2.0 if args.quick else 4.0)
    min_sample = args.min_sample or (0.03 if args.quick else 0.1)
    names = [n.strip() for n in args.workloads.split(",") if n.strip()]
    for name in names:
        if name not in wl.NAMES:
            raise SystemExit(f"unknown workload {name!r}; choose from {', '.join(wl.NAMES)}")
    chunk_sizes = [0 if c.strip() == "whole" else int(c) for c in args.chunks.split(",")]
    time_box = args.time_box or (60.0 if args.quick else 360.0)
    # Most of the time goes to the cells; scaling and memory take the rest.
    cell_seconds = time_box * 0.8 / max(1, len(names) * len(chunk_sizes))
    wanted = {n.strip() for n in args.peers.split(",")} | {*OURS, *FLOORS}
    unknown = wanted - {p.name for p in PEERS}
    if unknown:
        raise SystemExit(f"unknown parser(s) {sorted(unknown)}")

    def log(text: str) -> None:
        print(text, flush=True)

    started = time.perf_counter()
    info = machine()
    provenance = sse_sansio_provenance()
    log(" ".join(f"{k}: {v};" for k, v in info.items()))
    log(f"measuring {provenance}")
    parsers: list[tuple[Peer, Parse]] = []
    peer_rows: list[tuple[str, str, str]] = []
    for peer in PEERS:
        if peer.name not in wanted:
            continue
        parse, version = peers_mod.available(peer)
        if parse is None:
            peer_rows.append((peer.name, f"unavailable ({version})", peer.entry))
            log(f"{peer.name}: unavailable ({version})")
            continue
        parsers.append((peer, parse))
        peer_rows.append((peer.name, version or "-", peer.entry))
    floor_c = None
    if not args.no_floor:
        built = floor_mod.build()
        if isinstance(built, str):
            peer_rows.append(("C floor", f"unavailable ({built})", "benchmarks/floor.c"))
            log(f"C floor: unavailable ({built})")
        else:
            floor_c = built
            for part, what in floor_mod.PARTS.items():
                peer_rows.append((f"floor: {part}", "benchmarks/floor.c", what))

    cells: list[Cell] = []
    works: list[wl.Workload] = []
    notes: dict[str, str] = {}
    for name in names:
        full = wl.build(name, quick=args.quick)
        notes[name] = f"Workload: {full.note}; largest event {full.largest_block} bytes."
        for chunk in chunk_sizes:
            if chunk == 1:
                limit = BYTEWISE_MAX // (4 if args.quick else 1)
                work = wl.build_for_bytewise(name, limit)
                what = work.note if name == "big" else f"the first {len(work.items)} items"
                notes[name] += f" 1-byte chunks: {what}, {len(work.stream)} bytes."
            else:
                work = full
            # The counting row is for the comments of the keepalive workload only.
            mine = [(p, f) for p, f in parsers if p.name != COUNTING or name == "keepalive"]
            cells.append(
                run_cell(mine, work, chunk, reps, budget, min_sample, cell_seconds, log, floor_c)
            )
            works.append(work)

    if args.node:
        node_row = node_compare.run_cells(
            [(c.workload, c.chunk, w) for c, w in zip(cells, works, strict=True)],
            reps,
            min_sample,
            log,
        )
        for cell in cells:
            cell.node = node_row.get((cell.workload, cell.chunk), "not run")
        runtime = node_compare.node_version()
        shown = node_compare.version() + (f" (node {runtime})" if runtime else "")
        peer_rows.append((NODE_ROW, shown, node_compare.ENTRY))

    scaling = None
    if not args.no_scaling:
        scaling = run_scaling(parsers[0][1], reps, budget, min_sample, log)

    memory = None
    if not args.no_memory:
        memory = []
        big = wl.build("big", quick=args.quick)
        chunks = wl.chunked(big.stream, MEMORY_CHUNK)
        for peer, parse in parsers:
            if peer.name in NOT_PEERS or peer.name == COUNTING:
                continue
            peak = peak_memory(parse, chunks, 5 * budget)
            memory.append((peer.name, big.note, peak, big.largest_block))
            shown = peak if isinstance(peak, str) else f"{peak / wl.MIB:.2f} MiB"
            log(f"  memory {peer.name}: {shown}")
        # A second event size for sse_sansio separates growth per event from a constant.
        larger = wl.big(4, event_size=4 * wl.MIB)
        peak = peak_memory(parsers[0][1], wl.chunked(larger.stream, MEMORY_CHUNK), 5 * budget)
        memory.append(("sse_sansio", larger.note, peak, larger.largest_block))

    options = " ".join(argv if argv is not None else sys.argv[1:])
    report = markdown(info, provenance, peer_rows, cells, notes, scaling, memory, options)
    print()
    print(report)
    if args.out != "-":
        Path(args.out).write_text(report, encoding="utf-8")
        log(f"wrote {args.out}")
    log(f"total time {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
