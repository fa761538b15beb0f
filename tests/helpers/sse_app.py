"""The SSE server "written by others" that the integration tests run the examples against.

A Starlette app whose streams go out through sse-starlette's ``EventSourceResponse``
under uvicorn: CRLF line ends and ``: ping - <timestamp>`` comments, as such servers send
them by default.  ``STREAM`` describes what ``/stream`` sends, in the server's terms (what
was handed to sse-starlette); the tests work out from it which events a client must see.

Run alone (the tests do it in a subprocess)::

    python tests/helpers/sse_app.py [--port N]

It binds 127.0.0.1 (port 0 by default: a free one), prints ``port N`` once it listens,
then serves until SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import sys
from collections.abc import AsyncIterator
from typing import NamedTuple

from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

# Seconds between keepalive comments: short, so that a stream of a few tenths of a
# second carries several of them, between events.
PING_INTERVAL = 0.05
# Pause between the streamed pieces of text, so that pings fall among them.
PAUSE = 0.01


class Sent(NamedTuple):
    """One event as handed to sse-starlette (``None``: the field is not written)."""

    data: str
    event: str | None = None
    id: str | None = None
    retry: int | None = None


SENTENCE = "服务器发送事件让服务器把文字一段一段地推给浏览器，中文也不例外。"
# 2 MiB exactly, on one line: 699,050 three-byte characters and two ASCII letters.
BIG = "块" * 699_050 + "ok"
MULTILINE = "第一行\n第二行\n\n第四行（上一行是空的）"

STREAM: list[Sent] = [
    Sent("开始", event="meta", id="1", retry=1500),
    *(Sent(char, event="delta", id=str(i)) for i, char in enumerate(SENTENCE, start=2)),
    Sent(MULTILINE),  # no id field: the client keeps the last one it saw
    Sent(BIG, event="big", id="big"),
    Sent('{"done": true}', event="done", id="end"),
]


async def _events(after: str, pause: float = PAUSE) -> AsyncIterator[ServerSentEvent]:
    # With Last-Event-ID: resume after that id, as a server that keeps history would.
    skipping = any(sent.id == after for sent in STREAM) if after else False
    for sent in STREAM:
        if skipping:
            skipping = sent.id != after
            continue
        yield ServerSentEvent(sent.data, event=sent.event, id=sent.id, retry=sent.retry)
        await asyncio.sleep(pause)


async def stream(request: Request) -> Response:
    """``/stream``: STREAM, resumed after the ``Last-Event-ID`` request header if any.

    ``?pause=SECONDS`` sets the pause between events (a slow stream, to be cut).
    """
    after = request.headers.get("last-event-id", "")
    pause = float(request.query_params.get("pause", PAUSE))
    return EventSourceResponse(_events(after, pause), ping=PING_INTERVAL)


# What /cut sends before it dies: two whole events, then half of a third.
CUT_EVENTS = [Sent("第一", id="c1"), Sent("第二", id="c2")]
CUT_TAIL = "event: partial\r\ndata: 未完\r\ndata: 成".encode()


class ServerCrash(Exception):
    """Raised by /cut's generator: uvicorn then drops the connection mid-body."""


async def _cut_events() -> AsyncIterator[ServerSentEvent | bytes]:
    for sent in CUT_EVENTS:
        yield ServerSentEvent(sent.data, id=sent.id)
        await asyncio.sleep(PAUSE)
    yield CUT_TAIL
    # An exception after the response started: uvicorn closes the connection without
    # the chunked body's terminating zero-length chunk, as any crashing server would.
    raise ServerCrash("the stream dies mid-event")


async def cut(request: Request) -> Response:
    """``/cut``: CUT_EVENTS, then an unfinished event, then the connection drops."""
    # No pings here: a ping's blank line after the unfinished event would dispatch it.
    return EventSourceResponse(_cut_events(), ping=0)


# What /bad sends: one good event, then one whose data holds a byte that is not UTF-8.
BAD_EVENTS = [Sent("好", id="b1")]
BAD_TAIL = b"data: caf\xe9\r\n\r\n"  # Latin-1, not UTF-8


async def _bad_events() -> AsyncIterator[ServerSentEvent | bytes]:
    for sent in BAD_EVENTS:
        yield ServerSentEvent(sent.data, id=sent.id)
    yield BAD_TAIL


async def bad(request: Request) -> Response:
    """``/bad``: a good event, then invalid UTF-8 (a server that sends Latin-1)."""
    return EventSourceResponse(_bad_events(), ping=0)


async def missing(request: Request) -> Response:
    """``/missing``: a JSON error, as an API gateway in front of a stream would send."""
    return JSONResponse({"error": "no such stream", "code": 404}, status_code=404)


async def html(request: Request) -> Response:
    """``/html``: 200 but not an event stream (a login page, a misrouted request)."""
    return HTMLResponse("<html><body><h1>Please log in</h1></body></html>")


async def empty(request: Request) -> Response:
    """``/empty``: 204 No Content, the spec's way for a server to say "stop reconnecting"."""
    return Response(status_code=204)


app = Starlette(
    routes=[
        Route("/stream", stream),
        Route("/cut", cut),
        Route("/bad", bad),
        Route("/missing", missing),
        Route("/html", html),
        Route("/empty", empty),
    ]
)


def main() -> None:
    """Listen on 127.0.0.1, print the port, serve until SIGTERM."""
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    # Bind and listen before uvicorn starts: the port is known (and connectable: the
    # kernel queues connections) as soon as it is printed.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    sock.listen(64)
    print(f"port {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(
        app, http="h11", log_level="warning", lifespan="off", timeout_graceful_shutdown=1
    )
    uvicorn.Server(config).run(sockets=[sock])
    sys.exit(0)


if __name__ == "__main__":
    main()
