"""Cassettes: a stream kept as it arrived, chunk by chunk, with its timing and its end.

A cassette is the list of ``(seconds, bytes)`` chunks a client read, the time each
read returned counted from the start of the recording, and how the stream ended:
``"clean"`` (the transport said the body was over), ``"cut"`` (the connection went away
mid-body, or the reader stopped) or ``"error"`` (reading raised; the message is kept).
The bytes are the body exactly as received; nothing is parsed on the way in.  The file
format is _cassette_file.py's, redaction is _redaction.py's.

Invariants, checked when a cassette is made: chunks are non-empty bytes, times are
finite, not negative and never go back, the end comes no earlier than the last chunk,
only an error end has a message, the metadata is JSON, its ``status`` (if any) an HTTP
status code and its ``headers`` (if any) ``[name, value]`` strings that a server can
send again (no CR, LF or NUL).  from_chunks() also takes the secrets out: the
SECRET_HEADERS, whether their names come as str or bytes, in any case, with white space
around them or not, and in the ``url`` the value
of every SECRET_QUERY_PARAMETERS and the password, unless the caller keeps them.  A
Cassette never changes once made: the faults (cut_at, stall_at, rechunk,
with_keepalives) and redact() return new ones, and every offset they take counts bytes
of the whole stream.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import time
import urllib.parse
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import cycle
from typing import Any

from ._cassette_file import (
    TOO_DEEP,
    CassetteError,
    Chunk,
    End,
    Ending,
    check_end,
    check_time,
    chunk_record,
    end_record,
    header_record,
    read_records,
    to_line,
)
from ._cassette_target import CassetteTarget
from ._redaction import redact as _redact

__all__ = ["SECRET_HEADERS", "SECRET_QUERY_PARAMETERS", "Cassette", "RecordedError", "replay"]

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
        "x-goog-api-key",
    }
)

# Query parameters whose value a recorded ``url`` loses (Gemini's ``?key=``, OAuth's
# ``access_token``, ...), matched by name without regard to case, after %-decoding.
SECRET_QUERY_PARAMETERS = frozenset(
    {"key", "api_key", "apikey", "api-key", "token", "access_token", "client_secret"}
)
REDACTED = "REDACTED"


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
        metadata: Free JSON data: ``url``, ``status`` and ``headers`` are understood
            (the last two are also :attr:`status` and :attr:`headers`).
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
        metadata's ``headers`` (a mapping or ``[name, value]`` pairs, str or bytes,
        bytes read as latin-1) become ``[name, value]`` strings and lose the
        SECRET_HEADERS, and its ``url`` loses the values of the
        SECRET_QUERY_PARAMETERS and its password, unless ``keep_secrets`` is true.

        Raises:
            CassetteError: a time that is negative, not finite or goes back, an unknown
                ``end``, a message without an error end, metadata that is not JSON, a
                ``status`` or ``headers`` a server could not send.
        """
        pairs = [(t, bytes(data)) for t, data in chunks if len(data)]
        if end_time is None:
            end_time = pairs[-1][0] if pairs else 0.0
        meta = _clean_metadata(dict(metadata or {}), keep_secrets=keep_secrets)
        return cls(pairs, end, error, end_time, meta)

    # ---- the response -----------------------------------------------------------------

    @property
    def status(self) -> int | None:
        """The recorded response's status code (``metadata["status"]``), None if not
        recorded (:func:`serve_cassette` then sends 200)."""
        status: int | None = self.metadata.get("status")
        return status

    @property
    def headers(self) -> list[tuple[str, str]]:
        """The recorded response's headers (``metadata["headers"]``), in order, as
        ``(name, value)`` pairs; without the secret ones unless they were kept."""
        return [(name, value) for name, value in self.metadata.get("headers", [])]

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

        Raises:
            TypeError: ``function`` returned something other than a str.
            ValueError: ``function`` returned a CR, which would end a data line early
                and inject a field (an LF is a line of data, written as its own
                ``data:`` line).
        """
        redacted = _redact(self.data, function, _chunk_ends(self.chunks))
        if redacted is None:
            return self
        new_data, moved = redacted
        out: list[Chunk] = []
        start = 0
        for (t, _), stop in zip(self.chunks, moved, strict=True):
            if stop > start:
                out.append((t, new_data[start:stop]))
                start = stop
        return self._with(out)

    # ---- files ------------------------------------------------------------------------

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the cassette to ``path`` in the JSON Lines format (UTF-8, LF).

        The file is written whole or not at all: to a partial file beside it, renamed
        over ``path`` once written, so that a write that fails (a full disk) leaves the
        old cassette as it was.  A symlink is written through; a FIFO or a character
        device is written directly, never replaced by a regular file.

        Raises:
            ValueError: ``path`` is a directory, a block device or a socket.
            OSError: the file could not be written (``path`` is then as it was).
        """
        target = CassetteTarget(path)
        file = target.open()
        try:
            for record in self.records():
                file.write(to_line(record))
        except BaseException:
            target.abandon()
            raise
        target.commit()

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


def _check(cassette: Cassette) -> None:
    """The invariants of the module docstring, as CassetteErrors without a line."""
    previous = 0.0
    for t, chunk in cassette.chunks:
        if not isinstance(chunk, bytes) or not chunk:
            raise CassetteError(f"a chunk is non-empty bytes, not {chunk!r}")
        previous = check_time(t, previous)
    end_time = check_time(cassette.end_time, previous)
    object.__setattr__(cassette, "end_time", end_time)  # a float, whatever was given
    check_end(cassette.end, cassette.error)
    try:
        json.dumps(cassette.metadata, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise CassetteError(f"the metadata is not JSON: {exc}") from None
    except RecursionError:
        raise CassetteError(f"the metadata is {TOO_DEEP}") from None
    _check_response(cassette.metadata)


# Characters no header may hold: a server writing them would start another header.
_UNSENDABLE = re.compile(r"[\r\n\0]")


def _check_response(metadata: dict[str, Any]) -> None:
    """The metadata's ``status`` and ``headers`` are what a server can send again."""
    status = metadata.get("status")
    if status is not None and (
        isinstance(status, bool) or not isinstance(status, int) or not 100 <= status <= 999
    ):
        raise CassetteError(f"the metadata's status is an HTTP status code, not {status!r}")
    headers = metadata.get("headers", [])
    if not isinstance(headers, list) or not all(
        isinstance(pair, list) and len(pair) == 2 and all(isinstance(x, str) for x in pair)
        for pair in headers
    ):
        raise CassetteError("the metadata's headers are a list of [name, value] strings")
    for name, value in headers:
        if _UNSENDABLE.search(name) or _UNSENDABLE.search(value):
            raise CassetteError(f"a header holds CR, LF or NUL: {name!r}: {value!r}")


def _clean_metadata(metadata: dict[str, Any], *, keep_secrets: bool) -> dict[str, Any]:
    headers = metadata.get("headers")
    if headers is not None:
        pairs = list(headers.items()) if isinstance(headers, Mapping) else list(headers)
        texts = [(_text(name), _text(value)) for name, value in pairs]
        if not keep_secrets:
            # Matched as a lenient server reads a name: "Authorization " (a space or a
            # tab around it, issue 41, item 9) is still Authorization to many.
            texts = [(n, v) for n, v in texts if n.strip().lower() not in SECRET_HEADERS]
        metadata["headers"] = [[name, value] for name, value in texts]
    url = metadata.get("url")
    if isinstance(url, str) and not keep_secrets:
        metadata["url"] = _clean_url(url)
    return metadata


def _text(value: object) -> str:
    """A header name or value as str: bytes as HTTP sends them, in latin-1."""
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("latin-1")
    return str(value)


def _clean_url(url: str) -> str:
    """``url`` with REDACTED for its password and its secret query parameters' values;
    every other character as it was (the query is not re-encoded)."""
    parts = urllib.parse.urlsplit(url)
    netloc = parts.netloc
    if parts.password is not None:
        userinfo, _, host = netloc.rpartition("@")
        netloc = f"{userinfo.partition(':')[0]}:{REDACTED}@{host}"
    query = "&".join(_clean_parameter(p) for p in parts.query.split("&")) if parts.query else ""
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc, query=query))


def _clean_parameter(parameter: str) -> str:
    name = parameter.partition("=")[0]
    if urllib.parse.unquote_plus(name).lower() in SECRET_QUERY_PARAMETERS:
        return f"{name}={REDACTED}"
    return parameter


# ---- reading a file, one line at a time ---------------------------------------------


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
