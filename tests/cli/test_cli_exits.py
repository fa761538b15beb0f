"""The command line's ways out: an exit status for each outcome, never a traceback.

The statuses (docs: README's "Command line", ``--help``): 0 clean end, 1 protocol
error, 2 usage error, 3 cut stream, 74 input or output error, 141 (quietly) when the
reader of standard output went away.  Each case from the issue is run as a real
process where only a process shows it (closed descriptors, encodings, pipes), and in
process for coverage.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sse_sansio._cli._main import main
from sse_sansio._cli._run import _Recent, item_to_json, run
from sse_sansio._events import Event

ROOT = Path(__file__).resolve().parents[2]
CLEAN = "data: 你好\n\n".encode()
CUT = b"data: one\n\ndata: tw"


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.setdefault("PYTHONIOENCODING", "utf-8")
    env.update(extra)
    return env


def _cli(args: list[str], stdin: bytes = b"", **env: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "sse_sansio", *args],
        input=stdin,
        capture_output=True,
        env=_env(**env),
        timeout=60,
        check=False,
    )


def _shell(redirect: str, *args: str) -> subprocess.CompletedProcess[bytes]:
    """Run the command line with a shell redirection such as ``<&-`` (a closed stdin)."""
    return subprocess.run(
        ["sh", "-c", f'exec "$0" -m sse_sansio "$@" {redirect}', sys.executable, *args],
        capture_output=True,
        env=_env(),
        timeout=60,
        check=False,
    )


def _no_traceback(stderr: bytes) -> str:
    text = stderr.decode()
    assert "Traceback" not in text
    return text


def _records(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines()]


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "stream.sse"


# ---------------------------------------------------------------- clean and cut ends


def test_a_clean_end_exits_0_and_a_cut_one_exits_3(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path.write_bytes(CLEAN)
    assert main([str(path)]) == 0
    path.write_bytes(CUT)
    assert main([str(path)]) == 3
    out, err = capsys.readouterr()
    assert err == ""
    assert _records(out)[-1] == {
        "kind": "end",
        "truncated": True,
        "partial_line": 8,
        "partial_event": False,
    }


@pytest.mark.slow
@pytest.mark.parametrize(
    ("stream", "status"),
    [(CLEAN, 0), (CUT, 3), (b"data: unfinished\n", 3), (b"data: \xff\n\n", 1)],
)
def test_exit_status_of_a_real_process(stream: bytes, status: int) -> None:
    done = _cli(["-", "--chunk-size", "1"], stdin=stream)
    assert done.returncode == status
    _no_traceback(done.stderr)


# ---------------------------------------------------------------- usage errors: 2


@pytest.mark.slow
@pytest.mark.parametrize(
    "size", ["99999999999999999999", "9223372036854775807", "4611686018427387904", "1073741825"]
)
def test_a_chunk_size_too_big_is_a_usage_error(size: str) -> None:
    done = _cli(["-", "--chunk-size", size], stdin=CLEAN)
    assert done.returncode == 2
    assert done.stdout == b""
    err = _no_traceback(done.stderr)
    assert err.splitlines()[-1] == (
        "sse-sansio: error: argument --chunk-size: must be at most 1073741824"
    )


@pytest.mark.slow
def test_the_largest_chunk_size_is_accepted(path: Path) -> None:
    path.write_bytes(CLEAN)
    assert _cli([str(path), "--chunk-size", "1073741824"]).returncode == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--chunk-size", "1.5"], "argument --chunk-size: not a whole number: '1.5'"),
        (["--max-event-size", "0"], "argument --max-event-size: must be at least 1"),
        (["--chunk-size", str(2**30 + 1)], "argument --chunk-size: must be at most 1073741824"),
    ],
)
def test_bad_sizes_say_what_is_wrong(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        main(["-", *args])
    assert info.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == f"sse-sansio: error: {message}"


def test_help_lists_the_exit_statuses(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    statuses = out.split("exit status:\n", 1)[1].splitlines()
    assert [line.split()[0] for line in statuses[:8]] == ["0", "1", "2", "3", "4", "5", "6", "74"]
    assert "cut" in statuses[3]
    assert "141" in out
    # The signals' statuses too: 130 (Ctrl-C) and 143 (SIGTERM, a recording kept as a cut).
    assert "130" in out
    assert "143 (a --record file is kept" in out


# ---------------------------------------------------------------- input and output: 74


def test_a_closed_stdin_exits_74(monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    monkeypatch.setattr(sys, "stdin", None)
    assert main(["-"]) == 74
    assert capsys.readouterr().err == "sse-sansio: error: standard input is closed\n"


@pytest.mark.slow
def test_a_closed_stdin_in_a_real_process() -> None:
    done = _shell("<&-", "-")
    assert done.returncode == 74
    assert _no_traceback(done.stderr) == "sse-sansio: error: standard input is closed\n"


def test_a_closed_stdout_exits_74(path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    path.write_bytes(CLEAN)
    monkeypatch.setattr(sys, "stdout", None)
    assert main([str(path)]) == 74
    assert capsys.readouterr().err == "sse-sansio: error: standard output is closed\n"


@pytest.mark.slow
def test_a_closed_stdout_in_a_real_process(path: Path) -> None:
    path.write_bytes(CLEAN)
    done = _shell(">&-", str(path))
    assert done.returncode == 74
    assert _no_traceback(done.stderr) == "sse-sansio: error: standard output is closed\n"


def test_a_closed_stderr_too_still_gives_the_status(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdout", None)
    monkeypatch.setattr(sys, "stderr", None)
    assert main([str(path)]) == 74


def test_an_unreadable_input_exits_74(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path)]) == 74  # a directory
    err = capsys.readouterr().err
    assert err.startswith("sse-sansio: error: [Errno ")
    assert len(err.splitlines()) == 1


@pytest.mark.slow
def test_an_output_that_cannot_encode_the_text_gets_json_escapes() -> None:
    # PYTHONIOENCODING=ascii with non-ASCII data used to end in UnicodeEncodeError.
    done = _cli(["-"], stdin=CLEAN, PYTHONIOENCODING="ascii")
    assert done.returncode == 0
    _no_traceback(done.stderr)
    assert b"\\u4f60\\u597d" in done.stdout
    assert _records(done.stdout.decode("ascii"))[0]["data"] == "你好"


def test_run_escapes_only_where_the_output_cannot_encode() -> None:
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="ascii", write_through=True)
    assert run(io.BytesIO(CLEAN + b": plain\n"), out, chunk_size=4) == 0
    lines = raw.getvalue().decode("ascii").splitlines()
    assert "\\u4f60" in lines[0]
    assert lines[1] == '{"kind": "comment", "text": "plain", "start": 14, "end": 22}'


# ---------------------------------------------------------------- a closed pipe: quiet


class _ClosedPipe(io.StringIO):
    """A standard output whose reader has gone away (``| head -1``)."""

    def __init__(self, fd: int = -1) -> None:
        super().__init__()
        self.fd = fd

    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    def fileno(self) -> int:
        if self.fd < 0:
            raise io.UnsupportedOperation("fileno")
        return self.fd


def test_a_closed_pipe_ends_quietly(
    path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path.write_bytes(CLEAN)
    monkeypatch.setattr(sys, "stdout", _ClosedPipe())
    assert main([str(path)]) == 141
    assert capsys.readouterr().err == ""


def test_a_closed_pipe_is_pointed_at_devnull(
    path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # So that the interpreter's flush at exit has nowhere to fail.
    path.write_bytes(CLEAN)
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        with pytest.raises(BrokenPipeError):
            os.write(write_end, b"x")
        monkeypatch.setattr(sys, "stdout", _ClosedPipe(write_end))
        assert main([str(path)]) == 141
        assert os.write(write_end, b"x") == 1  # /dev/null now
    finally:
        os.close(write_end)
    assert capsys.readouterr().err == ""


@pytest.mark.slow
def test_head_dash_1_in_a_real_process(tmp_path: Path) -> None:
    big = tmp_path / "big.sse"
    big.write_bytes(b"data: hello\n\n" * 200_000)
    with (
        big.open("rb") as stdin,
        subprocess.Popen(
            [sys.executable, "-m", "sse_sansio", "-"],
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=_env(),
        ) as process,
    ):
        assert process.stdout is not None
        assert process.stderr is not None
        first = process.stdout.readline()
        process.stdout.close()  # what head does after its line
        err = process.stderr.read()
        status = process.wait(timeout=60)
    assert json.loads(first)["data"] == "hello"
    assert status == 141
    assert err == b""


def test_an_interrupt_ends_with_130_and_no_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    class Interrupted(io.BytesIO):
        def read1(self, size: int | None = -1) -> bytes:
            raise KeyboardInterrupt

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(Interrupted()))
    assert main(["-"]) == 130
    assert capsys.readouterr().err == ""


# ---------------------------------------------------------------- --json-data


@pytest.mark.parametrize(
    ("data", "printed", "is_json"),
    [
        ('{"delta": "你好", "n": [1, 2.5, null]}', {"delta": "你好", "n": [1, 2.5, None]}, True),
        ('"quoted"', "quoted", True),
        ("5", 5, True),
        ("[DONE]", "[DONE]", False),
        ("plain text", "plain text", False),
        ("", "", False),
        ("NaN", "NaN", False),
        ("[Infinity]", "[Infinity]", False),
        ("1e999", "1e999", False),  # decodes to inf, which JSON cannot write
        ("9" * 5000, "9" * 5000, False),  # more digits than int() takes
        ("[" * 100_000 + "]" * 100_000, "[" * 100_000 + "]" * 100_000, False),
    ],
    ids=lambda value: repr(value)[:20],
)
def test_json_data_decodes_only_json(data: str, printed: object, is_json: bool) -> None:
    record = item_to_json(Event(data=data), json_data=True)
    assert record["data"] == printed
    assert record["data_is_json"] is is_json
    json.loads(json.dumps(record, allow_nan=False))  # the line is JSON


def test_json_data_on_the_command_line(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path.write_bytes(b'data: {"a": 1}\n\n: c\ndata: x\n\n')
    assert main([str(path), "--json-data"]) == 0
    records = _records(capsys.readouterr().out)
    assert [(r.get("data"), r.get("data_is_json")) for r in records] == [
        ({"a": 1}, True),
        (None, None),
        ("x", False),
        (None, None),
    ]
    # Without the flag, data is the text and there is no data_is_json.
    assert main([str(path)]) == 0
    first = _records(capsys.readouterr().out)[0]
    assert first["data"] == '{"a": 1}'
    assert "data_is_json" not in first


# ---------------------------------------------------------------- the bytes at an error


@pytest.mark.parametrize(
    ("chunk_size", "excerpt"),
    [
        # 16 bytes each side of byte 24, the stream's 0xff: offsets 8 to 39.
        ("65536", "  bytes 8 to 39: \\n\\n: fine\\ndata: a\\xffb\\n\\ndata: never\\n"),
        # Read byte by byte, the error comes with the LF that ends its line (26).
        ("1", "  bytes 8 to 26: \\n\\n: fine\\ndata: a\\xffb\\n"),
    ],
)
def test_invalid_utf8_shows_the_bytes_around_the_offset(
    chunk_size: str, excerpt: str, path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path.write_bytes(b"data: ok\n\n: fine\ndata: a\xffb\n\ndata: never\n\n")
    assert main([str(path), "--chunk-size", chunk_size]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0].endswith("at byte offset 24")
    assert err[1] == excerpt
    assert err[2] == " " * err[1].index("\\xff") + "^"
    assert len(err) == 3


def test_the_excerpt_is_cut_at_the_stream_start(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path.write_bytes(b"\xc3(\n")
    assert main([str(path)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[1:] == ["  bytes 0 to 2: \\xc3(\\n", " " * 16 + "^"]


def test_an_event_over_the_limit_shows_its_first_byte_beyond_it(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path.write_bytes(b"data: 0123456789\n\n")
    assert main([str(path), "--max-event-size", "10"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0].endswith("at byte offset 10")
    assert err[1] == "  bytes 0 to 17: data: 0123456789\\n\\n"
    assert err[1][err[2].index("^")] == "4"  # stream byte 10


def test_recent_bytes_forget_what_is_too_old() -> None:
    recent = _Recent(size=8)
    recent.add(b"0123")
    recent.add(b"456789")  # holds "23456789", from offset 2
    assert recent.excerpt(1) is None
    assert recent.excerpt(10) is None
    assert recent.excerpt(2) == "  bytes 2 to 9: 23456789\n" + " " * 16 + "^"
    assert recent.excerpt(9) == "  bytes 2 to 9: 23456789\n" + " " * 23 + "^"


def test_no_excerpt_when_the_bad_byte_is_no_longer_held(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The line is longer than the bytes kept: its bad first byte has been forgotten
    # by the time the line is complete.
    path.write_bytes(b"data: \xff" + b"x" * 70_000 + b"\n\n")
    assert main([str(path), "--max-event-size", "100000"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err == ["sse-sansio: error: invalid UTF-8 (invalid start byte) at byte offset 6"]


def test_a_protocol_error_with_stderr_closed_still_exits_1(
    path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path.write_bytes(b"data: \xff\n\n")
    monkeypatch.setattr(sys, "stderr", None)
    assert main([str(path)]) == 1
    assert capsys.readouterr().out == ""
