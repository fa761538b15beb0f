"""A connection's options decide, for type checkers, which items it returns.

``Connection()`` returns Event, Comment, EndOfStream or NEED_DATA; one made with
on_oversize, piece_size, diagnostics or updates may also return SkippedEvent, DataPiece,
PiecedEvent, Diagnostic and Update, and so may iter_events() given such options or such a
connection.  Typed as the classic items only, the branches that handle the others were
unreachable to mypy and pyright, which then checked nothing in them (issue 26).  Both
checkers run here with unreachable code reported, over a program and the two examples
that use the opt-in items, and over a program with one mistake in each such branch.

The options are declared once for the checkers (sse_sansio/_receive/_options.py, issue
32): every entry point that takes them narrows by them the same way, and refuses an
unknown option or a wrong type (a mistake the feeding helpers and the planner once let
through, typed ``**Any``).  A table of calls pins what both checkers reveal for each.
"""

from __future__ import annotations

import os
import re
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

# One mistake per function (the last: one per call), each on its own line (the line
# numbers are checked).
BAD = """
from sse_sansio import Connection, DataPiece, Diagnostic, OptInItem, SkippedEvent, iter_events
from sse_sansio import ReconnectPlanner


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


def options_are_checked(chunks: list[bytes], conn: Connection) -> None:
    iter_events(chunks, piece_sise=8)
    iter_events(chunks, errors="ignore")
    iter_events(chunks, connection=conn, max_event_size=9)
    ReconnectPlanner().events(chunks, diagnostics=1.5)
    ReconnectPlanner().connection(keep_raw=None)
"""
BAD_LINES = {9, 15, 21, 25, 26, 27, 28, 29}

# What each entry point returns, by its options, as the checkers must reveal it: the
# item classes named in the revealed type (the container aside).
FED = {"Event", "Comment"}
OPT_IN = {"SkippedEvent", "DataPiece", "PiecedEvent", "Diagnostic", "Update"}
PULLED = FED | {"EndOfStream", "NeedData"}  # next_event(): also the end and NEED_DATA
END = {"EndOfStream"}
REVEALED = [
    ("Connection().next_event()", PULLED),
    ("Connection(errors='replace', keep_raw=True, count_comments=True).next_event()", PULLED),
    ("Connection(on_oversize='error', piece_size=None, diagnostics=False).next_event()", PULLED),
    ("Connection(on_oversize='skip').next_event()", PULLED | OPT_IN),
    ("Connection(piece_size=8).next_event()", PULLED | OPT_IN),
    ("Connection(diagnostics=flag).next_event()", PULLED | OPT_IN),
    ("Connection(piece_size=size).next_event()", PULLED | OPT_IN),
    ("Connection(updates=False).next_event()", PULLED),
    ("Connection(updates=True).next_event()", PULLED | OPT_IN),
    ("iter_events(chunks, updates=True)", FED | OPT_IN),
    ("aiter_events(achunks, updates=flag)", FED | OPT_IN),
    ("plan.events(chunks, updates=True)", FED | OPT_IN),
    ("iter_events(chunks)", FED),
    ("iter_events(chunks, max_event_size=None, last_event_id='7')", FED),
    ("iter_events(chunks, piece_size=8)", FED | OPT_IN),
    ("iter_events(chunks, connection=Connection())", FED),
    ("iter_events(chunks, connection=Connection(diagnostics=True))", FED | OPT_IN),
    ("iter_events(chunks, end_of_stream='yield')", FED | END),
    ("iter_events(chunks, end_of_stream='yield', on_oversize='skip')", FED | END | OPT_IN),
    ("iter_events(chunks, end_of_stream='yield', connection=Connection())", FED | END),
    ("iter_events(chunks, end_of_stream='yield', connection=skipping)", FED | END | OPT_IN),
    ("aiter_events(achunks, errors='replace')", FED),
    ("aiter_events(achunks, diagnostics=True)", FED | OPT_IN),
    ("aiter_events(achunks, connection=Connection())", FED),
    ("aiter_events(achunks, connection=skipping)", FED | OPT_IN),
    ("aiter_events(achunks, end_of_stream='yield')", FED | END),
    ("aiter_events(achunks, end_of_stream='yield', piece_size=3)", FED | END | OPT_IN),
    ("aiter_events(achunks, end_of_stream='yield', connection=Connection())", FED | END),
    ("aiter_events(achunks, end_of_stream='yield', connection=skipping)", FED | END | OPT_IN),
    ("plan.connection().next_event()", PULLED),
    ("plan.connection(max_event_size=9).next_event()", PULLED),
    ("plan.connection(piece_size=9).next_event()", PULLED | OPT_IN),
    ("plan.events(chunks)", FED),
    ("plan.events(chunks, 200, {}, decoded=True, errors='replace')", FED),
    ("plan.events(chunks, diagnostics=True)", FED | OPT_IN),
    ("plan.aevents(achunks, keep_raw=True)", FED),
    ("plan.aevents(achunks, on_oversize='skip')", FED | OPT_IN),
]
REVEAL = """
from collections.abc import AsyncIterable, Iterable

from typing_extensions import reveal_type

from sse_sansio import Connection, OptInItem, ReconnectPlanner, aiter_events, iter_events


def reveal(
    chunks: Iterable[bytes],
    achunks: AsyncIterable[bytes],
    skipping: Connection[OptInItem],
    plan: ReconnectPlanner,
    flag: bool,
    size: int | None,
) -> None:
""" + "".join(f"    reveal_type({call})\n" for call, _ in REVEALED)
FIRST_REVEAL = REVEAL.count("\n", 0, REVEAL.index("    reveal_type(")) + 1
ITEM_NAME = re.compile(r"\b(?:" + "|".join(sorted(PULLED | OPT_IN)) + r")\b")


def _revealed(line: str) -> set[str]:
    """The item classes a checker's reveal_type line names (after the expression)."""
    said = line.split('" is "', 1)[-1] if " - information:" in line else line
    return set(ITEM_NAME.findall(said.split("Revealed type is", 1)[-1]))


def _check(checker: str, paths: list[Path]) -> subprocess.CompletedProcess[str]:
    if checker == "mypy":
        tool = [sys.executable, "-m", "mypy", "--strict", "--warn-unreachable"]
        tool += ["--no-incremental", "--python-version=3.11"]
    else:
        tool = [sys.executable, "-m", "pyright", "--pythonpath", sys.executable]
        tool += ["--pythonversion", "3.11"]
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


def test_every_entry_point_narrows_by_its_options(checker: str, tmp_path: Path) -> None:
    path = tmp_path / "reveal.py"
    path.write_text(REVEAL, encoding="utf-8")
    done = _check(checker, [path])
    found: dict[int, set[str]] = {}
    for line in done.stdout.splitlines():
        if "reveal.py:" in line and ("Revealed type" in line or "Type of" in line):
            found[int(line.split("reveal.py:")[1].split(":")[0])] = _revealed(line)
    want = {FIRST_REVEAL + n: items for n, (_, items) in enumerate(REVEALED)}
    assert found == want, done.stdout
    assert done.returncode == 0, done.stdout  # no error beside the reveals


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
