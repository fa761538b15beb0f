"""What ``import sse_sansio`` costs, told by the modules it loads (issue 36, items 6, 10).

No clock here: a wall-clock bound fails on a loaded machine and proves nothing on an
idle one.  The cost of an import is the modules it loads, so each test starts a fresh
interpreter, imports the package and reads ``sys.modules`` before and after.  The
figures (``python -X importtime``, against h11) are in the issue's closing note.

The rule: besides its own modules, ``import sse_sansio`` loads only the standard
library's modules named in ALLOWED, each for a reason written beside it; anything else
(email, asyncio, json, socket, random, a web framework, Redis, the llm layer) is loaded
where it is first used.  The subpackages with names of their own (llm, testing,
stores) are attributes of the package, loaded on first use.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import sse_sansio

ROOT = Path(__file__).resolve().parents[2]

#: The standard library modules ``import sse_sansio`` may load (by top-level name; the C
#: accelerators of these, ``_sre``, ``_functools`` and the like, come with them).
ALLOWED: dict[str, str] = {
    # What h11, the yardstick of issue 36, loads too: the cost of a typed, dataclass-
    # based package on CPython, shared by any library of its kind.
    "typing": "annotations that are evaluated (Protocol, NamedTuple, overload, Generic)",
    "re": "the line splitter and the field checks of the receive core",
    "enum": "NeedData, NEED_DATA's class, and re's flags",
    "dataclasses": "the value types loaded at import: ResponseCheck, StoreSnapshot",
    "inspect": "dataclasses imports it; _public.py tells classes from functions",
    "ast": "inspect imports it",
    "dis": "inspect imports it",
    "opcode": "dis imports it",
    "token": "inspect imports it (through tokenize)",
    "tokenize": "inspect imports it (through linecache)",
    "linecache": "inspect imports it",
    "collections": "deque for the chunk queue and the replay store; the abcs",
    "contextlib": "typing imports it",
    "functools": "typing and re import it; the core's cached helpers",
    "itertools": "chain, islice, accumulate in the core's fast paths",
    "operator": "itemgetter and friends in the fast path for uniform blocks",
    "keyword": "collections.namedtuple (under typing.NamedTuple) checks names",
    "reprlib": "collections imports it",
    "copy": "dataclasses imports it",
    "copyreg": "re imports it",
    "weakref": "copy imports it",
    "types": "ModuleType, the compiled core's type in _implementation.py",
    "warnings": "typing and re import it",
    "importlib": "the choice of the compiled core, and the subpackages loaded on first use",
    # Ours alone, and light: a module of compiler flags.
    "__future__": "from __future__ import annotations, in every module",
}

#: Never at import time, whatever ALLOWED says later: each is heavy, or brings I/O or a
#: framework, and each is imported where it is first needed.
FORBIDDEN = (
    "email",  # once a quarter of the import, for a type alias (_client/_response.py)
    "asyncio",  # the relay's reads and the async replay store's waits
    "json",  # a body that is not a stream (_excerpt.py), the llm layer
    "socket",  # the planner's test for a DNS error
    "random",  # the planner's jitter
    "secrets",  # the replay store's token is os.urandom(), as secrets' is
    "http",
    "urllib",
    "ssl",
    "logging",
    "threading",
    "subprocess",
    # Our own layers loaded on first use: the planner, stream health, the replay
    # window and serving (sse_sansio/__init__.py, _LAYERS).
    "sse_sansio._client._reconnect",
    "sse_sansio._health",
    "sse_sansio._resume._replay",
    "sse_sansio._serve",
    "sse_sansio.llm",
    "sse_sansio.testing",
    "sse_sansio.stores",
    "sse_sansio.asgi",
    "sse_sansio.aiohttp",
    "starlette",
    "aiohttp",
    "httpx",
    "redis",
)

_LOADED = """
import sys
before = set(sys.modules)
import sse_sansio
print("\\n".join(sorted(set(sys.modules) - before)))
"""


def _fresh(code: str, *, no_extensions: bool = False) -> subprocess.CompletedProcess[str]:
    env = {"PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
    if no_extensions:
        env["SSE_SANSIO_NO_EXTENSIONS"] = "1"
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        env=env,
        timeout=120,
    )


def _loaded(*, no_extensions: bool = False) -> set[str]:
    result = _fresh(_LOADED, no_extensions=no_extensions)
    assert result.returncode == 0, result.stderr
    return set(result.stdout.split())


@pytest.mark.slow  # a fresh interpreter
@pytest.mark.parametrize("no_extensions", [False, True], ids=["chosen-core", "pure-core"])
def test_import_loads_only_the_allowed_standard_modules(no_extensions: bool) -> None:
    loaded = _loaded(no_extensions=no_extensions)
    assert "sse_sansio._receive._connection" in loaded  # the scan sees the import...
    for name in FORBIDDEN:
        assert not {m for m in loaded if m == name or m.startswith(f"{name}.")}, name
    others = {m.partition(".")[0] for m in loaded if not m.startswith("sse_sansio")}
    # ...and every other module it loaded is a justified one (or its C accelerator).
    assert {m for m in others if not m.startswith("_")} <= set(ALLOWED), others - set(ALLOWED)
    stdlib = sys.stdlib_module_names
    assert others <= stdlib, others - stdlib  # no third-party module at all


@pytest.mark.slow  # a fresh interpreter
def test_the_subpackages_load_on_first_use_in_a_fresh_interpreter() -> None:
    code = """
import sys
import sse_sansio
assert "sse_sansio.llm" not in sys.modules
tracker = sse_sansio.llm.Tracker("openai-chat")  # as docs/llm.rst's judge() uses it
assert "sse_sansio.llm" in sys.modules and "sse_sansio.testing" not in sys.modules
assert sse_sansio.testing.parse(b"data: a\\n\\n")[0] == sse_sansio.Event(data="a")
assert "RedisStreamStore" in sse_sansio.stores.__all__
print("ok")
"""
    result = _fresh(code)
    assert (result.returncode, result.stdout) == (0, "ok\n"), result.stderr


def test_a_subpackage_is_found_again_when_its_attribute_is_gone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # In this process the subpackages were imported already; with the attribute gone,
    # the package's __getattr__ hands out the module the import system holds.
    monkeypatch.delattr(sse_sansio, "llm")
    assert sse_sansio.llm is sys.modules["sse_sansio.llm"]


@pytest.mark.slow  # a fresh interpreter
def test_the_first_name_of_a_lazy_layer_loads_and_names_them_all() -> None:
    code = """
import sys
import sse_sansio
assert "sse_sansio._health._watchdog" not in sys.modules
assert "Watchdog" in dir(sse_sansio) and "Watchdog" not in vars(sse_sansio)
watchdog = sse_sansio.Watchdog(idle=5.0, now=0.0)
verdict = watchdog.check(1.0)
# Verdict was never asked for by name, yet the face names it (pickles say so):
assert type(verdict).__module__ == "sse_sansio", type(verdict).__module__
planner = sys.modules["sse_sansio._client._reconnect"].ReconnectPlanner
assert planner.__module__ == "sse_sansio" and planner is sse_sansio.ReconnectPlanner
print("ok")
"""
    result = _fresh(code)
    assert (result.returncode, result.stdout) == (0, "ok\n"), result.stderr


@pytest.mark.slow  # a fresh interpreter
@pytest.mark.parametrize("face", ["asgi", "aiohttp"])
def test_a_serving_face_names_the_streams_it_makes_by_the_top_level(face: str) -> None:
    # Nothing but the face is imported: the ServerStream its responses make must still
    # be sse_sansio.ServerStream (a pickle of it names the public path), not the
    # private module it lives in.
    code = f"""
import sys
import sse_sansio.{face}
stream = sys.modules["sse_sansio._serve._server_stream"].ServerStream
assert stream.__module__ == "sse_sansio", stream.__module__
assert sys.modules["sse_sansio._gateway._relay"].Relay.__module__ == "sse_sansio"
print("ok")
"""
    result = _fresh(code)
    assert (result.returncode, result.stdout) == (0, "ok\n"), result.stderr


def test_a_lazy_name_taken_away_is_found_again_in_its_layer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hub = sse_sansio.Hub
    monkeypatch.delattr(sse_sansio, "Hub")
    assert "Hub" not in vars(sse_sansio)
    assert sse_sansio.Hub is hub
    assert hub.__module__ == "sse_sansio"
    assert "Hub" in vars(sse_sansio)  # an ordinary attribute again
    assert {"Hub", "llm", "Connection"} <= set(dir(sse_sansio))


def test_other_missing_names_are_still_attribute_errors() -> None:
    with pytest.raises(AttributeError, match="module 'sse_sansio' has no attribute 'lmm'"):
        # (and mypy says so too: the package's __getattr__ is hidden from the checkers)
        sse_sansio.lmm  # type: ignore[attr-defined]  # noqa: B018
    assert not hasattr(sse_sansio, "_receive_core")
