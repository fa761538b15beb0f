# The two doors between a pure Connection and its parser: the chunk queue and the
# stream state; and the one between the parser and its opt-in modes: a Block.
#
# Strategy.  PyConnection (_connection.py) owns one ChunkQueue and one StreamState and
# hands both to the parser generator (_interpret.parse) when it makes it; the parser
# sees these two objects, never the Connection, as h11's readers see a receive buffer.
# receive_data() puts chunks in the queue and the parser takes them; the parser writes
# what outlives an item (the last event ID, the reconnection time, the EndOfStream, the
# exception that failed the stream) in the state, and the Connection reads it there.
# Both are __slots__ objects with plain attributes: the parser's hot loop reads and
# writes them inline (an attribute of a slotted object costs no more than one in an
# instance dict), and only the rare steps are methods.
#
# Invariants:
# - The queue is ``chunk``, the oldest chunk not yet taken (or None), then ``later``, a
#   deque of the newer ones, made only while the caller feeds faster than it drains:
#   None or not empty, and never set while ``chunk`` is None.  Memory: an empty deque
#   costs 760 bytes (its first block), a third of an idle connection, and a connection
#   is fed and drained in turn almost always; taking from the slot costs no more than a
#   deque's popleft() (counted with benchmarks/callgrind.py).  The parser takes the
#   chunks in order, each once; put_back() returns at most the bytes it took, once per
#   stream (the BOM look-ahead).
# - Threads (with the GIL): receive_data() in one thread and next_event() in another
#   keep this order, because no test of ``chunk`` or ``later`` is separated from the
#   store it decides by a call (where CPython may switch threads); put() tests again
#   after the one call it makes.  (Free-threaded CPython: _connection.py's serialize().)
# - ``ended`` is set once, by the empty chunk that ends the stream; nothing is queued
#   after it.  ``plain`` says receive_data() may just store a chunk in the empty slot:
#   no end of stream, no failure, no keep_raw copy to make.  It only ever goes from
#   True to False.
# - StreamState.error is None until the parser dies; then it holds what killed it, for
#   good, and the queue is no longer plain (receive_data() checks the error).
# - StreamState.eos is None until the stream ended and every item was handed out; then
#   it is the one EndOfStream handed out on every later call.
#
# A Block is what the parser's fast loop (_interpret.parse) built of a block when it
# hands the block to a Modes object (_modes.py): a plain tuple of its locals, made only
# then and unpacked at once.  (A NamedTuple cost about 2,500 instructions more per
# handover, counted by benchmarks/callgrind.py with on_oversize="skip": CPython makes,
# unpacks and frees a tuple subclass by its slow paths.)  Here, so that neither side
# imports the other's module.

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    from sse_sansio._events import EndOfStream

__all__ = ["Block", "ChunkQueue", "StreamState"]


class ChunkQueue:
    """The chunks received and not yet taken by the parser, in order."""

    __slots__ = ("chunk", "ended", "later", "plain")

    def __init__(self, *, plain: bool) -> None:
        self.chunk: bytes | None = None  # the oldest chunk not taken
        self.later: deque[bytes] | None = None  # the newer ones (see the header)
        self.ended = False  # the stream ended: nothing more will be queued
        self.plain = plain  # receive_data() may just fill the empty slot

    def put(self, data: bytes) -> None:
        """Queue a non-empty chunk behind those already queued."""
        if self.chunk is None:
            self.chunk = data
        elif self.later is None:
            later = deque((data,))
            # deque() is a call, where CPython may switch threads: the parser, in another
            # thread, may have taken the slot's chunk (or made ``later``) meanwhile.  No
            # call from here to each store, so each test still holds at its store.
            if self.chunk is None:
                self.chunk = data
            elif self.later is None:
                self.later = later
            else:
                self.later.append(data)
        else:
            self.later.append(data)

    def end(self) -> None:
        """The stream ended (receive_data(b""))."""
        self.ended = True
        self.plain = False

    def take(self) -> bytes | None:
        """The oldest chunk not yet taken, now taken; None when there is none.

        (parse() does the same inline, with take_later() for the rare part.)
        """
        chunk = self.chunk
        if chunk is not None:
            self.chunk = None if self.later is None else self.take_later()
        return chunk

    def take_later(self) -> bytes:
        """The oldest of the newer chunks, taken from ``later``, which must exist."""
        later = self.later
        assert later is not None
        chunk = later.popleft()
        if not later:
            self.later = None  # memory: an idle connection holds no deque
        return chunk

    def put_back(self, chunk: bytes) -> None:
        """Put a chunk taken from the queue back at its front (once per stream)."""
        if self.chunk is not None:
            if self.later is None:
                self.later = deque()
            self.later.appendleft(self.chunk)
        self.chunk = chunk


class StreamState:
    """What the parser leaves for the Connection: the state that outlives an item."""

    __slots__ = ("eos", "error", "last_event_id", "queue", "retry")

    def __init__(self, queue: ChunkQueue, last_event_id: str) -> None:
        self.queue = queue  # closed to plain queuing when the stream fails
        # The spec's last event ID string, kept as an exact str (see check_options).
        self.last_event_id = last_event_id
        self.retry: int | None = None  # the spec's reconnection time
        self.eos: EndOfStream | None = None  # returned on every call once drained
        self.error: BaseException | None = None  # what failed the stream, once failed

    def failed(self, exc: BaseException) -> None:
        """Record what failed the stream (the parser calls this as it dies)."""
        self.error = exc
        self.queue.plain = False


# The fields of a Block, in this order (the parser's locals of these names):
# - mark: the block's first byte, where the limit counts from (deadline - bound);
# - event_start: the stream offset of its first field line, -1 if none yet;
# - event_type: the event type buffer, "" already read as "message";
# - id_buffer: the last event ID buffer;
# - block_retry: a valid retry value in the block, or None;
# - id_block (diagnostics): the event_start of the last block that took an id field
#   (blocks start at different offsets, so parse() needs no reset at each blank line);
# - data_first, data_lines: the data buffer, as its first line and, once there is a
#   second, the list of all its lines (most events have one data line).
Block: TypeAlias = tuple[int, int, str, str, int | None, int, str | None, list[str] | None]
