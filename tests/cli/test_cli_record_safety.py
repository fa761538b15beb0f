"""``--record`` never destroys its input or leaves a truncated cassette (issue 36, item 13).

- Recording onto the file being read (named, or given as standard input) is refused
  with status 2 and a message, before anything is opened for writing.
- The cassette is written to a temporary file beside it and renamed at the end, so the
  old file stays whole while recording runs; a write that fails (a full disk, here a
  file size limit) leaves the old file, and no temporary file; a SIGTERM ends the
  recording as a cut, with a loadable cassette, and status 143.
"""

from __future__ import annotations

import builtins
import errno
import io
import os
import resource
import signal
import stat
import subprocess
import sys
import threading
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
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "in.sse"
    source.write_bytes(b"data: a\n\n")
    path = tmp_path / "out.jsonl"
    before = _old_cassette(path)

    def refuse(src: str, dst: str) -> None:
        raise PermissionError(13, "Permission denied", dst)

    monkeypatch.setattr(os, "replace", refuse)
    assert main([str(source), "--record", str(path)]) == 74
    assert "out.jsonl" in capsys.readouterr().err
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.sse", "out.jsonl"]


# ---- issue 41, item 7: a --record path that is not a regular file -------------------------


def test_a_symlink_is_recorded_through_and_stays_a_link(tmp_path: Path) -> None:
    source = tmp_path / "in.sse"
    source.write_bytes(b"data: a\n\n")
    real = tmp_path / "kept" / "real.jsonl"
    real.parent.mkdir()
    _old_cassette(real)
    link = tmp_path / "link.jsonl"
    link.symlink_to(real)
    assert main([str(source), "--record", str(link)]) == 0
    assert link.is_symlink()
    assert link.resolve() == real
    assert Cassette.load(real).data == b"data: a\n\n"
    assert sorted(p.name for p in real.parent.iterdir()) == ["real.jsonl"]
    dangling = tmp_path / "dangling.jsonl"
    dangling.symlink_to(tmp_path / "made.jsonl")  # names a file that is not there yet
    assert main([str(source), "--record", str(dangling)]) == 0
    assert dangling.is_symlink()
    assert Cassette.load(tmp_path / "made.jsonl").data == b"data: a\n\n"


def test_a_fifo_is_written_directly_and_stays_a_fifo(tmp_path: Path) -> None:
    source = tmp_path / "in.sse"
    source.write_bytes(b"data: a\n\ndata: b\n\n")
    fifo = tmp_path / "cassette.fifo"
    os.mkfifo(fifo)
    read: list[bytes] = []
    # A FIFO's writer waits for its reader, as `tee` would.  A daemon: were the FIFO
    # renamed over, nothing would ever open it for writing, and the reader would wait.
    reader = threading.Thread(target=lambda: read.append(fifo.read_bytes()), daemon=True)
    reader.start()
    assert main([str(source), "--record", str(fifo)]) == 0
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # not replaced by a regular file
    reader.join(timeout=30)
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(read[0])
    assert Cassette.load(copy).data == b"data: a\n\ndata: b\n\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cassette.fifo", "copy.jsonl", "in.sse"]


def pretend_device(monkeypatch: pytest.MonkeyPatch, path: Path, mode: int) -> None:
    """Make os.stat say ``path`` (a plain file of the test's own) is a node of ``mode``:
    the tests never hand a real device to the code under test (as root, a version that
    renamed over it would replace /dev/null or /dev/full for the whole machine)."""
    real_stat = os.stat

    def faked(name: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        fields = list(real_stat(name, *args, **kwargs))
        if os.fspath(name) == str(path):
            fields[0] = mode | 0o666
        return os.stat_result(fields)

    monkeypatch.setattr(os, "stat", faked)


def test_a_character_device_is_written_in_place_and_stays_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "in.sse"
    source.write_bytes(b"data: a\n\n")
    device = tmp_path / "device"
    device.write_bytes(b"old")
    inode = os.stat(device).st_ino
    pretend_device(monkeypatch, device, stat.S_IFCHR)
    assert main([str(source), "--record", str(device)]) == 0
    monkeypatch.undo()
    assert os.stat(device).st_ino == inode  # written in place, never renamed over
    assert Cassette.load(device).data == b"data: a\n\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["device", "in.sse"]


def test_a_device_that_is_full_fails_the_recording_and_stays_a_device(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # /dev/full, imitated: a character device (by os.stat) whose writes fail with ENOSPC.
    source = tmp_path / "in.sse"
    source.write_bytes(b"data: a\n\n")
    device = tmp_path / "full"
    device.write_bytes(b"")
    inode = os.stat(device).st_ino
    pretend_device(monkeypatch, device, stat.S_IFCHR)

    class Full(io.StringIO):
        def flush(self) -> None:
            raise OSError(errno.ENOSPC, "No space left on device")

    real_open = builtins.open

    def opening(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if os.fspath(file) == str(device):
            assert mode == "w"  # in place: no partial file, no rename
            return Full()
        return real_open(file, mode, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", opening)
    status = main([str(source), "--record", str(device)])
    monkeypatch.undo()
    assert status == 74
    assert "No space left on device" in capsys.readouterr().err
    assert os.stat(device).st_ino == inode
    assert sorted(p.name for p in tmp_path.iterdir()) == ["full", "in.sse"]


@pytest.mark.parametrize("kind", ["directory", "block device", "socket"])
def test_a_directory_block_device_or_socket_is_refused_with_status_2(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    kind: str,
) -> None:
    source = tmp_path / "in.sse"
    source.write_bytes(b"data: a\n\n")
    target = tmp_path / "taken"
    (target / "inside").mkdir(parents=True)
    modes = {"block device": stat.S_IFBLK, "socket": stat.S_IFSOCK}
    if kind in modes:
        pretend_device(monkeypatch, target, modes[kind])
    assert main([str(source), "--record", str(target)]) == 2
    assert f"{target} is a {kind}" in capsys.readouterr().err
    monkeypatch.undo()
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
