"""Shared pytest configuration: the core matrix and the hypothesis profiles.

The core matrix.  One pytest run tests both receive cores: the compiled one
(``sse_sansio._receive._core.Connection``, id ``c``) and the pure one
(``sse_sansio._receive._connection.PyConnection``, id ``py``), as markupsafe, multidict and
aiohttp test their twins.  The rule, decided per file:

- A file whose tests check what a connection does with bytes (items, spans, errors,
  state, limits, the opt-in modes), directly or through an entry point that builds one
  (iter_events, aiter_events, the planner, sse_sansio.testing, the command line in
  process), runs every test on both cores: it says so with
  ``pytestmark = pytest.mark.usefixtures("conn_cls")``, or a test takes ``conn_cls``,
  the class of its core.  While a test runs, the fixture routes the package to that
  core: every ``Connection`` name in sse_sansio's modules that holds the process's
  choice, every ``Connection`` name in the tests' modules that holds either core, and
  ``IMPLEMENTATION``, are that core for the test; ``SSE_SANSIO_NO_EXTENSIONS`` is set for
  ``py`` (and cleared for ``c``), so that a subprocess the test starts chooses it too.
- A file whose tests do not depend on the core runs once, on the process's choice: the
  docs, the command line's wording and exits, the serializer, cassettes, replay stores,
  stream health, the llm layers (they take items, whoever parsed them), the response
  checks, typing, examples and live servers run in subprocesses, and the files that
  already compare the two cores themselves (test_cores, test_contract, test_reentrancy,
  test_comment_size, test_core_modes, test_core_limits) or test one pure module from the inside
  (test_modes, test_diagnostics).  tests/package/test_entry_points.py checks that every
  test file is in one group or the other (RUN_ONCE below, or the fixture).
- The parser configurations of tests/helpers.py (``config`` = the fast path off, tiny
  windows) switch module globals of the pure core only: on ``c`` only ``all-on`` runs,
  the others are deselected (they would run the same compiled code again).

Without the extension built, the ``c`` cases are an error if
``SSE_SANSIO_REQUIRE_EXTENSIONS=1`` is set (CI), and otherwise skipped, saying why.  With
it built (the README and CI build it) nothing is skipped.  ``SSE_SANSIO_NO_EXTENSIONS=1``
for the whole run is still honoured (the process chooses the pure core; ``c`` cases
still run the compiled class, which the package would not choose).

The fast run.  A test that starts a live server, a subprocess or a type checker, or
that searches exhaustively (every split of big inputs: hypothesis's "nocover" tests), is
marked ``slow`` (``@pytest.mark.slow``, or ``pytestmark`` for a file that does little
else, with the reason beside it); ``pytest -m "not slow"`` leaves them out and takes
less than half the time of the whole suite, for the edit-test loop.  The README's
command and CI run everything.

The hypothesis profiles: ``dev`` (the default) keeps a local run fast; ``ci`` tries many
more examples.  Pick one with the ``HYPOTHESIS_PROFILE`` environment variable, e.g.
``HYPOTHESIS_PROFILE=ci``.
"""

from __future__ import annotations

import importlib
import os
import sys
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from sse_sansio._receive import _implementation
from sse_sansio._receive._connection import PyConnection

# deadline=None: the machine running the suite is shared, and a slow example is not a
# failure of the property under test.
settings.register_profile("dev", max_examples=200, deadline=None)
settings.register_profile(
    "ci",
    max_examples=2000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))

REQUIRED = os.environ.get("SSE_SANSIO_REQUIRE_EXTENSIONS", "") not in ("", "0")


def _compiled_class() -> type[PyConnection] | None:
    """The compiled Connection, or None where it was not built (an error if required)."""
    try:
        core = importlib.import_module("sse_sansio._receive._core")
    except ImportError:
        if REQUIRED:
            raise
        return None
    compiled: type[PyConnection] = core.Connection
    return compiled


COMPILED = _compiled_class()
#: The core of each id, and the name its connections report as ``implementation``.
CORES: dict[str, tuple[type[PyConnection] | None, str]] = {
    "c": (COMPILED, "compiled"),
    "py": (PyConnection, "python"),
}

#: The test files that run once, on the process's choice, and why (see the docstring).
RUN_ONCE: dict[str, str] = {
    "test_benchmarks": "the benchmark scripts, run on their own terms",
    "test_cassettes": "cassettes record and replay bytes",
    "test_cli": "the command line's wording and subprocess runs",
    "test_cli_exits": "exit statuses and broken pipes",
    "test_cli_huge_input": "the command line's wiring of two options",
    "test_cli_timing": "the command line's clock",
    "test_comment_size": "compares both cores itself",
    "test_contract": "compares both cores itself",
    "test_core_limits": "compares both cores itself (their buffers and limits)",
    "test_core_modes": "compares both cores itself (the opt-in modes' corners)",
    "test_core_module": "the compiled module object itself",
    "test_core_sources": "the C sources, read as text",
    "test_cores": "compares both cores itself",
    "test_decode": "the compiled core's UTF-8 decoder against CPython's",
    "test_diagnostics": "the pure classifiers, called directly",
    "test_docs": "the documentation pages",
    "test_docs_pointers": "the documentation's pointers",
    "test_import_cost": "what import sse_sansio loads, in fresh interpreters",
    "test_editable_install": "type checkers over an editable install",
    "test_example_proxy": "an example run as a program",
    "test_examples": "the examples, run in subprocesses",
    "test_huge_input_examples": "two examples, run as programs",
    "test_huge_memory": "memory of the opt-in modes, in subprocesses",
    "test_integration": "a live server in a subprocess",
    "test_llm": "the llm layer takes items",
    "test_llm_ai_sdk_ui": "the llm layer takes items",
    "test_llm_any_json": "the llm layer takes items",
    "test_llm_merge_linear": "the llm layer takes items",
    "test_llm_real_shapes": "the llm layer takes items (its chunkings go through a Connection)",
    "test_llm_answer": "the llm layer takes items",
    "test_llm_cli": "the command line's --llm wording",
    "test_llm_cli_body": "the command line's non-stream bodies",
    "test_llm_docs": "the llm documentation pages",
    "test_llm_holdback": "the llm layer takes items",
    "test_llm_pipe": "the llm layer takes items",
    "test_llm_stats": "the llm layer takes items",
    "test_llm_otel": "the llm layer takes items",
    "test_llm_guard_gateway": "an example gateway, live on loopback",
    "test_layers": "the package's imports, read from the source",
    "test_public_paths": "the public faces and entry points",
    "test_llm_reframer": "the llm layer takes items",
    "test_llm_registry": "the llm layer's table of dialects takes items",
    "test_llm_robust": "the llm layer takes items",
    "test_llm_rules": "the llm layer takes items",
    "test_llm_translator": "the llm layer takes items",
    "test_llm_usage": "the llm layer takes items",
    "test_memory": "memory, in subprocesses",
    "test_modes": "the pure core's opt-in modes from the inside",
    "test_readme": "the README's commands",
    "test_readme_client": "the README's client against a local server",
    "test_reentrancy": "compares both cores itself",
    "test_replay": "the replay window",
    "test_state_pickles": "pickles of the state machines and handles, which take items",
    "test_replay_redis": "the Redis replay store",
    "test_replay_finished": "the replay window's end",
    "test_replay_redis_finished": "the Redis replay store's end",
    "test_server_stream": "the sending side writes bytes, parses none",
    "test_asgi": "the ASGI adapter's messages, compared as bytes",
    "test_serve_hub": "the adapters' messages, compared as bytes",
    "test_channels_live": "live servers in subprocesses, parsed by the process's choice",
    "test_browser": "Chromium's EventSource is the parser under test, not ours",
    "test_browser_channels": "Chromium's EventSource is the parser under test, not ours",
    "test_response": "the response checks",
    "test_response_shapes": "the response checks",
    "test_resumption_live": "a live server",
    "test_serializer": "the serializer",
    "test_stream_health": "the stream-health state machines",
    "test_stream_health_examples": "the stream-health examples",
    "test_stream_health_gateway": "the stream-health gateway example",
    "test_stream_health_llm": "the stream-health llm layer",
    "test_stream_health_proxy": "the stream-health proxy example",
    "test_typing": "type checking",
    "test_typing_options": "type checking",
    "test_cassette_hostile": "cassettes against hostile input",
    "test_cli_record_safety": "the command line's --record file handling",
    "test_response_hostile": "the response checks",
    "test_health_hostile": "the stream-health state machines",
    "test_resume_wait": "the replay window's wait",
    "test_replay_routing": "the replay window's routing and async memory store",
    "test_replay_redis_appends": "the Redis store's appends",
    "test_replay_redis_channels": "the Redis store's channels",
    "test_mirror": "the mirror store of a process's hub",
    "test_broadcast_live": "examples/broadcast.py live, two processes and Redis",
    "test_example_hostile": "examples run on live sockets",
    "test_gateway_examples": "the gateway examples live; test_relay parses on both cores",
    "test_oss_fuzz_target": "the OSS-Fuzz target compares the two cores itself",
    "test_durable_protocol": "Durable Streams decisions, no parser (issue 44)",
    "test_durable_stores": "Durable Streams storage, no parser (issue 44)",
    "test_durable_asgi": "the Durable Streams ASGI app, in process (issue 44)",
    "test_durable_redis": "the Redis store's own append connection (issue 44)",
    "test_durable_conformance": "the protocol's npm conformance suite, live (issue 44)",
    "test_durable_interop": "Durable Streams read by Python clients, live (issue 44)",
    "test_durable_llm": "examples/durable_llm.py live, with a fake upstream (issue 44)",
    "test_durable_benchmark": "benchmarks/durable.py, run on its own terms (issue 44)",
    "test_durable_append": "Durable Streams' in-process append, no parser (issue 44)",
}


def _core_param(name: str) -> Any:
    if name == "c" and COMPILED is None:
        reason = "the compiled core was not built (no C compiler at install)"
        return pytest.param(name, id=name, marks=pytest.mark.skip(reason=reason))
    return pytest.param(name, id=name)


def _route(monkeypatch: pytest.MonkeyPatch, cls: type[PyConnection], name: str) -> None:
    """Make ``cls`` the package's Connection (and ``name`` its IMPLEMENTATION) for a test."""
    chosen = _implementation.Connection
    cores = {PyConnection, COMPILED}
    for module_name, module in list(sys.modules.items()):
        package = module_name == "sse_sansio" or module_name.startswith("sse_sansio.")
        tests = module_name.startswith("tests.")
        if not isinstance(module, ModuleType) or not (package or tests):
            continue
        if module_name == "sse_sansio._receive._connection":
            continue  # its Connection is the pure class's old name, not a choice
        names = vars(module)
        held = names.get("Connection")
        if held is not None and (held is chosen or (tests and held in cores)):
            monkeypatch.setattr(module, "Connection", cls)
        if package and names.get("IMPLEMENTATION") in ("compiled", "python"):
            monkeypatch.setattr(module, "IMPLEMENTATION", name)
    if name == "python":
        monkeypatch.setenv(_implementation.NO_EXTENSIONS, "1")
    else:
        monkeypatch.delenv(_implementation.NO_EXTENSIONS, raising=False)


@pytest.fixture(params=[_core_param(name) for name in CORES])
def conn_cls(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The Connection class of this case's core (``c`` or ``py``), routed package-wide."""
    cls, name = CORES[request.param]
    assert cls is not None  # the c param is skipped where it was not built
    _route(monkeypatch, cls, name)
    return cls


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect the pure core's parser configurations on the compiled core."""
    kept, dropped = [], []
    for item in items:
        params = getattr(item, "callspec", None)
        params = params.params if params is not None else {}
        if params.get("conn_cls") == "c" and params.get("config", "all-on") != "all-on":
            dropped.append(item)
        else:
            kept.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
