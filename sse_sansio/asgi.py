"""sse_sansio.asgi: serve an event stream from any ASGI framework.

:class:`EventStreamResponse` (one source) and :class:`HubResponse` (a
:class:`~sse_sansio.Hub`'s subscriber) are plain ASGI applications, and Starlette
``Response`` objects where Starlette is installed: return them from a Starlette endpoint
or a FastAPI path operation.  See :doc:`/serving` and :doc:`/channels`.
``import sse_sansio`` does not import this module.
"""

from __future__ import annotations

import sse_sansio as _sse_sansio
from sse_sansio._public import publish as _publish
from sse_sansio._serve._asgi import EventStreamResponse, HubResponse, IncompleteResponseFilter

__all__ = ["EventStreamResponse", "HubResponse", "IncompleteResponseFilter"]

# Every class and function of __all__ is named by this face (sse_sansio/_public.py).
_publish(globals(), __all__, __name__)
# The serving layer's shared names (ServerStream, Relay, ...) are named by the top
# level when it first loads them (sse_sansio/__init__.py); this face makes their objects,
# so it has them loaded now: a stream made here is an sse_sansio.ServerStream in reprs
# and pickles, as one made through the top level is.
_sse_sansio.ServerStream  # noqa: B018
