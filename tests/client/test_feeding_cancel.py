"""A read of aiter_events() cancelled mid-way (issue 36, item 7): as asyncio.wait_for()
does at its timeout.  The stream never ends in silence after it: every later
__anext__ raises a LocalProtocolError that says the read was cancelled."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

import pytest

from sse_sansio import Event, LocalProtocolError, ReconnectPlanner, aiter_events

pytestmark = pytest.mark.usefixtures("conn_cls")  # both cores: tests/conftest.py


class Source:
    """An async generator of chunks that gives ``first``, then waits for ``more``."""

    def __init__(self, first: bytes) -> None:
        self.first = first
        self.more = asyncio.Event()
        self.closed = False

    async def chunks(self) -> AsyncIterator[bytes]:
        try:
            yield self.first
            await self.more.wait()
            yield b"data: second\n\n"
        finally:
            self.closed = True


async def cancel_pending(items: Any) -> None:
    """Start items.__anext__(), let it block on the source, and cancel it."""
    task = asyncio.ensure_future(items.__anext__())
    for _ in range(5):
        await asyncio.sleep(0)
    assert not task.done()  # it waits for the next chunk
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def after_cancel(items: Any, source: Source) -> None:
    assert (await items.__anext__()).data == "first"
    await cancel_pending(items)
    source.more.set()
    for _ in range(2):  # sticky: again on every call
        with pytest.raises(LocalProtocolError, match="was cancelled") as caught:
            await items.__anext__()
        assert isinstance(caught.value.__cause__, asyncio.CancelledError)
    with pytest.raises(LocalProtocolError, match="was cancelled"):
        await items.asend(None)
    assert source.closed  # the cancellation stopped the source too


def test_a_cancelled_read_of_aiter_events_is_never_a_silent_end() -> None:
    source = Source(b"data: first\n\n")
    asyncio.run(after_cancel(aiter_events(source.chunks()), source))


def test_a_cancelled_read_of_plan_aevents_is_never_a_silent_end() -> None:
    plan = ReconnectPlanner()
    plan.start(now=0)
    source = Source(b"id: 1\ndata: first\n\n")
    asyncio.run(after_cancel(plan.aevents(source.chunks()), source))
    assert plan.last_event_id == "1"


def test_wait_for_on_one_anext_reports_the_cancelled_read() -> None:
    async def main() -> None:
        source = Source(b"data: first\n\n")
        items = aiter_events(source.chunks())
        assert await asyncio.wait_for(items.__anext__(), 10) == Event(data="first")
        waiting = asyncio.wait_for(items.__anext__(), 0)  # times out at once: no event comes
        with pytest.raises(asyncio.TimeoutError):
            await waiting
        with pytest.raises(LocalProtocolError, match="was cancelled"):
            await items.__anext__()

    asyncio.run(main())


def test_a_source_that_fails_is_reported_again_not_ended() -> None:
    async def failing() -> AsyncIterator[bytes]:
        yield b"data: a\n\n"
        raise ConnectionResetError("peer reset")

    async def main() -> None:
        items = aiter_events(failing())
        assert await items.asend(None) == Event(data="a")
        with pytest.raises(ConnectionResetError):
            await items.__anext__()
        with pytest.raises(LocalProtocolError, match="was interrupted") as caught:
            await items.__anext__()
        assert isinstance(caught.value.__cause__, ConnectionResetError)

    asyncio.run(main())


def test_the_wrapper_iterates_throws_and_closes_as_the_generator() -> None:
    async def chunks() -> AsyncIterator[bytes]:
        yield b"data: a\n\ndata: b\n\ndata: c\n\n"

    async def main() -> None:
        items = aiter_events(chunks())
        assert items.__aiter__() is items
        assert [e.data async for e in items] == ["a", "b", "c"]  # type: ignore[union-attr]
        with pytest.raises(StopAsyncIteration):  # a clean end stays a clean end
            await items.__anext__()
        thrown = aiter_events(chunks())
        await thrown.__anext__()
        with pytest.raises(KeyError):
            await thrown.athrow(KeyError("k"))
        with pytest.raises(LocalProtocolError, match=r"interrupted \(KeyError\)"):
            await thrown.__anext__()
        async with aclosing(aiter_events(chunks())) as closed:
            await closed.__anext__()
        with pytest.raises(StopAsyncIteration):
            await closed.__anext__()

    asyncio.run(main())
