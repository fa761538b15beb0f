"""The command line's cassette side: replay a cassette file, record the input.

``main()`` in _main.py hands every opened input here, and this module decides what the
read-feed-print loop (``_run.run``) reads:

- A seekable input whose first line is a cassette header replays the cassette: each
  read returns the next recorded chunk (split further only if it is larger than
  ``--chunk-size``), ``--timing`` shows the recorded times, and ``--pace`` waits for
  each chunk's time.  A recorded ``"cut"`` end exits 3 even where the bytes end on an
  event boundary; a recorded error exits 74, as a failed read does; a malformed
  cassette line exits 74 with the line number.
- ``--record FILE`` wraps the input (a live stream, a file, a replay) and writes each
  chunk to the cassette as it is read, then the end when the loop ends, however it
  ends: ``"clean"`` at the end of the input, ``"error"`` when a read failed, ``"cut"``
  when reading stopped early (a protocol error, Ctrl-C, a SIGTERM).

Invariants: the loop reads through ``read1``/``read`` exactly as it reads a plain file,
so every other option behaves the same on a cassette.  Recording never destroys a file:
FILE the input itself (the same file by device and inode, a symlink or standard input
included) is refused with status 2 before anything is opened for writing; the cassette
is written through testing/_cassette_target.py: to ``FILE.partial-<pid>`` beside it,
renamed over FILE only once its end record is written, so until then FILE is as it was,
and a write that fails (a full disk) removes the partial file and leaves FILE alone; a
symlink is written through, a FIFO or a character device directly (never replaced by a
regular file), and a directory, a block device or a socket is refused with status 2.
Only SIGKILL or a power cut leaves the partial file behind (never FILE truncated).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import IO, Any

from sse_sansio.testing._cassette import RecordedError
from sse_sansio.testing._cassette_file import (
    CassetteError,
    End,
    Ending,
    chunk_record,
    end_record,
    header_record,
    is_header,
    read_records,
    to_line,
)
from sse_sansio.testing._cassette_target import CassetteTarget

from ._run import EXIT_CLEAN, EXIT_IO_ERROR, EXIT_TRUNCATED, EXIT_USAGE, error, run

__all__ = ["run_input"]


class _Replay:
    """A binary reader over a cassette file's chunks, one record at a time."""

    def __init__(
        self,
        file: IO[bytes],
        *,
        pace: bool,
        sleep: Callable[[float], object],
        clock: Callable[[], float],
    ) -> None:
        self._records = read_records(file)
        next(self._records)  # the header, already recognized
        self._pending = b""
        self._pace = pace
        self._sleep = sleep
        self._clock = clock
        self._started = clock()
        self.time = 0.0
        self.ending: Ending | None = None

    def recorded_time(self) -> float:
        """The recorded time of the chunk being read: the replay's clock."""
        return self.time

    def read(self, size: int) -> bytes:
        if not self._pending:
            if self.ending is not None:
                return b""  # read again after the end, as a file at its end
            record = next(self._records)
            assert not isinstance(record, dict)  # read_records() allows one header
            self._wait(record.time if isinstance(record, Ending) else record[0])
            if isinstance(record, Ending):
                self.ending = record
                if record.error is not None:
                    raise RecordedError(record.error)
                return b""
            self.time, self._pending = record
        piece, self._pending = self._pending[:size], self._pending[size:]
        return piece

    read1 = read

    def _wait(self, t: float) -> None:
        if self._pace:
            delay = self._started + t - self._clock()
            if delay > 0:
                self._sleep(delay)


class _Recording:
    """A binary reader that writes what it reads from ``source`` to a cassette file as
    it goes, one line per chunk, through a CassetteTarget (a partial file renamed to
    ``path`` at the end, or a FIFO or device written directly): memory stays bounded
    however long the input runs, and ``path`` is either the old file or a whole
    cassette."""

    def __init__(self, source: Any, clock: Callable[[], float], target: CassetteTarget) -> None:
        self._read = getattr(source, "read1", source.read)
        self._clock = clock
        self._start = clock()
        self._last = 0.0
        self._target = target
        self._path = target.path
        self._ended = False
        self._file = target.open()
        self._write(header_record({}))

    def _now(self) -> float:
        # Microseconds, as record() keeps them; a clock that went back is no time.
        self._last = max(self._last, round(self._clock() - self._start, 6))
        return self._last

    def _write(self, record: dict[str, Any]) -> None:
        try:
            self._file.write(to_line(record))
            self._file.flush()
        except OSError as exc:
            self._ended = True
            self._target.abandon()
            left = "" if self._target.direct else f": {self._path} is left as it was"
            raise OSError(
                exc.errno, f"cannot write the cassette ({exc.strerror or exc}){left}"
            ) from exc

    def read(self, size: int) -> bytes:
        try:
            chunk: bytes = self._read(size)
        except Exception as exc:
            self.close("error", f"{type(exc).__name__}: {exc}")
            raise
        if chunk:
            self._write(chunk_record(self._now(), chunk))
        else:
            self.close("clean")
        return chunk

    read1 = read

    def close(self, end: End = "cut", error: str | None = None) -> None:
        """Write the end record (once), close the file and put it into place."""
        if not self._ended:
            self._write(end_record(end, error, self._now()))
            self._ended = True
            self._target.commit()


def _same_file(source: IO[bytes], path: str) -> bool:
    """Whether ``path`` names the file ``source`` reads (by device and inode)."""
    try:
        read, written = os.fstat(source.fileno()), os.stat(path)
    except (AttributeError, OSError, ValueError):  # no such file, or not a real file
        return False
    return (read.st_dev, read.st_ino) == (written.st_dev, written.st_ino)


def _is_cassette(source: IO[bytes]) -> bool:
    """Whether ``source`` is a seekable file that starts with a cassette header."""
    try:
        if not source.seekable():
            return False
        first = source.readline(1 << 16)
        source.seek(0)
    except (AttributeError, OSError, ValueError):  # not a file, or a closed one
        return False
    return is_header(first)


def run_input(
    source: IO[bytes],
    out: IO[str],
    *,
    name: str,
    record: str | None = None,
    pace: bool = False,
    sleep: Callable[[float], object] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    **options: Any,
) -> int:
    """Run the command line's loop over ``source`` (named ``name`` in messages),
    replaying it if it is a cassette and recording it to ``record``; return the exit
    status."""
    replay: _Replay | None = None
    reader: Any = source
    if _is_cassette(source):
        reader = replay = _Replay(source, pace=pace, sleep=sleep, clock=clock)
        options["clock"] = replay.recorded_time
    elif pace:
        error(f"--pace replays a cassette, and {name} is not one")
        return EXIT_USAGE
    recording = None
    if record is not None:
        if _same_file(source, record):
            error(f"--record {record} is the input {name}: recording would destroy it")
            return EXIT_USAGE
        try:
            target = CassetteTarget(record)
        except ValueError as exc:
            error(f"--record: {exc}")
            return EXIT_USAGE
        reader = recording = _Recording(reader, options.get("clock", clock), target)
    try:
        status = run(reader, out, **options)
    except RecordedError as exc:
        out.flush()
        error(f"{name}: the recorded stream ended with an error: {exc}")
        return EXIT_IO_ERROR
    except CassetteError as exc:
        out.flush()
        error(f"{name}: not a valid cassette: {exc}")
        return EXIT_IO_ERROR
    finally:
        if recording is not None:
            recording.close()  # "cut" unless the input ended or failed
    cut = replay is not None and replay.ending is not None and replay.ending.end == "cut"
    if cut and status == EXIT_CLEAN:
        error(f"{name}: the recorded connection was cut")
        return EXIT_TRUNCATED
    return status
