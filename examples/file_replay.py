"""Replay a captured ``text/event-stream`` file through sse_sansio in fixed-size chunks.

What it shows: the parser does not care where bytes come from or how they are split.
The file is read ``--chunk-size`` bytes at a time (1 replays it byte by byte, the
harshest split a network can produce), each chunk goes to ``receive_data()``, and the
empty read at end of file becomes ``receive_data(b"")``, the end of the stream: here
``iter_events()`` does both.
Whatever the chunk size, the same items come out.

Run it on the sample capture, or on a stream saved with ``curl -N URL > FILE``::

    python examples/file_replay.py examples/demo.sse --chunk-size 1
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator

from sse_sansio import (
    Comment,
    EndOfStream,
    Event,
    ReceivedItem,
    RemoteProtocolError,
    iter_events,
)


def replay(path: str, chunk_size: int = 16) -> Iterator[ReceivedItem]:
    """Yield every item of the stream saved in ``path``, ending with its EndOfStream."""
    with open(path, "rb") as stream:
        # iter_events() feeds a chunk whenever the parser runs dry, and ends the stream
        # at the empty read at end of file; "yield" hands out the EndOfStream too.
        chunks = iter(lambda: stream.read(chunk_size), b"")
        yield from iter_events(chunks, end_of_stream="yield")


def describe(item: ReceivedItem) -> str:
    """One line for an item; long data is shortened."""
    if isinstance(item, Event):
        more = f"... ({len(item.data)} chars)" if len(item.data) > 60 else ""
        return f"event {item.type!r} id={item.id!r}: {item.data[:60]!r}{more}"
    if isinstance(item, Comment):
        return f"comment {item.text!r}"
    return f"end of stream (truncated={item.truncated})"


def main(argv: list[str] | None = None) -> int:
    """Print every item of the file; exit 1 if the capture ends in the middle of an event."""
    parser = argparse.ArgumentParser(description="Replay a captured SSE stream in chunks.")
    parser.add_argument("path", help="a captured text/event-stream body")
    parser.add_argument("--chunk-size", type=int, default=16, metavar="N")
    args = parser.parse_args(argv)
    if args.chunk_size < 1:
        parser.error("--chunk-size must be at least 1")
    # ---- replay and print ---------------------------------------------------------------
    try:
        for item in replay(args.path, args.chunk_size):
            print(describe(item))
            if isinstance(item, EndOfStream) and item.truncated:
                return 1
    except (OSError, RemoteProtocolError) as exc:  # no such file; invalid UTF-8
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
