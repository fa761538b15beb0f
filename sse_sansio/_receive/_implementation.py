# Which receive core this process uses: the compiled one (_core.c) or the pure one.
#
# Both implement the same Connection, item for item, error for error (tests/receive/test_cores.py
# and the fuzzers compare them under every chunking).  The pure core, _connection.py, is
# the readable reference and the fallback: it is used on interpreters other than
# CPython (PyPy runs it fast), where the extension was not built (no compiler when the
# package was installed), and when SSE_SANSIO_NO_EXTENSIONS is set to anything but ""
# or "0" (the convention of aiohttp, yarl and multidict).  IMPLEMENTATION says which one
# is in use, so that a slow install is never silent: ``sse-sansio --version`` and the
# benchmark report print it.
#
# This is the only module that chooses.  The pure class is _connection.PyConnection;
# every module that builds a connection (_feeding, _reconnect, testing, _cli) imports
# Connection from here, so that iter_events(), the planner and the rest parse with the
# core the process chose (tests/package/test_entry_points.py checks each).  This module
# imports _connection and the extension only, so it closes no import circle.

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Final, Literal

from . import _connection

__all__ = ["IMPLEMENTATION", "Connection", "select"]

#: The environment variable that asks for the pure core (at run time and at build time).
NO_EXTENSIONS: Final = "SSE_SANSIO_NO_EXTENSIONS"


def select(
    environ: Mapping[str, str] = os.environ,
    implementation: str = sys.implementation.name,
    import_module: Callable[[str], ModuleType] = importlib.import_module,
) -> tuple[type[_connection.PyConnection], Literal["compiled", "python"]]:
    """The Connection class to use and its name, ``"compiled"`` or ``"python"``."""
    if environ.get(NO_EXTENSIONS, "") not in ("", "0") or implementation != "cpython":
        return _connection.PyConnection, "python"
    try:
        core = import_module("sse_sansio._receive._core")
    except ImportError:
        return _connection.PyConnection, "python"  # built without a compiler
    compiled: type[_connection.PyConnection] = core.Connection
    return compiled, "compiled"


if TYPE_CHECKING:
    # Type checkers see the reference: the compiled class has the same API.
    from ._connection import PyConnection as Connection

    IMPLEMENTATION: Literal["compiled", "python"]
else:
    Connection, IMPLEMENTATION = select()
