# The opt-in modes' rooms of the one Python parser: a block that outgrew the fast loop.
#
# Spec: WHATWG HTML, "Server-sent events", section 9.2.6 "Interpreting an event stream"
# https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation
#
# Why it exists.  on_oversize="skip" drops a block at the byte where the limit refuses
# it and goes on; piece_size hands out a data value while its line is still arriving.
# Both act *inside* a block, and only in a block that grew big: one that reaches
# max_event_size, or whose data may pass piece_size.  The parser (_interpret.py) walks
# every block in its fast loop and, in a connection with one of these options, hands a
# block to a Modes object at the first byte where it may outgrow the fast loop's bound
# (``handover``: max_event_size, or piece_size if less); from there on the block's lines
# come here one at a time, and when its blank line has dispatched it the fast loop
# takes the next block.  So a proxy that sets on_oversize="skip" pays the line-at-a-time
# cost only on blocks near the limit, and piece_size only on events near piece_size.
# (Until issue 20 a second, line-by-line parser read every block of such a connection:
# 2.5 to 5.6 times the fast loop per item, counted by benchmarks/callgrind.py.)
#
# The rules here are the ones the compiled core's modes follow (_core_modes.h), byte
# for byte, and the spec's field rules are _fields.py's, as in the fast loop.
#
# The handover.  The fast loop gives a block here at one of its three size checks, with
# what it built of it (a _stream.Block): take_line() at a complete line, and
# take_arriving() at the line still arriving, which it holds as _lines.py's SPILL
# pieces.  Both are sub-generators the fast loop delegates to (``yield from``), so that
# parse() holds only the calls, in branches the default path never enters.
#
# The steps.  The fast loop gives a block's bytes as it cuts them: grow() for bytes of
# the line still arriving, line_end() for the rest of a complete line and its line end,
# chunk_end() where a chunk ends.  A line's bytes in one chunk are a *segment*, taken
# here in steps of ``window`` bytes counted from the segment's start (the fast loop's
# windows are counted from the chunk's start, so grow() regroups them: at most a window
# waits in ``pend``).  After each step the size limit and piece_size are looked at, so
# where a piece ends does not depend on how the fast loop cut the chunk.  When the block
# comes here, begin() is given what the fast loop built of it (the Block: its fields
# and data lines; and the line being walked): since the fast loop's bound is never more
# than the limit or piece_size, nothing the rules here act on has happened yet.
#
# The size limit.  A block may not reach past ``mark + limit``, where ``mark`` is the
# block's first byte, as in the fast loop; with piece_size, ``mark`` moves to the end
# of the bytes each DataPiece covers, so the limit bounds what the connection *holds*
# (a pieced event may be any size; a huge comment, event or id line is still refused).
# The line still arriving counts with the bytes it has; its line end never counts.
#
# Invariants:
# - ``start`` is the stream offset of the line being assembled and ``length`` its bytes
#   so far; ``line`` holds them, unless the line is dropped (a line longer than the
#   limit in a skipped block) or streamed (a data line handed out in pieces): then
#   ``line`` stays empty and memory stays bounded whatever the line's size.
# - Items come in stream order, each as soon as the line end that completes it has
#   arrived (a piece: as soon as more than piece_size bytes of data wait at a step).

from __future__ import annotations

import codecs
from collections.abc import Generator, Iterator
from typing import TYPE_CHECKING, Final

from sse_sansio._events import (
    AnyItem,
    Comment,
    DataPiece,
    Diagnostic,
    EndOfStream,
    Event,
    PiecedEvent,
    SkippedEvent,
    Update,
)
from sse_sansio._need_data import NeedData

from ._diagnostics import discarded_block, field_diagnostic
from ._fields import event_type_of, id_value, retry_value
from ._lines import check_cut_line, exceeds, fail

if TYPE_CHECKING:
    from ._raw import RawBytes
    from ._stream import Block, StreamState

__all__ = ["Modes"]

Item = AnyItem | NeedData

# The data buffer joins every this many texts into one (see _interpret.FOLD_LINES).
FOLD: Final = 256

_utf8_decoder: Final = codecs.getincrementaldecoder("utf-8")
_KEPT_IN_SKIP: Final = (b"event", b"id", b"retry")
_new = tuple.__new__

# What Modes holds before the fast loop first hands it a block.
_NO_BLOCK: Final[Block] = (0, -1, "message", "", None, -1, None, None)


class Modes:
    """The state of the block that the fast loop handed over (the spec's buffers too)."""

    __slots__ = (
        "block_retry",
        "covered",
        "data",
        "data_bytes",
        "decoder",
        "diagnostics",
        "dropped",
        "event_start",
        "event_type",
        "first",
        "folded",
        "has_data",
        "id_buffer",
        "id_seen",
        "length",
        "limit",
        "line",
        "mark",
        "pend",
        "piece_size",
        "pieced",
        "raw",
        "skip_mode",
        "skipping",
        "start",
        "state",
        "streamed",
        "strict",
        "updates",
        "window",
    )

    def __init__(
        self,
        state: StreamState,
        raw: RawBytes | None,
        strict: bool,
        limit: int,
        *,
        skip: bool,
        piece_size: int | None,
        diagnostics: bool,
        window: int,
        updates: bool = False,
    ) -> None:
        self.state = state
        self.raw = raw
        self.strict = strict
        self.limit = limit
        self.skip_mode = skip
        self.piece_size = piece_size
        self.diagnostics = diagnostics
        self.updates = updates
        self.window = window
        self.pend = b""  # the segment's bytes since its last step (at most a window)
        self.begin(_NO_BLOCK, 0, b"")

    def begin(self, block: Block, start: int, line: bytes) -> None:
        """Take ``block`` from the fast loop, with its line being walked, which starts at
        stream offset ``start``: ``line`` is its bytes in earlier chunks, which go over
        as walked (the caller gives the rest to grow() or line_end()).

        The block's data buffer (its lines joined by LF) counts towards piece_size by
        its UTF-8 bytes (exact: the fast loop hands over only in strict mode, or with no
        piece_size, when a value may hold U+FFFD for other bytes).
        """
        mark, event_start, event_type, id_buffer, block_retry, id_block, data, lines = block
        if lines is not None:
            data = "\n".join(lines)
        self.start = start
        self.length = len(line)
        self.line = bytearray(line)
        self.dropped = False  # the line is too long for a skipped block: dropped whole
        self.streamed = False  # a data line whose value goes out in pieces as it comes
        self.decoder: codecs.IncrementalDecoder | None = None
        # The block: its first byte, where the limit counts from, and the spec's buffers.
        self.first = self.mark = mark
        self.skipping = False  # the block outgrew the limit (on_oversize="skip")
        self.event_start = event_start  # the block's first field line; -1: none yet
        self.event_type = event_type
        self.id_buffer = id_buffer
        self.block_retry = block_retry
        # An id field was taken in this block (diagnostics, updates).
        self.id_seen = event_start >= 0 and id_block == event_start
        # The data buffer: texts to join, the second line's on with its LF in front.
        self.data: list[str] = [] if data is None else [data]
        self.folded = 0
        self.has_data = data is not None
        self.data_bytes = 0 if data is None else len(data.encode())  # not handed out
        self.pieced = False  # a DataPiece of this block was handed out
        self.covered = 0  # where the stream bytes handed out by pieces end

    # ------------------------------------------------------------------ the handover

    def take_line(
        self, block: Block, line: bytes, tlen: int, end: int, chunk_start: int
    ) -> Generator[Item, None, bool]:
        """The block comes here at a complete line: ``line``, then a line end of ``tlen``
        bytes that ends at stream offset ``end``; ``block`` is what the fast loop built
        of it, ``chunk_start`` the first byte of the chunk being walked.  The block's
        next lines go to line_end(), as this one does: the generator returned is
        line_end()'s (no frame of its own).  It returns True when a blank line has
        dispatched the block (the fast loop then takes the next one)."""
        start = end - tlen - len(line)
        before = chunk_start - start if chunk_start > start else 0
        self.begin(block, start, line[:before])
        return self.line_end(line[before:], tlen)

    def take_arriving(
        self,
        block: Block | None,
        spilled: list[bytes],
        partial: bytearray,
        start: int,
        spilled_len: int,
        in_chunk: int,
    ) -> Generator[Item, None, int]:
        """The line still arriving, from stream offset ``start``, goes on here, with the
        block if ``block`` is not None (as in take_line()); at most its last
        ``in_chunk`` bytes are in the chunk being walked.  The fast loop holds its bytes
        as _lines.py says: ``spilled`` then ``partial``, or in keep_raw mode the first
        ``spilled_len`` in the raw buffer only.  Returns how many bytes it had;
        ``spilled`` is left empty."""
        if self.raw is None:
            held = b"".join([*spilled, partial])
            spilled.clear()
        else:
            held = self.raw.copy(start, start + spilled_len) + partial  # (none in spilled)
        before = 0
        if block is not None:
            before = len(held) - in_chunk if len(held) > in_chunk else 0
            self.begin(block, start, held[:before])
        yield from self.grow(held[before:] if before else held)
        return len(held)

    # ------------------------------------------------------------------ the bytes

    def grow(self, part: bytes | bytearray) -> Iterator[Item]:
        """More bytes of the line still arriving, in the chunk being walked."""
        window = self.window
        if self.pend:
            room = window - len(self.pend)
            self.pend += part[:room]
            if len(self.pend) < window:
                return
            part = part[room:]
            yield from self.step(self.pend)
            self.pend = b""
        whole = len(part) - len(part) % window
        for lo in range(0, whole, window):
            yield from self.step(part[lo : lo + window])
        if whole < len(part):
            self.pend = bytes(part[whole:])

    def chunk_end(self) -> Iterator[Item]:
        """The chunk ends: so does the line's segment in it."""
        if self.pend:
            yield from self.step(self.pend)
            self.pend = b""

    def line_end(self, part: bytes, tlen: int) -> Generator[Item, None, bool]:
        """The line ends: ``part`` is its bytes not given to grow(), then a line end of
        ``tlen`` bytes.  Returns True when a blank line has dispatched the block."""
        if part:
            yield from self.grow(part)
        yield from self.chunk_end()
        return (yield from self.complete(tlen))

    def past_lf(self) -> None:
        """The LF of a CRLF whose CR ended the last chunk: it belongs to the line already
        walked, and a block boundary just before it moves past it (the span rule; the
        fast loop moves keep_raw's safe point)."""
        self.start += 1
        if self.first == self.start - 1:
            self.first = self.start
        if self.mark == self.start - 1:
            self.mark = self.start

    # ------------------------------------------------------------------ one line

    def step(self, part: bytes | bytearray) -> Iterator[Item]:
        """One step of the line being assembled: ``part`` continues it."""
        self.length += len(part)
        if self.dropped:
            self.drop_raw(self.start + self.length)
        elif self.streamed:
            yield from self.stream(part, self.start + self.length - len(part))
        else:
            self.line += part
            if (
                self.piece_size is not None
                and not self.skipping
                and len(self.line) > 5
                and self.line[:5] == b"data:"
            ):
                yield from self.start_streaming()
        self.check_size()

    def check_size(self) -> None:
        """The size limit (module header) on the line still arriving, as it grows."""
        if self.skipping:
            if self.length > self.limit and not self.dropped:
                # Spec-literal would be to keep it; memory bounded beats an unbounded id.
                self.dropped = True
                self.line = bytearray()
                self.drop_raw(self.start + self.length)
            elif not self.dropped:
                self.drop_raw(self.start + self.length)
            return
        if self.start + self.length - self.mark > self.limit:
            if not self.skip_mode:
                exceeds(self.limit, self.mark + self.limit)
            self.begin_skip()
            self.check_size()

    def begin_skip(self) -> None:
        """on_oversize="skip": the block passed the limit; buffer nothing more of it."""
        self.skipping = True
        self.data = []
        self.folded = self.data_bytes = 0
        # (Never while a line is streamed: each piece moves ``mark`` past the data it
        # hands out, and less than piece_size <= max_event_size bytes wait between.)

    def complete(self, tlen: int) -> Generator[Item, None, bool]:
        """The line being assembled ends here with a line end of ``tlen`` bytes."""
        self.check_size()  # a blank line too: the line ends before it count
        text_end = self.start + self.length
        end = text_end + tlen
        raw = bytes(self.line)
        start = self.start
        was_dropped, was_streamed = self.dropped, self.streamed
        self.start, self.length, self.line = end, 0, bytearray()
        self.dropped = self.streamed = False
        if was_dropped:
            self.drop_raw(end)
        elif was_streamed:
            yield from self.end_streaming(text_end, end)
        elif not raw:
            yield from self.dispatch(start, end)
            return True
        elif self.skipping:
            self.skipped_line(raw, start)
            self.drop_raw(end)
        else:
            yield from self.field_line(raw, start, end)
        return False

    def decode(self, raw: bytes, start: int) -> str:
        try:
            return raw.decode("utf-8", "strict" if self.strict else "replace")
        except UnicodeDecodeError as exc:
            fail(f"invalid UTF-8 ({exc.reason})", start + exc.start)

    def field_line(self, raw: bytes, start: int, end: int) -> Iterator[Item]:
        """A complete line that is not blank, in a block being buffered."""
        line = self.decode(raw, start)
        # Spec: "If the line starts with a U+003A COLON character (:): Ignore the line."
        # We hand it to the caller as a Comment.
        if raw[0] == 58:
            raw_out = None
            if self.raw is not None:
                # A comment between events is forwarded at once; one inside an event's
                # fields travels with that event.
                raw_out = self.raw.hand_out(end) if self.event_start < 0 else b""
            if self.event_start < 0:
                # Nothing is held for a comment before a block's first field: the
                # block, and its size, start after it.
                self.first = self.mark = end
            yield _new(Comment, (line[2:] if line[1:2] == " " else line[1:], start, end, raw_out))
            return
        # Spec: "If the line contains a U+003A COLON character (:): Collect the
        # characters on the line before the first colon, and let field be that string.
        # Collect the characters on the line after the first colon, and let value be
        # that string.  If value starts with a U+0020 SPACE character, remove it from
        # value."  "Otherwise, ... use the whole line as the field name, and the empty
        # string as the field value."  (partition() gives exactly that.)
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if self.event_start < 0:
            self.event_start = start
        if field == "data":
            self.append_data(value, len(raw) - (len(line) - len(value)))
            if self.piece_size is not None and self.data_bytes > self.piece_size:
                yield self.piece(end)
            return
        self.interpret(field, value)
        if self.diagnostics:
            yield from self.field_diagnostic(field, value, start, end)

    def interpret(self, field: str, value: str) -> None:
        """The spec's steps for a field other than data (the rules: _fields.py)."""
        if field == "event":
            self.event_type = event_type_of(value)
        elif field == "id":
            new_id = id_value(value)
            if new_id is not None:
                self.id_buffer = new_id
                self.id_seen = True
        elif field == "retry":
            retry = retry_value(value)
            if retry is not None:
                self.state.retry = self.block_retry = retry
        # Spec: "Otherwise: The field is ignored."

    def skipped_line(self, raw: bytes, start: int) -> None:
        """A complete line of a skipped block: only event, id and retry still count."""
        if raw.partition(b":")[0] in _KEPT_IN_SKIP:
            field, _, value = self.decode(raw, start).partition(":")
            self.interpret(field, value.removeprefix(" "))

    # ------------------------------------------------------------------ data

    def append_data(self, text: str, size: int) -> None:
        """Spec: "If the field name is "data": Append the field value to the data
        buffer, then append a single U+000A LINE FEED (LF) character."  The LF goes in
        front of the next value instead, so the final one is never there to remove."""
        if self.has_data:
            text = "\n" + text
            size += 1
        self.has_data = True
        data = self.data
        data.append(text)
        self.data_bytes += size
        if len(data) - self.folded >= FOLD:
            # Memory: a str costs about 50 bytes beyond its text (see _interpret._fold).
            data[self.folded :] = ["".join(data[self.folded :])]
            self.folded += 1

    def take_data(self) -> str:
        text = "".join(self.data)
        self.data = []
        self.folded = self.data_bytes = 0
        return text

    def piece(self, end: int) -> DataPiece:
        """Hand out the data waiting, up to stream offset ``end``, as a DataPiece."""
        raw_out = None if self.raw is None else self.raw.hand_out(end)
        piece_start = self.covered if self.pieced else self.event_start
        self.pieced = True
        self.covered = self.mark = end
        return _new(DataPiece, (self.take_data(), piece_start, end, raw_out))

    def start_streaming(self) -> Iterator[Item]:
        """piece_size: a data line still arriving; stream it once its value is too big."""
        skip = 6 if self.line[5] == 32 else 5
        waiting = len(self.line) - skip + (1 if self.has_data else 0)
        assert self.piece_size is not None
        if self.data_bytes + waiting <= self.piece_size:
            return
        if self.event_start < 0:
            self.event_start = self.start
        self.streamed = True
        self.decoder = _utf8_decoder("strict" if self.strict else "replace")
        value = bytes(self.line[skip:])
        self.line = bytearray()
        if self.has_data:
            self.append_data("", 0)  # the LF between this line and the last
        self.has_data = True
        yield from self.stream(value, self.start + skip)

    def stream(self, part: bytes | bytearray, at: int) -> Iterator[Item]:
        """Decode more of a streamed data value (``part`` starts at stream offset ``at``)."""
        self.data_bytes += len(part)
        yield from self.stream_text(self.decode_part(part, at, final=False), at + len(part))

    def decode_part(self, part: bytes | bytearray, at: int, *, final: bool) -> str:
        decoder = self.decoder
        assert decoder is not None
        pending = decoder.getstate()[0]  # an unfinished sequence from the last part
        try:
            return decoder.decode(part, final)
        except UnicodeDecodeError as exc:
            fail(f"invalid UTF-8 ({exc.reason})", at - len(pending) + exc.start)

    def stream_text(self, text: str, end: int) -> Iterator[Item]:
        if text:
            self.data.append(text)
        assert self.piece_size is not None
        if self.data_bytes > self.piece_size:
            yield self.piece(end)

    def end_streaming(self, text_end: int, end: int) -> Iterator[Item]:
        """The streamed data line is complete."""
        text = self.decode_part(b"", text_end, final=True)
        self.decoder = None
        yield from self.stream_text(text, end)

    # ------------------------------------------------------------------ blank line

    def dispatch(self, start: int, end: int) -> Iterator[Item]:
        """Spec: "If the line is empty (a blank line): Dispatch the event."."""
        first = self.first
        state = self.state
        raw_store = self.raw
        if self.skipping:
            # Spec: "Set the last event ID string of the event source to the value of
            # the last event ID buffer."  The block itself is skipped, its bytes too.
            state.last_event_id = self.id_buffer
            self.drop_raw(end)
            yield _new(
                SkippedEvent,
                (
                    self.event_type,
                    self.id_buffer,
                    start - first,
                    first,
                    end,
                    None if raw_store is None else b"",
                ),
            )
        elif self.event_start >= 0:
            state.last_event_id = self.id_buffer
            raw_out = None if raw_store is None else raw_store.hand_out
            if self.pieced:
                if any(self.data):
                    yield self.piece(start)
                yield _new(
                    PiecedEvent,
                    (
                        self.event_type,
                        self.id_buffer,
                        self.block_retry,
                        self.event_start,
                        end,
                        None if raw_out is None else raw_out(end),
                    ),
                )
            elif self.has_data:
                # The event's type is the event type buffer if not empty, else "message";
                # its lastEventId is the last event ID string.
                yield _new(
                    Event,
                    (
                        self.event_type,
                        self.take_data(),
                        self.id_buffer,
                        self.block_retry,
                        self.event_start,
                        end,
                        None if raw_out is None else raw_out(end),
                    ),
                )
            else:
                # Spec: "If the data buffer is an empty string, set the data buffer and
                # the event type buffer to the empty string and return."
                if raw_store is not None:
                    raw_store.safe_end = end
                if self.updates and (self.id_seen or self.block_retry is not None):
                    # It set the last event ID or the reconnection time (_events.Update).
                    raw = None if raw_store is None else b""
                    yield _new(
                        Update, (self.id_buffer, self.block_retry, self.event_start, end, raw)
                    )
                if self.diagnostics:
                    code, message = discarded_block(self.id_seen, self.block_retry is not None)
                    yield self.diagnostic(code, message, self.event_start, end)
        elif raw_store is not None:
            # No field since the last blank line (comments at most).
            raw_store.safe_end = end
        self.data = []  # (the fast loop takes the next block: nothing is kept here)

    # ------------------------------------------------------------------ keep_raw

    def drop_raw(self, upto: int) -> None:
        """keep_raw, skipped block: forget its bytes before stream offset ``upto``."""
        if self.raw is not None:
            self.raw.drop(upto)

    # ------------------------------------------------------------------ diagnostics

    def field_diagnostic(self, field: str, value: str, start: int, end: int) -> Iterator[Item]:
        seen = field_diagnostic(field, value)
        if seen is not None:
            yield self.diagnostic(*seen, start, end)

    def diagnostic(self, code: str, message: str, start: int, end: int) -> Diagnostic:
        # keep_raw: b"", the line's bytes go out with the next item that hands some out.
        raw = None if self.raw is None else b""
        return _new(Diagnostic, (code, message, start, end, raw))

    # ------------------------------------------------------------------ the end

    def end(self) -> EndOfStream:
        """The stream ended inside the block: the EndOfStream for every call from now on."""
        state = self.state
        if state.eos is None:
            # Spec: "Once the end of the file is reached, any pending data must be
            # discarded."  Strict mode still refuses invalid UTF-8 in what it discards,
            # but not in a line it dropped unread.
            if self.strict and self.streamed:
                self.decode_part(b"", self.start + self.length, final=True)
            elif self.strict and self.line and not self.skipping:
                check_cut_line([self.line], self.start, self.window)
            raw_bytes = None if self.raw is None else self.raw.take()
            partial_event = self.has_data or self.skipping
            state.eos = _new(EndOfStream, (self.length, partial_event, raw_bytes))
        return state.eos
