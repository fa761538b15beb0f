# The sending side of one streamed response, sans-I/O: h2's ``data_to_send()`` for SSE.
#
# The caller owns the socket and the clock.  It hands items in with send(), asks
# data_to_send(now) what to write, and sleeps until ``deadline`` (or until it sends
# again); nothing here waits, reads a clock or touches an event loop.
#
# Invariants (property-tested in tests/serve/test_server_stream.py):
# - The bytes handed out are the serialized items, whole and in the order sent (a
#   resume's replay first where it was asked), with keepalive comments between two
#   frames only: the concatenation parses back to the items sent.
# - A keepalive is handed out only once ``keepalive`` seconds passed with nothing
#   handed out (``first_byte`` seconds before the first real frame), and never when
#   queued frames could go instead: real bytes keep a connection alive just as well.
# - Coalescing (``coalesce_delay`` > 0) holds frames at most ``coalesce_delay``
#   seconds; they go at once when they reach ``coalesce_bytes``, when an urgent frame
#   (or an event with ``retry``: the client must not wait for it) joins them, and at
#   the end.  With ``coalesce_delay`` = 0 every frame is due when it is sent.
# - Memory: the queue holds at most ``max_buffer`` bytes plus one frame.  A frame that
#   would take a non-empty queue past ``max_buffer`` turns the stream "slow": the queue
#   is dropped and nothing more is queued, since the consumer is not reading; an
#   adapter closes the connection, and the client resumes from the window, where send()
#   still appends every event.  A frame sent to an empty queue never makes it slow:
#   the consumer had no chance to fall behind.
# - States: "open" -> "ended" | "cut" (end(); what is queued still goes out, then
#   nothing) and "open" -> "slow" (for good: a later end() changes nothing).
#
# Why not the Coalescer and its own queue: the stream must count and drop *everything*
# not yet handed out, not only what coalescing holds, and its send path is meant to
# stay near an f-string plus a list append (issue 33); the Coalescer's merge hook and
# its clock check per push are work this path does not need.  The keepalive comment
# and its rules (the first-byte phase, padding) are the KeepalivePlanner's, reused.
#
# The hot path (issue 33: send + data_to_send within 2x an f-string and a deque): the
# planner learns of a write lazily.  A hand-out only notes its time (``_unsaid``); the
# planner is told (``sent``) before anyone reads it (``deadline``, a keepalive check),
# which gives it the same history, one call per wake-up instead of one per frame.
# send() and data_to_send() also take Clock.read()'s fast path inline (an exact float,
# finite and not backwards, is simply remembered; anything else gets the full check),
# and read an exact Event's id and retry from its slots (a subclass may override the
# properties: it pays for them).  send() keeps the common case (an exact Event on an
# open stream with no window and no hub policy) inline, _queue() included, and writes
# the commonest event (default type, one line, no ID or retry) with serialize()'s own
# tests for it; data_to_send() hands out inline.  A property test holds send()'s bytes
# and refusals equal to serialize()'s for any event, forged ones included.
#
# A Hub's subscribers (issue 34, _hub.py) are ServerStreams too, fed by deliver()
# (whose commonest case, an open "disconnect" subscriber with room, Hub._deliver_all()
# runs inline, _queue() included: a publish to 1,000 subscribers went from 18x to 8x a
# loop of 1,000 deque appends):
# a Frame is an item serialized once for all of them, trusted because only
# serialize() made its bytes (it keeps no setter); bytes a caller sends are still
# checked by send().  subscriber() makes such a stream with the hub's policy for a
# queue past ``max_buffer``.  The plain path above stays as it was: a policy lives in
# the queue's container and in the overflow branch only.
# - "disconnect": the plain list and the plain "slow" rule.
# - "drop-oldest": a deque; a frame that would pass ``max_buffer`` first drops the
#   oldest frames, and the gap event (GAP_EVENT, ``{"dropped": n}``) takes their place
#   at the head: one gap frame, counting every frame dropped since the last hand-out.
#   Memory: ``max_buffer`` plus the gap frame (plus one frame bigger than max_buffer).
# - "conflate": a list where a newer frame of a key blanks (``b""``) the older one
#   still queued, found through ``_slots`` (key -> index and the frame, checked by
#   identity, so a slot that outlived a hand-out never blanks a stranger); blanks are
#   squeezed out once they outnumber the frames.  Past ``max_buffer`` with one frame
#   per key the stream turns "slow", as with "disconnect".
#
# A shared log (issue 40, item 8; FrameLog, join() and _Reader at the end): the Hub's
# common subscribers ("disconnect", no coalescing) read one list of frames by their own
# cursors, so a publish appends once for all of them.  A reader is a _Reader, a
# ServerStream whose queue is the log past its cursor (``_size`` a property: the pump
# reads it), made as a new object in place of the new subscriber's stream (a stream
# whose class changed reads its attributes three times slower).  With coalesce_delay 0,
# deliver() made the first frame queued on an empty queue due at its publish (or at the
# stream's own later time), and a later one changed nothing but the clock, so _sync()
# works the due time and the clock out from the log's times when the reader next looks;
# and a frame takes a queue past max_buffer, "slow", exactly when the reader is two
# frames or more and more than max_buffer bytes behind, which the log checks against
# its oldest marks at each publish (FrameLog's docstring).  Leaving (unsubscribe, an
# own send or end, "slow") turns the reader back into a plain ServerStream.

from __future__ import annotations

import copyreg
from collections import deque
from collections.abc import Callable, Hashable
from heapq import heappop, heappush
from typing import Literal, final

from sse_sansio._clock import Clock, duration, seconds
from sse_sansio._errors import LocalProtocolError
from sse_sansio._events import Comment, Event
from sse_sansio._health._keepalive import KeepalivePlanner
from sse_sansio._pickling import attributes, clock_state, public_reduce, restore, with_clock
from sse_sansio._resume._replay import ReplayWindow, Resume
from sse_sansio._serializer import serialize

__all__ = [
    "GAP_EVENT",
    "NULL_GAP",
    "Frame",
    "FrameLog",
    "Overflow",
    "ServerStream",
    "State",
    "deliver",
    "finish",
    "join",
    "replay",
    "serialized",
    "subscriber",
    "trusted",
]

State = Literal["open", "ended", "cut", "slow"]
Overflow = Literal["disconnect", "drop-oldest", "conflate"]

#: The event type of the gap signal a "drop-oldest" subscriber gets where frames went.
GAP_EVENT = "sse_sansio.gap"

_INFINITY = float("inf")


def _gap_data(dropped: int | None) -> str:
    """The gap event's data: the frames dropped, or null when that is not known."""
    return f'{{"dropped": {"null" if dropped is None else dropped}}}'


#: The gap a resume sends when it cannot replay all that was missed (``null``: it
#: cannot say how much).
NULL_GAP = serialize(Event(type=GAP_EVENT, data=_gap_data(None)))


class ServerStream:
    """One client's sending state: queued frames, keepalives, coalescing; no I/O.

    Hand items in with :meth:`send`; write what :meth:`data_to_send` returns, and
    call it again when :attr:`deadline` comes or after the next :meth:`send`.  When
    the producer is done, :meth:`end` the stream (``cut=True`` to pass a cut on), write
    what is left, then close the response: cleanly for ``"ended"``, without its proper
    end (no last chunk, or a closed connection) for ``"cut"`` and ``"slow"``.

    Args:
        now: The time on your clock (a monotonic one, such as ``time.monotonic()``).
        keepalive: Seconds of silence after which a keepalive comment is written
            (> 0), or None for none.
        first_byte: Seconds of silence allowed before the first real frame, when that
            wait needs its own interval (> 0; needs ``keepalive``).
        padding: The size to pad each keepalive comment to, for buffering proxies (0
            to 65536; needs ``keepalive`` when not 0).
        coalesce_bytes: With ``coalesce_delay``, the size at which held frames go at
            once (0: no size bound below ``max_buffer``).
        coalesce_delay: The longest a frame is held to be written with the next ones,
            in seconds (0, the default: no coalescing).
        max_buffer: The bytes queued beyond which the consumer is too slow (>= 1).
        window: A :class:`~sse_sansio.ReplayWindow`: every event sent is appended to
            it and gets its ID, and :meth:`resume` replays from it.

    Raises:
        TypeError: an option or ``now`` of the wrong type.
        ValueError: an option out of range; on any method, ``now`` going backwards.
    """

    # A Hub's subscriber only (subscriber() sets them on the instance): the policy past
    # max_buffer, the gap frame at the head and how many frames it counts
    # ("drop-oldest"), the newest frame queued per key ("conflate").
    _overflow: Overflow = "disconnect"
    _gap: tuple[bytes, int | None] | None = None
    _slots: dict[Hashable, tuple[int, bytes]] | None = None
    _blanks = 0
    # A reader of a Hub's FrameLog (join()) holds these on the instance while it reads
    # one (_READING).
    _log: FrameLog | None = None
    _cursor = 0
    _taken = 0
    _seen = 0
    _mark = 0

    def __init__(
        self,
        *,
        now: float,
        keepalive: float | None = None,
        first_byte: float | None = None,
        padding: int = 0,
        coalesce_bytes: int = 0,
        coalesce_delay: float = 0.0,
        max_buffer: int = 1048576,
        window: ReplayWindow | None = None,
    ) -> None:
        self._clock = Clock("ServerStream", now)
        self._planner = _planner(keepalive, first_byte, padding, now)
        self._hold = duration("ServerStream: coalesce_delay", coalesce_delay)
        self._burst = _count("coalesce_bytes", coalesce_bytes, 0) or _INFINITY
        self._max_buffer = _count("max_buffer", max_buffer, 1)
        self._window = window
        # send()'s inline path applies: open, no window, no hub policy (kept with _state).
        self._plain = window is None
        self._frames: list[bytes] | deque[bytes] = []
        self._size = 0
        self._due_at: float | None = None  # when the queued frames are due
        self._unsaid: float | None = None  # the latest hand-out the planner is not told of
        self._state: State = "open"

    @property
    def state(self) -> State:
        """``"open"``, ``"ended"``, ``"cut"``, or ``"slow"`` (the consumer fell behind
        by more than ``max_buffer`` bytes: close its connection)."""
        return self._state

    @property
    def buffered(self) -> int:
        """The bytes queued and not yet handed out by :meth:`data_to_send`."""
        return self._size

    @property
    def deadline(self) -> float | None:
        """The next time :meth:`data_to_send` can return something new (queued frames
        coming due, or a keepalive), or None when only a :meth:`send` can change that."""
        due = self._due_at
        planner = self._told_planner()
        if self._state != "open" or planner is None:
            return due
        keepalive = planner.deadline
        return keepalive if due is None or keepalive < due else due

    def send(
        self, item: Event | Comment | bytes, now: float, *, urgent: bool = False
    ) -> str | None:
        """Queue ``item``; ``urgent``: write it, and what is held before it, at once.

        ``item`` is an :class:`~sse_sansio.Event`, a :class:`~sse_sansio.Comment`, or
        whole serialized frames as bytes (without a window only: they would bypass
        it).  With a window, an event is appended to it first and sent with the ID it
        assigns.  On a ``"slow"`` stream nothing is queued, but events still go into
        the window, for the client to resume from.

        Returns:
            The ID the event was sent with (None for a comment, bytes, or an event
            without an ID).

        Raises:
            LocalProtocolError: the stream was ended; an item :func:`serialize` or the
                window refuses; bytes with a window.
            TypeError: ``item`` is none of the above.
            ValueError: bytes that are empty or do not end with a line end.
        """
        clock = self._clock
        if type(now) is float and clock.latest <= now < _INFINITY:
            clock.latest = now
        else:
            now = clock.read(now, "send")
        if type(item) is not Event or not self._plain:
            return self._send(item, now, urgent)
        # The common case inline (issue 33, item 6: the send path near an f-string and
        # a deque): an exact Event of the commonest form (_commonest(), the one place
        # that rule is written) on an open stream without a window or a hub's policy
        # (``_plain``).  Any other form, a malformed item included, takes the full path,
        # whose serialize() words the error.
        frame = _commonest(item)
        if frame is None:
            return self._send(item, now, urgent)
        # _queue(), inline.
        size = self._size + len(frame)
        if size > self._max_buffer and self._size:
            self._queue(frame, now, urgent)  # "slow"
        else:
            self._frames.append(frame)
            self._size = size
            due_at = self._due_at
            if due_at is None:
                due_at = now + self._hold
            if now < due_at and (urgent or size >= self._burst):
                due_at = now
            self._due_at = due_at
        return None  # the commonest form has no ID

    def _send_now(self, item: Event | Comment | bytes, now: float) -> bytes:
        """:meth:`send` ``item``, then return :meth:`data_to_send`, in one call: for a
        writer that writes at once what it is handed (issue 40, item 8: the serving
        pump's feeder).  Its commonest case, an exact Event of the commonest form on an
        open stream with nothing queued, no window and no coalescing, hands the frame
        out without queuing it (the bytes and the state are send()'s and
        data_to_send()'s)."""
        clock = self._clock
        if (
            not self._size
            and self._plain
            and not self._hold
            and type(item) is Event
            and type(now) is float
            and clock.latest <= now < _INFINITY
        ):
            frame = _commonest(item)
            if frame is not None:
                clock.latest = now
                self._unsaid = now  # handed out (data_to_send()'s note)
                return frame
        self.send(item, now)
        return self.data_to_send(now)

    def _send(self, item: Event | Comment | bytes, now: float, urgent: bool) -> str | None:
        """send() past its clock check, for every item and state."""
        if self._state in ("ended", "cut"):
            raise LocalProtocolError(f"send() after end(): the stream is {self._state}")
        ident: str | None = None
        if isinstance(item, Event):
            if self._window is not None:
                item = self._window.append(item)
            frame = serialize(item)
            ident, retry = item.id or None, item.retry
            urgent = urgent or retry is not None
        else:
            frame = self._frame(item)
        if self._state == "open":
            self._queue(frame, now, urgent)
        return ident

    def data_to_send(self, now: float) -> bytes:
        """The bytes to write now: due frames, or a keepalive; ``b""`` when nothing."""
        clock = self._clock
        if type(now) is float and clock.latest <= now < _INFINITY:
            clock.latest = now
        else:
            now = clock.read(now, "data_to_send")
        due_at = self._due_at
        if due_at is not None and due_at <= now:  # _hand_out(), inline (issue 33)
            frames = self._frames
            out = b"".join(frames)
            frames.clear()
            self._size = 0
            self._due_at = None
            self._unsaid = now
            return out
        planner = self._told_planner()
        if planner is None:
            return b""
        if due_at is not None and planner.deadline <= now:
            return self._hand_out(now)  # a keepalive is due: the held frames go instead
        if self._state == "open":
            return planner.due(now) or b""
        return b""

    def end(self, now: float, *, cut: bool = False) -> None:
        """The producer is done: a clean end, or with ``cut=True`` a cut to pass on.

        What is queued is due at once; then :meth:`data_to_send` returns ``b""`` for
        good.  A ``"slow"`` stream stays ``"slow"``.  The window is the producer's, not
        this client's: close it yourself (:meth:`ReplayWindow.close`).

        Raises:
            LocalProtocolError: the stream was already ended.
        """
        now = self._clock.read(now, "end")
        if self._state in ("ended", "cut"):
            raise LocalProtocolError(f"end() twice: the stream is already {self._state}")
        if self._state == "slow":
            return
        self._state = "cut" if cut else "ended"
        self._plain = False
        if self._due_at is not None:
            self._due_at = min(self._due_at, now)

    def resume(self, last_event_id: str, now: float) -> Resume:
        """Answer a reconnecting client's ``Last-Event-ID`` from the window.

        Queues the events to replay (``resume.events``, due at once), and, when the
        producer already finished (``resume.finished``), ends the stream (as a cut if
        the producer was cut): nothing will follow.  What to send for a ``"gap"`` or an
        ``"unknown"`` ID beyond that is your protocol's to say (see :class:`Resume`).

        Raises:
            LocalProtocolError: no window, or the stream is not open.
        """
        now = self._clock.read(now, "resume")
        if self._window is None:
            raise LocalProtocolError("resume() needs a window: ServerStream(window=...)")
        if self._state != "open":
            raise LocalProtocolError(f"resume() on a stream that is {self._state}")
        resume = self._window.resume(last_event_id)
        if resume.events:
            # One frame: the replay is already in memory, and a long one must not make
            # the stream "slow" before its consumer could read a byte.
            self._queue(b"".join(map(serialize, resume.events)), now, True)
        if resume.finished:
            self.end(now, cut=resume.cut)
        return resume

    def _frame(self, item: Comment | bytes) -> bytes:
        if isinstance(item, Comment):
            return serialize(item)
        if not isinstance(item, (bytes, bytearray, memoryview)):
            raise TypeError(f"send() takes an Event, a Comment or bytes, not {item!r}")
        if self._window is not None:
            raise LocalProtocolError(
                "send() with a window takes Events and Comments: bytes would bypass it"
            )
        frame = bytes(item)
        if not frame.endswith((b"\n", b"\r")):
            raise ValueError(
                f"send(): bytes must be whole frames, ending with a line end: {frame[-20:]!r}"
            )
        return frame

    def _queue(self, frame: bytes, now: float, urgent: bool) -> None:
        size = self._size + len(frame)
        if self._size and size > self._max_buffer:
            if self._overflow != "drop-oldest":
                self._frames.clear()
                self._size = 0
                self._due_at = None
                self._state = "slow"
                self._plain = False
                return
            size = self._drop_oldest(len(frame)) + len(frame)
        self._frames.append(frame)
        self._size = size
        due_at = self._due_at
        if due_at is None:
            due_at = now + self._hold
        if (urgent or size >= self._burst) and now < due_at:
            due_at = now
        self._due_at = due_at

    def _drop_oldest(self, incoming: int) -> int:
        """Drop the oldest frames until ``incoming`` bytes fit, and put one gap frame,
        counting them, at the head; the bytes queued after that."""
        frames = self._frames
        assert isinstance(frames, deque)  # subscriber() made it so
        dropped: int | None = 0
        if self._gap is not None and frames[0] is self._gap[0]:  # unsent yet: count on
            self._size -= len(frames.popleft())
            dropped = self._gap[1]
        while frames and self._size + incoming > self._max_buffer:
            frame = frames.popleft()
            self._size -= len(frame)
            # A resume's gap that could not say how much was missed is itself dropped:
            # the merged gap cannot say either (issue 41, item 4).
            if dropped is not None:
                dropped = None if frame.startswith(NULL_GAP) else dropped + 1
        gap = serialize(Event(type=GAP_EVENT, data=_gap_data(dropped)))
        frames.appendleft(gap)
        self._gap = (gap, dropped)
        self._size += len(gap)
        return self._size

    def _hand_out(self, now: float) -> bytes:
        out = b"".join(self._frames)
        self._frames.clear()
        self._size = 0
        self._due_at = None
        self._unsaid = now
        return out

    def _told_planner(self) -> KeepalivePlanner | None:
        """The keepalive planner, told of the latest hand-out first (None: no keepalives)."""
        planner = self._planner
        if planner is not None and self._unsaid is not None:
            planner.sent(self._unsaid)
            self._unsaid = None
        return planner

    # Pickling (issue 32, item 4): worth keeping: the frames queued, the times and the
    # state are plain data, and its keepalive planner and replay window pickle by their
    # public names, so a stream pickled between two writes hands out the same bytes
    # after.  The Clock, a private class, goes as its owner and latest time and is
    # rebuilt on load (sse_sansio/_pickling.py).
    def __reduce__(self) -> tuple[object, ...]:
        return public_reduce(self, _clock=clock_state(self._clock))

    def __setstate__(self, state: dict[str, object]) -> None:
        restore(self, with_clock(state))


def _commonest(item: Event) -> bytes | None:
    """The frame of an exact Event of the commonest form (the default type, exact-str
    one-line data, no ID or retry), as send() writes it inline; None for any other."""
    try:
        event_type, data, ident, retry = item[:4]
    except ValueError:
        return None
    if (
        retry is None
        and type(ident) is str
        and not ident
        and type(data) is str
        and type(event_type) is str
        and event_type == "message"
        and "\n" not in data
        and "\r" not in data
    ):
        try:
            return f"data: {data}\n\n".encode()
        except UnicodeEncodeError:
            return None
    return None


def _planner(
    keepalive: float | None, first_byte: float | None, padding: int, now: float
) -> KeepalivePlanner | None:
    interval = seconds("ServerStream: keepalive", keepalive, positive=True)
    if interval is None:
        if first_byte is not None or padding != 0:
            raise ValueError("ServerStream: first_byte and padding shape keepalives; set keepalive")
        return None
    first = seconds("ServerStream: first_byte", first_byte, positive=True)
    return KeepalivePlanner(interval=interval, first_byte=first, padding=padding, now=now)


def _count(name: str, value: int, least: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"ServerStream: {name} must be an int, not {value!r}")
    if value < least:
        raise ValueError(f"ServerStream: {name} must be >= {least}, not {value}")
    return value


class Frame:
    """Items serialized once, to be queued on many streams by :func:`deliver`.

    Its bytes are trusted because serialize() wrote them, from items it checked: a
    Frame is made from items only, and keeps no setter (bytes a caller hands to
    ServerStream.send() are still checked there).  ``key`` is the conflation key (None:
    never conflated); ``urgent``: the frame is due at once (a replay, or an event with
    a ``retry``, which the client must not wait for).
    """

    __slots__ = ("data", "key", "urgent")

    data: bytes
    key: Hashable | None
    urgent: bool

    def __init__(
        self, *items: Event | Comment, key: Hashable | None = None, urgent: bool = False
    ) -> None:
        data = serialize(items[0]) if len(items) == 1 else b"".join(map(serialize, items))
        urgent = urgent or any(type(i) is Event and i[3] is not None for i in items)
        # Through the slots' own setters: object.__setattr__ on a class that forbids
        # setattr costs about 180 ns each (issue 40, item 8).
        _SET_DATA(self, data)
        _SET_KEY(self, key)
        _SET_URGENT(self, urgent)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"a Frame is read-only: {name} stays what serialize() made")

    def __reduce__(self) -> tuple[object, ...]:
        raise TypeError("a Frame is not pickled: it lives for one publish()")


_SET_DATA = vars(Frame)["data"].__set__
_SET_KEY = vars(Frame)["key"].__set__
_SET_URGENT = vars(Frame)["urgent"].__set__


def serialized(item: Event | Comment) -> tuple[bytes, bool]:
    """``item``'s bytes and whether they are urgent, as a Frame of it holds them (a
    publish queues them inline, issue 40, item 8, and makes a Frame only when needed)."""
    return serialize(item), type(item) is Event and item[3] is not None


def trusted(data: bytes, key: Hashable | None, urgent: bool) -> Frame:
    """The Frame of bytes serialized() just returned (no second serialize())."""
    frame = Frame.__new__(Frame)
    _SET_DATA(frame, data)
    _SET_KEY(frame, key)
    _SET_URGENT(frame, urgent)
    return frame


def subscriber(
    now: float,
    *,
    max_buffer: int,
    overflow: Overflow,
    keepalive: float | None = None,
    first_byte: float | None = None,
    padding: int = 0,
    coalesce_bytes: int = 0,
    coalesce_delay: float = 0.0,
) -> ServerStream:
    """A ServerStream for a Hub's subscriber, whose queue past ``max_buffer`` follows
    ``overflow`` (the module's opening comment says how)."""
    stream = ServerStream(
        now=now,
        keepalive=keepalive,
        first_byte=first_byte,
        padding=padding,
        coalesce_bytes=coalesce_bytes,
        coalesce_delay=coalesce_delay,
        max_buffer=max_buffer,
    )
    stream._overflow = overflow
    stream._plain = overflow == "disconnect"
    if overflow == "drop-oldest":
        stream._frames = deque()
    elif overflow == "conflate":
        stream._slots = {}
    return stream


def deliver(stream: ServerStream, frame: Frame, now: float) -> bool:
    """Queue ``frame`` on a subscriber's ``stream``, unless it is no longer open;
    ``now``: a time a Hub's Clock checked.

    Returns:
        True when the stream is "slow" (now or before): the hub drops it.
    """
    clock = stream._clock  # ``now`` is the hub's, checked by its own clock; a stream
    if now > clock.latest:  # whose own calls ran ahead takes the frame at its latest
        clock.latest = now  # time: one subscriber's clock never fails a whole publish
    else:
        now = clock.latest
    if stream._state != "open":
        return stream._state == "slow"
    slots = stream._slots
    if slots is None or frame.key is None:
        stream._queue(frame.data, now, frame.urgent)
    else:
        _conflate(stream, slots, frame, now)
    return stream.state == "slow"  # (the property: _state changed since it was read)


def finish(stream: ServerStream, now: float, *, cut: bool) -> None:
    """End a subscriber's ``stream`` (a clean end, or a cut) unless it is no longer
    open; ``now``: a time a Hub's Clock checked, taken as :func:`deliver` takes it."""
    clock = stream._clock
    if now > clock.latest:
        clock.latest = now
    if stream._state == "open":
        stream.end(clock.latest, cut=cut)


def _conflate(
    stream: ServerStream, slots: dict[Hashable, tuple[int, bytes]], frame: Frame, now: float
) -> None:
    """Queue a keyed frame, blanking the older frame of its key still queued."""
    frames = stream._frames
    assert isinstance(frames, list)  # a "conflate" stream's queue
    if not frames:
        slots.clear()  # all handed out: every slot is stale
        stream._blanks = 0
    older = slots.get(frame.key)
    if older is not None:
        index, data = older
        if index < len(frames) and frames[index] is data:
            frames[index] = b""
            stream._size -= len(data)
            stream._blanks += 1
    stream._queue(frame.data, now, frame.urgent)
    if stream._state == "open":
        slots[frame.key] = (len(frames) - 1, frame.data)
        if 2 * stream._blanks > len(frames):  # amortized: each blank is squeezed once
            _squeeze(frames, slots)
            stream._blanks = 0


def _squeeze(frames: list[bytes], slots: dict[Hashable, tuple[int, bytes]]) -> None:
    """Take the blanks out of ``frames`` and move each live slot to its new index."""
    moved: dict[int, int] = {}
    kept: list[bytes] = []
    for index, data in enumerate(frames):
        if data:
            moved[index] = len(kept)
            kept.append(data)
    frames[:] = kept
    for key, (index, data) in list(slots.items()):
        if index in moved and kept[moved[index]] is data:
            slots[key] = (moved[index], data)
        else:
            del slots[key]


def replay(stream: ServerStream, window: ReplayWindow, cursor: str | None, now: float) -> Resume:
    """Prime a response's ``stream`` from ``window`` for a client whose resume cursor
    is ``cursor`` (None: a new client), as the adapters answer a request.

    The events after the cursor go first, in one frame (a long replay must not make
    the stream "slow" before its consumer could read a byte), after the gap event with
    ``{"dropped": null}`` when the window cannot replay all that was missed (an unknown
    cursor, or events dropped: issue 41, item 5), as a Hub's subscriber gets it.  When
    the window's producer finished, the stream is ended after them; a finished stream
    with nothing left to send gets no gap either, so that an adapter can answer 204.
    """
    resume = window.resume("" if cursor is None else cursor)
    frames = [serialize(event) for event in resume.events]
    if cursor is not None and resume.verdict != "continue" and (frames or not resume.finished):
        frames.insert(0, NULL_GAP)
    if frames:
        stream._queue(b"".join(frames), stream._clock.read(now, "replay"), True)
    if resume.finished:
        stream.end(now, cut=resume.cut)
    return resume


# --- One log for many readers (issue 40, item 8) ------------------------------------------

Wake = Callable[[], None]


@final
class FrameLog:
    """The frames published for a Hub's subscribers that read alike, kept once; each
    subscriber's stream reads them by its own cursor (join(); the opening comment of
    _hub.py says who shares one).

    Positions count the frames ever appended: ``frames[0]`` is at ``first``, and the
    next frame goes at ``end``.  A read moves only its reader's own cursor; the log
    knows each reader by a *mark* at or before its cursor (``marks``: position -> the
    readers marked there; ``taken``: position -> the log's bytes before it;
    ``heap``: the marked positions, smallest first, some stale), so ``floor``, the
    bytes before the oldest mark, is at most what any reader has read.  Only when a
    publish takes ``bytes - floor`` past ``max_buffer`` does the log look at the
    readers of its oldest marks (_settle()): each is "slow" or marked again at its
    cursor, and the frames before the oldest mark go.  So a publish and a read do no
    work for other readers, a reader is looked at about once per ``max_buffer`` bytes
    published, and the log holds at most ``max_buffer`` bytes and one frame before its
    newest frame.
    """

    __slots__ = (
        "alone",
        "bytes",
        "channels",
        "end",
        "first",
        "floor",
        "frames",
        "heap",
        "marks",
        "max_buffer",
        "taken",
        "times",
        "wakes",
    )

    def __init__(
        self,
        channels: frozenset[str] | None,
        max_buffer: int,
        alone: Callable[[ServerStream, FrameLog], None],
    ) -> None:
        self.channels = channels  # the hub's routing key: what its readers read
        self.max_buffer = max_buffer
        self.alone = alone  # the hub's: a reader that left on its own is served alone
        self.frames: list[bytes] = []
        self.times: list[float] = []  # when each frame was published
        self.first = 0
        self.end = 0
        self.bytes = 0  # of every frame ever appended
        self.floor = 0  # ``bytes`` before the oldest mark
        self.marks: dict[int, dict[ServerStream, None]] = {}
        self.taken: dict[int, int] = {}
        self.heap: list[int] = []
        self.wakes: dict[ServerStream, Wake] = {}  # the readers that have one

    def append(self, data: bytes, now: float) -> list[ServerStream]:
        """Queue ``data``, published at ``now``, for every reader, with no work per
        reader; the readers it made "slow" (they left the log)."""
        self.frames.append(data)
        self.times.append(now)
        self.end += 1
        self.bytes += len(data)
        if self.bytes - self.floor > self.max_buffer:
            return self._settle()
        return []

    def mark(self, stream: ServerStream, position: int, taken: int) -> None:
        """Mark ``stream`` at ``position``, with ``taken`` bytes before it."""
        readers = self.marks.get(position)
        if readers is None:
            self.marks[position] = {stream: None}
            self.taken[position] = taken
            heappush(self.heap, position)
        else:
            readers[stream] = None
        stream._mark = position

    def unmark(self, stream: ServerStream) -> None:
        """Forget ``stream``'s mark (its position stays in the heap until popped)."""
        position = stream._mark
        readers = self.marks[position]
        del readers[stream]
        if not readers:
            del self.marks[position]
            del self.taken[position]

    def _settle(self) -> list[ServerStream]:
        """Look at the readers of the oldest marks while they are more than
        ``max_buffer`` behind: "slow" as _queue() makes a stream whose non-empty queue a
        frame takes past max_buffer (so one frame, however big, on an empty queue is
        not), else marked again at their cursors; then forget the frames before the
        oldest mark."""
        slow: list[ServerStream] = []
        marks, heap = self.marks, self.heap
        while heap:
            position = heap[0]
            readers = marks.get(position)
            if readers is None:  # stale: its readers left or were marked again
                heappop(heap)
                continue
            if self.bytes - self.taken[position] <= self.max_buffer:
                break
            if self.end - position < 2:  # one frame behind: nobody is slow yet
                break
            heappop(heap)
            del marks[position]
            del self.taken[position]
            for stream in readers:
                if self.end - stream._cursor < 2 or self.bytes - stream._taken <= self.max_buffer:
                    self.mark(stream, stream._cursor, stream._taken)
                else:
                    self.wakes.pop(stream, None)
                    _detach(stream, slow=True)
                    slow.append(stream)
        first = heap[0] if heap else self.end
        self.floor = self.taken[first] if heap else self.bytes
        del self.frames[: first - self.first]
        del self.times[: first - self.first]
        self.first = first
        return slow

    def __reduce__(self) -> tuple[object, ...]:
        raise TypeError("a FrameLog is not pickled: a Hub pickles its readers on their own")


class _Reader(ServerStream):
    """A ServerStream while it reads a FrameLog: its queue is the log past its cursor.

    A publish touches no reader: the reader brings its due time and clock up to the
    frames published since it last looked (_sync()) before any of its own calls, which
    gives them the history deliver() would have made.  Its methods that queue or end
    leave the log first (the hub serves it alone from then on); pickled, it is a plain
    ServerStream with the frames it has not read as its own queue.
    """

    _log: FrameLog

    @property
    def _size(self) -> int:  # type: ignore[override]  # (the log's bytes: read-only)
        return self._log.bytes - self._taken

    @property
    def deadline(self) -> float | None:
        _sync(self)
        return super().deadline

    def data_to_send(self, now: float) -> bytes:
        log = self._log
        end = log.end
        cursor = self._cursor
        if cursor == end:  # nothing queued: the keepalive's turn, as a plain stream's
            return super().data_to_send(now)
        # Every frame queued is due: at its publish or the reader's own later time, which
        # ``now`` is not before (so its due time need not be worked out, see _sync()).
        clock = self._clock
        if type(now) is float and clock.latest <= now < _INFINITY and log.times[-1] <= now:
            clock.latest = now
        else:
            _sync(self)
            now = clock.read(now, "data_to_send")
        frames = log.frames
        out = frames[-1] if end - cursor == 1 else b"".join(frames[cursor - log.first :])
        self._cursor = self._seen = end
        self._taken = log.bytes
        self._due_at = None
        self._unsaid = now
        return out

    def send(
        self, item: Event | Comment | bytes, now: float, *, urgent: bool = False
    ) -> str | None:
        _alone(self)
        return ServerStream.send(self, item, now, urgent=urgent)

    def _send_now(self, item: Event | Comment | bytes, now: float) -> bytes:
        _alone(self)
        return ServerStream._send_now(self, item, now)

    def end(self, now: float, *, cut: bool = False) -> None:
        _alone(self)
        ServerStream.end(self, now, cut=cut)

    def resume(self, last_event_id: str, now: float) -> Resume:
        _alone(self)
        return ServerStream.resume(self, last_event_id, now)

    def __reduce__(self) -> tuple[object, ...]:
        _sync(self)
        log = self._log
        state = attributes(self)
        for name in _READING:
            del state[name]
        state["_frames"] = log.frames[self._cursor - log.first :]
        state["_size"] = self._size
        state["_clock"] = clock_state(self._clock)
        # Through copyreg's own reconstructor (pickle's for plain objects): __newobj__
        # must name the object's own class, and this one is private.
        rebuild = copyreg._reconstructor  # type: ignore[attr-defined]  # (not in typeshed)
        return (rebuild, (ServerStream, object, None), state)


# What a reader of a FrameLog holds on its instance: its log; the position of the next
# frame it reads, and the log's bytes before it; the position it last looked up to; its
# mark in the log.
_READING = ("_log", "_cursor", "_taken", "_seen", "_mark")
# What the log holds for a reader: its queue and the queue's size (_detach() gives them
# back).
_LOGS_OWN = frozenset({"_frames", "_size"})


def join(log: FrameLog, stream: ServerStream, wake: Wake | None) -> ServerStream:
    """The reader of ``log`` from its end that takes the place of ``stream``: a Hub's
    new subscriber, open, with nothing queued, no coalescing and the policy
    "disconnect" (its queue's rules are then the log's).

    A new object, not ``stream`` with its class changed: an object whose class changed
    keeps its attributes in a dict of its own, which makes every attribute read about
    three times slower; a reader made by its class shares its class's key layout.
    """
    reader = _Reader.__new__(_Reader)
    for name, value in vars(stream).items():
        if name not in _LOGS_OWN:
            setattr(reader, name, value)
    reader._log = log
    reader._cursor = reader._seen = log.end
    reader._taken = log.bytes
    log.mark(reader, log.end, log.bytes)
    if wake is not None:
        log.wakes[reader] = wake
    return reader


def leave(stream: ServerStream) -> FrameLog:
    """Take a reader off its log, with what it has not read as its own queue (a plain
    ServerStream again); the log (its frames go at its next _settle(), or with it)."""
    log = stream._log
    assert log is not None  # (a reader's)
    log.unmark(stream)
    log.wakes.pop(stream, None)
    _detach(stream, slow=False)
    return log


def _alone(stream: _Reader) -> None:
    """The reader leaves its log on its own (it queues or ends): the hub serves it alone."""
    log = leave(stream)
    log.alone(stream, log)


def _detach(stream: ServerStream, *, slow: bool) -> None:
    """A reader, unmarked, made a plain ServerStream: with what it has not read as its
    own queue, or "slow" with none."""
    _sync(stream)
    log = stream._log
    assert log is not None  # (a reader's)
    frames = [] if slow else log.frames[stream._cursor - log.first :]
    size = 0 if slow else log.bytes - stream._taken
    stream.__class__ = ServerStream
    for name in _READING:
        delattr(stream, name)
    stream._frames = frames
    stream._size = size
    if slow:
        stream._due_at = None
        stream._state = "slow"
        stream._plain = False


def _sync(stream: ServerStream) -> None:
    """Bring a reader's due time and clock up to the frames published since it last
    looked, as deliver() would have at each publish: with ``coalesce_delay`` 0 the
    first frame queued on an empty queue is due when it was published, or at the
    reader's own latest time if its clock ran ahead (the time deliver() takes then);
    the reader's clock has seen every publish's time."""
    log = stream._log
    assert log is not None  # (a reader's)
    seen = stream._seen
    if seen == log.end:
        return
    times = log.times
    clock = stream._clock
    latest = clock.latest
    if stream._due_at is None:  # nothing was queued: the first new frame sets it
        published = times[seen - log.first]
        stream._due_at = published if published > latest else latest
    if times[-1] > latest:
        clock.latest = times[-1]
    stream._seen = log.end
