# The aiohttp adapter: serve(request, source, **options), over the shared pump.
#
# The response is prepared, then the pump writes through ``StreamResponse.write``
# (which awaits the transport's drain: backpressure).  A clean end is ``write_eof()``;
# a cut, a slow consumer or a client gone closes the transport instead: the body ends
# without its last chunk, and aiohttp's own ``write_eof()`` after the handler returns
# meets the closed transport and says nothing.
#
# aiohttp tells a handler nothing when its client goes away (unless the application
# was made with handler cancellation, which cancels the pump: the source is then
# cancelled or detached as ``on_disconnect`` says).  So the watcher looks at the
# transport every ``_poll(keepalive)`` seconds, at most one keepalive interval, and a
# write to a closed transport fails at once.

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from aiohttp import web

from sse_sansio._resume._replay import ReplayWindow

from ._pump import Options, Policy, Source, response_headers

__all__ = ["serve"]

_POLL = 1.0  # the longest wait between two looks at the transport


async def serve(
    request: web.BaseRequest,
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
) -> web.StreamResponse:
    """Stream ``source`` to the client of ``request``; return the response.

    Behaves as :class:`sse_sansio.asgi.EventStreamResponse` (same options, same
    headers, same ends): ``return await serve(request, source)`` from a handler.
    """
    options = Options(
        keepalive=keepalive,
        first_byte=first_byte,
        padding=padding,
        coalesce_bytes=coalesce_bytes,
        coalesce_delay=coalesce_delay,
        max_buffer=max_buffer,
        window=window,
        on_disconnect=on_disconnect,
    )
    response = web.StreamResponse(status=status_code, headers=response_headers(headers))
    await response.prepare(request)
    poll = _POLL if keepalive is None else min(keepalive, _POLL)

    async def disconnected() -> None:
        while (transport := request.transport) is not None and not transport.is_closing():
            await asyncio.sleep(poll)

    last_event_id = request.headers.get("Last-Event-ID")
    outcome = await options.run(source, last_event_id, response.write, disconnected)
    if outcome == "ended":
        await response.write_eof()
    elif request.transport is not None:
        request.transport.close()
    return response
