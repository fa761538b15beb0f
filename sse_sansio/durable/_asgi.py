"""The Durable Streams protocol as an ASGI app: :func:`asgi_app`.

Strategy: every request is read whole (at most ``max_body`` bytes), handed to the
sans-I/O :class:`~sse_sansio.durable.DurableStreams` with ``time.time()`` as the
clock, and its :class:`~sse_sansio.durable.Response` written.  A live read waits on the
stream's :class:`_Wakeup`, which every response that ``changed`` a path sets: long-poll
and SSE wake on an append at once, without polling, and otherwise sleep until their
deadline.  The SSE response is :class:`~sse_sansio.asgi.EventStreamResponse`, so
:class:`~sse_sansio.ServerStream` writes it: keepalive comments while the stream is
quiet, the slow-reader bound (``max_buffer``), and a stream deleted under its reader
passed on as a cut (:class:`~sse_sansio.StreamCut`), not as a clean end.  The frames
of one step (a data event and the control event after it) go out in one write, so a
reader never sees a data event whose control event is still to come in another packet.

A store that blocks (``blocking = True``, such as the Redis store) is called in a
worker thread, so the event loop never waits on it; its appends are awaited on the loop
instead when it has ``append_async`` (the Redis store's asyncio client): the core's
two halves of an append (``append_plan``, ``append_response``) around that one store
step.  Another process appending to the same store wakes this one's readers only
through a store's ``subscribe`` hook (the Redis store has one), which the first live
read here subscribes, before it looks at its stream; without it they see the data at
their next deadline.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from typing import Any, TypeVar

from sse_sansio._errors import StreamCut
from sse_sansio._public import publish
from sse_sansio._serve._asgi import EventStreamResponse

from ._protocol import DurableStreams, LiveRead, Request, Response
from ._store import AppendOutcome, AppendPlan, Store

__all__ = ["DurableApp", "asgi_app"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
T = TypeVar("T")


class _Wakeup:
    """One asyncio.Event per path that has live readers; a change sets and drops it."""

    def __init__(self) -> None:
        self._events: dict[str, tuple[asyncio.Event, int]] = {}

    def notify(self, path: str) -> None:
        entry = self._events.pop(path, None)
        if entry is not None:
            entry[0].set()

    def waiting(self, path: str) -> bool:
        """Whether a reader waits on ``path`` (safe to ask from another thread)."""
        return path in self._events

    def event(self, path: str) -> asyncio.Event:
        """The event the next change of ``path`` sets (take it before looking)."""
        event, count = self._events.get(path) or (asyncio.Event(), 0)
        self._events[path] = (event, count + 1)
        return event

    def release(self, path: str, event: asyncio.Event) -> None:
        """A reader is done with ``event``: forget it when nobody else waits on it."""
        entry = self._events.get(path)
        if entry is not None and entry[0] is event:
            if entry[1] <= 1:
                del self._events[path]
            else:
                self._events[path] = (event, entry[1] - 1)

    async def wait(self, path: str, event: asyncio.Event, timeout: float) -> None:
        try:
            if timeout > 0:
                await asyncio.wait_for(event.wait(), timeout)
        except asyncio.TimeoutError:
            pass
        finally:
            self.release(path, event)


class DurableApp:
    """The ASGI app :func:`asgi_app` returns; ``protocol`` is its sans-I/O core."""

    def __init__(
        self,
        protocol: DurableStreams,
        *,
        prefix: str,
        keepalive: float,
        max_buffer: int,
        max_body: int,
        clock: Callable[[], float],
    ) -> None:
        self.protocol = protocol
        self.prefix = prefix.rstrip("/")
        self._keepalive = keepalive
        self._max_buffer = max_buffer
        self._max_body = max_body
        self._clock = clock
        self._wakeup = _Wakeup()
        self._blocking = bool(getattr(protocol.store, "blocking", False))
        self._append_async: Callable[[str, AppendPlan], Awaitable[AppendOutcome]] | None = getattr(
            protocol.store, "append_async", None
        )
        subscribe = getattr(protocol.store, "subscribe", None)
        self._subscribe: Callable[[Callable[[str], None]], object] | None = subscribe
        self._subscription: asyncio.Future[object] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":  # websockets: not ours to serve
            return
        path = scope.get("path", "")
        if not path.startswith(self.prefix + "/") or len(path) == len(self.prefix) + 1:
            await _write(send, Response(404, [("content-type", "text/plain")], b"no stream here"))
            return
        body = await self._body(receive)
        if body is None:
            await _write(send, Response(413, [], b"the body is too large"))
            return
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]]
        query = scope.get("query_string", b"").decode("latin-1")
        request = Request(scope["method"], path, headers, query, body, _origin(scope))
        decided: Response | LiveRead | None = None
        if self._append_async is not None and request.method == "POST":
            decided = await self._append(request)
        if decided is None:
            decided = await self._call(self.protocol.handle, request, self._clock())
        if isinstance(decided, Response):
            if decided.changed is not None:
                self._wakeup.notify(decided.changed)
            await _write(send, decided, head=scope["method"] == "HEAD")
        elif decided.mode == "long-poll":
            await _write(send, await self._long_poll(decided))
        else:
            await self._sse(decided, scope, receive, send)

    async def _append(self, request: Request) -> Response | None:
        """An append through the store's awaited step (no worker thread), or None for
        :meth:`DurableStreams.handle` to answer (a request refused on its own, an
        expired stream)."""
        assert self._append_async is not None
        plan = self.protocol.append_plan(request, self._clock())
        if plan is None:
            return None
        outcome = await self._append_async(request.path, plan)
        return self.protocol.append_response(request.path, plan, outcome)

    async def _listen(self) -> None:
        """Hear other processes' changes through the store's hook: subscribed once, when
        the first live read starts (a process that only writes hears nothing, so pays
        nothing), and awaited by every live read before it looks at its stream.  The
        hook returns once the subscription is live, so no change made after that look
        goes unheard."""
        if self._subscribe is None:
            return
        if self._subscription is None:
            loop = asyncio.get_running_loop()
            wakeup = self._wakeup
            notify = wakeup.notify

            def heard(path: str) -> None:
                # Only a path with readers here is woken (most changes are appends
                # nobody here waits on, this process's own among them).  No wake is
                # lost: a reader takes its event before it looks at the stream.
                if wakeup.waiting(path):
                    loop.call_soon_threadsafe(notify, path)

            self._subscription = asyncio.ensure_future(self._call(self._subscribe, heard))
        await asyncio.shield(self._subscription)

    async def _call(self, function: Callable[..., T], *args: Any) -> T:
        if self._blocking:
            return await asyncio.to_thread(function, *args)
        return function(*args)

    async def _body(self, receive: Receive) -> bytes | None:
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return b"".join(chunks)
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self._max_body:
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    async def _long_poll(self, live: LiveRead) -> Response:
        await self._listen()
        while True:
            event = self._wakeup.event(live.path)
            now = self._clock()
            answer = await self._call(self.protocol.poll, live, now)
            if answer is not None:
                self._wakeup.release(live.path, event)
                return answer
            await self._wakeup.wait(live.path, event, live.deadline - now)

    async def _sse(self, live: LiveRead, scope: Scope, receive: Receive, send: Send) -> None:
        async def source() -> AsyncIterator[bytes]:
            await self._listen()
            while True:
                event = self._wakeup.event(live.path)
                now = self._clock()
                events, end = await self._call(self.protocol.sse_step, live, now)
                if events:  # a data event and its control event leave in one write
                    yield b"".join(events)
                if end is not None or live.behind:
                    self._wakeup.release(live.path, event)
                if end == "gone":
                    raise StreamCut(f"the stream at {live.path} was deleted")
                if end is not None:
                    return
                if not live.behind:
                    await self._wakeup.wait(live.path, event, live.deadline - now)

        response = EventStreamResponse(
            source(),
            keepalive=self._keepalive,
            max_buffer=self._max_buffer,
            headers=dict(live.headers),
        )
        await response(scope, receive, send)


def _origin(scope: Scope) -> str:
    for name, value in scope["headers"]:
        if name == b"host":
            return f"{scope.get('scheme', 'http')}://{value.decode('latin-1')}"
    return ""


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
            continue
        await send({"type": "lifespan.shutdown.complete"})  # the only other message
        return


async def _write(send: Send, response: Response, *, head: bool = False) -> None:
    headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in response.headers]
    if response.status not in (204, 304):
        headers.append((b"content-length", str(len(response.body)).encode()))
    await send({"type": "http.response.start", "status": response.status, "headers": headers})
    body = b"" if head or response.status in (204, 304) else response.body
    await send({"type": "http.response.body", "body": body, "more_body": False})


def asgi_app(
    store: Store | None = None,
    *,
    prefix: str = "/v1/stream",
    long_poll_timeout: float = 30.0,
    sse_lifetime: float = 60.0,
    keepalive: float = 15.0,
    max_buffer: int = 1 << 20,
    max_body: int = 64 << 20,
    max_read_bytes: int = 1 << 20,
    clock: Callable[[], float] = time.time,
) -> DurableApp:
    """An ASGI app serving Durable Streams under ``prefix`` (a memory store if None).

    A stream's name is its whole URL path (``/v1/stream/chat/42``).  ``keepalive`` and
    ``max_buffer`` are the SSE response's (:class:`~sse_sansio.ServerStream`'s);
    ``max_body`` bounds a request body (larger: 413); ``max_read_bytes`` a catch-up
    response's body and an SSE data event; ``clock`` is seconds since the
    Unix epoch (TTLs and ``Stream-Expires-At`` are wall-clock times).
    """
    protocol = DurableStreams(
        store,
        long_poll_timeout=long_poll_timeout,
        sse_lifetime=sse_lifetime,
        max_read_bytes=max_read_bytes,
    )
    return DurableApp(
        protocol,
        prefix=prefix,
        keepalive=keepalive,
        max_buffer=max_buffer,
        max_body=max_body,
        clock=clock,
    )


# Named by the face that exports it, sse_sansio.durable (which loads this module on
# first use): pickles and tracebacks show the public path.
publish(globals(), ["DurableApp", "asgi_app"], "sse_sansio.durable")
