"""Type checkers accept ``match`` on every item, with keyword and positional patterns.

The items subclass ``tuple``; pyright (and so VS Code's Pylance) treats a tuple subclass
like the builtin tuple in a class pattern, which takes one positional sub-pattern only,
unless the class declares ``__match_args__``.  mypy and pyright are both run over a
small program that matches each item every way; a second program with a mistake in each
pattern proves that the checkers see the items' real types (not ``Any``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # runs mypy and pyright

GOOD = """
from sse_sansio import Comment, EndOfStream, Event, ReceivedItem


def describe(item: ReceivedItem) -> str:
    match item:
        case Event(type="ping"):
            return "ping"
        case Event(data=data, id=event_id, retry=None):
            return data + event_id
        case Event(event_type, data, event_id, retry):
            return event_type + data + event_id + str(retry + 1 if retry else 0)
        case Comment(text=text):
            return text
        case Comment(text):
            return text
        case EndOfStream(truncated=True, partial_line=0):
            return "event cut"
        case EndOfStream(partial_line=cut, partial_event=lost):
            return str(cut + 1) + str(not lost)
        case EndOfStream(cut, lost):
            return str(cut + 1) + str(not lost)
"""

# One mistake per function, each on its own line (the line numbers are checked).
BAD = """
from sse_sansio import Comment, EndOfStream, Event


def data_is_str(item: Event) -> None:
    match item:
        case Event(data=data):
            print(data + 1)


def comment_has_one_field(item: Comment) -> None:
    match item:
        case Comment(text, extra):
            print(text)


def partial_line_is_int(item: EndOfStream) -> None:
    match item:
        case EndOfStream(partial_line=cut):
            print(cut + "lines")


def first_positional_is_type(item: Event) -> None:
    match item:
        case Event(event_type):
            print(event_type + 1)
"""
BAD_LINES = {8, 13, 20, 26}


def _run(tool: list[str], path: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    return subprocess.run(
        [*tool, str(path)],
        capture_output=True,
        text=True,
        cwd=path.parent,
        env=env,
        timeout=300,
        check=False,
    )


def _mypy(path: Path) -> subprocess.CompletedProcess[str]:
    return _run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--python-version=3.11"],
        path,
    )


def _pyright(path: Path) -> subprocess.CompletedProcess[str]:
    # The PyPI package runs the npm release of the same version, on the node of its
    # "nodejs" extra (or the one on PATH); --pythonpath makes it resolve sse_sansio
    # from this interpreter.
    return _run(
        [
            sys.executable,
            "-m",
            "pyright",
            "--pythonpath",
            sys.executable,
            "--pythonversion",
            "3.11",
        ],
        path,
    )


CHECKERS = {"mypy": _mypy, "pyright": _pyright}


@pytest.fixture(params=sorted(CHECKERS))
def checker(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _write(tmp_path: Path, name: str, source: str) -> Path:
    path = tmp_path / name
    path.write_text(source, encoding="utf-8")
    return path


def test_match_on_every_item_type_checks(checker: str, tmp_path: Path) -> None:
    done = CHECKERS[checker](_write(tmp_path, "good.py", GOOD))
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_wrong_pattern_is_an_error_on_its_line(checker: str, tmp_path: Path) -> None:
    path = _write(tmp_path, "bad.py", BAD)
    done = CHECKERS[checker](path)
    assert done.returncode != 0
    flagged = {
        int(line.split(":")[1])
        for line in done.stdout.splitlines()
        if "bad.py:" in line and "error" in line
    }
    assert flagged == BAD_LINES, done.stdout


def test_the_patterns_work_at_run_time(tmp_path: Path) -> None:
    import sse_sansio

    namespace: dict[str, object] = {}
    exec(compile(GOOD, "good.py", "exec"), namespace)
    describe = namespace["describe"]
    assert callable(describe)
    assert describe(sse_sansio.Event(type="ping")) == "ping"
    assert describe(sse_sansio.Event(data="a", id="b")) == "ab"
    assert describe(sse_sansio.Event(type="t", data="d", id="i", retry=4)) == "tdi5"
    assert describe(sse_sansio.Comment(text="c")) == "c"
    assert describe(sse_sansio.EndOfStream(partial_event=True)) == "event cut"
    assert describe(sse_sansio.EndOfStream(partial_line=2)) == "3True"
