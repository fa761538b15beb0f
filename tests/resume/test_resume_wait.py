"""``AsyncReplayWindow.resume(wait=...)`` takes a finite number of seconds (issue 36,
item 16): NaN, an infinity or a negative wait is a ValueError before anything is read,
whatever the stream's state, not an OverflowError from the store's millisecond
conversion (Redis ``XREAD BLOCK``) or a wait that never ends.  So is a wait above a day
(issue 41, item 9: ``wait=1e308`` overflowed in the Redis store), and the stores' own
``read(wait=...)`` and ``follow(block=...)`` check theirs the same way.
"""

from __future__ import annotations

import asyncio
import math

import fakeredis.aioredis
import pytest

from sse_sansio import AsyncReplayWindow, Event, Resume
from sse_sansio._resume._replay_store import (
    MAX_WAIT,
    AsyncMemoryStore,
    MemoryStore,
    StoreSnapshot,
)
from sse_sansio.stores import AsyncRedisStreamStore


class AsyncMemory:
    """A MemoryStore behind the async protocol, noting every read."""

    def __init__(self) -> None:
        self.store = MemoryStore(max_events=10, max_bytes=None)
        self.reads: list[float | None] = []

    async def append(self, event: Event) -> tuple[str, int]:
        return self.store.append(event)

    async def read(self, after: int | None, *, wait: float | None = None) -> StoreSnapshot:
        self.reads.append(wait)
        return self.store.read(after)

    async def finish(self, *, cut: bool = False) -> None:
        self.store.finish(cut=cut)


@pytest.mark.parametrize(
    "wait", [math.nan, math.inf, -math.inf, -1.0, 10**400, 1e308, 86_400.5, 10**6]
)
def test_a_wait_that_is_no_finite_duration_is_refused_before_any_read(wait: float) -> None:
    async def main() -> None:
        memory = AsyncMemory()
        window = AsyncReplayWindow(memory)
        event = await window.append(Event(data="a"))
        with pytest.raises(ValueError, match="wait"):
            await window.resume(event.id, wait=wait)
        assert memory.reads == []
        # A good wait still works.
        assert await window.resume(event.id, wait=0.5) == Resume("continue", ())
        assert memory.reads == [None, 0.5]

    asyncio.run(main())


def test_a_wait_that_is_not_a_number_is_a_type_error() -> None:
    async def main() -> None:
        window = AsyncReplayWindow(AsyncMemory())
        with pytest.raises(TypeError, match="wait"):
            await window.resume("x", wait="1")  # type: ignore[arg-type]

    asyncio.run(main())


@pytest.mark.parametrize("wait", [math.nan, math.inf])
def test_the_redis_store_gets_no_wait_it_cannot_convert(wait: float) -> None:
    async def main() -> None:
        client = fakeredis.aioredis.FakeRedis()
        window = AsyncReplayWindow(AsyncRedisStreamStore(client, "k", max_events=10))
        event = await window.append(Event(data="a"))
        with pytest.raises(ValueError, match="wait must be finite"):
            await window.resume(event.id, wait=wait)

    asyncio.run(main())


def test_a_wait_of_a_day_is_taken_and_one_past_it_is_refused_by_every_store() -> None:
    async def main() -> None:
        stores: list[AsyncRedisStreamStore | AsyncMemoryStore] = [
            AsyncRedisStreamStore(fakeredis.aioredis.FakeRedis(), "k", max_events=10),
            AsyncMemoryStore(MemoryStore()),
        ]
        for store in stores:
            await store.append(Event(data="a"))
            await store.append(Event(data="b"))
            # An event after 1 is there: the longest wait returns at once.
            snapshot = await store.read(1, wait=MAX_WAIT)
            assert [e.data for _, e in snapshot.events] == ["b"]
            for wait in (1e308, MAX_WAIT * 2, math.inf, -0.5):
                with pytest.raises(ValueError, match="wait"):
                    await store.read(1, wait=wait)

    asyncio.run(main())


@pytest.mark.parametrize("block", [0, 0.0, -1.0, 1e308, math.nan, math.inf])
def test_follow_refuses_a_block_that_is_no_wait_of_a_day_at_most(block: float) -> None:
    async def main() -> None:
        store = AsyncRedisStreamStore(fakeredis.aioredis.FakeRedis(), "k", max_events=10)
        with pytest.raises(ValueError, match="block"):
            await anext(store.follow(block=block))

    asyncio.run(main())
