"""Stream an LLM-like answer from Redis, resumable on any server process.

What it shows: server-side resumption.  A producer writes an answer (``delta`` events,
then ``done``) into a Redis stream through ``ReplayWindow(store=RedisStreamStore(...))``;
every server process tails that stream through an ``AsyncReplayWindow``, so a client
cut off from one process reconnects to another with ``Last-Event-ID`` and gets every
event exactly once, in order.  A fresh client gets the priming event first (an ID and
empty data, with ``retry``, as MCP's Streamable HTTP transport asks); a client whose ID
fell out of the window, or is not this answer's, gets a ``reset`` event and the end of
the response.  Redis failing in the middle of a response (a restart, a lost
connection) ends that response as a cut, a reset connection, never as a clean end of a
body that is not complete: the client reconnects with its ``Last-Event-ID`` and
resumes, and the server logs one line.  While nothing is sent (no new word yet, or
Redis not answering: paused, failing over, redis-py retrying), the response gets a
keepalive comment every ``--keepalive`` seconds, so that neither the client nor a proxy
between them takes a silent connection for a dead one.  ``read_answer()`` is the client: a
``ReconnectPlanner`` that tries the ports in turn, as a load balancer would.  Plain
asyncio and redis-py (``sse_sansio[redis]``).

Run a Redis server, two server processes, a producer, then the client::

    redis-server --port 6379 --save "" --appendonly no
    python examples/resumable_server.py --redis-port 6379 --port 8001
    python examples/resumable_server.py --redis-port 6379 --port 8002
    python examples/resumable_server.py --redis-port 6379 --produce demo --interval 0.2
    python examples/resumable_server.py --client demo --ports 8001 8002
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import re
import socket
import struct
import sys
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import TypeVar

import redis
import redis.asyncio

from sse_sansio import (
    AsyncReplayWindow,
    Comment,
    Event,
    ProtocolError,
    Reconnect,
    ReconnectPlanner,
    ReplayWindow,
    TruncatedStreamError,
    serialize,
)
from sse_sansio.stores import AsyncRedisStreamStore, RedisStreamStore

# One stream per answer, named by the server (never by a client's Last-Event-ID).
KEY = "sse_sansio:answer:{}"
MAX_EVENTS = 1000  # the replay window: enough for a whole answer
RETRY = 100  # milliseconds: the client's reconnection time, sent in the priming event
WAIT = 1.0  # seconds a server waits on Redis (XREAD BLOCK) before it looks again
SESSION = re.compile(r"/answers/([A-Za-z0-9_-]{1,64})")
HEAD_LIMIT = 16 * 1024  # bytes of request head a server reads at most
TIMEOUT = 10.0  # seconds of silence after which the client gives up on an attempt
TEXT = "Resumable streams keep every word exactly once."  # what --produce writes
KEEPALIVE = 15.0  # seconds of silence before a keepalive comment (--keepalive)
PING = serialize(Comment(text="keepalive"))

T = TypeVar("T")


def answer_events(text: str) -> list[Event]:
    """The events of an answer: one ``delta`` per word, then ``done``."""
    words = [json.dumps({"text": word}) for word in text.split(" ")]
    return [Event(type="delta", data=word) for word in words] + [Event(type="done", data="{}")]


def producer(client: redis.Redis, session: str, max_events: int = MAX_EVENTS) -> ReplayWindow:
    """The window a producer appends to: the answer's Redis stream."""
    store = RedisStreamStore(client, KEY.format(session), max_events=max_events)
    return ReplayWindow(store=store)


class Body:
    """A response's body: each write, and a keepalive comment after ``keepalive``
    seconds without one, also while a Redis call has not returned."""

    def __init__(self, send: Callable[[bytes], Awaitable[None]], keepalive: float) -> None:
        self._send = send
        self._keepalive = keepalive
        self._loop = asyncio.get_running_loop()
        self._last = self._loop.time()  # when something was last sent

    async def send(self, data: bytes) -> None:
        await self._send(data)
        self._last = self._loop.time()

    async def meanwhile(self, call: Awaitable[T]) -> T:
        """The result of ``call`` (a Redis call), with keepalives sent while it runs.

        Redis paused or failing over answers nothing for as long as redis-py retries
        (its socket timeout, 5 s, times its retries): without them the client, and
        any proxy, would see a silent connection and drop it.
        """
        task = asyncio.ensure_future(call)
        try:
            while True:
                silence = self._last + self._keepalive - self._loop.time()
                done, _ = await asyncio.wait((task,), timeout=max(0.0, silence))
                if done:
                    return task.result()
                await self.send(PING)
        finally:
            task.cancel()  # the client went away (a send raised): stop waiting on Redis


async def stream_answer(
    window: AsyncReplayWindow,
    last_event_id: str,
    send: Callable[[bytes], Awaitable[None]],
    keepalive: float = KEEPALIVE,
) -> None:
    """The body of one response: resume after ``last_event_id`` and follow the answer."""
    body = Body(send, keepalive)
    if not last_event_id:
        # A fresh client: prime it with the start of the answer, then replay from there.
        primer = await body.meanwhile(window.priming(RETRY, from_start=True))
        await body.send(serialize(primer))
        last_event_id = primer.id
    while True:
        resume = await body.meanwhile(window.resume(last_event_id, wait=WAIT))
        if resume.verdict != "continue":
            # "gap": events after the client's ID are gone; "unknown": not this answer's
            # ID.  Either way its copy cannot be completed: tell it to start over.
            reset = Event(type="reset", data=json.dumps({"verdict": resume.verdict}))
            await body.send(serialize(reset))
            return
        for event in resume.events:
            await body.send(serialize(event))
            last_event_id = event.id
            if event.type == "done":
                return


async def handle(
    client: redis.asyncio.Redis,
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    keepalive: float = KEEPALIVE,
) -> None:
    """One HTTP/1.1 request: ``GET /answers/<session>``, answered close-delimited."""
    try:
        head = (await reader.readuntil(b"\r\n\r\n"))[:HEAD_LIMIT].decode("latin-1")
        request, *lines = head.split("\r\n")
        pairs = (line.partition(":") for line in lines if line)
        fields = {name.strip().lower(): value.strip() for name, _, value in pairs}
        path = request.split(" ")[1] if request.count(" ") == 2 else ""
        match = SESSION.fullmatch(path)
        if match is None:
            writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
            return
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Cache-Control: no-cache\r\nConnection: close\r\n\r\n"
        )
        store = AsyncRedisStreamStore(client, KEY.format(match[1]), max_events=MAX_EVENTS)

        async def send(data: bytes) -> None:
            writer.write(data)
            await writer.drain()  # raises once the client has gone

        last_event_id = fields.get("last-event-id", "")
        await stream_answer(AsyncReplayWindow(store), last_event_id, send, keepalive)
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
        pass  # the client went away
    except redis.RedisError as exc:
        # The body is close-delimited: closing would end it cleanly, as if the answer
        # were complete.  A reset (SO_LINGER 0) is a cut: the client resumes where it was.
        print(f"Redis failed mid-response, cut: {type(exc).__name__}: {exc}", file=sys.stderr)
        linger = struct.pack("ii", 1, 0)
        writer.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger)
        writer.transport.abort()
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()


async def serve(port: int, redis_port: int, keepalive: float = KEEPALIVE) -> None:
    """Serve on 127.0.0.1:``port`` (0: any free port) until killed; print the port."""
    client = redis.asyncio.Redis(host="127.0.0.1", port=redis_port)
    server = await asyncio.start_server(
        lambda r, w: handle(client, r, w, keepalive), "127.0.0.1", port, limit=HEAD_LIMIT
    )
    print(f"listening on 127.0.0.1:{server.sockets[0].getsockname()[1]}", flush=True)
    async with server:
        await server.serve_forever()


def _response(sock: socket.socket) -> tuple[int, dict[str, str], Iterator[bytes]]:
    """The status, headers and body chunks of a close-delimited HTTP response."""
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        if not chunk:
            raise ConnectionError("the server closed before its response head")
        head += chunk
    head, _, rest = head.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {name.strip(): value.strip() for name, _, value in (h.partition(":") for h in lines)}

    def body() -> Iterator[bytes]:
        yield rest
        while chunk := sock.recv(4096):
            yield chunk

    return int(status_line.split(" ")[1]), headers, body()


def read_answer(
    ports: Sequence[int],
    session: str,
    planner: ReconnectPlanner,
    *,
    on_event: Callable[[Event], None] = lambda event: None,
    attempts: list[tuple[int, dict[str, str]]] | None = None,
) -> tuple[list[Event], str]:
    """Read an answer, reconnecting to the next port after each cut.

    Returns the events received and how the answer ended: ``"done"``, ``"reset"`` or
    the planner's reason for stopping.  ``attempts`` collects each port and headers.
    """
    events: list[Event] = []
    decision = planner.start(time.monotonic())
    for attempt in itertools.count():
        if not isinstance(decision, Reconnect):
            return events, decision.reason
        time.sleep(decision.delay)
        port = ports[attempt % len(ports)]
        if attempts is not None:
            attempts.append((port, decision.headers))
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as sock:
                request = f"GET /answers/{session} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                request += "".join(f"{k}: {v}\r\n" for k, v in decision.headers.items())
                sock.sendall(request.encode() + b"\r\n")
                status, headers, body = _response(sock)
                for item in planner.events(body, status, headers):
                    # The priming event has empty data and a retry; a real event with
                    # empty data is no primer (docs/client.rst: the priming event).
                    primer = isinstance(item, Event) and not item.data and item.retry is not None
                    if isinstance(item, Event) and not primer:
                        if item.type == "reset":
                            return events, "reset"
                        events.append(item)
                        on_event(item)
                        if item.type == "done":
                            return events, "done"
        except (OSError, ProtocolError, TruncatedStreamError) as exc:  # the planner decides
            decision = planner.ended(exc, now=time.monotonic())
        else:
            decision = planner.ended(None, now=time.monotonic())
    raise AssertionError("unreachable")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--redis-port", type=int, default=6379)
    parser.add_argument("--port", type=int, default=8001, help="serve on this port")
    parser.add_argument("--produce", metavar="SESSION", help="write an answer and exit")
    parser.add_argument("--interval", type=float, default=0.2, help="between words")
    parser.add_argument("--client", metavar="SESSION", help="read an answer and print it")
    parser.add_argument("--ports", type=int, nargs="+", default=[8001, 8002])
    parser.add_argument(
        "--keepalive", type=float, default=KEEPALIVE, help="seconds of silence before a comment"
    )
    args = parser.parse_args(argv)
    if args.produce:
        with redis.Redis(host="127.0.0.1", port=args.redis_port) as client:
            window = producer(client, args.produce)
            for event in answer_events(TEXT):
                print(window.append(event).id, flush=True)
                time.sleep(args.interval)
        return 0
    if args.client:
        events, end = read_answer(args.ports, args.client, ReconnectPlanner(initial_delay=0.1))
        print("".join(json.loads(e.data).get("text", "") + " " for e in events).strip(), end)
        return 0
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(args.port, args.redis_port, args.keepalive))
    return 0


if __name__ == "__main__":
    sys.exit(main())
