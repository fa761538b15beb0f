# The fast path for runs of blocks that all have the same shape.
#
# Real streams repeat one block shape thousands of times: OpenAI's chat completions send
# "data: {json}" blocks, Anthropic's Messages API and OpenAI's Responses API send
# "event: name" then "data: {json}", servers keep idle connections alive with ": ping"
# blocks.  The line loop in _interpret.py pays a few dozen bytecodes per line, and a
# decode() call per line.  Here a run of such blocks is turned into items column by
# column (the first lines of all blocks, then the second lines, ...) by iterators that
# run in C: map() of startswith() to check a column, map() of a slice and decode() to
# read it, accumulate() for the byte offsets, map() of tuple.__new__ to build the
# items.  The Python-level work is per call, not per block.
#
# It is only an accelerator: it returns None (and the line loop does the work) for
# anything it does not handle exactly as the line loop would: id and retry fields (they
# change the connection's state between items), a comment inside an event, empty event
# types, invalid UTF-8 in strict mode (the line loop finds the offset of the bad byte),
# a block whose shape differs from the first.  The differential and property tests run
# both paths against the same reference model.

from __future__ import annotations

from collections.abc import Callable, Iterable
from itertools import accumulate, repeat
from operator import add, itemgetter, sub
from typing import NamedTuple

from sse_sansio._events import Comment, Event

__all__ = ["BATCH_BLOCKS", "MIN_BLOCKS", "Batch", "uniform_blocks"]

# The most blocks turned into items in one call.  It bounds the work wasted when a
# block's shape differs from the first (everything is checked before anything is
# built) and the number of items built ahead of the caller.
BATCH_BLOCKS = 128

# The fewest blocks worth a call: below it, making the iterators costs more than the
# line loop would (measured in instructions per event at several chunk sizes).
MIN_BLOCKS = 8

# Creating an iterator costs as much as handling a few items with it, and a call reads
# only a handful of blocks when chunks are small, so the constant ones are made once.
# An endless repeat() can be shared: map() and zip() stop at their shortest input.
_EVENTS = repeat(Event)
_COMMENTS = repeat(Comment)
_NONES = repeat(None)
_MESSAGES = repeat("message")
_UTF8 = repeat("utf-8")
_REPLACE = repeat("replace")
_SMALL = [repeat(n) for n in range(16)]  # line-end bytes per block, usually 2 to 6


class _Kind(NamedTuple):
    """One kind of line a column may hold, read with one prefix."""

    field: bytes  # b"data", b"event", or b"" for a comment (in one-line blocks only)
    value_of: Callable[[bytes], bytes]  # the bytes after the prefix
    prefixes: Iterable[bytes]  # the prefix, endlessly: every cell must start with it
    spaced: Iterable[bytes]  # the prefix plus a space: after a bare colon, none may


# The kinds of line a column may hold, by prefix, with and without the space after the
# colon.
_KINDS = {
    prefix: _Kind(name, itemgetter(slice(len(prefix), None)), repeat(prefix), repeat(prefix + b" "))
    for name in (b"data", b"event", b"")
    for prefix in (name + b": ", name + b":")
}


class Batch(NamedTuple):
    """What uniform_blocks() read: the items, and where the line loop goes on."""

    items: list[Event] | list[Comment]
    pos: int  # the index of the first line not consumed
    off: int  # its stream offset


_new = tuple.__new__


def uniform_blocks(
    lines: list[bytes], pos: int, tlen: int, off: int, strict: bool, last_id: str
) -> Batch | None:
    """Items for blocks of one shape at the start of ``lines[pos:]``, or None.

    ``lines`` are complete lines without their line ends, each ended by ``tlen`` bytes;
    ``lines[pos]`` starts a block at stream offset ``off``, with no field seen in it
    yet.  Returns a Batch, or None when fewer than MIN_BLOCKS blocks can be read this
    way.
    """
    try:
        period = lines.index(b"", pos) - pos + 1  # the field lines and their blank line
    except ValueError:
        return None  # no whole block
    count = (len(lines) - pos) // period
    if period == 1 or count < MIN_BLOCKS:
        return None  # a blank line first (the line loop takes it), or too few blocks
    if count > BATCH_BLOCKS:
        count = BATCH_BLOCKS
    # Every block must have its blank line where the first one has.
    blanks = lines[pos + period - 1 : pos + count * period : period]
    if any(blanks):
        count = [*map(bool, blanks)].index(True)

    # Each column (the first lines of all blocks, the second lines, ...) holds one kind
    # of line, which the first block decides, read with one prefix: the field name, the
    # colon and, if the first block's line has it, the space.  (Spec: "If value starts
    # with a U+0020 SPACE character, remove it from value.")  A line of the column that
    # does not start with that prefix ends the run before its block.
    columns = []
    for column in range(pos, pos + period - 1):
        cells = lines[column : pos + count * period : period]
        line = cells[0]
        prefix = line[:6]
        kind = _KINDS.get(prefix)  # "data: " and "event:" at once, the usual prefixes
        if kind is None or (prefix == b"event:" and line[6:7] == b" "):
            colon = line.find(b":") + 1  # 0 if there is none: no kind has an empty prefix
            if line[colon : colon + 1] == b" ":
                colon += 1
            prefix = line[:colon]
            kind = _KINDS.get(prefix)
        if kind is None or (not kind.field and period > 2):
            return None  # id, retry, other fields, or a comment inside an event
        if not all(map(bytes.startswith, cells, kind.prefixes)) or (
            prefix[-1] == 58 and any(map(bytes.startswith, cells, kind.spaced))
        ):
            count = min(count, _first_mismatch(cells, prefix))
        columns.append((kind, cells))
    if count < MIN_BLOCKS:
        return None

    # Read the values: a slice and a decode() per line, both called from C by map(),
    # lazily, so that they go straight into the items.  (Decoding a line whole and
    # slicing the text costs more: a slice of non-ASCII text is scanned again for its
    # widest character.)
    types: Iterable[str] = _MESSAGES
    data = []
    comments = None
    sizes: Iterable[int] = ()
    try:
        for kind, cells in columns:
            if len(cells) > count:  # a mismatch cut the run short
                cells = cells[:count]
            if strict:
                values = map(bytes.decode, map(kind.value_of, cells))
            else:
                values = map(bytes.decode, map(kind.value_of, cells), _UTF8, _REPLACE)
            sizes = map(len, cells) if not sizes else map(add, sizes, map(len, cells))
            if kind.field == b"data":
                data.append(values)
            elif kind.field:
                types = list(values)
                if "" in types:
                    return None  # an empty type means "message": the line loop says so
                # (A later event line in the block wins, as in the line loop.)
            else:
                comments = values

        # Stream offsets: each block is its lines, their line ends and the blank line.
        step = period * tlen
        steps = _SMALL[step] if step < len(_SMALL) else repeat(step)
        bounds = list(accumulate(map(add, sizes, steps), initial=off))
        starts = bounds[:-1]
        ends = bounds[1:]
        # (zip() without strict=: parsing that keyword costs as much as zip() itself.
        # The repeat()s are endless; the other inputs have one entry per block.)
        items: list[Event] | list[Comment]
        if comments is not None:
            # A comment ends with its own line end; its blank line belongs to no item.
            fields = zip(comments, starts, map(sub, ends, _SMALL[tlen]), _NONES)  # noqa: B905
            items = list(map(_new, _COMMENTS, fields))
        else:
            values = data[0] if len(data) == 1 else map("\n".join, zip(*data, strict=True))
            fields = zip(types, values, repeat(last_id), _NONES, starts, ends, _NONES)
            items = list(map(_new, _EVENTS, fields))
    except UnicodeDecodeError:
        return None  # strict mode: the line loop reports where
    # (tuple.__new__ skips the Python-level __new__ a NamedTuple class has.)
    return _new(Batch, (items, pos + count * period, bounds[-1]))


def _first_mismatch(cells: list[bytes], prefix: bytes) -> int:
    """The index of the first line that does not read with ``prefix``."""
    spaced = prefix + b" " if prefix.endswith(b":") else None
    for index, line in enumerate(cells):
        if not line.startswith(prefix) or (spaced and line.startswith(spaced)):
            return index
    return len(cells)  # pragma: no cover - only called after a mismatch was found
