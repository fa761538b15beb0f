"""The cassette file format: JSON Lines, read one line at a time, checked as it goes.

One JSON object per line (docs/cassettes.rst states every field), so that a cassette
diffs and reviews like text:

- line 1, the header: ``{"format": "sse-sansio-cassette", "version": 1, "metadata":
  {...}}``, the metadata free JSON;
- one line per chunk: ``{"t": seconds, "text": "..."}`` when the chunk is valid UTF-8 on
  its own, else ``{"t": seconds, "base64": "..."}``;
- the last line, the end: ``{"end": "clean" | "cut" | "error", "t": seconds}``, with
  ``"message"`` for an error, and only then.

Invariants checked on every line: times are finite, not negative and never go back;
chunks are never empty; exactly one header, first, and one end, last.  A malformed line
raises CassetteError naming its number, whatever is wrong with it (a file is input: a
time of 400 digits or JSON nested past the parser's depth is a CassetteError too, not
an OverflowError or a RecursionError); a line longer than MAX_LINE is refused before it
is parsed, so that reading holds one line at a time (read_records() is a generator: a
replay from a file needs no more memory than its longest chunk).
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any, Literal

__all__ = [
    "FORMAT",
    "MAX_LINE",
    "TOO_DEEP",
    "VERSION",
    "CassetteError",
    "Chunk",
    "End",
    "Ending",
    "check_end",
    "check_time",
    "chunk_record",
    "end_record",
    "header_record",
    "is_header",
    "read_records",
    "to_line",
]

FORMAT = "sse-sansio-cassette"
VERSION = 1
# The longest line a cassette file may hold: a chunk of 64 MiB, base64-encoded.
MAX_LINE = 96 * 1024 * 1024

End = Literal["clean", "cut", "error"]
_ENDS = ("clean", "cut", "error")

Chunk = tuple[float, bytes]

TOO_DEEP = "JSON nested too deep to read"


class CassetteError(ValueError):
    """A cassette that breaks the format or its invariants; ``line`` is the file's line
    number (from 1) when the cassette was read from a file, else ``None``."""

    def __init__(self, message: str, *, line: int | None = None) -> None:
        super().__init__(message if line is None else f"line {line}: {message}")
        self.line = line


def header_record(metadata: dict[str, Any]) -> dict[str, Any]:
    return {"format": FORMAT, "version": VERSION, "metadata": metadata}


def chunk_record(t: float, chunk: bytes) -> dict[str, Any]:
    """A chunk's record: its text when it is UTF-8 on its own, else base64."""
    try:
        return {"t": t, "text": chunk.decode("utf-8")}
    except UnicodeDecodeError:
        return {"t": t, "base64": base64.b64encode(chunk).decode("ascii")}


def end_record(end: End, error: str | None, t: float) -> dict[str, Any]:
    record: dict[str, Any] = {"end": end, "t": t}
    if error is not None:
        record["message"] = error
    return record


def to_line(record: dict[str, Any]) -> str:
    """A record as one line of a cassette file."""
    return json.dumps(record, ensure_ascii=False) + "\n"


def check_time(t: object, previous: float) -> float:
    if isinstance(t, bool) or not isinstance(t, (int, float)):
        raise CassetteError(f"a time is a finite number of seconds, not {t!r}")
    try:
        seconds = float(t)
    except OverflowError:  # an int of hundreds of digits: not worth quoting
        raise CassetteError("a time is a finite number of seconds, not a huge int") from None
    if not math.isfinite(seconds):
        raise CassetteError(f"a time is a finite number of seconds, not {t!r}")
    if t < 0:
        raise CassetteError(f"a time is not negative: {t!r}")
    if seconds < previous:
        raise CassetteError(f"the time goes back, from {previous!r} to {t!r}")
    return seconds


def check_end(end: object, error: object) -> None:
    if end not in _ENDS:
        raise CassetteError(f'the end is "clean", "cut" or "error", not {end!r}')
    if end == "error" and not isinstance(error, str):
        raise CassetteError(f"an error end has a message (a string), not {error!r}")
    if end != "error" and error is not None:
        raise CassetteError(f"only an error end has a message ({end!r} has {error!r})")


@dataclass(frozen=True)
class Ending:
    """A cassette file's end record."""

    end: End
    error: str | None
    time: float


Record = dict[str, Any] | Chunk | Ending  # the header's metadata, a chunk, the end


def read_records(file: IO[bytes]) -> Iterator[Record]:
    """Yield the header, each chunk and the end of a cassette file, checking each line.

    Holds one line at a time: a replay from a file needs no more memory than its
    longest chunk.

    Raises:
        CassetteError: a line breaks the format (its number is in the message).
    """
    number = 0
    previous = 0.0
    ended = False
    while True:
        raw = file.readline(MAX_LINE + 1)
        if not raw:
            break
        number += 1
        if len(raw) > MAX_LINE:
            raise CassetteError(f"a line longer than {MAX_LINE} bytes", line=number)
        if ended:
            raise CassetteError("a record after the end record", line=number)
        try:
            record = _parse_line(raw, number, previous)
        except CassetteError as exc:
            raise CassetteError(str(exc), line=number) from None
        if isinstance(record, tuple):
            previous = record[0]
        ended = isinstance(record, Ending)
        yield record
    if number == 0:
        raise CassetteError("the file is empty: a cassette starts with its header", line=1)
    if not ended:
        raise CassetteError(
            "the file has no end record (was it cut while being written?)", line=number + 1
        )


def _parse_line(raw: bytes, number: int, previous: float) -> Record:
    try:
        record = json.loads(raw)
    except (UnicodeDecodeError, ValueError) as exc:
        raise CassetteError(f"not a JSON object: {exc}") from None
    except RecursionError:
        raise CassetteError(TOO_DEEP) from None
    if not isinstance(record, dict):
        raise CassetteError(f"not a JSON object: {type(record).__name__}")
    if number == 1:
        return _header(record)
    if "format" in record:
        raise CassetteError("a second header")
    if "end" in record:
        _keys(record, {"end", "t"}, {"message"})
        t = check_time(record["t"], previous)
        check_end(record["end"], record.get("message"))
        return Ending(record["end"], record.get("message"), t)
    _keys(record, {"t"}, {"text", "base64"})
    t = check_time(record["t"], previous)
    if ("text" in record) == ("base64" in record):
        raise CassetteError('a chunk has "text" or "base64", exactly one')
    return t, _chunk_bytes(record)


def is_header(line: bytes) -> bool:
    """Whether ``line`` is a cassette file's first line (its version unchecked)."""
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):
        return False
    return isinstance(record, dict) and record.get("format") == FORMAT


def _header(record: dict[str, Any]) -> dict[str, Any]:
    if record.get("format") != FORMAT:
        raise CassetteError(f'not a cassette: the first line has no "format": "{FORMAT}"')
    _keys(record, {"format", "version", "metadata"}, set())
    if record["version"] != VERSION:
        raise CassetteError(
            f"format version {record['version']!r}; this sse_sansio reads version {VERSION}"
        )
    if not isinstance(record["metadata"], dict):
        raise CassetteError("the metadata is a JSON object")
    return record["metadata"]


def _keys(record: dict[str, Any], required: set[str], optional: set[str]) -> None:
    missing = required - record.keys()
    if missing:
        raise CassetteError(f"missing {sorted(missing)}")
    unknown = record.keys() - required - optional
    if unknown:
        raise CassetteError(f"unknown {sorted(unknown)}")


def _chunk_bytes(record: dict[str, Any]) -> bytes:
    if "text" in record:
        text = record["text"]
        if not isinstance(text, str) or not text:
            raise CassetteError('"text" is a non-empty string')
        try:
            return text.encode("utf-8")
        except UnicodeEncodeError:
            raise CassetteError('"text" holds a lone surrogate: use "base64"') from None
    encoded = record["base64"]
    if not isinstance(encoded, str):
        raise CassetteError('"base64" is a string')
    try:
        chunk = base64.b64decode(encoded, validate=True)
    except ValueError as exc:
        raise CassetteError(f'"base64" is not base64: {exc}') from None
    if not chunk:
        raise CassetteError("a chunk is not empty")
    return chunk
