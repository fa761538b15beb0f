"""Read a Server-Sent Events stream with httpx, reconnecting as a browser would.

What it shows: the three client-side helpers around one httpx loop.
``ReconnectPlanner`` decides every attempt (when to connect, with which headers,
``Last-Event-ID`` included) and when to stop; ``planner.events()`` checks the response
(200 and ``text/event-stream``, or an error that shows the body) and feeds
``response.iter_raw()`` through ``iter_events()``, which ends the stream itself, so a
cut mid-event raises ``TruncatedStreamError`` instead of passing unnoticed.  The
planner never sleeps or reads the clock: this loop does.

Errors: every attempt's end goes to the planner, which reconnects after a network error,
a cut or a clean end, and stops on a 204, a response that is not an event stream, or a
protocol error (invalid UTF-8, an event too large) that would only repeat.  ``main()``
prints why it stopped and exits 1 on a failure, never with a traceback.

Run it against the example server (or any SSE endpoint)::

    python examples/server.py --port 8000 &
    python examples/httpx_client.py http://127.0.0.1:8000/ --mode single [--last-event-id 3]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterator

import httpx

import sse_sansio
from sse_sansio import Comment, Event, Reconnect, ReconnectPlanner


def events(
    url: str,
    planner: ReconnectPlanner | None = None,
    *,
    read_timeout: float = 60.0,
    report: Callable[[str], object] = lambda reason: None,
) -> Iterator[Event | Comment]:
    """Yield the stream's events and comments across reconnections, until it stops.

    ``report`` gets one line for each reconnection (why, and when).

    Raises:
        The exception that made the planner stop, if it was a failure: a
        ``sse_sansio.ResponseError`` (not a stream), a ``RemoteProtocolError``, or the
        last ``httpx.TransportError`` when it gave up.  A 204 just ends the iteration.
    """
    plan = planner or ReconnectPlanner()
    step = plan.start(now=time.monotonic())
    # A read timeout longer than the server's keepalive interval: a silent stream is dead.
    with httpx.Client(timeout=httpx.Timeout(10.0, read=read_timeout)) as client:
        while isinstance(step, Reconnect):
            time.sleep(step.delay)
            error: Exception | None = None
            try:
                with client.stream("GET", url, headers=step.headers) as response:
                    yield from plan.events(
                        response.iter_raw(), response.status_code, response.headers
                    )
            except (httpx.TransportError, sse_sansio.ProtocolError) as exc:
                error = exc
            step = plan.ended(error, now=time.monotonic())
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
    parser = argparse.ArgumentParser(description="Read an SSE stream with httpx.")
    parser.add_argument("url")
    parser.add_argument("--last-event-id", default="", help="resume after this event ID")
    parser.add_argument("--max-attempts", type=int, default=5, help="failures in a row")
    parser.add_argument(
        "--mode",
        choices=["eventsource", "single"],
        default="eventsource",
        help="eventsource: reconnect after a clean end too; single: a clean end is done",
    )
    args = parser.parse_args(argv)
    plan = ReconnectPlanner(
        mode=args.mode, last_event_id=args.last_event_id, max_attempts=args.max_attempts
    )
    try:
        for item in events(args.url, plan, report=lambda why: print(why, file=sys.stderr)):
            print(describe(item), flush=True)
    except (httpx.HTTPError, sse_sansio.ProtocolError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    assert plan.stopped is not None
    print(f"stopped: {plan.stopped.reason}", file=sys.stderr)
    return 1 if plan.stopped.failed else 0


if __name__ == "__main__":
    sys.exit(main())
