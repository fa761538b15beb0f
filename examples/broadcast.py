"""One producer, many readers in many server processes, through one Redis stream.

What it shows (issue 34, item 2): a producer appends events to a Redis stream
(``RedisStreamStore.append_many``: one round trip per batch, stored once however often
redis-py retries); each server process follows that stream's live tail
(``AsyncRedisStreamStore.follow``: ``XREAD BLOCK``) into a ``MirrorStore`` and a
``Hub`` of its own, which fans each event out to that process's subscribers, serialized
once.  Every process sends an event under the ID Redis gave it, so a client cut from
one process resumes on any other with its ``Last-Event-ID``; a client whose ID fell
behind the stream's ``MAXLEN`` gets the hub's gap event (``event: sse_sansio.gap``)
before the events still kept.  A subscriber that stops reading grows only its own
queue, up to ``--max-buffer`` bytes: then the hub drops it (policy ``"disconnect"``) and
this server resets its connection; the others never wait for it.  Plain asyncio and
redis-py (``sse_sansio[redis]``).

Run a Redis server, two server processes, then a producer; read with curl::

    redis-server --port 6379 --save "" --appendonly no
    python examples/broadcast.py serve --redis-port 6379 --port 8001
    python examples/broadcast.py serve --redis-port 6379 --port 8002
    python examples/broadcast.py produce --redis-port 6379 --count 300 --interval 0.01
    curl -N http://127.0.0.1:8001/events
    curl -N -H "Last-Event-ID: <an id curl printed>" http://127.0.0.1:8002/events
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import socket
import struct
import time
from collections.abc import Awaitable

import redis
import redis.asyncio

from sse_sansio import Event, Hub, ReplayWindow, ServerStream, StreamCut
from sse_sansio.stores import AsyncRedisStreamStore, MirrorStore, RedisStreamStore

KEY = "sse_sansio:broadcast"
MAX_EVENTS = 1000  # the stream's MAXLEN, and each process's mirror of it
MAX_BUFFER = 64 * 1024  # bytes a subscriber may fall behind by before it is dropped
KEEPALIVE = 15.0  # seconds of silence before a keepalive comment
HEAD_LIMIT = 16 * 1024  # bytes of request head read at most
WRITE_BUFFER = 16 * 1024  # bytes asyncio's transport holds before drain() waits


class Broadcast:
    """A process's side: the hub, its mirror of the stream, the open connections."""

    def __init__(self, token: str, max_events: int, max_buffer: int) -> None:
        loop = asyncio.get_running_loop()
        self.now = loop.time
        self.mirror = MirrorStore(token, max_events=max_events)
        window = ReplayWindow(store=self.mirror)
        self.hub = Hub(max_buffer=max_buffer, window=window, now=self.now())
        self.tick = asyncio.Event()  # set (and replaced) after each batch published
        self.waking = False  # a wake-up is scheduled
        self.connections: dict[ServerStream, asyncio.StreamWriter] = {}

    async def feed(self, store: AsyncRedisStreamStore) -> None:
        """Publish every event of the stream's tail to this process's subscribers,
        following it anew when it was replaced under the process (issue 41, item 6)."""
        while True:
            try:
                await self.follow(store)
                return
            except StreamCut:
                # Redis restarted without persistence, or a failover: the numbers now
                # name other events.  Cut the live subscribers (each resumes, and its
                # old ID is unknown to the new stream: the gap) and follow the new
                # stream from its start; the mirror resets on its new token.
                self.cut_all()

    def cut_all(self) -> None:
        for stream in self.hub.subscribers:
            self.hub.unsubscribe(stream)
            cut(self.connections[stream])

    async def follow(self, store: AsyncRedisStreamStore) -> None:
        resets = self.mirror.resets
        async for event in store.follow(block=1.0):
            self.hub.publish(event, self.now())
            if self.mirror.resets != resets:
                # This process missed events (it fell behind MAXLEN): its live
                # subscribers have a hole.  Cut them: each resumes, and gets the gap.
                resets = self.mirror.resets
                self.cut_all()
            if not self.waking:
                # Once the events Redis answered with at once are all published (the
                # tail yields them without waiting): each writer wakes once per batch.
                self.waking = True
                asyncio.get_running_loop().call_soon(self.wake)
        # The producer finished: so does every response, now and for later requests.
        end = await store.read(None)
        self.hub.close(self.now(), cut=end.cut)  # and the window over the mirror
        self.wake()

    def wake(self) -> None:
        """Wake every connection's writer; reset those the hub dropped as slow."""
        self.waking = False
        if len(self.hub.subscribers) != len(self.connections):
            for stream, writer in self.connections.items():
                if stream.state == "slow":
                    cut(writer)
        tick, self.tick = self.tick, asyncio.Event()
        tick.set()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One ``GET /events`` (``Last-Event-ID`` honoured), answered close-delimited."""
        stream = None
        try:
            head = (await reader.readuntil(b"\r\n\r\n"))[:HEAD_LIMIT].decode("latin-1")
            request, *lines = head.split("\r\n")
            pairs = (line.partition(":") for line in lines if line)
            fields = {name.strip().lower(): value.strip() for name, _, value in pairs}
            if not request.startswith("GET /events "):
                writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                return
            writer.transport.set_write_buffer_limits(high=WRITE_BUFFER)
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                b"Cache-Control: no-cache\r\nConnection: close\r\n\r\n"
            )
            last_event_id = fields.get("last-event-id")
            stream = self.hub.subscribe(
                self.now(), last_event_id=last_event_id, keepalive=KEEPALIVE
            )
            self.connections[stream] = writer
            await self.pump(stream, writer)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            pass  # the client went away, or was reset as slow
        finally:
            if stream is not None:
                self.hub.unsubscribe(stream)
                self.connections.pop(stream, None)
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    async def pump(self, stream: ServerStream, writer: asyncio.StreamWriter) -> None:
        """Write what the stream has at the client's pace: wait for each drain, so that
        what the client has not taken stays in the stream, where max_buffer bounds it."""
        while True:
            tick = self.tick  # before data_to_send(): a publish after it sets this one
            data = stream.data_to_send(self.now())
            if data:
                writer.write(data)
                await writer.drain()
                continue
            if stream.state != "open":
                break  # ended (all written), cut or slow
            deadline = stream.deadline
            timeout = None if deadline is None else max(0.0, deadline - self.now())
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(tick.wait(), timeout)
        if stream.state in ("slow", "cut"):
            cut(writer)


def cut(writer: asyncio.StreamWriter) -> None:
    """Reset the connection (SO_LINGER 0): a close-delimited body must not end cleanly
    when it is not complete, and a reset frees its buffers at once."""
    if writer.transport.is_closing():
        return  # cut already, or closing
    sock = writer.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


async def serve(options: argparse.Namespace) -> None:
    """Serve on 127.0.0.1:``--port`` (0: any free port) until killed; print the port."""
    client = redis.asyncio.Redis(host="127.0.0.1", port=options.redis_port)
    store = AsyncRedisStreamStore(client, options.key, max_events=options.max_events)
    token = (await store.read(None)).token
    broadcast = Broadcast(token, options.max_events, options.max_buffer)

    def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> Awaitable[None]:
        if options.sndbuf:  # a small kernel buffer: a stalled reader shows sooner
            sock = writer.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, options.sndbuf)
        return broadcast.handle(reader, writer)

    server = await asyncio.start_server(accept, "127.0.0.1", options.port, limit=HEAD_LIMIT)
    feeding = asyncio.ensure_future(broadcast.feed(store))
    print(f"listening on 127.0.0.1:{server.sockets[0].getsockname()[1]}", flush=True)
    async with server:
        await asyncio.gather(server.serve_forever(), feeding)


def produce(options: argparse.Namespace) -> None:
    """Append ``--count`` events in batches of ``--batch``, ``--interval`` s apart, then a
    ``done`` event; each event's data holds its number and the time it was appended."""
    with redis.Redis(host="127.0.0.1", port=options.redis_port) as client:
        store = RedisStreamStore(client, options.key, max_events=options.max_events)
        pad = "x" * options.pad
        for start in range(0, options.count, options.batch):
            numbers = range(start, min(start + options.batch, options.count))
            now = time.time()
            batch = [
                Event(type="tick", data=json.dumps({"n": n, "t": now, "pad": pad})) for n in numbers
            ]
            store.append_many(batch)
            time.sleep(options.interval)
        store.append(Event(type="done", data="{}"))
        if options.finish:
            store.finish()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("role", choices=["serve", "produce"])
    parser.add_argument("--redis-port", type=int, default=6379)
    parser.add_argument("--key", default=KEY)
    parser.add_argument("--max-events", type=int, default=MAX_EVENTS)
    parser.add_argument("--port", type=int, default=8001, help="serve: the port (0: any)")
    parser.add_argument("--max-buffer", type=int, default=MAX_BUFFER, help="serve")
    parser.add_argument("--sndbuf", type=int, default=0, help="serve: SO_SNDBUF (0: the OS's)")
    parser.add_argument("--count", type=int, default=300, help="produce: events")
    parser.add_argument("--batch", type=int, default=10, help="produce: events per append")
    parser.add_argument("--interval", type=float, default=0.01, help="produce: seconds")
    parser.add_argument("--pad", type=int, default=200, help="produce: bytes of padding")
    parser.add_argument("--finish", action="store_true", help="produce: then end the stream")
    options = parser.parse_args()
    if options.role == "serve":
        asyncio.run(serve(options))
    else:
        produce(options)


if __name__ == "__main__":
    main()
