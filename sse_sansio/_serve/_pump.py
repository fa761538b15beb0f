# The pump: the asyncio task structure both framework adapters run, framework-neutral.
#
# Two tasks and one loop, around one ServerStream:
# - the *feeder* task reads the source (``async for``, or a sync iterable one next() at
#   a time in a worker thread) and send()s each item into the stream, then end()s it:
#   cleanly when the source ends, as a cut when it raises (StreamCut: one log line;
#   anything else: logged with its traceback).  With a window, the source's end closes
#   the window too (``cut`` alike): the producer finished.
# - the *watcher* task awaits the adapter's ``disconnected()``, which returns once the
#   client is gone.
# - the *writer* loop (the adapter's own task) writes whatever data_to_send() hands
#   out, awaiting the transport (backpressure), and otherwise sleeps until the stream's
#   deadline, a wake-up from the feeder, or a stop.
# The source's pending ``__anext__`` is never cancelled by a keepalive: the keepalive
# comes from the writer's timeout, in another task (``asyncio.wait_for(anext(...))``
# would cancel the read and end an async generator for good).
#
# Stops: the stream ends (the feeder's end() and the last bytes written), turns "slow"
# (the feeder sees it after a send, even while the writer is stuck in a write the
# client never reads: that write is cancelled), or the client disconnects (the watcher,
# or a write failing with an OSError).  After a slow consumer or a disconnect the source
# is cancelled (``on_disconnect="cancel"``) or detached (``"detach"``): it runs to its
# end in the background, its events going into the window only, and its end closes
# the window, so that a client resuming later replays everything and ends.
#
# The adapter learns the outcome: "ended" (finish the response), "cut", "slow" or
# "disconnected" (close it without its proper end).

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterable, Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Literal, cast

from sse_sansio._errors import StreamCut
from sse_sansio._events import Comment, Event
from sse_sansio._resume._replay import ReplayWindow

from ._server_stream import ServerStream

__all__ = [
    "LOG",
    "SSE_HEADERS",
    "Item",
    "Options",
    "Outcome",
    "Policy",
    "Pump",
    "Source",
    "response_headers",
]

Item = Event | Comment | bytes
Source = AsyncIterable[Item] | Iterable[Item]
Outcome = Literal["ended", "cut", "slow", "disconnected"]
Policy = Literal["cancel", "detach"]

#: The logger of the serving adapters (one line per cut).
LOG = logging.getLogger("sse_sansio.serve")

_END = object()  # what next() returns at the end of a sync source
# Detached sources, held until they finish (a task nobody references may be collected).
_DETACHED: set[asyncio.Task[None]] = set()


#: What every event stream response says: the media type, and "pass each write on at
#: once" to caches and buffering proxies (nginx reads X-Accel-Buffering).
SSE_HEADERS = (
    ("content-type", "text/event-stream; charset=utf-8"),
    ("cache-control", "no-cache"),
    ("x-accel-buffering", "no"),
)


def response_headers(extra: Mapping[str, str] | None) -> list[tuple[str, str]]:
    """The SSE headers, then ``extra``; a name in ``extra`` replaces the SSE one."""
    extra = dict(extra or {})
    mine = {name.lower() for name in extra}
    kept = [(name, value) for name, value in SSE_HEADERS if name not in mine]
    return kept + list(extra.items())


@dataclass(frozen=True)
class Options:
    """The options both adapters take, checked when the response is made (an error
    in the endpoint, not halfway through the response)."""

    keepalive: float | None
    first_byte: float | None
    padding: int
    coalesce_bytes: int
    coalesce_delay: float
    max_buffer: int
    window: ReplayWindow | None
    on_disconnect: Policy

    def __post_init__(self) -> None:
        if self.on_disconnect not in ("cancel", "detach"):
            raise ValueError(
                f"on_disconnect must be 'cancel' or 'detach', not {self.on_disconnect!r}"
            )
        self.stream(0.0)

    def stream(self, now: float) -> ServerStream:
        """A fresh ServerStream with these options."""
        return ServerStream(
            now=now,
            keepalive=self.keepalive,
            first_byte=self.first_byte,
            padding=self.padding,
            coalesce_bytes=self.coalesce_bytes,
            coalesce_delay=self.coalesce_delay,
            max_buffer=self.max_buffer,
            window=self.window,
        )

    async def run(
        self,
        source: Source,
        last_event_id: str | None,
        write: Callable[[bytes], Awaitable[None]],
        disconnected: Callable[[], Awaitable[None]],
    ) -> Outcome:
        """Serve ``source`` (after a replay from ``last_event_id`` with a window)."""
        loop = asyncio.get_running_loop()
        stream = self.stream(loop.time())
        if self.window is not None and last_event_id is not None:
            stream.resume(last_event_id, loop.time())
        pump = Pump(source, stream, window=self.window, on_disconnect=self.on_disconnect)
        return await pump.run(write, disconnected)


class Pump:
    """Run one response: feed ``source`` into ``stream``, write what it hands out."""

    def __init__(
        self,
        source: Source,
        stream: ServerStream,
        *,
        window: ReplayWindow | None,
        on_disconnect: Policy,
    ) -> None:
        self._source = source
        self._stream = stream
        self._window = window
        self._policy = on_disconnect
        self._loop = asyncio.get_running_loop()
        self._clock = self._loop.time
        self._stop: asyncio.Future[Outcome] = self._loop.create_future()
        self._wake: asyncio.Future[None] | None = None
        self._gone = False  # the client is gone: events go to the window only

    async def run(
        self,
        write: Callable[[bytes], Awaitable[None]],
        disconnected: Callable[[], Awaitable[None]],
    ) -> Outcome:
        """Pump until the stream ends or the client is gone; say which."""
        feeder = None
        if self._stream.state == "open":  # a resume of a finished stream is ended already
            feeder = self._loop.create_task(self._feed())
        watcher = self._loop.create_task(self._watch(disconnected))
        outcome: Outcome = "disconnected"  # what a cancellation of this task means
        try:
            outcome = await self._write_loop(write)
        finally:
            watcher.cancel()
            if feeder is not None:
                await self._settle(feeder, outcome)
        return outcome

    async def _write_loop(self, write: Callable[[bytes], Awaitable[None]]) -> Outcome:
        stream = self._stream
        while True:
            data = stream.data_to_send(self._clock())
            if data and not await self._write(write, data):
                return self._stop.result()
            state = stream.state
            if state != "open" and not stream.buffered:  # ended and written, or slow
                return state
            if self._stop.done():
                return self._stop.result()
            await self._idle(stream.deadline)

    async def _write(self, write: Callable[[bytes], Awaitable[None]], data: bytes) -> bool:
        """Write ``data``; False when a stop (slow, disconnect) came first or it failed."""
        task = self._loop.create_task(_call(write, data))
        await asyncio.wait((task, self._stop), return_when=asyncio.FIRST_COMPLETED)
        if not task.done():
            task.cancel()
            await asyncio.wait((task,))
            return False
        error = task.exception()
        if isinstance(error, OSError):  # the transport is closed: the client is gone
            self._halt("disconnected")
            return False
        if error is not None:
            raise error
        return True

    async def _idle(self, deadline: float | None) -> None:
        """Sleep until ``deadline``, a wake-up from the feeder, or a stop."""
        timeout = None if deadline is None else deadline - self._clock()
        if timeout is not None and timeout <= 0:
            return
        self._wake = wake = self._loop.create_future()
        await asyncio.wait((wake, self._stop), timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        self._wake = None

    async def _watch(self, disconnected: Callable[[], Awaitable[None]]) -> None:
        await disconnected()
        self._halt("disconnected")

    def _halt(self, outcome: Outcome) -> None:
        if not self._stop.done():
            self._stop.set_result(outcome)

    def _poke(self) -> None:
        wake = self._wake
        if wake is not None and not wake.done():
            wake.set_result(None)

    async def _feed(self) -> None:
        cut = True
        try:
            if isinstance(self._source, AsyncIterable):
                async for item in self._source:
                    self._take(item)
            else:
                items = iter(self._source)
                while (got := await asyncio.to_thread(_next, items)) is not _END:
                    self._take(cast(Item, got))
            cut = False
        except StreamCut as exc:
            LOG.warning("sse_sansio: the source cut the stream: %s", exc)
        except Exception:
            LOG.exception("sse_sansio: the source raised; the stream is cut")
        self._finish(cut)

    def _take(self, item: Item) -> None:
        if not self._gone:
            self._stream.send(item, self._clock())
            if self._stream.state == "slow":
                self._halt("slow")
            self._poke()
        elif self._window is not None and isinstance(item, Event):
            self._window.append(item)

    def _finish(self, cut: bool) -> None:
        if self._window is not None:
            self._window.close(cut=cut)
        if not self._gone and self._stream.state == "open":
            self._stream.end(self._clock(), cut=cut)
            self._poke()

    async def _settle(self, feeder: asyncio.Task[None], outcome: Outcome) -> None:
        """The source after the response: done, cancelled, or detached into the window."""
        if outcome == "ended" or outcome == "cut" or feeder.done():
            await asyncio.wait((feeder,))
            return
        self._gone = True
        if self._policy == "detach":
            _DETACHED.add(feeder)
            feeder.add_done_callback(_DETACHED.discard)
            return
        feeder.cancel()
        await asyncio.wait((feeder,))


async def _call(write: Callable[[bytes], Awaitable[None]], data: bytes) -> None:
    await write(data)


def _next(items: Iterator[Item]) -> object:
    return next(items, _END)
