"""The receive layer: bytes in, typed items out (the parser).

What it does: UTF-8 decoding that survives any split, line splitting (CRLF, LF, CR),
field and event assembly by the WHATWG rules, the opt-in modes (pieces, raw bytes,
diagnostics, oversize skipping), in two cores with one behaviour: the pure one
(``_connection.py``, ``_interpret.py``, ``_lines.py``, ``_modes.py``) and the compiled
one (``_core.c`` and its ``_core_*.h`` headers, built as ``sse_sansio._receive._core``,
beside its Python twin as aiohttp keeps its C WebSocket reader).  ``_implementation.py``
is the only module that chooses between them.

What it may import: the standard library and the top-level vocabulary
(``sse_sansio._errors``, ``_events``, ``_need_data``, ``_excerpt``); no other layer.
Every other layer is built on it.
"""
