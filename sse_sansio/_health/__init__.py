"""The stream-health layer: clocks around a stream, on the caller's clock.

What it does: the ``Watchdog`` (first-byte, idle and progress deadlines for a stream
being read), the ``KeepalivePlanner`` (when a server owes its client a comment) and the
``Coalescer`` (gathering small frames into fewer writes).  No timers of its own: each
takes ``now`` from the caller and answers with a verdict or a deadline.

What it may import: the top-level vocabulary (``_clock``, ``_events``, ``_serializer``).
"""
