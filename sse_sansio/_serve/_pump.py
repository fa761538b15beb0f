# The pump: the asyncio task structure every framework adapter runs, framework-neutral.
#
# One ServerStream, and as few tasks and frames as an idle response can hold (issue 40,
# item 8: at most 4 KB over a raw ASGI app):
# - the adapter's own task (the ASGI app, the aiohttp handler) runs the pump and
#   awaits the client's disconnect itself (``listen()`` until ``gone(what it
#   returned)``: ASGI's ``receive()`` until ``http.disconnect``, in run()'s own frame,
#   no coroutine of its own); it is interrupted (a cancellation it takes back) only
#   when the response is over, and then finishes it (a stop's last whole frames);
# - writing is done by whoever queues: an event queued while no write is pending (by
#   the feeder, or a publish through wake()) is written right there, the write's first
#   step run by hand, so an event costs no task step of its own; a write that must
#   wait (backpressure) is handed over to a Task of its own, resumed when what it
#   awaits is done, and counts as pending until it ends, when what was queued
#   meanwhile is written;
# - deadlines (keepalive, first_byte, coalescing, max_lifetime) are entries in the
#   loop's one heap of deadlines (``_Timers``), rung by one ``loop.call_at`` handle
#   for every response of the loop: no sleeping coroutine, and no timer handle of
#   its own (about 520 bytes each under uvloop, an entry about 60);
# - for a source (serve_source), the *feeder* task reads it (``async for``, or a sync
#   iterable one next() at a time on the adapters' own threads) and send()s each item
#   into the stream, then end()s it: cleanly when the source ends, as a cut when it
#   raises (StreamCut: one log line; anything else: logged with its traceback; a
#   CancelledError nobody asked for: a cut too, issue 41 item 1).  With a window, the
#   source's end closes the window too (``cut`` alike): the producer finished.  For a
#   hub's subscriber (serve_hub) there is no feeder: publish() queues on the stream
#   and calls the pump's wake-up, so only the subscribers of a channel wake.
# A server that never reports a disconnect (``receive()`` never returns) loses
# nothing: the response still ends by its stream's end, a stop, a slow reader, or a
# write failing with an OSError; one whose ``receive()`` swallows the interruption
# does not hold it open either.  A ``receive()`` that raises ends the response as a
# disconnect, and its error goes on to the server.
#
# The source's pending ``__anext__`` is never cancelled by a keepalive: the keepalive
# comes from the timer, outside the feeder (``asyncio.wait_for(anext(...))`` would
# cancel the read and end an async generator for good).
#
# A burst is not a slow reader (issue 41, item 2): each item is written as it comes
# while the transport takes it, and the feeder, about to queue an item that could take
# the queue past ``max_buffer`` while no write is pending (frames held for coalescing),
# first hands out what is queued; so a stream turns "slow" only when a write has been
# pending (the client not reading) while the queue grew.
#
# Stops: the stream ends (the end and the last bytes written), turns "slow" (the feeder
# or the hub sees it, even while a write the client never reads is pending: that write
# is cancelled), the client disconnects (``listen()`` says so, or a write fails with
# an OSError), or the server stops the connection (``max_lifetime`` passed, or the
# server shuts down: stop_all()): then what is queued goes out, whole frames only, and
# the response ends as a cut, so the client resumes, while the stream goes on.  After
# all but an end the source is cancelled (``on_disconnect="cancel"``) or detached
# (``"detach"``): it runs to its end in the background, its events going into the window
# only, and its end closes the window, so that a client resuming later replays
# everything and ends.
#
# The adapter learns the outcome: "ended" (finish the response), "cut", "slow",
# "disconnected" or "stopped" (close it without its proper end).

from __future__ import annotations

import asyncio
import contextlib
import heapq
import logging
import signal
import time
import weakref
from collections.abc import (
    AsyncIterable,
    Awaitable,
    Callable,
    Coroutine,
    Iterable,
    Iterator,
    Mapping,
)
from concurrent.futures import ThreadPoolExecutor
from types import CoroutineType, FrameType
from typing import Any, Literal, cast

from sse_sansio._errors import StreamCut
from sse_sansio._events import Comment, Event
from sse_sansio._resume._replay import ReplayWindow

from ._hub import Hub, MayRead
from ._options import Options
from ._server_stream import ServerStream, finish, replay

__all__ = [
    "LOG",
    "SSE_HEADERS",
    "SYNC_SOURCE_THREADS",
    "Item",
    "Outcome",
    "Pump",
    "Source",
    "Start",
    "response_headers",
    "start_hub",
    "start_source",
    "stop_all",
    "watch_shutdown",
]

Item = Event | Comment | bytes
Source = AsyncIterable[Item] | Iterable[Item]
Outcome = Literal["ended", "cut", "slow", "disconnected", "stopped"]
Write = Callable[[bytes], Awaitable[None]]
Listen = Callable[[], Awaitable[Any]]  # the adapter's next word from the client
Gone = Callable[[Any], bool]  # whether that word says the client is gone

#: The logger of the serving adapters (one line per cut).
LOG = logging.getLogger("sse_sansio.serve")

#: The threads that read sync sources, shared by every response of the process (not
#: the loop's default executor, which DNS look-ups and ``to_thread`` need).  Each
#: ``next()`` of a sync source takes one for its own time; when all are busy, the next
#: one waits for a free thread, in order.  A source whose ``next()`` blocks for long
#: holds its thread that long, disconnect or not (a thread cannot be interrupted): make
#: such a source async (see the serving page).
SYNC_SOURCE_THREADS = 16

_END = object()  # what next() returns at the end of a sync source
_WRITTEN = object()  # what next() returns for a write done in its first step
# Detached sources, held until they finish (a task nobody references may be collected).
_DETACHED: set[asyncio.Task[None]] = set()
# The pumps running now, for stop_all() (a server shutting down): a plain set (a
# WeakSet cost an idle response about 300 bytes more), which run() always leaves.
_RUNNING: set[Pump] = set()
_EXECUTOR: list[ThreadPoolExecutor] = []
_FINAL_WRITE = 1.0  # seconds a stopped response's last write may take
_INFINITY = float("inf")


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


def stop_all() -> int:
    """End every response this process is serving as a cut, after its whole frames,
    so that each client resumes (elsewhere); the streams themselves go on.  For a
    server shutting down.  Returns how many were stopped."""
    pumps = list(_RUNNING)
    for pump in pumps:
        pump.stop()
    return len(pumps)


class Start:
    """A response decided before its head is sent: the status (204 when the stream
    is finished with nothing left to send, which stops a browser's EventSource for
    good), and the pump that serves it."""

    __slots__ = ("pump", "status")

    def __init__(self, status: int, pump: Pump) -> None:
        self.status = status
        self.pump = pump


def start_source(options: Options, source: Source, cursor: str | None) -> Start:
    """Plan a response that serves ``source``, after a replay from the window."""
    now = time.monotonic()
    stream = ServerStream(
        now=now, max_buffer=options.max_buffer, window=options.window, **options.stream()
    )
    if options.window is not None:
        replay(stream, options.window, cursor, now)
    pump = Pump(stream, options, source=source if stream.state == "open" else None)
    if stream.state != "open":
        # The producer finished: the response comes from the window alone, and the
        # source, which would write into a finished stream, is closed unread.
        _close_unread(source)
    return Start(_status(stream, options), pump)


def start_hub(
    options: Options,
    hub: Hub,
    channels: Iterable[str] | None,
    may_read: MayRead | None,
    cursor: str | None,
) -> Start:
    """Plan a response that serves a new subscriber of ``hub``, on the clock the
    adapters keep: ``time.monotonic()``, which the hub's own calls must use too."""
    pump = Pump(None, options, source=None)
    stream = hub.subscribe(
        time.monotonic(),
        channels=channels,
        may_read=may_read,
        last_event_id=cursor,
        wake=pump.wake,
        **options.stream(),
    )
    pump.attach(stream, hub)
    return Start(_status(stream, options), pump)


def _status(stream: ServerStream, options: Options) -> int:
    return 204 if stream.state != "open" and not stream.buffered else options.status_code


def _close_unread(source: Source) -> None:
    close = getattr(source, "aclose", None) or getattr(source, "close", None)
    if close is None:
        return
    result = close()
    if asyncio.iscoroutine(result):
        task = asyncio.get_running_loop().create_task(result)
        _DETACHED.add(task)
        task.add_done_callback(_DETACHED.discard)


class Pump:
    """Run one response: write what its stream hands out, fed by a source or a hub.

    Tasks (issue 40, item 8: an idle response holds the fewest): the adapter's own task
    runs :meth:`run`, which awaits the client's disconnect itself (``listen()``)
    and is interrupted only when the response is over; a source has its feeder task;
    a write that must wait has a Task of its own while it waits; nothing else.

    Writes: an event costs no task step of its own.  Whoever queues it (the feeder, or
    a publish() through :meth:`wake`) writes it at once while no write is pending
    (``_write_now``): the write's first step runs right there.  A write that must wait
    (backpressure) is handed over (``_rest``): a Task of its own resumes it once what
    it awaits is done, as a Task would have, and the feeder goes on reading meanwhile;
    its end writes what was queued meanwhile (``_look``).  A stop that must interrupt
    a pending write (a slow reader, a disconnect) cancels it as Task.cancel() would.

    Deadlines (keepalive, coalescing, first_byte, max_lifetime) ring the pump's entry in
    the loop's deadlines (``_Timers``), which looks again (``_look``); it is kept while
    the deadline only moves later (a keepalive deadline moves at each write), so a busy
    stream re-arms it about once per deadline, not once per event.

    The end: ``_look`` sees the response is over (``_ending``: the stream ended and
    written, a stop, a failure) and interrupts the adapter's task (``_done``: a
    cancellation, which :meth:`run` tells from any other by ``_interrupted`` and takes
    back with ``uncancel()``); that task then finishes the response (``_ended``).
    """

    __slots__ = (
        "_adapter",
        "_clock",
        "_ends_at",
        "_failure",
        "_gone",
        "_hub",
        "_interrupted",
        "_live",
        "_loop",
        "_max_buffer",
        "_outcome",
        "_policy",
        "_rest",
        "_rested",
        "_room",
        "_source",
        "_stream",
        "_timer",
        "_timer_at",
        "_waiting",
        "_window",
        "_write",
        "_writing",
    )

    def __init__(
        self, stream: ServerStream | None, options: Options, *, source: Source | None
    ) -> None:
        self._stream = cast(ServerStream, stream)
        self._hub: Hub | None = None
        self._source = source
        self._window: ReplayWindow | None = options.window
        self._policy = options.on_disconnect
        self._max_buffer = options.max_buffer
        self._loop = asyncio.get_running_loop()
        self._clock = time.monotonic  # a hub's clock too: publish(item, time.monotonic())
        self._ends_at = (
            None if options.max_lifetime is None else self._clock() + options.max_lifetime
        )
        self._outcome: Outcome | None = None  # set by a stop
        self._timer: _Entry | None = None  # its entry in the loop's deadlines
        self._timer_at = _INFINITY
        self._room: asyncio.Future[None] | None = None  # the feeder waits for a hand-out
        self._adapter: asyncio.Task[Any] | None = None  # the adapter's task
        self._write: Write = _unstarted  # run()'s
        self._live = False  # run() serves: writes may run (not before, not at the end)
        self._waiting = False  # the adapter's task awaits the disconnect
        self._writing = False  # a write's first step runs: what it queues waits for it
        # A write handed over: what it awaits, then the Task that resumed it; and a
        # future resolved when it is done.
        self._rest: asyncio.Future[Any] | None = None
        self._rested: asyncio.Future[None] | None = None
        self._failure: BaseException | None = None  # what a write raised
        self._interrupted = False  # the response is over: the adapter's task was told
        self._gone = False  # the client is gone: events go to the window only

    def attach(self, stream: ServerStream, hub: Hub) -> None:
        """Serve ``stream``, a subscriber of ``hub`` (unsubscribed at the end)."""
        self._stream = stream
        self._hub = hub

    def wake(self) -> None:
        """Something was queued on the stream, or it ended: write what is due now if no
        write is pending (the write's first step runs here; one that must wait is
        handed over, and the caller goes on), else leave it to that write's end.  A
        stream that turned "slow" stops the response, even mid-write."""
        stream = self._stream
        if stream._state == "slow":
            self._halt("slow")
            return
        if (  # the common case inline: a publish to an idle subscriber, written here
            self._live
            and self._rest is None
            and not self._writing
            and self._outcome is None
            and self._failure is None
        ):
            data = stream.data_to_send(self._clock())
            if data:
                self._write_now(data)
                if self._timer is not None and not stream._size and stream._state == "open":
                    return  # written, and the armed timer covers the next keepalive
        self._look()

    def stop(self) -> None:
        """End the response as a cut after its whole frames; the stream goes on."""
        self._halt("stopped")

    async def run(self, write: Write, listen: Listen, gone: Gone) -> Outcome:
        """Pump until the stream ends, the client is gone (``gone(await listen())``)
        or the server stops it."""
        self._adapter = adapter = cast("asyncio.Task[Any]", asyncio.current_task())
        self._write = write
        feeder = None
        if self._source is not None:
            feeder = self._loop.create_task(self._feed(self._source))
        outcome: Outcome = "disconnected"  # what a cancellation of this task means
        _RUNNING.add(self)
        self._live = True
        try:
            self._look()  # what is due at once (a replay, first_byte), and the timer
            if not self._ending():
                self._waiting = True
                try:
                    while not gone(await listen()) and not self._interrupted:
                        pass  # (the client is not gone: listen again)
                except asyncio.CancelledError:
                    # Ours (the response is over) is taken back; any other goes on.
                    if not self._interrupted or adapter.uncancel():
                        raise
                else:
                    self._heard()
                finally:
                    self._waiting = False
            self._live = False
            outcome = await self._ended(write)
            if outcome == "slow":
                LOG.warning(
                    "sse_sansio: a client fell more than max_buffer bytes behind while a "
                    "write was pending; its response is cut (it may resume)"
                )
        finally:
            self._live = False
            _RUNNING.discard(self)
            if self._rest is not None:  # the response is over: so is its write
                self._rest.cancel()
            if self._timer is not None:
                _timers_of(self._loop).cancel(self._timer)
            if self._hub is not None:
                self._hub.unsubscribe(self._stream)
            self._made_room()  # (a feeder waiting to hand out goes on, into the window)
            if feeder is not None:
                await self._settle(feeder, outcome)
        return outcome

    def _heard(self) -> None:
        """listen() said the client is gone; or it returned although the response is
        over (a listen() that swallowed the interruption: taken back all the same)."""
        self._waiting = False
        if self._interrupted:
            cast("asyncio.Task[Any]", self._adapter).uncancel()
        else:
            self._halt("disconnected")

    def _ending(self) -> bool:
        """Whether the response is over: a failure to raise, a stop, or the stream
        ended (or slow) with everything written."""
        stream = self._stream
        return (
            self._failure is not None
            or self._outcome is not None
            or (
                stream._state != "open"
                and not stream._size
                and self._rest is None
                and not self._writing
            )
        )

    def _done(self) -> None:
        """The response is over: interrupt the adapter's task, if it awaits the
        disconnect (else it sees so itself before it awaits)."""
        if self._waiting and not self._interrupted:
            self._interrupted = True
            cast("asyncio.Task[Any]", self._adapter).cancel()

    async def _ended(self, write: Write) -> Outcome:
        """The adapter's task, interrupted: the outcome, after the last writes of a stop."""
        if self._failure is not None:
            raise self._failure
        stream = self._stream
        state = stream._state
        if (
            state != "open"
            and not stream._size
            and self._rest is None
            and self._outcome != "disconnected"
        ):
            return state  # ended and written (a stop comes too late), or slow
        return await self._stopped(write)

    def _look(self) -> None:
        """Write what is due now while no write is pending (a write that must wait is
        handed over: its end looks again), then tell the adapter's task the response
        is over, or arm the timer for the next deadline."""
        if not self._live or self._writing:
            return  # (a write's first step runs: its end looks again)
        stream = self._stream
        while self._rest is None and self._outcome is None and self._failure is None:
            data = stream.data_to_send(self._clock())
            if not data:
                break
            if self._room is not None:
                self._made_room()
            self._write_now(data)
        if self._ending():
            self._done()
        else:  # (while a write is pending, only the lifetime: its end looks again)
            self._arm(stream.deadline if self._rest is None else None)

    def _write_now(self, data: bytes) -> None:
        """Run a write's first step here (no write is pending); hand it over if it must
        wait.  An OSError is the client gone; any other error, the adapter's task raises."""
        step = self._write(data)
        if type(step) is not CoroutineType:
            step = _awaited(step)
        self._writing = True  # (what the write itself publishes waits for its end)
        try:
            waiting = next(step.__await__(), _WRITTEN)  # (no StopIteration made)
        except OSError:  # the transport is closed: the client is gone
            self._halt("disconnected")
            return
        except Exception as exc:
            self._failure = exc
            self._done()
            return
        finally:
            self._writing = False
        if waiting is not _WRITTEN:
            self._hand_over(cast(Coroutine[Any, Any, None], step), waiting)

    def _hand_over(self, step: Coroutine[Any, Any, None], waiting: object) -> None:
        """A write whose first step waits on ``waiting``: a Task of its own resumes it
        when that is done (a future), or at once (a bare yield: the loop's next turn)."""
        self._rested = self._loop.create_future()
        if asyncio.isfuture(waiting) and not waiting.done():
            waiting._asyncio_future_blocking = False  # taken, as Task takes it
            self._rest = waiting
            waiting.add_done_callback(lambda _: self._resume(step))
        else:
            self._resume(step)

    def _resume(self, step: Coroutine[Any, Any, None]) -> None:
        self._rest = rest = self._loop.create_task(step)
        rest.add_done_callback(self._rest_done)

    def _rest_done(self, rest: asyncio.Task[None]) -> None:
        """A write handed over is done: the client gone (OSError), a failure for the
        adapter's task to raise, or written; then look again."""
        self._rest = None
        if not rest.cancelled():
            failure = rest.exception()
            if isinstance(failure, OSError):
                self._halt("disconnected")
            elif failure is not None:
                self._failure = failure
        cast("asyncio.Future[None]", self._rested).set_result(None)
        self._look()

    async def _stopped(self, write: Write) -> Outcome:
        """The outcome of a stop; for "stopped", the whole frames queued go first."""
        outcome = cast(Outcome, self._outcome)
        stream = self._stream
        if outcome != "stopped":
            return outcome
        self._gone = True  # from now on the source writes to the window only
        finish(stream, self._clock(), cut=True)
        if self._rest is not None:  # cancelled by the stop: let it unwind first
            rested = cast("asyncio.Future[None]", self._rested)
            await asyncio.wait((rested,), timeout=2 * _FINAL_WRITE)
        data = stream.data_to_send(self._clock())
        if data:
            # A client gone or not reading resumes all the same.
            with contextlib.suppress(OSError, asyncio.TimeoutError):
                await asyncio.wait_for(write(data), _FINAL_WRITE)
        return outcome

    def _arm(self, deadline: float | None) -> None:
        """Arm the timer for ``deadline`` or the end of the lifetime, whichever comes
        first (the lifetime over: the response is stopped).  A later deadline keeps
        the armed timer (it rings, and looks again); a past one rings at once."""
        ends_at = self._ends_at
        if ends_at is not None and (deadline is None or ends_at <= deadline):
            if ends_at <= self._clock():
                self._halt("stopped")
                return
            deadline = ends_at
        if deadline is not None and deadline < self._timer_at:
            timers = _timers_of(self._loop)
            if self._timer is not None:
                timers.cancel(self._timer)
            self._timer_at = deadline
            self._timer = timers.add(deadline, self)

    def _ring(self) -> None:
        """The timer: look again (which arms it for the next deadline)."""
        self._timer = None
        self._timer_at = _INFINITY
        self._look()

    def _halt(self, outcome: Outcome) -> None:
        if self._outcome is None:
            self._outcome = outcome
            # A write the client never takes: cancelled, as Task.cancel() would.
            if self._rest is not None:
                self._rest.cancel()
        self._made_room()
        self._done()

    # The feeder.

    async def _feed(self, source: Source) -> None:
        cut = True
        try:
            if isinstance(source, AsyncIterable):
                stream = self._stream
                clock = self._clock
                async for item in source:
                    if stream._size and self._crowded(item):
                        await self._hand_out_first()
                    if (  # nothing is pending: write it here
                        self._live
                        and self._rest is None
                        and self._outcome is None
                        and self._failure is None
                        and not self._gone
                    ):
                        data = stream._send_now(item, clock())
                        if data:
                            self._write_now(data)
                            if (
                                self._timer is not None
                                and not stream._size
                                and stream._state == "open"
                            ):
                                continue  # written; the armed timer covers the keepalive
                        self.wake()  # held (coalescing), slow, pending, a failure
                    else:
                        self._take(item)
            else:
                items = iter(source)
                executor = _executor()
                # Each next() returns through the loop, where the item before it was
                # written (or handed over): a sync source cannot burst past it.
                while (got := await self._loop.run_in_executor(executor, _next, items)) is not _END:
                    self._take(cast(Item, got))
            cut = False
        except StreamCut as exc:
            LOG.warning("sse_sansio: the source cut the stream: %s", exc)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():  # the pump's own: let it through
                raise
            LOG.warning("sse_sansio: the source raised CancelledError unasked; the stream is cut")
        except Exception:
            LOG.exception("sse_sansio: the source raised; the stream is cut")
        except BaseException:  # KeyboardInterrupt, SystemExit: cut, and let them through
            self._finish(True)
            raise
        self._finish(cut)

    def _crowded(self, item: object) -> bool:
        """Whether ``item`` could take the queue past max_buffer while no write is
        pending: then the queue must be handed out first (a burst is not a slow reader)."""
        buffered = self._stream._size
        return (
            buffered > 0
            and not self._writing
            and self._rest is None
            and not self._gone
            and buffered + _bound(cast(Item, item)) > self._max_buffer
        )

    def _take(self, item: Item) -> None:
        if self._gone:
            if self._window is not None and isinstance(item, Event):
                self._window.append(item)
            return
        self._stream.send(item, self._clock())
        self.wake()

    async def _hand_out_first(self) -> None:
        """Wait until what is queued was handed out (or a stop): at once, or when the
        frames held for coalescing come due."""
        self._room = room = self._loop.create_future()
        self._look()
        try:
            await room
        finally:
            self._room = None

    def _made_room(self) -> None:
        room = self._room
        if room is not None and not room.done():
            room.set_result(None)

    def _finish(self, cut: bool) -> None:
        if self._window is not None:
            self._window.close(cut=cut)
        if not self._gone and self._stream.state == "open":
            self._stream.end(self._clock(), cut=cut)
            self.wake()

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


class _Entry:
    """A pump's deadline in the loop's heap (``pump`` None: cancelled)."""

    __slots__ = ("pump", "when")

    def __init__(self, when: float, pump: Pump) -> None:
        self.when = when
        self.pump: Pump | None = pump

    def __lt__(self, other: _Entry) -> bool:
        return self.when < other.when


class _Timers:
    """The deadlines of every response on one loop, rung by one ``loop.call_at``
    handle (issue 40, item 8: a handle per response cost an idle one about 520 bytes
    under uvloop; an entry here costs about 60).

    A heap of entries, ``when`` on the pumps' clock (``time.monotonic()``).  A
    cancelled entry stays in the heap, counted (``stale``), until it comes due or the
    heap is rebuilt, once more than half of it is stale.  The handle rings for the
    heap's earliest entry and moves only when an earlier one comes; at its ring every
    entry due is taken out first, then each of their pumps looks again (and may arm
    anew).  While the heap holds an entry the handle is pending, so the loop keeps this
    object alive; the registry (``_TIMERS``) holds it only weakly, by the loop's id.
    """

    __slots__ = ("__weakref__", "at", "handle", "heap", "loop", "stale")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.heap: list[_Entry] = []
        self.handle: asyncio.TimerHandle | None = None
        self.at = _INFINITY  # when the handle rings
        self.stale = 0  # cancelled entries still in the heap

    def add(self, when: float, pump: Pump) -> _Entry:
        entry = _Entry(when, pump)
        heapq.heappush(self.heap, entry)
        if when < self.at:
            self._set(when)
        return entry

    def cancel(self, entry: _Entry) -> None:
        entry.pump = None  # (a cancelled entry holds no response)
        self.stale += 1
        if self.stale > _STALE and 2 * self.stale > len(self.heap):
            self.heap = [kept for kept in self.heap if kept.pump is not None]
            heapq.heapify(self.heap)
            self.stale = 0

    def _set(self, when: float) -> None:
        if self.handle is not None:
            self.handle.cancel()
        self.at = when
        loop = self.loop
        self.handle = loop.call_at(loop.time() + max(0.0, when - time.monotonic()), self._ring)

    def _ring(self) -> None:
        self.handle = None
        self.at = _INFINITY
        heap = self.heap
        now = time.monotonic()
        due: list[_Entry] = []
        while heap and heap[0].when <= now:
            entry = heapq.heappop(heap)
            if entry.pump is None:
                self.stale -= 1
            else:
                due.append(entry)
        if heap:  # (early: the loop's clock may round; it rings again)
            self._set(heap[0].when)
        for entry in due:
            pump = entry.pump
            if pump is not None:  # (not re-armed meanwhile by another's ring)
                pump._ring()


# The deadlines of each loop, by the loop's id (a loop that holds none is not kept).
_TIMERS: weakref.WeakValueDictionary[int, _Timers] = weakref.WeakValueDictionary()
_STALE = 64  # cancelled entries a heap keeps before it may be rebuilt


def _timers_of(loop: asyncio.AbstractEventLoop) -> _Timers:
    timers = _TIMERS.get(id(loop))
    if timers is None or timers.loop is not loop:
        timers = _TIMERS[id(loop)] = _Timers(loop)
    return timers


def _unstarted(data: bytes) -> Awaitable[None]:  # pragma: no cover - never called
    raise AssertionError("a pump writes only once run() started")


async def _awaited(awaitable: Awaitable[None]) -> None:
    """A write's awaitable that is not a coroutine, as one (that _flush can step)."""
    await awaitable


def _bound(item: Item) -> int:
    """At least the bytes serialize() writes for ``item`` (a character is at most 4
    bytes of UTF-8; a line break in a field costs at most its field's name again)."""
    if isinstance(item, Event):
        return 7 * (len(item.data) + len(item.type) + len(item.id)) + 32
    if isinstance(item, Comment):
        return 7 * len(item.text) + 4
    return len(item)


def _executor() -> ThreadPoolExecutor:
    if not _EXECUTOR:
        _EXECUTOR.append(
            ThreadPoolExecutor(SYNC_SOURCE_THREADS, thread_name_prefix="sse_sansio-source")
        )
    return _EXECUTOR[0]


def _next(items: Iterator[Item]) -> object:
    return next(items, _END)


_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def watch_shutdown() -> None:
    """Wrap the process's SIGINT and SIGTERM handlers, once each, so that a server's
    graceful stop first ends every open response (stop_all()); only from the main
    thread, where signal handlers live."""
    for signum in _SIGNALS:
        try:
            previous = signal.getsignal(signum)
            if getattr(previous, "_sse_sansio", False):
                continue
            signal.signal(signum, _Chained(previous))
        except ValueError:  # not the main thread: the server owns the signals elsewhere
            return


class _Chained:
    """A signal handler: stop every response, then call the handler it replaced."""

    _sse_sansio = True

    def __init__(self, previous: Any) -> None:
        self.previous = previous

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        try:  # the handler runs between two bytecodes of the loop: stop from the loop
            asyncio.get_running_loop().call_soon_threadsafe(stop_all)
        except RuntimeError:  # no loop runs here
            stop_all()
        if callable(self.previous):
            self.previous(signum, frame)
        elif self.previous == signal.SIG_DFL:  # what the signal would have done
            signal.signal(signum, signal.SIG_DFL)
            signal.raise_signal(signum)
