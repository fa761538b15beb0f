"""Read a Server-Sent Events stream with aiohttp, reconnecting as a browser would.

What it shows: the helpers are transport-agnostic.  aiohttp hands out the body as
``response.content.iter_any()`` (whatever arrived, already decompressed: hence
``decoded=True`` for the response check); ``planner.aevents()`` checks the response and
parses the chunks; the ``ReconnectPlanner`` decides every reconnection, with
``Last-Event-ID``.  aiohttp's own errors (``aiohttp.ClientError``: refused, reset, a
body cut short) and timeouts are network errors to the planner.

Run it against the example server (or any SSE endpoint)::

    python examples/server.py --port 8000 &
    python examples/aiohttp_client.py http://127.0.0.1:8000/ --mode single
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import AsyncIterator, Callable

import aiohttp

import sse_sansio
from sse_sansio import Comment, Event, Reconnect, ReconnectPlanner


async def events(
    url: str,
    planner: ReconnectPlanner | None = None,
    *,
    read_timeout: float = 60.0,
    report: Callable[[str], object] = lambda reason: None,
) -> AsyncIterator[Event | Comment]:
    """Yield the stream's events and comments across reconnections, until it stops.

    Raises:
        The exception that made the planner stop, if it was a failure: a
        ``sse_sansio.ResponseError``, a ``RemoteProtocolError``, or the last
        ``aiohttp.ClientError`` or ``TimeoutError`` when it gave up.
    """
    plan = planner or ReconnectPlanner()
    clock = asyncio.get_running_loop().time
    step = plan.start(now=clock())
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=10.0, sock_read=read_timeout)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        while isinstance(step, Reconnect):
            await asyncio.sleep(step.delay)
            error: Exception | None = None
            try:
                async with session.get(url, headers=step.headers) as response:
                    chunks = response.content.iter_any()
                    async for item in plan.aevents(
                        chunks, response.status, response.headers, decoded=True
                    ):
                        yield item
            except (aiohttp.ClientError, TimeoutError, sse_sansio.ProtocolError) as exc:
                error = exc
            step = plan.ended(error, now=clock())
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
    parser = argparse.ArgumentParser(description="Read an SSE stream with aiohttp.")
    parser.add_argument("url")
    parser.add_argument("--last-event-id", default="", help="resume after this event ID")
    parser.add_argument("--max-attempts", type=int, default=5, help="failures in a row")
    parser.add_argument("--mode", choices=["eventsource", "single"], default="eventsource")
    args = parser.parse_args(argv)
    plan = ReconnectPlanner(
        mode=args.mode, last_event_id=args.last_event_id, max_attempts=args.max_attempts
    )

    async def run() -> None:
        async for item in events(args.url, plan, report=lambda why: print(why, file=sys.stderr)):
            print(describe(item), flush=True)

    try:
        asyncio.run(run())
    except (aiohttp.ClientError, TimeoutError, sse_sansio.ProtocolError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    assert plan.stopped is not None
    print(f"stopped: {plan.stopped.reason}", file=sys.stderr)
    return 1 if plan.stopped.failed else 0


if __name__ == "__main__":
    sys.exit(main())
