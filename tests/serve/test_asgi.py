"""EventStreamResponse driven as an ASGI app by hand (issue 33, item 2): a ``receive``
and a ``send`` of the test's own, no server, so each of the pump's paths is forced
deterministically (the live tests over uvicorn are in test_serve_live.py).

Also the plain-ASGI build: the module loaded again with Starlette hidden must give a
class that is no Starlette Response and still serves.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest
from starlette.responses import Response

import sse_sansio
from sse_sansio import Comment, Event, ReplayWindow, StreamCut
from sse_sansio.asgi import EventStreamResponse

Message = dict[str, Any]
GUARD = 30.0  # seconds: only a failure guard, never a measure


class Client:
    """The server side of one ASGI request, as the app sees it."""

    def __init__(self, headers: list[tuple[bytes, bytes]] | None = None) -> None:
        self.scope = {"type": "http", "headers": headers or []}
        self.messages: list[Message] = []
        self.gone = asyncio.Event()
        self.stuck = False  # body writes never return (a client that never reads)
        self.failure: BaseException | None = None  # what body writes raise
        self.wrote = asyncio.Event()
        self.requested = False

    async def receive(self) -> Message:
        if not self.requested:
            self.requested = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await self.gone.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: Message) -> None:
        self.messages.append(message)
        if message["type"] == "http.response.body":
            self.wrote.set()
            if self.failure is not None:
                raise self.failure
            if self.stuck:
                await asyncio.Event().wait()

    def body(self) -> bytes:
        return b"".join(m["body"] for m in self.messages if m["type"] == "http.response.body")

    def completed(self) -> bool:
        last = self.messages[-1]
        return last["type"] == "http.response.body" and last["more_body"] is False

    async def run(self, app: Any) -> None:
        await asyncio.wait_for(app(self.scope, self.receive, self.send), GUARD)


def serve(app: Any, client: Client | None = None) -> Client:
    client = client or Client()
    asyncio.run(client.run(app))
    return client


async def events(*texts: str) -> AsyncIterator[Event]:
    for text in texts:
        yield Event(data=text)


def test_a_source_that_ends_ends_the_response_with_the_sse_headers() -> None:
    client = serve(EventStreamResponse(events("a", "b"), headers={"X-Trace": "1"}))
    start = dict(client.messages[0])
    start["headers"] = list(start["headers"])  # ASGI takes any iterable of pairs
    assert start == {
        "type": "http.response.start",
        "status": 200,
        "headers": [
            (b"content-type", b"text/event-stream; charset=utf-8"),
            (b"cache-control", b"no-cache"),
            (b"x-accel-buffering", b"no"),
            (b"x-trace", b"1"),
        ],
    }
    assert client.body() == b"data: a\n\ndata: b\n\n"
    assert client.completed()


def test_a_header_of_the_caller_replaces_the_default_and_the_status_is_kept() -> None:
    app = EventStreamResponse(events(), headers={"Cache-Control": "no-store"}, status_code=201)
    start = serve(app).messages[0]
    assert start["status"] == 201
    assert (b"cache-control", b"no-store") in start["headers"]
    assert (b"cache-control", b"no-cache") not in start["headers"]


def test_a_sync_source_of_items_and_bytes_is_served() -> None:
    app = EventStreamResponse([Event(data="a"), Comment(text="c"), b"data: raw\n\n"])
    assert serve(app).body() == b"data: a\n\n: c\ndata: raw\n\n"


def test_a_stream_cut_ends_without_the_final_message_and_logs_one_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def source() -> AsyncIterator[Event]:
        yield Event(data="a")
        raise StreamCut("upstream reset")

    client = serve(EventStreamResponse(source()))
    assert client.body() == b"data: a\n\n"
    assert not client.completed()
    [record] = [r for r in caplog.records if r.name == "sse_sansio.serve"]
    assert "upstream reset" in record.getMessage()
    assert record.exc_info is None


def test_any_other_exception_cuts_too_and_is_logged_with_its_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def source() -> Iterator[Event]:
        yield Event(data="a")
        raise KeyError("bug")

    client = serve(EventStreamResponse(source()))
    assert client.body() == b"data: a\n\n"
    assert not client.completed()
    [record] = [r for r in caplog.records if r.name == "sse_sansio.serve"]
    assert record.levelno == logging.ERROR
    assert record.exc_info is not None


def test_keepalives_do_not_cancel_the_sources_pending_read() -> None:
    async def main() -> None:
        go = asyncio.Event()

        async def source() -> AsyncIterator[Event]:
            await go.wait()  # silent for several keepalive intervals
            yield Event(data="late")

        client = Client()
        task = asyncio.ensure_future(client.run(EventStreamResponse(source(), keepalive=0.01)))
        while client.body().count(b":\n") < 3:
            await asyncio.sleep(0.01)
        go.set()
        await task
        assert client.body().endswith(b":\ndata: late\n\n")
        assert client.completed()

    asyncio.run(main())


class Watched:
    """An endless source that records whether it was cancelled or ran to its end."""

    def __init__(self, count: int | None = None) -> None:
        self.count = count
        self.cancelled = False
        self.finished = False
        self.go = asyncio.Event()

    async def __aiter__(self) -> AsyncIterator[Event]:
        n = 0
        try:
            while self.count is None or n < self.count:
                if n >= 1:
                    await self.go.wait()
                yield Event(data=f"{n}")
                n += 1
                await asyncio.sleep(0)
            self.finished = True
        except asyncio.CancelledError:
            self.cancelled = True
            raise


def test_a_disconnect_cancels_the_source_by_default() -> None:
    async def main() -> None:
        client, source = Client(), Watched()
        task = asyncio.ensure_future(client.run(EventStreamResponse(source)))
        await client.wrote.wait()
        client.gone.set()
        await task
        assert source.cancelled
        assert not client.completed()

    asyncio.run(main())


def test_detach_lets_the_source_run_to_its_end_into_the_window() -> None:
    async def main() -> None:
        window = ReplayWindow()
        client, source = Client(), Watched(count=5)
        app = EventStreamResponse(source, window=window, on_disconnect="detach")
        task = asyncio.ensure_future(client.run(app))
        await client.wrote.wait()
        client.gone.set()
        await task
        source.go.set()
        while not source.finished:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0)
        seen = client.body().split(b"id: ")[1].split(b"\n")[0].decode()
        resumed = window.resume(seen)
        assert [e.data for e in resumed.events] == ["1", "2", "3", "4"]
        assert resumed.finished
        assert not resumed.cut

    asyncio.run(main())


def test_detach_without_a_window_runs_the_source_to_its_end_for_nothing() -> None:
    async def main() -> None:
        client, source = Client(), Watched(count=3)
        task = asyncio.ensure_future(
            client.run(EventStreamResponse(source, on_disconnect="detach"))
        )
        await client.wrote.wait()
        client.gone.set()
        await task
        source.go.set()
        while not source.finished:
            await asyncio.sleep(0.01)
        assert client.body() == b"data: 0\n\n"

    asyncio.run(main())


def test_a_client_that_never_reads_is_closed_as_slow_and_the_source_cancelled() -> None:
    async def main() -> None:
        client, source = Client(), Watched()
        client.stuck = True
        source.go.set()
        task = asyncio.ensure_future(client.run(EventStreamResponse(source, max_buffer=1000)))
        await task
        assert source.cancelled
        assert not client.completed()
        body = client.body()  # what was written before the write that never returned
        assert body.startswith(b"data: 0\n\n")
        assert len(body) < 1000

    asyncio.run(main())


def test_a_write_that_fails_with_an_os_error_is_a_disconnect() -> None:
    client, source = Client(), Watched()
    client.failure = ConnectionResetError("gone")
    source.go.set()
    serve(EventStreamResponse(source), client)
    assert source.cancelled
    assert not client.completed()


def test_a_write_that_fails_otherwise_propagates_and_cancels_the_source() -> None:
    client, source = Client(), Watched()
    client.failure = RuntimeError("server bug")
    with pytest.raises(RuntimeError, match="server bug"):
        serve(EventStreamResponse(source), client)
    assert source.cancelled


def test_a_last_event_id_replays_and_the_source_goes_on() -> None:
    window = ReplayWindow()
    first = window.append(Event(data="a"))
    second = window.append(Event(data="b"))
    client = Client([(b"accept", b"text/event-stream"), (b"Last-Event-ID", first.id.encode())])
    serve(EventStreamResponse(events("c"), window=window), client)
    third = window.resume(second.id).events[0]
    assert client.body() == sse_sansio.serialize(second) + sse_sansio.serialize(third)
    assert window.resume(first.id).finished  # the source's end closed the window


def test_a_resume_after_the_end_replays_the_rest_and_ends_at_once() -> None:
    window = ReplayWindow()
    first = window.append(Event(data="a"))
    second = window.append(Event(data="b"))
    window.close(cut=True)
    source = Watched()
    client = Client([(b"last-event-id", first.id.encode())])
    serve(EventStreamResponse(source, window=window), client)
    assert client.body() == sse_sansio.serialize(second)
    assert not client.completed()  # the producer was cut: so is the replay
    assert not source.cancelled
    assert not source.finished


def test_the_last_event_id_is_ignored_without_a_window() -> None:
    client = Client([(b"last-event-id", b"x-1")])
    assert serve(EventStreamResponse(events("a")), client).body() == b"data: a\n\n"


def test_the_background_task_runs_after_the_stream() -> None:
    ran = []

    async def background() -> None:
        ran.append(True)

    app = EventStreamResponse(events("a"))
    app.background = background  # as FastAPI sets it
    serve(app)
    assert ran == [True]
    serve(EventStreamResponse(events("a"), background=background))  # as Starlette takes it
    assert ran == [True, True]


def test_options_are_checked_when_the_response_is_made() -> None:
    with pytest.raises(ValueError, match="on_disconnect must be 'cancel' or 'detach'"):
        EventStreamResponse(events(), on_disconnect="ignore")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="keepalive"):
        EventStreamResponse(events(), keepalive=-1)


def test_it_is_a_starlette_response_where_starlette_is_installed() -> None:
    assert isinstance(EventStreamResponse(events()), Response)


def test_headers_set_through_starlette_are_sent_and_stay_with_their_response() -> None:
    edited, plain = EventStreamResponse(events("a")), EventStreamResponse(events("a"))
    edited.headers["X-Set-Later"] = "1"  # Starlette's MutableHeaders edits raw_headers
    assert (b"x-set-later", b"1") in edited.raw_headers
    sent = dict(serve(edited).messages[0]["headers"])
    assert sent[b"x-set-later"] == b"1"
    assert b"x-set-later" not in dict(serve(plain).messages[0]["headers"])
    replaced = EventStreamResponse(events("a"))
    replaced.raw_headers = [(b"content-type", b"text/event-stream")]
    assert list(serve(replaced).messages[0]["headers"]) == [(b"content-type", b"text/event-stream")]


def without_starlette(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """A second copy of the adapter's module, loaded while Starlette cannot import."""
    monkeypatch.setitem(sys.modules, "starlette", None)
    monkeypatch.setitem(sys.modules, "starlette.responses", None)
    path = Path(sse_sansio.__file__).parent / "_serve" / "_asgi.py"
    spec = importlib.util.spec_from_file_location("sse_sansio._serve._asgi_plain", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_without_starlette_it_is_a_plain_asgi_app(monkeypatch: pytest.MonkeyPatch) -> None:
    module = without_starlette(monkeypatch)
    for plain in (module.EventStreamResponse, module.HubResponse):
        assert plain.__mro__[-1] is object
        assert [c for c in plain.__mro__ if c.__module__.startswith("starlette")] == []
    assert serve(module.EventStreamResponse(events("a"))).body() == b"data: a\n\n"


@pytest.mark.slow  # a subprocess
def test_importing_sse_sansio_imports_no_framework() -> None:
    frameworks = "('starlette', 'aiohttp')"
    code = f"import sys, sse_sansio; print([m for m in {frameworks} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_starlette_middleware_may_set_a_header_on_the_response() -> None:
    # BaseHTTPMiddleware hands dispatch() a response whose raw_headers are the start
    # message's headers: they must be a list it can edit.
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
    from starlette.requests import Request
    from starlette.responses import Response as StarletteResponse
    from starlette.routing import Route

    class Tag(BaseHTTPMiddleware):
        async def dispatch(
            self, request: Request, call_next: RequestResponseEndpoint
        ) -> StarletteResponse:
            response = await call_next(request)
            response.headers["x-tagged"] = "1"
            return response

    async def endpoint(request: Request) -> EventStreamResponse:
        return EventStreamResponse(events("a"))

    app = Starlette(routes=[Route("/", endpoint)], middleware=[Middleware(Tag)])

    async def main() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return await asyncio.wait_for(client.get("/"), GUARD)

    response = asyncio.run(main())
    assert response.status_code == 200
    assert response.headers["x-tagged"] == "1"
    assert response.headers["content-type"] == "text/event-stream; charset=utf-8"
    assert response.text == "data: a\n\n"
