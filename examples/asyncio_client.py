"""Read a Server-Sent Events stream with asyncio streams, h11 and an idle timeout.

What it shows: the same two sans-I/O layers as ``h11_client.py`` (h11 for HTTP/1.1,
sse_sansio for the event stream), driven by ``asyncio.open_connection`` instead of a
blocking socket, plus the timeout every long-lived stream needs.  A stream that says
nothing for ``--idle-timeout`` seconds is given up on.  The timer restarts with every
complete item, Event or Comment, so the keepalive comments servers send (``: ping``)
are what keeps a quiet stream open, while a server that trickles bytes without ever
completing an item still times out.

Run it against the example server (or any SSE endpoint on localhost)::

    python examples/server.py --port 8000 &
    python examples/asyncio_client.py --port 8000 --path / --idle-timeout 5
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator

import h11

import sse_sansio
from sse_sansio import (
    NEED_DATA,
    Comment,
    Connection,
    EndOfStream,
    Event,
    ReceivedItem,
    check_response,
)


class NotAnEventStream(Exception):
    """The server answered, but not with ``200`` and ``text/event-stream``."""


class StreamCut(ConnectionError):
    """The HTTP body ended before its proper end; ``end`` is what the parser saw then."""

    def __init__(self, end: EndOfStream, reason: str) -> None:
        super().__init__(f"the stream was cut: {reason} ({end!r})")
        self.end = end


class IdleTimeout(TimeoutError):
    """No complete item (not even a keepalive comment) arrived in time."""


async def events(
    host: str, port: int, path: str = "/", *, last_event_id: str = "", idle_timeout: float = 30.0
) -> AsyncIterator[ReceivedItem]:
    """Yield every Event and Comment of the stream at ``path``, then its EndOfStream.

    Raises:
        NotAnEventStream: the response is not a ``200 text/event-stream``.
        StreamCut: the connection closed or was reset before the end of the body.
        IdleTimeout: ``idle_timeout`` seconds passed without a complete item.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + idle_timeout
    reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), idle_timeout)
    http = h11.Connection(our_role=h11.CLIENT)

    async def next_http_event() -> h11.Event:
        while (event := http.next_event()) is h11.NEED_DATA:
            try:  # wait no later than the deadline (a timeout <= 0 fails at once)
                data = await asyncio.wait_for(reader.read(65536), deadline - loop.time())
            except asyncio.TimeoutError:
                raise IdleTimeout(f"no event or comment for {idle_timeout} s") from None
            http.receive_data(data)
        assert isinstance(event, h11.Event)  # not PAUSED: we stop at the end of the response
        return event

    try:
        # ---- send the request ------------------------------------------------------
        headers = [("Host", f"{host}:{port}"), ("Accept", "text/event-stream")]
        if last_event_id:
            headers.append(("Last-Event-ID", last_event_id))
        request = h11.Request(method="GET", target=path, headers=headers)
        writer.write((http.send(request) or b"") + (http.send(h11.EndOfMessage()) or b""))
        await writer.drain()

        # ---- check the response head ----------------------------------------------
        response = await next_http_event()
        while isinstance(response, h11.InformationalResponse):
            response = await next_http_event()
        assert isinstance(response, h11.Response)
        check = check_response(response.status_code, response.headers)
        if not check.streams:
            body = b""  # at most 4 KiB: the body of a wrong response may never end
            while len(body) < 4096 and isinstance(event := await next_http_event(), h11.Data):
                body += event.data
            status = f"{response.status_code} {response.reason.decode('latin-1')}"
            raise NotAnEventStream(f"{status}: {check.error(body)}")

        # ---- stream: every h11.Data payload goes to the parser ---------------------
        conn = Connection(last_event_id=last_event_id)
        cut = ""
        while True:
            item = conn.next_event()
            if item is NEED_DATA:
                try:
                    event = await next_http_event()
                except (h11.RemoteProtocolError, ConnectionResetError) as exc:
                    cut, event = str(exc) or type(exc).__name__, h11.EndOfMessage()
                if isinstance(event, h11.Data):
                    conn.receive_data(event.data)
                elif isinstance(event, h11.EndOfMessage):
                    conn.receive_data(b"")
                continue
            if isinstance(item, EndOfStream) and cut:
                raise StreamCut(item, cut)
            deadline = loop.time() + idle_timeout  # a complete item: the stream is alive
            yield item
            if isinstance(item, EndOfStream):
                return
    finally:
        writer.close()
        with contextlib.suppress(OSError):  # already reset by the peer: nothing to close
            await writer.wait_closed()


def describe(item: ReceivedItem) -> str:
    """One line for an item; long data is shortened."""
    if isinstance(item, Event):
        more = f"... ({len(item.data)} chars)" if len(item.data) > 60 else ""
        return f"event {item.type!r} id={item.id!r}: {item.data[:60]!r}{more}"
    if isinstance(item, Comment):
        return f"comment {item.text!r}"
    return f"end of stream (truncated={item.truncated})"


def main(argv: list[str] | None = None) -> int:
    """Print every item of the stream; exit 1 if it was cut short, idle or is not a stream."""
    parser = argparse.ArgumentParser(description="Read an SSE stream with asyncio and h11.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--path", default="/")
    parser.add_argument("--last-event-id", default="", help="resume after this event ID")
    parser.add_argument("--idle-timeout", type=float, default=30.0, metavar="SECONDS")
    args = parser.parse_args(argv)

    async def run() -> int:
        async for item in events(**vars(args)):
            print(describe(item), flush=True)
            if isinstance(item, EndOfStream) and item.truncated:
                return 1
        return 0

    try:
        return asyncio.run(run())
    except (NotAnEventStream, OSError, h11.ProtocolError, sse_sansio.ProtocolError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
