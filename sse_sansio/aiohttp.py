"""sse_sansio.aiohttp: serve an event stream from an aiohttp handler.

``return await serve(request, source)``: see :doc:`/serving`.  Importing this module
imports aiohttp; ``import sse_sansio`` does not import this module.
"""

from __future__ import annotations

from sse_sansio._public import publish as _publish
from sse_sansio._serve._aiohttp import serve

__all__ = ["serve"]

# Every class and function of __all__ is named by this face (sse_sansio/_public.py).
_publish(globals(), __all__, __name__)
