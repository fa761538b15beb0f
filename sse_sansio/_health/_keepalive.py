# The keepalive planner: when a server or proxy should write a comment so that nothing
# between it and the client (a load balancer, nginx, a corporate proxy) closes a quiet
# stream, on the caller's clock alone.
#
# Why: ALB and nginx drop a response that writes nothing for 60 s by default
# (proxy_read_timeout, the ALB idle timeout), and a model thinking before its first
# token writes nothing; a short keepalive can also sit in a buffering proxy instead of
# being flushed, so it can be padded to fill that buffer.  The WHATWG standard itself
# suggests "a comment line ... every 15 seconds or so" (9.2.7 "Authoring notes").
#
# Rules: a keepalive is due once nothing was written for ``interval`` seconds, or for
# ``first_byte`` seconds (when set) until the first real write; due() returns the
# comment's bytes and counts them as written at that time; sent() records everything
# else the caller writes (events, its own comments).  A keepalive never ends the
# first-byte phase: only a real write does.  Invariant: deadline only moves forward as
# long as ``now`` does, but for the first real write, which may switch to the other
# interval.
#
# The hot path (issue 33): sent() is called per write, so it settles a float time in
# Clock.read's own first comparison chain, inline (``latest <= now < inf``: finite and
# not backwards); anything else goes to Clock.read, which accepts or refuses it as ever.

from __future__ import annotations

import math

from sse_sansio._clock import Clock, duration, seconds
from sse_sansio._pickling import clock_state, public_reduce, restore, with_clock

__all__ = ["KeepalivePlanner"]

# A buffering proxy's buffer is 4 or 8 KiB (nginx's proxy_buffer_size); 64 KiB bounds
# a mistake (a padding in bits, say) without getting in anyone's way.
MAX_PADDING = 65536
_COMMENT = b":\n"  # the shortest comment line: an empty comment
_INFINITY = math.inf


class KeepalivePlanner:
    """Plan the keepalive comments of one streamed response (server or proxy side).

    Call :meth:`sent` whenever you wrote something to the client, and :meth:`due` when
    :attr:`deadline` comes (or whenever you wake up): it returns the comment to write
    now, or None.  Send ``Cache-Control: no-cache`` and ``X-Accel-Buffering: no`` with
    the response so that proxies pass each write on at once (:doc:`/stream-health`).

    Args:
        interval: Seconds of silence after which a keepalive is due (> 0).
        first_byte: Seconds of silence allowed before the first real write, if that
            wait needs its own interval (a shorter one, to get the response through a
            proxy that waits for the first byte; > 0), or None to use ``interval``.
        padding: The size in bytes to pad each keepalive to (0 to 65536; 0 or a
            size below 2 writes the bare comment ``b":\\n"``).
        now: The time the response started (its headers were sent).

    Raises:
        TypeError: an option or ``now`` that is not a number (``padding``: an int).
        ValueError: an interval that is not a finite number > 0, a padding out of
            range, a NaN or infinite ``now``; on any method, ``now`` going backwards.
    """

    def __init__(
        self, *, interval: float, first_byte: float | None = None, padding: int = 0, now: float
    ) -> None:
        self._interval = duration("KeepalivePlanner: interval", interval, positive=True)
        self._first_byte = seconds("KeepalivePlanner: first_byte", first_byte, positive=True)
        if not isinstance(padding, int) or isinstance(padding, bool):
            raise TypeError(f"KeepalivePlanner: padding must be an int, not {padding!r}")
        if not 0 <= padding <= MAX_PADDING:
            raise ValueError(f"KeepalivePlanner: padding must be 0 to {MAX_PADDING}, not {padding}")
        # ":" then spaces then LF: one comment line of exactly ``padding`` bytes.
        fill = max(0, padding - len(_COMMENT))
        self._comment = b":" + b" " * fill + b"\n"
        self._clock = Clock("KeepalivePlanner", now)
        self._written = self._clock.latest
        self._real = False  # has a real write happened?

    @property
    def deadline(self) -> float:
        """The time the next keepalive is due, if nothing is written before."""
        wait = self._interval
        if not self._real and self._first_byte is not None:
            wait = self._first_byte
        return self._written + wait

    def sent(self, now: float) -> None:
        """You wrote something (an event, a comment of yours) to the client at ``now``."""
        clock = self._clock
        if type(now) is float and clock.latest <= now < _INFINITY:  # Clock.read's first test
            clock.latest = now
        else:
            now = clock.read(now, "sent")
        self._written = now
        self._real = True

    def due(self, now: float) -> bytes | None:
        """The keepalive comment to write now, or None if none is due yet.

        The bytes returned count as written at ``now``: write them, and do not call
        :meth:`sent` for them.
        """
        now = self._clock.read(now, "due")
        if now < self.deadline:
            return None
        self._written = now
        return self._comment

    # Pickling (issue 32, item 4): worth keeping: its state is the time of the latest
    # write on the caller's clock, so a planner pickled between two writes plans the
    # same after.  The pickle names sse_sansio.KeepalivePlanner only: the Clock, a
    # private class, goes as its owner and latest time and is rebuilt on load
    # (sse_sansio/_pickling.py).
    def __reduce__(self) -> tuple[object, ...]:
        return public_reduce(self, _clock=clock_state(self._clock))

    def __setstate__(self, state: dict[str, object]) -> None:
        restore(self, with_clock(state))
