"""examples/proxy.py passes an upstream cut on as a cut, never as a clean end.

An upstream that ends its body in the middle of an event, or drops its connection in
the middle of a chunked body: the client of the proxy must get every whole event sent
before, then a chunked body without its last zero-length chunk (an incomplete body, as
its HTTP library reports it), never the clean end of a finished stream.
"""

from __future__ import annotations

import http.server
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from tests.helpers.examples import load_example

pytestmark = pytest.mark.slow  # the proxy example on live sockets

WHOLE = b"data: whole\n\n"


class CuttingUpstream(http.server.BaseHTTPRequestHandler):
    """``/mid-event``: a clean HTTP end inside an event; ``/drop``: the connection drops."""

    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        if self.path == "/mid-event":
            body = WHOLE + b"data: hal"
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(WHOLE), WHOLE))
        self.wfile.flush()
        self.close_connection = True  # no last chunk: a cut

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def proxy_port() -> Iterator[int]:
    proxy = load_example("proxy")
    upstream = http.server.ThreadingHTTPServer(("127.0.0.1", 0), CuttingUpstream)
    server = proxy.ProxyServer(("127.0.0.1", 0), ("127.0.0.1", upstream.server_address[1]), None)
    threads = [threading.Thread(target=s.serve_forever, daemon=True) for s in (upstream, server)]
    for thread in threads:
        thread.start()
    try:
        yield int(server.socket.getsockname()[1])
    finally:
        for s in (upstream, server):
            s.shutdown()
            s.server_close()


def _answer(port: int, path: str) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: proxy\r\n\r\n".encode())
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


@pytest.mark.parametrize("path", ["/mid-event", "/drop"])
def test_an_upstream_cut_reaches_the_client_as_a_cut(proxy_port: int, path: str) -> None:
    answer = _answer(proxy_port, path)
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 ")
    assert b"transfer-encoding: chunked" in head.lower()
    assert WHOLE in body  # the whole event before the cut arrived
    assert not body.endswith(b"0\r\n\r\n")  # and no clean end after it
    assert b"data: hal" not in body  # nor half an event
