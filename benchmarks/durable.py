"""sse_sansio.durable against its floors and against the Node reference server (issue 44,
item 8): ratios in one run.

Run ``python benchmarks/durable.py`` (``--messages N``, ``--rounds N``, ``--quick``,
``--server-rounds N``, ``--no-servers``, ``--callgrind``).

- **append/in-process**: ``DurableStreams.append(path, body, now)``, the in-process
  producer's append of 1 KiB onto the memory store (the same checks and write as a
  ``POST``, without a request or a response), against its floor: ``bytearray += body``
  and a dict update (where the bytes and the tail would go).  Target: at most 3x.
- **append**: ``DurableStreams.handle()`` of a ``POST`` of the same body, a whole
  request's decision (headers read, checks, the write, the response's headers),
  against the same floor.  No target: the request and the response are most of it.
- **append/api**: ``handle()`` against the least any ``handle()`` behind this API does
  per append: make the :class:`Request`, read its headers into a dict, the floor's
  write, and a :class:`Response` with the protocol's headers and the next offset.  No
  target: it says how much of the second ratio is the API's own (in CPython 3.11 making
  the request and the response alone costs several times the 1 KiB copy).
- **read**: ``handle()`` of a catch-up ``GET`` of a 1 MiB stream from ``-1`` against its
  floor: slicing the same bytes out of a ``bytearray``.  Target: at most 2x.
- **redis vs node** (with ``redis-server`` and the conformance judge's npm cache, see
  tests/durable/test_durable_conformance.py): appends per second of wall time, 1 KiB
  each, through one ``httpx.Client`` (keep-alive), against the example server on Redis
  and against the Node reference server (``@durable-streams/server``, in memory), one
  writer and then four threads; ratio ours / theirs.  Target: at least 0.8x.  Beside
  it, each server process's CPU time per append (``/proc``, Linux): steadier than the
  throughput on a shared machine, where the wall clock moves with everyone's load.

Timing: CPU time of this thread (``time.thread_time()``) for the in-process pairs, wall
time for the servers; the cases interleaved round-robin with the order rotating; the
median of the rounds per case; a ratio is two medians of the same run.  Each pair is
first checked to produce the same bytes.  On a shared machine expect 10-20 % noise.

``--callgrind`` adds the append pairs in instructions per append, which repeat to
about 1% from run to run (the floor's exactly): each case runs alone in a fresh process
under ``valgrind --tool=callgrind --toggle-collect=functools_reduce``, twice untimed and
then once inside ``functools.reduce()`` (the only code counted), with
``PYTHONHASHSEED=0`` and glibc's ``MALLOC_MMAP_THRESHOLD_=131072``.  The fixed
threshold and the fresh heap matter: otherwise glibc raises the threshold after the
first large ``free()``, and whether a growing ``bytearray`` is copied on each
``realloc()`` (tripling the floor) depends on what the process did before.  With them,
every ``bytearray`` over 128 KiB grows by ``mremap()``, alike in each case.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))

from benchmarks.resume import timed  # noqa: E402
from sse_sansio.durable import DurableStreams, Request, Response, encode_offset  # noqa: E402
from sse_sansio.durable._protocol import _COMMON  # noqa: E402

Case = Callable[[], object]
NOW = 1_800_000_000.0
PATH = "/v1/stream/bench"
TEXT = [("content-type", "text/plain")]


def append_cases(messages: int, size: int = 1024, *, check: bool = True) -> dict[str, Case]:
    body = bytes(range(256)) * (size // 256)

    def path() -> DurableStreams:
        ds = DurableStreams(max_read_bytes=messages * len(body))
        ds.handle(Request("PUT", PATH, TEXT), NOW)
        handle = ds.handle
        for _ in range(messages):
            handle(Request("POST", PATH, TEXT, "", body), NOW)
        return ds

    def in_process() -> DurableStreams:
        ds = DurableStreams(max_read_bytes=messages * len(body))
        ds.handle(Request("PUT", PATH, TEXT), NOW)
        append = ds.append
        for _ in range(messages):
            append(PATH, body, NOW)
        return ds

    def floor() -> bytearray:
        data = bytearray()
        tails: dict[str, int] = {}
        for _ in range(messages):
            data += body
            tails[PATH] = len(data)
        return data

    def api_floor() -> bytearray:
        data = bytearray()
        tails: dict[str, int] = {}
        for _ in range(messages):
            request = Request("POST", PATH, TEXT, "", body)
            headers = {name.lower(): value for name, value in request.headers}
            data += request.body
            tails[request.path] = len(data)
            offset = encode_offset(len(data))
            changed = request.path if "content-type" in headers else None
            Response(204, [*_COMMON, ("stream-next-offset", offset)], b"", changed)
        return data

    if check:
        reads = [ds.handle(Request("GET", PATH), NOW) for ds in (path(), in_process())]
        bodies = [read.body for read in reads if isinstance(read, Response)]
        assert bodies == [floor()] * 2 == [api_floor()] * 2, "the append paths differ"
    return {
        "append: core": path,
        "append: in-process": in_process,
        "append: floor": floor,
        "append: api floor": api_floor,
    }


def callgrind_inner(name: str, messages: int) -> None:
    """The process under valgrind: the append case ``name``, twice untimed (imports,
    specialisation), then once inside ``functools.reduce()``, the only code counted."""
    case = append_cases(messages, check=False)[name]  # no other case's heap before
    case()
    case()
    functools.reduce(lambda _, __: case(), [None, None])


def callgrind_counts(messages: int) -> dict[str, float] | None:
    """Instructions per append of each append case (None without valgrind)."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        print("(callgrind: valgrind is not installed)")
        return None
    env = {**os.environ, "PYTHONHASHSEED": "0", "MALLOC_MMAP_THRESHOLD_": "131072"}
    counts = {}
    for name in append_cases(1):
        with tempfile.TemporaryDirectory() as folder:
            out = Path(folder) / "callgrind.out"
            command = [valgrind, "--tool=callgrind", "--collect-atstart=no"]
            command += ["--toggle-collect=functools_reduce", f"--callgrind-out-file={out}"]
            command += [sys.executable, __file__, "--callgrind-case", name]
            command += ["--messages", str(messages)]
            subprocess.run(command, env=env, capture_output=True, check=True)
            total = re.search(r"^(?:summary|totals):\s*(\d+)", out.read_text(), re.MULTILINE)
            if total is None:
                raise SystemExit(f"no instruction total in callgrind's output for {name}")
            counts[name] = int(total.group(1)) / messages
    return counts


def read_cases(size: int, repeat: int) -> dict[str, Case]:
    body = bytes(range(256)) * (size // 256)
    ds = DurableStreams(max_read_bytes=size)
    ds.handle(Request("PUT", PATH, TEXT, "", body), NOW)
    data = bytearray(body)
    get = Request("GET", PATH, (), "offset=-1")

    def path() -> bytes:
        answer = b""
        for _ in range(repeat):
            response = ds.handle(get, NOW)
            assert isinstance(response, Response)
            answer = response.body
        return answer

    def floor() -> bytes:
        answer = b""
        for _ in range(repeat):
            answer = bytes(data[0:size])
        return answer

    assert path() == floor() == body, "the read path and its floor read different bytes"
    return {"read: core": path, "read: floor": floor}


# ---- the servers ---------------------------------------------------------------------------


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _wait(url: str, process: subprocess.Popen[bytes]) -> None:
    import httpx

    deadline = time.monotonic() + 30
    while True:
        if process.poll() is not None:
            raise SystemExit(f"the server for {url} exited at start")
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise SystemExit(f"nothing answers at {url}") from None
            time.sleep(0.05)


@contextmanager
def _process(command: list[str], url: str, **kwargs: object) -> Iterator[tuple[str, int]]:
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, **kwargs)  # type: ignore[call-overload]
    try:
        _wait(url, process)
        yield url, process.pid
    finally:
        process.terminate()
        process.wait(timeout=10)


def _npm_cache() -> Path | None:
    from tests.durable.test_durable_conformance import _cache

    folder = _cache()
    return folder if (folder / "reference.mjs").is_file() else None


def appends_per_second(base: str, count: int, threads: int) -> float:
    """Appends of 1 KiB per second of wall time, ``threads`` writers on one stream each."""
    import httpx

    body = bytes(range(256)) * 4
    url = f"{base}/v1/stream/bench-{os.getpid()}-{time.monotonic_ns()}"

    def writer(index: int) -> None:
        with httpx.Client() as client:
            target = f"{url}-{index}"
            client.put(target, headers={"Content-Type": "text/plain"}).raise_for_status()
            for _ in range(count):
                client.post(target, headers={"Content-Type": "text/plain"}, content=body)

    workers = [threading.Thread(target=writer, args=(i,)) for i in range(threads)]
    start = time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return count * threads / (time.perf_counter() - start)


def _cpu_seconds(pid: int) -> float:
    """User and system CPU time of process ``pid`` so far (Linux ``/proc``; 0 elsewhere)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


Row = tuple[str, float, float, float, float]


def uvicorn_command(port: int) -> list[str]:
    """The example server as docs/durable.rst says to run it: uvloop and httptools
    (``uvicorn[standard]``) where they are installed, and no access log."""
    command = [sys.executable, "-m", "uvicorn", "--app-dir", str(ROOT / "examples")]
    command += ["durable_streams_server:app", "--port", str(port), "--log-level", "warning"]
    command.append("--no-access-log")
    if all(importlib.util.find_spec(name) for name in ("uvloop", "httptools")):
        command += ["--loop", "uvloop", "--http", "httptools"]
    else:  # about twice the CPU per append (docs/durable.rst, Speed)
        print("(servers: ours on asyncio and h11; uvicorn[standard] brings uvloop, httptools)")
    return command


def server_rows(count: int, rounds: int) -> list[Row]:
    redis_binary, node = shutil.which("redis-server"), shutil.which("node")
    cache = _npm_cache()
    if redis_binary is None or node is None or cache is None:
        print("(servers: needs redis-server, node and the conformance judge's npm cache)")
        return []
    redis_port, ours_port, node_port = _free_port(), _free_port(), _free_port()
    redis_cmd = [redis_binary, "--port", str(redis_port), "--bind", "127.0.0.1"]
    redis_cmd += ["--save", "", "--appendonly", "no"]
    redis = subprocess.Popen(redis_cmd, stdout=subprocess.DEVNULL)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env["DURABLE_REDIS_URL"] = f"redis://127.0.0.1:{redis_port}/0"
    ours_cmd = uvicorn_command(ours_port)
    node_env = {**os.environ, "PORT": str(node_port)}
    rows = []
    try:
        time.sleep(0.3)
        with (
            _process(ours_cmd, f"http://127.0.0.1:{ours_port}", env=env) as ours,
            _process(
                [node, "reference.mjs"], f"http://127.0.0.1:{node_port}", cwd=cache, env=node_env
            ) as theirs,
        ):
            for threads in (1, 4):
                rate: dict[str, list[float]] = {"ours": [], "node": []}
                cpu: dict[str, list[float]] = {"ours": [], "node": []}
                for round_ in range(rounds):
                    order = [("ours", ours), ("node", theirs)][:: 1 if round_ % 2 else -1]
                    for name, (base, pid) in order:
                        before = _cpu_seconds(pid)
                        rate[name].append(appends_per_second(base, count, threads))
                        cpu[name].append((_cpu_seconds(pid) - before) / (count * threads))
                median = statistics.median
                rows.append(
                    (
                        f"{threads} writer(s)",
                        median(rate["ours"]),
                        median(rate["node"]),
                        median(cpu["ours"]),
                        median(cpu["node"]),
                    )
                )
    finally:
        redis.terminate()
        redis.wait(timeout=10)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="sse_sansio.durable against its floors")
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--quick", action="store_true", help="few messages, few rounds")
    parser.add_argument("--no-servers", action="store_true", help="in-process pairs only")
    parser.add_argument("--server-rounds", type=int, default=5, help="rounds per server pair")
    parser.add_argument("--callgrind", action="store_true", help="instructions per append too")
    parser.add_argument("--callgrind-case", help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.callgrind_case:
        callgrind_inner(options.callgrind_case, options.messages)
        return 0
    if options.quick:
        options.server_rounds = 1
    messages, rounds = (50, 1) if options.quick else (options.messages, options.rounds)
    print(f"{'pair':<17} {'path':>12} {'floor':>12} {'ratio':>7}  target")
    append = timed(append_cases(messages), rounds, time.thread_time)
    core = append["append: core"] / messages
    floor = append["append: floor"] / messages
    _row("append/in-process", append["append: in-process"] / messages, floor, "<= 3x")
    _row("append", core, floor, "(none)")
    _row("append/api", core, append["append: api floor"] / messages, "(none)")
    counts = callgrind_counts(messages) if options.callgrind else None
    if counts is not None:
        core, floor = counts["append: core"], counts["append: floor"]
        _count("append/in-process", counts["append: in-process"], floor, "<= 3x")
        _count("append", core, floor, "(none)")
        _count("append/api", core, counts["append: api floor"], "(none)")
    repeat = 2 if options.quick else 20
    read = timed(read_cases(1 << 20, repeat), rounds, time.thread_time)
    _row("read", read["read: core"] / repeat, read["read: floor"] / repeat, "<= 2x")
    if not options.no_servers:
        count = 50 if options.quick else 1000
        for label, ours, theirs, our_cpu, their_cpu in server_rows(count, options.server_rounds):
            print(
                f"redis vs node, {label}: ours {ours:,.0f}/s, node {theirs:,.0f}/s, "
                f"ratio {ours / theirs:.2f}x (target >= 0.8x); server CPU per append: "
                f"ours {our_cpu * 1e6:.0f}us, node {their_cpu * 1e6:.0f}us"
            )
    return 0


def _row(name: str, path: float, floor: float, target: str) -> None:
    print(
        f"{name:<17} {path * 1e6:>10.2f}us {floor * 1e6:>10.2f}us {path / floor:>6.2f}x  {target}"
    )


def _count(name: str, path: float, floor: float, target: str) -> None:
    print(f"{name:<17} {path:>10,.0f}in {floor:>10,.0f}in {path / floor:>6.2f}x  {target}")


if __name__ == "__main__":
    raise SystemExit(main())
