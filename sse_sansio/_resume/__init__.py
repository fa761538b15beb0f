"""The resumption layer: a server's replay window and the stores behind it.

What it does: ``ReplayWindow`` and ``AsyncReplayWindow`` give each sent event an ID
and replay what a reconnecting client missed (``_replay.py``); the store protocols and
the in-process ``MemoryStore`` keep the events (``_replay_store.py``).  Stores in other
engines (``sse_sansio.stores``) implement the same protocols.

What it may import: the top-level vocabulary (``_errors``, ``_events``, ``_serializer``).
"""
