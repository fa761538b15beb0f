# The command line: replay or dump a text/event-stream as JSON lines.
#
#   python -m sse_sansio demo.sse --chunk-size 1
#   curl -N https://example.com/stream | sse-sansio -
#   curl -N https://example.com/stream | sse-sansio - --timing   # when each item came
#
# It is also the library's own end-to-end check: bytes are read in chunks of the
# requested size (read1, so a live pipe is shown as it arrives), each chunk goes to
# receive_data() unchanged, and every item is printed as soon as next_event() has it.

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from typing import IO, Any

from . import __version__
from ._connection import NEED_DATA
from ._errors import RemoteProtocolError
from ._events import Comment, EndOfStream, Event, ReceivedItem
from ._implementation import IMPLEMENTATION, Connection

__all__ = ["item_to_json", "main"]


def item_to_json(item: ReceivedItem) -> dict[str, Any]:
    """The JSON object the command line prints for an item, marked by ``kind``."""
    if isinstance(item, Event):
        return {
            "kind": "event",
            "type": item.type,
            "data": item.data,
            "id": item.id,
            "retry": item.retry,
            "start": item.start,
            "end": item.end,
        }
    if isinstance(item, Comment):
        return {"kind": "comment", "text": item.text, "start": item.start, "end": item.end}
    return {
        "kind": "end",
        "truncated": item.truncated,
        "partial_line": item.partial_line,
        "partial_event": item.partial_event,
    }


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sse-sansio",
        description="Parse a text/event-stream and print one JSON object per item "
        "(event, comment, end of stream).",
    )
    parser.add_argument("file", help="the stream to read, or - for standard input")
    parser.add_argument(
        "--version",
        action="version",
        version=f"sse-sansio {__version__} ({IMPLEMENTATION} core)",
        help="print the version and which core runs (compiled or python), then exit",
    )
    parser.add_argument(
        "--chunk-size",
        type=int,
        default=65536,
        metavar="N",
        help="feed the parser at most N bytes at a time (default 65536; 1 replays byte by byte)",
    )
    parser.add_argument(
        "--errors",
        choices=("strict", "replace"),
        default="strict",
        help="invalid UTF-8: fail (strict, the default) or decode to U+FFFD (replace)",
    )
    parser.add_argument(
        "--max-event-size",
        type=int,
        default=None,
        metavar="BYTES",
        help="largest event accepted, in bytes (default: the library's 16 MiB)",
    )
    parser.add_argument(
        "--timing",
        action="store_true",
        help='add "time", when the bytes that completed the item were read, in seconds '
        'since reading started, and "gap", the seconds since the previous item (for the '
        "first item, since reading started)",
    )
    return parser


def run(
    source: IO[bytes],
    out: IO[str],
    *,
    chunk_size: int,
    timing: bool = False,
    clock: Callable[[], float] = time.monotonic,
    **options: Any,
) -> int:
    """Feed ``source`` to a Connection and write JSON lines to ``out``; return the exit code.

    With ``timing``, each line also gets ``time`` (when the read that completed the item
    returned, in seconds since reading started, by ``clock``) and ``gap`` (seconds since
    the previous item's ``time``, or since the start for the first item).
    """
    conn = Connection(**options)
    read = getattr(source, "read1", source.read)
    started = previous = clock()
    try:
        while True:
            chunk = read(chunk_size)
            # The arrival time of every item this chunk completes: a live pipe's gaps
            # show the server's pacing (and the buffering on the way).
            arrived = clock()
            conn.receive_data(chunk)
            while True:
                item = conn.next_event()
                if item is NEED_DATA:
                    break
                record = item_to_json(item)
                if timing:
                    record["time"] = round(arrived - started, 6)
                    record["gap"] = round(arrived - previous, 6)
                    previous = arrived
                out.write(json.dumps(record, ensure_ascii=False) + "\n")
                if isinstance(item, EndOfStream):
                    out.flush()
                    return 0
            out.flush()
    except RemoteProtocolError as exc:
        out.flush()
        print(f"sse-sansio: error: {exc}", file=sys.stderr)
        return 1


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m sse_sansio`` and the ``sse-sansio`` script."""
    args = _parser().parse_args(argv)
    if args.chunk_size < 1:
        _parser().error("--chunk-size must be at least 1")
    options: dict[str, Any] = {"errors": args.errors, "timing": args.timing}
    if args.max_event_size is not None:
        if args.max_event_size < 1:
            _parser().error("--max-event-size must be at least 1")
        options["max_event_size"] = args.max_event_size
    try:
        if args.file == "-":
            return run(sys.stdin.buffer, sys.stdout, chunk_size=args.chunk_size, **options)
        with open(args.file, "rb") as source:
            return run(source, sys.stdout, chunk_size=args.chunk_size, **options)
    except OSError as exc:
        print(f"sse-sansio: error: {exc}", file=sys.stderr)
        return 2
