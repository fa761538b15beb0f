"""The command line's --diagnostics and --on-oversize (issue 15).

Both flags only pass an option to the Connection and write what it hands out for them
on standard error, one line per item; standard output stays the same JSON lines.  The
first part drives the command line with a scripted connection that hands out items of
the documented shapes (so that the wiring and the wording are checked on their own);
the second runs the real parser on streams that show each case.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

import pytest

from sse_sansio import NEED_DATA, EndOfStream, Event
from sse_sansio._cli import _run as _cli
from sse_sansio._cli._main import main
from sse_sansio._cli._run import run


class Diagnostic(NamedTuple):
    """The shape of sse_sansio.Diagnostic: values, then metadata."""

    code: str
    message: str
    start: int
    end: int


class SkippedEvent(NamedTuple):
    """The shape of sse_sansio.SkippedEvent: values, then metadata."""

    type: str
    id: str
    size: int
    start: int
    end: int
    raw: bytes | None


class Scripted:
    """A connection that hands out a fixed list of items, then the end of stream."""

    options: ClassVar[dict[str, Any]] = {}
    items: ClassVar[list[Any]] = []

    def __init__(self, **options: Any) -> None:
        Scripted.options = options
        self._items = list(self.items)
        self._ended = False

    def receive_data(self, data: bytes) -> None:
        self._ended = not data

    def next_event(self) -> Any:
        if not self._ended:
            return NEED_DATA
        return self._items.pop(0) if self._items else EndOfStream()


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setattr(_cli, "Connection", Scripted)
    Scripted.items = [
        Diagnostic("http-status-line", "looks like HTTP", 0, 17),
        SkippedEvent("big", "7", 5000, 17, 5019, None),
        Event(data="after"),
    ]
    path = tmp_path / "stream.sse"
    path.write_bytes(b"anything")
    return path


def run_main(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_the_notes_go_to_stderr_and_stdout_keeps_the_json_lines(
    scripted: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_main([str(scripted), "--diagnostics", "--on-oversize", "skip"], capsys)
    assert code == 0  # a skipped event is not a failure
    assert [json.loads(line)["kind"] for line in out.splitlines()] == ["event", "end"]
    assert err.splitlines() == [
        "sse-sansio: diagnostic at byte 0: http-status-line: looks like HTTP",
        "sse-sansio: skipped at byte 17: an event of 5000 bytes, over the size limit "
        "(type 'big', id '7')",
    ]


@pytest.mark.parametrize(
    ("flags", "options"),
    [
        ([], {}),
        (["--on-oversize", "error"], {}),
        (["--on-oversize", "skip"], {"on_oversize": "skip"}),
        (["--diagnostics"], {"diagnostics": True}),
        (["--diagnostics", "--on-oversize=skip"], {"diagnostics": True, "on_oversize": "skip"}),
    ],
)
def test_the_flags_become_connection_options_only_when_given(
    scripted: Path, capsys: pytest.CaptureFixture[str], flags: list[str], options: dict[str, Any]
) -> None:
    run_main([str(scripted), *flags], capsys)
    given = {k: v for k, v in Scripted.options.items() if k in ("on_oversize", "diagnostics")}
    assert given == options  # the defaults leave the compiled core in use


def test_an_unknown_policy_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["-", "--on-oversize", "truncate"])
    assert exit_.value.code == 2
    assert "invalid choice: 'truncate'" in capsys.readouterr().err


def test_the_notes_do_not_reach_the_llm_tracker_or_the_timing(
    scripted: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ticks = iter([0.0, 1.0, 2.0, 3.0])
    out = io.StringIO()
    with scripted.open("rb") as source:
        code = run(source, out, chunk_size=4, timing=True, clock=lambda: next(ticks))
    assert code == 0
    records = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [(r["kind"], r["gap"]) for r in records] == [("event", 3.0), ("end", 0.0)]
    out = io.StringIO()
    with scripted.open("rb") as source:
        run(source, out, chunk_size=100, llm="auto")
    kinds = [json.loads(line)["kind"] for line in out.getvalue().splitlines()]
    assert kinds[:2] == ["event", "end"]  # then the outcome, judged on the event alone


def test_without_stderr_the_notes_are_dropped(
    scripted: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stderr", None)
    out = io.StringIO()
    with scripted.open("rb") as source:
        assert run(source, out, chunk_size=100) == 0
    assert len(out.getvalue().splitlines()) == 2


def test_help_names_the_flags(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--on-oversize {error,skip}" in text
    assert "--diagnostics" in text
    assert "--piece-size" not in text


# --------------------------------------------------------------------------- real items

HEADERS_LEFT_IN = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: hello\r\n\r\n"


def test_a_response_with_its_headers_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "headers.sse"
    path.write_bytes(HEADERS_LEFT_IN)
    code, out, err = run_main([str(path), "--diagnostics"], capsys)
    assert code == 0
    assert [json.loads(line)["data"] for line in out.splitlines()[:-1]] == ["hello"]
    lines = err.splitlines()
    # First the start of the stream; then the lines the spec ignores: the header line
    # (bytes 17 to 50) is an unknown field, and the blank line after the headers ends a
    # block without data.
    assert lines[0].startswith("sse-sansio: diagnostic at byte 0: http-status-line: ")
    assert any(
        line.startswith("sse-sansio: diagnostic at byte 17: unknown-field: ") for line in lines
    )
    assert any(": discarded-block: " in line for line in lines)


def test_an_oversized_event_is_skipped_and_the_stream_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "big.sse"
    big = b"event: image\nid: 3\ndata: " + b"A" * 100 + b"\n\n"
    path.write_bytes(big + b"data: small\n\n")
    code, out, err = run_main(
        [str(path), "--max-event-size", "64", "--on-oversize", "skip"], capsys
    )
    assert code == 0
    records = [json.loads(line) for line in out.splitlines()]
    assert [r["kind"] for r in records] == ["event", "end"]
    assert records[0]["data"] == "small"
    assert records[0]["id"] == "3"  # the skipped block's id still took effect
    size = len(big) - 1  # up to its dispatching blank line
    assert err.splitlines() == [
        f"sse-sansio: skipped at byte 0: an event of {size} bytes, over the size limit "
        "(type 'image', id '3')"
    ]
    code, _, _ = run_main([str(path), "--max-event-size", "64"], capsys)
    assert code == 1
