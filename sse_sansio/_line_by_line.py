# The second parser path: one line at a time, for on_oversize="skip" and piece_size.
#
# Spec: WHATWG HTML, "Server-sent events", section 9.2.6 "Interpreting an event stream"
# https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation
#
# Why it exists.  The default path (_interpret.py) is fast because it never looks at a
# line alone: it splits windows with one C-level call and reads runs of same-shaped
# blocks column by column.  The three opt-in modes need to act *inside* a line or a
# block: on_oversize="skip" drops a block at the byte where the limit refuses it and
# goes on; piece_size hands out a data value while its line is still arriving;
# diagnostics looks at each field line.  A connection that sets on_oversize="skip" or
# piece_size gets this generator (Connection.__init__ chooses, once); diagnostics alone
# runs on the default parser (_interpret.py), whose per-line step names what the spec
# ignores, and here only beside the other two (both share _lines.sniff_head() and the
# classifiers of _diagnostics.py).  Issue 20 folds the other two into _interpret.py as
# well: measured with benchmarks/callgrind.py on the pure core, this parser costs 2.5 to
# 5.6 times the default one per item on the default workloads (llm 101,881 against
# 35,901 instructions per item at 64-byte chunks, 57,620 against 10,911 at 16 KiB), so
# it cannot be the one Python core.  It has the
# same contract as _interpret.parse: resumed once per item, yielding items and
# NEED_DATA, seeing the connection only through its ChunkQueue and StreamState
# (_stream.py), failing the stream through state.failed() on any exception.
#
# What it costs.  It is spec-literal and simple: a regex search per line end, a few
# Python calls per line, no same-shape fast path.  Measured against the pure default
# path (CPython 3.11, 64 KiB chunks, best of 3, a busy shared machine): 5x to 8x its time
# on short LLM-style events (2-3 MB of them), about 4x on a 32 MiB data line, 10x to 17x
# on a stream of blank lines (2 MB).  Only connections that ask pay it.
#
# Everything the default path guarantees holds here too: the span rule, the BOM
# look-ahead, strict/replace UTF-8 with exact offsets, keep_raw's raw and take_raw(),
# last_event_id and retry, the size limit at exactly the same offset, sticky failure and
# the EndOfStream.  The differential tests run this path against the reference model.
#
# The size limit.  A block may not reach past ``mark + limit``, where ``mark`` is the
# block's first byte, as on the default path; with piece_size, ``mark`` moves to the end
# of the bytes each DataPiece covers, so the limit bounds what the connection *holds*
# (a pieced event may be any size; a huge comment, event or id line is still refused).
# The line still arriving counts with the bytes it has; its line end never counts.
#
# Invariants:
# - ``start`` is the stream offset of the line being assembled and ``length`` its bytes
#   so far; ``line`` holds them, unless the line is dropped (a line longer than the
#   limit in a skipped block) or streamed (a data line handed out in pieces): then
#   ``line`` stays empty and memory stays bounded whatever the line's size.
# - A huge chunk is walked a window (``window`` bytes) at a time while its bytes are
#   dropped or streamed, so no copy of it is made whole.
# - Items come in stream order, each as soon as the line end that completes it has
#   arrived (a piece: as soon as more than piece_size bytes of data wait).

from __future__ import annotations

import codecs
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Final

from ._diagnostics import SNIFF_BYTES, discarded_block, field_diagnostic, sniff_start
from ._events import (
    AnyItem,
    Comment,
    DataPiece,
    Diagnostic,
    EndOfStream,
    Event,
    PiecedEvent,
    SkippedEvent,
)
from ._fields import event_type_of, id_value, retry_value
from ._lines import WINDOW, check_cut_line, exceeds, fail, sniff_head, take_bom
from ._need_data import NEED_DATA, NeedData

if TYPE_CHECKING:
    from ._raw import RawBytes
    from ._stream import ChunkQueue, StreamState

__all__ = ["parse"]

Item = AnyItem | NeedData

# The data buffer joins every this many texts into one (see _interpret.FOLD_LINES).
FOLD: Final = 256

_LINE_END: Final = re.compile(rb"[\r\n]")
_utf8_decoder: Final = codecs.getincrementaldecoder("utf-8")
_KEPT_IN_SKIP: Final = (b"event", b"id", b"retry")
_new = tuple.__new__


def parse(
    queue: ChunkQueue,
    state: StreamState,
    raw: RawBytes | None,
    last_event_id: str,
    strict: bool,
    limit: int,
    *,
    skip: bool,
    piece_size: int | None,
    diagnostics: bool,
    window: int = WINDOW,
) -> Iterator[Item]:
    """The line-by-line parser: a generator that next_event() resumes once per item.

    It takes chunks from ``queue`` and leaves in ``state`` what outlives an item;
    ``raw`` is keep_raw's bookkeeping, or None.  ``strict`` (errors="strict"),
    ``limit`` (max_event_size, sys.maxsize for none), ``skip``, ``piece_size`` and
    ``diagnostics`` are Connection's options (checked there): on_oversize="skip",
    piece_size and diagnostics.  ``window`` is a test switch (_interpret.Tuning).
    """
    try:
        parser = _Parser(state, raw, last_event_id, strict, limit, skip, piece_size)
        parser.diagnostics = diagnostics
        parser.window = window
        yield from parser.run(queue)
    except BaseException as exc:
        # As on the default path: whatever ended the generator, its state may be
        # half-updated, so the connection is failed for good.
        state.failed(exc)
        raise


class _Parser:
    """The state of one line-by-line parse (the generator's locals, named).

    Speed: 29 attributes.  CPython keeps at most 30 in an instance's shared-key layout;
    with 31 (the queue and the window added) every attribute access got slower, +10%
    per item counted by benchmarks/callgrind.py, so the queue is run()'s argument.
    """

    def __init__(
        self,
        state: StreamState,
        raw: RawBytes | None,
        last_event_id: str,
        strict: bool,
        limit: int,
        skip: bool,
        piece_size: int | None,
    ) -> None:
        self.state = state
        self.limit = limit
        self.strict = strict
        self.raw = raw
        self.skip_mode = skip
        self.piece_size = piece_size
        self.diagnostics = False
        self.window = WINDOW
        # The line being assembled (see the module header).
        self.start = 0
        self.length = 0
        self.line = bytearray()
        self.dropped = False  # the line is too long for a skipped block: dropped whole
        self.streamed = False  # a data line whose value goes out in pieces as it comes
        self.decoder: codecs.IncrementalDecoder | None = None
        self.skip_lf = False  # the last chunk ended with CR: an LF next is its CRLF tail
        # The block: its first byte, where the limit counts from, and the spec's buffers.
        self.first = 0
        self.mark = 0
        self.skipping = False  # the block outgrew the limit (on_oversize="skip")
        self.event_start = -1  # the block's first field line; -1: none yet
        self.event_type = "message"
        self.id_buffer = last_event_id
        self.block_retry: int | None = None
        self.id_seen = False  # (a retry taken: block_retry is not None)
        # The data buffer: texts to join, the second line's on with its LF in front.
        self.data: list[str] = []
        self.folded = 0
        self.has_data = False
        self.data_bytes = 0  # UTF-8 bytes of the data not handed out yet
        self.pieced = False  # a DataPiece of this block was handed out
        self.covered = 0  # where the stream bytes handed out by pieces end

    # ------------------------------------------------------------------ the loop

    def run(self, queue: ChunkQueue) -> Iterator[Item]:
        off, head = yield from take_bom(queue)
        self.start = self.first = self.mark = off
        self.line += head  # only when the stream ended inside what may be a BOM
        self.length = len(head)
        if self.raw is not None:
            self.raw.safe_end = off  # the BOM alone is safe to forward
        if self.diagnostics:
            yield from self.sniff(queue)
        while True:
            chunk = queue.take()
            if chunk is None:
                if not queue.ended:
                    yield NEED_DATA
                    continue
                yield self.end()
                continue
            yield from self.walk(chunk)

    def walk(self, chunk: bytes) -> Iterator[Item]:
        """Cut one chunk into the line still arriving and complete lines."""
        pos = 0
        size = len(chunk)
        if self.skip_lf:
            self.skip_lf = False
            if chunk[0] == 10:
                # The LF of a CRLF whose CR ended the last chunk: it belongs to the line
                # already walked, and a block boundary or keep_raw safe point just
                # before it moves past it (the span rule; see _interpret.py).
                pos = 1
                self.start += 1
                if self.first == self.start - 1:
                    self.first = self.start
                if self.mark == self.start - 1:
                    self.mark = self.start
                if self.raw is not None and self.raw.safe_end == self.start - 1:
                    self.raw.safe_end = self.start
        while pos < size:
            found = _LINE_END.search(chunk, pos)
            if found is None:
                yield from self.grow(chunk, pos, size)
                return
            end = found.start()
            if chunk[end] == 10:
                tlen = 1
            elif end + 1 < size:
                tlen = 2 if chunk[end + 1] == 10 else 1
            else:
                tlen = 1
                self.skip_lf = True
            if end > pos:
                yield from self.grow(chunk, pos, end)
            yield from self.complete(tlen)
            pos = end + tlen

    # ------------------------------------------------------------------ one line

    def grow(self, chunk: bytes, lo: int, hi: int) -> Iterator[Item]:
        """The bytes ``chunk[lo:hi]`` continue the line being assembled."""
        while lo < hi:
            step = min(hi, lo + self.window)  # a window at a time: no big copy
            part = chunk[lo:step] if lo or step < len(chunk) else chunk
            self.length += step - lo
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
            lo = step
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

    def complete(self, tlen: int) -> Iterator[Item]:
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
        elif self.skipping:
            self.skipped_line(raw, start)
            self.drop_raw(end)
        else:
            yield from self.field_line(raw, start, end)

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
        """The spec's steps for a field other than data."""
        # Spec: "If the field name is "event": Set the event type buffer to field value."
        if field == "event":
            self.event_type = event_type_of(value)
        # Spec: "If the field name is "id": If the field value does not contain U+0000
        # NULL, then set the last event ID buffer to the field value.  Otherwise, ignore
        # the field."
        elif field == "id":
            new_id = id_value(value)
            if new_id is not None:
                self.id_buffer = new_id
                self.id_seen = True
        # Spec: "If the field name is "retry": If the field value consists of only
        # ASCII digits, then interpret the field value as an integer in base ten, and
        # set the event stream's reconnection time to that integer."
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

    def stream(self, part: bytes, at: int) -> Iterator[Item]:
        """Decode more of a streamed data value (``part`` starts at stream offset ``at``)."""
        self.data_bytes += len(part)
        yield from self.stream_text(self.decode_part(part, at, final=False), at + len(part))

    def decode_part(self, part: bytes, at: int, *, final: bool) -> str:
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
                        None if raw_store is None else raw_store.hand_out(end),
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
                        None if raw_store is None else raw_store.hand_out(end),
                    ),
                )
            else:
                # Spec: "If the data buffer is an empty string, set the data buffer and
                # the event type buffer to the empty string and return."
                if raw_store is not None:
                    raw_store.safe_end = end
                if self.diagnostics:
                    yield from self.discarded(end)
        elif raw_store is not None:
            # No field since the last blank line (comments at most).
            raw_store.safe_end = end
        self.first = self.mark = end
        self.skipping = self.has_data = self.pieced = False
        self.data = []
        self.folded = self.data_bytes = 0
        self.id_seen = False
        self.event_type = "message"
        self.block_retry = None
        self.event_start = -1

    # ------------------------------------------------------------------ keep_raw

    def drop_raw(self, upto: int) -> None:
        """keep_raw, skipped block: forget its bytes before stream offset ``upto``."""
        if self.raw is not None:
            self.raw.drop(upto)

    # ------------------------------------------------------------------ diagnostics

    def sniff(self, queue: ChunkQueue) -> Iterator[Item]:
        """Diagnostics: what the stream's first bytes look like (once per stream).

        Waits for the first line end (or SNIFF_BYTES, or the end of the stream): no
        item can come before it anyway.  The bytes go back to the front of the queue.
        """
        # (self.line: the start of a BOM that the stream's end cut.)
        head = yield from sniff_head(queue, bytes(self.line), SNIFF_BYTES)
        seen = sniff_start(head)
        if seen is not None:
            yield self.diagnostic(*seen, self.start, self.start + len(head))

    def field_diagnostic(self, field: str, value: str, start: int, end: int) -> Iterator[Item]:
        seen = field_diagnostic(field, value)
        if seen is not None:
            yield self.diagnostic(*seen, start, end)

    def discarded(self, end: int) -> Iterator[Item]:
        code, message = discarded_block(self.id_seen, self.block_retry is not None)
        yield self.diagnostic(code, message, self.event_start, end)

    def diagnostic(self, code: str, message: str, start: int, end: int) -> Diagnostic:
        # keep_raw: b"", the line's bytes go out with the next item that hands some out.
        raw = None if self.raw is None else b""
        return _new(Diagnostic, (code, message, start, end, raw))

    # ------------------------------------------------------------------ the end

    def end(self) -> EndOfStream:
        """The stream ended: the EndOfStream to return on every call from now on."""
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
