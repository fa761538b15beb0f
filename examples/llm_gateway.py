"""An LLM streaming gateway on asyncio: watchdog, keepalives and coalescing together.

What it shows: the three stream-health machines around one relay loop.  The gateway
forwards an Anthropic-style stream from its upstream to the client and
- guards it with a ``Watchdog`` (``llm.Progress`` decides what is progress, so pings
  are life only): no first byte in time, or a stall while pings flow, ends the answer
  with an in-band ``error`` event the client's SDK understands;
- keeps the client's connection busy with a ``KeepalivePlanner`` while it waits
  (``X-Accel-Buffering: no`` asks proxies to pass each comment on);
- batches the deltas with a ``Coalescer`` (``llm.TextMerge`` joins text deltas), and
  writes ``message_stop`` and errors at once;
- passes an upstream cut on as a cut: the client's chunked body ends without its last
  chunk, never with a clean end;
- waits for the client to take each write (``drain()``, for at most ``send_timeout``
  seconds): a client that reads slowly slows the relay, and so the upstream, and one
  that never reads is cut off, instead of the gateway holding everything the upstream
  sends.
Every deadline comes from the machines; the loop only waits for the earliest one.

``--demo`` also starts a fake upstream whose paths stall or cut (``/ok``,
``/slow-start``, ``/stall``, ``/cut``)::

    python examples/llm_gateway.py --port 8002 --demo
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys

from sse_sansio import (
    NEED_DATA,
    Coalescer,
    Connection,
    EndOfStream,
    Event,
    KeepalivePlanner,
    Watchdog,
    llm,
    serialize,
)

HEAD = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
    b"X-Accel-Buffering: no\r\nTransfer-Encoding: chunked\r\n\r\n"
)


class Gateway:
    """Relays GET requests to ``upstream`` (host, port) with the given clocks (seconds)."""

    def __init__(
        self,
        upstream: tuple[str, int],
        *,
        first_byte: float = 30.0,
        progress: float = 60.0,
        keepalive: float = 15.0,
        delay: float = 0.02,
        send_timeout: float = 30.0,
    ) -> None:
        self.upstream, self.first_byte, self.progress = upstream, first_byte, progress
        self.keepalive, self.delay, self.send_timeout = keepalive, delay, send_timeout

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_writer = None
        try:
            path = (await reader.readuntil(b"\r\n\r\n")).split(b" ")[1]
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
            up_writer.write(b"GET " + path + b" HTTP/1.0\r\n\r\n")
            writer.write(HEAD)
            if await self.relay(up_reader, writer):
                writer.write(b"0\r\n\r\n")  # the clean end, only for a finished answer
            await asyncio.wait_for(writer.drain(), self.send_timeout)
        except (OSError, asyncio.IncompleteReadError, asyncio.TimeoutError):
            pass  # the upstream failed, or the client left or stopped reading: a cut
        finally:
            if up_writer is not None:
                up_writer.close()
            writer.close()  # without "0\r\n\r\n": the client sees a cut

    async def relay(self, up: asyncio.StreamReader, client: asyncio.StreamWriter) -> bool:
        """Relay the body; True when it ended cleanly (or with our error event)."""
        loop = asyncio.get_running_loop()
        now = loop.time()
        dog = Watchdog(
            first_byte=self.first_byte, idle=self.progress, progress=self.progress, now=now
        )
        plan = KeepalivePlanner(interval=self.keepalive, first_byte=self.keepalive, now=now)
        out = Coalescer(
            max_bytes=16384, max_delay=self.delay, now=now, merge=llm.TextMerge("anthropic")
        )
        progress, conn, head, started = llm.Progress("anthropic"), Connection(), b"", False
        while True:
            deadlines = [d for d in (dog.check(now).deadline, plan.deadline, out.deadline) if d]
            try:
                data = await asyncio.wait_for(up.read(65536), max(0.0, min(deadlines) - now))
            except asyncio.TimeoutError:
                data = None
            now = loop.time()
            if data is not None:
                dog.saw_bytes(len(data), now)
                if not started and data:  # skip the upstream's HTTP head
                    head += data
                    if b"\r\n\r\n" not in head:
                        continue
                    started, data = True, head.partition(b"\r\n\r\n")[2]
                    if not data:
                        continue
                conn.receive_data(data)  # b"": the upstream closed
                while (item := conn.next_event()) is not NEED_DATA:
                    dog.saw_item(item, now, progress=progress.of(item))
                    if isinstance(item, EndOfStream):
                        await self.write(client, out.flush())
                        return False  # upstream ended: a cut unless message_stop came first
                    urgent = isinstance(item, Event) and item.type in ("message_stop", "error")
                    out.push(item, now, urgent=urgent)
                    if isinstance(item, Event) and item.type == "message_stop":
                        await self.write(client, out.flush())
                        return True
            verdict = dog.check(now)
            if not verdict.ok:
                error = {
                    "type": "error",
                    "error": {"type": "gateway_timeout", "message": verdict.state},
                }
                out.push(Event(type="error", data=json.dumps(error)), now, urgent=True)
                await self.write(client, out.flush())
                return True
            if (batch := out.pop(now)) is not None:
                await self.write(client, batch)
                plan.sent(now)
            if (comment := plan.due(now)) is not None:
                await self.write(client, comment)

    async def write(self, client: asyncio.StreamWriter, data: bytes) -> None:
        """Write ``data`` as one chunk and wait until the client has taken it.

        The wait is what bounds memory: while it lasts nothing is read from the
        upstream, so TCP slows the upstream down too.  A client that takes nothing for
        ``send_timeout`` seconds is given up on (asyncio.TimeoutError: the caller
        closes the connection without the last chunk).
        """
        if data:
            client.write(b"%x\r\n%s\r\n" % (len(data), data))
            await asyncio.wait_for(client.drain(), self.send_timeout)


# ---- the fake upstream of --demo and the tests ------------------------------------------


def _delta(text: str) -> bytes:
    payload = {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "text_delta", "text": text},
    }
    return serialize(Event(type="content_block_delta", data=json.dumps(payload)))


PING = serialize(Event(type="ping", data='{"type": "ping"}'))
STOP = serialize(
    Event(
        type="message_delta", data='{"type": "message_delta", "delta": {"stop_reason": "end_turn"}}'
    )
) + serialize(Event(type="message_stop", data='{"type": "message_stop"}'))


async def fake_upstream(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, pause: float = 1.0
) -> None:
    """``/ok`` answers; ``/slow-start`` waits before any byte; ``/stall`` pings after a
    word; ``/cut`` drops the connection in the middle of an event."""
    try:
        await _answer(writer, (await reader.readuntil(b"\r\n\r\n")).split(b" ")[1], pause)
    except OSError:
        pass  # the gateway gave up on us
    finally:
        writer.close()


async def _answer(writer: asyncio.StreamWriter, path: bytes, pause: float) -> None:
    if path == b"/slow-start":
        await asyncio.sleep(pause)
    writer.write(b"HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n")
    writer.write(_delta("Hel") + _delta("lo"))
    if path == b"/stall":
        for _ in range(int(pause / 0.02)):
            writer.write(PING)
            await writer.drain()
            await asyncio.sleep(0.02)
    elif path == b"/cut":
        writer.write(b"event: content_block_delta\ndata: {")
    else:
        writer.write(STOP)
    await writer.drain()


async def serve(port: int, upstream: tuple[str, int] | None) -> None:
    if upstream is None:
        fake = await asyncio.start_server(fake_upstream, "127.0.0.1", 0)
        upstream = ("127.0.0.1", fake.sockets[0].getsockname()[1])
    server = await asyncio.start_server(
        Gateway(upstream, first_byte=0.5, progress=0.5, keepalive=0.2).handle, "127.0.0.1", port
    )
    print(
        f"gateway on http://127.0.0.1:{server.sockets[0].getsockname()[1]}/ -> {upstream}",
        flush=True,
    )
    await server.serve_forever()


def main(argv: list[str] | None = None) -> int:
    """Run the gateway (and, with --demo, its fake upstream) until interrupted."""
    parser = argparse.ArgumentParser(description="An LLM streaming gateway.")
    parser.add_argument("--port", type=int, default=8002)
    parser.add_argument("--upstream", metavar="HOST:PORT")
    parser.add_argument("--demo", action="store_true", help="start a fake upstream")
    args = parser.parse_args(argv)
    if not args.demo and not args.upstream:
        parser.error("give --upstream HOST:PORT or --demo")
    upstream = None
    if args.upstream:
        host, _, port = args.upstream.rpartition(":")
        upstream = (host, int(port))
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(args.port, upstream))
    return 0


if __name__ == "__main__":
    sys.exit(main())
