"""The compiled core's sources, read as text: each field rule written once, the C API
that 3.12 deprecates confined to its compatibility helper, every header built and linted.

Nothing is compiled or imported here: the checks read ``sse_sansio/_receive/_core*.c``
and ``_core*.h`` with their comments removed, and setup.py's and noxfile.py's lists
with ``ast``.  Behaviour is the differential tests' business (test_cores.py and the
fuzzers); these guard the layout docs/cores.rst describes ("Changing a spec rule": one
edit in ``_core_fields.h``), which no behaviour test notices drifting.  Each checker is
also shown a planted violation, so that a checker that finds nothing cannot pass.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from pathlib import Path

# The checkout's sources, not the imported package's folder: an installed wheel (the
# cibuildwheel test, issue 43 item 5) holds no C sources.
ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "sse_sansio"
RECEIVE = PACKAGE / "_receive"
FIELDS_HEADER = "_core_fields.h"

_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.DOTALL)


def c_sources() -> dict[str, str]:
    """Every C source of the core, by file name, without its comments."""
    paths = sorted(RECEIVE.glob("_core*.c")) + sorted(RECEIVE.glob("_core*.h"))
    return {path.name: _COMMENT.sub(" ", path.read_text(encoding="utf-8")) for path in paths}


# What applying each rule looks like in C: a search for U+0000 (the id rule), a test
# for an ASCII digit (the retry rule), the "data:" of a line still arriving (the data
# rule, as the field split reads it).
RULE_CODE: dict[str, re.Pattern[str]] = {
    "id: a value holding U+0000 is ignored": re.compile(r"memchr\([^;]*,\s*0\s*,"),
    "retry: ASCII digits only": re.compile(r"'9'"),
    'data: a line starting "data:"': re.compile(r'"data:"'),
}

# A field's name compared anywhere but through is_name() (split_field()'s reading).
_NAME_COMPARED = re.compile(r'memcmp\([^;]*"(?:data|event|id|retry)"')


def rule_sites(sources: Mapping[str, str]) -> dict[str, list[str]]:
    """Per rule, the files where its code is written, once per occurrence."""
    sites: dict[str, list[str]] = {rule: [] for rule in RULE_CODE}
    for name, text in sources.items():
        for rule, pattern in RULE_CODE.items():
            sites[rule] += [name] * len(pattern.findall(text))
    return sites


def names_compared_outside_helper(sources: Mapping[str, str]) -> list[str]:
    """The files that compare a field name with memcmp() themselves."""
    return [name for name, text in sources.items() if _NAME_COMPARED.search(text)]


_DEPRECATED = ("PyErr_Fetch", "PyErr_Restore", "PyErr_NormalizeException")
_COMPAT_BLOCK = re.compile(
    r"#if PY_VERSION_HEX >= 0x030C0000\n(?P<new>.*?)\n#else\n(?P<old>.*?)\n#endif", re.DOTALL
)


def deprecated_calls_outside_compat(sources: Mapping[str, str]) -> list[str]:
    """Calls of the C API that 3.12 deprecates, outside the #else of a 3.12 check."""
    found = []
    for name, text in sources.items():
        outside = _COMPAT_BLOCK.sub(lambda m: m.group("new"), text)
        found += [f"{name}: {call}" for call in _DEPRECATED if re.search(rf"\b{call}\(", outside)]
    return found


def _assigned_list(path: Path, target: str) -> list[str]:
    """The literal list or tuple assigned to `target` anywhere in the file at `path`."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == target for t in node.targets
        ):
            value = ast.literal_eval(node.value)
            return [str(item) for item in value]
    raise AssertionError(f"{path.name} assigns no {target}")


def test_each_field_rule_is_applied_in_one_place() -> None:
    sites = rule_sites(c_sources())
    assert sites == {rule: [FIELDS_HEADER] for rule in RULE_CODE}


def test_no_field_name_is_compared_outside_the_helper() -> None:
    assert names_compared_outside_helper(c_sources()) == []


def test_rule_checkers_see_a_planted_second_copy() -> None:
    sources = c_sources()
    planted = dict(sources)
    planted["_core_modes.h"] += (
        "\nstatic int f(const char *p, const char *v, Py_ssize_t n) {\n"
        "    return memchr(v, 0, (size_t)n) == NULL && v[0] <= '9' &&\n"
        '           memcmp(p, "data:", 5) == 0 && memcmp(p, "retry", 5) == 0;\n}\n'
    )
    sites = rule_sites(planted)
    assert all(sites[rule] == [FIELDS_HEADER, "_core_modes.h"] for rule in RULE_CODE), sites
    assert names_compared_outside_helper(planted) == ["_core_modes.h"]


def test_deprecated_error_calls_only_in_the_compat_helper() -> None:
    sources = c_sources()
    assert deprecated_calls_outside_compat(sources) == []
    # ...and the helper is there, with the old calls kept for 3.11.
    blocks = [m["old"] for text in sources.values() for m in _COMPAT_BLOCK.finditer(text)]
    assert any("PyErr_Fetch(" in old and "PyErr_Restore(" in old for old in blocks)


def test_deprecated_checker_sees_a_planted_call() -> None:
    planted = dict(c_sources())
    planted["_core.c"] += "\nstatic void g(void) { PyErr_Fetch(&a, &b, &c); }\n"
    assert deprecated_calls_outside_compat(planted) == ["_core.c: PyErr_Fetch"]


def test_every_header_is_a_build_dependency_and_linted() -> None:
    headers = sorted(path.name for path in RECEIVE.glob("_core*.h"))
    assert FIELDS_HEADER in headers
    assert sorted(_assigned_list(ROOT / "setup.py", "headers")) == headers
    # nox -s lint runs clang-format on these (the fuzz target's C is listed too).
    linted = set(_assigned_list(ROOT / "noxfile.py", "C_SOURCES"))
    core = {f"sse_sansio/_receive/{name}" for name in ["_core.c", *headers]}
    assert core - linted == set()
