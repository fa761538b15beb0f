"""Read a Server-Sent Events stream with h11 doing the HTTP/1.1 framing.

What it shows: two sans-I/O state machines stacked on one socket.  h11 turns the
socket's bytes into HTTP events (chunked coding, close-delimited bodies, keep-alive
rules); the payload of every ``h11.Data`` goes to ``Connection.receive_data()``, and
``h11.EndOfMessage`` becomes ``receive_data(b"")``.  Before any of that, the response is
checked as the SSE spec asks: a status other than 200 (a 204 included) or a
Content-Type other than ``text/event-stream`` is reported with the body the server sent,
rather than parsed into confusing events.

Resuming: ``--last-event-id ID`` sends the ``Last-Event-ID`` header and starts the
parser with ``Connection(last_event_id=ID)``, so events before the stream's first ``id:``
line carry the ID they resumed from, as in a browser.

A cut shows twice: h11 raises when the connection closes before the end of the HTTP
body (no last chunk; reported as StreamCut), and ``EndOfStream.truncated`` tells
whether an event was cut in the middle.

Run it against the example server (or any SSE endpoint on localhost)::

    python examples/server.py --port 8000 &
    python examples/h11_client.py --port 8000 --path / [--last-event-id 3]
"""

from __future__ import annotations

import argparse
import socket
import sys
from collections.abc import Iterator

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


def _next_http_event(http: h11.Connection, sock: socket.socket) -> h11.Event:
    """The next h11 event, reading from the socket as needed."""
    while (event := http.next_event()) is h11.NEED_DATA:
        http.receive_data(sock.recv(65536))  # b"" at close: h11 decides what it means
    assert isinstance(event, h11.Event)  # not PAUSED: we stop at the end of the response
    return event


def events(
    host: str, port: int, path: str = "/", *, last_event_id: str = "", timeout: float = 60.0
) -> Iterator[ReceivedItem]:
    """Yield every Event and Comment of the stream at ``path``, then its EndOfStream.

    Raises:
        NotAnEventStream: the response is not a ``200 text/event-stream``.
        StreamCut: the connection closed or was reset before the end of the body.
    """
    http = h11.Connection(our_role=h11.CLIENT)
    with socket.create_connection((host, port), timeout=timeout) as sock:
        # ---- send the request ------------------------------------------------------
        headers = [("Host", f"{host}:{port}"), ("Accept", "text/event-stream")]
        if last_event_id:
            headers.append(("Last-Event-ID", last_event_id))
        request = h11.Request(method="GET", target=path, headers=headers)
        sock.sendall((http.send(request) or b"") + (http.send(h11.EndOfMessage()) or b""))

        # ---- check the response head ----------------------------------------------
        response = _next_http_event(http, sock)
        while isinstance(response, h11.InformationalResponse):  # 1xx: not the answer yet
            response = _next_http_event(http, sock)
        assert isinstance(response, h11.Response)
        check = check_response(response.status_code, response.headers)
        if not check.streams:
            body = b""  # at most 4 KiB: the body of a wrong response may never end
            while len(body) < 4096 and isinstance(event := _next_http_event(http, sock), h11.Data):
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
                    event = _next_http_event(http, sock)
                except (h11.RemoteProtocolError, ConnectionResetError) as exc:
                    cut, event = str(exc) or type(exc).__name__, h11.EndOfMessage()
                if isinstance(event, h11.Data):
                    conn.receive_data(event.data)
                elif isinstance(event, h11.EndOfMessage):
                    conn.receive_data(b"")
                continue
            if isinstance(item, EndOfStream) and cut:
                raise StreamCut(item, cut)
            yield item
            if isinstance(item, EndOfStream):
                return


def describe(item: ReceivedItem) -> str:
    """One line for an item; long data is shortened."""
    if isinstance(item, Event):
        more = f"... ({len(item.data)} chars)" if len(item.data) > 60 else ""
        return f"event {item.type!r} id={item.id!r}: {item.data[:60]!r}{more}"
    if isinstance(item, Comment):
        return f"comment {item.text!r}"
    return f"end of stream (truncated={item.truncated})"


def main(argv: list[str] | None = None) -> int:
    """Print every item of the stream; exit 1 if it was cut short or is not a stream."""
    parser = argparse.ArgumentParser(description="Read an SSE stream with h11.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--path", default="/")
    parser.add_argument("--last-event-id", default="", help="resume after this event ID")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per recv()")
    args = parser.parse_args(argv)
    try:
        for item in events(**vars(args)):
            print(describe(item), flush=True)
            if isinstance(item, EndOfStream) and item.truncated:
                return 1
    except (NotAnEventStream, OSError, h11.ProtocolError, sse_sansio.ProtocolError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
