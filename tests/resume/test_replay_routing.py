"""Issue 34, items 5 and 6: an ID routed to the window that issued it (``window_token``,
``ReplayWindow.token``), an unknown or foreign ID judged without reading the window, and
``AsyncReplayWindow`` over the in-memory store, whose waiting followers wake on append;
issue 41, item 9: a store whose read() returns numbers out of order, repeated or with a
hole is refused with a clear error, in both windows.
"""

from __future__ import annotations

import asyncio
import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sse_sansio import (
    AsyncMemoryStore,
    AsyncReplayWindow,
    Event,
    LocalProtocolError,
    MemoryStore,
    ReplayWindow,
    Resume,
    StoreSnapshot,
    window_token,
)


def test_window_token_names_the_window_that_issued_an_id() -> None:
    windows = [ReplayWindow(), ReplayWindow(max_events=2)]
    by_token = {w.token: w for w in windows}
    assert len(by_token) == 2
    for window in windows:
        for n in range(3):
            sent = window.append(Event(data=str(n)))
            token = window_token(sent.id)
            assert token is not None
            assert by_token[token] is window
        assert window_token(window.priming(from_start=True).id) == window.token


@pytest.mark.parametrize(
    "foreign",
    ["", "abc", "abc-", "-1", "abc-01", "a b-1", "x" * 65 + "-1", "abc-1-2", "abc-" + "9" * 19],
)
def test_window_token_is_none_for_an_id_no_window_writes(foreign: str) -> None:
    assert window_token(foreign) is None


@given(st.text(max_size=90))
def test_window_token_agrees_with_resume(text: str) -> None:
    window = ReplayWindow()
    window.append(Event(data="a"))
    # An ID whose token is not this window's is never anything but "unknown" here.
    if window_token(text) != window.token:
        assert window.resume(text) == Resume("unknown")


def test_window_token_of_a_non_str_is_none() -> None:
    assert window_token(12) is None  # type: ignore[arg-type]


def test_an_unknown_or_foreign_id_reads_no_event_of_the_memory_store(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = MemoryStore()
    window = ReplayWindow(store=store)
    for n in range(100):
        window.append(Event(data=str(n)))
    asked: list[int | None] = []
    read_sent = store.read_sent

    def spy(after: int | None) -> tuple[int, int, tuple[Event, ...]]:
        asked.append(after)
        return read_sent(after)

    other = ReplayWindow()
    other.append(Event(data="x"))
    foreigns = ["nonsense", f"{other.token}-0", f"{other.token}-1", f"{window.token}-101"]
    monkeypatch.setattr(store, "read_sent", spy)
    for foreign in foreigns:
        assert window.resume(foreign) == Resume("unknown")
    assert asked == [101]  # only the never-issued number of its own: above the newest
    assert store.read_sent(101) == (1, 100, ())
    assert window.resume(f"{window.token}-98").events == window.resume(f"{window.token}-98").events
    assert [e.data for e in window.resume(f"{window.token}-97").events] == ["97", "98", "99"]


class CountingStore:
    """A MemoryStore behind the plain protocol (no fast path), noting every read and able
    to be made again under a new token, as a deleted Redis stream is."""

    def __init__(self) -> None:
        self.memory = MemoryStore()
        self.reads: list[int | None] = []

    def append(self, event: Event) -> tuple[str, int]:
        return self.memory.append(event)

    def append_many(self, events: list[Event]) -> tuple[str, int]:
        return self.memory.append_many(events)

    def read(self, after: int | None) -> StoreSnapshot:
        self.reads.append(after)
        return self.memory.read(after)

    def finish(self, *, cut: bool = False) -> None:
        self.memory.finish(cut=cut)


def test_a_store_without_the_fast_path_reads_no_event_for_a_foreign_id() -> None:
    store = CountingStore()
    window = ReplayWindow(store=store)
    first = window.append(Event(data="a"))
    window.append(Event(data="b"))
    assert [e.data for e in window.resume(first.id).events] == ["b"]
    assert store.reads == [1]  # the token was not known yet: the number is read
    store.reads.clear()
    assert window.resume("feed-0") == Resume("unknown")
    assert window.resume("") == Resume("unknown")
    assert store.reads == [None, None]


def test_a_stream_made_again_under_a_new_token_is_read_again() -> None:
    store = CountingStore()
    window = ReplayWindow(store=store)
    old = window.token
    store.memory = MemoryStore()  # deleted and made again
    new = ReplayWindow(store=store).append(Event(data="again"))
    assert window_token(new.id) != old
    store.reads.clear()
    assert window.resume(f"{window_token(new.id)}-0") == Resume("continue", (new,))
    assert store.reads == [None, 0]
    assert window.token == window_token(new.id)  # the store's token as last read


def test_the_async_window_reads_the_new_token_again_too() -> None:
    class AsyncCounting:
        def __init__(self) -> None:
            self.inner = CountingStore()

        async def append(self, event: Event) -> tuple[str, int]:
            return self.inner.append(event)

        async def append_many(self, events: list[Event]) -> tuple[str, int]:
            return self.inner.append_many(events)

        async def read(self, after: int | None, *, wait: float | None = None) -> StoreSnapshot:
            return self.inner.read(after)

        async def finish(self, *, cut: bool = False) -> None:
            self.inner.finish(cut=cut)

    async def main() -> None:
        store = AsyncCounting()
        window = AsyncReplayWindow(store)
        first = await window.append(Event(data="a"))
        assert await window.resume("feed-0") == Resume("unknown")
        store.inner.memory = MemoryStore()
        again = await AsyncReplayWindow(store).append(Event(data="b"))
        store.inner.reads.clear()
        assert (await window.resume(f"{window_token(again.id)}-0")).events == (again,)
        assert store.inner.reads == [None, 0]
        assert await window.resume(first.id) == Resume("unknown")

    asyncio.run(main())


def test_the_async_window_takes_a_memory_store() -> None:
    async def main() -> None:
        memory = MemoryStore(max_events=2)
        window = AsyncReplayWindow(store=memory)
        assert isinstance(window.store, AsyncMemoryStore)
        assert window.store.memory is memory
        sent = [await window.append(Event(data=str(n))) for n in range(3)]
        assert window_token(sent[0].id) == memory.token
        assert await window.resume(sent[1].id) == Resume("continue", (sent[2],))
        assert await window.resume(sent[0].id) == Resume("continue", (sent[1], sent[2]))
        assert await window.resume(f"{memory.token}-0") == Resume("gap", (sent[1], sent[2]))
        assert await window.store.append_many([Event(data="x"), Event(data="y")]) == (
            memory.token,
            5,
        )

    asyncio.run(main())


def test_a_waiting_follower_wakes_on_append_and_on_close() -> None:
    async def main() -> None:
        window = AsyncReplayWindow(MemoryStore())
        first = await window.append(Event(data="a"))
        follower = asyncio.ensure_future(window.resume(first.id, wait=3600.0))
        for _ in range(5):
            await asyncio.sleep(0)
        assert not follower.done()  # nothing after `first` yet: it waits
        second = await window.append(Event(data="b"))
        assert await follower == Resume("continue", (second,))

        closing = asyncio.ensure_future(window.resume(second.id, wait=3600.0))
        for _ in range(5):
            await asyncio.sleep(0)
        assert not closing.done()
        await window.close()
        assert await closing == Resume("continue", (), finished=True)

        # A wait that passes with no append answers with no event.
        lonely = AsyncReplayWindow(MemoryStore())
        only = await lonely.append(Event(data="a"))
        assert await lonely.resume(only.id, wait=0.001) == Resume("continue")
        assert isinstance(lonely.store, AsyncMemoryStore)
        assert lonely.store._waiters == []

    asyncio.run(main())


def test_a_cancelled_follower_leaves_no_waiter_and_a_woken_one_is_not_woken_twice() -> None:
    async def main() -> None:
        store = AsyncMemoryStore()
        first = await store.append(Event(data="a"))
        reader = asyncio.ensure_future(store.read(first[1], wait=3600.0))
        for _ in range(5):
            await asyncio.sleep(0)
        reader.cancel()
        with pytest.raises(asyncio.CancelledError):
            await reader
        assert store._waiters == []
        # A waiter already done (its reader was cancelled in the same turn) is skipped.
        done = asyncio.get_running_loop().create_future()
        done.cancel()
        store._waiters.append(done)
        await store.finish()
        assert store._waiters == []

    asyncio.run(main())


def test_the_async_memory_store_pickles_without_its_waiters() -> None:
    store = AsyncMemoryStore(MemoryStore(max_events=3))
    asyncio.run(store.append(Event(data="a")))
    copy = pickle.loads(pickle.dumps(store))
    assert copy.memory.read(0) == store.memory.read(0)
    assert copy._waiters == []


# ---- issue 41, item 9: a store whose read() breaks the numbering is refused --------------


class MisnumberingStore(CountingStore):
    """A store of one's own whose read() returns the numbers it was told to."""

    def __init__(self, numbers: list[int], first: int = 1) -> None:
        super().__init__()
        self.numbers = numbers
        self.first = first

    def read(self, after: int | None) -> StoreSnapshot:
        kept = self.memory.read(after)
        events = tuple((n, Event(data=f"#{n}")) for n in self.numbers)
        return StoreSnapshot(kept.token, self.first, kept.last, events if after is not None else ())


@pytest.mark.parametrize(
    ("numbers", "first", "message"),
    [
        ([3, 2], 3, "number 2 after 3"),  # out of order (in a gap)
        ([2, 2, 3], 1, "number 2 after 2"),  # repeated
        ([1, 2, 3], 1, "number 1 after 1"),  # the event asked after, again
        ([2, 4], 1, "number 4 after 2"),  # a hole
        ([3, 4], 1, "number 3 after 1"),  # "continue" that skips 2
        ([2, 3, 4, 5], 1, "number 5 after 4"),  # past the last number issued
    ],
)
def test_a_store_returning_ids_out_of_order_or_repeated_is_refused(
    numbers: list[int], first: int, message: str
) -> None:
    store = MisnumberingStore(numbers, first)
    window = ReplayWindow(store=store)
    sent = [window.append(Event(data=str(n))) for n in range(4)]
    with pytest.raises(
        LocalProtocolError, match=f"the store's read\\(1\\) returned event {message}"
    ):
        window.resume(sent[0].id)

    async def main() -> None:
        async_window = AsyncReplayWindow(AsyncOver(store))  # the same reads, awaited
        with pytest.raises(LocalProtocolError, match=message):
            await async_window.resume(sent[0].id)

    asyncio.run(main())


class AsyncOver:
    """A plain store behind the async protocol."""

    def __init__(self, store: MisnumberingStore) -> None:
        self.store = store

    async def append(self, event: Event) -> tuple[str, int]:
        return self.store.append(event)

    async def read(self, after: int | None, *, wait: float | None = None) -> StoreSnapshot:
        return self.store.read(after)

    async def finish(self, *, cut: bool = False) -> None:
        self.store.finish(cut=cut)


def test_a_store_may_skip_to_its_first_kept_event_in_a_gap() -> None:
    # A gap: the events kept start past the number asked for; that is no misnumbering.
    store = MisnumberingStore([3, 4], first=3)
    window = ReplayWindow(store=store)
    sent = [window.append(Event(data=str(n))) for n in range(4)]
    resume = window.resume(sent[0].id)
    assert resume.verdict == "gap"
    assert [e.id for e in resume.events] == [sent[2].id, sent[3].id]
