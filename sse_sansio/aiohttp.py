"""sse_sansio.aiohttp: serve an event stream from an aiohttp handler.

``return await serve(request, source)``, or ``serve_hub(request, hub)`` for a
:class:`~sse_sansio.Hub`'s subscriber: see :doc:`/serving`.  Importing this module
imports aiohttp; ``import sse_sansio`` does not import this module.
"""

from __future__ import annotations

import sse_sansio as _sse_sansio
from sse_sansio._public import publish as _publish
from sse_sansio._serve._aiohttp import serve, serve_hub

__all__ = ["serve", "serve_hub"]

# Every class and function of __all__ is named by this face (sse_sansio/_public.py).
_publish(globals(), __all__, __name__)
# The serving layer's shared names (ServerStream, Relay, ...) are named by the top
# level when it first loads them (sse_sansio/__init__.py); this face makes their objects,
# so it has them loaded now: a stream made here is an sse_sansio.ServerStream in reprs
# and pickles, as one made through the top level is.
_sse_sansio.ServerStream  # noqa: B018
