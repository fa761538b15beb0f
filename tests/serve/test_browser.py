"""The real client (issue 33, item 8): a native EventSource in headless Chromium reads
a Starlette app served by EventStreamResponse with a ReplayWindow, under uvicorn on a
free loopback port in this process.

One scenario, three requests, two of them made by the browser on its own:

1. the page opens ``new EventSource("/events")``; the producer (the response's source)
   sends ``one`` (with ``retry:``), ``two`` and ``three``; then ``four`` and ``five``
   reach the window but not this client (another worker wrote them, say), and the
   producer is cut (StreamCut): the response stops without its proper end;
2. the browser reconnects by itself with ``Last-Event-ID`` (the ID of ``three``), no
   sooner than the retry; the window, finished, replays ``four`` and ``five`` and the
   response ends at once (Resume.finished);
3. the browser reconnects again (an end is no stop for an EventSource) with the ID of
   ``five``; the app, whose window is finished and has nothing after that ID, answers
   204, which the standard says stops the EventSource for good: its ``readyState``
   becomes ``CLOSED``, and the page POSTs what it saw.

The browser is the judge of the bytes: the events arrive in order, each exactly once.
Times are measured on the server (when it cut or ended, when the next request came)
and only bounded below: a loaded machine makes a browser late, never early.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from sse_sansio import Event, ReplayWindow, StreamCut
from sse_sansio.asgi import EventStreamResponse
from tests.helpers.browser import browsing, chromium

pytestmark = pytest.mark.slow  # a browser and a live server

GUARD = 60.0  # seconds: a failure guard only
# Above Chromium's default reconnection time (3 s): a browser that ignored ``retry:``
# would come back too early, and the lower bound below would catch it.
RETRY_MS = 3600

PAGE = """<!doctype html>
<title>sse_sansio in a browser</title>
<script>
const seen = [];
const source = new EventSource("/events");
source.onopen = () => seen.push({kind: "open"});
source.onmessage = (e) => seen.push({kind: "message", data: e.data, id: e.lastEventId});
source.onerror = () => {
  seen.push({kind: "error", closed: source.readyState === EventSource.CLOSED});
  if (source.readyState === EventSource.CLOSED) {
    fetch("/report", {method: "POST", body: JSON.stringify(seen)});
  }
};
</script>
"""


@dataclass
class Server:
    """What the server saw, and when (time.monotonic())."""

    window: ReplayWindow = field(default_factory=lambda: ReplayWindow(max_events=100))
    requests: list[tuple[float, str | None]] = field(default_factory=list)  # (when, Last-Event-ID)
    ends: list[float] = field(default_factory=list)  # when each stream was cut or ended
    report: asyncio.Future[list[dict[str, Any]]] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


def app(server: Server) -> Starlette:
    async def page(request: Request) -> HTMLResponse:
        return HTMLResponse(PAGE)

    async def events(request: Request) -> Response:
        last_event_id = request.headers.get("last-event-id")
        server.requests.append((time.monotonic(), last_event_id))
        if last_event_id is None:
            return EventStreamResponse(producer(server), window=server.window)
        resume = server.window.resume(last_event_id)
        if resume.finished and not resume.events:
            # Nothing more will ever come: 204 "fails the connection", for good.
            return Response(status_code=204)
        # The window replays from the request's Last-Event-ID; the producer is gone.
        return EventStreamResponse((), window=server.window)

    async def report(request: Request) -> Response:
        if not server.report.done():
            server.report.set_result(json.loads(await request.body()))
        return Response(status_code=204)

    return Starlette(
        routes=[
            Route("/", page),
            Route("/events", events),
            Route("/report", report, methods=["POST"]),
        ]
    )


async def producer(server: Server) -> AsyncIterator[Event]:
    yield Event(data="one", retry=RETRY_MS)
    yield Event(data="two")
    yield Event(data="three")
    # The producer goes on while the client is away: into the window only.
    server.window.append(Event(data="four"))
    server.window.append(Event(data="five"))
    server.ends.append(time.monotonic())
    raise StreamCut("the upstream went away")


async def run_scenario(tmp_path: Path) -> tuple[Server, list[dict[str, Any]]]:
    server = Server()  # in the loop: its report is a future of that loop
    config = uvicorn.Config(
        app(server), host="127.0.0.1", port=0, log_level="critical", lifespan="off"
    )
    uvicorn_server = uvicorn.Server(config)
    task = asyncio.ensure_future(uvicorn_server.serve())
    while not uvicorn_server.started:
        await asyncio.sleep(0.01)
    port = uvicorn_server.servers[0].sockets[0].getsockname()[1]
    try:
        async with browsing(f"http://127.0.0.1:{port}/", tmp_path) as log:
            try:
                seen = await asyncio.wait_for(asyncio.shield(server.report), GUARD)
            except asyncio.TimeoutError:
                tail = log.read_bytes()[-2000:].decode(errors="replace")
                pytest.fail(f"no report from the page; requests {server.requests}; {tail}")
            # The 204 stopped it for good: give it a retry's time to prove otherwise.
            await asyncio.sleep(2 * RETRY_MS / 1000)
    finally:
        uvicorn_server.should_exit = True
        await asyncio.wait_for(task, GUARD)
    return server, seen


def test_a_browser_reads_resumes_obeys_retry_and_stops_on_204(tmp_path: Path) -> None:
    chromium()  # skip (or fail, in CI) before starting anything
    server, seen = asyncio.run(run_scenario(tmp_path))

    messages = [(entry["data"], entry["id"]) for entry in seen if entry["kind"] == "message"]
    assert [data for data, _ in messages] == ["one", "two", "three", "four", "five"]
    ids = [event_id for _, event_id in messages]
    assert all(ids), ids  # every event has its window ID, each its own
    assert len(set(ids)) == len(ids), ids

    # Three requests, no fourth: the browser resumed twice by itself, then stopped.
    assert [last for _, last in server.requests] == [None, ids[2], ids[4]]
    assert [entry["kind"] for entry in seen] == [
        "open",
        *["message"] * 3,
        "error",
        "open",
        *["message"] * 2,
        "error",
        "error",
    ]
    assert [entry.get("closed") for entry in seen if entry["kind"] == "error"] == [
        False,
        False,
        True,
    ]

    # retry: set the reconnection delay: each reconnection came at least that late
    # after the response before it stopped (the second stopped after it was asked for).
    (cut,) = server.ends
    (_, _), (second, _), (third, _) = server.requests
    assert second - cut >= RETRY_MS / 1000
    assert third - second >= RETRY_MS / 1000
