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
  when reading stopped early (a protocol error, Ctrl-C).

Invariant: the loop reads through ``read1``/``read`` exactly as it reads a plain file,
so every other option behaves the same on a cassette.
"""

from __future__ import annotations

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
    it goes, one line per chunk: memory stays bounded however long the input runs, and
    the file holds every chunk read even if the process is killed (then without its end
    record, which a reader reports)."""

    def __init__(self, source: Any, clock: Callable[[], float], path: str) -> None:
        self._read = getattr(source, "read1", source.read)
        self._clock = clock
        self._start = clock()
        self._last = 0.0
        self._file = open(path, "w", encoding="utf-8", newline="\n")  # noqa: SIM115
        self._write(header_record({}))
        self._ended = False

    def _now(self) -> float:
        # Microseconds, as record() keeps them; a clock that went back is no time.
        self._last = max(self._last, round(self._clock() - self._start, 6))
        return self._last

    def _write(self, record: dict[str, Any]) -> None:
        self._file.write(to_line(record))
        self._file.flush()

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
        """Write the end record (once) and close the file."""
        if not self._ended:
            self._ended = True
            self._write(end_record(end, error, self._now()))
            self._file.close()


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
        reader = recording = _Recording(reader, options.get("clock", clock), record)
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
