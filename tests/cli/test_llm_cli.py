"""``sse-sansio FILE --llm DIALECT``: the items, then the outcome last; one status each."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sse_sansio._cli._main import main

DATA = Path(__file__).parents[1] / "data" / "llm"

# The command line's exit statuses (the shared table): completed 0, cut 3, stopped 4,
# failed 5, a protocol error 1, an unreadable input 74.
CASES = [
    ("anthropic-end-turn.sse", "anthropic", 0, "completed"),
    ("openai-chat-no-done.sse", "openai-chat", 3, "cut"),
    ("gemini-max-tokens.sse", "gemini", 4, "stopped"),
    ("openai-responses-failed.sse", "openai-responses", 5, "failed"),
    ("openai-responses-failed.sse", "auto", 5, "failed"),
]


def lines(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines()]


@pytest.mark.parametrize(("name", "dialect", "status", "word"), CASES)
def test_outcome_is_the_last_line_and_sets_the_status(
    name: str, dialect: str, status: int, word: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main([str(DATA / name), "--llm", dialect, "--chunk-size", "7"])
    out, err = capsys.readouterr()
    assert (code, err) == (status, "")
    records = lines(out)
    assert [r["kind"] for r in records[-2:]] == ["end", "outcome"]
    assert all(r["kind"] in ("event", "comment") for r in records[:-2])
    assert records[-1]["outcome"] == word
    assert records[-1]["reason"]


def test_a_stream_cut_mid_event(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "cut.sse"
    path.write_bytes((DATA / "anthropic-end-turn.sse").read_bytes()[:-5])
    assert main([str(path), "--llm", "anthropic"]) == 3
    last = lines(capsys.readouterr().out)[-1]
    assert (last["outcome"], last["cut"]) == ("cut", "mid-event")


def test_standard_input_and_timing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stdin = io.TextIOWrapper(io.BytesIO((DATA / "gemini-stop.sse").read_bytes()))
    monkeypatch.setattr(sys, "stdin", stdin)
    assert main(["-", "--llm", "gemini", "--timing"]) == 0
    records = lines(capsys.readouterr().out)
    assert all("time" in r and "gap" in r for r in records[:-1])
    assert records[-1]["dialect"] == "gemini"


def test_a_payload_that_is_not_json_is_a_protocol_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.sse"
    path.write_bytes(b'data: {"choices": []}\n\ndata: {not json\n\n')
    assert main([str(path), "--llm", "openai-chat"]) == 1
    out, err = capsys.readouterr()
    assert [r["kind"] for r in lines(out)] == ["event", "event"]
    assert "'message' event at byte offset 23 is not JSON" in err


def test_a_parser_error_is_a_protocol_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.sse"
    path.write_bytes(b"data: \xff\n\n")
    assert main([str(path), "--llm", "auto"]) == 1
    assert "byte offset 6" in capsys.readouterr().err


def test_an_unreadable_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path / "missing.sse"), "--llm", "auto"]) == 74
    assert "missing.sse" in capsys.readouterr().err


def test_an_unknown_dialect_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["-", "--llm", "openai"])
    assert caught.value.code == 2
    assert "openai-chat" in capsys.readouterr().err


@pytest.mark.slow
def test_as_a_real_subprocess() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "sse_sansio", "-", "--llm", "auto"],
        input=(DATA / "anthropic-max-tokens.sse").read_bytes(),
        capture_output=True,
        check=False,
    )
    assert result.returncode == 4
    last = json.loads(result.stdout.splitlines()[-1])
    assert (last["kind"], last["outcome"], last["stop_reason"]) == (
        "outcome",
        "stopped",
        "max_tokens",
    )


def test_closed_standard_input(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", None)
    assert main(["-", "--llm", "auto"]) == 74
    assert "standard input is closed" in capsys.readouterr().err


class _ClosedPipe(io.StringIO):
    """An output whose reader went away; with ``fd``, backed by a real descriptor."""

    def __init__(self, fd: int | None = None) -> None:
        super().__init__()
        self.fd = fd

    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    def fileno(self) -> int:
        if self.fd is None:
            raise io.UnsupportedOperation("fileno")
        return self.fd


@pytest.mark.parametrize("real_file", [False, True])
def test_a_closed_output_pipe_ends_quietly(
    real_file: bool,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with open(tmp_path / "out", "wb") as backing:
        out = _ClosedPipe(backing.fileno() if real_file else None)
        monkeypatch.setattr(sys, "stdout", out)
        assert main([str(DATA / "gemini-stop.sse"), "--llm", "gemini"]) == 141
    assert capsys.readouterr().err == ""


@pytest.mark.slow
def test_a_closed_output_pipe_as_a_real_subprocess() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "sse_sansio", "-", "--llm", "auto", "--chunk-size", "1"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None
    process.stdout.close()  # the reader goes away before the first line
    _, err = process.communicate((DATA / "anthropic-end-turn.sse").read_bytes(), timeout=60)
    assert (process.returncode, err) == (141, b"")


def test_max_event_size_applies(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(DATA / "anthropic-end-turn.sse")
    assert main([path, "--llm", "anthropic", "--max-event-size", "64"]) == 1
    assert "64" in capsys.readouterr().err
