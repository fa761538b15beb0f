"""The compiled core as a module: multi-phase initialization and per-module state.

_core.c keeps what it looks up on the Python side (the item classes, the exceptions,
the contract) in its module state, not in C globals, and builds its Connection type
per module object (PEP 489, PEP 573).  So a second module object made from the same
extension is independent of the first, a connection keeps its module's state alive
after the module is gone, a subclass made in Python finds the state, and a
subinterpreter that shares the main GIL can import and use the core.
"""

from __future__ import annotations

import gc
import importlib.util
import os
import subprocess
import sys
import textwrap
from types import ModuleType
from typing import Any

import pytest

from sse_sansio import Comment, EndOfStream, Event
from tests.helpers.cores import CORE, needs_core

pytestmark = needs_core

STREAM = b": hi\ndata: one\nid: 7\n\ndata: two\n\n"


def _drain(conn: Any) -> list[Any]:
    conn.receive_data(STREAM)
    conn.receive_data(b"")
    items = []
    while not isinstance(item := conn.next_event(), EndOfStream):
        items.append(item)
    return items


def _fresh_module() -> ModuleType:
    """A second module object executed from the same extension file."""
    assert CORE is not None
    assert CORE.__spec__ is not None
    spec = importlib.util.spec_from_file_location("sse_sansio._receive._core", CORE.__spec__.origin)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_items_come_from_the_python_side() -> None:
    assert CORE is not None
    items = _drain(CORE.Connection())
    assert [type(item) for item in items] == [Comment, Event, Event]
    assert (items[1].type, items[1].data, items[1].id) == ("message", "one", "7")


def test_a_second_module_object_has_its_own_type_and_works_alone() -> None:
    assert CORE is not None
    other = _fresh_module()
    assert other.Connection is not CORE.Connection
    assert other.Connection.__module__ == "sse_sansio._receive._core"
    conn = other.Connection(max_event_size=100)
    assert _drain(conn) == _drain(CORE.Connection())
    assert conn.implementation == "compiled"


def test_a_connection_outlives_its_module() -> None:
    conn = _fresh_module().Connection()  # nothing else refers to that module now
    gc.collect()
    last = _drain(conn)[2]
    assert isinstance(last, Event)
    assert (last.data, last.id) == ("two", "7")


def test_a_subclass_made_in_python_finds_the_state() -> None:
    assert CORE is not None

    class Traced(CORE.Connection):  # type: ignore[misc, name-defined]
        pass

    conn = Traced(errors="replace")
    assert _drain(conn)[1].data == "one"
    assert "Connection" in (Traced.__doc__ or CORE.Connection.__doc__)


def test_the_docstrings_and_signature_are_the_pure_cores() -> None:
    assert CORE is not None
    import inspect

    from sse_sansio._receive._connection import PyConnection

    assert CORE.Connection.__doc__ == PyConnection.__doc__
    assert CORE.Connection.next_event.__doc__ == PyConnection.next_event.__doc__
    parameters = inspect.signature(CORE.Connection).parameters
    assert list(parameters)[:2] == ["errors", "last_event_id"]


@pytest.mark.slow
def test_a_subinterpreter_imports_and_parses() -> None:
    # A fresh process, so that the subinterpreter's import of the extension is its
    # first in that process's interpreters but the main one.
    code = textwrap.dedent(
        """
        import _testcapi, os, sys
        r, w = os.pipe()
        script = f'''
        import os, sse_sansio._receive._core as core
        conn = core.Connection()
        conn.receive_data(b"data: inside\\\\n\\\\n")
        os.write({w}, repr(conn.next_event()).encode())
        '''
        assert _testcapi.run_in_subinterp(script) == 0
        os.close(w)
        print(os.read(r, 1000).decode())
        """
    )
    env = {**os.environ, "SSE_SANSIO_NO_EXTENSIONS": ""}
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join([root, env.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Event(type='message', data='inside', id='', retry=None)"


@pytest.mark.parametrize("calls", [1, 3])
def test_modules_made_and_dropped_leave_the_first_working(calls: int) -> None:
    assert CORE is not None
    for _ in range(calls):
        _fresh_module()
        gc.collect()
    assert _drain(CORE.Connection())[1].id == "7"
