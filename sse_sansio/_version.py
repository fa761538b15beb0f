"""The package's version, in the one place it is written.

pyproject.toml reads it from here (``attr = "sse_sansio._version.__version__"``), and so
do the command line's ``--version`` and the docs.  A literal rather than
importlib.metadata, which costs milliseconds at import.
"""

__version__ = "0.1.0"
