"""Survive an oversized event: skip it, log where it was, and keep the stream.

What it shows: ``on_oversize="skip"``.  By default an event over ``max_event_size``
fails the connection, and a reconnect with its Last-Event-ID gets the same event again,
and fails again.  With ``on_oversize="skip"`` the parser drops the event as it arrives
(memory stays bounded however large it is), hands out a ``SkippedEvent`` saying where it
was, how large it was and its type and id, and goes on with the next event.  Its ``id``
still takes effect, so ``last_event_id`` is what a reconnect should send: past the event
that could not be taken.

Run it on a capture with a 1 MiB limit::

    python examples/skip_oversize.py capture.sse --max-event-size 1048576
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterable, Iterator

# issue 15's item class (the ignore is for a checkout that predates it).
from sse_sansio import (
    Connection,
    Event,
    OptInItem,
    RemoteProtocolError,
    SkippedEvent,
    iter_events,
)

MAX_EVENT_SIZE = 1 << 20


def skipping(max_event_size: int = MAX_EVENT_SIZE) -> Connection[OptInItem]:
    """A connection that skips the events over ``max_event_size`` instead of failing."""
    return Connection(max_event_size=max_event_size, on_oversize="skip")


def events_within(
    chunks: Iterable[bytes], conn: Connection[OptInItem], *, log: Callable[[str], None]
) -> Iterator[Event]:
    """The events of the stream that fit in the connection's limit; the others are logged.

    Afterwards ``conn.last_event_id`` is the ID to reconnect with: a skipped event's
    ``id`` counts, so the server does not send that event again.
    """
    for item in iter_events(chunks, connection=conn):
        if isinstance(item, SkippedEvent):
            log(
                f"skipped a {item.type!r} event of {item.size} bytes at byte {item.start} "
                f"(id {item.id!r}): over the size limit"
            )
        elif isinstance(item, Event):
            yield item


def main(argv: list[str] | None = None) -> int:
    """Print the events that fit; log the ones skipped to standard error."""
    parser = argparse.ArgumentParser(description="Read a stream, skipping huge events.")
    parser.add_argument("path", help="a captured text/event-stream body")
    parser.add_argument("--max-event-size", type=int, default=MAX_EVENT_SIZE, metavar="BYTES")
    args = parser.parse_args(argv)

    def log(line: str) -> None:
        print(line, file=sys.stderr)

    conn = skipping(args.max_event_size)
    try:
        with open(args.path, "rb") as stream:
            chunks = iter(lambda: stream.read(1 << 16), b"")
            for event in events_within(chunks, conn, log=log):
                print(f"event {event.type!r} id={event.id!r}: {len(event.data)} characters")
    except (OSError, RemoteProtocolError) as exc:  # also a stream cut inside an event
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"reconnect with Last-Event-ID: {conn.last_event_id!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
