"""A loopback HTTP server that plays a cassette to real HTTP clients, faults included.

For end-to-end tests of a client (httpx, aiohttp, requests, a raw socket): every request
on any path gets the cassette's status and headers (``Cassette.status``, 200 if none
was recorded, and ``Cassette.headers``: a recorded 429 is a 429 again), then its
chunks, each sent as one HTTP/1.1 chunk at its recorded time (scaled by
``time_scale``; 0 sends at once), then its end:

- ``"clean"``: the terminating zero-length chunk, the body is complete;
- ``"cut"`` and ``"error"``: the connection is closed without it, so the client sees a
  body cut short (httpx: "peer closed connection without sending complete message
  body"; aiohttp: ClientPayloadError).  An HTTP peer cannot send an exception, so an
  error end is served as a cut.

The recorded headers are sent but for the ones this server owns (Content-Length,
Transfer-Encoding, Connection, Keep-Alive); Content-Type is ``text/event-stream`` unless
recorded.  Each request's headers are kept in ``requests``, to check what a client sent
(``Last-Event-ID`` after a reconnection, say).

Invariants: it listens on 127.0.0.1 unless told otherwise; one thread serves each
connection, ``Connection: close``; ``close()`` (or leaving the ``with`` block) stops the
server and wakes every response waiting for its next chunk, so nothing outlives it.
"""

from __future__ import annotations

import contextlib
import http.server
import socket
import threading
import time
from typing import Any, NoReturn

from sse_sansio._pickling import refuse

from ._cassette import Cassette

__all__ = ["CassetteServer", "serve_cassette"]

# Headers that describe the recorded connection, not the body: this server sends its own.
_OWN_HEADERS = frozenset({"content-length", "transfer-encoding", "connection", "keep-alive"})


class CassetteServer:
    """A running server (see :func:`serve_cassette`); a context manager that closes it.

    Attributes:
        url: ``http://host:port/``.
        requests: The headers of each request received, in order.
    """

    def __init__(self, cassette: Cassette, host: str, port: int, time_scale: float) -> None:
        if not time_scale >= 0:
            raise ValueError(f"time_scale is a number of at least 0, not {time_scale!r}")
        self.cassette = cassette
        self.time_scale = time_scale
        self.requests: list[dict[str, str]] = []
        self._stopped = threading.Event()
        self._server = http.server.ThreadingHTTPServer((host, port), _handler(self))
        self._server.daemon_threads = True
        address = self._server.server_address
        self.url = f"http://{address[0]!s}:{address[1]}/"
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        """Stop serving; responses still playing end as cuts."""
        self._stopped.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def __enter__(self) -> CassetteServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # Pickling (issue 32, item 4): a running server is a socket and a thread, which
    # mean nothing in another process or after a copy: pickle and copy refuse it.
    def __reduce__(self) -> NoReturn:
        refuse(self, "it is a running server (a socket and a thread); pickle its cassette")

    def _play(self, handler: http.server.BaseHTTPRequestHandler) -> None:
        """Send the cassette as the response to one request."""
        self.requests.append(dict(handler.headers.items()))
        cassette = self.cassette
        handler.send_response(200 if cassette.status is None else cassette.status)
        headers = cassette.headers
        if not any(name.lower() == "content-type" for name, _ in headers):
            headers.append(("Content-Type", "text/event-stream"))
        for name, value in headers:
            if name.lower() not in _OWN_HEADERS:
                handler.send_header(name, value)
        handler.send_header("Transfer-Encoding", "chunked")
        handler.send_header("Connection", "close")
        handler.end_headers()
        handler.wfile.flush()
        started = time.monotonic()
        for t, chunk in [*cassette.chunks, (cassette.end_time, b"")]:
            delay = started + t * self.time_scale - time.monotonic()
            if self._stopped.wait(max(delay, 0)):
                return  # closing: the response ends as a cut
            if chunk:
                handler.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                handler.wfile.flush()
        if cassette.end == "clean":
            handler.wfile.write(b"0\r\n\r\n")
            handler.wfile.flush()
        else:
            # A cut: the body stops here, without its terminating chunk.
            handler.connection.shutdown(socket.SHUT_RDWR)


def _handler(server: CassetteServer) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            self.close_connection = True
            with contextlib.suppress(OSError):  # the client went away: nothing to serve
                server._play(self)

        do_POST = do_GET

        def log_message(self, format: str, *args: Any) -> None:
            pass  # a test's output stays its own

    return Handler


def serve_cassette(
    cassette: Cassette, *, host: str = "127.0.0.1", port: int = 0, time_scale: float = 1.0
) -> CassetteServer:
    """Start a server that answers every request with ``cassette``; return it running.

    Args:
        cassette: What to serve.
        host: The address to listen on: the loopback interface by default.
        port: The port; 0 (the default) picks a free one (read ``url``).
        time_scale: Recorded times are multiplied by this: 1 (the default) plays in
            real time, 0 sends every chunk at once (still one HTTP chunk each).

    Raises:
        ValueError: a negative ``time_scale``.
        OSError: the address cannot be bound.

    Use it as a context manager::

        with serve_cassette(cassette, time_scale=0) as server:
            response = httpx.get(server.url)
    """
    return CassetteServer(cassette, host, port, time_scale)
