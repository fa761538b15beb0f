"""Read a Server-Sent Events stream with anyio (on asyncio or trio), reconnecting.

What it shows: no HTTP client at all.  An anyio byte stream is an async iterable of
bytes, which is what ``aiter_events()`` takes; the request is HTTP/1.0, so the body
needs no de-chunking (see ``socket_client.py`` for why), and its head is split off by
hand and judged by ``check_response()``, which takes headers as a list of pairs.  The
``ReconnectPlanner`` decides every reconnection, with ``Last-Event-ID``; anyio's clock
and sleep drive it, so the same code runs on asyncio and on trio (``--backend``).

Run it against the example server (or any SSE endpoint on localhost)::

    python examples/server.py --port 8000 &
    python examples/anyio_client.py --port 8000 --path / --mode single --backend trio
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing

import anyio
from anyio.abc import ByteStream

import sse_sansio
from sse_sansio import Comment, Event, Reconnect, ReconnectPlanner

# What a failed attempt may raise besides sse_sansio's own errors: refused, reset, closed
# before the head, or silent for too long.
NETWORK_ERRORS = (OSError, anyio.BrokenResourceError, anyio.EndOfStream, TimeoutError)


async def _head(stream: ByteStream) -> tuple[int, list[tuple[str, str]], bytes]:
    """Read the response head: the status, the headers, and the body bytes after it."""
    received = b""
    while b"\r\n\r\n" not in received:
        received += await stream.receive()  # anyio.EndOfStream if it closes first
    head, _, rest = received.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    pairs = (line.partition(":") for line in lines)
    headers = [(name.strip(), value.strip()) for name, _, value in pairs]
    return int(status_line.split()[1]), headers, rest


async def _first_chunk(stream: ByteStream, timeout: float) -> bytes:
    """One chunk of the body, or b"" if there is none."""
    with anyio.fail_after(timeout):
        try:
            return await stream.receive()
        except anyio.EndOfStream:
            return b""


async def _body(rest: bytes, stream: ByteStream, timeout: float) -> AsyncGenerator[bytes, None]:
    """The body's chunks until the server closes; TimeoutError after ``timeout`` idle."""
    if rest:
        yield rest
    while True:
        with anyio.fail_after(timeout):  # never around a yield: cancel scopes forbid it
            try:
                chunk = await stream.receive()
            except anyio.EndOfStream:
                return
        yield chunk


async def events(
    host: str,
    port: int,
    path: str = "/",
    planner: ReconnectPlanner | None = None,
    *,
    read_timeout: float = 60.0,
    report: Callable[[str], object] = lambda reason: None,
) -> AsyncGenerator[Event | Comment, None]:
    """Yield the stream's events and comments across reconnections, until it stops.

    Raises:
        The exception that made the planner stop, if it was a failure.
    """
    plan = planner or ReconnectPlanner()
    step = plan.start(now=anyio.current_time())
    while isinstance(step, Reconnect):
        await anyio.sleep(step.delay)
        error: Exception | None = None
        try:
            async with await anyio.connect_tcp(host, port) as stream:
                lines = [f"GET {path} HTTP/1.0", f"Host: {host}:{port}"]
                lines += [f"{name}: {value}" for name, value in step.headers.items()]
                await stream.send(("\r\n".join(lines) + "\r\n\r\n").encode())
                with anyio.fail_after(read_timeout):
                    status, headers, rest = await _head(stream)
                check = plan.check(status, headers)
                if not check.streams:  # show the start of the body: one chunk of it
                    raise check.error(rest or await _first_chunk(stream, read_timeout))
                conn = plan.connection()
                # aclosing: the generators are closed here, even after an error, not
                # left to the garbage collector (which trio refuses to do).
                async with (
                    aclosing(_body(rest, stream, read_timeout)) as body,
                    aclosing(sse_sansio.aiter_events(body, connection=conn)) as items,
                ):
                    async for item in items:
                        plan.received(item)
                        yield item
        except (*NETWORK_ERRORS, sse_sansio.ProtocolError) as exc:
            error = exc
        step = plan.ended(error, now=anyio.current_time())
        if isinstance(step, Reconnect):
            report(step.reason)
    if step.error is not None:
        raise step.error


def describe(item: Event | Comment) -> str:
    """One line for an item; long data is shortened."""
    if isinstance(item, Event):
        more = f"... ({len(item.data)} chars)" if len(item.data) > 60 else ""
        return f"event {item.type!r} id={item.id!r}: {item.data[:60]!r}{more}"
    return f"comment {item.text!r}"


def main(argv: list[str] | None = None) -> int:
    """Print every item; exit 1 if the stream stopped on a failure."""
    parser = argparse.ArgumentParser(description="Read an SSE stream with anyio.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--path", default="/")
    parser.add_argument("--last-event-id", default="", help="resume after this event ID")
    parser.add_argument("--max-attempts", type=int, default=5, help="failures in a row")
    parser.add_argument("--mode", choices=["eventsource", "single"], default="eventsource")
    parser.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio")
    args = parser.parse_args(argv)
    plan = ReconnectPlanner(
        mode=args.mode, last_event_id=args.last_event_id, max_attempts=args.max_attempts
    )

    async def run() -> None:
        report = lambda why: print(why, file=sys.stderr)  # noqa: E731
        async for item in events(args.host, args.port, args.path, plan, report=report):
            print(describe(item), flush=True)

    try:
        anyio.run(run, backend=args.backend)
    except (*NETWORK_ERRORS, sse_sansio.ProtocolError) as exc:
        print(f"error: {exc or type(exc).__name__}", file=sys.stderr)
        return 1
    assert plan.stopped is not None
    print(f"stopped: {plan.stopped.reason}", file=sys.stderr)
    return 1 if plan.stopped.failed else 0


if __name__ == "__main__":
    sys.exit(main())
