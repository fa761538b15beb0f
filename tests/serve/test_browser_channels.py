"""A real browser reloads, resumes by query parameter, and is stopped by a 204 (issue 40,
items 3-5): a native EventSource in headless Chromium reads a channel of a Hub served by
HubResponse under uvicorn in this process.

1. The page opens ``new EventSource("/events")`` and keeps each event's ID in
   ``localStorage``; after two events of its channel (an event of another channel is
   published between them and must not arrive) it closes and reloads itself;
2. the reloaded page cannot send ``Last-Event-ID`` (a new EventSource never does), so it
   opens ``/events?last_event_id=<the ID it kept>``; the events published while it was
   away arrive exactly once, then the hub closes and the response ends;
3. the browser reconnects by itself to the same URL with the header, which wins over the
   query; the hub is finished and nothing is left to replay, so HubResponse answers 204,
   which stops the EventSource for good, and the page POSTs what it saw.  No fourth
   request comes, even after twice the retry.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from sse_sansio import Event, Hub, ReplayWindow
from sse_sansio.asgi import HubResponse
from tests.helpers.browser import browsing, chromium

pytestmark = pytest.mark.slow  # a browser and a live server

GUARD = 60.0  # seconds: a failure guard only
RETRY_MS = 500

PAGE = """<!doctype html>
<title>channels in a browser</title>
<script>
const seen = JSON.parse(sessionStorage.getItem("seen") || "[]");
const reloaded = sessionStorage.getItem("reloaded") === "yes";
const cursor = localStorage.getItem("cursor");
const url = "/events" + (cursor ? "?last_event_id=" + encodeURIComponent(cursor) : "");
const source = new EventSource(url);
source.onmessage = (e) => {
  seen.push(e.data);
  localStorage.setItem("cursor", e.lastEventId);
  sessionStorage.setItem("seen", JSON.stringify(seen));
  if (!reloaded && seen.length === 2) {
    sessionStorage.setItem("reloaded", "yes");
    source.close();
    location.reload();
  }
};
source.onerror = () => {
  if (source.readyState === EventSource.CLOSED) {
    fetch("/report", {method: "POST", body: JSON.stringify(seen)});
  }
};
</script>
"""


class Server:
    """The hub, and what the server saw: (when, query, Last-Event-ID) per request."""

    def __init__(self) -> None:
        self.window = ReplayWindow(max_events=100)
        self.hub = Hub(max_buffer=64 * 1024, window=self.window, now=time.monotonic())
        self.requests: list[tuple[float, str, str | None]] = []
        self.report: asyncio.Future[list[str]] = asyncio.get_running_loop().create_future()

    def publish(self, data: str, channel: str) -> str | None:
        return self.hub.publish(Event(data=data, retry=RETRY_MS), time.monotonic(), channel=channel)


def app(server: Server) -> Starlette:
    async def page(request: Request) -> HTMLResponse:
        return HTMLResponse(PAGE)

    async def events(request: Request) -> HubResponse:
        header = request.headers.get("last-event-id")
        server.requests.append((time.monotonic(), request.url.query, header))
        return HubResponse(server.hub, channels=["room/*"])

    async def report(request: Request) -> Response:
        if not server.report.done():
            server.report.set_result(json.loads(await request.body()))
        return Response(status_code=204)

    routes = [
        Route("/", page),
        Route("/events", events),
        Route("/report", report, methods=["POST"]),
    ]
    return Starlette(routes=routes)


async def until(check: Any) -> None:
    async def wait() -> None:
        while not check():
            await asyncio.sleep(0.01)

    await asyncio.wait_for(wait(), GUARD)


async def run_scenario(tmp_path: Path) -> tuple[Server, list[str], list[str | None]]:
    server = Server()
    config = uvicorn.Config(
        app(server), host="127.0.0.1", port=0, log_level="critical", lifespan="off"
    )
    uvicorn_server = uvicorn.Server(config)
    task = asyncio.ensure_future(uvicorn_server.serve())
    while not uvicorn_server.started:
        await asyncio.sleep(0.01)
    port = uvicorn_server.servers[0].sockets[0].getsockname()[1]
    ids: list[str | None] = []
    try:
        async with browsing(f"http://127.0.0.1:{port}/", tmp_path):
            await until(lambda: len(server.hub.subscribers) == 1)
            ids.append(server.publish("one", "room/1"))
            server.publish("not mine", "lobby")
            ids.append(server.publish("two", "room/2"))
            await until(lambda: len(server.requests) == 2)  # the reloaded page asked
            ids.append(server.publish("three", "room/1"))
            ids.append(server.publish("four", "room/1"))
            await until(lambda: len(server.hub.subscribers) == 1)
            server.hub.close(time.monotonic())
            seen = await asyncio.wait_for(asyncio.shield(server.report), GUARD)
            await asyncio.sleep(2 * RETRY_MS / 1000)  # a stopped EventSource stays stopped
    finally:
        uvicorn_server.should_exit = True
        await asyncio.wait_for(task, GUARD)
    return server, seen, ids


def test_a_reloaded_page_resumes_by_query_and_a_finished_hub_stops_it(tmp_path: Path) -> None:
    chromium()  # skip (or fail, in CI) before starting anything
    server, seen, ids = asyncio.run(run_scenario(tmp_path))
    assert seen == ["one", "two", "three", "four"]
    (_, first_query, first_header), (_, second_query, second_header), third = server.requests
    assert (first_query, first_header) == ("", None)
    assert second_header is None  # a new EventSource cannot send it
    assert second_query == f"last_event_id={ids[1]}"
    # The browser's own reconnect: the same URL, and the header, which wins (the query
    # would have replayed three and four again); nothing after four: 204.
    assert third[1:] == (second_query, ids[3])
