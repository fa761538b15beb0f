"""The command line's ``--timing`` option: arrival time and gap per item, only on request."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sse_sansio._cli._main import main
from sse_sansio._cli._run import run

# Three items, placed so that reads of 9 bytes complete one item each:
# "data: a\n\n" | ": c\ndata:" | " b\n\n" | end of file.
STREAM = b"data: a\n\n: c\ndata: b\n\n"


def fake_clock(*times: float) -> Iterator[float]:
    """A clock that returns ``times`` in turn (the first is the start of reading)."""
    return iter(times)


def run_to_records(data: bytes, chunk_size: int, **options: Any) -> list[dict[str, Any]]:
    out = io.StringIO()
    assert run(io.BytesIO(data), out, chunk_size=chunk_size, **options) == 0
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_timing_gives_each_item_the_time_its_chunk_arrived_and_the_gap_before_it() -> None:
    clock = fake_clock(100.0, 100.25, 100.5, 101.0, 103.0)
    records = run_to_records(STREAM, 9, timing=True, clock=clock.__next__)
    assert [(r["kind"], r["time"], r["gap"]) for r in records] == [
        ("event", 0.25, 0.25),
        ("comment", 0.5, 0.25),
        ("event", 1.0, 0.5),
        ("end", 3.0, 2.0),
    ]
    # The timing fields come on top of the usual ones, which are unchanged.
    assert records[0] == {
        "kind": "event",
        "type": "message",
        "data": "a",
        "id": "",
        "retry": None,
        "start": 0,
        "end": 9,
        "time": 0.25,
        "gap": 0.25,
    }


def test_items_completed_by_one_read_share_its_time_with_no_gap_between_them() -> None:
    clock = fake_clock(5.0, 5.5, 7.0)
    records = run_to_records(STREAM, 1024, timing=True, clock=clock.__next__)
    assert [(r["kind"], r["time"], r["gap"]) for r in records] == [
        ("event", 0.5, 0.5),
        ("comment", 0.5, 0.0),
        ("event", 0.5, 0.0),
        ("end", 2.0, 1.5),
    ]


def test_without_timing_the_records_have_no_time_fields() -> None:
    clock = fake_clock(100.0, 100.25, 100.5, 101.0, 103.0)
    records = run_to_records(STREAM, 9, clock=clock.__next__)
    assert records == [
        {"kind": "event", "type": "message", "data": "a", "id": "", "retry": None}
        | {"start": 0, "end": 9},
        {"kind": "comment", "text": "c", "start": 9, "end": 13},
        {"kind": "event", "type": "message", "data": "b", "id": "", "retry": None}
        | {"start": 13, "end": 22},
        {"kind": "end", "truncated": False, "partial_line": 0, "partial_event": False},
    ]


def test_timing_flag_on_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "stream.sse"
    path.write_bytes(STREAM)
    assert main([str(path), "--chunk-size", "9", "--timing"]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["kind"] for r in records] == ["event", "comment", "event", "end"]
    times = [r["time"] for r in records]
    assert all(isinstance(t, float) and t >= 0 for t in times)
    assert times == sorted(times)
    # Each gap is the distance from the previous item's time (the first: from zero).
    for before, record in zip([0.0, *times[:-1]], records, strict=True):
        assert record["gap"] == pytest.approx(record["time"] - before, abs=2e-6)


def test_the_command_line_without_timing_prints_no_time_fields(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "stream.sse"
    path.write_bytes(STREAM)
    assert main([str(path), "--chunk-size", "9"]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(records) == 4
    assert not any("time" in r or "gap" in r for r in records)


# ---- the rest of the command line, which --timing must leave as it was --------------


def test_standard_input_is_read_with_a_dash(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stdin = io.TextIOWrapper(io.BytesIO("data: 你好\n\n".encode()))
    monkeypatch.setattr("sys.stdin", stdin)
    assert main(["-"]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["kind"], r.get("data")) for r in records] == [("event", "你好"), ("end", None)]


def test_an_event_over_max_event_size_fails_with_its_offset(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "big.sse"
    path.write_bytes(b"data: ok\n\ndata: " + b"x" * 100 + b"\n\n")
    assert main([str(path), "--max-event-size", "50"]) == 1
    captured = capsys.readouterr()
    assert [json.loads(line)["data"] for line in captured.out.splitlines()] == ["ok"]
    assert "at byte offset 60" in captured.err  # 10 bytes of the first event, then 50


def test_invalid_utf8_fails_unless_replaced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.sse"
    path.write_bytes(b"data: \xff\n\n")
    assert main([str(path)]) == 1
    assert "at byte offset 6" in capsys.readouterr().err
    assert main([str(path), "--errors", "replace"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[0])["data"] == "\ufffd"


def test_a_missing_file_exits_with_74(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path / "missing.sse")]) == 74
    assert "sse-sansio: error:" in capsys.readouterr().err


@pytest.mark.parametrize("option", ["--chunk-size", "--max-event-size"])
def test_sizes_below_one_are_refused(option: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc_info:
        main(["-", option, "0"])
    assert exc_info.value.code == 2
    assert f"argument {option}: must be at least 1" in capsys.readouterr().err
