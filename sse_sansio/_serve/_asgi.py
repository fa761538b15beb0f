# The ASGI adapter: EventStreamResponse (one source) and HubResponse (a hub's
# subscriber), plain ASGI apps that are also Starlette Responses where Starlette is
# installed (so a Starlette endpoint or a FastAPI path operation can return them), over
# the shared pump.
#
# ASGI has no message that aborts a response, so a cut (and a slow consumer, a client
# already gone, a connection stopped by its lifetime or a shutdown) is the app
# returning without its final ``more_body=False`` message: the server then closes the
# connection without the terminating chunk, which every HTTP/1.1 client reports as an
# incomplete body (an HTTP/1.0 response has no chunks: there a cut looks like an end).
# Raising instead would do the same but make the server log a traceback per cut.
# Uvicorn still logs one line of its own ("ASGI callable returned without completing
# response").
#
# The resume cursor: the ``Last-Event-ID`` header, or where there is none the query
# parameter named ``query_cursor`` (``?last_event_id=``: a page that reloads knows its
# last ID, but EventSource sends the header only on its own reconnects).  A stream that
# is finished with nothing left to send is answered 204, which stops an EventSource.
#
# A client's disconnect is ASGI's ``http.disconnect`` message: the app's own task
# awaits ``receive()`` until it comes (the pump's run(), no task of its own), so it is
# noticed at once.  A server's shutdown:
# uvicorn gives the app no message for it, so each response makes sure the process's
# SIGINT and SIGTERM handlers stop every open response first (the pump's
# watch_shutdown()), then do what uvicorn's own do.

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, MutableMapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl

from ._hub import Hub, MayRead
from ._options import Options
from ._pump import Source, Start, response_headers, start_hub, start_source, watch_shutdown

if TYPE_CHECKING:
    from typing import Unpack

    from ._options import HubOptions, SourceOptions

try:
    from starlette.responses import Response as _Base
except ImportError:  # a plain ASGI app: its tests load this module with Starlette hidden
    _Base = object  # type: ignore[misc,assignment]

__all__ = ["EventStreamResponse", "HubResponse", "IncompleteResponseFilter"]

# Set in the request's context when a response ends without its proper end on purpose
# (a cut passed on, a slow reader, a stop): the server logs its line in that context.
_INCOMPLETE: ContextVar[bool] = ContextVar("sse_sansio_incomplete", default=False)
_UVICORN_LINE = "ASGI callable returned without completing response."

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


def _encoded(headers: Mapping[str, str] | None) -> tuple[tuple[bytes, bytes], ...]:
    """The SSE headers and ``headers``, as ASGI sends them."""
    return tuple(
        (name.lower().encode("latin-1"), value.encode("latin-1"))
        for name, value in response_headers(headers)
    )


_DEFAULT_RAW = _encoded(None)


class _Conversation:
    """One request's body messages, as the pump writes them (a slotted object: a
    closure held for the life of a response costs more, issue 40, item 8)."""

    __slots__ = ("send",)

    def __init__(self, send: Send) -> None:
        self.send = send

    def write(self, data: bytes) -> Awaitable[None]:
        return self.send({"type": "http.response.body", "body": data, "more_body": True})


def _gone(message: Message) -> bool:
    """Whether a message of ``receive()`` says the client is gone."""
    return bool(message["type"] == "http.disconnect")


class _Served(_Base):
    """What both responses share: the headers, the cursor, the ASGI conversation."""

    #: Starlette reads and FastAPI sets it: run after the stream, as Starlette does
    #: (set on the instance only when given: an idle response's memory).
    background: Any = None
    # The encoded headers as a list of the response's own, made only when someone asks
    # for raw_headers (Starlette's ``headers`` edits that list in place).
    _raw: list[tuple[bytes, bytes]] | None = None

    def __init__(self, options: Options, background: Any) -> None:
        self._options = options
        self.status_code = options.status_code
        if background is not None:
            self.background = background
        # The encoded headers: one tuple shared by every response without headers of
        # its own (issue 40, item 8: an idle response's memory).
        self._shared = _DEFAULT_RAW if options.headers is None else _encoded(options.headers)

    @property
    def raw_headers(self) -> list[tuple[bytes, bytes]]:
        """The response's headers as Starlette keeps them (a list of its own)."""
        if self._raw is None:
            self._raw = list(self._shared)
        return self._raw

    @raw_headers.setter
    def raw_headers(self, value: list[tuple[bytes, bytes]]) -> None:
        self._raw = value

    def _head(self) -> list[tuple[bytes, bytes]]:
        """The headers to send: a list, as Starlette's BaseHTTPMiddleware makes them the
        raw_headers of the response it hands its dispatch(), which may edit them."""
        return list(self._shared) if self._raw is None else self._raw

    def _start(self, cursor: str | None) -> Start:  # pragma: no cover - each class has its own
        raise NotImplementedError

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        watch_shutdown()
        start = self._start(cursor(scope, self._options.query_cursor))
        status, pump = start.status, start.pump  # (no local held while idle but these)
        del start
        await send({"type": "http.response.start", "status": status, "headers": self._head()})
        if status == 204:
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        else:
            outcome = await pump.run(_Conversation(send).write, receive, _gone)
            if outcome == "ended":
                await send({"type": "http.response.body", "body": b"", "more_body": False})
            else:  # left incomplete on purpose: the server's own line may be dropped
                _INCOMPLETE.set(True)
        if self.background is not None:
            await self.background()


class EventStreamResponse(_Served):
    """Stream ``source`` as ``text/event-stream``: an ASGI app, and a Starlette
    ``Response`` where Starlette is installed.

    ``source`` is an async (or sync) iterable of :class:`~sse_sansio.Event`,
    :class:`~sse_sansio.Comment` or serialized bytes.  The response writes keepalive
    comments while the source is silent (without cancelling its pending read),
    applies the transport's backpressure, and closes the connection of a client that
    falls ``max_buffer`` bytes behind while a write is pending (a burst that the client
    had no chance to read yet is not that).  A client that disconnects is noticed at
    once; its source is then cancelled (``on_disconnect="cancel"``) or left to run to
    its end into the window (``"detach"``).  A sync source is read on the adapters' own
    threads (:data:`SYNC_SOURCE_THREADS`).

    With a ``window``, a request's ``Last-Event-ID`` (or, without the header, its
    ``query_cursor`` query parameter) is answered with a replay first, after the gap
    event (``{"dropped": null}``) when the window cannot replay all that was missed.
    When the window's producer finished, the response comes from the window alone (the
    source is closed unread): the rest and then the end, or **204 No Content** when
    nothing is left, which stops a browser's ``EventSource`` for good.

    A source that ends ends the response; one that raises :class:`~sse_sansio.StreamCut`
    (logged in one line) or any other exception (logged with its traceback) cuts it:
    the body stops without its proper end, so the client knows it is incomplete.
    ``max_lifetime`` (seconds) ends the connection as a cut after a whole event once it
    passed, and a server shutdown does the same: the client resumes, and the stream
    (the window, a detached source) goes on.

    The options (``keepalive``, ``first_byte``, ``padding``, ``coalesce_bytes``,
    ``coalesce_delay``, ``max_buffer``, ``window``, ``on_disconnect``, ``query_cursor``,
    ``max_lifetime``, ``headers``, ``status_code``) are declared once, in
    :doc:`/serving`'s table, and checked here.  ``headers`` are sent after
    ``Content-Type: text/event-stream; charset=utf-8``, ``Cache-Control: no-cache`` and
    ``X-Accel-Buffering: no``, and replace any of those they name.  ``background`` runs
    after the stream, as Starlette's ``Response`` runs it.
    """

    def __init__(
        self, source: Source, *, background: Any = None, **options: Unpack[SourceOptions]
    ) -> None:
        super().__init__(Options.of("EventStreamResponse", options), background)
        self.source = source

    def _start(self, cursor: str | None) -> Start:
        return start_source(self._options, self.source, cursor)


class HubResponse(_Served):
    """Serve a new subscriber of ``hub`` as ``text/event-stream``: an ASGI app, and a
    Starlette ``Response`` where Starlette is installed.

    Each request subscribes (to ``channels``, every channel by default, with
    ``may_read``, and with the request's cursor: the ``Last-Event-ID`` header, or its
    ``query_cursor`` query parameter), and the subscriber's frames are written at the
    client's own pace: the hub's policy acts on a client that does not read.  A publish
    wakes exactly the subscribers it queued for.  The response ends when the hub
    closes (clean, or as a cut), is a cut when its subscriber was dropped as slow, and
    unsubscribes when the client goes.  A resume of a finished hub with nothing left to
    replay is answered 204.  The options are :class:`EventStreamResponse`'s but
    ``max_buffer``, ``window`` and ``on_disconnect``, which are the hub's.
    """

    def __init__(
        self,
        hub: Hub,
        *,
        channels: Iterable[str] | None = None,
        may_read: MayRead | None = None,
        background: Any = None,
        **options: Unpack[HubOptions],
    ) -> None:
        super().__init__(Options.of("HubResponse", options, hub=True), background)
        if not isinstance(hub, Hub):
            raise TypeError(f"HubResponse: hub must be a Hub, not {hub!r}")
        self.hub = hub
        self.channels = None if channels is None else tuple(channels)
        self.may_read = may_read

    def _start(self, cursor: str | None) -> Start:
        return start_hub(self._options, self.hub, self.channels, self.may_read, cursor)


def cursor(scope: Scope, query_cursor: str | None) -> str | None:
    """The request's resume cursor: its ``Last-Event-ID`` header, or else the query
    parameter ``query_cursor`` (None: the header only)."""
    for key, value in scope.get("headers", ()):
        if key.lower() == b"last-event-id":
            return str(value.decode("latin-1"))
    if query_cursor is None:
        return None
    query = scope.get("query_string", b"").decode("latin-1")
    for name, value in parse_qsl(query, keep_blank_values=True):
        if name == query_cursor:
            return str(value)
    return None


class IncompleteResponseFilter(logging.Filter):
    """A logging filter for ``uvicorn.error`` that drops exactly uvicorn's line "ASGI
    callable returned without completing response." for a response sse_sansio left
    incomplete on purpose (a cut passed on, a slow reader, a stopped connection: which
    sse_sansio logs itself, once, at WARNING), and keeps it for every other response.

    ``logging.getLogger("uvicorn.error").addFilter(IncompleteResponseFilter())``.  It
    recognises the response by a context variable that the adapter sets in the
    request's task, so a middleware that runs the app in a task of its own (Starlette's
    ``BaseHTTPMiddleware``) hides it, and the line is kept.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if not _INCOMPLETE.get() or record.getMessage() != _UVICORN_LINE:
            return True
        _INCOMPLETE.set(False)
        return False
