"""The examples against an upstream or a store that misbehaves (issue 36, items 15, 17).

- examples/proxy.py asks upstream for ``Accept-Encoding: identity`` and refuses, with a
  502 that says why, a body that comes compressed anyway: its parser reads raw bytes,
  and gzip bytes parsed as text are garbage.
- examples/resumable_server.py: Redis failing in the middle of a response reaches the
  client as a cut (a reset connection it reconnects after), never as a clean end, and
  the server logs one line, not a traceback.
"""

from __future__ import annotations

import gzip
import http.server
import socket
import threading
from collections.abc import Iterator
from typing import Any, ClassVar

import pytest

from tests.helpers.examples import load_example

pytestmark = pytest.mark.slow  # examples on live sockets

STREAM = b"id: 1\ndata: hello\n\n"


class GzipUpstream(http.server.BaseHTTPRequestHandler):
    """An event stream sent gzip-compressed, whatever the client asked for."""

    protocol_version = "HTTP/1.1"
    accept_encoding: ClassVar[list[str | None]] = []

    def do_GET(self) -> None:
        self.accept_encoding.append(self.headers.get("Accept-Encoding"))
        body = gzip.compress(STREAM)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def _serve(server: Any) -> Iterator[int]:
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def _ask(port: int, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request)
        sock.shutdown(socket.SHUT_WR)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


def test_the_proxy_refuses_a_compressed_upstream_body_knowingly() -> None:
    proxy = load_example("proxy")
    GzipUpstream.accept_encoding = []
    upstream = _serve(http.server.ThreadingHTTPServer(("127.0.0.1", 0), GzipUpstream))
    up_port = next(upstream)
    served = _serve(proxy.ProxyServer(("127.0.0.1", 0), ("127.0.0.1", up_port), None))
    port = next(served)
    try:
        answer = _ask(port, b"GET / HTTP/1.1\r\nHost: proxy\r\n\r\n")
    finally:
        next(served, None)
        next(upstream, None)
    assert answer.startswith(b"HTTP/1.1 502 ")
    assert b"Content-Encoding: gzip" in answer
    assert GzipUpstream.accept_encoding == ["identity"]
