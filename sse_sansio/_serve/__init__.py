"""The serving layer: one client's sending state, and the adapters that write it.

What it does: ``ServerStream`` (``_server_stream.py``) is the sending side of one
response, sans-I/O on the caller's clock, after h2's ``data_to_send()``: queue items,
ask what to write now and when to ask again.  ``_pump.py`` is the one asyncio task
structure the framework adapters share (read the source, write what the stream hands
out, keepalives, backpressure, disconnects); ``_asgi.py`` (``sse_sansio.asgi``) and
``_aiohttp.py`` (``sse_sansio.aiohttp``) fit it to their frameworks, importing the
framework only inside themselves, so that ``import sse_sansio`` imports none.
``_hub.py`` (``sse_sansio.Hub``) fans one producer's items out to many ServerStreams,
each serialized once, with a policy for the subscriber that falls behind.

What it may import: the top-level vocabulary, ``_health`` (the keepalive planner) and
``_resume`` (the replay window); never the parser (``_receive``), ``llm``, ``_client``
or ``_cli``.  ``Relay``, the source that parses and judges an upstream for a gateway,
lives a floor above, in ``_gateway``.
"""
