"""The command line (``python -m sse_sansio``), in-process and as a real subprocess."""

from __future__ import annotations

import io
import json
import os
import runpy
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sse_sansio._cli._main import main
from sse_sansio._cli._run import run

ROOT = Path(__file__).resolve().parents[2]

STREAM = (
    b": hello\n"
    b"event: greet\nid: 1\nretry: 300\ndata: line one\ndata: line two\n\n"
    b"data: \xe4\xbd\xa0\xe5\xa5\xbd\n\n"
    b"data: cut"
)
# The JSON objects the command line prints for STREAM, written from the documented
# format: one per item, marked by "kind".
STREAM_JSON: list[dict[str, Any]] = [
    {"kind": "comment", "text": "hello", "start": 0, "end": 8},
    {
        "kind": "event",
        "type": "greet",
        "data": "line one\nline two",
        "id": "1",
        "retry": 300,
        "start": 8,
        "end": 69,
    },
    {
        "kind": "event",
        "type": "message",
        "data": "你好",
        "id": "1",
        "retry": None,
        "start": 69,
        "end": 83,
    },
    {"kind": "end", "truncated": True, "partial_line": 9, "partial_event": False},
]


def run_main(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def json_lines(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines()]


def check_objects(got: list[dict[str, Any]], expected: list[dict[str, Any]]) -> None:
    """Every documented key has its expected value (extra keys are allowed)."""
    assert len(got) == len(expected)
    for obj, want in zip(got, expected, strict=True):
        assert {key: obj.get(key) for key in want} == want


@pytest.fixture
def stream_file(tmp_path: Path) -> Path:
    path = tmp_path / "stream.sse"
    path.write_bytes(STREAM)
    return path


def test_stream_offsets_in_expectations_are_right() -> None:
    # Guard for the hand-computed offsets above.
    assert STREAM[0:8] == b": hello\n"
    assert STREAM[69:83] == "data: 你好\n\n".encode()
    assert len(STREAM) - 83 == 9


@pytest.mark.parametrize("chunk_size", ["1", "2", "7", "65536"])
def test_json_lines_per_kind(
    stream_file: Path, chunk_size: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_main([str(stream_file), "--chunk-size", chunk_size], capsys)
    assert code == 3  # STREAM ends in a cut line
    assert err == ""
    check_objects(json_lines(out), STREAM_JSON)


def test_chunk_size_one_and_whole_print_the_same(
    stream_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, bytewise, _ = run_main([str(stream_file), "--chunk-size", "1"], capsys)
    _, whole, _ = run_main([str(stream_file)], capsys)
    assert bytewise == whole


def test_non_ascii_is_printed_as_text(
    stream_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, out, _ = run_main([str(stream_file)], capsys)
    assert "你好" in out


def test_stdin(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(STREAM)))
    code, out, _ = run_main(["-", "--chunk-size", "3"], capsys)
    assert code == 3
    check_objects(json_lines(out), STREAM_JSON)


def test_errors_replace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.sse"
    path.write_bytes(b"data: a\xffb\n\n")
    code, out, _ = run_main([str(path), "--errors", "replace"], capsys)
    assert code == 0
    assert [obj["data"] for obj in json_lines(out) if obj["kind"] == "event"] == ["a\ufffdb"]


def test_strict_error_exits_1_after_printing_earlier_items(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.sse"
    path.write_bytes(b"data: ok\n\n: fine\ndata: \xff\n\ndata: never\n\n")
    for chunk_size in ("1", "65536"):
        code, out, err = run_main([str(path), "--chunk-size", chunk_size], capsys)
        assert code == 1
        check_objects(
            json_lines(out),
            [{"kind": "event", "data": "ok"}, {"kind": "comment", "text": "fine"}],
        )
        assert "byte offset 23" in err


def test_max_event_size(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "big.sse"
    path.write_bytes(b"data: 12\n\ndata: 123\n\n")  # 10 and 11 bytes: 9 and 10 counted
    code, out, err = run_main([str(path), "--max-event-size", "9"], capsys)
    assert code == 1
    check_objects(json_lines(out), [{"kind": "event", "data": "12"}])
    assert "byte offset 19" in err
    code, out, err = run_main([str(path), "--max-event-size", "11"], capsys)
    assert code == 0
    assert [obj["kind"] for obj in json_lines(out)] == ["event", "event", "end"]


def test_missing_file_exits_74(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_main([str(tmp_path / "absent.sse")], capsys)
    assert code == 74
    assert out == ""
    assert "absent.sse" in err


@pytest.mark.parametrize(
    "args",
    [
        ["--chunk-size", "0"],
        ["--chunk-size", "-3"],
        ["--chunk-size", "x"],
        ["--max-event-size", "0"],
        ["--max-event-size", "big"],
        ["--errors", "ignore"],
    ],
)
def test_bad_options_are_rejected(
    stream_file: Path, args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        main([str(stream_file), *args])
    assert info.value.code == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "usage" in err


def test_python_dash_m_in_process(
    stream_file: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "argv", ["sse-sansio", str(stream_file)])
    # pytest rewrites the asserts of every installed package that registers a pytest
    # plugin, sse_sansio too (its pytest11 entry point), and its import hook lacks the
    # get_code() that runpy calls: find __main__ without it.
    hooks = [f for f in sys.meta_path if type(f).__name__ != "AssertionRewritingHook"]
    monkeypatch.setattr(sys, "meta_path", hooks)
    with pytest.raises(SystemExit) as info:
        runpy.run_module("sse_sansio", run_name="__main__")
    assert info.value.code == 3
    check_objects(json_lines(capsys.readouterr().out), STREAM_JSON)


def _subprocess(args: list[str], stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["PYTHONIOENCODING"] = "utf-8"
    return subprocess.run(
        [sys.executable, "-m", "sse_sansio", *args],
        input=stdin,
        capture_output=True,
        cwd=ROOT,
        env=env,
        timeout=60,
        check=False,
    )


@pytest.mark.slow
def test_subprocess_stdin_and_error() -> None:
    done = _subprocess(["-", "--chunk-size", "1"], stdin=STREAM)
    assert done.returncode == 3
    check_objects(json_lines(done.stdout.decode()), STREAM_JSON)
    failed = _subprocess(["-"], stdin=b"data: ok\n\ndata: \xc3(\n\n")
    assert failed.returncode == 1
    check_objects(json_lines(failed.stdout.decode()), [{"kind": "event", "data": "ok"}])
    assert b"byte offset 16" in failed.stderr


@pytest.mark.slow
def test_subprocess_missing_file() -> None:
    done = _subprocess(["no-such-file.sse"])
    assert done.returncode == 74
    assert done.stdout == b""


def test_timing_with_a_fake_clock() -> None:
    # run() reads the clock once at the start and once after each read; the chunks
    # are ": a\n", "data", ": b\n", "\n" and the final b"".
    ticks = iter([10.0, 10.5, 11.0, 12.0, 13.0, 14.0])
    out = io.StringIO()
    code = run(
        io.BytesIO(b": a\ndata: b\n\n"),
        out,
        chunk_size=4,
        timing=True,
        clock=lambda: next(ticks),
    )
    assert code == 0
    check_objects(
        json_lines(out.getvalue()),
        [
            {"kind": "comment", "text": "a", "time": 0.5, "gap": 0.5},
            {"kind": "event", "data": "b", "time": 3.0, "gap": 2.5},
            {"kind": "end", "time": 4.0, "gap": 1.0},
        ],
    )


def test_timing_option(stream_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_main([str(stream_file), "--timing"], capsys)
    assert code == 3
    objects = json_lines(out)
    check_objects(objects, STREAM_JSON)
    times = [obj["time"] for obj in objects]
    assert all(gap >= 0 for gap in (obj["gap"] for obj in objects))
    assert times == sorted(times)
    # Without --timing there are no such keys.
    _, plain, _ = run_main([str(stream_file)], capsys)
    assert all("time" not in obj and "gap" not in obj for obj in json_lines(plain))
