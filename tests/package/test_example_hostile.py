"""The examples against an upstream or a store that misbehaves (issue 36, items 15, 17).

- examples/proxy.py asks upstream for ``Accept-Encoding: identity`` and refuses, with a
  502 that says why, a body that comes compressed anyway: its parser reads raw bytes,
  and gzip bytes parsed as text are garbage.
- examples/resumable_server.py: Redis failing in the middle of a response reaches the
  client as a cut (a reset connection it reconnects after), never as a clean end, and
  the server logs one line, not a traceback.
"""

from __future__ import annotations

import asyncio
import gzip
import http.server
import socket
import threading
from collections.abc import Iterator
from typing import Any, ClassVar

import fakeredis
import fakeredis.aioredis
import pytest
import redis

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


class _FailingRedis:
    """An asyncio Redis client whose pipelines fail from the ``fail_at``-th on, as when
    the Redis server goes away in the middle of a response."""

    def __init__(self, real: Any, fail_at: int) -> None:
        self._real = real
        self._fail_at = fail_at
        self.pipelines = 0

    def pipeline(self, *args: Any, **kwargs: Any) -> Any:
        self.pipelines += 1
        if self.pipelines >= self._fail_at:
            raise redis.exceptions.ConnectionError("Connection closed by server.")
        return self._real.pipeline(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


async def _answer_with_redis_failing(client: Any) -> tuple[bytes, BaseException | None]:
    """Serve one request with examples/resumable_server.handle(); return what the
    client read and how its read ended (None: a clean end of the body)."""
    example = load_example("resumable_server")
    server = await asyncio.start_server(lambda r, w: example.handle(client, r, w), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /answers/demo HTTP/1.1\r\nHost: x\r\n\r\n")
        got, ended = b"", None
        try:
            while chunk := await asyncio.wait_for(reader.read(65536), 10):
                got += chunk
        except ConnectionResetError as exc:
            ended = exc
        writer.close()
    return got, ended


def test_redis_failing_mid_stream_is_a_cut_for_the_client(
    capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    example = load_example("resumable_server")
    shared = fakeredis.FakeServer()
    window = example.producer(fakeredis.FakeRedis(server=shared), "demo")
    for event in example.answer_events("one two three"):
        window.append(event)
    client = _FailingRedis(fakeredis.aioredis.FakeRedis(server=shared), fail_at=2)
    got, ended = asyncio.run(_answer_with_redis_failing(client))
    assert got.startswith(b"HTTP/1.1 200 OK\r\n")
    assert isinstance(ended, ConnectionResetError)  # a cut, not the end of the body
    assert client.pipelines == 2
    err = capsys.readouterr().err
    assert "Redis failed" in err
    assert "Traceback" not in err
    assert not [r for r in caplog.records if r.levelname == "ERROR"]
