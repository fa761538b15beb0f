"""A Durable Streams server: ``uvicorn --app-dir examples durable_streams_server:app``.

Streams live under ``/v1/stream/``: create one with ``PUT``, append with ``POST``, read
with ``GET`` (catch-up, ``live=long-poll`` or ``live=sse``).  With ``DURABLE_REDIS_URL``
set (``redis://127.0.0.1:6379/0``) they live in Redis, shared by every process serving
that URL; otherwise in this process's memory.  docs/durable.rst tells the rest.

For speed, install uvloop and httptools (``pip install "uvicorn[standard]"``: uvicorn
picks them when installed) and leave the access log off, as benchmarks/durable.py does::

    export DURABLE_REDIS_URL=redis://127.0.0.1:6379/0
    uvicorn --app-dir examples durable_streams_server:app --no-access-log

On plain asyncio and h11 an append costs the server about twice the CPU time.
"""

from __future__ import annotations

import os

from sse_sansio.durable import DurableApp, MemoryStore, Store, asgi_app


def make_store() -> Store:
    """The store ``DURABLE_REDIS_URL`` names, or one in memory."""
    url = os.environ.get("DURABLE_REDIS_URL")
    if not url:
        return MemoryStore()
    from sse_sansio.durable import RedisStore

    store: Store = RedisStore.from_url(url)
    return store


#: DURABLE_LONG_POLL_TIMEOUT: seconds a long-poll waits before its 204 (30 by default;
#: the conformance run sets a short one, as the suite's own runs do).
app: DurableApp = asgi_app(
    make_store(), long_poll_timeout=float(os.environ.get("DURABLE_LONG_POLL_TIMEOUT", "30"))
)
