# Interpreting the lines: the parser generator, in the order of the spec's steps.
#
# Spec: WHATWG HTML, "Server-sent events", section 9.2.6 "Interpreting an event stream"
# https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation
# The spec's steps are quoted beside the code that implements them (marked "Spec:").
#
# Strategy.  parse() is one generator that Connection.next_event() resumes once per
# item; its locals hold the line loop's state, so handing out an item costs one resume.
# It sees the connection through two doors (_stream.py): it takes the queued chunks in
# order from the ChunkQueue, and writes the last event ID, the reconnection time, the
# EndOfStream and its own failure in the StreamState.  Its test switches come in as a
# Tuning argument.  It has _lines.py cut the chunks into windows and lines
# (one C-level split per window).  The work done for every line (the blank line that
# dispatches, a comment, a data line, the size check) is inline here, because a Python
# call per line costs about 42 ns; what runs once per window, per stream or rarely (an
# event, id or retry field, a big line, a decoding error, the end of the stream, an
# opt-in mode's work) is in named functions.  Where a window holds a run of blocks of
# one shape (the usual LLM stream), uniform_blocks() in _uniform.py reads the run
# column by column with C-level iterators, and the line loop goes on after it.
#
# The size limit, in one place.  A block (from its first field line, the comments
# among its fields included, to the blank line that dispatches it) may not reach past
# ``deadline`` = its first byte + max_event_size.  A comment before the first field
# moves the block's start past it: nothing is held for it.  The line end that ends
# the current line never counts: a CR that ends a chunk may be half a CRLF, and the
# limit must not depend on the chunking.  Three checks enforce it, each as cheap as
# its place allows:
# - a complete line, when its window may reach the deadline at all (``near_limit``, one
#   comparison per window; otherwise the lines skip the check);
# - the line still arriving, when it grows past ``watch`` (the room the block has left,
#   or SPILL if that is less), at each chunk without a line end and at each window end;
#   spill() in _lines.py then refuses it or moves its bytes aside, at the window's end
#   (a chunk without a line end goes through the window loop only then);
# - uniform_blocks() is not used on a window that may reach the deadline.
#
# Invariants, and why the whole thing is linear in the bytes received:
# - The data buffer is its lines, joined at dispatch (and every FOLD_LINES lines, so
#   that short lines' string headers stay a small fraction of it); each line is copied
#   at most twice.
# - Lines not yet walked exist for at most one window, and the generator stops at each
#   item, or at each run of at most BATCH_BLOCKS items read at once: a huge
#   receive_data() holding a million events never builds a million objects before the
#   caller asks for them (the pull model is the back-pressure).
# - Memory held is the queued chunks, one window and the event being assembled, which
#   max_event_size bounds.  When the parser waits (NEED_DATA) it holds no window, line
#   or item it has handed out: an idle connection costs about as much as a new one.
# - off is always the stream offset of the next byte to walk, and deadline - limit the
#   offset of the current block's first byte (<= off).
#
# Diagnostics (Connection(diagnostics=True)), in the same loop: the spec's rules that
# ignore a field (an unknown name, an invalid retry, an id holding NUL) and the blank
# line that ends a block without data each hand out a Diagnostic where they apply; the
# stream's first line is looked at once, before the loop (_start()).  The items are
# made out of line (_ignored(), _discarded()), in _diagnostics.py's words.  The default
# path pays one test of a local in the branches that ignore something and at a blank
# line that dispatches nothing; a diagnostics connection reads every line in the loop
# (no uniform_blocks()).
#
# The opt-in modes (on_oversize="skip", piece_size), at the same three checks.  Such a
# connection runs this loop too, with ``bound`` (the limit, or piece_size if less) in
# the limit's place: a block that stays short of it is read here like any other.  Where
# the limit would refuse a block, the block goes to a Modes object (_modes.py) instead,
# with what the loop built of it (a Block) and the line being walked: Modes.take_line()
# at a complete line, Modes.take_arriving() at the line still arriving, sub-generators
# the loop delegates to.  From there on (``modal``, deadline -1, so that every line
# takes the check's branch) each of its lines goes there, and the blank line that
# dispatches it gives the next block back to the loop.
# The default path pays one test of a local per chunk without a line end, and the
# window's end offset kept in a local: +0.8% instructions per item on llm at 64-byte
# chunks, +0.1% at 16 KiB (benchmarks/callgrind.py, CPython 3.12).  Issue 20 chose this
# over the spec-literal line-by-line parser that ran these modes before, by
# measurement: that one cost 2.5 to 5.6 times this loop per item on every block.
#
# Measured, not guessed: each speed trick says why it is there, and the commit that made
# it gives what it saved in instructions counted by callgrind.
#
# Why parse() is long (300 lines, nested 7 deep: the try that fails the connection, the
# chunk, window, run and line loops, and two levels of tests in the line loop; comments
# and the spec's words are a quarter of its lines).  The opt-in modes, keep_raw and
# diagnostics reach it only as calls, in branches the default path never enters: issue
# 32 moved their work out (Modes.take_line() and take_arriving(), _spilled_line(),
# _raw_event(), _start(), _ignored(), _discarded()), from 436 lines nested 9 deep.
# Each shorter shape tried costs about 2% of the 3% the core may lose, and any two of
# them pass it, counted by benchmarks/callgrind.py on llm at 64-byte chunks (36,230
# instructions per event before): there a window is a chunk holding about a quarter
# of an event, so per-window and per-chunk work is per-event work:
# - the try/except in a thin wrapper generator that delegates with ``yield from``:
#   +695 instructions per event (+1.9%: the delegation is C-level, but it is paid at
#   every NEED_DATA too) and a second generator frame, +184 bytes per idle connection;
# - the chunk and window loops merged into one, with early continues: +660 (+1.8%);
# - the Event built by a function called once per event: +810 (+2.2%);
# - the chunk, window and run loops in a cut_lines() generator with its state in a
#   __slots__ object (an earlier attempt): about +10%.
# What moved out of line at no measurable cost: the LF of a CRLF split across windows
# (_past_lf), big lines (and keep_raw's, _kept_line), decoding errors, the end of
# stream, what the options make of the loop (_options), and the opt-in work above.

from __future__ import annotations

import sys
from collections.abc import Callable, Generator, Iterator
from typing import TYPE_CHECKING, Final, NamedTuple, NoReturn

from sse_sansio._events import AnyItem, Comment, Diagnostic, EndOfStream, Event, Update
from sse_sansio._need_data import NEED_DATA, NeedData

from ._fields import event_type_of, id_value, retry_value
from ._lines import (
    SPILL,
    WINDOW,
    check_cut_line,
    count_spill,
    exceeds,
    fail,
    sniff_head,
    split_window,
    take_bom,
)
from ._lines import spill as copy_spill
from ._uniform import MIN_BLOCKS, uniform_blocks

if TYPE_CHECKING:
    from ._modes import Modes
    from ._raw import RawBytes
    from ._stream import ChunkQueue, StreamState

__all__ = ["DEFAULT_TUNING", "Tuning", "parse"]


class Tuning(NamedTuple):
    """The parser's test switches, passed to parse() (PyConnection._tuning)."""

    # Where a block goes to _modes.py, in bytes from its start, on any connection
    # (None: only on_oversize="skip" and piece_size connections, at their own bound).
    # Tests set 0, so that every block takes that path and the model referees it.
    hand_over_at: int | None = None
    # Whether runs of same-shaped blocks go to uniform_blocks().  Only tests turn it
    # off, to run every input through the line loop.
    fast_path: bool = True
    # The most bytes split into lines at once (_lines.WINDOW).  Tests set a few bytes,
    # so that the code at window edges runs on every input.
    window: int = WINDOW


DEFAULT_TUNING: Final = Tuning()


# The data buffer joins every this many lines into one string.
FOLD_LINES: Final = 256

# Data lines longer than this are decoded without their "data:" prefix (see _big_value).
BIG_LINE: Final = 64 * 1024

_NO_LIMIT: Final = sys.maxsize

Item = AnyItem | NeedData

# What the line still arriving does past SPILL: _lines.spill() or count_spill().
Spill = Callable[[bytearray, list[bytes], int, int, int, int], int]


def parse(
    queue: ChunkQueue,
    state: StreamState,
    raw_store: RawBytes | None,
    last_event_id: str,
    strict: bool,
    limit: int,
    tuning: Tuning = DEFAULT_TUNING,
    *,
    diagnostics: bool = False,
    skip: bool = False,
    piece_size: int | None = None,
    updates: bool = False,
) -> Iterator[Item]:
    """The parser: a generator that next_event() resumes once per item.

    It takes chunks from ``queue`` and leaves in ``state`` what outlives an item;
    ``raw_store`` is keep_raw's bookkeeping, or None; the rest are the Connection's
    options, checked there (``limit``: sys.maxsize for none), and the test switches.
    The one long function of the package (module header: "Why parse() is long")."""
    try:
        # What the options make of the loop (_options()): a block that grows past
        # ``bound`` goes to ``modes`` (_modes.py) or, without opt-in modes, is refused.
        decode, spill, batch_from, modes, bound = _options(
            state, raw_store, strict, limit, tuning, diagnostics, skip, piece_size, updates
        )
        dataless = diagnostics or updates  # a block without data may give items
        wsize, new, last_id = tuning.window, tuple.__new__, last_event_id
        # The line still arriving (see _lines.py): a bytearray (partial, made below), and
        # its bytes beyond each SPILL in exact-size bytes objects.
        spilled: list[bytes] = []
        spilled_len = 0
        skip_lf = False  # the last window ended with CR: an LF next is its CRLF tail
        # The block being read, as _stream.Block names it (the spec's buffers among it),
        # and         # last_id: what state.last_event_id holds.
        event_start, event_type, id_buffer, id_block = -1, "message", last_event_id, -1
        block_retry: int | None = None
        data_first: str | None = None
        data_lines: list[str] | None = None
        folded = 0  # how many entries of data_lines are folds of FOLD_LINES lines
        # keep_raw: the stream offsets of big data lines' values, each standing in the
        # data buffer as "\r" (see _kept_line()).
        deferred: list[tuple[int, int]] | None = None

        off, head = yield from _start(queue, raw_store, diagnostics)  # off: after any BOM
        partial = bytearray(head)
        modal = False  # the current block is with modes (deadline is then -1)
        deadline = off + bound  # where the block's bytes may not reach past
        room = bound  # deadline - off, as of the end of the last window
        # The length of partial that calls for a look: room - spilled_len, or SPILL if
        # that is less (written out: min() costs more than the rest of a chunk's work).
        watch = min(room, SPILL)

        while True:
            chunk = queue.chunk  # (queue.take(), inline)
            if chunk is None:
                # Nothing left to split: we wait for bytes, or the stream ended.
                yield NEED_DATA if not queue.ended else _end(
                    state, raw_store, [*spilled, partial], off, data_first is not None, strict,
                    wsize, modes if modal else None)  # fmt: skip
                continue
            queue.chunk = None if queue.later is None else queue.take_later()
            if 10 not in chunk and 13 not in chunk:
                skip_lf = False
                if modal:
                    yield from modes.grow(chunk)  # type: ignore[union-attr]
                    yield from modes.chunk_end()  # type: ignore[union-attr]
                    off += len(chunk)
                    continue
                partial += chunk
                if len(partial) <= watch:
                    continue
                if modes is None or spilled_len + len(partial) <= room:
                    # Past watch (rare): the window loop's end spills the line, as at any.
                    del partial[-len(chunk) :]
                else:
                    # The line still arriving takes the block past the bound: to _modes.py.
                    off += yield from modes.take_arriving((deadline - bound, event_start,
                        event_type, id_buffer, block_retry, id_block, data_first, data_lines),
                        spilled, partial, off, spilled_len, len(chunk))  # fmt: skip
                    yield from modes.chunk_end()
                    modal, deadline, data_first, data_lines = True, -1, None, None
                    partial, spilled_len = bytearray(), 0
                    room = watch = -1 - off
                    continue
            size = len(chunk)
            cut = 0
            while cut < size:
                if size - cut <= wsize:
                    window = chunk if cut == 0 else chunk[cut:]
                    cut = size
                else:
                    window, cut = _cut_window(chunk, cut, wsize)
                if skip_lf and window[0] == 10:
                    window = window[1:]
                    off, deadline = _past_lf(
                        raw_store, modes if modal else None, off, deadline, bound
                    )
                    room = deadline - off
                    watch = room - spilled_len if room - spilled_len < SPILL else SPILL
                    if not window:
                        skip_lf = False
                        continue
                # The lines of a run end alike: the line loop adds one constant per line.
                runs = ((window.split(b"\n"), 1),) if 13 not in window else split_window(window)
                skip_lf = window[-1] == 13
                # Whether a line of this window can pass the limit at all: when none can
                # (the usual case), each line skips the check.  (wend: where it ends.)
                near_limit = (wend := off + spilled_len + len(partial) + len(window)) > deadline
                for lines, tlen in runs:
                    tail = lines.pop()  # after the run's last line end: a partial line
                    if not lines:
                        partial += tail
                        continue
                    if partial or spilled_len:
                        if spilled_len:
                            # A line longer than SPILL ends (rare: joined out of line).
                            lines[0], off, event_start, deferred = _spilled_line(raw_store,
                                spilled, partial, lines[0], off, spilled_len, modes is None,
                                deadline, limit, strict, event_start, deferred, wsize)  # fmt: skip
                            spilled_len = 0
                        else:
                            partial += lines[0]
                            lines[0] = bytes(partial)
                        partial = bytearray()
                    if tail:
                        partial = bytearray(tail)

                    # After each blank line, uniform_blocks() may read a stretch of
                    # same-shaped blocks at once; the line loop then goes on after them (a
                    # list iterator's __setstate__ sets its index).  Not near the limit,
                    # nor in a run too short to be worth it (nor as _options() says).
                    batching = len(lines) >= batch_from and not near_limit
                    walk = iter(lines)
                    for raw in walk:
                        length = len(raw)
                        off += length + tlen
                        if near_limit and off - tlen > deadline:
                            if modes is None:
                                exceeds(limit, deadline)
                            # To _modes.py: the line (with the block, if not there yet),
                            # until a blank line there dispatches the block.
                            to_modes = modes.line_end(raw, tlen) if modal else modes.take_line(
                                (deadline - bound, event_start, event_type, id_buffer,
                                block_retry, id_block, data_first, data_lines), raw, tlen, off,
                                wend - cut)  # fmt: skip
                            modal, deadline, data_first, data_lines = True, -1, None, None
                            if (yield from to_modes):
                                # The blank line dispatched it: the next block is ours.
                                modal, deadline = False, off + bound
                                id_buffer, last_id = modes.id_buffer, state.last_event_id
                                event_type, block_retry, event_start = "message", None, -1
                            continue

                        if not raw:
                            # Spec: "If the line is empty (a blank line): Dispatch the event."
                            deadline = off + bound
                            # Spec: "Set the last event ID string of the event source to the
                            # value of the last event ID buffer."  (Only an id field sets it.)
                            if id_buffer is not last_id:
                                state.last_event_id = last_id = id_buffer
                            if data_first is not None and raw_store is None:
                                # Spec: "If the data buffer's last character is a U+000A LINE
                                # FEED (LF) character, then remove the last character from the
                                # data buffer."  Each data line appended its value plus LF;
                                # joining the values with LF is the same string without that
                                # last LF.  The event's type is the event type buffer ("" read
                                # as "message"); its lastEventId, the last event ID string.
                                yield new(Event, (event_type,
                                    data_first if data_lines is None else "\n".join(data_lines),
                                    id_buffer, block_retry, event_start, off, None))  # fmt: skip
                                data_first = data_lines = None
                            elif data_first is not None:
                                # keep_raw: the same, the event's bytes handed out first.
                                yield _raw_event(
                                    raw_store, deferred, strict, event_type, data_first,  # type: ignore[arg-type]
                                    data_lines, id_buffer, block_retry, event_start, off,
                                )  # fmt: skip
                                deferred = data_first = data_lines = None
                            elif dataless and event_start >= 0:
                                # A block with fields dispatched nothing: an Update says what
                                # it set, diagnostics say why (_dataless()).
                                yield from _dataless(updates, diagnostics, id_block,
                                    block_retry, id_buffer, event_start, off,
                                    raw_store)  # fmt: skip
                            elif raw_store is not None:
                                # Nothing to dispatch: keep_raw may forward the block's bytes.
                                raw_store.safe_end = off
                            # Spec: "If the data buffer is an empty string, set the data
                            # buffer and the event type buffer to the empty string and
                            # return."  (After a dispatch they are empty too.)
                            event_type, block_retry, event_start = "message", None, -1
                            if not batching:
                                continue
                            pos = len(lines) - walk.__length_hint__()  # type: ignore[attr-defined]
                            got = uniform_blocks(lines, pos, tlen, off, strict, id_buffer)
                            if got is None:
                                batching = False  # try again in the next window
                                continue
                            items, pos, off = got
                            walk.__setstate__(pos)  # type: ignore[attr-defined]
                            deadline = off + bound
                            yield from items
                            continue

                        if length > BIG_LINE and raw[:5] == b"data:":
                            value = _big_value(raw, strict, off - tlen - length)
                            # Memory: a line longer than a window was joined from its
                            # pieces into lines[0]; it is not kept there past its value.
                            lines[0] = b""
                            line = ""  # (the value is longer: the field test below fails)
                        else:
                            try:
                                line = decode(raw)
                            except UnicodeDecodeError as exc:
                                _bad_utf8(exc, off - tlen - length)
                            # Spec: "If the line starts with a U+003A COLON character (:):
                            # Ignore the line."  We hand it to the caller as a Comment.
                            if raw[0] == 58:  # ":"
                                # Nothing is held for a comment before a block's first
                                # field: the block starts after it.
                                deadline = off + bound if event_start < 0 else deadline
                                # keep_raw: a comment between events is forwarded at once;
                                # one inside an event's fields travels with that event.
                                yield new(Comment, (line[2:] if line[1:2] == " " else line[1:],
                                    off - tlen - length, off, None if raw_store is None
                                    else raw_store.hand_out(off) if event_start < 0
                                    else b""))  # fmt: skip
                                continue
                            # Then the common case, a data line (the spec's rule is below):
                            # removeprefix() takes one argument, so it skips the parsing that
                            # startswith() with a start pays, and it makes no slice object.
                            value = line.removeprefix("data: ")
                        if len(value) == len(line):
                            # Spec: "If the line contains a U+003A COLON character (:):
                            # Collect the characters on the line before the first colon,
                            # and let field be that string.  Collect the characters on the
                            # line after the first colon, and let value be that string.  If
                            # value starts with a U+0020 SPACE character, remove it from
                            # value."  "Otherwise, the string is not empty but does not
                            # contain a colon: use the whole line as the field name, and
                            # the empty string as the field value."  (partition() gives
                            # exactly that, for "data:" without a space too.)
                            field, _, value = line.partition(":")
                            value = value.removeprefix(" ")
                            if event_start < 0:
                                event_start = off - tlen - length
                            # The spec's field rules: _fields.py.
                            if field == "event":
                                event_type = event_type_of(value)
                                continue
                            if field == "id" and (new_id := id_value(value)) is not None:
                                id_buffer, id_block = new_id, event_start
                                continue
                            if field == "retry" and (retry := retry_value(value)) is not None:
                                state.retry = block_retry = retry
                                continue
                            # Spec: "Otherwise: The field is ignored."  (So are an id and a
                            # retry that _fields.py refuses.)  Each is a Diagnostic, if asked.
                            if diagnostics and field != "data":
                                yield _ignored(field, value, off - tlen - length, off, raw_store)
                            if field != "data":
                                continue
                        # Spec: "If the field name is "data": Append the field value to the
                        # data buffer, then append a single U+000A LINE FEED (LF) character."
                        if data_first is None:
                            data_first = value
                            if event_start < 0:
                                event_start = off - tlen - length
                        elif data_lines is None:
                            data_lines, folded = [data_first, value], 0
                        else:
                            data_lines.append(value)
                            if len(data_lines) - folded >= FOLD_LINES:
                                folded = _fold(data_lines, folded)
                # Complete lines were checked as they were walked; the line the window leaves
                # unfinished is checked here and, while it goes on, at each chunk against
                # watch.  (room may be below zero by a line end, which does not count.)
                room = deadline - off
                watch = room - spilled_len if room - spilled_len < SPILL else SPILL
                if partial and len(partial) > watch:
                    if modes is None or (not modal and spilled_len + len(partial) <= room):
                        spilled_len = spill(partial, spilled, spilled_len, room, limit, deadline)
                        watch = room - spilled_len if room - spilled_len < SPILL else SPILL
                        continue
                    # To _modes.py: the line goes on there (with the block, if not there yet).
                    block = None if modal else (deadline - bound, event_start, event_type,
                        id_buffer, block_retry, id_block, data_first, data_lines)  # fmt: skip
                    off += yield from modes.take_arriving(block, spilled, partial, off,
                                                          spilled_len, cut)  # fmt: skip
                    modal, deadline, data_first, data_lines = True, -1, None, None
                    partial, spilled_len = bytearray(), 0
                    room = watch = -1 - off
            if modal:
                yield from modes.chunk_end()  # type: ignore[union-attr]
            # Memory: the chunk is done; drop what the walk kept of it (the window, its
            # lines, the last line and value, a batch of items), so that a connection
            # waiting for data holds nothing it has handed out.
            chunk = window = runs = raw = tail = lines = walk = line = value = items = got = None  # type: ignore[assignment]
    except BaseException as exc:
        # Whatever ended the generator (a protocol error, a signal handler's exception,
        # MemoryError, a bug) may have left its state half-updated: the connection is
        # failed for good (Connection's docstring says how it then behaves).
        state.failed(exc)
        raise


def _options(
    state: StreamState,
    raw_store: RawBytes | None,
    strict: bool,
    limit: int,
    tuning: Tuning,
    diagnostics: bool,
    skip: bool,
    piece_size: int | None,
    updates: bool,
) -> tuple[Callable[[bytes], str], Spill, int, Modes | None, int]:
    """What the Connection's options make of the loop, once per stream.

    - How a line decodes (errors="strict" or "replace").
    - What the line still arriving does past SPILL: its bytes move aside, or in keep_raw
      mode, whose buffer holds them already, they are only counted.
    - The fewest lines a run needs before uniform_blocks() is tried: never in keep_raw
      mode, whose items carry their bytes, nor with diagnostics, which look at every
      field line and block.
    - The opt-in modes' object, if any, and the loop's bound on a block.  The bound is
      never above what the modes act on: the limit, or piece_size (a piece is due only
      once more than piece_size bytes of data wait, and they take at least as many
      bytes of the stream).  With errors="replace" a value's U+FFFD may stand for other
      bytes, so a block's data cannot tell _modes.py how many bytes it took: such a
      piece_size connection gives every block to _modes.py (bound 0).
    """
    decode = bytes.decode if strict else _decode_replace
    spill = copy_spill if raw_store is None else count_spill
    batched = tuning.fast_path and raw_store is None and not diagnostics
    batch_from = 2 * MIN_BLOCKS if batched else _NO_LIMIT
    if not skip and piece_size is None and tuning.hand_over_at is None:
        return decode, spill, batch_from, None, limit
    # Imported here: most processes never make such a connection.
    from ._modes import Modes

    modes = Modes(
        state, raw_store, strict, limit,
        skip=skip, piece_size=piece_size, diagnostics=diagnostics, window=tuning.window,
        updates=updates,
    )  # fmt: skip
    bound = limit
    if piece_size is not None:
        bound = piece_size if strict else 0
    if tuning.hand_over_at is not None:
        bound = min(bound, tuning.hand_over_at)
    return decode, spill, batch_from, modes, bound


def _start(
    queue: ChunkQueue, raw_store: RawBytes | None, diagnostics: bool
) -> Generator[Item, None, tuple[int, bytes]]:
    """The stream's start, once: the offset after any BOM and the first bytes after it.

    keep_raw may forward the BOM alone; diagnostics look at the stream's first line.
    """
    off, head = yield from take_bom(queue)
    if raw_store is not None:
        raw_store.safe_end = off
    if diagnostics:
        yield from _sniff(queue, head, off, raw_store)
    return off, head


def _cut_window(chunk: bytes, cut: int, wsize: int) -> tuple[bytes, int]:
    """The next window of a chunk longer than ``wsize`` from ``cut`` on, and its end."""
    end = cut + wsize
    if chunk[end - 1] == 13 and chunk[end] == 10:
        end += 1  # keep a CRLF whole: only the caller's chunks split one
    return chunk[cut:end], end


def _past_lf(
    raw_store: RawBytes | None, modes: Modes | None, off: int, deadline: int, limit: int
) -> tuple[int, int]:
    """Step over the LF of a CRLF whose CR ended the last window: the new off, deadline.

    The LF belongs to the line already walked.  A block boundary or a keep_raw safe
    point just before it moves past it, so that neither the limit nor keep_raw depends
    on the chunking; ``modes`` holds the block, if not None, and moves its own.
    """
    if modes is not None:
        modes.past_lf()
    off += 1
    if deadline - limit == off - 1:  # the block started just before the LF
        deadline = off + limit
    if raw_store is not None and raw_store.safe_end == off - 1:
        raw_store.safe_end = off
    return off, deadline


def _decode_replace(raw: bytes) -> str:
    """UTF-8 decoding as browsers do it: U+FFFD for each invalid sequence."""
    return raw.decode("utf-8", "replace")


def _bad_utf8(exc: UnicodeDecodeError, start: int) -> NoReturn:
    """Strict mode: the line at stream offset ``start`` holds invalid UTF-8."""
    fail(f"invalid UTF-8 ({exc.reason})", start + exc.start)


def _big_value(raw: bytes, strict: bool, start: int) -> str:
    """The value of a data line longer than BIG_LINE, which starts at ``start``.

    Memory: decoded straight from its bytes, without the "data:" prefix, so that the
    line is never held as bytes, as text and as the value at once (three times the
    event, not two).
    """
    skip = 6 if raw[5:6] == b" " else 5
    try:
        with memoryview(raw) as view:
            return str(view[skip:], "utf-8", "strict" if strict else "replace")
    except UnicodeDecodeError as exc:
        fail(f"invalid UTF-8 ({exc.reason})", start + skip + exc.start)


def _spilled_line(
    raw_store: RawBytes | None,
    spilled: list[bytes],
    partial: bytearray,
    rest: bytes,
    off: int,
    spilled_len: int,
    check: bool,
    deadline: int,
    limit: int,
    strict: bool,
    event_start: int,
    deferred: list[tuple[int, int]] | None,
    wsize: int,
) -> tuple[bytes, int, int, list[tuple[int, int]] | None]:
    """A line longer than SPILL ends in this window, with ``rest``; it starts at ``off``.

    Its first bytes are ``spilled``, then ``partial`` (see _lines.py), or in keep_raw
    mode the first ``spilled_len`` are in ``raw_store`` only (count_spill()).  Returns
    the line for the line loop to walk, and the new off, event_start and deferred:
    keep_raw defers a big data line's value (_kept_line()), after the size check, which
    comes first as in the line loop (``check``: no opt-in mode; with one, the line loop
    checks the line and hands it over).
    """
    if raw_store is None:
        line = b"".join([*spilled, partial, rest])
        spilled.clear()
        return line, off, event_start, deferred
    length = spilled_len + len(partial) + len(rest)
    if not check:
        return raw_store.copy(off, off + length), off, event_start, deferred
    if off + length > deadline:
        exceeds(limit, deadline)
    return _kept_line(raw_store, off, length, strict, event_start, deferred, wsize)


# What a deferred data line leaves for the line loop to walk: a data line whose value
# is the stand-in "\r" (no value holds a CR: CR ends lines).
_STAND_IN: Final = b"data: \r"


def _kept_line(
    raw_store: RawBytes,
    off: int,
    length: int,
    strict: bool,
    event_start: int,
    deferred: list[tuple[int, int]] | None,
    wsize: int,
) -> tuple[bytes, int, int, list[tuple[int, int]] | None]:
    """keep_raw mode: the line at stream ``off`` that spilled, ``length`` bytes long.

    Its bytes are in ``raw_store`` only (count_spill()), none handed out (safe_end <=
    off).  Returns the line for the line loop to walk, the new off, event_start and
    deferred.  Any line but a data one is copied out and walked as it is (a big
    comment or id peaks at up to 5 times its size, as before).  A data line is
    deferred: its value stays in ``raw_store``, known by its stream offsets, and is
    decoded at dispatch from the bytes the event hands out (_raw_event()), so
    that the line is never held a third time.  Strict mode checks its UTF-8 now, a
    window at a time, at the offset the line loop would report.  The loop then walks
    _STAND_IN in its place: off moves so that the stand-in ends where the line does,
    and the block starts at the line.
    """
    end = off + length
    if raw_store.copy(off, off + 5) != b"data:":
        return raw_store.copy(off, end), off, event_start, deferred
    # Spec: "If value starts with a U+0020 SPACE character, remove it from value."
    start = off + (6 if raw_store.copy(off + 5, off + 6) == b" " else 5)
    if strict:
        raw_store.check_utf8(start, end, wsize)
    if deferred is None:
        deferred = []
    deferred.append((start, end))
    return _STAND_IN, end - len(_STAND_IN), off if event_start < 0 else event_start, deferred


def _raw_event(
    raw_store: RawBytes,
    deferred: list[tuple[int, int]] | None,
    strict: bool,
    event_type: str,
    data_first: str,
    data_lines: list[str] | None,
    id_buffer: str,
    retry: int | None,
    start: int,
    end: int,
) -> Event:
    """keep_raw mode: dispatch an event, whose data values may be deferred (see
    _kept_line()).

    The event's bytes are handed out first, which frees raw_store's copy when nothing
    follows them; the data lines are joined only then, and each deferred value is
    decoded from those bytes and takes the place of its stand-in in the data buffer.
    One big data line peaks at twice its size; many lines at 3 times (the raw bytes,
    the lines and their join: a str cannot grow in place, so the lines and the joined
    data coexist for a moment, and bytes() of keep_raw's bytearray is a copy).  Joining
    before the hand-out, as this did until issue 21, held the lines, the join, the
    bytearray and the copy at once: 4 times.
    """
    base = raw_store.start
    out = raw_store.hand_out(end)
    data = data_first if data_lines is None else "\n".join(data_lines)
    if not deferred:
        return tuple.__new__(Event, (event_type, data, id_buffer, retry, start, end, out))
    errors = "strict" if strict else "replace"  # strict: checked already
    with memoryview(out) as view:
        values = [str(view[a - base : b - base], "utf-8", errors) for a, b in deferred]
    if data == "\r":
        data = values.pop()  # the usual case: one data line, never joined
    else:
        parts = data.split("\r")
        pieces = [parts[0]]
        for value, part in zip(values, parts[1:], strict=True):
            pieces += (value, part)
        data = "".join(pieces)
    return tuple.__new__(Event, (event_type, data, id_buffer, retry, start, end, out))


# Diagnostics.  _diagnostics.py is imported where it is used: most processes never ask
# for diagnostics, and it is a tenth of the package's import time (python -X importtime,
# CPython 3.12).


def _sniff(queue: ChunkQueue, head: bytes, off: int, raw_store: RawBytes | None) -> Iterator[Item]:
    """The look at the stream's first line (``head`` holds its first bytes, at ``off``)."""
    from ._diagnostics import SNIFF_BYTES, sniff_start

    first_line = yield from sniff_head(queue, head, SNIFF_BYTES)
    if (seen := sniff_start(first_line)) is not None:
        yield _diagnostic(seen, off, off + len(first_line), raw_store)


def _ignored(
    field: str, value: str, start: int, end: int, raw_store: RawBytes | None
) -> Diagnostic:
    """A field line the spec ignores (an unknown field, an invalid id or retry)."""
    from ._diagnostics import field_diagnostic

    return _diagnostic(field_diagnostic(field, value), start, end, raw_store)


def _dataless(
    updates: bool,
    diagnostics: bool,
    id_block: int,
    retry: int | None,
    last_id: str,
    start: int,
    end: int,
    raw_store: RawBytes | None,
) -> Iterator[Item]:
    """A block with fields (from ``start``) but no data ends at ``end``: it dispatches
    nothing.  With updates, an Update when it set the last event ID (an id field taken
    in it: ``id_block == start``) or the reconnection time (_events.Update gives the
    rule; ``last_id`` is the last event ID string it leaves); with diagnostics, then, the
    Diagnostic that says why nothing was dispatched.  keep_raw may forward its bytes."""
    if raw_store is not None:
        raw_store.safe_end = end
    if updates and (id_block == start or retry is not None):
        yield tuple.__new__(
            Update, (last_id, retry, start, end, None if raw_store is None else b"")
        )
    if diagnostics:
        yield _discarded(id_block, retry, start, end, raw_store)


def _discarded(
    id_block: int, retry: int | None, start: int, end: int, raw_store: RawBytes | None
) -> Diagnostic:
    """A block with fields (from ``start``) but no data ends at ``end``: it dispatches
    nothing.  keep_raw may forward its bytes."""
    from ._diagnostics import discarded_block

    if raw_store is not None:
        raw_store.safe_end = end
    return _diagnostic(discarded_block(id_block == start, retry is not None), start, end, raw_store)


def _diagnostic(
    seen: tuple[str, str] | None, start: int, end: int, raw_store: RawBytes | None
) -> Diagnostic:
    """Diagnostics: the item for what a classifier of _diagnostics.py saw.

    keep_raw: its raw is b"", the line's bytes go out with the next item that hands
    some out (or take_raw()).
    """
    assert seen is not None  # (the callers ask only where a diagnostic applies)
    return tuple.__new__(Diagnostic, (*seen, start, end, None if raw_store is None else b""))


def _fold(data_lines: list[str], folded: int) -> int:
    """Join the data lines since the last fold into one; return the new fold count.

    Memory: a str costs about 50 bytes beyond its text, so a block of short data lines
    would take several times max_event_size before the limit refused it.  Each line is
    copied once more at most, so the cost stays linear.
    """
    data_lines[folded:] = ["\n".join(data_lines[folded:])]
    return folded + 1


def _end(
    state: StreamState,
    raw_store: RawBytes | None,
    line: list[bytes | bytearray],
    offset: int,
    partial_event: bool,
    strict: bool,
    wsize: int,
    modes: Modes | None,
) -> EndOfStream:
    """The stream ended: the EndOfStream to return on every call from now on.

    ``line`` is the unterminated last line, in pieces; it starts at stream ``offset``.
    In keep_raw mode, whose buffer holds the line (count_spill() dropped the parser's
    copy of its first bytes), it is read from there.  ``modes``: the block is there,
    and so is what the stream ends in.
    """
    if modes is not None:
        return modes.end()
    if state.eos is None:
        if raw_store is not None:
            line = [raw_store.tail(offset)]
        # Spec: "Once the end of the file is reached, any pending data must be
        # discarded.  (If the file ends in the middle of an event, before the final
        # empty line, the incomplete event is not dispatched.)"  Strict mode still
        # refuses invalid UTF-8 in what it discards.
        length = sum(map(len, line))
        if strict and length:
            check_cut_line(line, offset, wsize)
        raw_bytes = None if raw_store is None else raw_store.take()
        state.eos = tuple.__new__(EndOfStream, (length, partial_event, raw_bytes))
    return state.eos
