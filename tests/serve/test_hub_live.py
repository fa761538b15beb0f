"""A hub served live on loopback (issue 34, items 1 and 7; issue 40, item 3): HubResponse
under uvicorn and serve_hub under aiohttp, as docs/fanout.rst and docs/channels.rst
use them, with one client that never reads and one that does.  The reader gets every
event, in order, parsed on both cores, while the stalled one costs the hub at most its
``max_buffer``: dropped under "disconnect", kept with its oldest frames gone under
"drop-oldest".

Wall-clock-free: every wait is for a fact (a subscriber count, the end), under a guard.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
import uvicorn
from aiohttp import web

from sse_sansio import Event, Hub, ReplayWindow
from sse_sansio.aiohttp import serve_hub
from sse_sansio.asgi import HubResponse

pytestmark = pytest.mark.slow  # live servers

GUARD = 60.0  # seconds: a failure guard only
EVENTS = 6000  # of about 1 KiB each: far more than the kernel's and uvicorn's buffers
MAX_BUFFER = 64 * 1024


class Room:
    """A hub on the adapters' clock."""

    def __init__(self, policy: Any) -> None:
        self.hub = Hub(
            max_buffer=MAX_BUFFER,
            policy=policy,
            window=ReplayWindow(max_events=1000),
            now=time.monotonic(),
        )

    def publish(self, item: Event) -> str | None:
        return self.hub.publish(item, time.monotonic())

    def end(self) -> None:
        self.hub.close(time.monotonic())


@asynccontextmanager
async def served(framework: str, room: Any) -> AsyncIterator[tuple[str, int]]:
    """The page's recipe for ``framework`` on a free loopback port: (host, port)."""
    if framework == "uvicorn":
        config = uvicorn.Config(
            HubResponse(room.hub),
            host="127.0.0.1",
            port=0,
            log_level="critical",
            lifespan="off",
            timeout_graceful_shutdown=1,
        )
        server = uvicorn.Server(config)
        task = asyncio.ensure_future(server.serve())
        while not server.started:
            await asyncio.sleep(0.01)
        try:
            yield server.servers[0].sockets[0].getsockname()[:2]
        finally:
            server.should_exit = True
            await asyncio.wait_for(task, GUARD)
    else:
        app = web.Application()

        async def handler(request: web.Request) -> web.StreamResponse:
            return await serve_hub(request, room.hub)

        app.router.add_get("/events", handler)
        runner = web.AppRunner(app, shutdown_timeout=1)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        try:
            yield runner.addresses[0][:2]
        finally:
            await runner.cleanup()


async def stalled_client(host: str, port: int) -> socket.socket:
    """A client that asks for the stream and never reads a byte (a small window)."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.setblocking(False)
    loop = asyncio.get_running_loop()
    await loop.sock_connect(sock, (host, port))
    await loop.sock_sendall(sock, b"GET /events HTTP/1.1\r\nHost: test\r\n\r\n")
    return sock


async def reader(conn_cls: Any, url: str) -> list[Event]:
    """A client that reads the whole stream; the events it parsed."""
    conn, events = conn_cls(), []
    async with httpx.AsyncClient(timeout=GUARD) as http, http.stream("GET", url) as response:
        async for chunk in response.aiter_raw():
            conn.receive_data(chunk)
            while isinstance(item := conn.next_event(), Event):
                events.append(item)
    return events


async def until(check: Callable[[], bool]) -> None:
    async def wait() -> None:
        while not check():
            await asyncio.sleep(0.01)

    await asyncio.wait_for(wait(), GUARD)


def run(main: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(main(), GUARD * 2))


@pytest.mark.parametrize(
    ("framework", "policy"), [("uvicorn", "drop-oldest"), ("aiohttp", "disconnect")]
)
def test_a_stalled_client_costs_its_max_buffer_and_never_delays_the_reader(
    conn_cls: Any, framework: str, policy: str
) -> None:
    async def main() -> None:
        room = Room(policy)
        async with served(framework, room) as (host, port):
            stalled = await stalled_client(host, port)
            await until(lambda: len(room.hub.subscribers) == 1)
            stalled_stream = room.hub.subscribers[0]
            reading = asyncio.ensure_future(reader(conn_cls, f"http://{host}:{port}/events"))
            await until(lambda: len(room.hub.subscribers) == 2)
            ids = []
            for n in range(EVENTS):
                ids.append(room.publish(Event(data=f"{n:06d} " + "x" * 1000)))
                assert stalled_stream.buffered <= MAX_BUFFER + 2048  # max_buffer + a frame
                if n % 20 == 0:
                    await asyncio.sleep(0)  # the writers run
            if policy == "disconnect":
                await until(lambda: stalled_stream not in room.hub.subscribers)
                assert stalled_stream.state == "slow"
            else:  # its writer waits on the transport: the hub's queue is full, and kept
                assert stalled_stream in room.hub.subscribers
                assert stalled_stream.buffered > MAX_BUFFER - 2048
            room.end()
            events = await reading
            assert [e.id for e in events] == ids
            assert [int(e.data[:6]) for e in events] == list(range(EVENTS))
            stalled.close()

    run(main)


@pytest.mark.parametrize("framework", ["uvicorn", "aiohttp"])
def test_a_client_that_leaves_is_unsubscribed(framework: str) -> None:
    # uvicorn's send() returns silently once the client is gone: without the adapter's
    # http.disconnect watch its writer would drain the stream for nobody, for ever.
    async def main() -> None:
        room = Room("disconnect")
        async with served(framework, room) as (host, port):
            sock = await stalled_client(host, port)
            await until(lambda: len(room.hub.subscribers) == 1)
            sock.close()

            async def publish_until_gone() -> None:
                while room.hub.subscribers:  # aiohttp notices at the next write
                    room.publish(Event(data="anyone there?"))
                    await asyncio.sleep(0.01)

            await asyncio.wait_for(publish_until_gone(), GUARD)

    run(main)
