# The frame coalescer: fewer, larger writes for a server or proxy, on the caller's clock.
#
# Why: a streamed LLM answer is one event per token, so a 500-token answer is about 500
# writes (and, through a proxy, 500 TCP segments with their framing); holding them for
# a few milliseconds and writing them together costs the reader almost no latency.
#
# Rules:
# - Frames are whole: an event with its blank line, or a comment line.  They are held
#   whole and written whole, in the order pushed: the output is the concatenation of
#   the frames, cut only between two of them, so a client parses exactly the items it
#   would have parsed from the frames one by one.  A frame bigger than max_bytes goes
#   out whole, never split.  Pushed bytes are checked: after their last blank line only
#   comment lines may follow, for a field line left open there (``b"data: x\n"``) would
#   join the next frame's event.
# - The bytes held are due once the oldest of them has waited max_delay seconds, once
#   they reach max_bytes, or at once when an urgent frame is pushed (a terminal or error
#   event, a comment that must go out now: the caller says so; an event with a
#   ``retry`` field always is).  pop() hands out everything due in one write.
# - Optionally (``merge``, off by default), an event pushed as an item may be merged
#   into the event before it, when the merger says the two make one (sse_sansio.llm's
#   TextMerge joins consecutive text deltas of one dialect into one schema-valid event).
#   Merging happens only between two items still held, never across a pop, and never
#   into an event whose frame already reached max_bytes: that frame is due.  The size
#   held must be exact (for max_bytes and max_buffer): a merger that can tell the size
#   of what it returned (TextMerge.size(), kept by arithmetic on what each merge adds)
#   is asked, so a merged event is serialized once, when it is sealed, and a run of
#   merges costs serializing linear in its length whatever max_bytes is (issue 42,
#   item 6); a merger without size() has each merged event serialized to measure it.
#
# Memory: what is held stays below max_bytes plus one frame, as long as the caller pops
# whenever ``deadline`` has come (right after a push that made it due, at the latest);
# whatever the caller does, it never exceeds max_buffer but by a single frame pushed
# when nothing was held: a push that would take it past max_buffer is refused
# (LocalProtocolError, nothing changed), since only a caller that stopped popping gets
# there.
# Invariant (property-tested): parsing the concatenated output gives the pushed items,
# in order.
#
# The hot path (issue 33: the health layers within 3x of the parse, per event): an item
# is serialized once, when pushed (serialize() checks it; nothing re-checks or
# re-serializes it later), and a push or a pop of one frame is a few attribute updates;
# a float time is settled by Clock.read's own first comparison chain, inline
# (``latest <= now < inf``: finite and not backwards; anything else goes to Clock.read).
# Two ways skip the UTF-8 encoding, which costs by itself more than the compiled parse
# of the same event:
# - An event parsed with ``keep_raw=True`` carries the bytes it was read from.  When
#   those bytes are one ``data:`` line and the blank line (nothing else: no CR, no other
#   LF, no BOM, no other field), the event is a plain message without an ID or a retry,
#   and its data holds no U+FFFD (so the parser replaced no invalid UTF-8), they are
#   byte for byte what serialize() writes for it: they are held as they are.  Whatever
#   an item claims, bytes of that shape are one whole frame with one data line: they
#   cannot inject a line or join the next frame.
# - Bytes pushed by a caller that serialized once are checked whole with one endswith()
#   when they end with a blank line (then nothing follows the last one); only other
#   endings are read line by line.

from __future__ import annotations

import math
import re
from typing import Protocol

from sse_sansio._clock import Clock, duration
from sse_sansio._errors import LocalProtocolError
from sse_sansio._events import Comment, Event
from sse_sansio._pickling import clock_state, public_reduce, restore, with_clock
from sse_sansio._serializer import serialize

__all__ = ["Coalescer", "Merge"]

# The default max_buffer: the library's default largest event (max_event_size).
DEFAULT_MAX_BUFFER = 16 * 1024 * 1024
_INFINITY = math.inf


class Merge(Protocol):
    """What ``Coalescer(merge=...)`` takes: :class:`sse_sansio.llm.TextMerge`, or yours.

    A merger may also have ``size(event) -> int | None``: the bytes
    :func:`~sse_sansio.serialize` writes for an event its last merge returned (None
    when it cannot tell); the coalescer then serializes a merged event only once."""

    def merge(self, first: Event, second: Event) -> Event | None:
        """The one event that says what ``first`` then ``second`` say, or None."""


class Coalescer:
    """Batch the frames of one stream into fewer writes, never splitting a frame.

    Push every frame with :meth:`push` (serialized ``bytes``, or an
    :class:`~sse_sansio.Event` or :class:`~sse_sansio.Comment` to serialize), and
    write what :meth:`pop` returns whenever :attr:`deadline` comes; at the end of the
    stream (or before passing a cut on), write :meth:`flush`.

    Args:
        max_bytes: The size in bytes at which what is held is due at once (>= 1).
        max_delay: The longest a frame is held, in seconds (>= 0; 0 writes each push
            at once).
        now: The time on your clock.
        merge: An object whose ``merge(first, second)`` joins two consecutive events
            pushed as items (:class:`sse_sansio.llm.TextMerge`), or None (the default:
            events are written as pushed).  An event whose frame reached
            ``max_bytes`` takes no more merges: the next event starts a new one.
        max_buffer: The most bytes held (>= ``max_bytes``; default 16 MiB, or
            ``max_bytes`` if larger): a push past it is refused.  A frame pushed when
            nothing is held is always taken, whatever its size.

    Raises:
        TypeError: an option or ``now`` that is not a number (``max_bytes`` and
            ``max_buffer``: ints).
        ValueError: ``max_bytes`` below 1, ``max_buffer`` below ``max_bytes``, a
            negative or non-finite ``max_delay``, a NaN or infinite ``now``; on any
            method, ``now`` going backwards.
    """

    def __init__(
        self,
        *,
        max_bytes: int,
        max_delay: float,
        now: float,
        merge: Merge | None = None,
        max_buffer: int | None = None,
    ) -> None:
        self._max_bytes = _count("max_bytes", max_bytes, 1)
        if max_buffer is None:
            max_buffer = max(DEFAULT_MAX_BUFFER, max_bytes)
        self._max_buffer = _count("max_buffer", max_buffer, max_bytes)
        self._max_delay = duration("Coalescer: max_delay", max_delay)
        self._merge = merge
        self._clock = Clock("Coalescer", now)
        self._frames: list[bytes] = []  # sealed frames, in order
        self._size = 0  # their bytes, and the pending event's
        # The event a merge may extend, its frame (None: not serialized yet) and size.
        self._pending: tuple[Event, bytes | None, int] | None = None
        self._since: float | None = None  # when the oldest frame held was pushed
        self._due_at: float | None = None  # when what is held became due at once

    @property
    def deadline(self) -> float | None:
        """When :meth:`pop` returns bytes: the time the frames held are due (at the
        latest the oldest's push plus ``max_delay``), or None when nothing is held."""
        if self._since is None:
            return None
        if self._due_at is not None:
            return self._due_at
        return self._since + self._max_delay

    @property
    def buffered(self) -> int:
        """The bytes held."""
        return self._size

    def push(
        self,
        frame: bytes | bytearray | memoryview | Event | Comment,
        now: float,
        *,
        urgent: bool = False,
    ) -> None:
        """Hold ``frame`` (whole) for the next write; ``urgent``: that write is due now.

        ``frame`` is one or more whole frames as bytes (the last line ended by LF or
        CR), or an Event or a Comment, which is serialized (or, with ``merge``, may be
        joined to the event pushed before it).  An event parsed with
        ``Connection(keep_raw=True)`` whose ``raw`` bytes are exactly what
        :func:`~sse_sansio.serialize` writes for it (one ``data:`` line and the blank
        line) is held as those bytes, without encoding its text again.

        Raises:
            TypeError: ``frame`` is neither bytes nor an Event or Comment.
            ValueError: bytes that are not whole frames: empty, not ended by a line
                end, or with a field line after their last blank line (a frame cut in
                two, such as ``b"data: x\\n"``).
            LocalProtocolError: an item :func:`~sse_sansio.serialize` refuses, or a
                push that would hold more than ``max_buffer`` bytes (pop when
                :attr:`deadline` comes).  Nothing changes.
        """
        clock = self._clock
        if type(now) is float and clock.latest <= now < _INFINITY:
            clock.latest = now
        else:
            now = clock.read(now, "push")
        if type(frame) is Event and frame[3] is None and self._merge is None:
            # The common push: an exact Event, nothing to merge (so no pending event),
            # not urgent; _add() inline but for the refusal past max_buffer.
            data = _event_frame(frame)
            size = self._size
            if size and size + len(data) > self._max_buffer:
                self._check_room(len(data))  # raises, with the numbers
            self._frames.append(data)
            self._size = size + len(data)
        elif isinstance(frame, Event):
            # A retry field tells the client how long to wait: it must not wait here.
            urgent = urgent or frame.retry is not None
            self._add_item(frame, urgent)
        elif isinstance(frame, Comment):
            self._add_item(frame, urgent)
        elif isinstance(frame, (bytes, bytearray, memoryview)):
            self._add(_whole(bytes(frame)))
        else:
            raise TypeError(f"Coalescer.push() takes bytes, an Event or a Comment, not {frame!r}")
        if self._since is None:
            self._since = now
        if self._due_at is None and (urgent or self._size >= self._max_bytes):
            self._due_at = now

    def pop(self, now: float) -> bytes | None:
        """The bytes to write now (whole frames, in order), or None if none are due."""
        clock = self._clock
        if type(now) is float and clock.latest <= now < _INFINITY:
            clock.latest = now
        else:
            now = clock.read(now, "pop")
        since = self._since
        if since is None:
            return None
        due_at = self._due_at
        if now < (since + self._max_delay if due_at is None else due_at):
            return None
        if self._pending is not None:
            return self.flush()
        # flush() inline (pop runs per write): nothing pending, every frame sealed.
        out = b"".join(self._frames)
        self._frames.clear()
        self._size = 0
        self._since = self._due_at = None
        return out

    def flush(self) -> bytes:
        """Everything held, due or not (``b""`` when nothing is): the end of the stream."""
        if self._pending is not None:
            self._seal()
        out = b"".join(self._frames)
        self._frames.clear()
        self._size = 0
        self._since = self._due_at = None
        return out

    def _add_item(self, item: Event | Comment, urgent: bool) -> None:
        if self._merge is None or not isinstance(item, Event) or urgent:
            self._add(serialize(item))
            return
        pending = self._pending
        merged = None
        if pending is not None and pending[2] < self._max_bytes:
            merged = self._merge.merge(pending[0], item)
        if pending is not None and merged is not None:
            data, size = self._measured(merged)
            self._check_room(size - pending[2])
            self._size += size - pending[2]
            self._pending = (merged, data, size)
        else:
            data = serialize(item)
            self._check_room(len(data))
            self._seal()
            self._size += len(data)
            self._pending = (item, data, len(data))

    def _measured(self, merged: Event) -> tuple[bytes | None, int]:
        """A merged event's frame and size: the merger's size() when it tells it
        (the frame is serialized when sealed), else serialized now."""
        sized = getattr(self._merge, "size", None)
        size = None if sized is None else sized(merged)
        if size is None:
            data = serialize(merged)
            return data, len(data)
        return None, size

    def _check_room(self, growth: int) -> None:
        """Refuse a push that would take a non-empty hold past max_buffer."""
        if self._size and self._size + growth > self._max_buffer:
            raise LocalProtocolError(
                f"Coalescer.push(): {self._size} bytes are held and {growth} more would "
                f"pass max_buffer ({self._max_buffer}); pop() when deadline comes"
            )

    def _add(self, data: bytes) -> None:
        """Hold the whole frames ``data`` after what is held (refused past max_buffer)."""
        size = self._size
        if size and size + len(data) > self._max_buffer:
            self._check_room(len(data))  # raises, with the numbers
        if self._pending is not None:
            self._seal()
        self._frames.append(data)
        self._size = size + len(data)

    def _seal(self) -> None:
        """The pending event can no longer be merged into: hold it as a frame."""
        pending = self._pending
        if pending is not None:
            event, data, _ = pending
            self._frames.append(serialize(event) if data is None else data)
            self._pending = None

    # Pickling (issue 32, item 4): worth keeping: the frames held and the times they
    # came are plain data, so a coalescer pickled between two pushes hands out the same
    # bytes after.  The pickle names sse_sansio.Coalescer, and the merger's own class (a
    # TextMerge pickles as sse_sansio.llm.TextMerge; a merger of yours must pickle
    # too): the Clock, a private class, goes as its owner and latest time and is
    # rebuilt on load (sse_sansio/_pickling.py).
    def __reduce__(self) -> tuple[object, ...]:
        return public_reduce(self, _clock=clock_state(self._clock))

    def __setstate__(self, state: dict[str, object]) -> None:
        restore(self, with_clock(state))


def _count(name: str, value: int, least: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"Coalescer: {name} must be an int, not {value!r}")
    if value < least:
        raise ValueError(f"Coalescer: {name} must be >= {least}, not {value}")
    return value


# A line with its line end (spec: "Lines must be separated by either a U+000D CARRIAGE
# RETURN U+000A LINE FEED (CRLF) character pair, a single U+000A LINE FEED (LF)
# character, or a single U+000D CARRIAGE RETURN (CR) character").
_LINE = re.compile(rb"[^\r\n]*(?:\r\n|\r|\n)")


# The endings of bytes whose last line is blank: a line end (LF, CRLF or CR) right
# after another.
_BLANK_LAST = (b"\n\n", b"\r\r", b"\n\r", b"\n\r\n", b"\r\r\n")


def _event_frame(event: Event) -> bytes:
    """The bytes of an exact Event without retry: its ``raw`` when those are the one
    ``data:`` line and blank line serialize() would write (see the top), else
    serialize()'s."""
    raw = event[6]
    # Slices and ``int in bytes`` (a memchr): bytes' methods (find, startswith) parse a
    # tuple of arguments, which costs more here than the search.
    if (
        type(raw) is bytes
        and raw[:6] == b"data: "
        and raw[-2:] == b"\n\n"  # the data line's LF, then the blank line's
        and 10 not in raw[6:-2]  # no other LF
        and 13 not in raw  # nor any CR
        and event[0] == "message"
        and not event[2]
        and "\ufffd" not in event[1]
    ):
        return raw
    return serialize(event)


def _whole(frame: bytes) -> bytes:
    """``frame`` if it is whole frames: every line ended, and after the last blank line
    ("If the line is empty (a blank line) -> Dispatch the event") only comments (lines
    starting with a colon), which belong to no event."""
    if frame.endswith(_BLANK_LAST):
        return frame  # its last line is blank: nothing follows it
    if not frame.endswith((b"\n", b"\r")):
        what = "an empty frame" if not frame else f"a frame that ends with {frame[-20:]!r}"
    elif _open_event(frame):
        what = f"a frame whose last event has no blank line: ...{frame[-20:]!r}"
    else:
        return frame
    raise ValueError(
        f"Coalescer.push(): {what}; push whole frames (an event and its blank line, "
        "or a comment line), so that no write ends inside one"
    )


def _open_event(frame: bytes) -> bool:
    """Whether a field line comes after the last blank line of ``frame``."""
    open_event = False
    for line in _LINE.finditer(frame):
        text = line[0].rstrip(b"\r\n")
        if not text:
            open_event = False
        elif not text.startswith(b":"):
            open_event = True
    return open_event
