# The caller's clock, as the stream-health state machines (Watchdog, KeepalivePlanner,
# Coalescer) read it: every decision is a function of the times the caller passes in,
# never of a clock of their own, so a test drives them with plain numbers.
#
# Rules, checked on every call that takes a time:
# - A time (``now``) is a finite int or float: TypeError for anything else (a bool, a
#   string, None), ValueError for NaN, an infinity or an int too big for a float
#   (``10**400``), which no clock returns and which would make every comparison a lie.
# - Time never goes backwards: a ``now`` below the latest one seen is a ValueError
#   naming both (time.monotonic() never does it; mixing two clocks, or time.time() after
#   an NTP step, does).  An equal ``now`` is fine: many calls share one reading.
# - A duration (an option in seconds) is a finite number >= 0, or > 0 where zero would
#   make a loop spin; None turns the clock off where the option allows it.
#
# The hot path: these checks run on every call of every state machine, several per
# event, so Clock.read() first tries the one comparison chain that settles the common
# case: an exact float with ``latest <= now < inf`` is finite (NaN fails every
# comparison, an infinity fails ``< inf``) and not backwards.  Anything else (an int, a
# subclass, NaN, an infinity, a step back) takes the full check, which accepts or
# refuses it exactly as before.

from __future__ import annotations

import math

__all__ = ["Clock", "duration", "seconds"]

_INFINITY = math.inf


def _number(value: object, what: str) -> float:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise TypeError(f"{what} must be a number of seconds, not {value!r}")
    try:
        number = float(value)
    except OverflowError:  # an int past a float's range: not worth quoting whole
        raise ValueError(f"{what} must be finite, not an int too big for a float") from None
    if not math.isfinite(number):
        raise ValueError(f"{what} must be finite, not {value!r}")
    return number


def duration(name: str, value: float, *, positive: bool = False) -> float:
    """Check the option ``name``: a finite number of seconds, >= 0 (or > 0)."""
    number = _number(value, name)
    if number < 0 or (positive and number == 0):
        bound = "> 0" if positive else ">= 0"
        raise ValueError(f"{name} must be {bound} seconds, not {value!r}")
    return number


def seconds(name: str, value: float | None, *, positive: bool = False) -> float | None:
    """Check the option ``name``: None (off), or a duration as above."""
    return None if value is None else duration(name, value, positive=positive)


class Clock:
    """The latest time a caller passed; refuses one that goes backwards."""

    __slots__ = ("latest", "owner")

    def __init__(self, owner: str, now: float) -> None:
        self.owner = owner
        self.latest = _number(now, f"{owner}: now")

    def read(self, now: float, method: str) -> float:
        """Check ``now`` as passed to ``method`` and remember it."""
        if type(now) is float and self.latest <= now < _INFINITY:
            self.latest = now
            return now
        number = _number(now, f"{self.owner}.{method}(): now")
        if number < self.latest:
            raise ValueError(
                f"{self.owner}.{method}(): now went backwards ({now!r} after {self.latest!r}); "
                "pass one monotonic clock, such as time.monotonic()"
            )
        self.latest = number
        return number
