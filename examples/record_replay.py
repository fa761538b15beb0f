"""Record a live stream into a cassette with httpx, then replay it as it arrived.

What it shows: ``record()`` wraps ``response.iter_raw()`` without changing the loop
around it, and keeps each chunk as it came, with its time and the way the stream ended;
the cassette file is JSON Lines, one chunk a line, so it diffs like text.  The replay
feeds the same chunks, at the same boundaries, to ``iter_events()``: a test gets the
items the live client got, offline, and a stream that was cut mid-event raises
``TruncatedStreamError`` again.  The response's secret headers (``Set-Cookie``, ...)
are left out of the file.

Run it against the example server (or any SSE endpoint)::

    python examples/server.py --port 8000 &
    python examples/record_replay.py record http://127.0.0.1:8000/ stream.jsonl
    python examples/record_replay.py replay stream.jsonl
"""

from __future__ import annotations

import argparse
import sys

import httpx

from sse_sansio import Comment, Event, RemoteProtocolError, iter_events
from sse_sansio.testing import Cassette, CassetteError, record, replay


def record_stream(url: str, path: str, *, timeout: float = 30.0) -> Cassette:
    """Read the stream at ``url`` to its end and save it as a cassette in ``path``.

    The cassette is saved however the stream ends: a network error is kept as its
    error end, and raised again.
    """
    with httpx.Client(timeout=timeout) as client, client.stream("GET", url) as response:
        metadata = {
            "url": url,
            "status": response.status_code,
            "headers": response.headers.multi_items(),
        }
        # The loop is the one a client without a recorder has: record() hands each
        # chunk on unchanged, after noting when it came.
        recorder = record(response.iter_raw(), metadata=metadata)
        try:
            for _chunk in recorder:
                pass  # a real client would parse here, too
        finally:
            recorder.cassette.save(path)
    return recorder.cassette


def replay_items(path: str) -> list[Event | Comment]:
    """The items of the cassette in ``path``, fed at its recorded chunk boundaries."""
    cassette = Cassette.load(path)
    return list(iter_events(chunk for _seconds, chunk in replay(cassette)))


def main(argv: list[str] | None = None) -> int:
    """``record URL FILE`` or ``replay FILE``; exit 1 on an error, with its message."""
    parser = argparse.ArgumentParser(description="Record or replay an SSE stream.")
    commands = parser.add_subparsers(dest="command", required=True)
    recording = commands.add_parser("record", help="record URL into FILE")
    recording.add_argument("url")
    recording.add_argument("file")
    replaying = commands.add_parser("replay", help="print the items of FILE")
    replaying.add_argument("file")
    args = parser.parse_args(argv)
    try:
        if args.command == "record":
            cassette = record_stream(args.url, args.file)
            print(f"{len(cassette.chunks)} chunks, {cassette.end} end, saved in {args.file}")
            return 0
        for item in replay_items(args.file):
            print(item)
    except (httpx.HTTPError, OSError, CassetteError, RemoteProtocolError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
