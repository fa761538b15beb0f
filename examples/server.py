"""Serve a Server-Sent Events stream built with ``sse_sansio.serialize()``.

What it shows: the sending side.  Each event is an ``sse_sansio.Event`` turned into
bytes by ``serialize()`` (which refuses newline injection in types and ids); between
events the server sends keepalive comments, ``serialize(Comment(...))``, as proxies and
idle timeouts expect.  h11 does the HTTP/1.1 framing: chunked coding for HTTP/1.1
clients, a close-delimited body for HTTP/1.0 ones.  A ``Last-Event-ID`` request header
resumes after that event.  Standard library plus h11, one thread per client.

Run it, then read it with any client example, ``curl -N`` or the command line::

    python examples/server.py --port 8000 --count 5 --interval 0.5 --keepalive 0.2
    python examples/h11_client.py --port 8000
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import socket
import socketserver
import sys
import time
from collections.abc import Iterable

import h11

from sse_sansio import Comment, Event, serialize


def make_event(n: int) -> Event:
    """The ``n``-th event of the stream (counted from 1): two lines of data and an id."""
    return Event(
        type="tick",
        data=f'第 {n} 条消息\n{{"n": {n}}}',
        id=str(n),
        retry=2000 if n == 1 else None,  # the first event tells clients how long to wait
    )


class SSEServer(socketserver.ThreadingTCPServer):
    """Streams ``count`` events (0: without end), ``interval`` seconds apart."""

    allow_reuse_address = True
    daemon_threads = True

    def __init__(
        self, address: tuple[str, int], *, count: int, interval: float, keepalive: float
    ) -> None:
        super().__init__(address, StreamHandler)
        self.count, self.interval, self.keepalive = count, interval, keepalive


class StreamHandler(socketserver.BaseRequestHandler):
    """One client: read its request, answer with the stream."""

    server: SSEServer
    request: socket.socket

    def handle(self) -> None:
        http = h11.Connection(our_role=h11.SERVER)
        try:
            # ---- read the request ----------------------------------------------------
            request = None
            while True:
                event = http.next_event()
                if event is h11.NEED_DATA:
                    http.receive_data(self.request.recv(65536))
                elif isinstance(event, h11.Request):
                    request = event
                elif isinstance(event, h11.EndOfMessage) and request is not None:
                    break
                elif isinstance(event, h11.ConnectionClosed):
                    return
            assert request is not None
            if request.method != b"GET":
                self.send(http, h11.Response(status_code=405, headers=[("Content-Length", "0")]))
                self.send(http, h11.EndOfMessage())
                return
            last_id = dict(request.headers).get(b"last-event-id", b"").decode("latin-1")

            # ---- answer with the stream -----------------------------------------------
            headers = [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache")]
            self.send(http, h11.Response(status_code=200, reason=b"OK", headers=headers))
            first = int(last_id) + 1 if last_id.isascii() and last_id.isdigit() else 1
            count = self.server.count
            numbers: Iterable[int] = (
                itertools.count(first) if count == 0 else range(first, count + 1)
            )
            for n in numbers:
                self.wait(http, self.server.interval)
                self.send(http, h11.Data(data=serialize(make_event(n))))
            self.send(http, h11.EndOfMessage())
        except (OSError, h11.ProtocolError):
            pass  # the client went away or spoke broken HTTP: nothing more to send

    def wait(self, http: h11.Connection, seconds: float) -> None:
        """Sleep ``seconds``, sending a keepalive comment every ``keepalive`` seconds."""
        due = time.monotonic() + seconds
        while (left := due - time.monotonic()) > self.server.keepalive:
            time.sleep(self.server.keepalive)
            self.send(http, h11.Data(data=serialize(Comment(text="keepalive"))))
        time.sleep(max(left, 0.0))

    def send(self, http: h11.Connection, event: h11.Event) -> None:
        """Frame ``event`` with h11 and send it."""
        self.request.sendall(http.send(event) or b"")


def main(argv: list[str] | None = None) -> int:
    """Serve until interrupted."""
    parser = argparse.ArgumentParser(description="Serve an SSE stream (h11 + serialize()).")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000, help="0 picks a free port")
    parser.add_argument("--count", type=int, default=10, help="events per stream (0: endless)")
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between events")
    parser.add_argument(
        "--keepalive", type=float, default=15.0, help="seconds between keepalive comments"
    )
    args = parser.parse_args(argv)
    if args.keepalive <= 0:
        parser.error("--keepalive must be positive")
    with SSEServer(
        (args.host, args.port), count=args.count, interval=args.interval, keepalive=args.keepalive
    ) as server:
        host, port = server.socket.getsockname()[:2]
        print(f"serving on http://{host}:{port}/", flush=True)
        with contextlib.suppress(KeyboardInterrupt):  # Ctrl+C: stop quietly
            server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
