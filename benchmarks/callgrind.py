"""Instructions per item, counted by callgrind: the deterministic speed check of the core.

Run ``python benchmarks/callgrind.py`` (``--workloads a,b``, ``--chunks 64,16384``).
For each workload and chunk size it starts one process under
``valgrind --tool=callgrind --collect-atstart=no --toggle-collect=functools_reduce``
with ``PYTHONHASHSEED=0`` and the pure core (``SSE_SANSIO_NO_EXTENSIONS=1``), or the
compiled one with ``--core compiled`` (``SSE_SANSIO_REQUIRE_EXTENSIONS=1``: build it
first for the interpreter that runs this, ``python setup.py build_ext --inplace``).
``--skip``, ``--piece-size N``, ``--diagnostics`` and ``--max-event-size N`` make the
connection with those options (``on_oversize="skip"`` for ``--skip``).  That
process cuts the stream into chunks, drains it once untimed (so that the interpreter's
specialisation has settled and every import is done), then drains it again inside a
``functools.reduce()`` call: the only code counted is that second drain, the feed and
drain loop a user writes (``receive_data()``, ``next_event()`` until ``NEED_DATA``, the
end of the stream).  The parser never calls reduce(), so the toggle is entered once.
The figure printed is the instructions counted divided by the items produced.

Wall-clock timings on two shared cores drift by several per cent; instruction counts
repeat to a few in a million, so a change of 1% is visible.  The workloads are small
versions of benchmarks/workloads.py's (thousands of items: the per-run constants are a
few hundred instructions, well under 0.1% of a cell).  Use CPython 3.12, with its symbols
(``functools_reduce`` must be visible to valgrind, as in a pyenv or distribution build).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from functools import reduce
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))

from benchmarks import workloads as wl  # noqa: E402

# The four workloads of the speed bar, as small as keeps per-run constants negligible.
WORKLOADS: dict[str, Callable[[], wl.Workload]] = {
    "llm": lambda: wl.llm(3_000),
    "llm-typed": lambda: wl.llm_typed(3_000),
    "crlf": lambda: wl.crlf(3_000),
    "keepalive": lambda: wl.keepalive(20_000, every=2_000),
    # Not in the default set: four 1 MiB events (one line, 1 KiB lines), for the
    # compiled core's copies of cut lines, beside benchmarks/floor.py --callgrind.
    "big": lambda: wl.big(4),
}
DEFAULT = ("llm", "llm-typed", "crlf", "keepalive")
CHUNKS = (64, 16384)

_TOTAL = re.compile(r"^(?:summary|totals):\s*(\d+)", re.MULTILINE)


def drain(chunks: list[bytes], options: dict[str, Any] | None = None) -> int:
    """Feed every chunk and pull every item, as a user's loop does; the items' count.

    ``options``: the Connection's (none: ``Connection()``).
    """
    from sse_sansio import NEED_DATA, Connection, EndOfStream

    conn: Any = Connection(**options) if options else Connection()
    receive = conn.receive_data
    nxt = conn.next_event
    count = 0
    for chunk in chunks:
        receive(chunk)
        while nxt() is not NEED_DATA:
            count += 1
    receive(b"")
    while not isinstance(nxt(), EndOfStream):
        count += 1
    return count


def inner(name: str, size: int, options: dict[str, Any]) -> None:
    """The process under valgrind: warm up, then drain once inside reduce()."""
    chunks = wl.chunked(WORKLOADS[name]().stream, size)
    expected = drain(chunks, options)  # untimed: imports, specialisation
    counted = reduce(lambda _, c: drain(c, options), [chunks], 0)
    if counted != expected:
        raise SystemExit(f"{name}: {counted} items, then {expected}")
    print(counted)


def core_environment(core: str) -> dict[str, str]:
    """The environment that makes the process under valgrind run ``core``."""
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    if core == "compiled":
        env.pop("SSE_SANSIO_NO_EXTENSIONS", None)
        env["SSE_SANSIO_REQUIRE_EXTENSIONS"] = "1"
    else:
        env["SSE_SANSIO_NO_EXTENSIONS"] = "1"
    return env


def measure(
    name: str, size: int, core: str = "python", options: dict[str, Any] | None = None
) -> float:
    """Instructions per item for one workload at one chunk size."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        env = core_environment(core)
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
                name,
                str(size),
                json.dumps(options or {}),
            ],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        items = int(done.stdout.split()[-1])
        found = _TOTAL.search(out.read_text())
        if found is None:
            raise SystemExit(f"no instruction total in callgrind's output for {name}")
        return int(found.group(1)) / items


def connection_options(args: argparse.Namespace) -> dict[str, Any]:
    """The Connection options the command line asks for."""
    options: dict[str, Any] = {}
    if args.skip:
        options["on_oversize"] = "skip"
    if args.piece_size is not None:
        options["piece_size"] = args.piece_size
    if args.diagnostics:
        options["diagnostics"] = True
    if args.max_event_size is not None:
        options["max_event_size"] = args.max_event_size
    return options


def main() -> None:
    """Print a table of instructions per item."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workloads", default=",".join(DEFAULT))
    parser.add_argument("--chunks", default=",".join(map(str, CHUNKS)))
    parser.add_argument("--core", choices=("python", "compiled"), default="python")
    parser.add_argument("--skip", action="store_true", help='on_oversize="skip"')
    parser.add_argument("--piece-size", type=int, metavar="N")
    parser.add_argument("--diagnostics", action="store_true")
    parser.add_argument("--max-event-size", type=int, metavar="N")
    parser.add_argument(
        "--inner", nargs=3, metavar=("WORKLOAD", "CHUNK", "OPTIONS"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.inner:
        inner(args.inner[0], int(args.inner[1]), json.loads(args.inner[2]))
        return
    options = connection_options(args)
    sizes = [int(s) for s in args.chunks.split(",")]
    print(f"core: {args.core}; Connection({', '.join(f'{k}={v!r}' for k, v in options.items())})")
    print("| workload | " + " | ".join(f"{s} B" for s in sizes) + " |")
    print("|---|" + "---:|" * len(sizes))
    for name in args.workloads.split(","):
        cells = [f"{measure(name, size, args.core, options):,.0f}" for size in sizes]
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
