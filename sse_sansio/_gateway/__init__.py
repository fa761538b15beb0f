"""The gateway layer: an upstream stream relayed to a served one.

What it does: ``_relay.py`` (``sse_sansio.Relay``) is the source a gateway or a proxy
serves: an upstream's bytes parsed (``_receive``), watched (``_health``'s Watchdog) and
judged (``llm``'s Tracker, Progress and Reframer), handed on as items to
``sse_sansio.asgi.EventStreamResponse`` or ``sse_sansio.aiohttp``'s adapter.  The
pipeline's other stages, ``llm.Translator.pipe`` and ``llm.HoldBack.pipe``, stay with
the classes they belong to in ``llm``: they read any async iterable of items and know
nothing of a relay, so they need no room above ``llm`` (issue 42, item 9).

Why a layer of its own: the serving layer writes streams and knows nothing of parsing
or of LLM dialects; the relay needs both.  Kept here, above ``_receive``, ``_health``
and ``llm`` and beside ``_serve`` (a relay is handed to a response, it never makes
one), it lets ``_serve`` import neither the parser nor ``llm``.

What it may import: the top-level vocabulary, ``_receive``, ``_health`` and ``llm``;
never ``_serve`` (a relay is a source, not a response), ``_client`` or ``_cli``.
"""
