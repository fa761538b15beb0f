# Where a replay window keeps its events: the store protocol, and the in-memory store.
#
# A store is a log of one stream.  Its contract, which the window's verdicts rely on:
# - append() numbers the events 1, 2, 3... in the order they are appended, with no
#   holes and no reuse, and returns the stream's token with the number;
# - it drops only the oldest events (so what it keeps is numbers first ... last, with
#   no hole), and never the newest one unless a limit forbids keeping even that;
# - read(after) tells the token, the first number kept (last + 1 when none is kept),
#   the last number ever issued (0 before any) and, unless ``after`` is None, every
#   kept event numbered above ``after``, in order.
# - the token never changes while the numbers go on, and a new stream gets a new
#   random token, so an ID of another stream, or of a stream that was deleted and made
#   again, never matches.
# - finish(cut=...) records, once and for good, that the producer finished (cleanly or
#   in a cut); every later read() reports it (``finished``, ``cut``), in every process
#   that reads the store, so that a client resuming after the end is not held open
#   waiting for events that will never come.  The first finish() wins.
# The events a store returns carry no ID: the window writes ``<token>-<number>``.
#
# MemoryStore keeps a deque, trimmed on append by max_events and max_bytes (the bytes
# serialize() writes for the event, ID included, so a client's replay is bounded too).

from __future__ import annotations

import secrets
from collections import deque
from dataclasses import dataclass
from itertools import islice
from typing import Protocol

from sse_sansio._events import Event
from sse_sansio._serializer import serialize

__all__ = ["AsyncReplayStore", "MemoryStore", "ReplayStore", "StoreSnapshot"]

# 96 random bits: an ID cannot be guessed into another stream, and stays short.
TOKEN_BYTES = 12


def new_token() -> str:
    """A fresh random stream token (hexadecimal)."""
    return secrets.token_hex(TOKEN_BYTES)


@dataclass(frozen=True)
class StoreSnapshot:
    """What a store holds, as :meth:`ReplayStore.read` reports it."""

    #: The stream's token: 1 to 64 characters of ``[A-Za-z0-9_]``.
    token: str
    #: The number of the oldest event kept (``last + 1`` when none is kept).
    first: int
    #: The number of the newest event ever appended (0 before the first).
    last: int
    #: The kept events numbered above the ``after`` asked for, oldest first.
    events: tuple[tuple[int, Event], ...] = ()
    #: True once the producer finished (``finish()``): no event will follow ``last``.
    finished: bool = False
    #: True when it finished in a cut (``finish(cut=True)``).
    cut: bool = False


class ReplayStore(Protocol):
    """A log of one stream, for :class:`~sse_sansio.ReplayWindow` (see
    :doc:`/resumption` for the contract a store keeps)."""

    def append(self, event: Event) -> tuple[str, int]:
        """Keep ``event`` (its ``id`` is not kept); return the token and its number."""

    def read(self, after: int | None) -> StoreSnapshot:
        """The token, the first and last numbers and the kept events after ``after``."""

    def finish(self, *, cut: bool = False) -> None:
        """Record that the producer finished (in a cut with ``cut=True``); the first
        call wins."""


class AsyncReplayStore(Protocol):
    """:class:`ReplayStore` with coroutines, for :class:`~sse_sansio.AsyncReplayWindow`;
    ``read(after, wait=seconds)`` may wait that long for an event after ``after``."""

    async def append(self, event: Event) -> tuple[str, int]:
        """As :meth:`ReplayStore.append`."""

    async def read(self, after: int | None, *, wait: float | None = None) -> StoreSnapshot:
        """As :meth:`ReplayStore.read`, waiting up to ``wait`` seconds for an event."""

    async def finish(self, *, cut: bool = False) -> None:
        """As :meth:`ReplayStore.finish`."""


def _limit(name: str, value: int | None) -> int | None:
    if value is not None and (type(value) is not int or value < 1):
        raise ValueError(f"{name} must be a positive int or None, not {value!r}")
    return value


class MemoryStore:
    """The in-memory store of :class:`~sse_sansio.ReplayWindow`: this process only.

    Keeps at most ``max_events`` events and ``max_bytes`` bytes (as :func:`serialize`
    writes them); the oldest go first.  An event larger than ``max_bytes`` alone is
    numbered and dropped at once: a client that missed it gets "gap".  Like the rest of
    sse_sansio it takes no lock: in a threaded server, call it under one.
    """

    def __init__(self, *, max_events: int | None = None, max_bytes: int | None = None) -> None:
        self._max_events = _limit("max_events", max_events)
        self._max_bytes = _limit("max_bytes", max_bytes)
        self._token = new_token()
        self._kept: deque[tuple[int, Event, int]] = deque()  # number, event, size
        self._bytes = 0
        self._last = 0
        self._end: tuple[bool, bool] = (False, False)  # finished, cut

    def append(self, event: Event) -> tuple[str, int]:
        self._last += 1
        kept = Event(type=event.type, data=event.data, retry=event.retry)
        size = len(serialize(kept)) + len(f"id: {self._token}-{self._last}\n")
        self._kept.append((self._last, kept, size))
        self._bytes += size
        while self._kept and self._over():
            self._bytes -= self._kept.popleft()[2]
        return self._token, self._last

    def _over(self) -> bool:
        too_many = self._max_events is not None and len(self._kept) > self._max_events
        return too_many or (self._max_bytes is not None and self._bytes > self._max_bytes)

    def read(self, after: int | None) -> StoreSnapshot:
        first = self._kept[0][0] if self._kept else self._last + 1
        events: tuple[tuple[int, Event], ...] = ()
        if after is not None:
            # The kept numbers run first ... last without a hole: skip to after + 1.
            skip = max(0, after + 1 - first)
            events = tuple((n, event) for n, event, _ in islice(self._kept, skip, None))
        return StoreSnapshot(self._token, first, self._last, events, *self._end)

    def finish(self, *, cut: bool = False) -> None:
        if not self._end[0]:
            self._end = (True, bool(cut))
