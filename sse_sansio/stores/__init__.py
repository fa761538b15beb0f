"""sse_sansio.stores: replay-window stores outside the process.

:class:`RedisStreamStore` (redis-py's ``redis.Redis``) and :class:`AsyncRedisStreamStore`
(``redis.asyncio.Redis``) keep a stream's events in a Redis stream, so that every server
process resumes every client; :class:`MirrorStore` keeps a process's copy of the newest
of them, fed by :meth:`AsyncRedisStreamStore.follow`, for that process's ``Hub``.
Install the client with ``pip install "sse_sansio[redis]"``; this package imports
nothing of redis-py itself (you pass the client), and ``import sse_sansio`` never
imports this package.
"""

from __future__ import annotations

from sse_sansio._public import publish as _publish
from sse_sansio._resume._replay_store import MirrorStore

from ._redis import AsyncRedisStreamStore, RedisStreamStore

__all__ = ["AsyncRedisStreamStore", "MirrorStore", "RedisStreamStore"]


# Every class and function of __all__ is named by this face (sse_sansio/_public.py).
_publish(globals(), __all__, __name__)
