"""The command line (``python -m sse_sansio``, the ``sse-sansio`` script).

What it does: reads a stream from a file, standard input or a cassette, prints one
JSON line per item, exits with a status a script can test (``_run.py``); replays and
records cassettes (``_cassette.py``); parses its arguments (``_main.py``).  Inside it,
the doors run one way: ``_main`` -> ``_cassette`` -> ``_run``.

What it may import: everything below it (the vocabulary, the receive layer, the
testing layer's cassette files, ``sse_sansio.llm``).  Nothing imports it but
``__main__.py`` and the script's entry point.
"""

from ._main import main

__all__ = ["main"]
