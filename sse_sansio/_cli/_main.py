# The command line's front door: the arguments (_parser) and main(), which turns them
# into Connection options and an output style and owns every way out.
#
# Structure: _parser() declares the options, main() hands the opened input to
# _cassette.run_input(), which replays a cassette or records, and runs _run.run(), the
# read-feed-print loop.  A new output mode is an argument in _parser() and a branch
# where main() calls run_input(); a new exit status goes in _run.EXIT_STATUSES.

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

from sse_sansio._receive._implementation import IMPLEMENTATION
from sse_sansio._version import __version__
from sse_sansio.llm import DIALECT_NAMES

from ._cassette import run_input
from ._run import (
    EXIT_BROKEN_PIPE,
    EXIT_INTERRUPTED,
    EXIT_IO_ERROR,
    EXIT_STATUSES,
    EXIT_TERMINATED,
    MAX_CHUNK_SIZE,
    Terminated,
    error,
)

__all__ = ["main"]


def _size(limit: int | None) -> Callable[[str], int]:
    """An argparse type: a whole number from 1 to ``limit`` (no upper bound if None)."""

    def parse(text: str) -> int:
        try:
            number = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        if number < 1:
            raise argparse.ArgumentTypeError("must be at least 1")
        if limit is not None and number > limit:
            raise argparse.ArgumentTypeError(f"must be at most {limit}")
        return number

    return parse


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sse-sansio",
        description="Parse a text/event-stream and print one JSON object per item "
        "(event, comment, end of stream).",
        epilog="exit status:\n"
        + "".join(f"  {status:<3} {meaning}\n" for status, meaning in EXIT_STATUSES)
        + "A closed output pipe (| head) ends the program quietly, with status 141;\n"
        + "Ctrl-C ends it with 130 and a SIGTERM with 143 (a --record file is kept,\n"
        + "ended as a cut).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
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
        type=_size(MAX_CHUNK_SIZE),
        default=65536,
        metavar="N",
        help="feed the parser at most N bytes at a time (default 65536, at most "
        f"{MAX_CHUNK_SIZE}; 1 replays byte by byte)",
    )
    parser.add_argument(
        "--errors",
        choices=("strict", "replace"),
        default="strict",
        help="invalid UTF-8: fail (strict, the default) or decode to U+FFFD (replace)",
    )
    parser.add_argument(
        "--max-event-size",
        type=_size(None),
        default=None,
        metavar="BYTES",
        help="largest event accepted, in bytes (default: the library's 16 MiB)",
    )
    parser.add_argument(
        "--on-oversize",
        choices=("error", "skip"),
        default="error",
        help="an event over --max-event-size: fail with status 1 (error, the default) or "
        "skip it, say so on standard error and go on (skip)",
    )
    parser.add_argument(
        "--diagnostics",
        action="store_true",
        help="say on standard error what the spec tells a parser to ignore (unknown fields, "
        "an invalid retry, an id holding NUL, data-less blocks) and a stream that starts "
        "like something else (HTTP headers, chunk sizes, HTML, JSON, gzip)",
    )
    parser.add_argument(
        "--json-data",
        action="store_true",
        help='print an event\'s "data" decoded when it is JSON, with "data_is_json" '
        "saying whether it was",
    )
    parser.add_argument(
        "--timing",
        action="store_true",
        help='add "time", when the bytes that completed the item were read, in seconds '
        'since reading started, and "gap", the seconds since the previous item (for the '
        "first item, since reading started)",
    )
    parser.add_argument(
        "--llm",
        choices=DIALECT_NAMES,
        metavar="DIALECT",
        help=f"judge the stream as one streamed LLM response ({', '.join(DIALECT_NAMES)}) "
        "and print its outcome last, with its usage and a summary of the answer; exit 0 "
        "completed, 3 cut, 4 stopped, 5 failed",
    )
    # Cassettes (docs/cassettes.rst): a FILE whose first line is a cassette header is
    # replayed with its recorded chunks; _cassette_cli.py does both.
    parser.add_argument(
        "--record",
        metavar="CASSETTE",
        help="also save what was read, with its chunks and their times, as a cassette file",
    )
    parser.add_argument(
        "--pace",
        action="store_true",
        help="replaying a cassette: wait for each chunk's recorded time",
    )
    return parser


def _quiet_stdout() -> None:
    """After a broken pipe: point stdout at /dev/null, so that the interpreter's last
    flush at exit does not print "Exception ignored ... BrokenPipeError"."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return  # not a real file (a test's capture): nothing will be flushed to a pipe
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


def _terminate(signum: int, frame: object) -> None:
    raise Terminated


def _on_sigterm(recording: bool) -> Callable[[], None]:
    """While recording, make SIGTERM unwind like Ctrl-C, so that the cassette gets its
    end and its rename; return what puts the old handler back.  (Only the main thread
    may set a handler; elsewhere, as in a test's thread, nothing changes.)"""
    if not recording or threading.current_thread() is not threading.main_thread():
        return lambda: None
    old = signal.signal(signal.SIGTERM, _terminate)

    def restore() -> None:
        signal.signal(signal.SIGTERM, old)

    return restore


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m sse_sansio`` and the ``sse-sansio`` script."""
    args = _parser().parse_args(argv)
    options: dict[str, Any] = {
        "chunk_size": args.chunk_size,
        "errors": args.errors,
        "timing": args.timing,
        "json_data": args.json_data,
        "llm": args.llm,
    }
    if args.max_event_size is not None:
        options["max_event_size"] = args.max_event_size
    # Only when asked: these options take the connection off the compiled core.
    if args.on_oversize != "error":
        options["on_oversize"] = args.on_oversize
    if args.diagnostics:
        options["diagnostics"] = True
    # `sse-sansio - <&-` and `sse-sansio x.sse >&-` leave Python no stream at all.
    if sys.stdout is None:
        error("standard output is closed")
        return EXIT_IO_ERROR
    options.update(name=args.file, record=args.record, pace=args.pace)
    restore = _on_sigterm(args.record is not None)
    try:
        if args.file == "-":
            stdin = getattr(sys.stdin, "buffer", None)
            if stdin is None:
                error("standard input is closed")
                return EXIT_IO_ERROR
            return run_input(stdin, sys.stdout, **options)
        with open(args.file, "rb") as source:
            return run_input(source, sys.stdout, **options)
    except BrokenPipeError:
        _quiet_stdout()
        return EXIT_BROKEN_PIPE
    except OSError as exc:
        error(str(exc))
        return EXIT_IO_ERROR
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except Terminated:
        return EXIT_TERMINATED
    finally:
        restore()
