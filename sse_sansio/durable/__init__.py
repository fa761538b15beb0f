"""Durable Streams from Python: the open protocol for resumable byte streams.

What it does: :class:`DurableStreams` is the protocol (PROTOCOL.md of the
durable-streams project) as decisions, sans-I/O: a :class:`Request` and the caller's
time in, a :class:`Response` or a :class:`LiveRead` (long-poll or SSE, held open by the
caller) out, over a :class:`Store` (:class:`MemoryStore`, or
:class:`~sse_sansio.durable.RedisStore` for several processes).  :func:`asgi_app` serves
it over ASGI, its SSE mode written by :class:`~sse_sansio.ServerStream`.  A producer
in the same process appends with :meth:`DurableStreams.append` (a POST's rules, no
request or response; :class:`AppendRefused` when refused).

What it may import: the top-level vocabulary and the serving layer (``_serve``, for the
SSE response); the standard library at run time; ``redis`` only inside the Redis store.
``import sse_sansio`` does not import this package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sse_sansio._public import publish as _publish

from ._protocol import AppendRefused, DurableStreams, LiveRead, Request, Response, SseEnd
from ._store import (
    AppendOutcome,
    AppendPlan,
    MemoryStore,
    Store,
    StreamMeta,
    decide_append,
    decode_offset,
    encode_offset,
)

if TYPE_CHECKING:
    from ._asgi import DurableApp, asgi_app
    from ._redis import RedisStore

__all__ = [
    "AppendOutcome",
    "AppendPlan",
    "AppendRefused",
    "DurableApp",
    "DurableStreams",
    "LiveRead",
    "MemoryStore",
    "RedisStore",
    "Request",
    "Response",
    "SseEnd",
    "Store",
    "StreamMeta",
    "asgi_app",
    "decide_append",
    "decode_offset",
    "encode_offset",
]

_LATER = {"asgi_app": "._asgi", "DurableApp": "._asgi", "RedisStore": "._redis"}

# Every class and function of __all__ is named by this face (sse_sansio/_public.py), so
# a pickle of a Request, a Response or a StreamMeta names public paths only; the names
# that load later are named by their own modules, as they load.
_publish(globals(), [name for name in __all__ if name not in _LATER], __name__)


def __getattr__(name: str) -> object:
    """The ASGI app (asyncio) and the Redis store load on first use."""
    module = _LATER.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(module, __name__), name)
