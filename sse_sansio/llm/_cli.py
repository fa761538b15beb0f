# ``sse-sansio FILE --llm DIALECT``: print the items as the plain command line does, then
# the outcome of the response as the last JSON line, and exit with its status.
#
# _cli.py (the plain command line) only adds the flag and calls main() here, so that
# the judging lives with the llm module.  Exit statuses, from the command line's shared
# table: 0 completed, 3 cut, 4 stopped, 5 failed, 1 a protocol error (the parser's, or
# a payload that is not JSON), 74 the input or output failed (EX_IOERR).

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import IO, Any

from sse_sansio._cli import item_to_json
from sse_sansio._connection import NEED_DATA, Connection
from sse_sansio._errors import RemoteProtocolError
from sse_sansio._events import EndOfStream

from ._tracker import Tracker

__all__ = ["main", "run"]

EX_IOERR = 74


def run(
    dialect: str,
    source: IO[bytes],
    out: IO[str],
    *,
    chunk_size: int,
    timing: bool = False,
    **options: Any,
) -> int:
    """Feed ``source`` to a Connection and a Tracker; write JSON lines; return the status."""
    conn = Connection(**options)
    tracker = Tracker(dialect)
    read = getattr(source, "read1", source.read)
    started = previous = time.monotonic()
    try:
        while True:
            chunk = read(chunk_size)
            arrived = time.monotonic()
            conn.receive_data(chunk)
            while (item := conn.next_event()) is not NEED_DATA:
                record = item_to_json(item)
                if timing:
                    record["time"] = round(arrived - started, 6)
                    record["gap"] = round(arrived - previous, 6)
                    previous = arrived
                out.write(json.dumps(record, ensure_ascii=False) + "\n")
                tracker.feed(item)
                if isinstance(item, EndOfStream):
                    outcome = tracker.end(truncated=item.truncated)
                    out.write(json.dumps(outcome.to_json(), ensure_ascii=False) + "\n")
                    out.flush()
                    return outcome.exit_status
            out.flush()
    except RemoteProtocolError as exc:
        out.flush()
        print(f"sse-sansio: error: {exc}", file=sys.stderr)
        return 1


def main(args: argparse.Namespace, options: dict[str, Any]) -> int:
    """Run ``--llm`` for the parsed command line (``options``: the Connection's, and timing)."""
    try:
        if args.file == "-":
            return run(
                args.llm, sys.stdin.buffer, sys.stdout, chunk_size=args.chunk_size, **options
            )
        with open(args.file, "rb") as source:
            return run(args.llm, source, sys.stdout, chunk_size=args.chunk_size, **options)
    except OSError as exc:
        print(f"sse-sansio: error: {exc}", file=sys.stderr)
        return EX_IOERR
