"""JavaScript's eventsource-parser (node) on the same workloads: a reference row, not a peer.

Run ``python benchmarks/node_compare.py`` (``--workloads``, ``--chunks``, ``--quick``,
``--rounds``) for node alone, or ``python benchmarks/run.py --node`` to get the row
"eventsource-parser (node)" in every table beside sse_sansio, with the ratio of
sse_sansio's speed to it.

Method.  The workloads are deterministic, so Python writes each stream's bytes and a
``cells.json`` (workload, chunk size, and what a right parse yields: the number of events
and the UTF-16 length of their data and types) into a temporary directory, and one node
process runs benchmarks/node/bench.mjs on them: per cell the bytes are cut into the same
chunks, decoded by one streaming ``TextDecoder`` and fed to ``createParser({onEvent})``
as a client does; the output is checked, the cell warmed up (twice: the JIT), then all
cells are timed in CPU time over interleaved rounds, each sample repeated until it lasts
``min_sample``, and the median kept, as run.py does for the Python parsers.  node runs
after the Python cells, in its own process, so its rounds are not interleaved with
theirs: read its ratio with more noise than the others.  eventsource-parser does not
deliver comments unless asked (no ``onComment``), like most peers.

The version is pinned in benchmarks/node/package.json and package-lock.json;
``npm ci`` in benchmarks/node installs it (done on first use when npm is there).  If
node or the package is missing, the row says so and the run goes on.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))

from benchmarks import workloads as wl  # noqa: E402

NODE_DIR = Path(__file__).with_name("node")
PACKAGE = "eventsource-parser"
ENTRY = "createParser({onEvent}).feed(new TextDecoder().decode(chunk, {stream: true}))"
TIMEOUT = 1800  # seconds for the whole node run

Cell = tuple[str, int, wl.Workload]  # workload name, chunk size (0 = whole), workload


def version() -> str:
    """The installed eventsource-parser's version, else the pinned one and why not."""
    installed = NODE_DIR / "node_modules" / PACKAGE / "package.json"
    if installed.exists():
        return str(json.loads(installed.read_text())["version"])
    pinned = json.loads((NODE_DIR / "package.json").read_text())["dependencies"][PACKAGE]
    return f"{pinned} (not installed)"


def node_version(node: str | None = None) -> str:
    """``node --version`` (e.g. ``v20.20.2``), or "" when node is missing or fails."""
    node = node if node is not None else shutil.which("node")
    if node is None:
        return ""
    try:
        done = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def utf16_length(text: str) -> int:
    """``text.length`` in JavaScript: UTF-16 code units."""
    return len(text.encode("utf-16-le")) // 2


def expected(workload: wl.Workload) -> tuple[int, int]:
    """Events, and the UTF-16 length of their data and types, that node must count.

    eventsource-parser gives ``event`` as undefined when the block had no ``event:``
    field; the workloads name a type only when it is not "message".
    """
    events = workload.events
    units = sum(utf16_length(d) + (utf16_length(t) if t != "message" else 0) for _, t, d in events)
    return len(events), units


def write_cells(directory: Path, cells: Sequence[Cell]) -> list[dict[str, object]]:
    """Write each workload's stream once and cells.json; return what was written."""
    files: dict[int, str] = {}
    spec: list[dict[str, object]] = []
    for name, chunk, work in cells:
        if id(work) not in files:
            files[id(work)] = f"stream-{len(files)}.bin"
            (directory / files[id(work)]).write_bytes(work.stream)
        events, units = expected(work)
        spec.append(
            {
                "workload": name,
                "chunk": chunk,
                "file": files[id(work)],
                "events": events,
                "units": units,
            }
        )
    (directory / "cells.json").write_text(json.dumps(spec))
    return spec


def unavailable(node: str | None, log: Callable[[str], None], install: bool) -> str | None:
    """Why node cannot run eventsource-parser here, or None.

    With ``install``, a missing package is installed first (``npm ci``, the lock file's
    version), if npm is there.
    """
    if node is None:
        return "node not found"
    if (NODE_DIR / "node_modules" / PACKAGE).exists():
        return None
    npm = shutil.which("npm")
    if npm is None or not install:
        return f"{PACKAGE} not installed (run npm ci in benchmarks/node)"
    log(f"installing {PACKAGE} with npm ci in {NODE_DIR}")
    try:
        subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund"],
            cwd=NODE_DIR,
            capture_output=True,
            check=True,
            timeout=300,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"npm ci failed: {type(exc).__name__}"
    return None


def parse_output(stdout: str) -> dict[tuple[str, int], float | str]:
    """bench.mjs's JSON lines -> median seconds per run, or why the cell was not timed."""
    result: dict[tuple[str, int], float | str] = {}
    for line in stdout.splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        key = (record["workload"], record["chunk"])
        if "error" in record:
            result[key] = str(record["error"])
        elif record["times"]:
            result[key] = float(statistics.median(record["times"]))
        else:
            result[key] = "not timed"
    return result


def run_cells(
    cells: Sequence[Cell],
    rounds: int,
    min_sample: float,
    log: Callable[[str], None],
    node: str | None = None,
    install: bool = True,
) -> dict[tuple[str, int], float | str]:
    """Time eventsource-parser on every cell: median seconds per run, or why not."""
    node = node if node is not None else shutil.which("node")
    why = unavailable(node, log, install)
    if why is not None:
        log(f"{PACKAGE} (node): unavailable ({why})")
        return {(name, chunk): f"unavailable ({why})" for name, chunk, _ in cells}
    assert node is not None
    with tempfile.TemporaryDirectory(prefix="sse-node-") as tmp:
        write_cells(Path(tmp), cells)
        log(f"timing {PACKAGE} under node: {len(cells)} cells, {rounds} rounds")
        try:
            done = subprocess.run(
                [node, str(NODE_DIR / "bench.mjs"), tmp, str(rounds), str(min_sample)],
                capture_output=True,
                text=True,
                timeout=TIMEOUT,
                check=False,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            return {(n, c): f"node failed: {type(exc).__name__}" for n, c, _ in cells}
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["?"])[-1][:100]
        return {(n, c): f"node failed: {last}" for n, c, _ in cells}
    return parse_output(done.stdout)


def main(argv: Sequence[str] | None = None) -> int:
    """Print eventsource-parser's speed on each workload and chunk size."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--workloads", default="llm,llm-typed,crlf,big,keepalive")
    ap.add_argument("--chunks", default="64,1500,16384,whole")
    ap.add_argument("--quick", action="store_true", help="the smaller workloads of --quick")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--min-sample", type=float, default=0.1)
    args = ap.parse_args(argv)
    sizes = [0 if c.strip() == "whole" else int(c) for c in args.chunks.split(",")]
    cells: list[Cell] = []
    for name in args.workloads.split(","):
        work = wl.build(name.strip(), quick=args.quick)
        cells += [(work.name, size, work) for size in sizes]
    result = run_cells(cells, args.rounds, args.min_sample, print)
    print(f"| workload | chunks | {PACKAGE} {version()} (node) |\n|---|---|---|")
    for name, size, work in cells:
        got = result.get((name, size), "not run")
        text = f"{len(work.stream) / got / 1e6:.1f} MB/s" if isinstance(got, float) else got
        print(f"| {name} | {'whole' if size == 0 else size} | {text} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
