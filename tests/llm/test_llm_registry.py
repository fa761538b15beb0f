"""The registry of dialects (issue 32, item 5): one module per dialect, one table.

What is checked: the table gives the public names in their documented order; each
registered dialect's reframing rules write an error its own Tracker reads as that
error; "auto" asks the registered dialects for their signs (a dialect that gives none
is never detected; a "type" only one API sends wins over another API's shape); and no
package file but the dialect's reader and writer (and the docstring of
``llm/__init__.py``) names a dialect, nor imports them but the registry, so adding one
is its reader, its writer and one entry in the table (issue 42, item 7).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest

import sse_sansio
from sse_sansio import Event
from sse_sansio.llm import DIALECT_NAMES, REFRAMER_DIALECTS, Dialect, Tracker
from sse_sansio.llm._auto import Auto
from sse_sansio.llm._registry import DIALECTS, WRITERS
from sse_sansio.testing import parse
from tests.helpers import llm_streams as s

PACKAGE = Path(sse_sansio.__file__).resolve().parent


def test_the_table_gives_the_documented_names_in_order() -> None:
    # The order docs/api/llm.rst shows and --llm lists.
    expected = ("openai-chat", "openai-responses", "anthropic", "gemini", "ai-sdk-ui")
    assert tuple(DIALECTS) == expected
    assert tuple(DIALECT_NAMES) == (*expected, "auto")
    assert tuple(REFRAMER_DIALECTS) == expected
    for name, dialect in DIALECTS.items():
        assert dialect.name == name


@pytest.mark.parametrize("name", list(DIALECTS))
def test_each_dialects_error_event_is_read_as_that_error(name: str) -> None:
    event = DIALECTS[name].error_event("upstream timed out", "timeout")
    tracker = Tracker(name)
    tracker.feed(event)
    outcome = tracker.end()
    assert (outcome.outcome, outcome.error_message) == ("failed", "upstream timed out")


def test_a_dialect_that_gives_no_signs_is_never_detected() -> None:
    class Quiet(Dialect):
        name = "quiet"

    auto = Auto([Quiet])
    for data in ("[DONE]", '{"choices": []}', '{"type": "response.created"}'):
        auto.decode(Event(data=data))
    assert auto.current() is auto  # the base class claims nothing


def detected(stream: bytes) -> str:
    tracker = Tracker("auto")
    for item in parse(stream):
        tracker.feed(item)
    return tracker.dialect


@pytest.mark.parametrize(
    ("payload", "dialect"),
    [
        # A "type" only one API sends is surer than another API's field.
        ({"type": "response.created", "choices": []}, "openai-responses"),
        ({"type": "message_start", "candidates": []}, "anthropic"),
        # The AI SDK's part types are plain words: the others' shapes are asked first.
        ({"type": "finish", "choices": []}, "openai-chat"),
        ({"type": "start", "promptFeedback": {}}, "gemini"),
        ({"type": "start"}, "ai-sdk-ui"),
        ({"type": ["start"], "note": "a type that is no string names nothing"}, "auto"),
    ],
)
def test_auto_asks_the_surest_signs_first(payload: dict[str, Any], dialect: str) -> None:
    assert detected(s.data(payload)) == dialect


def _names_in(text: str) -> set[str]:
    """The dialect names ``text`` holds as words: quoted or not, in code, strings or
    help text (``anthropic``, never ``_anthropic``, ``Anthropic`` or ``anthropic-sdk``)."""
    return {
        name
        for name in DIALECTS
        if re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", text) is not None
    }


def _file(module: str) -> Path:
    return Path(str(sys.modules[module].__file__))


def test_the_scan_sees_a_name_wherever_there_is_one() -> None:
    assert _names_in('x = "openai-chat"') == {"openai-chat"}
    assert _names_in("help (anthropic, gemini, ai-sdk-ui)") == {"anthropic", "gemini", "ai-sdk-ui"}
    assert _names_in("from ._anthropic import Anthropic  # anthropic-sdk #993, Gemini's") == set()


def test_no_package_file_but_its_reader_and_writer_names_a_dialect() -> None:
    """Issue 42, item 7: a dialect is its reader, its writer and one registry entry; the
    command line's help and the translator find the names in the table."""
    home = {
        name: {_file(cls.__module__), _file(WRITERS[name].__module__)}
        for name, cls in DIALECTS.items()
    }
    allowed = PACKAGE / "llm" / "__init__.py"  # its docstring lists them for readers
    assert _names_in(allowed.read_text(encoding="utf-8")) == set(DIALECTS)
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == allowed:
            continue
        for name in _names_in(path.read_text(encoding="utf-8")):
            assert path in home[name], f"{path.relative_to(PACKAGE)} names {name!r}"


def test_only_the_registry_imports_the_readers_and_writers() -> None:
    modules = {
        path.stem: path
        for name, cls in DIALECTS.items()
        for path in (_file(cls.__module__), _file(WRITERS[name].__module__))
    }
    readers = {_file(cls.__module__).stem for cls in DIALECTS.values()}
    registry = PACKAGE / "llm" / "_registry.py"
    # The package's face re-exports the AI SDK module's public names (its headers, its
    # UIMessageStreamWriter), which are that API's tools, not the translator's table.
    face = PACKAGE / "llm" / "__init__.py"
    for path in sorted(PACKAGE.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        for stem, module in modules.items():
            if path in (registry, face, module) or not re.search(rf"\b{stem}\b", source):
                continue
            # A writer imports its own reader (its ``dialect``), and nothing else does.
            assert stem in readers, f"{path.relative_to(PACKAGE)} imports {stem}"
            assert path.stem == f"{stem}_writer", f"{path.relative_to(PACKAGE)} imports {stem}"
