"""Cassettes: a stream kept as it arrived, chunk by chunk, with its timing and its end.

A cassette is the list of ``(seconds, bytes)`` chunks a client read, the time each
read returned counted from the start of the recording, and how the stream ended:
``"clean"`` (the transport said the body was over), ``"cut"`` (the connection went away
mid-body, or the reader stopped) or ``"error"`` (reading raised; the message is kept).
The bytes are the body exactly as received; nothing is parsed on the way in.

The file format (docs/cassettes.rst states every field) is JSON Lines, one record per
line, so that a cassette diffs and reviews like text:

- line 1, the header: ``{"format": "sse-sansio-cassette", "version": 1, "metadata":
  {...}}``; the metadata is free JSON, with ``url``, ``status`` and ``headers`` (a list
  of ``[name, value]`` pairs) understood, and secret headers removed (SECRET_HEADERS);
- one line per chunk: ``{"t": seconds, "text": "..."}`` when the chunk is valid UTF-8 on
  its own, else ``{"t": seconds, "base64": "..."}``;
- the last line, the end: ``{"end": "clean" | "cut" | "error", "t": seconds}``, with
  ``"message"`` for an error.

Invariants, checked when a cassette is made and when a file is read: chunks are never
empty, times are finite, not negative and never go back, the end comes no earlier than
the last chunk, and only an error end has a message.  A malformed file fails with a
CassetteError naming its line; a line longer than MAX_LINE is refused before it is
parsed, so that reading holds at most one line beyond the chunks themselves.

Faults (cut_at, stall_at, rechunk, with_keepalives) and redact() return new cassettes;
a Cassette never changes once made.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import math
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import cycle
from typing import IO, Any, Literal

from ._events import Comment, EndOfStream, Event
from ._implementation import Connection

__all__ = [
    "FORMAT",
    "MAX_LINE",
    "SECRET_HEADERS",
    "VERSION",
    "Cassette",
    "CassetteError",
    "End",
    "Ending",
    "RecordedError",
    "chunk_record",
    "end_record",
    "header_record",
    "is_header",
    "line",
    "read_records",
    "replay",
]

FORMAT = "sse-sansio-cassette"
VERSION = 1
# The longest line a cassette file may hold: a chunk of 64 MiB, base64-encoded.
MAX_LINE = 96 * 1024 * 1024
# Removed from metadata["headers"] unless the caller keeps them: credentials in either
# direction (the request's Authorization, Cookie, API keys; the response's Set-Cookie).
SECRET_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "cookie",
        "set-cookie",
        "x-api-key",
        "api-key",
    }
)

End = Literal["clean", "cut", "error"]
_ENDS = ("clean", "cut", "error")

Chunk = tuple[float, bytes]


class CassetteError(ValueError):
    """A cassette that breaks the format or its invariants; ``line`` is the file's line
    number (from 1) when the cassette was read from a file, else ``None``."""

    def __init__(self, message: str, *, line: int | None = None) -> None:
        super().__init__(message if line is None else f"line {line}: {message}")
        self.line = line


class RecordedError(Exception):
    """Raised by :func:`replay` at the end of a cassette that ended with an error: the
    recorded exception cannot be rebuilt, so its message is carried by this one."""


@dataclass(frozen=True)
class Cassette:
    """A recorded stream: its chunks with their times, how it ended, and metadata.

    Make one with :meth:`from_chunks`, :meth:`load` or by recording
    (:func:`~sse_sansio.testing.record`).

    Attributes:
        chunks: The ``(seconds, bytes)`` pairs, in order: each chunk as one read
            returned it, with the time since the start of the recording.
        end: ``"clean"``, ``"cut"`` or ``"error"``.
        error: The error's message for an ``"error"`` end, else ``None``.
        end_time: When the end was seen, in seconds since the start.
        metadata: Free JSON data: ``url``, ``status`` and ``headers`` are understood.
    """

    chunks: list[Chunk]
    end: End = "clean"
    error: str | None = None
    end_time: float = 0.0
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _check(self)

    @classmethod
    def from_chunks(
        cls,
        chunks: Iterable[tuple[float, bytes | bytearray | memoryview]],
        *,
        end: End = "clean",
        error: str | None = None,
        end_time: float | None = None,
        metadata: Mapping[str, Any] | None = None,
        keep_secrets: bool = False,
    ) -> Cassette:
        """A cassette from ``(seconds, bytes)`` pairs; empty chunks are dropped.

        ``end_time`` defaults to the last chunk's time (0 without chunks).  The
        metadata's ``headers`` (a mapping or ``[name, value]`` pairs) lose the
        SECRET_HEADERS unless ``keep_secrets`` is true.

        Raises:
            CassetteError: a time that is negative, not finite or goes back, an unknown
                ``end``, a message without an error end, metadata that is not JSON.
        """
        pairs = [(t, bytes(data)) for t, data in chunks if len(data)]
        if end_time is None:
            end_time = pairs[-1][0] if pairs else 0.0
        meta = _clean_metadata(dict(metadata or {}), keep_secrets=keep_secrets)
        return cls(pairs, end, error, float(end_time), meta)

    # ---- the bytes --------------------------------------------------------------------

    @property
    def data(self) -> bytes:
        """Every chunk's bytes, joined: the body as a parser sees it."""
        return b"".join(chunk for _, chunk in self.chunks)

    def _with(self, chunks: list[Chunk], **changes: Any) -> Cassette:
        return dataclasses.replace(self, chunks=chunks, **changes)

    # ---- faults -----------------------------------------------------------------------

    def cut_at(self, offset: int) -> Cassette:
        """The stream ends as a cut after ``offset`` bytes.

        The chunks before ``offset`` stay as they were, the chunk holding it is
        shortened, the rest are gone; the end becomes ``"cut"`` at the time of the last
        byte kept (the recorded end's time when ``offset`` is the whole length).

        Raises:
            ValueError: ``offset`` is negative or beyond the bytes.
        """
        self._check_offset(offset)
        kept = _split_at(self.chunks, offset)[0]
        end_time = self.end_time if offset == len(self.data) else (kept[-1][0] if kept else 0.0)
        return self._with(kept, end="cut", error=None, end_time=end_time)

    def stall_at(self, offset: int, seconds: float) -> Cassette:
        """The stream goes silent for ``seconds`` after ``offset`` bytes.

        The chunk holding ``offset`` is split there; every byte from ``offset`` on, and
        the end, come ``seconds`` later than recorded.

        Raises:
            ValueError: ``offset`` is out of range, or ``seconds`` negative or not finite.
        """
        self._check_offset(offset)
        if not (math.isfinite(seconds) and seconds >= 0):
            raise ValueError(f"a stall lasts a finite, non-negative time, not {seconds!r}")
        before, after = _split_at(self.chunks, offset)
        later = [(t + seconds, chunk) for t, chunk in after]
        return self._with(before + later, end_time=self.end_time + seconds)

    def rechunk(self, sizes: int | Iterable[int]) -> Cassette:
        """The same bytes cut at other boundaries: chunks of ``sizes`` bytes, cycled
        (``rechunk(1)`` is byte by byte, ``rechunk([3, 5])`` is 3, 5, 3, 5, ...).

        Each new chunk takes the time of the recorded chunk that holds its last byte:
        no byte arrives earlier than it was recorded.

        Raises:
            ValueError: a size below 1, or no sizes.
        """
        size_list = [sizes] if isinstance(sizes, int) else list(sizes)
        if not size_list or min(size_list) < 1:
            raise ValueError(f"chunk sizes must be at least 1 (and at least one): {sizes!r}")
        ends = _chunk_ends(self.chunks)
        data = self.data
        out: list[Chunk] = []
        start = 0
        index = 0  # the recorded chunk holding byte `stop - 1`
        sizes_left = cycle(size_list)
        while start < len(data):
            stop = min(start + next(sizes_left), len(data))
            while ends[index] < stop:
                index += 1
            out.append((self.chunks[index][0], data[start:stop]))
            start = stop
        return self._with(out)

    def with_keepalives(self, every: float, *, line: bytes = b": keepalive\n") -> Cassette:
        """Keepalive comments in every silence of ``every`` seconds or more.

        A ``line`` is inserted ``every`` seconds after the previous chunk (and again
        every ``every`` seconds) while nothing arrives, but only where an event could
        start: at the beginning of the stream or after a blank line ended by LF (the
        bytes so far end with ``\\n\\n`` or ``\\n\\r\\n``).  Inside an event, or after a
        CR-only blank line, the silence is left as it is.

        Raises:
            ValueError: ``every`` is not a positive finite number, or ``line`` is not
                one comment line ending with LF.
        """
        if not (math.isfinite(every) and every > 0):
            raise ValueError(f"keepalives come every positive, finite interval, not {every!r}")
        if not (line.startswith(b":") and line.endswith(b"\n") and line.count(b"\n") == 1):
            raise ValueError(f"a keepalive is one comment line ending with LF, not {line!r}")
        if b"\r" in line:
            raise ValueError(f"a keepalive line holds no CR: {line!r}")
        out: list[Chunk] = []
        last_time, boundary = 0.0, True
        for t, chunk in [*self.chunks, (self.end_time, b"")]:
            n = 1
            while boundary and last_time + n * every <= t:
                out.append((last_time + n * every, line))
                n += 1
            if chunk:
                out.append((t, chunk))
                last_time = t
                tail = b"".join(c for _, c in out[-3:])[-3:]
                boundary = tail.endswith((b"\n\n", b"\n\r\n"))
        return self._with(out)

    def _check_offset(self, offset: int) -> None:
        size = len(self.data)
        if not 0 <= offset <= size:
            raise ValueError(f"offset {offset} is outside the stream's {size} bytes")

    # ---- redaction --------------------------------------------------------------------

    def redact(self, function: Callable[[str], str]) -> Cassette:
        """Rewrite every event's data with ``function``; keep every other byte.

        The stream is parsed as a whole (``errors="replace"``), so a secret that two
        chunks split is seen whole.  For each event whose data ``function`` changes, and
        for the unfinished event a cut leaves at the end, only its ``data`` lines are
        rewritten: the last old data line takes the last new line and any extra ones,
        the other old data lines take the first new lines in order (those not needed
        are dropped), each keeping its ``data:`` prefix and line end, and a line whose
        value stays keeps its bytes.  Comments,
        ``id``, ``event``, ``retry`` and unchanged events stay byte for byte.

        Boundaries and times: every recorded boundary outside the changed bytes stays
        where it was among the bytes around it, and each chunk keeps its time; a boundary
        that fell inside the bytes a rewrite changed moves to the start of the change (so
        no byte comes earlier than recorded), and a chunk left empty is dropped.  The end and the
        metadata are kept.
        """
        data = self.data
        edits = list(_redactions(data, function))
        if not edits:
            return self
        new_data, moved = _apply(data, edits, _chunk_ends(self.chunks))
        out: list[Chunk] = []
        start = 0
        for (t, _), stop in zip(self.chunks, moved, strict=True):
            if stop > start:
                out.append((t, new_data[start:stop]))
                start = stop
        return self._with(out)

    # ---- files ------------------------------------------------------------------------

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the cassette to ``path`` in the JSON Lines format (UTF-8, LF)."""
        with open(path, "w", encoding="utf-8", newline="\n") as file:
            for record in self.records():
                file.write(line(record))

    def records(self) -> Iterator[dict[str, Any]]:
        """The file's records, in order, as JSON objects."""
        yield header_record(self.metadata)
        for t, chunk in self.chunks:
            yield chunk_record(t, chunk)
        yield end_record(self.end, self.error, self.end_time)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Cassette:
        """Read a cassette file written by :meth:`save` (or by hand).

        Raises:
            CassetteError: the file breaks the format; the message names the line.
            OSError: the file cannot be read.
        """
        chunks: list[Chunk] = []
        metadata: dict[str, Any] = {}
        ending = Ending("clean", None, 0.0)  # read_records() always yields one
        with open(path, "rb") as file:
            for record in read_records(file):
                if isinstance(record, dict):
                    metadata = record
                elif isinstance(record, Ending):
                    ending = record
                else:
                    chunks.append(record)
        return cls(chunks, ending.end, ending.error, ending.time, metadata)


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


def line(record: dict[str, Any]) -> str:
    """A record as one line of a cassette file."""
    return json.dumps(record, ensure_ascii=False) + "\n"


def _check(cassette: Cassette) -> None:
    """The invariants of the module docstring, as CassetteErrors without a line."""
    previous = 0.0
    for t, chunk in cassette.chunks:
        if not isinstance(chunk, bytes) or not chunk:
            raise CassetteError(f"a chunk is non-empty bytes, not {chunk!r}")
        previous = _check_time(t, previous)
    _check_time(cassette.end_time, previous)
    _check_end(cassette.end, cassette.error)
    try:
        json.dumps(cassette.metadata, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise CassetteError(f"the metadata is not JSON: {exc}") from None


def _check_time(t: object, previous: float) -> float:
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t):
        raise CassetteError(f"a time is a finite number of seconds, not {t!r}")
    if t < 0:
        raise CassetteError(f"a time is not negative: {t!r}")
    if t < previous:
        raise CassetteError(f"the time goes back, from {previous!r} to {t!r}")
    return float(t)


def _check_end(end: object, error: object) -> None:
    if end not in _ENDS:
        raise CassetteError(f'the end is "clean", "cut" or "error", not {end!r}')
    if end == "error" and not isinstance(error, str):
        raise CassetteError(f"an error end has a message (a string), not {error!r}")
    if end != "error" and error is not None:
        raise CassetteError(f"only an error end has a message ({end!r} has {error!r})")


def _clean_metadata(metadata: dict[str, Any], *, keep_secrets: bool) -> dict[str, Any]:
    headers = metadata.get("headers")
    if headers is None:
        return metadata
    pairs = list(headers.items()) if isinstance(headers, Mapping) else list(headers)
    if not keep_secrets:
        pairs = [(name, value) for name, value in pairs if name.lower() not in SECRET_HEADERS]
    metadata["headers"] = [[str(name), str(value)] for name, value in pairs]
    return metadata


# ---- reading a file, one line at a time ---------------------------------------------


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
    if not isinstance(record, dict):
        raise CassetteError(f"not a JSON object: {type(record).__name__}")
    if number == 1:
        return _header(record)
    if "format" in record:
        raise CassetteError("a second header")
    if "end" in record:
        _keys(record, {"end", "t"}, {"message"})
        t = _check_time(record["t"], previous)
        _check_end(record["end"], record.get("message"))
        return Ending(record["end"], record.get("message"), t)
    _keys(record, {"t"}, {"text", "base64"})
    t = _check_time(record["t"], previous)
    if ("text" in record) == ("base64" in record):
        raise CassetteError('a chunk has "text" or "base64", exactly one')
    return t, _chunk_bytes(record)


def is_header(line: bytes) -> bool:
    """Whether ``line`` is a cassette file's first line (its version unchecked)."""
    try:
        record = json.loads(line)
    except ValueError:
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


# ---- replay -------------------------------------------------------------------------


def replay(
    cassette: Cassette,
    *,
    sleep: Callable[[float], object] | None = None,
    clock: Callable[[], float] | None = None,
) -> Iterator[Chunk]:
    """Yield the cassette's ``(seconds, bytes)`` chunks; raise at an error end.

    Without ``sleep``, nothing waits: the times are the recorded clock, for a test that
    drives a watchdog or a ReconnectPlanner with them.  With ``sleep`` (and ``clock``,
    :func:`time.monotonic` by default), each chunk is held back until its time has come,
    as a paced replay.  A ``"clean"`` or ``"cut"`` end just stops (a parser fed the bytes
    tells a cut inside an event by itself); an ``"error"`` end raises RecordedError.
    """
    if sleep is not None and clock is None:
        clock = time.monotonic
    started = clock() if clock is not None else 0.0
    for t, chunk in [*cassette.chunks, (cassette.end_time, b"")]:
        if sleep is not None and clock is not None:
            delay = started + t - clock()
            if delay > 0:
                sleep(delay)
        if chunk:
            yield t, chunk
    if cassette.error is not None:
        raise RecordedError(cassette.error)


# ---- helpers for the faults ---------------------------------------------------------


def _chunk_ends(chunks: Sequence[Chunk]) -> list[int]:
    """The stream offset just after each chunk."""
    ends = []
    total = 0
    for _, chunk in chunks:
        total += len(chunk)
        ends.append(total)
    return ends


def _split_at(chunks: Sequence[Chunk], offset: int) -> tuple[list[Chunk], list[Chunk]]:
    """The chunks before and from ``offset``, the chunk holding it split in two."""
    before: list[Chunk] = []
    after: list[Chunk] = []
    start = 0
    for t, chunk in chunks:
        if start + len(chunk) <= offset:
            before.append((t, chunk))
        elif start >= offset:
            after.append((t, chunk))
        else:
            before.append((t, chunk[: offset - start]))
            after.append((t, chunk[offset - start :]))
        start += len(chunk)
    return before, after


@dataclass(frozen=True)
class _Edit:
    start: int  # the old line's offsets
    stop: int
    new: bytes


# One line and its end: CRLF, LF or CR, or none at the end of the bytes.
_LINE = re.compile(rb"([^\r\n]*)(\r\n|\n|\r|\Z)")


def _redactions(data: bytes, function: Callable[[str], str]) -> Iterator[_Edit]:
    """The line edits that redact ``data``: for each event whose data changes, and for
    the unfinished block a cut leaves at the end."""
    conn = Connection(errors="replace")
    conn.receive_data(data)
    conn.receive_data(b"")
    done = 3 if data.startswith(b"\xef\xbb\xbf") else 0  # past a BOM
    while not isinstance(item := conn.next_event(), EndOfStream):
        assert isinstance(item, (Event, Comment))  # a plain connection returns no others
        if isinstance(item, Event):
            new = function(item.data)
            if new != item.data:
                yield from _rewrite_block(data, item.start, item.end, new)
        done = max(done, item.end)
    values = [_value(m[1]) for m in _lines(data, done, len(data)) if _is_data(m[1])]
    if values:
        old = "\n".join(values)
        new = function(old)
        if new != old:
            yield from _rewrite_block(data, done, len(data), new)


def _lines(data: bytes, start: int, stop: int) -> list[re.Match[bytes]]:
    """The lines of ``data[start:stop]``, each with its line end (none for a last,
    unterminated line)."""
    return [m for m in _LINE.finditer(data, start, stop) if m.start() != m.end()]


def _is_data(line: bytes) -> bool:
    return line.partition(b":")[0] == b"data"


def _value(line: bytes) -> str:
    """A data line's value: after the colon and one space, if there is one."""
    value = line.partition(b":")[2]
    return (value[1:] if value.startswith(b" ") else value).decode("utf-8", "replace")


def _rewrite_block(data: bytes, start: int, stop: int, new: str) -> Iterator[_Edit]:
    """The edits that give the block ``data[start:stop]`` the data ``new``."""
    data_lines = [m for m in _lines(data, start, stop) if _is_data(m[1])]
    new_lines = new.split("\n")
    last = len(data_lines) - 1
    for k, match in enumerate(data_lines):
        prefix = b"data: " if match[1].startswith(b"data: ") else b"data:"
        # The last old line takes the last new line (and any extra); the others take
        # the first new lines in order, and those not needed go.  No line is dropped
        # right before the blank line, where a CR before it would join that LF.
        if k == last:
            wanted = new_lines[min(k, len(new_lines) - 1) :]
        else:
            wanted = new_lines[k : k + 1] if k < len(new_lines) - 1 else []
        if wanted == [_value(match[1])]:
            continue  # this line's value stays: so do its bytes
        ending = match[2] or b"\n"
        replacement = b"".join(prefix + text.encode("utf-8", "replace") + ending for text in wanted)
        if not match[2] and replacement:
            replacement = replacement[: -len(ending)]  # an unterminated line stays so
        # Only the bytes that differ: the prefix and line end stay, with the boundaries
        # in them.
        same = _common(match[0], replacement)
        tail = _common(match[0][same:][::-1], replacement[same:][::-1])
        changed = replacement[same : len(replacement) - tail]
        yield _Edit(match.start() + same, match.end() - tail, changed)


def _common(a: bytes, b: bytes) -> int:
    """The length of the bytes ``a`` and ``b`` start with alike."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _apply(data: bytes, edits: list[_Edit], boundaries: list[int]) -> tuple[bytes, list[int]]:
    """The edited bytes, and each boundary moved to its place in them."""
    pieces = []
    spans = []  # (old start, old stop, new start) of each edit
    position = shift = 0
    for edit in edits:
        pieces += [data[position : edit.start], edit.new]
        spans.append((edit.start, edit.stop, edit.start + shift))
        shift += len(edit.new) - (edit.stop - edit.start)
        position = edit.stop
    pieces.append(data[position:])

    def move(boundary: int) -> int:
        for old_start, old_stop, new_start in spans:
            if boundary < old_stop:
                if boundary > old_start:
                    return new_start  # inside the changed bytes: to their start
                return boundary + new_start - old_start
        return boundary + shift

    return b"".join(pieces), [move(b) for b in boundaries]
