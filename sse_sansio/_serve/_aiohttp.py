# The aiohttp adapter: serve(request, source, **options) and serve_hub(request, hub,
# **options), over the shared pump.
#
# The response is prepared, then the pump writes through ``StreamResponse.write``
# (which awaits the transport's drain: backpressure).  A clean end is ``write_eof()``;
# a cut, a slow consumer, a client gone or a connection stopped (``max_lifetime``, a
# shutdown) closes the transport instead: the body ends without its last chunk, and
# aiohttp's own ``write_eof()`` after the handler returns meets the closed transport and
# says nothing.  A finished stream with nothing left to send is answered 204, which
# stops an EventSource.
#
# aiohttp tells a handler nothing when its client goes away (unless the application
# was made with handler cancellation, which cancels the pump: the source is then
# cancelled or detached as ``on_disconnect`` says).  So the handler's own task (in the
# pump's run(), no task of its own) looks at the transport every ``_poll(keepalive)``
# seconds, at most one keepalive interval, and a write to a closed transport fails at
# once.  On shutdown (``web.run_app``'s SIGINT or SIGTERM) every open response is
# stopped first, as under uvicorn (the pump's watch_shutdown()), so that aiohttp's
# graceful wait does not wait for streams.

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING

from aiohttp import web

from ._hub import Hub, MayRead
from ._options import Options
from ._pump import Source, Start, response_headers, start_hub, start_source, watch_shutdown

if TYPE_CHECKING:
    from typing import Unpack

    from ._options import HubOptions, SourceOptions

__all__ = ["serve", "serve_hub"]

_POLL = 1.0  # the longest wait between two looks at the transport


async def serve(
    request: web.BaseRequest, source: Source, **options: Unpack[SourceOptions]
) -> web.StreamResponse:
    """Stream ``source`` to the client of ``request``; return the response.

    Behaves as :class:`sse_sansio.asgi.EventStreamResponse` (same options, same
    headers, same cursor, same ends): ``return await serve(request, source)`` from a
    handler.
    """
    checked = Options.of("serve", options)
    return await _respond(request, checked, lambda cursor: start_source(checked, source, cursor))


async def serve_hub(
    request: web.BaseRequest,
    hub: Hub,
    *,
    channels: Iterable[str] | None = None,
    may_read: MayRead | None = None,
    **options: Unpack[HubOptions],
) -> web.StreamResponse:
    """Serve a new subscriber of ``hub`` to the client of ``request``; return the
    response.  Behaves as :class:`sse_sansio.asgi.HubResponse` (same options)."""
    if not isinstance(hub, Hub):
        raise TypeError(f"serve_hub: hub must be a Hub, not {hub!r}")
    checked = Options.of("serve_hub", options, hub=True)
    names = None if channels is None else tuple(channels)
    return await _respond(
        request, checked, lambda cursor: start_hub(checked, hub, names, may_read, cursor)
    )


async def _respond(
    request: web.BaseRequest, options: Options, begin: Callable[[str | None], Start]
) -> web.StreamResponse:
    watch_shutdown()
    start = begin(_cursor(request, options.query_cursor))
    headers = response_headers(options.headers)
    if start.status == 204:
        return web.Response(status=204, headers=headers)
    response = web.StreamResponse(status=start.status, headers=headers)
    await response.prepare(request)
    poll = _POLL if options.keepalive is None else min(options.keepalive, _POLL)

    def listen() -> Awaitable[None]:
        return asyncio.sleep(poll)

    def gone(_: None) -> bool:
        transport = request.transport
        return transport is None or transport.is_closing()

    outcome = await start.pump.run(response.write, listen, gone)
    if outcome == "ended":
        await response.write_eof()
    elif request.transport is not None:
        request.transport.close()
    return response


def _cursor(request: web.BaseRequest, query_cursor: str | None) -> str | None:
    """The ``Last-Event-ID`` header, or else the query parameter ``query_cursor``."""
    header = request.headers.get("Last-Event-ID")
    if header is not None or query_cursor is None:
        return header
    return request.query.get(query_cursor)
