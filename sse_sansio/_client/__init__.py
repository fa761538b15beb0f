"""The client layer: what a program that reads a stream over HTTP needs around the parser.

What it does: the response check (is this HTTP response an event stream, and if not,
why not: ``_response.py``), the feeding helpers that drive a ``Connection`` from
a file, a socket or an async byte iterator (``_feeding.py``), and the reconnection
planner with its ``Last-Event-ID`` and ``retry`` bookkeeping (``_reconnect.py``).

What it may import: the top-level vocabulary and the receive layer (``_receive``).
"""
