# The receive state machine: bytes in, events out, no I/O.
#
# Spec: WHATWG HTML, "Server-sent events", section 9.2.6 "Interpreting an event stream"
# https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation
# The spec's steps are quoted beside the code that implements them (marked "Spec:").
#
# Strategy.  receive_data() only appends to one bytearray.  next_event() works in two
# layers:
#
# 1. _cut_piece() cuts a *piece* off the front of the buffer: the longest run of
#    complete lines that starts at the read position and ends within PIECE_SIZE bytes
#    of the first line end (or the first line alone, when that is longer).  It splits
#    the piece into lines with one C-level bytes.split(): CR and LF never occur inside
#    a UTF-8 multibyte sequence, so lines can be cut on bytes and decoded whole.
# 2. The loop in next_event() walks those lines, keeps the spec's buffers, and returns
#    as soon as one line completes an item (an Event, a Comment).  The lines not yet
#    walked wait in self._lines; nothing is built for them until the caller asks, so a
#    huge receive_data() holding a million events never builds a million objects at
#    once (the pull model is the back-pressure).
#
# Invariants, and why the whole thing is linear in the bytes received:
# - Every byte is searched for a line end a bounded number of times: the first line end
#   is searched from where the last unsuccessful search stopped (_lf_clear, _cr_clear:
#   no LF, no CR between the read position and these indices), so a line arriving one
#   byte at a time is scanned once, not once per chunk; the backwards search for the
#   piece's last line end covers at most PIECE_SIZE bytes that the piece then consumes.
# - The consumed prefix of the buffer is dropped in one ``del buf[:n]`` when new data
#   arrives; CPython implements that by moving the start pointer, amortized O(1).
# - The data buffer is a list of lines joined once, at dispatch.
# - Memory held is at most max_event_size (the event being assembled, partial line
#   included) plus the chunk the caller passed, plus one piece of at most PIECE_SIZE.

from __future__ import annotations

import enum
import re
import sys
from collections.abc import Iterator
from contextlib import suppress
from typing import Final, Literal

from ._errors import LocalProtocolError, RemoteProtocolError
from ._events import Comment, EndOfStream, Event

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

# How many bytes of lines one piece may hold (beyond its first line).  Big enough that
# the per-piece costs (two searches, one split) vanish against the per-line ones, small
# enough that the list of lines waiting in a piece stays a constant-size allocation.
PIECE_SIZE: Final = 64 * 1024
# The smallest window a piece is cut from (after a piece cut short by mixed line ends).
MIN_WINDOW: Final = 256

_BOM: Final = b"\xef\xbb\xbf"
_NO_LIMIT: Final = sys.maxsize


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

        # --- the receive buffer ---
        self._buf = bytearray()
        self._base = 0  # stream offset of self._buf[0]
        self._pos = 0  # index of the first byte not yet cut into a piece
        self._lf_clear = 0  # no LF in buf[pos:_lf_clear]
        self._cr_clear = 0  # no CR in buf[pos:_cr_clear]
        self._bom_pending = True  # nothing decided yet about a leading BOM
        self._skip_lf = False  # the last line ended in CR: an LF next is its CRLF tail
        self._eof = False
        self._eol_pending = False  # a line end may have arrived since the last search
        self._eos: EndOfStream | None = None  # returned on every call once drained
        self._error: tuple[str, int] | None = None  # (message, offset) once failed

        # --- the current piece (see _cut_piece) ---
        self._blocks: list[bytes] = []  # whole blocks, or one run of lines ...
        self._whole_blocks = False  # ... as this says
        self._sep = b"\n"  # the line end of every line in the piece
        self._tlen = 1  # its length
        self._window = PIECE_SIZE  # how far past its first line end a piece may reach
        self._piece_off = 0  # stream offset of the piece's first line

        # --- what outlives the parsing loop (the rest lives in _parse()'s locals) ---
        self._last_event_id = last_event_id  # the spec's last event ID string
        self._retry: int | None = None  # the spec's reconnection time
        self._block_first = 0  # stream offset of the current block's first line
        self._partial_event = False  # the current block has data lines

        # --- keep_raw mode ---
        self._raw_from = 0  # stream offset of the first byte not yet handed out
        self._safe_end = 0  # bytes before this offset are safe to hand out

        # The parser proper is a generator: its locals keep the line loop's state
        # between items, so handing out one item costs one resume, not a reload and
        # a write-back of a dozen attributes.
        self._items = self._parse(last_event_id).__next__

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
            LocalProtocolError: non-empty data after the end of stream.
            RemoteProtocolError: the connection already failed (the same error again).
            TypeError: data is not bytes, bytearray or memoryview.
        """
        if self._error is not None:
            self._raise_error()
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"receive_data() takes bytes, not {type(data).__name__}")
        if not data:
            self._eof = True
            self._eol_pending = True  # let next_event() settle a BOM-only tail
            return
        if self._eof:
            raise LocalProtocolError("receive_data() called with data after end of stream")
        if self._safe_end - self._raw_from > self._limit:
            # keep_raw: the caller keeps feeding without taking what is safe to forward.
            raise LocalProtocolError(
                f"{self._safe_end - self._raw_from} bytes are waiting for take_raw(), more "
                f"than max_event_size={self._limit}: call take_raw() at every NEED_DATA"
            )
        buf = self._buf
        # Drop what has been consumed (and, in keep_raw mode, handed out) in one go.
        drop = self._pos
        if self._keep_raw and self._raw_from - self._base < drop:
            drop = self._raw_from - self._base
        if drop:
            del buf[:drop]
            self._base += drop
            self._pos -= drop
            self._lf_clear -= drop
            self._cr_clear -= drop
        old_len = len(buf)
        buf += data
        if not self._eol_pending:
            # While no line end has arrived, next_event() need not search at all: a
            # line trickling in by small chunks costs one memchr over each chunk.
            self._eol_pending = buf.find(b"\n", old_len) >= 0 or buf.find(b"\r", old_len) >= 0

    def next_event(self) -> Event | Comment | EndOfStream | NeedData:
        """Return the next complete item, or ``NEED_DATA``.

        Items come in stream order: an :class:`Event` when a blank line dispatches one,
        a :class:`Comment` for each comment line, and, once the stream has ended and
        every complete item has been returned, an :class:`EndOfStream`, again on every
        later call.  Call it until it returns ``NEED_DATA`` (feed more bytes) or an
        ``EndOfStream`` (stop): it parses only as far as the item it returns.

        Raises:
            RemoteProtocolError: the peer sent invalid UTF-8 (strict mode) or an event
                over ``max_event_size``.  Every item completed before the bad byte has
                already been returned.  The error is sticky: every later call raises
                it again.
        """
        if self._error is not None:
            self._raise_error()
        return self._items()

    def _parse(self, last_event_id: str) -> Iterator[Event | Comment | EndOfStream | NeedData]:
        """The line loop, as a generator that next_event() resumes once per item."""
        off = 0  # stream offset of the line being walked
        first = 0  # stream offset of the current block's first line
        limit = self._limit
        deadline = limit  # first + limit: the stream offset the block may not pass
        strict = self._strict
        keep_raw = self._keep_raw
        # The spec's buffers.
        data: list[str] = []  # the data buffer, one entry per data line
        event_type = ""  # the event type buffer
        id_buffer = last_event_id  # the last event ID buffer
        block_retry = None  # a valid retry value in the current block
        event_start = -1  # stream offset of the block's first field line; -1: none yet

        while True:
            self._block_first = first
            self._partial_event = bool(data)
            while not (self._eol_pending and self._cut_piece()):
                yield self._no_complete_line()
            first = self._block_first  # moved past a skipped BOM or LF, if any
            deadline = first + limit
            off = self._piece_off
            sep = self._sep
            tlen = self._tlen
            whole_blocks = self._whole_blocks
            for block in self._blocks:
                # The fast path: a whole block of one data line, nothing pending before
                # it; nearly every event of an LLM stream.  It does what the line loop
                # below would do with the same two lines, in one step.
                if (
                    whole_blocks
                    and event_start < 0
                    and block.startswith(b"data:")
                    and sep not in block
                ):
                    start = off
                    off += len(block) + 2 * tlen
                    if off - tlen > deadline:
                        self._fail(f"event exceeds max_event_size={limit} bytes", deadline)
                    try:
                        line = block.decode() if strict else block.decode("utf-8", "replace")
                    except UnicodeDecodeError as exc:
                        self._fail(f"invalid UTF-8 ({exc.reason})", start + exc.start)
                    self._last_event_id = id_buffer
                    first = off
                    deadline = off + limit
                    yield tuple.__new__(
                        Event,
                        (
                            "message",
                            line[6:] if line.startswith(" ", 5) else line[5:],
                            id_buffer,
                            None,
                            start,
                            off,
                            self._hand_out(off) if keep_raw else None,
                        ),
                    )
                    continue
                lines = block.split(sep)
                if whole_blocks:
                    lines.append(b"")  # the blank line that ends the block
                for raw in lines:
                    start = off
                    off += len(raw) + tlen
                    # The line's own line end does not count: a CR that ends a chunk
                    # may yet turn out to be a CRLF, and the limit must not depend on
                    # how the stream was chunked.
                    if off - tlen > deadline:
                        self._fail(f"event exceeds max_event_size={limit} bytes", deadline)

                    if not raw:
                        # Spec: "If the line is empty (a blank line): Dispatch the event."
                        self._last_event_id = id_buffer
                        first = off
                        deadline = off + limit
                        if data:
                            # Spec: "If the data buffer's last character is a U+000A LINE FEED
                            # (LF) character, then remove the last character from the data
                            # buffer."  Each data line appended its value plus LF; joining the
                            # values with LF is the same string without that last LF.
                            text = data[0] if len(data) == 1 else "\n".join(data)
                            data = []
                            # Spec: the event's type is the event type buffer if it is not
                            # empty, else "message"; its lastEventId is the last event ID string.
                            yield tuple.__new__(
                                Event,
                                (
                                    event_type or "message",
                                    text,
                                    id_buffer,
                                    block_retry,
                                    event_start,
                                    off,
                                    self._hand_out(off) if keep_raw else None,
                                ),
                            )
                        # Spec: "If the data buffer is an empty string, set the data buffer and
                        # the event type buffer to the empty string and return."  (And after a
                        # dispatch they are empty too.)
                        elif keep_raw:
                            self._safe_end = off
                        event_type = ""
                        block_retry = None
                        event_start = -1
                        continue

                    try:
                        line = raw.decode() if strict else raw.decode("utf-8", "replace")
                    except UnicodeDecodeError as exc:
                        self._fail(f"invalid UTF-8 ({exc.reason})", start + exc.start)

                    # The common case first: a data line (the spec's rule is below).
                    if line.startswith("data:"):
                        data.append(line[6:] if line.startswith(" ", 5) else line[5:])
                        if event_start < 0:
                            event_start = start
                        continue

                    colon = line.find(":")
                    # Spec: "If the line starts with a U+003A COLON character (:): Ignore the
                    # line."  We hand it to the caller as a Comment instead of dropping it.
                    if colon == 0:
                        raw_bytes = None
                        if keep_raw:
                            # A comment between events is forwarded at once; one inside an
                            # event's fields travels with that event (never half an event).
                            raw_bytes = self._hand_out(off) if event_start < 0 else b""
                        text = line[2:] if line.startswith(" ", 1) else line[1:]
                        yield tuple.__new__(Comment, (text, start, off, raw_bytes))
                        continue

                    if event_start < 0:
                        event_start = start
                    # Spec: "If the line contains a U+003A COLON character (:): Collect the
                    # characters on the line before the first colon, and let field be that
                    # string.  Collect the characters on the line after the first colon, and
                    # let value be that string.  If value starts with a U+0020 SPACE character,
                    # remove it from value."  "Otherwise, the string is not empty but does not
                    # contain a colon: use the whole line as the field name, and the empty
                    # string as the field value."
                    if colon > 0:
                        field = line[:colon]
                        value = (
                            line[colon + 2 :]
                            if line.startswith(" ", colon + 1)
                            else line[colon + 1 :]
                        )
                    else:
                        field = line
                        value = ""
                    # Spec: "If the field name is "data": Append the field value to the data
                    # buffer, then append a single U+000A LINE FEED (LF) character."  (Only
                    # "data" without a colon gets here.)
                    if field == "data":
                        data.append(value)
                    # Spec: "If the field name is "event": Set the event type buffer to field
                    # value."
                    elif field == "event":
                        event_type = value
                    # Spec: "If the field name is "id": If the field value does not contain
                    # U+0000 NULL, then set the last event ID buffer to the field value.
                    # Otherwise, ignore the field."
                    elif field == "id":
                        if "\0" not in value:
                            id_buffer = value
                    # Spec: "If the field name is "retry": If the field value consists of only
                    # ASCII digits, then interpret the field value as an integer in base ten,
                    # and set the event stream's reconnection time to that integer.
                    # Otherwise, ignore the field."  (isdigit() alone accepts other digits.)
                    elif field == "retry" and value.isascii() and value.isdigit():
                        # More digits than int() accepts (sys.int_info's
                        # str_digits_check_threshold, 4300 by default): a reconnection
                        # time beyond 10**4300 ms is ignored.
                        with suppress(ValueError):
                            self._retry = block_retry = int(value)
                    # Spec: "Otherwise: The field is ignored."

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
        base = self._base
        out = bytes(self._buf[self._raw_from - base : end - base])
        self._raw_from = self._safe_end = end
        return out

    # ------------------------------------------------------------------ internals

    def _cut_piece(self) -> bool:
        """Cut the next run of complete lines into self._lines; False if there is none."""
        buf = self._buf
        n = len(buf)
        pos = self._pos
        if self._bom_pending or self._skip_lf:
            # Bytes that belong to no line: a leading BOM, the LF of a CRLF whose CR
            # ended the previous piece.  A block boundary or a safe point that sat
            # just before them moves past them, so that neither the size limit nor
            # keep_raw depends on how the stream was chunked.
            skipped_from = self._base + pos
            if self._bom_pending:
                # Spec (Encoding, "UTF-8 decode"): a leading BOM is dropped, only at the
                # very start of the stream.  This first call comes with a line end or
                # the end of stream already buffered, so three bytes, or all there
                # will ever be, are here to tell.
                self._bom_pending = False
                if buf.startswith(_BOM, pos):
                    pos += 3
            if self._skip_lf and pos < n:
                # The previous line ended with a CR that ended its chunk or piece: it
                # was processed at once, so an LF now is the second half of a CRLF.
                self._skip_lf = False
                if buf[pos] == 10:
                    pos += 1
            self._pos = pos
            skipped_to = self._base + pos
            if self._block_first == skipped_from:
                self._block_first = skipped_to
            if self._safe_end == skipped_from:
                self._safe_end = skipped_to

        # Find the first line end, resuming where earlier searches found none.
        lf = buf.find(b"\n", self._lf_clear if self._lf_clear > pos else pos)
        stop = n if lf < 0 else lf
        cr_from = self._cr_clear if self._cr_clear > pos else pos
        cr = buf.find(b"\r", cr_from, stop) if cr_from < stop else -1
        if cr < 0:
            self._cr_clear = stop
            if lf < 0:
                self._lf_clear = n
                self._eol_pending = False
                return False
            first_end = lf
        else:
            first_end = self._cr_clear = cr
            self._lf_clear = stop

        # Extend the piece to the last line end within the window after the first one.
        # The window grows while pieces fill it and shrinks to MIN_WINDOW when a piece
        # is cut short (mixed line ends, below), so the searches over it cost at most a
        # constant times the bytes the piece consumes, whatever the input.
        window = first_end + self._window
        if window > n:
            window = n
        last = buf.rfind(b"\n", first_end, window)
        last_cr = buf.rfind(b"\r", first_end, window)
        if last_cr > last:
            last = last_cr
        end = last + 1
        if buf[last] == 13 and end < n and buf[end] == 10:
            end += 1  # keep a CRLF whole when its LF is already here
        # bytes, not bytearray: splitting and decoding bytes is about 40% cheaper.
        piece = bytes(buf[pos:end])

        # Every line of a piece ends the same way, so the loop adds one constant per
        # line.  A stream almost always uses one kind of line end throughout; where
        # kinds mix, the piece stops before the first line end of another kind.
        if b"\r" not in piece:
            sep = b"\n"
        elif b"\n" not in piece:
            sep = b"\r"
        elif piece.count(b"\r") == piece.count(b"\n") == piece.count(b"\r\n"):
            sep = b"\r\n"  # every CR is followed by LF and every LF preceded by CR
        else:
            cut, sep = _uniform_prefix(piece, first_end - pos)
            piece = piece[:cut]
            end = pos + cut
            self._window = MIN_WINDOW // 2  # doubled just below
        if self._window < PIECE_SIZE:
            self._window *= 2
        # Where the window holds the end of a block (a line end then a blank line),
        # the piece stops there and is split into whole blocks: most blocks are then
        # handled without splitting them into lines (see _parse).  Otherwise it is one
        # run of lines, none of them a block end unless the very first one is blank.
        block_end = piece.rfind(sep + sep)
        if block_end >= 0:
            end = pos + block_end + 2 * len(sep)
            blocks = piece[:block_end].split(sep + sep)
        else:
            blocks = [piece[: -len(sep)]]
        self._skip_lf = sep == b"\r"
        self._blocks = blocks
        self._whole_blocks = block_end >= 0
        self._sep = sep
        self._tlen = len(sep)
        self._piece_off = self._base + pos
        self._pos = end
        return True

    def _no_complete_line(self) -> EndOfStream | NeedData:
        """next_event() found no complete line: report the end, or ask for data."""
        buf = self._buf
        pending = len(buf) - self._pos  # bytes of the partial line
        if not self._eof:
            # A line still arriving counts with its bytes so far (and the line ends
            # before it); with none, every complete line was checked already.
            held = self._base + len(buf) - self._block_first
            if self._bom_pending and _BOM.startswith(buf[:3]):
                held -= min(3, len(buf))  # a leading BOM, or the start of one, is no line
            if pending and held > self._limit:
                self._fail(
                    f"event exceeds max_event_size={self._limit} bytes",
                    self._block_first + self._limit,
                )
            return NEED_DATA
        if self._eos is None:
            # Spec: "Once the end of the file is reached, any pending data must be
            # discarded.  (If the file ends in the middle of an event, before the final
            # empty line, the incomplete event is not dispatched.)"
            if self._strict and pending:
                tail = bytes(buf[self._pos :])
                try:
                    tail.decode()
                except UnicodeDecodeError as exc:
                    self._fail(
                        f"invalid UTF-8 at end of stream ({exc.reason})",
                        self._base + self._pos + exc.start,
                    )
            raw_bytes = self.take_raw() if self._keep_raw else None
            self._eos = tuple.__new__(EndOfStream, (pending, self._partial_event, raw_bytes))
            self._base += len(buf)
            del buf[:]
            self._pos = self._lf_clear = self._cr_clear = 0
        return self._eos

    def _fail(self, message: str, offset: int) -> None:
        self._error = (f"{message} at byte offset {offset}", offset)
        self._raise_error()

    def _raise_error(self) -> None:
        assert self._error is not None
        message, offset = self._error
        raise RemoteProtocolError(message, offset=offset)


# A line end that is not part of a CRLF: a CR not followed by LF, an LF not after CR.
_LONE_LINE_END: Final = re.compile(rb"\r(?!\n)|(?<!\r)\n")


def _uniform_prefix(piece: bytes, first_end: int) -> tuple[int, bytes]:
    """For a piece that mixes line ends: the length of its longest prefix of whole
    lines that all end like the first line, and that line end."""
    if piece[first_end] == 10:  # LF: lines up to the last LF before the first CR
        return piece.rfind(b"\n", 0, piece.find(b"\r")) + 1, b"\n"
    if piece[first_end + 1 : first_end + 2] != b"\n":
        # A lone CR: lines up to the last CR before the first LF, leaving out a CR
        # right before that LF (it belongs to a CRLF).
        return piece.rfind(b"\r", 0, piece.find(b"\n") - 1) + 1, b"\r"
    # CRLF: lines up to the last CRLF before the first lone CR or LF.
    lone = _LONE_LINE_END.search(piece)
    assert lone is not None  # the piece mixes line ends
    return piece.rfind(b"\r\n", 0, lone.start()) + 2, b"\r\n"
