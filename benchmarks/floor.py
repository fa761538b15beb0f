"""The compiled core's floor, measured part by part: what no C parser behind this API skips.

Run ``python benchmarks/floor.py`` (``--workloads a,b``, ``--chunks 64,16384``,
``--quick``, ``--rounds N``); ``benchmarks/run.py`` puts the same parts and their sum in
its tables, beside the cores.  Needs a C compiler and the Python headers: the first run
compiles benchmarks/floor.c into a temporary directory (nothing built is kept).

Method.  Issue 21 describes the floor as built from the core's unavoidable parts; each
is measured alone, on the same workload bytes and the same chunks as the parsers, by a
C function that does that part the way sse_sansio/_receive/_core.c does it and nothing else:

- **scan**: ``memchr()`` for every LF, line by line, over every chunk (LF only: the core
  also looks for CR, so this is below it on every workload).
- **allocate**: one item per event or comment, of the item's own class (``Event``, 7
  slots; ``Comment``, 4), allocated as the core's ``new_item()`` does, with two new ``int``
  offsets (start and end) and ``None`` in the other slots, freed at once as a consumer
  drops it.
- **decode**: a strict UTF-8 decode of every item's text (an event's data, its lines
  joined, or a comment's text), once, from one contiguous buffer, with the core's own
  decoder (``sse_sansio/_receive/_core_decode.h``, faster than ``PyUnicode_DecodeUTF8()``, which
  it falls back to for bytes that are not UTF-8); a text of at most 64 bytes equal to
  the one before is reused after a ``memcmp()``, as the core reuses a repeated comment
  text (a keep-alive's ``ping``).
- **drain**: the drain loop of benchmarks/peers.py (``receive_data(chunk)``, then
  ``next_event()`` until ``NEED_DATA``, the sink for each item, ``receive_data(b"")`` at
  the end) around a C connection that parses nothing: ``receive_data()`` notes how many
  items that chunk completes, ``next_event()`` returns one prebuilt item that many times.

What is left out, because a parser can avoid it: copying a line that a chunk end cuts,
the event type's and field names' handling (the core caches repeated types), CR
handling, checks of limits and of UTF-8 beyond the one decode.  So the floor is a lower
bound, and a core at 1.0x it would have nothing left to remove.  The parts are timed like
the parsers in run.py (CPU time, a sample repeated until it lasts ``--min-sample``,
interleaved rounds, medians), and the floor is the sum of the parts' medians, reported
as MB/s and ns per item.  Before timing, each part's count (lines, items, strings) is
checked against the workload's own, which comes from the generator.

``--callgrind`` counts instructions per item instead, as benchmarks/callgrind.py counts
the cores' (same small workloads, same chunks, one valgrind process per part and cell,
the part run once untimed and once inside ``functools.reduce()``), so the floor can be
set beside the cores' deterministic figures (benchmarks/baseline-e51906b.md).
"""

from __future__ import annotations

import argparse
import array
import gc
import importlib.machinery
import importlib.util
import os
import re
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import reduce
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))

from benchmarks import workloads as wl  # noqa: E402

SOURCE = Path(__file__).with_name("floor.c")
MODULE = "_sse_floor"

#: The parts, in table order, and what each one does (for the tables).
PARTS: dict[str, str] = {
    "scan": "memchr() for every LF, chunk by chunk",
    "allocate": "one item of its own class, two new int offsets, freed at once",
    "decode": "strict UTF-8 decode of every item's text, once",
    "drain": "the drain loop around a C connection that parses nothing",
}
#: How the parts are named in run.py's tables.
PART_NAMES = frozenset(f"floor: {part}" for part in PARTS)

clock = time.thread_time  # as run.py's clock (see there why not process_time)


# --------------------------------------------------------------------------- building


def compile_command(source: Path, target: Path) -> list[str]:
    """The compiler call that builds ``source`` into the extension module ``target``."""
    cc = (sysconfig.get_config_var("CC") or "cc").split()
    include = sysconfig.get_paths()["include"]
    core = (
        source.resolve().parent.parent / "sse_sansio" / "_receive"
    )  # the core's decoder, included
    command = [*cc, "-O2", "-shared", "-fPIC", f"-I{include}", f"-I{core}", str(source)]
    return [*command, "-o", str(target)]


def build() -> ModuleType | str:
    """Compile floor.c and import it: the module, or why it could not be built.

    Built in a temporary directory that is gone once the module is loaded (the loaded
    library stays mapped), so nothing built is left behind.
    """
    with tempfile.TemporaryDirectory(prefix="sse-floor-") as tmp:
        return _build_in(Path(tmp))


def _build_in(directory: Path) -> ModuleType | str:
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    target = directory / f"{MODULE}{suffix}"
    command = compile_command(SOURCE, target)
    if shutil.which(command[0]) is None:
        return f"no C compiler ({command[0]})"
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"compiler failed: {exc}"
    if done.returncode != 0:
        return "compiler failed: " + (done.stderr.strip().splitlines() or ["?"])[-1][:100]
    return load(target)


def load(target: Path) -> ModuleType | str:
    """Import the built floor module from ``target``."""
    spec = importlib.util.spec_from_file_location(MODULE, target)
    if spec is None or spec.loader is None:
        return f"cannot load {target.name}"
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --------------------------------------------------------------------------- the plan


@dataclass(frozen=True)
class Plan:
    """What the parts work on for one workload cut into chunks, all prepared untimed."""

    chunks: list[bytes]
    n_lines: int
    n_events: int
    n_comments: int
    payloads: list[bytes]  # every item's text, UTF-8
    per_chunk: list[int]  # items that each chunk completes

    @property
    def n_items(self) -> int:
        return self.n_events + self.n_comments


def items_per_chunk(workload: wl.Workload, chunks: Sequence[bytes]) -> list[int]:
    """How many items each chunk completes: an event counts in the chunk holding its
    block's last byte (the blank line's LF), a comment in the one holding its line's LF
    (a comment is handed out as soon as its line ends; the workloads' comment blocks
    are one comment line and a blank line)."""
    ends: list[int] = []
    offset = 0
    for chunk in chunks:
        offset += len(chunk)
        ends.append(offset)
    counts = [0] * len(chunks)
    offset = 0
    index = 0
    for raw, items in workload.blocks:
        for kind, _, _ in items:
            done = offset + (raw.index(b"\n") + 1 if kind == "comment" else len(raw))
            while ends[index] < done:
                index += 1
            counts[index] += 1
        offset += len(raw)
    return counts


def plan(workload: wl.Workload, chunks: list[bytes]) -> Plan:
    """Everything the parts need, computed from the generator's blocks and items."""
    items = workload.items
    return Plan(
        chunks=chunks,
        n_lines=workload.n_lines,
        n_events=sum(1 for kind, _, _ in items if kind == "event"),
        n_comments=sum(1 for kind, _, _ in items if kind == "comment"),
        payloads=[(data if kind == "event" else text).encode() for kind, text, data in items],
        per_chunk=items_per_chunk(workload, chunks),
    )


def expected_count(part: str, workload: wl.Workload) -> int:
    """What a part must count on ``workload``: its lines for scan, else its items."""
    return workload.n_lines if part == "scan" else len(workload.items)


# --------------------------------------------------------------------------- the parts


def parts(module: Any, the_plan: Plan) -> dict[str, Callable[[], int]]:
    """Each part as a function of no argument that runs it once and returns its count."""
    from sse_sansio import NEED_DATA, Comment, EndOfStream, Event

    chunks, payloads = the_plan.chunks, the_plan.payloads
    n_events, n_comments = the_plan.n_events, the_plan.n_comments
    per_chunk = array.array("q", the_plan.per_chunk).tobytes()
    item = Event(data="x")
    end = EndOfStream()

    def scan() -> int:
        return int(module.scan(chunks))

    def allocate() -> int:
        return int(module.allocate(Event, n_events, 7) + module.allocate(Comment, n_comments, 4))

    def decode() -> int:
        return int(module.decode(payloads))

    def drain() -> int:
        # peers.py's sse_sansio adapter, line for line, with the connection swapped.
        sink = _discard()
        conn = module.Drain(per_chunk, item, NEED_DATA, end)
        for chunk in chunks:
            conn.receive_data(chunk)
            while True:
                got = conn.next_event()
                if got is NEED_DATA:
                    break
                sink(got)
        conn.receive_data(b"")
        while True:
            got = conn.next_event()
            if isinstance(got, EndOfStream):
                break
            sink(got)
        return int(conn.handed())

    return {"scan": scan, "allocate": allocate, "decode": decode, "drain": drain}


def _discard() -> Callable[[Any], None]:
    import collections

    return collections.deque(maxlen=0).append


def as_parsers(module: Any, workload: wl.Workload, chunks: list[bytes]) -> list[Any]:
    """The parts as run.py's (Peer, parse) pairs for one cell; each sinks its count."""
    from benchmarks.peers import Peer

    pairs: list[Any] = []
    for part, run in parts(module, plan(workload, chunks)).items():

        def parse(_chunks: Any, sink: Callable[[Any], None], run: Callable[[], int] = run) -> None:
            sink(run())

        def make(parse: Callable[[Any, Callable[[Any], None]], None] = parse) -> Any:
            return parse

        def no_items(count: object) -> None:
            return None

        peer = Peer(f"floor: {part}", "", "", make, no_items, False, PARTS[part])
        pairs.append((peer, parse))
    return pairs


# --------------------------------------------------------------------------- timing


def time_parts(
    module: Any, workload: wl.Workload, chunk: int, rounds: int, min_sample: float
) -> dict[str, float]:
    """Median seconds per run of each part on one cell, after checking its count."""
    the_plan = plan(workload, wl.chunked(workload.stream, chunk))
    runs = parts(module, the_plan)
    inner: dict[str, int] = {}
    for part, run in runs.items():
        start = clock()
        got = run()
        first = clock() - start
        if got != expected_count(part, workload):
            raise SystemExit(f"floor {part} counted {got} on {workload.name}")
        inner[part] = max(1, min(1000, round(min_sample / max(first, 1e-9))))
    times: dict[str, list[float]] = {part: [] for part in runs}
    order = list(runs)
    gc.collect()
    gc.freeze()
    try:
        for rep in range(rounds):
            shift = rep % len(order)
            for part in order[shift:] + order[:shift]:
                n, run = inner[part], runs[part]
                gc.collect()
                start = clock()
                for _ in range(n):
                    run()
                times[part].append((clock() - start) / n)
    finally:
        gc.unfreeze()
    return {part: statistics.median(t) for part, t in times.items()}


def row(workload: wl.Workload, chunk: int, medians: dict[str, float]) -> str:
    """One markdown row: ns per item of each part, their sum, and the floor in MB/s."""
    n = len(workload.items)
    total = sum(medians.values())
    cells = [f"{medians[p] / n * 1e9:.1f}" for p in PARTS]
    label = "whole" if chunk == 0 else f"{chunk} B"
    rate = len(workload.stream) / total / 1e6 if total else float("inf")
    return (
        f"| {workload.name} | {label} | " + " | ".join(cells) + f" | **{total / n * 1e9:.1f}** "
        f"| {rate:.0f} |"
    )


# --------------------------------------------------------------------------- callgrind


def callgrind_inner(target: str, part: str, name: str, size: int) -> None:
    """The process under valgrind: one part, once untimed, then once inside reduce()."""
    from benchmarks import callgrind

    module = load(Path(target))
    work = callgrind.WORKLOADS[name]()
    run = parts(module, plan(work, wl.chunked(work.stream, size)))[part]
    first = run()
    if reduce(lambda _, __: run(), [0], 0) != first or first != expected_count(part, work):
        raise SystemExit(f"floor {part} miscounted on {name}")
    print(len(work.items))


def callgrind_parts(target: Path, name: str, size: int) -> dict[str, float]:
    """Instructions per item of each part, counted as benchmarks/callgrind.py counts."""
    result: dict[str, float] = {}
    for part in PARTS:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "callgrind.out"
            done = subprocess.run(
                [
                    "valgrind",
                    "--tool=callgrind",
                    "--collect-atstart=no",
                    "--toggle-collect=functools_reduce",
                    f"--callgrind-out-file={out}",
                    sys.executable,
                    __file__,
                    "--inner",
                    str(target),
                    part,
                    name,
                    str(size),
                ],
                env={**os.environ, "PYTHONHASHSEED": "0"},
                capture_output=True,
                text=True,
                check=True,
            )
            items = int(done.stdout.split()[-1])
            found = re.search(r"^(?:summary|totals):\s*(\d+)", out.read_text(), re.MULTILINE)
            if found is None:
                raise SystemExit(f"no instruction total in callgrind's output for {part}")
            result[part] = int(found.group(1)) / items
    return result


def callgrind_main(workloads: str, chunks: str) -> int:
    """Print the parts' instructions per item on benchmarks/callgrind.py's workloads."""
    from benchmarks import callgrind

    names = workloads.split(",") if workloads else list(callgrind.DEFAULT)
    sizes = [int(c) for c in chunks.split(",")] if chunks else list(callgrind.CHUNKS)
    with tempfile.TemporaryDirectory(prefix="sse-floor-") as tmp:
        target = Path(tmp) / f"{MODULE}{importlib.machinery.EXTENSION_SUFFIXES[0]}"
        built = _build_in(Path(tmp))
        if isinstance(built, str):
            raise SystemExit(f"cannot build the floor: {built}")
        print("instructions per item, each part alone (callgrind); the floor is their sum")
        print("| workload | chunks | " + " | ".join(PARTS) + " | sum |")
        print("|---|---|" + "---:|" * (len(PARTS) + 1))
        for name in names:
            for size in sizes:
                counts = callgrind_parts(target, name, size)
                cells = " | ".join(f"{counts[p]:,.0f}" for p in PARTS)
                total = sum(counts.values())
                print(f"| {name} | {size} B | {cells} | **{total:,.0f}** |", flush=True)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Print the floor's parts for each workload and chunk size."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--workloads", default="llm,llm-typed,crlf,big,keepalive")
    ap.add_argument("--chunks", default="64,1500,16384,whole")
    ap.add_argument("--quick", action="store_true", help="the smaller workloads of --quick")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--min-sample", type=float, default=0.05)
    ap.add_argument(
        "--callgrind",
        action="store_true",
        help="instructions per item under callgrind instead, on benchmarks/callgrind.py's "
        "workloads and chunks (unless --workloads/--chunks are given)",
    )
    ap.add_argument("--inner", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.inner:
        callgrind_inner(args.inner[0], args.inner[1], args.inner[2], int(args.inner[3]))
        return 0
    if args.callgrind:
        given = argv if argv is not None else sys.argv[1:]
        return callgrind_main(
            args.workloads if any(a.startswith("--workloads") for a in given) else "",
            args.chunks if any(a.startswith("--chunks") for a in given) else "",
        )
    module = build()
    if isinstance(module, str):
        raise SystemExit(f"cannot build the floor: {module}")
    sizes = [0 if c.strip() == "whole" else int(c) for c in args.chunks.split(",")]
    print("ns per item, each part alone; the floor is their sum")
    print("| workload | chunks | " + " | ".join(PARTS) + " | sum | MB/s |")
    print("|---|---|" + "---:|" * (len(PARTS) + 2))
    for name in args.workloads.split(","):
        work = wl.build(name.strip(), quick=args.quick)
        for size in sizes:
            medians = time_parts(module, work, size, args.rounds, args.min_sample)
            print(row(work, size, medians), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
