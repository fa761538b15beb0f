# The liveness watchdog: tell a quiet but healthy stream from a silently dead one, on
# the caller's clock alone.
#
# Three clocks, each a number of seconds or None (off):
# - first_byte runs from construction until the first byte: the wait for the first
#   byte (time to first token, a model thinking) is the riskiest phase, and a watchdog
#   that starts only once the response has begun leaves it unguarded.  Until the first
#   byte it replaces the idle clock; with first_byte off, the idle clock runs from
#   construction instead (and reports "idle").
# - idle runs from the latest sign of life: a read of at least one byte (saw_bytes, fed
#   from the raw reads, since a parser may read many lines without returning an item)
#   or an item (saw_item; comments included).
# - progress runs from the latest progress: an event, or what the caller marks as
#   progress (a text or tool delta: sse_sansio.llm.Progress), counted from the first
#   byte.  Bytes or keepalives without progress for that long are "stalled": a
#   generation kept warm by comment heartbeats must still time out.
#
# check(now) reads the clocks: "no-first-byte", then "idle", then "stalled", then "ok".
# Invariants (property-tested): without new input, a verdict that is not "ok" never
# turns back into "ok", and successive deadlines never decrease; after the first byte
# no input moves the deadline of an "ok" earlier either (only the first byte may: the
# idle and progress clocks then take over from first_byte).  The end of the stream
# (EndOfStream) stops every clock.
#
# The hot path (issue 33: the health layers within 3x of the parse, per event): nearly
# every call is saw_item(an exact Event, a float time), which settles in one comparison
# chain for the clock (Clock.read's own first test, inline: an exact float with
# ``latest <= now < inf`` is finite and not backwards; anything else goes to Clock.read,
# which accepts or refuses it as ever) and one type test for the item.

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from sse_sansio._clock import Clock, seconds
from sse_sansio._events import (
    Comment,
    DataPiece,
    Diagnostic,
    EndOfStream,
    Event,
    PiecedEvent,
    SkippedEvent,
)
from sse_sansio._pickling import clock_state, public_reduce, restore, with_clock

__all__ = ["Verdict", "Watchdog"]

State = Literal["ok", "no-first-byte", "idle", "stalled"]

# Items that are part of an event the server sent: progress unless the caller says not.
_EVENTS = (Event, PiecedEvent, DataPiece, SkippedEvent)
# Items that are life only: a comment (keepalive), a parser's note on ignored lines.
_LIFE = (Comment, Diagnostic)
_INFINITY = math.inf


@dataclass(frozen=True)
class Verdict:
    """What :meth:`Watchdog.check` found.

    Attributes:
        state: ``"ok"``; ``"no-first-byte"`` (no byte within ``first_byte`` seconds of
            the start); ``"idle"`` (no byte at all for ``idle`` seconds); or
            ``"stalled"`` (bytes or keepalives flowing, but no progress for
            ``progress`` seconds).
        deadline: The next time, on your clock, at which :meth:`Watchdog.check` can
            give another answer without new input; ``None`` when no clock runs.
            Wait until then (or until the next read), then check again.
    """

    state: State
    deadline: float | None

    @property
    def ok(self) -> bool:
        """True when ``state`` is ``"ok"``."""
        return self.state == "ok"


class Watchdog:
    """A sans-I/O liveness watchdog for one streamed response.

    Feed it every read with :meth:`saw_bytes` and every parsed item with
    :meth:`saw_item`, and ask :meth:`check` when its :attr:`~Verdict.deadline` comes
    (or after each read); give up on the stream when the verdict is not ``"ok"``.  It
    never reads a clock: every method takes ``now``, your monotonic clock's time
    (``time.monotonic()``, ``loop.time()``).

    Args:
        first_byte: Seconds to wait for the first byte after construction, or None.
        idle: Seconds without any byte (or item) before the stream is ``"idle"``.
        progress: Seconds without progress before a live stream is ``"stalled"``.
        now: The time the request was sent (the first-byte clock starts here).

    Raises:
        TypeError: an option or ``now`` that is not a number.
        ValueError: a negative or non-finite number of seconds, a NaN or infinite
            ``now``; on any method, a ``now`` earlier than one passed before.
    """

    def __init__(
        self,
        *,
        first_byte: float | None = None,
        idle: float | None = None,
        progress: float | None = None,
        now: float,
    ) -> None:
        self._first_byte = seconds("Watchdog: first_byte", first_byte)
        self._idle = seconds("Watchdog: idle", idle)
        self._progress = seconds("Watchdog: progress", progress)
        self._clock = Clock("Watchdog", now)
        self._start = self._clock.latest
        self._first: float | None = None  # when the first byte (or item) came
        self._life = self._start  # the latest byte or item
        self._moved: float | None = None  # the latest progress
        self._ended = False

    def saw_bytes(self, n: int, now: float) -> None:
        """``n`` bytes were read at ``now`` (0, the end of the body, is no sign of life)."""
        now = self._clock.read(now, "saw_bytes")
        if not isinstance(n, int) or isinstance(n, bool):
            raise TypeError(f"Watchdog.saw_bytes(): n must be an int, not {n!r}")
        if n < 0:
            raise ValueError(f"Watchdog.saw_bytes(): n must be >= 0, not {n}")
        if n:
            self._alive(now)

    def saw_item(self, item: object, now: float, *, progress: bool | None = None) -> None:
        """The parser returned ``item`` at ``now``.

        Every item is a sign of life.  ``progress`` says whether it also resets the
        progress clock; by default an event (or a piece of one) does and a comment or
        a diagnostic does not.  Pass ``progress=llm.Progress(...).of(item)`` to count
        only what moves an LLM answer on.  An :class:`~sse_sansio.EndOfStream` stops
        every clock: the stream is over, and every later check is ``"ok"``.

        Raises:
            TypeError: ``item`` is not an item of the parser (``NEED_DATA``, say), or
                ``progress`` is not a bool or None.
        """
        clock = self._clock
        if type(now) is float and clock.latest <= now < _INFINITY:
            clock.latest = now
        else:
            now = clock.read(now, "saw_item")
        if type(item) is Event and progress is None:  # nearly every call: progress
            if self._first is None:
                self._first = now
            self._life = self._moved = now
            return
        if progress is not None and not isinstance(progress, bool):
            raise TypeError(
                f"Watchdog.saw_item(): progress must be a bool or None, not {progress!r}"
            )
        if isinstance(item, _EVENTS):
            moved = True if progress is None else progress
        elif isinstance(item, _LIFE):
            moved = bool(progress)
        elif isinstance(item, EndOfStream):
            self._ended = True
            return
        else:
            raise TypeError(f"Watchdog.saw_item() takes an item of the parser, not {item!r}")
        if self._first is None:
            self._first = now
        self._life = now
        if moved:
            self._moved = now

    def check(self, now: float) -> Verdict:
        """The verdict at ``now``, with the time it can next change."""
        now = self._clock.read(now, "check")
        if self._ended:
            return Verdict("ok", None)
        if self._first is None:
            if self._first_byte is not None:
                return _judge(now, "no-first-byte", self._start + self._first_byte)
            if self._idle is not None:
                return _judge(now, "idle", self._start + self._idle)
            return Verdict("ok", None)
        idle_at = None if self._idle is None else self._life + self._idle
        stall_at = None
        if self._progress is not None:
            stall_at = (self._first if self._moved is None else self._moved) + self._progress
        if idle_at is not None and now >= idle_at:
            return Verdict("idle", None)
        if stall_at is not None and now >= stall_at:
            return Verdict("stalled", idle_at)  # only "idle" can follow
        times = [t for t in (idle_at, stall_at) if t is not None]
        return Verdict("ok", min(times) if times else None)

    def _alive(self, now: float) -> None:
        if self._first is None:
            self._first = now
        self._life = now

    # Pickling (issue 32, item 4): worth keeping: its clocks are times on the
    # caller's clock, so a watchdog pickled between two reads judges the same after.  The
    # pickle names sse_sansio.Watchdog only: the Clock, a private class, goes as its owner
    # and latest time and is rebuilt on load (sse_sansio/_pickling.py).
    def __reduce__(self) -> tuple[object, ...]:
        return public_reduce(self, _clock=clock_state(self._clock))

    def __setstate__(self, state: dict[str, object]) -> None:
        restore(self, with_clock(state))


def _judge(now: float, state: State, at: float) -> Verdict:
    """``state`` once ``at`` has come (and nothing can change it then), else ok until it."""
    return Verdict(state, None) if now >= at else Verdict("ok", at)
