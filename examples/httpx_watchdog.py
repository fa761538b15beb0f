"""Read a Server-Sent Events stream with httpx, guarded by a liveness watchdog.

What it shows: ``sse_sansio.Watchdog`` on an httpx loop.  Every raw read goes to
``saw_bytes()`` (bytes are life on the wire, even when the parser returns nothing yet)
and every parsed item to ``saw_item()``; after each read the loop asks ``check()`` and
gives up with ``Unhealthy`` when the verdict is not "ok": no first byte in time, or
keepalive comments flowing while no event comes ("stalled").  A stream that goes
fully silent ends in httpx's read timeout, set to the watchdog's ``idle``: a blocking
read cannot be woken earlier.  The watchdog never reads the clock: this loop does.

Run it against the example server (an event every 2 s, keepalives in between)::

    python examples/server.py --port 8000 --interval 2 --keepalive 0.2 &
    python examples/httpx_watchdog.py http://127.0.0.1:8000/ --progress 1
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterator

import httpx

from sse_sansio import NEED_DATA, Comment, Connection, EndOfStream, Event, Watchdog


class Unhealthy(Exception):
    """The watchdog gave up on the stream: ``state`` says why."""

    def __init__(self, state: str) -> None:
        super().__init__(f"the stream is unhealthy: {state}")
        self.state = state


def events(
    url: str, *, first_byte: float = 30.0, idle: float = 30.0, progress: float = 120.0
) -> Iterator[Event | Comment]:
    """Yield the stream's events and comments while the watchdog says it is healthy.

    Raises:
        Unhealthy: no first byte within ``first_byte`` s, or no event for ``progress`` s.
        httpx.ReadTimeout: no byte at all for ``idle`` seconds.
    """
    dog = Watchdog(first_byte=first_byte, idle=idle, progress=progress, now=time.monotonic())
    timeout = httpx.Timeout(10.0, read=max(first_byte, idle))
    conn = Connection()
    with httpx.stream("GET", url, headers={"Accept": "text/event-stream"}, timeout=timeout) as r:
        r.raise_for_status()
        for chunk in r.iter_raw():
            now = time.monotonic()
            dog.saw_bytes(len(chunk), now)
            conn.receive_data(chunk)
            while (item := conn.next_event()) is not NEED_DATA:
                dog.saw_item(item, now)
                if isinstance(item, EndOfStream):
                    return
                yield item
            verdict = dog.check(time.monotonic())
            if not verdict.ok:
                raise Unhealthy(verdict.state)


def main(argv: list[str] | None = None) -> int:
    """Print every event; exit 1 when the watchdog (or a timeout) gives up."""
    parser = argparse.ArgumentParser(description="Read an SSE stream with a watchdog.")
    parser.add_argument("url")
    parser.add_argument("--first-byte", type=float, default=30.0, metavar="SECONDS")
    parser.add_argument("--idle", type=float, default=30.0, metavar="SECONDS")
    parser.add_argument("--progress", type=float, default=120.0, metavar="SECONDS")
    args = parser.parse_args(argv)
    try:
        for item in events(
            args.url, first_byte=args.first_byte, idle=args.idle, progress=args.progress
        ):
            if isinstance(item, Event):
                print(f"event {item.type!r}: {item.data!r}", flush=True)
    except (Unhealthy, httpx.HTTPError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
