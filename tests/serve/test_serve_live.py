"""The adapters live on loopback (issue 33, items 2 and 3): EventStreamResponse under
uvicorn (in this process, as an asyncio task, so that coverage sees it) in a Starlette
app, and sse_sansio.aiohttp.serve under aiohttp's test server; the same scenarios for
both.  What the client receives is parsed on both cores.

Wall-clock-free: every wait is for a fact (a flag, EOF), under a generous guard.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
import uvicorn
from aiohttp import web
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.routing import Route

from sse_sansio import Connection, EndOfStream, Event, ReplayWindow, StreamCut
from sse_sansio.aiohttp import serve
from sse_sansio.asgi import EventStreamResponse

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("conn_cls")]  # live servers

GUARD = 30.0  # seconds: a failure guard only
Source = Callable[[], Any]
FRAMEWORKS = ["uvicorn", "aiohttp"]


@asynccontextmanager
async def served(framework: str, source: Source, **options: Any) -> AsyncIterator[str]:
    """A server on a free loopback port whose every request streams ``source()``."""
    if framework == "uvicorn":

        async def endpoint(request: Request) -> EventStreamResponse:
            return EventStreamResponse(source(), **options)

        app = Starlette(routes=[Route("/", endpoint)])
        config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="critical", lifespan="off")
        server = uvicorn.Server(config)
        task = asyncio.ensure_future(server.serve())
        while not server.started:
            await asyncio.sleep(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]
        try:
            yield f"http://127.0.0.1:{port}/"
        finally:
            server.should_exit = True
            await asyncio.wait_for(task, GUARD)
    else:

        async def handler(request: web.Request) -> web.StreamResponse:
            return await serve(request, source(), **options)

        aioapp = web.Application()
        aioapp.router.add_get("/", handler)
        # aiohttp's own default (web.run_app's): no handler cancellation on disconnect;
        # "aiohttp-cancelling" is the test server's choice, which cancels the handler.
        runner = web.AppRunner(aioapp, handler_cancellation=framework == "aiohttp-cancelling")
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        try:
            yield f"http://127.0.0.1:{runner.addresses[0][1]}/"
        finally:
            await runner.cleanup()


def parse(body: bytes) -> list[Any]:
    """The items of a whole body, the end of stream left out."""
    connection = Connection()
    connection.receive_data(body)
    connection.receive_data(b"")
    items = []
    while not isinstance(item := connection.next_event(), EndOfStream):
        items.append(item)
    return items


def run(main: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(main(), GUARD))


async def until(check: Callable[[], bool]) -> None:
    while not check():
        await asyncio.sleep(0.01)


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_stream_with_keepalives_ends_cleanly(framework: str) -> None:
    async def source() -> AsyncIterator[Event]:
        yield Event(data="a")
        await asyncio.sleep(0.2)  # silent: keepalives every 0.02 s
        yield Event(data="b")

    async def main() -> None:
        async with served(framework, source, keepalive=0.02) as url, httpx.AsyncClient() as http:
            response = await http.get(url)
        assert response.headers["content-type"] == "text/event-stream; charset=utf-8"
        assert response.headers["cache-control"] == "no-cache"
        assert response.headers["x-accel-buffering"] == "no"
        items = parse(response.content)
        assert [i for i in items if isinstance(i, Event)] == [Event(data="a"), Event(data="b")]
        assert len(items) > 2  # keepalive comments between them

    run(main)


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_stream_cut_reaches_the_client_as_an_incomplete_body(framework: str) -> None:
    async def source() -> AsyncIterator[Event]:
        yield Event(data="a")
        raise StreamCut("upstream reset")

    async def main() -> None:
        received: list[bytes] = []

        async def read(url: str) -> None:
            async with httpx.AsyncClient() as http, http.stream("GET", url) as response:
                async for chunk in response.aiter_raw():
                    received.append(chunk)

        async with served(framework, source) as url:
            with pytest.raises(httpx.RemoteProtocolError, match="incomplete chunked read"):
                await read(url)
        assert parse(b"".join(received))[0] == Event(data="a")

    run(main)


class Endless:
    """A source of 16 KiB events without end, recording its cancellation."""

    def __init__(self) -> None:
        self.cancelled = False
        self.sent = 0

    async def __aiter__(self) -> AsyncIterator[Event]:
        try:
            while True:
                yield Event(data="x" * 16384)
                self.sent += 1
                await asyncio.sleep(0)
        except asyncio.CancelledError:
            self.cancelled = True
            raise


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_client_that_never_reads_is_closed_and_its_source_cancelled(framework: str) -> None:
    source = Endless()

    async def main() -> None:
        async with served(framework, lambda: source, max_buffer=65536) as url:
            port = int(url.rsplit(":", 1)[1].strip("/"))
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            await writer.drain()
            # The client reads nothing: the stream turns slow, the source is cancelled
            # while the connection is still open on our side.
            await until(lambda: source.cancelled)
            # Then the server closes: reading now finds the end, without a last chunk.
            body = await reader.read()
            writer.close()
        assert not body.endswith(b"0\r\n\r\n")
        # Bounded: the source stopped, though nobody disconnected.
        assert source.sent < 100000

    run(main)


class Counted:
    """``count`` events (the first at once, the others once ``go`` is set)."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.go = asyncio.Event()
        self.cancelled = False
        self.finished = False

    async def __aiter__(self) -> AsyncIterator[Event]:
        try:
            for n in range(self.count):
                if n:
                    await self.go.wait()
                yield Event(data=str(n))
            self.finished = True
        except asyncio.CancelledError:
            self.cancelled = True
            raise


async def first_id_then_leave(url: str) -> str:
    async with httpx.AsyncClient() as http, http.stream("GET", url) as response:
        async for line in response.aiter_lines():
            if line.startswith("id: "):
                return line[4:]
    raise AssertionError("no id")  # pragma: no cover - the stream always sends one


@pytest.mark.parametrize("framework", [*FRAMEWORKS, "aiohttp-cancelling"])
def test_a_client_that_disconnects_has_its_source_cancelled(framework: str) -> None:
    source = Counted(5)
    window = ReplayWindow()

    async def main() -> None:
        async with served(framework, lambda: source, keepalive=0.05, window=window) as url:
            await first_id_then_leave(url)
            await until(lambda: source.cancelled)
        assert not source.finished

    run(main)


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_detach_runs_into_the_window_and_a_resume_after_the_end_ends_at_once(
    framework: str,
) -> None:
    first = Counted(5)
    sources = iter([first, Counted(99)])
    window = ReplayWindow()
    options = {"keepalive": 0.05, "window": window, "on_disconnect": "detach"}

    async def main() -> None:
        async with served(framework, lambda: next(sources), **options) as url:
            seen = await first_id_then_leave(url)
            await asyncio.sleep(0)
            first.go.set()
            await until(lambda: first.finished)
            # The producer finished into the window: a resume replays the rest and
            # the response ends at once (the second source is never read).
            async with httpx.AsyncClient() as http:
                response = await http.get(url, headers={"Last-Event-ID": seen})
        assert [item.data for item in parse(response.content)] == ["1", "2", "3", "4"]
        assert not first.cancelled

    run(main)


def test_aiohttp_notices_a_disconnect_without_keepalives_by_looking_at_the_transport() -> None:
    # aiohttp tells a handler nothing, and with no keepalive no write fails: the
    # adapter's look at the transport (once a second at most) finds it closed.
    source = Counted(5)

    async def main() -> None:
        async with served("aiohttp", lambda: source, keepalive=None, window=ReplayWindow()) as url:
            await first_id_then_leave(url)
            await until(lambda: source.cancelled)

    run(main)
