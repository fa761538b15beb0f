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
# - (not in the protocols, which the windows need; every store here has it) append_many
#   (events) is append() of each event in turn, done at once: the numbers run on without
#   a hole, and it returns the token with the last one.
# The events a store returns may carry any ID: the window writes ``<token>-<number>``.
# The whole contract, for stores in other engines, is docs/stores-contract.rst.
#
# MemoryStore keeps a deque of the events as they were sent (IDs included), trimmed on
# append by max_events and max_bytes (the bytes serialize() writes for the event, ID
# included, so a client's replay is bounded too).  Speed (issue 34, item 4): an event is
# checked once, by the window's append(); the store builds the event with its ID by the
# unchecked constructor, and a replay is one slice of the deque (read_sent()), so that
# resuming costs what copying the events costs, and an ID of no event here costs O(1).
#
# AsyncMemoryStore is the same store behind the async protocol, for AsyncReplayWindow:
# append() and finish() wake the readers that wait (read(after, wait=...)) at once.

from __future__ import annotations

import os
import re
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import islice
from typing import TYPE_CHECKING, Any, Protocol

from sse_sansio._errors import LocalProtocolError
from sse_sansio._events import Event, new_event
from sse_sansio._serializer import serialize

if TYPE_CHECKING:
    import asyncio

__all__ = [
    "MAX_WAIT",
    "AsyncMemoryStore",
    "AsyncReplayStore",
    "MemoryStore",
    "MirrorStore",
    "ReplayStore",
    "StoreSnapshot",
    "parse_id",
    "wait_seconds",
]

# 96 random bits: an ID cannot be guessed into another stream, and stays short.
TOKEN_BYTES = 12


def new_token() -> str:
    """A fresh random stream token (hexadecimal)."""
    # What secrets.token_hex() returns, from the same source (the OS's CSPRNG), without
    # the import of secrets (hashlib, hmac, random) that ``import sse_sansio`` would pay.
    return os.urandom(TOKEN_BYTES).hex()


# An event ID is ``<token>-<number>``: a token is 1 to 64 characters of [A-Za-z0-9_]; a
# number at most 19 digits, below 2**63 (what a Redis stream's sequence part holds with
# room to spare).
_MAX_ID = 64 + 1 + 19
_MAX_NUMBER = 2**63 - 1
_ID = re.compile(r"([A-Za-z0-9_]{1,64})-(0|[1-9][0-9]{0,18})")


def parse_id(last_event_id: str) -> tuple[str, int] | None:
    """The token and number of an ID a replay window writes, or None."""
    if not isinstance(last_event_id, str) or len(last_event_id) > _MAX_ID:
        return None
    match = _ID.fullmatch(last_event_id)
    if match is None or int(match[2]) > _MAX_NUMBER:
        return None
    return match[1], int(match[2])


# The longest wait a resume or a store's read takes (issue 41, item 9): a day, longer
# than any proxy or load balancer keeps an idle response open.  A wait is a finite
# number of seconds from 0 to this; beyond it (1e308, say) the stores' conversions fail
# (Redis ``XREAD BLOCK`` takes milliseconds: 1e308 s overflows to an infinity) or the
# wait never ends, so it is a ValueError before anything is read.  Wait again for more.
MAX_WAIT = 86_400.0


def wait_seconds(name: str, value: float | None) -> float | None:
    """Check a wait: None (no wait) or a finite number of seconds, 0 to MAX_WAIT.

    Raises:
        TypeError: not a number (a bool, a str).
        ValueError: NaN, an infinity, negative, or above MAX_WAIT.
    """
    # Imported here: the clock module loads math, which ``import sse_sansio`` (that
    # imports this module for MemoryStore) must not (tests/package/test_import_cost.py).
    from sse_sansio._clock import seconds

    wait = seconds(name, value)
    if wait is not None and wait > MAX_WAIT:
        raise ValueError(f"{name} must be at most {MAX_WAIT:,.0f} seconds (a day), not {value!r}")
    return wait


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
        self._prefix = self._token + "-"
        self._sent: deque[Event] = deque()  # the kept events, with their IDs
        self._sizes: deque[int] = deque()  # their sizes, kept only under max_bytes
        self._bytes = 0
        self._last = 0
        self._end: tuple[bool, bool] = (False, False)  # finished, cut

    @property
    def token(self) -> str:
        """The stream's token."""
        return self._token

    def append(self, event: Event) -> tuple[str, int]:
        self.append_sent(event)
        return self._token, self._last

    def append_many(self, events: Iterable[Event]) -> tuple[str, int]:
        """Keep ``events`` in order; return the token and the number of the last one
        (the others are the numbers just before it; none kept: the newest number)."""
        for event in events:
            self.append_sent(event)
        return self._token, self._last

    def append_sent(self, event: Event) -> Event:
        """As :meth:`append`, returning the event as it is kept: with its ID.

        ``event`` must be an exact, valid :class:`Event` (the window checked it): its
        type, data and retry are taken as they are.
        """
        self._last = number = self._last + 1
        # Event's own slots in order: type, data, id, retry, then no offsets and no raw.
        sent = new_event(
            Event, (event[0], event[1], f"{self._prefix}{number}", event[3], -1, -1, None)
        )
        self._sent.append(sent)
        if self._max_bytes is not None:
            self._keep_bytes(len(serialize(sent)))
        elif self._max_events is not None and len(self._sent) > self._max_events:
            self._sent.popleft()
        return sent

    def _keep_bytes(self, size: int) -> None:
        self._sizes.append(size)
        self._bytes += size
        while self._sent and self._over():
            self._sent.popleft()
            self._bytes -= self._sizes.popleft()

    def _over(self) -> bool:
        too_many = self._max_events is not None and len(self._sent) > self._max_events
        return too_many or (self._max_bytes is not None and self._bytes > self._max_bytes)

    @property
    def end(self) -> tuple[bool, bool]:
        """``(finished, cut)``, as :meth:`read` reports them."""
        return self._end

    def read(self, after: int | None) -> StoreSnapshot:
        first, last, sent = self.read_sent(after)
        events = tuple(enumerate(sent, last - len(sent) + 1))
        return StoreSnapshot(self._token, first, last, events, *self._end)

    def read_sent(self, after: int | None) -> tuple[int, int, tuple[Event, ...]]:
        """``(first, last, events)`` as :meth:`read` has them, the events as they were
        sent (IDs included): one slice of the deque, what a replay costs."""
        first = self._last - len(self._sent) + 1
        sent: tuple[Event, ...] = ()
        if after is not None and after < self._last:
            # The kept numbers run first ... last without a hole: skip to after + 1.
            # A deque walks to an index from its nearer end: the newest few (a client
            # that missed little, the usual case) are read from the right.
            skip = max(0, after + 1 - first)
            count = len(self._sent) - skip
            if count < skip:
                sent = tuple(islice(reversed(self._sent), count))[::-1]
            else:
                sent = tuple(islice(self._sent, skip, None))
        return first, self._last, sent

    def finish(self, *, cut: bool = False) -> None:
        if not self._end[0]:
            self._end = (True, bool(cut))


class AsyncMemoryStore:
    """A :class:`MemoryStore` behind the :class:`AsyncReplayStore` protocol, for
    :class:`~sse_sansio.AsyncReplayWindow` in one process (``AsyncReplayWindow(store=
    MemoryStore())`` wraps the store in one by itself).

    ``read(after, wait=seconds)`` with nothing after ``after`` waits until an
    :meth:`append` or :meth:`finish` on this store, or until ``wait`` has passed.  The
    store belongs to one event loop; like :class:`MemoryStore` it takes no lock.
    """

    def __init__(self, store: MemoryStore | None = None) -> None:
        self._store = MemoryStore() if store is None else store
        self._waiters: list[asyncio.Future[None]] = []

    @property
    def memory(self) -> MemoryStore:
        """The store that keeps the events."""
        return self._store

    async def append(self, event: Event) -> tuple[str, int]:
        appended = self._store.append(event)
        self._wake()
        return appended

    async def append_many(self, events: Iterable[Event]) -> tuple[str, int]:
        appended = self._store.append_many(events)
        self._wake()
        return appended

    async def read(self, after: int | None, *, wait: float | None = None) -> StoreSnapshot:
        wait = wait_seconds("wait", wait)
        snapshot = self._store.read(after)
        if wait is None or after is None or snapshot.events or snapshot.finished:
            return snapshot
        import asyncio  # here, not at import time: ``import sse_sansio`` stays light

        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await asyncio.wait((waiter,), timeout=wait)
        finally:
            if waiter in self._waiters:
                self._waiters.remove(waiter)
        return self._store.read(after)

    async def finish(self, *, cut: bool = False) -> None:
        self._store.finish(cut=cut)
        self._wake()

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    def __getstate__(self) -> dict[str, Any]:
        # A waiter belongs to a running loop and a read in progress: not kept.
        return {"_store": self._store, "_waiters": []}


class MirrorStore(MemoryStore):
    """The newest events of a store shared by processes, copied into this one as a
    follower reads them (:meth:`~sse_sansio.stores.AsyncRedisStreamStore.follow`):
    the :class:`ReplayStore` of a process's ``Hub(window=ReplayWindow(store=mirror))``.

    :meth:`append` takes an event that carries the ID the shared store issued
    (``<token>-<number>``) and keeps that number, instead of numbering it: the hub's
    window then sends it with the same ID in every process, and a client resumes on any
    of them.  Give it the shared store's ``max_events``: an ID that fell out of the
    shared store falls out of the mirror too, and gets the verdict "gap".

    A number past the next one (the follower missed events: it fell behind the shared
    store's trimming) or a new token (the shared stream was made again) empties the
    mirror and counts one in :attr:`resets`: what it kept can no longer be continued
    without a hole, so IDs before it get "gap" (or "unknown" for the old token); the
    subscribers who were receiving live were cut by the hole too, and should be made
    to resume.
    """

    def __init__(
        self, token: str, *, max_events: int | None = None, max_bytes: int | None = None
    ) -> None:
        super().__init__(max_events=max_events, max_bytes=max_bytes)
        self._restart(token)
        self._resets = 0

    @property
    def resets(self) -> int:
        """How many times a hole or a new token emptied the mirror (a first event
        numbered past 1, before any other, is no hole: nothing was kept yet)."""
        return self._resets

    def _restart(self, token: str) -> None:
        if parse_id(f"{token}-0") is None:
            raise ValueError(f"not a stream token: {token!r}")
        self._token, self._prefix = token, token + "-"
        self._last = 0
        self._forget()

    def _forget(self) -> None:
        self._sent.clear()
        self._sizes.clear()
        self._bytes = 0

    def append_sent(self, event: Event) -> Event:
        """Keep ``event`` under the number of its own ID; return it as kept.

        Raises:
            LocalProtocolError: its ID is not ``<token>-<number>`` with a number above
                0, or its number is not above the newest one of the same token.
        """
        issued = parse_id(event.id)
        if issued is None or issued[1] < 1:
            raise LocalProtocolError(f"a mirror keeps events with a store's ID, not {event.id!r}")
        token, number = issued
        if token != self._token:
            self._restart(token)
            self._resets += 1
        if number <= self._last:
            raise LocalProtocolError(f"{event.id!r} is not after {self._prefix}{self._last}")
        if number != self._last + 1:
            self._forget()
            self._resets += self._last > 0
        self._last = number - 1
        return super().append_sent(event)
