"""Channels across processes, live (issue 40, items 6 and 7): examples/channels.py as two
uvicorn processes on one redis-server.

- 1,000 subscribers over 100 user channels (and the public ``scores/*``), spread over
  both processes, and one reader that never reads: every reader gets exactly the events
  it may read, once, in order, with the same IDs whichever process serves it; a tenth
  of them leave halfway and resume on the other process with ``Last-Event-ID``; a user
  asking for another user's channel gets nothing of it; a right revoked in a process
  stops the replay of the events it covered there.
- A connection is not the stream: a uvicorn process stopped with SIGTERM while 100
  readers are connected ends every response at once as a cut (it exits without waiting
  for the streams), and every reader resumes on the other process with no loss and no
  duplicate.

Responses are read with h11 over plain sockets (a chunked body that stops without its
last chunk is a cut) and parsed with Connection.  Wall-clock-free: every wait is for a
fact, under a generous guard.
"""

from __future__ import annotations

import ast
import asyncio
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field

import h11
import pytest

from sse_sansio import NEED_DATA, Connection, Event
from tests.helpers.examples import EXAMPLES, subprocess_env
from tests.helpers.redis_server import RedisServer, redis_servers

pytestmark = pytest.mark.slow  # two server processes, a redis-server, 1,000 sockets

GUARD = 120.0  # seconds: a failure guard only
USERS = 100
UVICORN = [sys.executable, "-m", "uvicorn", "--app-dir", str(EXAMPLES), "channels:app"]
UVICORN += ["--host", "127.0.0.1", "--log-level", "warning"]
SUBSCRIBERS = 1000


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    yield from redis_servers()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Servers:
    ports: list[int]
    processes: list[subprocess.Popen[bytes]]


def start(redis_server: RedisServer, key: str) -> Servers:
    env = subprocess_env()
    env["CHANNELS_REDIS_URL"] = redis_server.url
    env["CHANNELS_KEY"] = key
    ports = [free_port(), free_port()]
    processes = [
        subprocess.Popen(
            [*UVICORN, "--port", str(port)],
            env=env,
        )
        for port in ports
    ]
    for port in ports:
        for _ in range(400):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
    return Servers(ports, processes)


@pytest.fixture
def servers(redis_server: RedisServer) -> Iterator[Servers]:
    started = start(redis_server, f"channels:{uuid.uuid4().hex}")
    try:
        yield started
    finally:
        for process in started.processes:
            if process.poll() is None:
                process.terminate()
                process.wait(timeout=30)


@dataclass
class Stream:
    """One open ``GET /events``: its socket and its h11 state."""

    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    http: h11.Connection
    status: int


async def request(
    port: int, target: str, user: str, headers: tuple[tuple[str, str], ...] = ()
) -> Stream:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    http = h11.Connection(h11.CLIENT)
    heads = [("Host", "test"), ("Authorization", f"Bearer {user}"), *headers]
    writer.write(http.send(h11.Request(method="GET", target=target, headers=heads)))
    writer.write(http.send(h11.EndOfMessage()))
    while True:
        event = http.next_event()
        if event is h11.NEED_DATA:
            http.receive_data(await reader.read(65536))
            continue
        assert isinstance(event, h11.Response), event
        return Stream(reader, writer, http, event.status_code)


async def post(port: int, path: str, data: str = "") -> None:
    """An admin's POST, answered 200."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    body = data.encode()
    head = (
        f"POST {path} HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer admin\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    writer.write(head.encode() + body)
    reply = await reader.read()
    assert reply.startswith(b"HTTP/1.1 200 "), reply
    writer.close()


async def publish(port: int, channel: str, data: str) -> None:
    await post(port, f"/publish/{channel}", data)


@dataclass
class Reader:
    """What one subscriber received."""

    user: str
    events: list[Event] = field(default_factory=list)
    resumes: int = 0


async def read(stream: Stream, into: Reader, until: str) -> bool:
    """Parse events into ``into`` until one whose data is ``until`` (True) or the body
    ends (False: a cut, or an end)."""
    conn = Connection()
    try:
        while True:
            event = stream.http.next_event()
            if event is h11.NEED_DATA:
                data = await stream.reader.read(65536)
                stream.http.receive_data(data)
                if not data:
                    return False
                continue
            if isinstance(event, h11.Data):
                conn.receive_data(bytes(event.data))
                while (item := conn.next_event()) is not NEED_DATA:
                    if isinstance(item, Event):
                        into.events.append(item)
                        if item.data == until:
                            return True
            elif isinstance(event, (h11.EndOfMessage, h11.ConnectionClosed)):
                return False
    except (h11.RemoteProtocolError, ConnectionError):
        return False  # the body stopped without its last chunk: a cut
    finally:
        stream.writer.close()


def expected(user: str, published: list[tuple[str, str]]) -> list[str]:
    return [d for c, d in published if c == f"user/{user}" or c.startswith("scores/")]


async def follow(
    ports: list[int], first: int, stream: Stream, reader: Reader, until: str, leave: str | None
) -> Reader:
    """Read ``stream`` to ``until``; on a cut, or at ``leave``, resume on the other
    process."""
    attempt = first
    while True:
        mark = leave if leave is not None and reader.resumes == 0 else until
        if await read(stream, reader, mark) and mark == until:
            return reader
        reader.resumes += 1
        attempt += 1
        last = reader.events[-1].id
        stream = await request(
            ports[attempt % 2], "/events", reader.user, (("Last-Event-ID", last),)
        )
        assert stream.status == 200


async def arrived(readers: list[Reader], data: str) -> None:
    while not all(any(e.data == data for e in r.events) for r in readers):
        await asyncio.sleep(0.01)


async def until_subscribed(port: int, user: str) -> None:
    """A subscriber of ``port`` whose head came is subscribed: the hub follows Redis."""
    stream = await request(port, "/events", user)
    assert stream.status == 200
    stream.writer.close()


async def channels_scenario(servers: Servers) -> None:
    ports = servers.ports
    for port in ports:
        await until_subscribed(port, "warmup")
    published: list[tuple[str, str]] = []

    async def put(channel: str, data: str) -> None:
        await publish(ports[len(published) % 2], channel, data)
        published.append((channel, data))

    readers = [Reader(f"u{i % USERS}") for i in range(SUBSCRIBERS)]
    # Each response's head came: its hub subscribed it, before anything is published.
    opened = await asyncio.gather(
        *(request(ports[i % 2], "/events", r.user) for i, r in enumerate(readers))
    )
    tasks = [
        asyncio.ensure_future(
            follow(ports, i % 2, opened[i], r, "done", "half" if i % 10 == 0 else None)
        )
        for i, r in enumerate(readers)
    ]
    nosy = Reader("u0")
    nosy_stream = await request(ports[0], "/events?channel=user/u1&channel=scores/*", "u0")
    nosy_task = asyncio.ensure_future(read(nosy_stream, nosy, "done"))
    stalled = await request(ports[1], "/events", "u7")  # never read
    for k in range(300):
        channel = f"user/u{k % USERS}" if k % 3 else f"scores/{k % 5}"
        await put(channel, str(k))
        if k == 149:
            await put("scores/half", "half")
    await put("scores/end", "done")
    results = await asyncio.wait_for(asyncio.gather(*tasks), GUARD)
    await asyncio.wait_for(nosy_task, GUARD)
    ids: dict[str, str] = {}
    for result in results:
        got = [e.data for e in result.events]
        assert got == expected(result.user, published), result.user
        for event in result.events:
            assert ids.setdefault(event.data, event.id) == event.id  # one ID everywhere
    assert sum(r.resumes for r in results) == SUBSCRIBERS // 10
    # It asked for user/u1 (refused by may_read: nothing of it) and scores/* only.
    assert [e.data for e in nosy.events] == [d for c, d in published if c.startswith("scores/")]
    stalled.writer.close()

    # A right revoked in a process: a replay there leaves out what it no longer covers.
    await post(ports[1], "/revoke/u5/scores/")
    half = ids["half"]
    again = Reader("u5")
    mine = [d for c, d in published if c == "user/u5"]
    stream = await request(ports[1], "/events", "u5", (("Last-Event-ID", half),))
    await asyncio.wait_for(read(stream, again, mine[-1]), GUARD)
    after_half = [
        d for c, d in published[published.index(("scores/half", "half")) + 1 :] if c == "user/u5"
    ]
    assert [e.data for e in again.events] == after_half


def test_1000_subscribers_over_100_channels_on_two_processes(servers: Servers) -> None:
    asyncio.run(asyncio.wait_for(channels_scenario(servers), GUARD * 2))


async def sigterm_scenario(servers: Servers) -> None:
    ports = servers.ports
    for port in ports:
        await until_subscribed(port, "warmup")
    published: list[tuple[str, str]] = []
    readers = [Reader(f"u{i}") for i in range(100)]
    opened = await asyncio.gather(*(request(ports[0], "/events", r.user) for r in readers))
    tasks = [
        asyncio.ensure_future(follow(ports, 0, opened[i], r, "done", None))
        for i, r in enumerate(readers)
    ]
    for k in range(100):
        await publish(ports[1], f"user/u{k}", str(k))
        published.append((f"user/u{k}", str(k)))
    await publish(ports[1], "scores/1", "mid")
    published.append(("scores/1", "mid"))
    # Every reader has what the first process followed before it stops (else one with
    # no event yet would have no ID to resume from, a race of the test's own).
    await asyncio.wait_for(arrived(readers, "mid"), GUARD)
    servers.processes[0].send_signal(signal.SIGTERM)
    # It exits at once: uvicorn's graceful wait does not wait on the open streams.
    await asyncio.wait_for(asyncio.to_thread(servers.processes[0].wait), 15)
    for k in range(100):
        await publish(ports[1], f"user/u{k}", f"after {k}")
        published.append((f"user/u{k}", f"after {k}"))
    await publish(ports[1], "scores/end", "done")
    published.append(("scores/end", "done"))
    results = await asyncio.wait_for(asyncio.gather(*tasks), GUARD)
    for result in results:
        assert [e.data for e in result.events] == expected(result.user, published)
        assert result.resumes == 1


def test_a_server_stopped_with_sigterm_hands_its_readers_to_the_other(servers: Servers) -> None:
    asyncio.run(asyncio.wait_for(sigterm_scenario(servers), GUARD * 2))


def test_the_example_holds_in_60_lines() -> None:
    source = (EXAMPLES / "channels.py").read_text()
    tree = ast.parse(source)
    docstrings: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        first = body[0] if isinstance(body, list) and body else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
            docstrings.update(range(first.lineno, (first.end_lineno or 0) + 1))
    lines = [
        text
        for number, text in enumerate(source.splitlines(), 1)
        if text.strip() and not text.strip().startswith("#") and number not in docstrings
    ]
    assert len(lines) <= 60, len(lines)
