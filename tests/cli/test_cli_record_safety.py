"""``--record`` never destroys its input or leaves a truncated cassette (issue 36, item 13).

- Recording onto the file being read (named, or given as standard input) is refused
  with status 2 and a message, before anything is opened for writing.
- The cassette is written to a temporary file beside it and renamed at the end, so the
  old file stays whole while recording runs; a write that fails (a full disk, here a
  file size limit) leaves the old file, and no temporary file; a SIGTERM ends the
  recording as a cut, with a loadable cassette, and status 143.
"""

from __future__ import annotations

import io
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sse_sansio._cli._cassette import run_input
from sse_sansio._cli._main import main
from sse_sansio.testing import Cassette

ROOT = Path(__file__).resolve().parents[2]
OLD = Cassette.from_chunks([(0.5, b"data: old\n\n")])


def _old_cassette(path: Path) -> bytes:
    OLD.save(path)
    return path.read_bytes()


def test_recording_onto_the_input_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "stream.jsonl"
    before = _old_cassette(path)
    assert main([str(path), "--record", str(path)]) == 2
    assert "would destroy" in capsys.readouterr().err
    assert path.read_bytes() == before
    link = tmp_path / "link.jsonl"
    link.symlink_to(path)
    assert main([str(path), "--record", str(link)]) == 2
    assert path.read_bytes() == before


def test_recording_onto_the_file_given_as_standard_input_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "stream.jsonl"
    before = _old_cassette(path)
    with path.open("rb") as raw:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(raw))
        assert main(["-", "--record", str(path)]) == 2
    assert "is the input" in capsys.readouterr().err
    assert path.read_bytes() == before


class _Watching:
    """A source that checks, at each read, that the old cassette is still whole."""

    def __init__(self, path: Path, old: bytes, chunks: list[bytes]) -> None:
        self.path, self.old, self.chunks = path, old, chunks
        self.checked = 0

    def read(self, size: int) -> bytes:
        assert self.path.read_bytes() == self.old
        self.checked += 1
        return self.chunks.pop(0) if self.chunks else b""


def test_the_old_file_stays_whole_until_the_recording_is_renamed_over_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "out.jsonl"
    source = _Watching(path, _old_cassette(path), [b"data: new\n", b"\n"])
    status = run_input(source, io.StringIO(), name="x", record=str(path), chunk_size=1024)  # type: ignore[arg-type]
    assert (status, source.checked) == (0, 3)
    new = Cassette.load(path)
    assert (new.data, new.end) == (b"data: new\n\n", "clean")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "out.jsonl"
    before = _old_cassette(path)
    source = tmp_path / "big.sse"
    source.write_bytes(b"data: " + b"x" * 100_000 + b"\n\n")
    # A full disk, as the kernel reports it for a file size limit: EFBIG, not a signal.
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    old_handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (50_000, hard))
    try:
        status = main([str(source), "--record", str(path), "--chunk-size", "4096"])
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, old_handler)
    assert status == 74
    assert f"{path} is left as it was" in capsys.readouterr().err
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.sse", "out.jsonl"]


def test_a_cassette_that_cannot_be_renamed_into_place_leaves_no_partial_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "in.sse"
    source.write_bytes(b"data: a\n\n")
    target = tmp_path / "taken"
    (target / "inside").mkdir(parents=True)  # a directory: no file can be renamed over it
    assert main([str(source), "--record", str(target)]) == 74
    assert "taken" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.sse", "taken"]
    assert [p.name for p in target.iterdir()] == ["inside"]


class _Terminating:
    """A source that gets a SIGTERM after its first chunk, as from `kill`."""

    def __init__(self) -> None:
        self.reads = 0

    def read(self, size: int) -> bytes:
        self.reads += 1
        if self.reads == 2:
            os.kill(os.getpid(), signal.SIGTERM)
        return b"data: a\n\ndata: b"


def test_a_sigterm_ends_the_recording_as_a_loadable_cut(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "out.jsonl"
    _old_cassette(path)

    def run_terminated(source: Any, out: Any, **options: Any) -> int:
        return run_input(_Terminating(), out, **options)  # type: ignore[arg-type]

    monkeypatch.setattr("sse_sansio._cli._main.run_input", run_terminated)
    before = signal.getsignal(signal.SIGTERM)
    assert main([str(path), "--record", str(path) + ".new"]) == 143
    assert signal.getsignal(signal.SIGTERM) == before  # put back
    cassette = Cassette.load(str(path) + ".new")
    assert cassette.end == "cut"
    assert cassette.data.startswith(b"data: a\n\ndata: b")


@pytest.mark.slow  # a subprocess
def test_a_killed_recorder_process_leaves_a_loadable_cassette(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    process = subprocess.Popen(
        [sys.executable, "-m", "sse_sansio", "-", "--record", str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert process.stdin is not None
    assert process.stdout is not None
    process.stdin.write(b"data: one\n\n")
    process.stdin.flush()
    assert b'"one"' in process.stdout.readline()  # read, recorded and printed
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=30)
    assert (process.returncode, err) == (143, b"")
    cassette = Cassette.load(path)
    assert (cassette.data, cassette.end) == (b"data: one\n\n", "cut")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl"]
