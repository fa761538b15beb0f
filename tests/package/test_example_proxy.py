"""examples/proxy.py answers every client request with a response.

A non-ASCII ``Last-Event-ID`` (a browser resuming after ``id: café``) once killed the
handler thread with a UnicodeEncodeError and left the client an empty reply; a NUL in a
header got a bare close.  Here a raw-socket client sends each request to the proxy in a
thread, in front of a small upstream that can stream, vanish, or speak nonsense.
"""

from __future__ import annotations

import http.server
import importlib.util
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar

import pytest

pytestmark = pytest.mark.slow  # the proxy example on live sockets

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
STREAM = b"id: 7\ndata: hello\n\ndata: after\n\n"


def _load_proxy() -> ModuleType:
    spec = importlib.util.spec_from_file_location("example_proxy", EXAMPLES / "proxy.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


proxy = _load_proxy()


class Upstream(http.server.BaseHTTPRequestHandler):
    """``/stream`` streams STREAM; ``/vanish`` closes at once; ``/nonsense`` is not HTTP."""

    protocol_version = "HTTP/1.1"
    seen_last_event_id: ClassVar[list[bytes | None]] = []

    def do_GET(self) -> None:
        value = self.headers.get("Last-Event-ID")  # http.server decodes as latin-1
        self.seen_last_event_id.append(None if value is None else value.encode("latin-1"))
        if self.path == "/vanish":
            self.close_connection = True
            return
        if self.path == "/nonsense":
            self.wfile.write(b"this is not HTTP\r\n\r\n")
            self.close_connection = True
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(STREAM)))
        self.end_headers()
        self.wfile.write(STREAM)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep the test output clean


def _serve(server: Any) -> Iterator[int]:
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.fixture
def upstream_port() -> Iterator[int]:
    Upstream.seen_last_event_id = []
    yield from _serve(http.server.ThreadingHTTPServer(("127.0.0.1", 0), Upstream))


@pytest.fixture
def proxy_at() -> Iterator[Callable[..., int]]:
    """``start(upstream_port, rules=None) -> port`` of a proxy running in a thread."""
    servers: list[Iterator[int]] = []

    def start(port: int, rules: Any = None) -> int:
        served = _serve(proxy.ProxyServer(("127.0.0.1", 0), ("127.0.0.1", port), rules))
        servers.append(served)
        return next(served)

    yield start
    for served in servers:
        next(served, None)


def _ask(port: int, request: bytes) -> bytes:
    """Send raw request bytes; return everything the proxy answered before closing."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request)
        sock.shutdown(socket.SHUT_WR)  # the request is all we send
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


def _get(path: str, *headers: bytes) -> bytes:
    lines = [b"GET " + path.encode() + b" HTTP/1.1", b"Host: proxy", *headers]
    return b"\r\n".join(lines) + b"\r\n\r\n"


def _status(answer: bytes) -> int:
    assert answer.startswith(b"HTTP/1.1 "), answer
    return int(answer.split(b" ", 2)[1])


def _body(answer: bytes) -> bytes:
    return answer.split(b"\r\n\r\n", 1)[1]


@pytest.mark.parametrize("mode", ["verbatim", "transform"])
def test_a_non_ascii_last_event_id_is_passed_on(
    mode: str, upstream_port: int, proxy_at: Callable[..., int]
) -> None:
    rules = proxy.Rules(set(), {}, []) if mode == "transform" else None
    port = proxy_at(upstream_port, rules)
    answer = _ask(port, _get("/stream", "Last-Event-ID: café".encode()))
    assert _status(answer) == 200
    assert b"data: hello" in answer
    assert b"data: after" in answer
    # The same UTF-8 bytes reached upstream.
    assert Upstream.seen_last_event_id == ["café".encode()]


def test_a_last_event_id_that_is_not_utf8_is_a_400(
    upstream_port: int, proxy_at: Callable[..., int]
) -> None:
    answer = _ask(proxy_at(upstream_port), _get("/stream", b"Last-Event-ID: caf\xe9"))
    assert _status(answer) == 400
    assert b"Last-Event-ID" in _body(answer)
    assert Upstream.seen_last_event_id == []  # never asked


@pytest.mark.parametrize(
    "request_bytes",
    [
        _get("/stream", b"Last-Event-ID: a\x00b"),
        _get("/stream", b"X-Other: \x00"),
        b"NOT A REQUEST LINE\r\n\r\n",
    ],
    ids=["NUL in Last-Event-ID", "NUL in another header", "broken request line"],
)
def test_a_malformed_request_is_a_400(
    request_bytes: bytes, upstream_port: int, proxy_at: Callable[..., int]
) -> None:
    answer = _ask(proxy_at(upstream_port), request_bytes)
    assert _status(answer) == 400
    assert _body(answer).startswith(b"bad request: ")


@pytest.mark.parametrize("path", ["/vanish", "/nonsense"])
def test_an_upstream_that_fails_before_answering_is_a_502(
    path: str, upstream_port: int, proxy_at: Callable[..., int]
) -> None:
    answer = _ask(proxy_at(upstream_port), _get(path))
    assert _status(answer) == 502
    assert _body(answer).startswith(b"upstream failed: ")


def test_an_upstream_that_refuses_the_connection_is_a_502(
    proxy_at: Callable[..., int],
) -> None:
    with socket.socket() as probe:  # a port that nothing listens on
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    answer = _ask(proxy_at(closed_port), _get("/stream"))
    assert _status(answer) == 502
    assert b"ConnectionRefusedError" in _body(answer)


def test_a_client_that_leaves_without_asking_gets_nothing_and_breaks_nothing(
    upstream_port: int, proxy_at: Callable[..., int]
) -> None:
    port = proxy_at(upstream_port)
    assert _ask(port, b"") == b""
    # The proxy still serves the next client.
    assert _status(_ask(port, _get("/stream"))) == 200


def test_an_idle_client_is_closed_after_the_client_timeout(upstream_port: int) -> None:
    server = proxy.ProxyServer(("127.0.0.1", 0), ("127.0.0.1", upstream_port), None, 0.2)
    served = _serve(server)
    port = next(served)
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as idle:
            # Connected, and sending nothing: the proxy closes its end (recv gets b""),
            # where it once held the socket and its thread forever (this recv timed out).
            assert idle.recv(1) == b""
        assert _status(_ask(port, _get("/stream"))) == 200  # and it serves the next one
    finally:
        next(served, None)


@pytest.mark.parametrize("rename", ["x=", "x=a\nb", "x=a\rb"])
def test_a_rename_to_an_invalid_type_is_refused(
    rename: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        proxy.main(["--mode", "transform", "--rename", rename])
    assert exit_.value.code == 2
    assert "--rename" in capsys.readouterr().err
