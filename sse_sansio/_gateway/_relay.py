# The relay: an upstream event stream, parsed, watched and judged, handed on as items
# for a served stream (a gateway, a proxy).
#
# Strategy: one async generator over the upstream's byte chunks (httpx's aiter_bytes(),
# the body decoded: with a gzip upstream aiter_raw() would hand on compressed bytes).
# Each read runs in a task of its own, and the generator waits for it with a timeout
# that is the watchdog's next deadline: the watchdog's clocks keep running while the
# upstream is silent, and a wake-up to check them never cancels the pending read
# (``asyncio.wait_for(anext(...))`` would, and an async generator cancelled mid-read is
# ended for good).  Each chunk goes to the chosen core's Connection; each item to the
# Watchdog (with llm.Progress's word on what moves the answer on), to the llm.Tracker
# that judges the answer, and through the Reframer when asked; Events and Comments are
# yielded (a comment is a keepalive the client may want), Diagnostics never.
#
# How it ends, and what the consumer (the serving adapter) sees:
# - the upstream ends cleanly between events: the generator returns (a clean end),
#   unless the dialect says the answer never reached its terminal event, which is a
#   cut ("before-terminal": an upstream that closes early looks, byte for byte, like
#   one that finished, and the client's SDK would take half an answer for a whole one);
# - the upstream ends inside an event (the event is discarded, as the standard says),
#   or a read raises: StreamCut, after every complete item was yielded; so does a read
#   that ends cancelled although the relay never cancelled it (an upstream that raised
#   CancelledError itself: issue 41, item 1), while a cancellation of the relay's own
#   consumer goes on up as one;
# - the upstream breaks the format the parser holds it to (bytes that are not UTF-8,
#   an event over max_event_size: the parser's RemoteProtocolError): StreamCut, after
#   every complete item before the fault (issue 41, item 9);
# - the watchdog's verdict is not "ok": the read is abandoned (cancelled: nothing will
#   read it now), the dialect's own error event is yielded and the generator returns;
#   without a dialect that has one (none given, or "auto" before it knew the API) no
#   client would understand an error event, so the verdict is passed on as a cut.
#   Relay.open() runs the upstream request itself, so the first-byte clock covers the
#   wait for the response head too (issue 42, item 3): a head that does not come in
#   time is that verdict, given before the iteration starts.
# ``outcome`` (with a dialect) and ``verdict`` (with a watchdog) are set once the
# generator is done, however it ended, the consumer leaving early included.
#
# Invariants: the items yielded are the upstream's complete items in order (repaired
# by the Reframer when reframe=True), then at most one error event of ours; every
# read the generator started is finished, cancelled or retrieved when it is done (no
# orphan task, no "exception never retrieved").
#
# Import cost (issue 36, item 10): ``import sse_sansio`` imports this module, so asyncio
# and the llm layer are imported where they are first needed (a relay's iteration, a
# relay with a dialect), never at import time.

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar, cast

from sse_sansio._errors import LocalProtocolError, RemoteProtocolError, StreamCut
from sse_sansio._events import AnyItem, Comment, EndOfStream, Event
from sse_sansio._health._watchdog import Verdict, Watchdog
from sse_sansio._pickling import refuse
from sse_sansio._receive._connection import NEED_DATA
from sse_sansio._receive._implementation import Connection

if TYPE_CHECKING:
    import asyncio

    from sse_sansio.llm import Outcome, Progress, Reframer, Tracker

__all__ = ["Relay"]

Relayed = Event | Comment
Head = TypeVar("Head")
# The body of a relay made by open() before its head came; never iterated (if the head
# never comes, the iteration gives up before reading).
_NO_BODY = cast("AsyncIterable[bytes]", ())

# What each verdict says of the upstream, for the error event the client gets.
_GIVE_UP = {
    "no-first-byte": "the upstream sent no first byte in time",
    "idle": "the upstream went silent",
    "stalled": "the upstream made no progress (only keepalives came)",
}


class Relay:
    """Relay an upstream event stream: its items, watched and judged, for a response.

    Iterate it (once) as the source of :class:`sse_sansio.asgi.EventStreamResponse`
    or :func:`sse_sansio.aiohttp.serve`.  It parses ``upstream`` (async byte chunks,
    such as httpx's ``response.aiter_raw()``) on the chosen core and yields its
    :class:`~sse_sansio.Event` and :class:`~sse_sansio.Comment` items.  While the
    upstream is silent the ``watchdog``'s clocks keep running, without cancelling the
    pending read; on a verdict that is not ``"ok"`` the relay yields the dialect's
    own error event and ends.  An upstream that ends inside an event, whose read
    raises (or ends cancelled, though the relay did not cancel it), that is not UTF-8
    or holds an event over the parser's size limit, makes it raise
    :class:`~sse_sansio.StreamCut` after every complete item, and so does one that
    ends before the dialect's terminal event: the adapters pass the cut on to the
    client.  A cancellation of the relay's own consumer goes on up as one.

    Args:
        upstream: The upstream's body, decoded (no content-encoding left), as an
            async iterable of byte chunks.
        dialect: One of :data:`sse_sansio.llm.DIALECT_NAMES`:
            an :class:`llm.Tracker <sse_sansio.llm.Tracker>` judges the answer, and
            :class:`llm.Progress <sse_sansio.llm.Progress>` tells the watchdog what
            progress is.  None: bytes and events only.
        watchdog: A :class:`~sse_sansio.Watchdog` made on the same clock as ``now``
            when the upstream request was sent, or None.
        reframe: Repair the stream into the dialect's own shape
            (:class:`llm.Reframer <sse_sansio.llm.Reframer>`; needs a dialect other
            than ``"auto"``).
        now: The clock, a monotonic one (``loop.time`` is the same on most systems).

    Attributes:
        outcome: Once the iteration is over, with a dialect: the
            :class:`llm.Outcome <sse_sansio.llm.Outcome>`, usage included (after a
            watchdog's verdict, a ``"cut"`` with ``cut="gave-up"``, unless the answer
            had ended before); else None.
        verdict: Once the iteration is over, with a watchdog: its last
            :class:`~sse_sansio.Verdict`; else None.

    Raises:
        ValueError: an unknown dialect, or ``reframe`` without a dialect it can write.
    """

    def __init__(
        self,
        upstream: AsyncIterable[bytes],
        *,
        dialect: str | None = None,
        watchdog: Watchdog | None = None,
        reframe: bool = False,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        self._upstream = upstream
        self._watchdog = watchdog
        self._now = now
        self._tracker: Tracker | None = None
        self._progress: Progress | None = None
        self._reframer: Reframer | None = None
        if dialect is not None or reframe:
            self._judge_by(dialect, reframe)
        # keep_raw for the Reframer: an `error:` line is only seen in the raw bytes.
        self._connection = Connection(keep_raw=reframe)
        self._iterated = False
        self._broken: RemoteProtocolError | None = None  # the parser refused the bytes
        self.outcome: Outcome | None = None
        self.verdict: Verdict | None = None

    def _judge_by(self, dialect: str | None, reframe: bool) -> None:
        """Make the llm layer's tracker, progress and reframer for ``dialect``."""
        from sse_sansio import llm

        if dialect is not None and dialect not in llm.DIALECT_NAMES:
            raise ValueError(
                f"Relay: unknown dialect {dialect!r}; expected one of {llm.DIALECT_NAMES}"
            )
        # (Here with a dialect, or with reframe=True: without a dialect, that is refused.)
        if dialect is None or (reframe and dialect not in llm.REFRAMER_DIALECTS):
            raise ValueError(f"Relay: reframe=True needs one of {llm.REFRAMER_DIALECTS} as dialect")
        self._tracker = llm.Tracker(dialect)
        self._progress = llm.Progress(dialect)
        self._reframer = llm.Reframer(dialect) if reframe else None

    @classmethod
    async def open(
        cls,
        send: Awaitable[Head],
        body: Callable[[Head], AsyncIterable[bytes]],
        *,
        dialect: str | None = None,
        watchdog: Watchdog | None = None,
        reframe: bool = False,
        now: Callable[[], float] = time.monotonic,
    ) -> tuple[Head, Relay] | tuple[None, Relay]:
        """Send the upstream request and wait for its response head under the
        ``watchdog``'s first-byte clock; return the head and the relay of its body.

        ``send`` is the awaitable that sends the request and returns the response head
        (httpx: ``client.send(request, stream=True)``); ``body`` gives that response's
        decoded body (``lambda response: response.aiter_bytes()``).  The first-byte
        clock runs from the watchdog's ``now`` (when the request was sent) through the
        head to the body's first byte, so a head that is late, or never comes, is
        judged like a silent body: ``send`` is cancelled, the head is None, and the
        relay yields the dialect's error event (or, without a dialect that has one,
        raises :class:`~sse_sansio.StreamCut`) when iterated.  With the head in hand
        the caller still chooses: a non-stream answer (a JSON 429) is passed on with
        its status, and the relay is never iterated.  The other options are
        :class:`Relay`'s.

        Raises:
            What ``send`` raises (a refused connection); StreamCut when ``send``
            ended cancelled although the relay did not cancel it.
        """
        import asyncio

        relay = cls(_NO_BODY, dialect=dialect, watchdog=watchdog, reframe=reframe, now=now)
        task = asyncio.ensure_future(send)
        try:
            if not await relay._until_read(task):
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)  # retrieved, whatever
                return None, relay  # the head never came: relay.verdict says why
        finally:
            if not task.done():
                task.cancel()  # open() itself was cancelled: so is the request
        if task.cancelled():
            raise StreamCut("the upstream request ended cancelled, not by the relay")
        head = task.result()
        relay._upstream = body(head)
        return head, relay

    def __reduce__(self) -> NoReturn:
        # A handle, not a value: it reads a live upstream (sse_sansio/_pickling.py).
        refuse(self, "it reads a live upstream; keep its outcome and verdict instead")

    def __aiter__(self) -> AsyncGenerator[Relayed, None]:
        if self._iterated:
            raise LocalProtocolError("a Relay is iterated once: its upstream is read up")
        self._iterated = True
        return self._run()

    async def _run(self) -> AsyncGenerator[Relayed, None]:
        import asyncio

        task: asyncio.Task[bytes | None] | None = None
        try:
            if self.verdict is not None:  # open(): the head did not come in time
                for event in self._give_up():
                    yield event
                return
            reads = aiter(self._upstream)
            while True:
                task = asyncio.ensure_future(_read(reads))
                if not await self._until_read(task):
                    _drop(task)
                    task = None
                    for event in self._give_up():
                        yield event
                    return
                data, error = _result(task)
                task = None
                if data == b"":
                    continue  # an empty chunk: no byte, no end
                end = None
                for item in self._parse(b"" if data is None else data):
                    if isinstance(item, EndOfStream):
                        end = item
                    else:
                        yield item
                if self._broken is not None:
                    raise StreamCut(
                        f"the upstream broke the event stream format: {self._broken}"
                    ) from self._broken
                if end is not None:
                    self._cut_if(end, error)
                    return
        finally:
            if task is not None:
                _drop(task)
            self._close()

    async def _until_read(self, task: asyncio.Task[Any]) -> bool:
        """Wait for the read (or open()'s request), checking the watchdog at its
        deadlines; False: give up."""
        import asyncio

        watchdog = self._watchdog
        while not task.done():
            if watchdog is None:
                await asyncio.wait((task,))
                break
            verdict = watchdog.check(self._now())
            if not verdict.ok:
                self.verdict = verdict
                return False
            timeout = None if verdict.deadline is None else verdict.deadline - self._now()
            await asyncio.wait((task,), timeout=timeout)
        return True

    def _parse(self, data: bytes) -> list[Relayed | EndOfStream]:
        """Feed ``data`` (``b""``: the end); the items to hand on, with the end."""
        now = self._now()
        watchdog, progress, reframer = self._watchdog, self._progress, self._reframer
        if watchdog is not None:
            watchdog.saw_bytes(len(data), now)
        connection = self._connection
        connection.receive_data(data)  # (it only buffers: next_event() parses)
        out: list[Relayed | EndOfStream] = []
        while True:
            try:
                item = connection.next_event()
            except RemoteProtocolError as exc:  # not UTF-8, an event too big: a cut
                self._broken = exc
                return out
            if item is NEED_DATA:
                if reframer is not None:  # bytes no item carried: an `error:` line?
                    out += self._pass(reframer.feed_raw(connection.take_raw()))
                return out
            assert isinstance(item, (Event, Comment, EndOfStream))  # no opt-in mode is on
            if watchdog is not None:
                moved = None if progress is None else progress.of(item)
                watchdog.saw_item(item, now, progress=moved)
            out += self._pass([item] if reframer is None else reframer.feed(item))
            if isinstance(item, EndOfStream):
                return out  # (the connection hands it out again on every later call)

    def _pass(self, items: list[AnyItem]) -> list[Relayed | EndOfStream]:
        """What goes on to the client (no Diagnostic), fed to the tracker on its way:
        the tracker judges what the client gets."""
        passed = [item for item in items if isinstance(item, (Event, Comment, EndOfStream))]
        for item in passed:
            self._track(item)
        return passed

    def _track(self, item: Relayed | EndOfStream) -> None:
        if self._tracker is not None:
            from sse_sansio.llm import PayloadError

            # A payload that breaks the dialect's rules is passed on all the same (the
            # client's decoder judges it); the outcome reports it (_close()).
            with contextlib.suppress(PayloadError):
                self._tracker.feed(item)

    def _cut_if(self, end: EndOfStream, error: Exception | None) -> None:
        """Raise StreamCut when the upstream's end was a cut."""
        if isinstance(error, StreamCut):
            raise error  # (a read that ended cancelled, not by the relay: _result())
        if error is not None:
            raise StreamCut(f"the upstream's read failed: {error!r}") from error
        if end.truncated:
            raise StreamCut("the upstream ended in the middle of an event")
        outcome = self._judge()
        if outcome is not None and outcome.cut == "before-terminal":
            raise StreamCut(f"the upstream ended early: {outcome.reason}")

    def _give_up(self) -> list[Event]:
        """The events that end the relay on a watchdog verdict (or a StreamCut)."""
        assert self.verdict is not None
        message = f"the gateway gave up: {_GIVE_UP[self.verdict.state]}"
        tracker = self._tracker
        if tracker is None:
            raise StreamCut(message)
        from sse_sansio.llm import REFRAMER_DIALECTS, PayloadError, Reframer

        # The outcome is the truth, a cut "gave-up" (unless the answer had already
        # ended), not the "failed" our own error event would make it.
        with contextlib.suppress(PayloadError):
            tracker.end(gave_up=message)
        if tracker.dialect not in REFRAMER_DIALECTS:
            raise StreamCut(message)
        return [
            item
            for item in Reframer(tracker.dialect).error(message, open_event=False)
            if isinstance(item, Event)
        ]

    def _judge(self) -> Outcome | None:
        tracker = self._tracker
        if tracker is None:
            return None
        from sse_sansio.llm import Outcome, PayloadError

        try:
            return tracker.end()  # the outcome, fed or not (an abandoned stream: a cut)
        except PayloadError as exc:
            return Outcome(
                outcome="failed",
                reason=f"the upstream broke its API's rules: {exc}",
                dialect=tracker.dialect,
                error_type="PayloadError",
                error_message=str(exc),
                offset=exc.offset,
            )

    def _close(self) -> None:
        """Set ``outcome`` and ``verdict``, however the iteration ended."""
        self.outcome = self._judge()
        if self._watchdog is not None and self.verdict is None:
            self.verdict = self._watchdog.check(self._now())


async def _read(reads: AsyncIterator[bytes]) -> bytes | None:
    """The next chunk, or None at the end."""
    try:
        return await reads.__anext__()
    except StopAsyncIteration:
        return None


def _result(task: asyncio.Task[bytes | None]) -> tuple[bytes | None, Exception | None]:
    """A finished read's chunk (None: the end), or the end and the error it raised.
    A read that ended cancelled was not cancelled by the relay (which never reads a
    read it cancelled): the upstream raised CancelledError itself, a cut.  What is not
    an Exception (a KeyboardInterrupt, say) is no cut: it goes on up."""
    if task.cancelled():
        return None, StreamCut("the upstream's read ended cancelled, not by the relay")
    error = task.exception()
    if error is None:
        return task.result(), None
    if not isinstance(error, Exception):
        raise error
    return None, error


def _drop(task: asyncio.Task[bytes | None]) -> None:
    """Abandon a read: cancel it, or retrieve what it ended with (nobody will read it)."""
    if task.done():
        import asyncio

        with contextlib.suppress(asyncio.CancelledError):  # (a cancelled read has none)
            task.exception()
    else:
        task.cancel()
