# The command line's read-feed-print loop and its vocabulary: exit statuses, the JSON
# each item prints as, and the one-line error on standard error.
#
#   python -m sse_sansio examples/tour.sse --chunk-size 1
#   curl -N https://example.com/stream | sse-sansio -
#   curl -N https://example.com/stream | sse-sansio - --timing   # when each item came
#
# It is also the library's own end-to-end check: bytes are read in chunks of the
# requested size (read1, so a live pipe is shown as it arrives), each chunk goes to
# receive_data() unchanged, and every item is printed as soon as next_event() has it.
#
# A debugging tool for streams ends with a status a script can test, never with a
# traceback (the table is EXIT_STATUSES below, printed by --help): 0 for a clean end, 3
# for a cut one, 1 for a protocol error (after every item before it), 2 for bad
# arguments, 4 and 5 for an LLM answer stopped or failed (--llm), 6 for input that is
# not an event stream at all, 74 (EX_IOERR) when the input cannot be read or the output
# written.  A closed output pipe (``| head -1``) ends the program quietly with 141, the
# status a shell shows for standard tools that SIGPIPE ended.
#
# What the parser ignores or skips goes to standard error, one line per item, so that
# stdout stays the same JSON lines: --diagnostics reports each Diagnostic and
# --on-oversize skip each SkippedEvent (docs/huge-input.rst); a skipped event leaves the
# exit status alone.  There is no --piece-size: the command line prints whole events,
# and pieces are for a program that writes a huge event somewhere as it arrives.
#
# Doors: this module is the bottom of the command line; _cassette.py (cassette input)
# and _main.py (arguments, every way out) build on it, and it imports neither.

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from typing import IO, Any

from sse_sansio._errors import RemoteProtocolError
from sse_sansio._events import Comment, EndOfStream, Event, ReceivedItem
from sse_sansio._excerpt import describe_body, json_message
from sse_sansio._receive._connection import NEED_DATA
from sse_sansio._receive._diagnostics import SNIFF_BYTES, sniff_start
from sse_sansio._receive._implementation import Connection
from sse_sansio.llm import Outcome, Tracker

__all__ = [
    "EXIT_STATUSES",
    "Terminated",
    "error",
    "item_to_json",
    "run",
]

EXIT_CLEAN = 0
EXIT_PROTOCOL_ERROR = 1
EXIT_USAGE = 2  # what argparse exits with
EXIT_TRUNCATED = 3
EXIT_STOPPED = 4  # --llm
EXIT_FAILED = 5  # --llm
EXIT_NOT_A_STREAM = 6
EXIT_IO_ERROR = 74  # EX_IOERR, sysexits.h
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE
EXIT_INTERRUPTED = 130  # 128 + SIGINT
EXIT_TERMINATED = 143  # 128 + SIGTERM


class Terminated(BaseException):
    """A SIGTERM, raised where the program was (while recording): like Ctrl-C, it
    unwinds every ``finally`` (the recording ends as a cut) and no ``except Exception``
    takes it for a failed read."""


EXIT_STATUSES = (
    (EXIT_CLEAN, "the stream ended cleanly"),
    (EXIT_PROTOCOL_ERROR, "a protocol error: invalid UTF-8, or an event over --max-event-size"),
    (EXIT_USAGE, "bad arguments"),
    (EXIT_TRUNCATED, 'the stream was cut: the "end" item has "truncated": true (--llm: cut)'),
    (EXIT_STOPPED, "--llm: the model stopped short (a token limit, a filter, a refusal)"),
    (
        EXIT_FAILED,
        "--llm: the API reported an error in the stream, or the body is not an event stream",
    ),
    (
        EXIT_NOT_A_STREAM,
        "the input is not an event stream (gzip bytes, an HTML page, a JSON body)",
    ),
    (EXIT_IO_ERROR, "the input cannot be read or the output cannot be written"),
)

# The largest --chunk-size: reads allocate their size up front, and a bigger chunk
# changes nothing a parser could show.
MAX_CHUNK_SIZE = 1 << 30
# How many of the latest bytes read are kept to quote the bytes around an error's
# offset, and how many bytes each side of it are quoted.
RECENT_BYTES = 1 << 16
EXCERPT_RADIUS = 16


def item_to_json(item: ReceivedItem, *, json_data: bool = False) -> dict[str, Any]:
    """The JSON object the command line prints for an item, marked by ``kind``.

    With ``json_data``, an event's ``data`` that is a JSON text is given decoded, and
    ``data_is_json`` says whether it was (``'"x"'`` and ``'x'`` both print as ``"x"``).
    """
    if isinstance(item, Event):
        record: dict[str, Any] = {
            "kind": "event",
            "type": item.type,
            "data": item.data,
            "id": item.id,
            "retry": item.retry,
            "start": item.start,
            "end": item.end,
        }
        if json_data:
            record["data"], record["data_is_json"] = _decoded(item.data)
        return record
    if isinstance(item, Comment):
        return {"kind": "comment", "text": item.text, "start": item.start, "end": item.end}
    return {
        "kind": "end",
        "truncated": item.truncated,
        "partial_line": item.partial_line,
        "partial_event": item.partial_event,
    }


def _decoded(data: str) -> tuple[Any, bool]:
    """``(value, True)`` when ``data`` is a JSON text that prints back as JSON, else
    ``(data, False)``.  NaN and Infinity are not JSON (RFC 8259), and a number too long
    or a nesting too deep to decode or encode again is left as text."""
    try:
        value = json.loads(data, parse_constant=_not_json)
        json.dumps(value, allow_nan=False)
    except (ValueError, RecursionError):
        return data, False
    return value, True


def _not_json(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


class _Recent:
    """The latest bytes read (at most ``size``), to quote the bytes around an offset."""

    def __init__(self, size: int = RECENT_BYTES) -> None:
        self.size = size
        self.start = 0  # stream offset of self.data[0]
        self.data = bytearray()

    def add(self, chunk: bytes) -> None:
        self.data += chunk
        excess = len(self.data) - self.size
        if excess > 0:
            del self.data[:excess]
            self.start += excess

    def excerpt(self, offset: int) -> str | None:
        """Two lines: the escaped bytes around ``offset`` and a caret under its byte;
        None when that byte is no longer (or not yet) held."""
        at = offset - self.start
        if not 0 <= at < len(self.data):
            return None
        low = max(at - EXCERPT_RADIUS, 0)
        high = min(at + EXCERPT_RADIUS, len(self.data))
        before = _escaped(self.data[low:at])
        label = f"bytes {self.start + low} to {self.start + high - 1}: "
        return f"  {label}{before}{_escaped(self.data[at:high])}\n  {' ' * len(label + before)}^"


def _escaped(data: bytes | bytearray) -> str:
    """Printable ASCII as itself, every other byte as a Python escape (``\\n``, ``\\xff``)."""
    return repr(bytes(data))[2:-1]


def _write(out: IO[str], record: dict[str, Any]) -> None:
    try:
        out.write(json.dumps(record, ensure_ascii=False) + "\n")
    except UnicodeEncodeError:
        # The output's encoding (PYTHONIOENCODING=ascii, a C locale) cannot write the
        # text: the same JSON, with \u escapes, can be written anywhere.
        out.write(json.dumps(record) + "\n")


def run(
    source: IO[bytes],
    out: IO[str],
    *,
    chunk_size: int,
    timing: bool = False,
    json_data: bool = False,
    llm: str | None = None,
    clock: Callable[[], float] = time.monotonic,
    **options: Any,
) -> int:
    """Feed ``source`` to a Connection and write JSON lines to ``out``; return the exit code.

    The code is 0 for a clean end of stream, 3 for a cut one, 1 for a protocol error
    (after the items before it; the message and the bytes around its offset go to
    standard error).  With ``timing``, each line also gets ``time`` (when the read that
    completed the item returned, in seconds since reading started, by ``clock``) and
    ``gap`` (seconds since the previous item's ``time``, or since the start for the
    first item).  ``json_data`` is item_to_json()'s.  With ``llm`` (a dialect name of
    :mod:`sse_sansio.llm`), every item also goes to a Tracker, its outcome is the last
    line, and the code is the outcome's (0 completed, 3 cut, 4 stopped, 5 failed; 1 for
    data that is not the JSON its dialect documents).
    """
    conn = Connection(**options)
    tracker = None if llm is None else Tracker(llm)
    read = getattr(source, "read1", source.read)
    recent = _Recent()
    head: bytearray | None = bytearray()  # the start, held until it is judged
    started = previous = clock()
    try:
        while True:
            chunk = read(chunk_size)
            # The arrival time of every item this chunk completes: a live pipe's gaps
            # show the server's pacing (and the buffering on the way).
            arrived = clock()
            if head is not None:
                head += chunk
                shape = _shape(head, ended=not chunk)
                if shape == "undecided":
                    continue
                if shape is not None:
                    _read_more(head, read, chunk_size, ended=not chunk)
                    return _not_a_stream(out, bytes(head), tracker)
                # An event stream: parse what was held (and then the end, if it came).
                if chunk:
                    chunk = bytes(head)
                elif head:
                    held = bytes(head)
                    recent.add(held)
                    conn.receive_data(held)
                head = None
            recent.add(chunk)
            conn.receive_data(chunk)
            while True:
                item = conn.next_event()
                if item is NEED_DATA:
                    break
                if not isinstance(item, _PRINTED):
                    _note(item)
                    continue
                record = item_to_json(item, json_data=json_data)
                if timing:
                    record["time"] = round(arrived - started, 6)
                    record["gap"] = round(arrived - previous, 6)
                    previous = arrived
                _write(out, record)
                if tracker is not None:
                    tracker.feed(item)
                if isinstance(item, EndOfStream):
                    if tracker is not None:
                        outcome = tracker.end(truncated=item.truncated)
                        _write(out, {**outcome.to_json(), "answer": _summary(tracker)})
                        out.flush()
                        return outcome.exit_status
                    out.flush()
                    return EXIT_TRUNCATED if item.truncated else EXIT_CLEAN
            out.flush()
    except RemoteProtocolError as exc:
        out.flush()
        excerpt = recent.excerpt(exc.offset)
        error(str(exc) if excerpt is None else f"{exc}\n{excerpt}")
        return EXIT_PROTOCOL_ERROR


# The items printed on standard output; the others (Diagnostic, SkippedEvent) are noted
# on standard error.
_PRINTED = (Event, Comment, EndOfStream)

# What the start of the input may be, by sniff_start()'s codes, that is no event stream
# at all (a wrapped stream, such as one with its HTTP headers left in, still parses).
_NOT_A_STREAM = frozenset({"gzip", "html", "json"})
_BOM = b"\xef\xbb\xbf"


def _shape(head: bytearray, *, ended: bool) -> str | None:
    """The sniff_start() code of an input that is not an event stream, None for one
    that may be, "undecided" while its first line is still arriving."""
    start = head[len(_BOM) :] if head.startswith(_BOM) else head
    line_end = min((i for i in (start.find(b"\n"), start.find(b"\r")) if i >= 0), default=-1)
    gzip = start.startswith(b"\x1f\x8b")  # the magic bytes say it all
    if line_end < 0 and len(start) < SNIFF_BYTES and not ended and not gzip:
        return "undecided"
    first = bytes(start[: line_end + 1] if line_end >= 0 else start)[:SNIFF_BYTES]
    found = sniff_start(first)
    return found[0] if found is not None and found[0] in _NOT_A_STREAM else None


def _read_more(head: bytearray, read: Callable[[int], bytes], size: int, *, ended: bool) -> None:
    """Read on, up to RECENT_BYTES in all, for the message of a JSON error body."""
    while not ended and len(head) < RECENT_BYTES:
        chunk = read(min(size, RECENT_BYTES - len(head)))
        head += chunk
        ended = not chunk


def _not_a_stream(out: IO[str], body: bytes, tracker: Tracker | None) -> int:
    """Say that the input is not an event stream, what it is, and return the status:
    EXIT_NOT_A_STREAM, or with --llm an outcome line "failed" (EXIT_FAILED)."""
    body = body[len(_BOM) :] if body.startswith(_BOM) else body
    said = describe_body(body)
    if tracker is None:
        error(f"not an event stream: {said}")
        return EXIT_NOT_A_STREAM
    message = json_message(body.lstrip()) if body.lstrip()[:1] in (b"{", b"[") else None
    outcome = Outcome(
        outcome="failed",
        reason=f"the body is not an event stream: {said}",
        dialect=tracker.dialect,
        error_type="not-an-event-stream",
        error_message=message if message is not None else said,
        offset=0,
    )
    _write(out, {**outcome.to_json(), "answer": _summary(tracker)})
    out.flush()
    return outcome.exit_status


# How many characters of the answer's text the outcome line quotes.
SUMMARY_TEXT = 80


def _summary(tracker: Tracker) -> dict[str, Any]:
    """A short account of the answer for the outcome line: its text's length and
    start, the reasoning's length, and each tool call's name, id, and state."""
    answer = tracker.answer
    return {
        "complete": answer.complete,
        "text_chars": len(answer.text),
        "text_start": answer.text[:SUMMARY_TEXT],
        "reasoning_chars": len(answer.reasoning),
        "tool_calls": [
            {
                "name": call.name,
                "id": call.id,
                "complete": call.complete,
                "arguments_parse": call.arguments_json is not None,
            }
            for call in answer.tool_calls
        ],
    }


def _note(item: Any) -> None:
    """A Diagnostic or a SkippedEvent, as one line on standard error."""
    if sys.stderr is None:
        return
    code = getattr(item, "code", None)
    if code is not None:
        line = f"diagnostic at byte {item.start}: {code}: {item.message}"
    else:
        line = (
            f"skipped at byte {item.start}: an event of {item.size} bytes, over the size "
            f"limit (type {item.type!r}, id {item.id!r})"
        )
    print(f"sse-sansio: {line}", file=sys.stderr)


def error(message: str) -> None:
    """The message on standard error, if there is one to write to."""
    if sys.stderr is not None:
        print(f"sse-sansio: error: {message}", file=sys.stderr)
