# The receive state machine: bytes in, events out, no I/O.
#
# Spec: WHATWG HTML, "Server-sent events", section 9.2.6 "Interpreting an event stream"
# https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation
# The spec's steps are quoted beside the code that implements them (marked "Spec:").
#
# Strategy.  receive_data() only queues the chunk it is given.  The parser proper is
# one generator, _parse(), that next_event() resumes once per item; its locals hold the
# line loop's state, so handing out an item costs one resume.  It takes the queued
# chunks in order, in windows of at most WINDOW bytes, and splits each window into
# lines with one C-level bytes.split().  CR and LF never occur inside a UTF-8 multibyte
# sequence, so lines can be cut on bytes and decoded whole.  A line cut by the end of a
# chunk waits in a bytearray that grows in place (so a line arriving a byte at a time is
# not copied once per byte).  Where a window holds a run of blocks of one shape (the
# usual LLM stream: "data: {json}" blocks, or "event:" and "data:" pairs, or ": ping"
# keep-alives), uniform_blocks() in _uniform.py reads the run column by column with
# C-level iterators, and the line loop goes on after it.
#
# Invariants, and why the whole thing is linear in the bytes received:
# - Each byte is searched and split a bounded number of times: once in its window, once
#   more in the join of a cut line, once in the rare window that mixes kinds of line end
#   (where _uniform_runs() finds the runs with forward searches that never go back).
# - The data buffer is its lines, joined at dispatch (and every FOLD_LINES lines, so
#   that short lines' string headers stay a small fraction of it); each line is copied
#   at most twice.
# - Lines not yet walked exist for at most one window, and the generator stops at each
#   item, or at each run of at most BATCH_BLOCKS items read at once: a huge
#   receive_data() holding a million events never builds a million objects before the
#   caller asks for them (the pull model is the back-pressure).
# - Memory held is the queued chunks (what the caller passed and has not drained), one
#   window, and the event being assembled, which max_event_size bounds; a line is held
#   once while it arrives, twice for a moment when it ends (bytes, then text).
#
# Measured, not guessed: each speed trick below says why it is there, and the commit
# that made it gives what it saved in instructions counted by callgrind (deterministic,
# unlike time on a shared machine); benchmarks/ compares the result with the other
# Python SSE parsers.

from __future__ import annotations

import codecs
import enum
import functools
import re
import sys
from collections import deque
from collections.abc import Iterator
from contextlib import suppress
from itertools import chain
from typing import Final, Literal, NoReturn

from ._errors import LocalProtocolError, RemoteProtocolError
from ._events import Comment, EndOfStream, Event
from ._uniform import MIN_BLOCKS, uniform_blocks

__all__ = ["DEFAULT_MAX_EVENT_SIZE", "NEED_DATA", "Connection", "NeedData"]

# The default limit on one event's size in the stream, from the first byte of its block
# (comments inside it count) up to the blank line that dispatches it.  The line end that
# ends the current line is never counted: a CR ending a chunk may be half a CRLF, and
# the limit must not depend on how the stream was chunked.
#
# 16 MiB.  LLM APIs send single events far larger than a text delta: OpenAI's image
# generation streams base64 partial images of 1 to 4 MB in one data line, and tool
# results or reasoning summaries can reach megabytes.  A 64 KiB cap (common in Go and
# Java clients, where bufio.Scanner defaults to 64 KiB lines) is a known foot-gun for
# exactly this traffic; no cap at all lets one peer exhaust a proxy's memory.  16 MiB is
# four times the largest payload we know of, yet a thousand connections filled to the
# limit still fit in 16 GiB.  For comparison, eventsource-parser has no default limit
# and h11 caps HTTP headers at 16 KiB.  Pass ``max_event_size=None`` for no limit.
DEFAULT_MAX_EVENT_SIZE: Final = 16 * 1024 * 1024

# The most bytes split into lines at once.  Big enough that the per-window costs (a
# few C-level searches, one split) vanish against the per-line ones, small enough that
# the list of lines waiting in a window stays a constant-size allocation.
WINDOW: Final = 64 * 1024

# The data buffer joins every this many lines into one string (see _parse).
FOLD_LINES: Final = 256

# Data lines longer than this are decoded without their "data:" prefix (see _parse).
BIG_LINE: Final = 64 * 1024

# A line still arriving moves to an exact-size bytes object every this many bytes
# (see _parse).
SPILL: Final = 256 * 1024

_BOM: Final = b"\xef\xbb\xbf"
_NO_LIMIT: Final = sys.maxsize
# A line end that is not part of a CRLF: a CR not followed by LF, an LF not after CR.
_LONE_LINE_END: Final = re.compile(rb"\r(?!\n)|(?<!\r)\n")


class NeedData(enum.Enum):
    """The type of the ``NEED_DATA`` sentinel (an enum, so type checkers narrow on it)."""

    NEED_DATA = "NEED_DATA"

    def __repr__(self) -> str:
        return "NEED_DATA"


#: Returned by ``next_event()`` when no complete item is buffered: call
#: ``receive_data()`` with more bytes (or ``b""`` at end of stream).
NEED_DATA: Final = NeedData.NEED_DATA


class Connection:
    """The receiving side of one ``text/event-stream``, as a sans-I/O state machine.

    Feed it bytes with :meth:`receive_data` and pull items with :meth:`next_event`::

        conn = Connection()
        while True:
            chunk = sock.recv(65536)        # b"" at end of stream
            conn.receive_data(chunk)
            while True:
                item = conn.next_event()
                if item is NEED_DATA:
                    break                   # read more
                if isinstance(item, EndOfStream):
                    return                  # item.truncated says if it was cut off
                handle(item)                # an Event or a Comment

    Args:
        errors: ``"strict"`` (the default) raises :class:`RemoteProtocolError` on
            invalid UTF-8 anywhere in the stream, comments included, and on a sequence
            left unfinished at end of stream.  ``"replace"`` decodes as browsers do,
            putting U+FFFD in place of each invalid sequence (WHATWG Encoding).
        last_event_id: The initial last event ID string, as after a reconnect that sent
            ``Last-Event-ID``.  Events carry it in ``id`` until the stream sets another.
        max_event_size: The most bytes one event may take in the stream: from the
            first byte of its block (comments included) up to its dispatching blank
            line, leaving out only that blank line's own line end; a line still
            arriving counts with the bytes it has so far.  A peer that exceeds it gets
            a :class:`RemoteProtocolError`.  ``None`` means no limit.  Default:
            :data:`DEFAULT_MAX_EVENT_SIZE` (16 MiB).  In keep_raw mode, bytes waiting
            for :meth:`take_raw` may not exceed it either (LocalProtocolError).
        keep_raw: When true, each item carries in ``raw`` the exact bytes a verbatim
            proxy should forward for it, and :meth:`take_raw` hands out the bytes that
            belong to no item (blank lines, ``id:``-only blocks).  Forwarding all of
            them reproduces the stream byte for byte, never half an event.

    Failure is final.  Once :meth:`next_event` has raised, whatever it raised, the
    connection is *failed*: it never parses again, and every later
    :meth:`next_event` and :meth:`receive_data` (also through a saved
    ``nxt = conn.next_event``) raises at once.  After a :class:`RemoteProtocolError`
    that is the same error again (same message and ``offset``).  After any other
    exception (a :class:`KeyboardInterrupt`, a :class:`MemoryError`, an exception from
    a signal handler, a bug) it is a :class:`LocalProtocolError` saying "the connection
    failed earlier: <type>: <message>", with the original exception as ``__cause__``:
    the parser may have stopped half-way through a step, so its state is not trusted.
    The items returned before stand; :attr:`last_event_id` and :attr:`retry` stay
    readable, for a reconnect.
    """

    def __init__(
        self,
        *,
        errors: Literal["strict", "replace"] = "strict",
        last_event_id: str = "",
        max_event_size: int | None = DEFAULT_MAX_EVENT_SIZE,
        keep_raw: bool = False,
    ) -> None:
        if errors not in ("strict", "replace"):
            raise ValueError(f'errors must be "strict" or "replace", not {errors!r}')
        if not isinstance(last_event_id, str):
            raise TypeError(f"last_event_id must be str, not {type(last_event_id).__name__}")
        if "\0" in last_event_id or "\r" in last_event_id or "\n" in last_event_id:
            # The stream itself can never set such an ID; refusing it here also keeps
            # it from being sent back in a Last-Event-ID header.
            raise ValueError("last_event_id may not contain NUL, CR or LF")
        if max_event_size is not None and (
            isinstance(max_event_size, bool)
            or not isinstance(max_event_size, int)
            or max_event_size < 1
        ):
            raise ValueError(
                f"max_event_size must be a positive int or None, not {max_event_size!r}"
            )
        self._strict = errors == "strict"
        self._limit = _NO_LIMIT if max_event_size is None else max_event_size
        self._keep_raw = bool(keep_raw)

        self._chunks: deque[bytes] = deque()  # received, not yet taken by _parse()
        self._eof = False
        self._eos: EndOfStream | None = None  # returned on every call once drained
        self._error: BaseException | None = None  # what failed the connection, once failed

        # What outlives the parsing loop (the rest lives in _parse()'s locals).
        self._last_event_id = last_event_id  # the spec's last event ID string
        self._retry: int | None = None  # the spec's reconnection time

        # keep_raw mode: the received bytes not yet handed out, from stream offset
        # _raw_from on; bytes before _safe_end are safe to hand out.
        self._raw = bytearray()
        self._raw_from = 0
        self._safe_end = 0

        # _plain: no error, no end of stream, no keep_raw: receive_data() may just queue.
        self._plain = not self._keep_raw
        # The parser generator, then, once an exception has ended it, an iterator that
        # raises the sticky error on every call: chain() moves to it when the finished
        # generator gives nothing more, so even a saved conn.next_event goes on raising.
        items = chain(self._parse(last_event_id), iter(self._raise_error, None))
        self._items = items.__next__
        # Speed: the instance's next_event calls that chain from C (no Python frame, as
        # the method below has), through a partial that carries the method's docstring.
        self.next_event = _NextEvent(next, items)  # type: ignore[method-assign]

    # ------------------------------------------------------------------ public state

    @property
    def last_event_id(self) -> str:
        """The spec's last event ID string after all input processed so far.

        Set from the ``id`` field at every blank line, including one that ends a block
        without data, so an ``id:``-only block is never lost; never at end of stream.
        Send it as ``Last-Event-ID`` when reconnecting.
        """
        return self._last_event_id

    @property
    def retry(self) -> int | None:
        """The reconnection time in milliseconds (the latest valid ``retry`` field), or
        ``None`` if the stream never set one.  It takes effect as soon as its line is
        complete, even when its block never dispatches an event."""
        return self._retry

    # ------------------------------------------------------------------ receiving

    def receive_data(self, data: bytes | bytearray | memoryview) -> None:
        """Add bytes received from the peer; ``b""`` means the stream ended.

        This only buffers: call :meth:`next_event` to get what the bytes complete.
        Ending the stream more than once is harmless.

        Raises:
            LocalProtocolError: non-empty data after the end of stream, or the
                connection failed earlier on an exception other than a protocol error.
            RemoteProtocolError: the connection already failed (the same error again).
            TypeError: data is not bytes, bytearray or memoryview.
        """
        if type(data) is bytes and data and self._plain:
            self._chunks.append(data)  # the common case, kept short
            return
        if self._error is not None:
            self._raise_error()
        if type(data) is not bytes:
            if not isinstance(data, (bytearray, memoryview)):
                raise TypeError(f"receive_data() takes bytes, not {type(data).__name__}")
            data = bytes(data)  # a copy: the caller may reuse its buffer
        if not data:
            self._eof = True
            self._plain = False
            return
        if self._eof:
            raise LocalProtocolError("receive_data() called with data after end of stream")
        if self._keep_raw:
            if self._safe_end - self._raw_from > self._limit:
                # The caller keeps feeding without taking what is safe to forward.
                raise LocalProtocolError(
                    f"{self._safe_end - self._raw_from} bytes are waiting for take_raw(), "
                    f"more than max_event_size={self._limit}: call take_raw() at every "
                    "NEED_DATA"
                )
            self._raw += data
        self._chunks.append(data)

    def next_event(self) -> Event | Comment | EndOfStream | NeedData:
        """Return the next complete item, or ``NEED_DATA``.

        Items come in stream order: an :class:`Event` when a blank line dispatches one,
        a :class:`Comment` for each comment line, and, once the stream has ended and
        every complete item has been returned, an :class:`EndOfStream`, again on every
        later call.  Call it until it returns ``NEED_DATA`` (feed more bytes) or an
        ``EndOfStream`` (stop): it parses only as far as the item it returns (or, in a run
        of same-shaped blocks, at most 128 items ahead; the connection's state and any
        error still come in stream order).

        Raises:
            RemoteProtocolError: the peer sent invalid UTF-8 (strict mode) or an event
                over ``max_event_size``.  Every item completed before the bad byte has
                already been returned.  The error is sticky: every later call raises
                it again.
            LocalProtocolError: an earlier call failed on another exception (see the
                class docstring); the parser never resumes after one.
        """
        return self._items()

    def _parse(self, last_event_id: str) -> Iterator[Event | Comment | EndOfStream | NeedData]:
        """The parser, as a generator that next_event() resumes once per item."""
        try:
            yield from self._parse_stream(last_event_id)
        except BaseException as exc:
            # Whatever ended the generator (a protocol error, a signal handler's
            # exception, MemoryError, a bug), its state may be half-updated: the
            # connection is failed for good.
            self._error = exc
            self._plain = False
            raise

    def _parse_stream(
        self, last_event_id: str
    ) -> Iterator[Event | Comment | EndOfStream | NeedData]:
        chunks = self._chunks
        limit = self._limit
        strict = self._strict
        errors = "strict" if strict else "replace"
        decode = bytes.decode if self._strict else _decode_replace
        keep_raw = self._keep_raw
        # The fewest lines a run needs before uniform_blocks() is tried (never in
        # keep_raw mode, whose items carry their bytes).
        batch_from = _NO_LIMIT if keep_raw else 2 * MIN_BLOCKS
        new = tuple.__new__
        last_id = last_event_id  # what self._last_event_id holds
        off = 0  # stream offset of the start of the line being walked
        first = 0  # stream offset of the current block's first line
        deadline = limit  # first + limit: where the block's bytes may not reach past
        room = limit  # deadline - off, as of the end of the last window
        # The line still arriving, cut at chunk or window ends.  One bytearray, not a
        # list of the pieces: a line trickling in by tiny chunks would otherwise cost
        # a bytes object's header per chunk (1.4 times the line in 128-byte chunks).
        # Each SPILL bytes of it move to spilled as one exact-size bytes object, so
        # that the bytearray's growth slack (an eighth) stays a constant: a big line is
        # then held once as it arrives and twice, never more, when it ends.
        partial = bytearray()
        spilled: list[bytes] = []
        spilled_len = 0
        watch = min(room, SPILL)  # the length of partial that calls for a look
        skip_lf = False  # the last line ended with CR: an LF next is its CRLF tail
        # The spec's buffers.  The data buffer is kept as its first line and, once there
        # is a second, the list of all its lines: most events have one data line.
        data_first: str | None = None
        data_lines: list[str] | None = None
        folded = 0  # how many entries of data_lines are folds of FOLD_LINES lines
        event_type = "message"  # the event type buffer, "" already read as "message"
        id_buffer = last_event_id  # the last event ID buffer
        block_retry = None  # a valid retry value in the current block
        event_start = -1  # stream offset of the block's first field line; -1: none yet

        # Spec (Encoding, "UTF-8 decode"): a leading BOM is dropped, only at the very
        # start of the stream, also when it arrives over several chunks.
        # Only while the bytes so far are a prefix of it: the first byte that is not
        # ends the look-ahead, so that no item waits for bytes that may never come.
        head = b""
        while len(head) < 3 and _BOM.startswith(head):
            while not chunks and not self._eof:
                yield NEED_DATA
            if not chunks:
                break
            head += chunks.popleft()
        if head.startswith(_BOM):
            head = head[3:]
            off = first = 3  # offsets count the BOM; the first block starts after it
            deadline = first + limit
            self._safe_end = 3  # keep_raw: the BOM alone is safe to forward
        elif len(head) < 3 and _BOM.startswith(head):
            # The stream ended inside what may have been a BOM: not a line yet, so the
            # limit does not apply (strict mode refuses it as a cut sequence).
            partial += head
            head = b""
        if head:
            chunks.appendleft(head)

        while True:
            if not chunks:
                # Nothing left to split: the stream ended, or we wait for bytes.
                if not self._eof:
                    yield NEED_DATA
                    continue
                yield self._end([*spilled, partial], off, data_first is not None)
                continue

            chunk = chunks.popleft()
            # (Membership of an int: for a bytes operand, bytes.__contains__ first tries
            # to read it as an int and formats a TypeError it then discards, which
            # costs more than the search.  10 is LF, 13 is CR.)
            if 10 not in chunk and 13 not in chunk:
                # No line end: the line goes on.  The common case with small chunks.
                partial += chunk
                skip_lf = False
                # A line still arriving counts with its bytes so far.  Past watch (the
                # room the block has left after the lines before it, or SPILL if that
                # is less), _spill() refuses the event or moves the bytes to spilled.
                if len(partial) > watch:
                    spilled_len = self._spill(partial, spilled, spilled_len, room, deadline)
                    watch = min(room - spilled_len, SPILL)
                continue
            size = len(chunk)
            cut = 0
            while cut < size:
                if size - cut <= WINDOW:
                    window = chunk if cut == 0 else chunk[cut:]
                    cut = size
                else:
                    end = cut + WINDOW
                    if chunk[end - 1] == 13 and chunk[end] == 10:
                        end += 1  # keep a CRLF whole: only the caller's chunks split one
                    window = chunk[cut:end]
                    cut = end
                if skip_lf:
                    skip_lf = False
                    if window[0] == 10:
                        # The LF of a CRLF whose CR ended the last window: it belongs to
                        # the line already walked.  A block boundary or a keep_raw safe
                        # point just before it moves past it, so that neither the limit
                        # nor keep_raw depends on the chunking.
                        window = window[1:]
                        off += 1
                        if first == off - 1:
                            first = off
                            deadline = off + limit
                        if self._safe_end == off - 1:
                            self._safe_end = off
                        room = deadline - off
                        watch = min(room - spilled_len, SPILL)
                        if not window:
                            continue
                # Every run of a window ends its lines the same way, so the loop below
                # adds one constant per line.  A stream almost always uses one kind of
                # line end throughout: the window is then one run.
                # Each run is split into its lines, with its line end's length.
                runs: tuple[tuple[list[bytes], int], ...] | list[tuple[list[bytes], int]]
                if 13 not in window:
                    runs = ((window.split(b"\n"), 1),)
                elif 10 not in window:
                    runs = ((window.split(b"\r"), 1),)
                else:
                    # bytes.splitlines() cuts at CR, LF and CRLF alike (only these, for
                    # bytes) in one pass, faster than split(b"\r\n"); the window is
                    # all CRLF when every cut took two bytes.  Like split(), the list
                    # then ends with what follows the last line end.
                    # (A CR at the end may be half a CRLF: the mixed case below.)
                    lines = window.splitlines()
                    last = window[-1]
                    if last == 10:
                        lines.append(b"")
                    if last != 13 and sum(map(len, lines)) + 2 * len(lines) - 2 == len(window):
                        runs = ((lines, 2),)
                    else:
                        runs = [(run.split(sep), len(sep)) for run, sep in _uniform_runs(window)]
                skip_lf = window[-1] == 13
                # Whether a line of this window can pass the limit at all: when none can
                # (the usual case), each line skips the check.
                near_limit = off + spilled_len + len(partial) + len(window) > deadline
                for lines, tlen in runs:
                    tail = lines.pop()  # after the run's last line end: a partial line
                    if partial or spilled_len:
                        if not lines:
                            partial += tail
                            continue
                        if spilled_len:
                            lines[0] = b"".join([*spilled, partial, lines[0]])
                            spilled.clear()
                            spilled_len = 0
                        else:
                            partial += lines[0]
                            lines[0] = bytes(partial)
                        partial = bytearray()
                    if tail:
                        partial = bytearray(tail)

                    # After each blank line, uniform_blocks() may read a stretch of
                    # same-shaped blocks at once; the line loop then goes on after them
                    # (a list iterator's __setstate__ sets its index).  Not in keep_raw
                    # mode (its items carry their bytes), not when a line of the window
                    # may pass the limit, not when the run is too short to be worth it.
                    batching = len(lines) >= batch_from and not near_limit
                    walk = iter(lines)
                    for raw in walk:
                        length = len(raw)
                        off += length + tlen
                        # The line's own line end does not count: a CR that ends a chunk
                        # may yet turn out to be a CRLF, and the limit must not depend on
                        # how the stream was chunked.
                        if near_limit and off - tlen > deadline:
                            self._fail(f"event exceeds max_event_size={limit} bytes", deadline)

                        if not raw:
                            # Spec: "If the line is empty (a blank line): Dispatch the
                            # event."
                            first = off
                            deadline = off + limit
                            if event_start < 0:
                                # No field since the last blank line (comments at most):
                                # the dispatch would change nothing.
                                if keep_raw:
                                    self._safe_end = off
                            else:
                                # Spec: "Set the last event ID string of the event source to
                                # the value of the last event ID buffer."
                                if id_buffer is not last_id:
                                    self._last_event_id = last_id = id_buffer
                                if data_first is not None:
                                    # Spec: "If the data buffer's last character is a U+000A
                                    # LINE FEED (LF) character, then remove the last
                                    # character from the data buffer."  Each data line
                                    # appended its value plus LF; joining the values with LF
                                    # is the same string without that last LF.
                                    # Spec: the event's type is the event type buffer if it
                                    # is not empty, else "message"; its lastEventId is the
                                    # last event ID string.
                                    yield new(
                                        Event,
                                        (
                                            event_type,
                                            data_first
                                            if data_lines is None
                                            else "\n".join(data_lines),
                                            id_buffer,
                                            block_retry,
                                            event_start,
                                            off,
                                            self._hand_out(off) if keep_raw else None,
                                        ),
                                    )
                                    data_first = data_lines = None
                                # Spec: "If the data buffer is an empty string, set the data
                                # buffer and the event type buffer to the empty string and
                                # return."  (After a dispatch they are empty too.)
                                elif keep_raw:
                                    self._safe_end = off
                                event_type = "message"
                                block_retry = None
                                event_start = -1
                            if batching:
                                got = uniform_blocks(
                                    lines,
                                    len(lines) - walk.__length_hint__(),  # type: ignore[attr-defined]
                                    tlen,
                                    off,
                                    strict,
                                    id_buffer,
                                )
                                if got is None:
                                    batching = False  # try again in the next window
                                else:
                                    items, pos, off = got
                                    walk.__setstate__(pos)  # type: ignore[attr-defined]
                                    first = off
                                    deadline = off + limit
                                    yield from items
                            continue

                        if length > BIG_LINE and raw[:5] == b"data:":
                            # Memory: a big data line's value is decoded straight from
                            # its bytes, so that the line is never held as bytes, as text
                            # and as the value at once (three times the event, not two).
                            skip = 6 if raw[5:6] == b" " else 5
                            try:
                                with memoryview(raw) as view:
                                    value = str(view[skip:], "utf-8", errors)
                            except UnicodeDecodeError as exc:
                                self._fail(
                                    f"invalid UTF-8 ({exc.reason})",
                                    off - tlen - len(raw) + skip + exc.start,
                                )
                        else:
                            try:
                                line = decode(raw)
                            except UnicodeDecodeError as exc:
                                self._fail(
                                    f"invalid UTF-8 ({exc.reason})",
                                    off - tlen - len(raw) + exc.start,
                                )

                            # Spec: "If the line starts with a U+003A COLON character (:):
                            # Ignore the line."  We hand it to the caller as a Comment.
                            if raw[0] == 58:  # ":"
                                raw_bytes = None
                                if keep_raw:
                                    # A comment between events is forwarded at once; one
                                    # inside an event's fields travels with that event.
                                    raw_bytes = self._hand_out(off) if event_start < 0 else b""
                                yield new(
                                    Comment,
                                    (
                                        line[2:] if line[1:2] == " " else line[1:],
                                        off - tlen - len(raw),
                                        off,
                                        raw_bytes,
                                    ),
                                )
                                continue
                            # Then the common case: a data line (the spec's rule is below).
                            # removeprefix() takes one argument, so it skips the argument
                            # parsing that startswith() with a start index pays, and it
                            # builds the value without a slice object.
                            value = line.removeprefix("data: ")
                            if len(value) == len(line):
                                value = line.removeprefix("data:")
                                if len(value) == len(line):
                                    # Spec: "If the line contains a U+003A COLON character (:):
                                    # Collect the characters on the line before the first colon,
                                    # and let field be that string.  Collect the characters on
                                    # the line after the first colon, and let value be that
                                    # string.  If value starts with a U+0020 SPACE character,
                                    # remove it from value."  "Otherwise, the string is not
                                    # empty but does not contain a colon: use the whole line as
                                    # the field name, and the empty string as the field value."
                                    # (partition() gives exactly that, "" after a missing
                                    # colon included.)
                                    field, _, value = line.partition(":")
                                    value = value.removeprefix(" ")
                                    if event_start < 0:
                                        event_start = off - tlen - len(raw)
                                    # Spec: "If the field name is "event": Set the event type
                                    # buffer to field value."
                                    if field == "event":
                                        event_type = value or "message"
                                        continue
                                    # Spec: "If the field name is "id": If the field value does
                                    # not contain U+0000 NULL, then set the last event ID buffer
                                    # to the field value.  Otherwise, ignore the field."
                                    if field == "id":
                                        if "\0" not in value:
                                            id_buffer = value
                                        continue
                                    # Spec: "If the field name is "retry": If the field value
                                    # consists of only ASCII digits, then interpret the field
                                    # value as an integer in base ten, and set the event stream's
                                    # reconnection time to that integer.  Otherwise, ignore the
                                    # field."  (isdigit() alone would accept other digits.)
                                    if field == "retry":
                                        if value.isascii() and value.isdigit():
                                            # More digits than int() accepts (sys.int_info's
                                            # str_digits_check_threshold, 4300 by default): a
                                            # reconnection time beyond 10**4300 ms is ignored.
                                            with suppress(ValueError):
                                                self._retry = block_retry = int(value)
                                        continue
                                    # Spec: "Otherwise: The field is ignored."
                                    if field != "data":
                                        continue
                        # Spec: "If the field name is "data": Append the field value to
                        # the data buffer, then append a single U+000A LINE FEED (LF)
                        # character."
                        if data_first is None:
                            data_first = value
                            if event_start < 0:
                                event_start = off - tlen - len(raw)
                        elif data_lines is None:
                            data_lines = [data_first, value]
                            folded = 0
                        else:
                            data_lines.append(value)
                            if len(data_lines) - folded >= FOLD_LINES:
                                # Memory: a str costs about 50 bytes beyond its text, so
                                # a block of short data lines would take several times
                                # max_event_size before the limit refused it.  Join the
                                # lines since the last fold into one; each line is copied
                                # once more at most, so the cost stays linear.
                                data_lines[folded:] = ["\n".join(data_lines[folded:])]
                                folded += 1
                # Complete lines were checked as they were walked; the line the window
                # leaves unfinished is checked here and, while it goes on, by the
                # no-line-end branch above against watch (one comparison per chunk).
                # (room may be below zero by a line end, which does not count.)
                room = deadline - off
                watch = room - spilled_len
                if watch > SPILL:
                    watch = SPILL
                if partial and len(partial) > watch:
                    spilled_len = self._spill(partial, spilled, spilled_len, room, deadline)
                    watch = min(room - spilled_len, SPILL)

    # ------------------------------------------------------------------ keep_raw

    def take_raw(self) -> bytes:
        """Hand out the received bytes that no item carried and that are safe to forward.

        Only with ``keep_raw=True``.  These are bytes that belong to no item: blank
        lines, ``id:``/``retry:``-only blocks, unknown fields, the LF of a CRLF split
        across chunks.  A verbatim proxy forwards ``item.raw`` for every item and
        ``take_raw()`` whenever ``next_event()`` returns ``NEED_DATA``; what it sends is
        then exactly what it received, up to the tail discarded at a cut.  Bytes not
        taken stay held until the next item's ``raw`` carries them; ``receive_data()``
        refuses more data (LocalProtocolError) once they exceed ``max_event_size``.

        Raises:
            LocalProtocolError: the connection was made without ``keep_raw=True``.
        """
        if not self._keep_raw:
            raise LocalProtocolError("take_raw() needs Connection(keep_raw=True)")
        return self._hand_out(self._safe_end)

    def _hand_out(self, end: int) -> bytes:
        """Hand out the raw bytes up to stream offset ``end`` (keep_raw mode)."""
        cut = end - self._raw_from
        out = bytes(self._raw[:cut])
        del self._raw[:cut]
        self._raw_from = self._safe_end = end
        return out

    # ------------------------------------------------------------------ internals

    def _end(self, line: list[bytes | bytearray], offset: int, partial_event: bool) -> EndOfStream:
        """The stream ended: the EndOfStream to return on every call from now on.

        ``line`` is the unterminated last line, in pieces; it starts at stream
        ``offset``.
        """
        if self._eos is None:
            length = sum(map(len, line))
            # Spec: "Once the end of the file is reached, any pending data must be
            # discarded.  (If the file ends in the middle of an event, before the final
            # empty line, the incomplete event is not dispatched.)"
            if self._strict and length:
                # Strict mode still refuses invalid UTF-8 in what it discards.  The line
                # is checked a window at a time, never copied whole: a huge cut line
                # would otherwise be held twice over.
                decoder = _utf8_decoder()
                done = 0  # bytes of the line checked so far
                for part in line:
                    with memoryview(part) as view:
                        for start in range(0, len(part), WINDOW):
                            piece = view[start : start + WINDOW]
                            pending = decoder.getstate()[0]  # an unfinished sequence
                            try:
                                decoder.decode(piece, final=done + len(piece) == length)
                            except UnicodeDecodeError:
                                try:
                                    (pending + piece.tobytes()).decode()
                                except UnicodeDecodeError as exc:
                                    self._fail(
                                        f"invalid UTF-8 at end of stream ({exc.reason})",
                                        offset + done - len(pending) + exc.start,
                                    )
                            done += len(piece)
            raw_bytes = self.take_raw() if self._keep_raw else None
            self._eos = tuple.__new__(EndOfStream, (length, partial_event, raw_bytes))
        return self._eos

    def _spill(
        self, partial: bytearray, spilled: list[bytes], spilled_len: int, room: int, end: int
    ) -> int:
        """The line still arriving grew past the block's room or SPILL bytes.

        Past the room, the event is too big.  Otherwise its bytes so far move to
        ``spilled`` as one exact-size copy and ``partial`` starts afresh.  Returns the
        new length of ``spilled``.
        """
        if spilled_len + len(partial) > room:
            self._fail(f"event exceeds max_event_size={self._limit} bytes", end)
        spilled.append(bytes(partial))
        partial.clear()  # in place: the caller's name for it stays valid
        return spilled_len + len(spilled[-1])

    def _fail(self, message: str, offset: int) -> NoReturn:
        """The peer broke the protocol at stream ``offset``: raise, for good."""
        raise RemoteProtocolError(f"{message} at byte offset {offset}", offset=offset)

    def _raise_error(self) -> NoReturn:
        """Raise again what failed the connection (see the class docstring)."""
        error = self._error
        if isinstance(error, RemoteProtocolError):
            raise RemoteProtocolError(str(error), offset=error.offset)
        raise LocalProtocolError(
            f"the connection failed earlier: {type(error).__name__}: {error}"
        ) from error


class _NextEvent(functools.partial):  # type: ignore[type-arg]
    __doc__ = Connection.next_event.__doc__
    __slots__ = ()


_utf8_decoder: Final = codecs.getincrementaldecoder("utf-8")


def _decode_replace(raw: bytes) -> str:
    """UTF-8 decoding as browsers do it: U+FFFD for each invalid sequence."""
    return raw.decode("utf-8", "replace")


def _uniform_runs(window: bytes) -> list[tuple[bytes, bytes]]:
    """Cut a window that mixes kinds of line end into runs that each use one kind.

    Returns (run, line end) pairs; every run but the last ends with its line end.
    Each search starts where the last one stopped, so the cost is linear.
    """
    runs = []
    start = 0
    # Every run found in the loop ends before the window's last line end, so the loop
    # ends at the "one kind left" or "no lone line end" breaks.
    while True:
        cr = window.find(b"\r", start)
        lf = window.find(b"\n", start)
        if cr < 0 or lf < 0:
            # One kind left (or none: a partial line).
            runs.append((window[start:], b"\n" if cr < 0 else b"\r"))
            break
        if lf < cr:  # LF lines up to the last LF before the first CR
            end = window.rfind(b"\n", start, cr) + 1
            sep = b"\n"
        elif lf > cr + 1:  # lone CR lines up to the last CR before the first LF,
            # leaving out a CR right before that LF (it belongs to a CRLF)
            end = window.rfind(b"\r", start, lf - 1) + 1
            sep = b"\r"
        else:  # CRLF lines up to the last CRLF before the first lone CR or LF
            lone = _LONE_LINE_END.search(window, start)
            if lone is None:
                runs.append((window[start:], b"\r\n"))
                break
            end = window.rfind(b"\r\n", start, lone.start()) + 2
            sep = b"\r\n"
        runs.append((window[start:end], sep))
        start = end
    return runs
