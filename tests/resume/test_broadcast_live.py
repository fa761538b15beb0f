"""Issue 34, item 2, live: examples/broadcast.py as two server processes on one Redis,
1,000 subscribers over loopback, one of which never reads.

Asserted (behaviour, never wall-clock timings): every reading subscriber gets every
event exactly once, in order, under the same ID whichever process serves it; the
subscriber that never reads is dropped by its hub and its connection reset before the
end; a client resumes on the other process with its Last-Event-ID, and one whose ID
fell behind the stream's MAXLEN gets the gap event first; each server's peak RSS stays
under a generous bound.  The delivery latencies and the peaks are printed (``-s``) for
the figures in the report, not judged.
"""

from __future__ import annotations

import asyncio
import json
import socket
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from sse_sansio import NEED_DATA, Connection, Event
from tests.helpers.examples import EXAMPLES, subprocess_env
from tests.helpers.redis_server import RedisServer, redis_servers

pytestmark = pytest.mark.slow  # two server processes, a redis-server, 1,000 sockets

SUBSCRIBERS = 1000  # one of which never reads
EVENTS = 300
MAX_EVENTS = 1000  # the stream's MAXLEN: a reader dropped as slow resumes within it
MORE = 800  # events produced afterwards, with no subscriber: the first ones fall out
PAD = 250  # bytes of padding per event (about 330 bytes on the wire)
MAX_BUFFER = 32 * 1024
SNDBUF = 4096  # the servers' SO_SNDBUF: the stalled reader's kernel buffers stay small
RSS_BOUND = 300 * 1024 * 1024  # bytes: generous (a server measured well under half)
TIMEOUT = 120.0  # seconds for the whole run: a hang fails, it does not time anything
GAP = "sse_sansio.gap"


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    yield from redis_servers()


@dataclass
class Servers:
    ports: list[int]
    processes: list[subprocess.Popen[str]]
    key: str
    redis_port: int


@pytest.fixture
def servers(redis_server: RedisServer) -> Iterator[Servers]:
    key = f"broadcast:{uuid.uuid4().hex}"
    command = [sys.executable, str(EXAMPLES / "broadcast.py"), "serve", "--port", "0"]
    command += ["--redis-port", str(redis_server.port), "--key", key]
    command += ["--max-events", str(MAX_EVENTS), "--max-buffer", str(MAX_BUFFER)]
    command += ["--sndbuf", str(SNDBUF)]
    processes = [
        subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=subprocess_env())
        for _ in range(2)
    ]
    try:
        ports = []
        for process in processes:
            assert process.stdout is not None
            line = process.stdout.readline()
            assert line.startswith("listening on 127.0.0.1:"), line
            ports.append(int(line.rsplit(":", 1)[1]))
        yield Servers(ports, processes, key, redis_server.port)
    finally:
        for process in processes:
            process.terminate()
            process.wait(timeout=10)
            assert process.stdout is not None
            process.stdout.close()


def peak_rss(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")  # pragma: no cover - Linux has it


@dataclass
class Reader:
    """One subscriber's events, with the time each came."""

    events: list[Event] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    reconnects: int = 0


async def open_stream(
    port: int, last_event_id: str | None = None, rcvbuf: int = 0
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A GET /events whose response head has come: the hub has subscribed it."""
    sock = socket.socket()
    if rcvbuf:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
    # A reader meant to stall must stall for real: asyncio's StreamReader keeps reading
    # from the socket into its own buffer, unread, up to twice its limit (128 KiB by
    # default, more than the whole stream here), so its limit is kept small too.
    limit = 1024 if rcvbuf else 2**16
    reader, writer = await asyncio.open_connection(sock=sock, limit=limit)
    header = f"Last-Event-ID: {last_event_id}\r\n" if last_event_id else ""
    writer.write(f"GET /events HTTP/1.1\r\nHost: x\r\n{header}\r\n".encode())
    head = await reader.readuntil(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 "), head
    return reader, writer


async def read_until_done(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, into: Reader
) -> bool:
    """Parse events into ``into`` until ``done`` (True) or the connection ends (False)."""
    conn = Connection()
    try:
        while chunk := await reader.read(65536):
            conn.receive_data(chunk)
            while (item := conn.next_event()) is not NEED_DATA:
                if isinstance(item, Event):
                    if item.type == "done":
                        return True
                    into.events.append(item)
                    if item.type == "tick":
                        into.latencies.append(time.time() - json.loads(item.data)["t"])
    except ConnectionError:
        pass
    finally:
        writer.close()
    return False


async def subscriber(
    ports: list[int], first: int, opened: tuple[asyncio.StreamReader, asyncio.StreamWriter]
) -> Reader:
    """Read to the end; when cut, resume on the other process with Last-Event-ID."""
    result = Reader()
    reader, writer = opened
    attempt = first
    while not await read_until_done(reader, writer, result):
        result.reconnects += 1
        attempt += 1
        last = result.events[-1].id if result.events else None
        reader, writer = await open_stream(ports[attempt % 2], last)
    return result


def numbers(events: list[Event]) -> list[int]:
    return [json.loads(e.data)["n"] for e in events if e.type == "tick"]


async def produce(servers: Servers, count: int, *options: str) -> None:
    """Run the example's producer: ``count`` events then ``done``."""
    producer = await asyncio.create_subprocess_exec(
        sys.executable,
        str(EXAMPLES / "broadcast.py"),
        "produce",
        *("--redis-port", str(servers.redis_port), "--key", servers.key),
        *("--max-events", str(MAX_EVENTS), "--count", str(count), "--pad", str(PAD)),
        *options,
        env=subprocess_env(),
    )
    assert await producer.wait() == 0


@dataclass
class Outcome:
    results: list[Reader]
    stalled_finished: bool
    stalled: Reader
    late: Reader
    behind: Reader


async def ended_at_once(port: int) -> None:
    """A fresh request gets the priming-less, empty, ended response of a finished stream
    (asked again until the server's tail has seen the end: a request that came before
    is a live subscriber, which waits, or gets the last events and ``done``)."""
    for _ in range(30):
        got = Reader()
        opened = await open_stream(port)
        try:
            live = await asyncio.wait_for(read_until_done(*opened, got), 1.0)
        except asyncio.TimeoutError:
            continue
        if not live:
            assert got.events == []
            return
    raise AssertionError(f"the server on {port} never saw the end")


async def scenario(servers: Servers) -> Outcome:
    ports = servers.ports
    opened = await asyncio.gather(*(open_stream(ports[i % 2]) for i in range(SUBSCRIBERS - 1)))
    stalled = await open_stream(ports[0], rcvbuf=2048)  # never read until the end
    readers = [
        asyncio.ensure_future(subscriber(ports, i % 2, pair)) for i, pair in enumerate(opened)
    ]
    await produce(servers, EVENTS, "--batch", "10", "--interval", "0.1")
    results = await asyncio.gather(*readers)

    stalled_result = Reader()
    finished = await read_until_done(*stalled, stalled_result)

    # Resume across processes: the first half from one, the rest from the other.
    ids = [e.id for e in results[0].events]
    late = Reader()
    assert await read_until_done(*await open_stream(ports[1], ids[250]), late)
    # Fall behind MAXLEN: the stream goes on (to no subscriber) past what it keeps.
    await produce(servers, MORE, "--batch", "100", "--interval", "0", "--finish")
    # The producer finished: once a server's tail saw it (within its 1 s block), a new
    # request gets an ended response at once.  Only then has that server's copy of the
    # stream moved past event 10 (asked before, it may still hold it and replay it).
    for port in ports:
        await ended_at_once(port)
    behind = Reader()
    assert await read_until_done(*await open_stream(ports[0], ids[10]), behind)
    return Outcome(results, finished, stalled_result, late, behind)


def test_two_processes_1000_subscribers_one_never_reads(servers: Servers) -> None:
    outcome = asyncio.run(asyncio.wait_for(scenario(servers), TIMEOUT))
    results = outcome.results
    expected = list(range(EVENTS))
    ids = [e.id for e in results[0].events]
    for result in results:
        assert numbers(result.events) == expected  # every event, once, in order
        assert [e.id for e in result.events] == ids  # the same IDs in both processes
    assert len(set(ids)) == EVENTS

    stalled = outcome.stalled
    assert not outcome.stalled_finished  # its connection was reset before `done`
    assert len(stalled.events) < EVENTS  # dropped as slow, not fed everything

    late = outcome.late
    assert numbers(late.events) == list(range(251, EVENTS))
    behind = outcome.behind
    assert behind.events[0].type == GAP
    kept = numbers(behind.events[1:])  # up to the first `done` still kept
    assert kept == list(range(kept[0], EVENTS))
    assert kept[0] > 11

    peaks = [peak_rss(process.pid) for process in servers.processes]
    assert max(peaks) < RSS_BOUND
    latencies = sorted(x for result in results for x in result.latencies)
    quantiles = statistics.quantiles(latencies, n=100)
    print(
        f"\nbroadcast: {len(results)} readers x {EVENTS} events;"
        f" latency p50 {quantiles[49] * 1e3:.1f} ms, p99 {quantiles[98] * 1e3:.1f} ms,"
        f" max {latencies[-1] * 1e3:.1f} ms; reconnects {sum(r.reconnects for r in results)};"
        f" stalled reader got {len(stalled.events)} events;"
        f" server peak RSS {[round(p / 2**20, 1) for p in peaks]} MiB"
    )
