"""Where sse_sansio spends its time: cProfile of the drain loop on llm and crlf.

Run ``python benchmarks/profile.py`` (``--chunk N``, ``--workloads a,b``, ``--top N``).
For each workload it prints the plain CPU time per item (no profiler), then the
functions by own time under cProfile with their calls per event and cost per call and per
event, so a reader sees which step dominates each event.  cProfile adds a fixed cost per
Python call, so the profiled times overstate functions called often; the shares and the
calls per event are what to read.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as a script, this file's folder comes first on sys.path, where this file would
# shadow the standard library's ``profile`` module that cProfile imports.  Drop it, and
# append the checkout so ``benchmarks`` imports (an installed sse_sansio still wins).
HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))

import argparse  # noqa: E402
import collections  # noqa: E402
import cProfile  # noqa: E402
import pstats  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable, Iterable, Sequence  # noqa: E402

from benchmarks import workloads as wl  # noqa: E402
from benchmarks.peers import PEERS, Sink  # noqa: E402

Parse = Callable[[Iterable[bytes], Sink], None]


def profile(name: str, chunk: int, top: int, quick: bool) -> None:
    """Print the wall time per event and the cProfile table for one workload."""
    workload = wl.build(name, quick=quick)
    chunks = wl.chunked(workload.stream, chunk)
    n_items = len(workload.items)
    parse = PEERS[0].make()  # sse_sansio, driven by the README's drain loop
    sink: Sink = collections.deque(maxlen=0).append

    parse(chunks, sink)  # warm up
    best = min(_timed(parse, chunks) for _ in range(5))
    print(f"\n## {name}, {chunk}-byte chunks: {n_items} items, {len(workload.stream)} bytes")
    print(
        f"CPU time (best of 5, no profiler): {best * 1e3:.1f} ms = "
        f"{best / n_items * 1e9:.0f} ns per item, {len(workload.stream) / best / 1e6:.1f} MB/s"
    )

    profiler = cProfile.Profile()
    profiler.enable()
    parse(chunks, sink)
    profiler.disable()
    stats = pstats.Stats(profiler)
    rows = []
    total = 0.0
    # stats.stats: (file, line, func) -> (primitive calls, calls, tottime, cumtime, callers)
    for (file, line, func), (_, ncalls, tottime, cumtime, _) in stats.stats.items():  # type: ignore[attr-defined]
        total += tottime
        where = f"{Path(file).name}:{line}({func})" if line else func
        rows.append((tottime, cumtime, ncalls, where))
    rows.sort(reverse=True)
    print(f"profiled total {total * 1e3:.1f} ms; top {top} by own time:\n")
    print(
        f"{'own ms':>8} {'share':>6} {'cum ms':>8} {'calls':>9} {'calls/item':>10} "
        f"{'ns/call':>8} {'ns/item':>8}  function"
    )
    for tottime, cumtime, ncalls, where in rows[:top]:
        print(
            f"{tottime * 1e3:8.1f} {tottime / total:6.1%} {cumtime * 1e3:8.1f} {ncalls:9d} "
            f"{ncalls / n_items:10.2f} {tottime / ncalls * 1e9:8.0f} "
            f"{tottime / n_items * 1e9:8.0f}  {where}"
        )


def _timed(parse: Parse, chunks: list[bytes]) -> float:
    sink: Sink = collections.deque(maxlen=0).append
    start = time.process_time()
    parse(chunks, sink)
    return time.process_time() - start


def main(argv: Sequence[str] | None = None) -> int:
    """Profile each workload asked for; return the exit status."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--chunk", type=int, default=16384, help="chunk size (default 16384)")
    ap.add_argument("--workloads", default="llm,crlf", help="comma-separated (default llm,crlf)")
    ap.add_argument("--top", type=int, default=15, help="rows per table (default 15)")
    ap.add_argument("--quick", action="store_true", help="the smaller workloads")
    args = ap.parse_args(argv)
    for name in args.workloads.split(","):
        profile(name.strip(), args.chunk, args.top, args.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
