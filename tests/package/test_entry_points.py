"""Every entry point of the package parses with the core the process chose.

sse_sansio._receive._implementation is the only module that chooses (the compiled core when it
was built and SSE_SANSIO_NO_EXTENSIONS is not set, else the pure PyConnection); every
module that builds a connection imports its choice.  Each entry-point test here runs
one entry point (iter_events, aiter_events, the planner's connection() and events(),
its last_event_id check, sse_sansio.testing, the command line, which sse_sansio.llm's
--llm mode goes through) on both cores (the ``conn_cls`` fixture of tests/conftest.py
routes the package to one), with a spy in place of the module's Connection that records
the connections it builds, and asserts which core they report.  Without the fixture,
the process's own choice: under SSE_SANSIO_REQUIRE_EXTENSIONS=1 the compiled core, under
SSE_SANSIO_NO_EXTENSIONS=1 the pure one, and every module holds it.  The last test
checks that each test file says whether it runs on both cores or once.
"""

from __future__ import annotations

import ast
import asyncio
import io
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import sse_sansio
from sse_sansio import testing
from sse_sansio._cli import _run as _cli
from sse_sansio._client import _feeding, _reconnect
from sse_sansio._gateway import _relay
from sse_sansio._receive import _implementation
from sse_sansio._receive._connection import PyConnection
from sse_sansio.testing import _redaction
from tests.conftest import RUN_ONCE

PACKAGE = Path(sse_sansio.__file__).parent
TESTS = Path(__file__).resolve().parents[1]
STREAM = b"id: 7\ndata: a\n\n: c\n\n"
if os.environ.get("SSE_SANSIO_NO_EXTENSIONS", "") not in ("", "0"):
    EXPECTED = "python"
elif os.environ.get("SSE_SANSIO_REQUIRE_EXTENSIONS", "") not in ("", "0"):
    EXPECTED = "compiled"
else:
    EXPECTED = _implementation.IMPLEMENTATION  # a plain run: whatever was built


def test_the_process_chose_the_expected_core() -> None:
    assert sse_sansio.IMPLEMENTATION == EXPECTED
    assert sse_sansio.Connection().implementation == EXPECTED
    assert (sse_sansio.Connection is PyConnection) == (EXPECTED == "python")


@pytest.mark.parametrize("module", [_feeding, _reconnect, testing, _cli, _redaction, _relay])
def test_every_module_holds_the_process_choice(module: ModuleType) -> None:
    # What the conn_cls fixture routes: a module holding another class would not be.
    assert module.Connection is _implementation.Connection is sse_sansio.Connection


@pytest.fixture
def expected(conn_cls: type[PyConnection]) -> str:
    """The ``implementation`` the routed core's connections report."""
    return "python" if conn_cls is PyConnection else "compiled"


@pytest.fixture
def built(
    monkeypatch: pytest.MonkeyPatch, conn_cls: type[PyConnection]
) -> Callable[[ModuleType], list[Any]]:
    """Spy on the connections a module builds: returns the list they go into."""

    def spy_on(module: ModuleType) -> list[Any]:
        real = module.Connection
        assert real is conn_cls is sse_sansio.Connection  # routed to this case's core
        connections: list[Any] = []

        def spy(**options: Any) -> Any:
            conn = real(**options)
            connections.append(conn)
            return conn

        monkeypatch.setattr(module, "Connection", spy)
        return connections

    return spy_on


def _cores(connections: list[Any]) -> set[str]:
    assert connections, "the entry point built no connection"
    return {conn.implementation for conn in connections}


def test_iter_events(built: Callable[[ModuleType], list[Any]], expected: str) -> None:
    connections = built(_feeding)
    items = list(sse_sansio.iter_events([STREAM]))
    assert len(items) == 2
    assert _cores(connections) == {expected}


def test_aiter_events(built: Callable[[ModuleType], list[Any]], expected: str) -> None:
    connections = built(_feeding)

    async def chunks() -> AsyncIterator[bytes]:
        yield STREAM

    async def collect() -> list[object]:
        return [item async for item in sse_sansio.aiter_events(chunks())]

    assert len(asyncio.run(collect())) == 2
    assert _cores(connections) == {expected}


def test_the_planner(built: Callable[[ModuleType], list[Any]], expected: str) -> None:
    connections = built(_reconnect)
    plan = sse_sansio.ReconnectPlanner(last_event_id="6")  # its check builds one
    assert _cores(connections) == {expected}
    connections.clear()
    plan.start(0.0)
    conn = plan.connection()
    assert conn.last_event_id == "6"
    assert _cores(connections) == {expected}
    plan = sse_sansio.ReconnectPlanner()
    plan.start(0.0)
    connections.clear()
    assert len(list(plan.events([STREAM]))) == 2
    assert _cores(connections) == {expected}


def test_the_planner_async(built: Callable[[ModuleType], list[Any]], expected: str) -> None:
    connections = built(_reconnect)
    plan = sse_sansio.ReconnectPlanner()
    plan.start(0.0)
    connections.clear()

    async def chunks() -> AsyncIterator[bytes]:
        yield STREAM

    async def collect() -> list[object]:
        return [item async for item in plan.aevents(chunks())]

    assert len(asyncio.run(collect())) == 2
    assert _cores(connections) == {expected}


def test_testing_helpers(built: Callable[[ModuleType], list[Any]], expected: str) -> None:
    connections = built(testing)
    assert len(testing.parse(STREAM)) == 3  # with the EndOfStream
    assert _cores(connections) == {expected}
    connections.clear()
    testing.assert_chunking_invariant(STREAM, seeds=1, max_every_split=8)
    assert _cores(connections) == {expected}


@pytest.mark.parametrize("llm", [None, "openai-chat"])
def test_the_command_line(
    built: Callable[[ModuleType], list[Any]], llm: str | None, expected: str
) -> None:
    connections = built(_cli)
    out = io.StringIO()
    _cli.run(io.BytesIO(STREAM), out, chunk_size=4, llm=llm)
    assert out.getvalue()
    assert _cores(connections) == {expected}


@pytest.mark.slow
def test_a_subprocess_runs_the_routed_core(expected: str) -> None:
    # The fixture sets SSE_SANSIO_NO_EXTENSIONS for py (and clears it for c), so that a
    # command line the test starts chooses the same core.
    out = subprocess.run(
        [sys.executable, "-m", "sse_sansio", "--version"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(PACKAGE.parent)},
    )
    assert out.stdout.endswith(f"({expected} core)\n"), out.stdout


def _builds_the_pure_class(tree: ast.Module) -> list[int]:
    """Lines importing the pure class (or its module) outside ``if TYPE_CHECKING:``."""
    typing_only = {
        id(node)
        for stmt in ast.walk(tree)
        if isinstance(stmt, ast.If) and ast.unparse(stmt.test) == "TYPE_CHECKING"
        for inner in stmt.body
        for node in ast.walk(inner)
    }
    lines = []
    for node in ast.walk(tree):
        if id(node) in typing_only or not isinstance(node, ast.ImportFrom):
            continue
        names = {alias.name for alias in node.names}
        module = (node.module or "").rsplit(".", 1)[-1]
        if (module == "_connection" and names & {"Connection", "PyConnection"}) or (
            node.module is None and "_connection" in names
        ):
            lines.append(node.lineno)
    return lines


def test_only_the_implementation_module_chooses() -> None:
    offenders = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        lines = _builds_the_pure_class(ast.parse(path.read_text(encoding="utf-8")))
        if lines and path.name != "_implementation.py":
            offenders[str(path.relative_to(PACKAGE))] = lines
    assert offenders == {}
    # ...and the scan sees such an import where there is one.
    assert _builds_the_pure_class(ast.parse("from ._connection import Connection")) == [1]
    assert _builds_the_pure_class(ast.parse("from . import _connection")) == [1]


def test_every_test_file_says_which_cores_it_runs_on() -> None:
    # tests/conftest.py's rule: a file runs on both cores (the conn_cls fixture) or is
    # listed as running once, with a reason; never both, never neither.
    both, once = set(), set(RUN_ONCE)
    for path in sorted(TESTS.rglob("test_*.py")):
        if 'usefixtures("conn_cls")' in path.read_text(encoding="utf-8"):
            both.add(path.stem)
        elif path.stem not in once and "conn_cls" in path.read_text(encoding="utf-8"):
            both.add(path.stem)  # its tests take the fixture, or parametrize their own
    files = {path.stem for path in TESTS.rglob("test_*.py")}
    assert both & once == set()
    assert files - both - once == set()
    assert once - files == set()  # no stale entries
