"""The producer's end in a replay window: ``ReplayWindow.close(cut=...)`` and
``Resume.finished`` (issue 33).  A client that resumes after the producer finished is
told so, whatever its ID, instead of being held open for events that never come; the
end is kept by the store, so another window over the same store sees it."""

from __future__ import annotations

import asyncio

import pytest

from sse_sansio import (
    AsyncReplayWindow,
    Event,
    LocalProtocolError,
    MemoryStore,
    ReplayWindow,
    Resume,
    StoreSnapshot,
)


def test_a_window_that_was_never_closed_says_not_finished() -> None:
    window = ReplayWindow()
    first = window.append(Event(data="a"))
    assert window.resume(first.id) == Resume("continue", (), finished=False, cut=False)


def test_after_a_clean_close_every_resume_says_finished_and_replays_the_rest() -> None:
    window = ReplayWindow()
    first, second = window.append(Event(data="a")), window.append(Event(data="b"))
    window.close()
    assert window.resume(first.id) == Resume("continue", (second,), finished=True, cut=False)
    assert window.resume(second.id) == Resume("continue", (), finished=True, cut=False)
    # An ID of no stream: nothing to replay, and still nothing will follow.
    assert window.resume("nope") == Resume("unknown", (), finished=True, cut=False)


def test_a_cut_close_is_reported_as_a_cut_also_with_a_gap() -> None:
    window = ReplayWindow(max_events=1)
    first = window.append(Event(data="a"))
    window.append(Event(data="b"))
    third = window.append(Event(data="c"))
    window.close(cut=True)
    assert window.resume(first.id) == Resume("gap", (third,), finished=True, cut=True)


def test_the_first_close_wins() -> None:
    window = ReplayWindow()
    window.close(cut=True)
    window.close()
    assert window.resume("x").cut is True
    store = MemoryStore()
    store.finish()
    store.finish(cut=True)
    assert store.read(None) == StoreSnapshot(store.read(None).token, 1, 0, (), True, False)


def test_a_closed_window_refuses_append() -> None:
    window = ReplayWindow()
    window.close()
    with pytest.raises(LocalProtocolError, match="after close"):
        window.append(Event(data="late"))


def test_another_window_over_the_same_store_sees_the_end() -> None:
    store = MemoryStore()
    producer, reader = ReplayWindow(store=store), ReplayWindow(store=store)
    event = producer.append(Event(data="a"))
    assert reader.resume(event.id).finished is False
    producer.close()
    assert reader.resume(event.id).finished is True


class AsyncMemory:
    """A MemoryStore behind coroutines, as the async window takes; counts its waits."""

    def __init__(self) -> None:
        self.store = MemoryStore()
        self.waits: list[float] = []

    async def append(self, event: Event) -> tuple[str, int]:
        return self.store.append(event)

    async def read(self, after: int | None, *, wait: float | None = None) -> StoreSnapshot:
        if wait is not None:
            self.waits.append(wait)
        return self.store.read(after)

    async def finish(self, *, cut: bool = False) -> None:
        self.store.finish(cut=cut)


def test_the_async_window_closes_and_does_not_wait_once_finished() -> None:
    async def main() -> None:
        memory = AsyncMemory()
        window = AsyncReplayWindow(memory)
        event = await window.append(Event(data="a"))
        # Not finished: a resume with nothing new waits for an event (once).
        assert await window.resume(event.id, wait=5.0) == Resume("continue", ())
        assert memory.waits == [5.0]
        await window.close(cut=True)
        assert await window.resume(event.id, wait=5.0) == Resume("continue", (), True, True)
        assert memory.waits == [5.0]  # finished: no second wait
        with pytest.raises(LocalProtocolError, match="after close"):
            await window.append(Event(data="late"))

    asyncio.run(main())
