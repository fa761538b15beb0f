"""The house in layers: every import in the package runs one way (docs/architecture.rst).

Read from the source with ``ast`` (nothing is imported), so a lazy import inside a
function, or one under ``if TYPE_CHECKING:``, counts like any other.  Three rules:

- no circle: the graph of module -> module imports has no cycle;
- no reach-in: no module imports another module's ``_private`` name (a helper two
  modules need has a public name in a named home); private *modules* are fine, they are
  how a layer's rooms are named;
- doors one way: a module imports only the vocabulary and the layers its own layer is
  built on (``ALLOWED`` below, the table the architecture page draws).  The compiled
  core's imports (``import_attr("module", ...)`` in ``_core.c``) are held to the receive
  layer's rule too.

Each checker is also shown a planted violation, so that a checker that sees nothing
cannot pass.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest

import sse_sansio

PACKAGE = Path(sse_sansio.__file__).resolve().parent

#: The top-level vocabulary every layer speaks.
VOCABULARY = "vocabulary"
#: Public faces: they hand names on from the layers below them (and nothing imports them
#: from inside the package).
FACE = "face"

#: What each layer may import, besides itself and the standard library.
ALLOWED: dict[str, frozenset[str]] = {
    VOCABULARY: frozenset(),
    "_receive": frozenset({VOCABULARY}),
    "_client": frozenset({VOCABULARY, "_receive"}),
    "_health": frozenset({VOCABULARY}),
    "_resume": frozenset({VOCABULARY}),
    "llm": frozenset({VOCABULARY}),
    "stores": frozenset({VOCABULARY, "_resume"}),
    "testing": frozenset({VOCABULARY, "_receive"}),
    # The serving layer writes streams: it knows neither the parser nor llm (issue 42,
    # item 9); the relay that needs both is the gateway's, a floor above.
    "_serve": frozenset({VOCABULARY, "_health", "_resume"}),
    "_gateway": frozenset({VOCABULARY, "_receive", "_health", "llm"}),
    "_cli": frozenset({VOCABULARY, "_receive", "testing", "llm"}),
    # Durable Streams (issue 44): its SSE read mode is written by the serving layer.
    "durable": frozenset({VOCABULARY, "_serve"}),
}
ALL_LAYERS = frozenset(ALLOWED)
FACE_MODULES = {"sse_sansio", "sse_sansio.__main__", "sse_sansio.pytest_plugin"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layer_of(module: str) -> str:
    """The layer a module belongs to: its folder under sse_sansio, or the vocabulary."""
    if module in FACE_MODULES:
        return FACE
    parts = module.split(".")
    if len(parts) == 2 and parts[1] in ALL_LAYERS:  # a subpackage's __init__
        return parts[1]
    if len(parts) >= 3:
        return parts[1]
    # A top-level module: the private ones are the vocabulary, the public ones are
    # faces of a layer (sse_sansio/asgi.py hands on the serving layer's adapter).
    return VOCABULARY if parts[1].startswith("_") else FACE


def imports_of(source: str, module: str, is_package: bool) -> Iterable[tuple[str, str, int]]:
    """``(imported module, imported name or "", line)`` for each sse_sansio import."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "sse_sansio":
                    yield alias.name, "", node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            if target.split(".")[0] != "sse_sansio":
                continue
            for alias in node.names:
                yield target, alias.name, node.lineno


def package_sources() -> dict[str, tuple[str, bool]]:
    return {
        module_name(path): (path.read_text(encoding="utf-8"), path.name == "__init__.py")
        for path in sorted(PACKAGE.rglob("*.py"))
    }


def graph(sources: Mapping[str, tuple[str, bool]]) -> dict[str, set[str]]:
    """module -> the package modules it imports (``from pkg import mod`` names mod)."""
    edges: dict[str, set[str]] = {}
    for module, (source, is_package) in sources.items():
        for target, name, _ in imports_of(source, module, is_package):
            full = f"{target}.{name}"
            edges.setdefault(module, set()).add(full if full in sources else target)
    return edges


def circles(edges: Mapping[str, set[str]]) -> list[list[str]]:
    """Every cycle a depth-first walk meets (empty when the graph has none)."""
    found: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for other in sorted(edges.get(node, ())):
            if other == node:
                continue
            if state.get(other) == 1:
                found.append([*stack[stack.index(other) :], other])
            elif other not in state:
                visit(other)
        stack.pop()
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node)
    return found


def reach_ins(sources: Mapping[str, tuple[str, bool]]) -> list[str]:
    """Imports of another module's private name (dunders and private modules are fine)."""
    found = []
    for module, (source, is_package) in sources.items():
        for target, name, line in imports_of(source, module, is_package):
            private = name.startswith("_") and not name.startswith("__")
            if private and f"{target}.{name}" not in sources:
                found.append(f"{module}:{line} takes {name} from {target}")
    return found


def wrong_doors(sources: Mapping[str, tuple[str, bool]]) -> list[str]:
    """Imports that leave a layer by a door its row of ALLOWED does not have."""
    found = []
    for module, (source, is_package) in sources.items():
        layer = layer_of(module)
        if layer == FACE:
            continue
        for target, name, line in imports_of(source, module, is_package):
            full = f"{target}.{name}"
            other = layer_of(full if full in sources else target)
            if other != layer and other not in ALLOWED[layer]:
                found.append(f"{module}:{line} ({layer}) imports {target} ({other})")
    return found


def test_every_module_is_in_a_known_layer() -> None:
    layers = {layer_of(module) for module in package_sources()}
    assert layers <= ALL_LAYERS | {FACE}
    # The table and the folders agree: no layer folder without a row, no stale row
    # (``_serve`` may be absent while the sending side is not built).
    folders = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    assert folders <= ALL_LAYERS
    assert ALL_LAYERS - folders <= {VOCABULARY, "_serve"}


def test_no_import_circle() -> None:
    assert circles(graph(package_sources())) == []


def test_no_module_imports_another_modules_private_name() -> None:
    assert reach_ins(package_sources()) == []


def test_every_import_goes_through_an_allowed_door() -> None:
    assert wrong_doors(package_sources()) == []


def test_the_serving_layer_imports_neither_the_parser_nor_llm() -> None:
    # Issue 42, item 9, in the words of the issue, besides ALLOWED's row: the sources
    # themselves, not the table, so that a row widened by mistake still fails here.
    sources = package_sources()
    reached = {
        layer_of(f"{target}.{name}" if f"{target}.{name}" in sources else target)
        for module, (source, is_package) in sources.items()
        if layer_of(module) == "_serve"
        for target, name, _line in imports_of(source, module, is_package)
    }
    assert "_health" in reached  # the scan sees the layer's imports...
    assert not reached & {"_receive", "llm"}, reached  # ...and neither of these


def test_the_compiled_core_imports_only_what_the_receive_layer_may() -> None:
    # The checkout's source: an installed wheel (cibuildwheel's test) holds no C.
    checkout = Path(__file__).resolve().parents[2] / "sse_sansio"
    source = (checkout / "_receive" / "_core.c").read_text(encoding="utf-8")
    imported = set(re.findall(r'import_attr\(\s*"([\w.]+)"', source))
    assert imported  # the scan sees the core's imports...
    layers = {layer_of(name) for name in imported}
    assert layers <= {"_receive", VOCABULARY}, imported  # ...and they stay below it


def test_each_layer_says_what_it_does_and_what_it_may_import() -> None:
    for folder in sorted(p for p in PACKAGE.iterdir() if (p / "__init__.py").exists()):
        doc = ast.get_docstring(ast.parse((folder / "__init__.py").read_text(encoding="utf-8")))
        assert doc, folder.name
        assert "import" in doc, folder.name


PLANTED = {
    "sse_sansio._receive._a": ("from sse_sansio._client import _b\n", False),
    "sse_sansio._client._b": ("from sse_sansio._receive._a import _helper\n", False),
    "sse_sansio._health._c": ("def f():\n    from sse_sansio._cli import _main\n", False),
    "sse_sansio._cli._main": ("", False),
    "sse_sansio._client": ("", True),
    "sse_sansio._receive": ("", True),
}


@pytest.mark.parametrize(
    ("check", "expected"),
    [
        (lambda s: circles(graph(s)), [["sse_sansio._client._b", "sse_sansio._receive._a"]]),
        (reach_ins, ["sse_sansio._client._b:1 takes _helper from sse_sansio._receive._a"]),
        (
            wrong_doors,
            [
                "sse_sansio._receive._a:1 (_receive) imports sse_sansio._client (_client)",
                "sse_sansio._health._c:2 (_health) imports sse_sansio._cli (_cli)",
            ],
        ),
    ],
    ids=["circle", "reach-in", "door"],
)
def test_each_checker_sees_a_planted_violation(
    check: Callable[[Mapping[str, tuple[str, bool]]], list[Any]], expected: list[Any]
) -> None:
    found = check(PLANTED)
    if expected and isinstance(expected[0], list):
        # A cycle is reported from wherever the walk entered it.
        assert [sorted(set(c)) for c in found] == expected
    else:
        assert found == expected
