"""iter_events() on what issue 26 found: a slow http.client response (read what has
arrived, not 64 KiB), None where bytes belong, and bytes where chunks belong."""

from __future__ import annotations

import asyncio
import http.client
import http.server
import io
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any, ClassVar

import pytest

from sse_sansio import Event, ReconnectPlanner, aiter_events, iter_events

pytestmark = pytest.mark.usefixtures("conn_cls")  # both cores: tests/conftest.py

# The server sends the first event, then holds the rest until the test has seen that
# event (or GATE seconds, so that a client that waits for 64 KiB still ends).
GATE = 5.0


class _SlowHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # the body ends when the connection closes
    gates: ClassVar[list[tuple[threading.Event, list[bool]]]] = []

    def do_GET(self) -> None:
        seen, waited_out = self.gates.pop(0)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        self.wfile.write(b"data: first\n\n")
        self.wfile.flush()
        waited_out.append(not seen.wait(GATE))
        self.wfile.write(b"data: second\n\n")

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def slow_server() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _SlowHandler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()
    thread.join()


def _get(port: int) -> tuple[http.client.HTTPResponse, threading.Event, list[bool]]:
    seen, waited_out = threading.Event(), []  # type: ignore[var-annotated]
    _SlowHandler.gates.append((seen, waited_out))
    client = http.client.HTTPConnection("127.0.0.1", port, timeout=2 * GATE)
    client.request("GET", "/")
    return client.getresponse(), seen, waited_out


def test_the_first_event_of_a_slow_response_comes_before_the_rest(slow_server: int) -> None:
    response, seen, waited_out = _get(slow_server)
    events = iter_events(response)
    assert next(events) == Event(data="first")
    seen.set()  # only now does the server send the rest
    assert list(events) == [Event(data="second")]
    assert waited_out == [False]  # the server never had to give up waiting


def test_plan_events_reads_a_slow_response_as_it_arrives(slow_server: int) -> None:
    response, seen, waited_out = _get(slow_server)
    plan = ReconnectPlanner(mode="single")
    plan.start(now=0)
    events = plan.events(response, response.status, response.headers)
    assert next(events) == Event(data="first")
    seen.set()
    assert list(events) == [Event(data="second")]
    assert waited_out == [False]


class _ReadOnly:
    """A file object with read() only: read in blocks, as before."""

    def __init__(self, data: bytes) -> None:
        self.file = io.BytesIO(data)

    def read(self, size: int) -> bytes:
        return self.file.read(size)


def test_a_file_without_read1_is_read_with_read() -> None:
    assert list(iter_events(_ReadOnly(b"data: a\n\ndata: b\n\n"))) == [
        Event(data="a"),
        Event(data="b"),
    ]


# ---- None and bytes where they do not belong ------------------------------------------------


def test_a_none_chunk_is_an_error_not_a_clean_end() -> None:
    items = iter_events([b"data: a\n\n", None, b"data: b\n\n"])  # type: ignore[list-item]
    assert next(items) == Event(data="a")
    with pytest.raises(TypeError, match="a chunk is None"):
        next(items)


def test_a_none_chunk_is_an_error_in_aiter_events() -> None:
    async def chunks() -> AsyncIterator[bytes | None]:
        for chunk in (b"", b"data: a\n\n", None, b"data: b\n\n"):
            yield chunk

    received: list[object] = []

    async def main() -> None:
        async for item in aiter_events(chunks()):  # type: ignore[arg-type]
            received.append(item)

    with pytest.raises(TypeError, match="a chunk is None"):
        asyncio.run(main())
    assert received == [Event(data="a")]


class _NonBlocking:
    """A non-blocking file: read1() returns None while no data is ready."""

    def __init__(self) -> None:
        self.reads = [b"data: a\n\n", None, b"data: b\n\n"]

    def read1(self, size: int) -> bytes | None:
        return self.reads.pop(0) if self.reads else b""

    def read(self, size: int) -> bytes:
        raise AssertionError("read1() is there: read() is not used")


def test_a_non_blocking_files_none_read_is_an_error() -> None:
    items = iter_events(_NonBlocking())
    assert next(items) == Event(data="a")
    with pytest.raises(ValueError, match="non-blocking"):
        next(items)


@pytest.mark.parametrize("data", [b"data: a\n\n", bytearray(b"data: a\n\n")])
def test_bytes_instead_of_chunks_is_named(data: bytes) -> None:
    with pytest.raises(TypeError, match=r"an iterable of byte chunks.*pass \[data\]"):
        iter_events(data)  # type: ignore[arg-type]
    assert list(iter_events([data])) == [Event(data="a")]
