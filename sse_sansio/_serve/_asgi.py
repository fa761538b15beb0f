# The ASGI adapter: EventStreamResponse, a plain ASGI app that is also a Starlette
# Response where Starlette is installed (so a Starlette endpoint or a FastAPI path
# operation can return it), over the shared pump.
#
# ASGI has no message that aborts a response, so a cut (and a slow consumer, and a
# client already gone) is the app returning without its final ``more_body=False``
# message: the server then closes the connection without the terminating chunk, which
# every HTTP client reports as an incomplete body.  Raising instead would do the same
# but make the server log a traceback per cut.  Uvicorn still logs one line of its own
# ("ASGI callable returned without completing response").
#
# A client's disconnect is ASGI's ``http.disconnect`` message: the pump's watcher
# awaits ``receive()`` until it comes, so it is noticed at once.

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any

from sse_sansio._resume._replay import ReplayWindow

from ._pump import Options, Policy, Source, response_headers

try:
    from starlette.responses import Response as _Base
except ImportError:  # a plain ASGI app: its tests load this module with Starlette hidden
    _Base = object  # type: ignore[misc,assignment]

__all__ = ["EventStreamResponse"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class EventStreamResponse(_Base):
    """Stream ``source`` as ``text/event-stream``: an ASGI app, and a Starlette
    ``Response`` where Starlette is installed.

    ``source`` is an async (or sync) iterable of :class:`~sse_sansio.Event`,
    :class:`~sse_sansio.Comment` or serialized bytes.  The response writes keepalive
    comments while the source is silent (without cancelling its pending read),
    applies the transport's backpressure, and closes the connection of a client that
    falls ``max_buffer`` bytes behind.  A client that disconnects is noticed at once;
    its source is then cancelled (``on_disconnect="cancel"``) or left to run to its end
    into the window (``"detach"``).  With a ``window``, a request's ``Last-Event-ID`` is
    answered with a replay first, and one after the producer finished ends right after.

    A source that ends ends the response; one that raises :class:`~sse_sansio.StreamCut`
    (logged in one line) or any other exception (logged with its traceback) cuts it:
    the body stops without its proper end, so the client knows it is incomplete.

    The options are :class:`~sse_sansio.ServerStream`'s, checked here.  ``headers`` are
    sent after ``Content-Type: text/event-stream; charset=utf-8``, ``Cache-Control:
    no-cache`` and ``X-Accel-Buffering: no``, and replace any of those they name.
    """

    def __init__(
        self,
        source: Source,
        *,
        keepalive: float | None = 15.0,
        first_byte: float | None = None,
        padding: int = 0,
        coalesce_bytes: int = 0,
        coalesce_delay: float = 0.0,
        max_buffer: int = 1048576,
        window: ReplayWindow | None = None,
        on_disconnect: Policy = "cancel",
        headers: Mapping[str, str] | None = None,
        status_code: int = 200,
    ) -> None:
        self._options = Options(
            keepalive=keepalive,
            first_byte=first_byte,
            padding=padding,
            coalesce_bytes=coalesce_bytes,
            coalesce_delay=coalesce_delay,
            max_buffer=max_buffer,
            window=window,
            on_disconnect=on_disconnect,
        )
        self.source = source
        self.status_code = status_code
        #: Starlette reads and FastAPI sets it: run after the stream, as Starlette does.
        self.background: Any = None
        self.raw_headers = [
            (name.lower().encode("latin-1"), value.encode("latin-1"))
            for name, value in response_headers(headers)
        ]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def write(data: bytes) -> None:
            await send({"type": "http.response.body", "body": data, "more_body": True})

        async def disconnected() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass

        await send(
            {"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers}
        )
        last_event_id = _header(scope, b"last-event-id")
        outcome = await self._options.run(self.source, last_event_id, write, disconnected)
        if outcome == "ended":
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        if self.background is not None:
            await self.background()


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return str(value.decode("latin-1"))
    return None
