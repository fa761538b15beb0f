"""examples/llm_gateway.py live on loopback, against its fake upstream (short clocks)."""

from __future__ import annotations

import asyncio
import json

import pytest

from sse_sansio import Comment, EndOfStream, Event
from sse_sansio.llm import Tracker
from sse_sansio.testing import parse
from tests.helpers.examples import load_example

pytestmark = pytest.mark.slow  # the gateway example on live sockets

gateway = load_example("llm_gateway")


def _dechunk(body: bytes) -> tuple[bytes, bool]:
    """The chunked body's data, and whether it had its last zero-length chunk."""
    data = b""
    while body:
        size_line, _, rest = body.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            return data, True
        data, body = data + rest[:size], rest[size + 2 :]
    return data, False


async def _ask(path: str) -> tuple[list[object], bool]:
    fake = await asyncio.start_server(
        lambda r, w: gateway.fake_upstream(r, w, pause=2.0), "127.0.0.1", 0
    )
    relay = gateway.Gateway(
        ("127.0.0.1", fake.sockets[0].getsockname()[1]),
        first_byte=0.5,
        progress=0.5,
        keepalive=0.1,
    )
    server = await asyncio.start_server(relay.handle, "127.0.0.1", 0)
    async with fake, server:
        reader, writer = await asyncio.open_connection(
            "127.0.0.1", server.sockets[0].getsockname()[1]
        )
        writer.write(b"GET " + path.encode() + b" HTTP/1.1\r\nHost: gw\r\n\r\n")
        answer = await asyncio.wait_for(reader.read(-1), 10)
        writer.close()
    head, _, body = answer.partition(b"\r\n\r\n")
    assert b"X-Accel-Buffering: no" in head
    data, clean = _dechunk(body)
    return list(parse(data)), clean


def _outcome(items: list[object]) -> str:
    tracker = Tracker("anthropic")
    for item in items:
        if isinstance(item, (Event, Comment)):
            tracker.feed(item)
    return tracker.end().outcome


def _text(items: list[object]) -> str:
    return "".join(
        json.loads(i.data)["delta"]["text"]
        for i in items
        if isinstance(i, Event) and i.type == "content_block_delta"
    )


def test_a_whole_answer_is_relayed_merged_and_ends_cleanly() -> None:
    items, clean = asyncio.run(_ask("/ok"))
    assert clean
    assert _text(items) == "Hello"
    assert _outcome(items) == "completed"


@pytest.mark.parametrize(
    ("path", "state"), [("/slow-start", "no-first-byte"), ("/stall", "stalled")]
)
def test_a_stall_ends_with_an_error_event(path: str, state: str) -> None:
    items, clean = asyncio.run(_ask(path))
    assert clean
    assert _outcome(items) == "failed"
    last = [i for i in items if isinstance(i, Event)][-1]
    assert json.loads(last.data)["error"]["message"] == state
    if path == "/slow-start":
        assert Comment(text="") in items  # keepalives while waiting
    else:
        assert _text(items) == "Hello"


def test_an_upstream_cut_is_passed_on_as_a_cut() -> None:
    items, clean = asyncio.run(_ask("/cut"))
    assert not clean
    assert _text(items) == "Hello"
    assert items[-1] == EndOfStream()  # the half event never reached the client


def test_a_client_that_never_reads_stops_the_relay_and_is_cut_off() -> None:
    # The upstream floods 64 MiB of deltas; the client sends its request and reads
    # nothing.  The gateway waits for each write to drain, so it stops reading the
    # upstream (whose own writes then block), and after send_timeout it gives up on
    # the client: the upstream never gets to send it all, and the body has no end.
    total = 64 * 1024 * 1024
    event = gateway._delta("x" * 16384)
    sent = 0

    async def main() -> bytes:
        nonlocal sent
        finished = asyncio.Event()

        async def flood(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            nonlocal sent
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n")
            try:
                while sent < total:
                    writer.write(event)
                    await writer.drain()
                    sent += len(event)
            except OSError:
                pass  # the gateway closed the upstream connection
            finally:
                finished.set()
                writer.close()

        fake = await asyncio.start_server(flood, "127.0.0.1", 0)
        relay = gateway.Gateway(
            ("127.0.0.1", fake.sockets[0].getsockname()[1]),
            first_byte=5.0,
            progress=5.0,
            keepalive=1.0,
            send_timeout=0.5,
        )
        server = await asyncio.start_server(relay.handle, "127.0.0.1", 0)
        async with fake, server:
            reader, writer = await asyncio.open_connection(
                "127.0.0.1", server.sockets[0].getsockname()[1]
            )
            writer.write(b"GET /flood HTTP/1.1\r\nHost: gw\r\n\r\n")
            await asyncio.wait_for(finished.wait(), 30)
            body = await asyncio.wait_for(reader.read(-1), 30)  # the gateway closed it
            writer.close()
        return body

    body = asyncio.run(main())
    assert sent < total
    assert not body.endswith(b"0\r\n\r\n")
