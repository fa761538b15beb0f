# ``sse-sansio FILE --llm DIALECT``: print the items as the plain command line does, then
# the outcome of the response as the last JSON line, and exit with its status.
#
# _cli.py (the plain command line) only adds the flag and calls main() here, so that
# the judging lives with the llm module.  Exit statuses, from the command line's shared
# table: 0 completed, 3 cut, 4 stopped, 5 failed, 1 a protocol error (the parser's, or
# a payload that is not JSON), 74 the input or output failed (EX_IOERR), and 141 (quietly)
# when the reader of the output went away.

from __future__ import annotations

import argparse
import json
import os
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
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE: what a shell shows for a tool a closed pipe ended


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


def main(args: argparse.Namespace) -> int:
    """Run ``--llm`` for the parsed (and checked) command line; return the exit status."""
    options: dict[str, Any] = {"errors": args.errors, "timing": args.timing}
    if args.max_event_size is not None:
        options["max_event_size"] = args.max_event_size
    try:
        if args.file == "-":
            stdin = getattr(sys.stdin, "buffer", None)
            if stdin is None:  # `sse-sansio - <&-` leaves Python no standard input
                print("sse-sansio: error: standard input is closed", file=sys.stderr)
                return EX_IOERR
            return run(args.llm, stdin, sys.stdout, chunk_size=args.chunk_size, **options)
        with open(args.file, "rb") as source:
            return run(args.llm, source, sys.stdout, chunk_size=args.chunk_size, **options)
    except BrokenPipeError:
        # The reader went away (`| head -1`): end quietly, as standard tools do.
        _quiet_stdout()
        return EXIT_BROKEN_PIPE
    except OSError as exc:
        print(f"sse-sansio: error: {exc}", file=sys.stderr)
        return EX_IOERR


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's flush at exit stays silent."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return  # not a real file (a test's capture): nothing will reach a pipe
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)
