"""A connection's options decide, for type checkers, which items it returns.

``Connection()`` returns Event, Comment, EndOfStream or NEED_DATA; one made with
on_oversize, piece_size or diagnostics may also return SkippedEvent, DataPiece,
PiecedEvent and Diagnostic, and so may iter_events() given such options or such a
connection.  Typed as the classic items only, the branches that handle the others were
unreachable to mypy and pyright, which then checked nothing in them (issue 26).  Both
checkers run here with unreachable code reported, over a program and the two examples
that use the opt-in items, and over a program with one mistake in each such branch.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # runs mypy and pyright

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = [ROOT / "examples" / "skip_oversize.py", ROOT / "examples" / "image_pieces.py"]

GOOD = """
from collections.abc import Iterable

from sse_sansio import (
    NEED_DATA, Connection, DataPiece, Diagnostic, EndOfStream, Event, OptInItem,
    PiecedEvent, ReconnectPlanner, SkippedEvent, iter_events,
)


def pieces(chunks: Iterable[bytes]) -> str:
    text = ""
    for item in iter_events(chunks, piece_size=1024):
        if isinstance(item, DataPiece):
            text += item.text
        elif isinstance(item, PiecedEvent):
            text += item.type
        elif isinstance(item, Event):
            text += item.data
    return text


def sizes(conn: Connection[OptInItem]) -> int:
    size = 0
    while (item := conn.next_event()) is not NEED_DATA:
        if isinstance(item, SkippedEvent):
            size += item.size
        elif isinstance(item, Diagnostic):
            size += len(item.code)
        elif isinstance(item, EndOfStream):
            break
    return size


def made_with_diagnostics() -> int:
    item = Connection(diagnostics=True).next_event()
    if isinstance(item, Diagnostic):
        return len(item.message)
    return 0


def through_a_connection(chunks: Iterable[bytes]) -> int:
    conn = Connection(on_oversize="skip")
    return sum(isinstance(item, SkippedEvent) for item in iter_events(chunks, connection=conn))


def planned(chunks: list[bytes]) -> int:
    plan = ReconnectPlanner()
    plan.start(now=0)
    size = 0
    for item in plan.events(chunks, piece_size=8):
        if isinstance(item, DataPiece):
            size += len(item.text)
    return size


def classic(chunks: Iterable[bytes]) -> str:
    text = ""
    for item in iter_events(chunks, connection=Connection()):
        if isinstance(item, Event):
            text += item.data
        else:
            text += item.text  # a Comment: the only other item
    return text
"""

# One mistake per function, each on its own line (the line numbers are checked).
BAD = """
from sse_sansio import Connection, DataPiece, Diagnostic, OptInItem, SkippedEvent, iter_events


def piece_text_is_str(chunks: list[bytes]) -> None:
    for item in iter_events(chunks, piece_size=8):
        if isinstance(item, DataPiece):
            print(item.text + 1)


def skipped_size_is_int(conn: Connection[OptInItem]) -> None:
    item = conn.next_event()
    if isinstance(item, SkippedEvent):
        print(item.size + "bytes")


def diagnostic_code_is_str() -> None:
    item = Connection(diagnostics=True).next_event()
    if isinstance(item, Diagnostic):
        print(item.code + 1)
"""
BAD_LINES = {8, 14, 20}


def _check(checker: str, paths: list[Path]) -> subprocess.CompletedProcess[str]:
    if checker == "mypy":
        tool = [sys.executable, "-m", "mypy", "--strict", "--warn-unreachable"]
        tool += ["--no-incremental", "--python-version=3.10"]
    else:
        tool = [sys.executable, "-m", "pyright", "--pythonpath", sys.executable]
        tool += ["--pythonversion", "3.10"]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [*tool, *map(str, paths)],
        capture_output=True,
        text=True,
        cwd=paths[0].parent,
        env=env,
        timeout=300,
        check=False,
    )


@pytest.fixture(params=["mypy", "pyright"])
def checker(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_opt_in_branches_are_checked_with_unreachable_code_reported(
    checker: str, tmp_path: Path
) -> None:
    # One run per checker: the good program and the examples have no error, the bad
    # program one on each line with a mistake.
    good, bad = tmp_path / "good.py", tmp_path / "bad.py"
    good.write_text(GOOD, encoding="utf-8")
    bad.write_text(BAD, encoding="utf-8")
    done = _check(checker, [good, bad, *EXAMPLES])
    errors = [line for line in done.stdout.splitlines() if "error" in line]
    flagged = {int(line.split(":")[1]) for line in errors if "bad.py:" in line}
    others = [line for line in errors if "bad.py:" not in line and ".py:" in line]
    assert others == [], done.stdout
    assert flagged == BAD_LINES, done.stdout
    assert done.returncode != 0


def test_the_programs_run() -> None:
    namespace: dict[str, object] = {}
    exec(compile(GOOD, "good.py", "exec"), namespace)
    pieces, sizes = namespace["pieces"], namespace["through_a_connection"]
    assert callable(pieces)
    assert callable(sizes)
    assert pieces([b"data: " + b"x" * 2000 + b"\n\n"]) == "x" * 2000 + "message"
    assert sizes([b"data: " + b"x" * 20 + b"\n\n"]) == 0
    planned = namespace["planned"]
    assert callable(planned)
    assert planned([b"data: " + b"x" * 20 + b"\n\n"]) == 20
