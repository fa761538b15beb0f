"""Recording: wrap a client's chunks, hand them on unchanged, keep them as a cassette.

``record(response.iter_raw(), clock=time.monotonic)`` is an iterator over the same
chunks, so a client records what it received without changing its loop; ``arecord()``
is the same over an async iterable (httpx's ``aiter_raw()``, aiohttp's
``content.iter_any()``).  Each chunk is kept with ``clock() - start``, where ``start`` is
the clock when the recording was made; the clock is the caller's, so that a test can
drive it.

How the stream ended is what the wrapped iterable did: running out is ``"clean"``; an
exception (a reset connection, an incomplete chunked body) is ``"error"`` with
``"TypeName: message"`` and is re-raised unchanged; a recording read no further (the
loop broke out, a task was cancelled, KeyboardInterrupt) is ``"cut"``.  ``cassette``
can be taken at any time; it is the chunks so far, with the end seen so far.

Invariants: the chunks handed on are the wrapped iterable's own objects; empty chunks
are handed on but not kept; nothing reads the bytes.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Iterator
from typing import Any, Generic, NoReturn, TypeVar

from sse_sansio._pickling import refuse

from ._cassette import Cassette
from ._cassette_file import Chunk, End

__all__ = ["AsyncRecorder", "Recorder", "arecord", "record"]

C = TypeVar("C", bytes, bytearray, memoryview)

# Pickling (issue 32, item 4): a recorder is a handle on a live source of chunks (a
# response being read), which means nothing in another process or after a copy; what
# is worth keeping is its cassette, a value.  So pickle and copy refuse it.
_NOT_KEPT = "it reads a live source of chunks; pickle its cassette (a value) instead"


class _Tape:
    """What a recorder has kept so far."""

    def __init__(self, clock: Callable[[], float], metadata: dict[str, Any] | None) -> None:
        self.clock = clock
        self.start = clock()
        self.metadata = metadata
        self.chunks: list[Chunk] = []
        self.end: End = "cut"
        self.error: str | None = None
        self.end_time: float | None = None

    def _now(self) -> float:
        # Microseconds: what a clock on a network path can tell, and short to read.
        return round(self.clock() - self.start, 6)

    def keep(self, chunk: bytes | bytearray | memoryview) -> None:
        if len(chunk):
            self.chunks.append((self._now(), bytes(chunk)))

    def finish(self, error: Exception | None = None) -> None:
        self.end_time = self._now()
        if error is None:
            self.end = "clean"
        else:
            self.end, self.error = "error", f"{type(error).__name__}: {error}"

    def cassette(self) -> Cassette:
        # A clock that went back is recorded as no time at all.
        chunks = []
        previous = 0.0
        for t, chunk in self.chunks:
            previous = max(previous, t)
            chunks.append((previous, chunk))
        end_time = previous if self.end_time is None else max(previous, self.end_time)
        return Cassette.from_chunks(
            chunks, end=self.end, error=self.error, end_time=end_time, metadata=self.metadata
        )


class Recorder(Generic[C]):
    """An iterator over the wrapped chunks that keeps them (made by :func:`record`)."""

    def __init__(
        self,
        chunks: Iterable[C],
        clock: Callable[[], float],
        metadata: dict[str, Any] | None,
    ) -> None:
        self._source: Iterator[C] = iter(chunks)
        self._tape = _Tape(clock, metadata)
        self._finished = False

    def __iter__(self) -> Recorder[C]:
        return self

    def __next__(self) -> C:
        if self._finished:
            raise StopIteration
        try:
            chunk = next(self._source)
        except StopIteration:
            self._finished = True
            self._tape.finish()
            raise
        except Exception as exc:
            self._finished = True
            self._tape.finish(exc)
            raise
        self._tape.keep(chunk)
        return chunk

    @property
    def cassette(self) -> Cassette:
        """The chunks so far and how the stream ended (``"cut"`` while unfinished)."""
        return self._tape.cassette()

    def __reduce__(self) -> NoReturn:
        refuse(self, _NOT_KEPT)


class AsyncRecorder(Generic[C]):
    """An async iterator over the wrapped chunks that keeps them (see :func:`arecord`)."""

    def __init__(
        self,
        chunks: AsyncIterable[C],
        clock: Callable[[], float],
        metadata: dict[str, Any] | None,
    ) -> None:
        self._source: AsyncIterator[C] = aiter(chunks)
        self._tape = _Tape(clock, metadata)
        self._finished = False

    def __aiter__(self) -> AsyncRecorder[C]:
        return self

    async def __anext__(self) -> C:
        if self._finished:
            raise StopAsyncIteration
        try:
            chunk = await anext(self._source)
        except StopAsyncIteration:
            self._finished = True
            self._tape.finish()
            raise
        except Exception as exc:
            self._finished = True
            self._tape.finish(exc)
            raise
        self._tape.keep(chunk)
        return chunk

    @property
    def cassette(self) -> Cassette:
        """The chunks so far and how the stream ended (``"cut"`` while unfinished)."""
        return self._tape.cassette()

    def __reduce__(self) -> NoReturn:
        refuse(self, _NOT_KEPT)


def record(
    chunks: Iterable[C],
    *,
    clock: Callable[[], float] = time.monotonic,
    metadata: dict[str, Any] | None = None,
) -> Recorder[C]:
    """Wrap an iterable of byte chunks; its ``cassette`` keeps what went through.

    Args:
        chunks: Any iterable of ``bytes``, ``bytearray`` or ``memoryview``.
        clock: Seconds, read once now and after each chunk (:func:`time.monotonic`).
        metadata: The cassette's metadata (``url``, ``status``, ``headers``: secret
            headers are removed).

    Example:
        >>> recorder = record([b"data: a\\n", b"\\n"], clock=iter([0.0, 0.1, 0.3, 0.4]).__next__)
        >>> b"".join(recorder)
        b'data: a\\n\\n'
        >>> recorder.cassette.chunks, recorder.cassette.end
        ([(0.1, b'data: a\\n'), (0.3, b'\\n')], 'clean')
    """
    return Recorder(chunks, clock, metadata)


def arecord(
    chunks: AsyncIterable[C],
    *,
    clock: Callable[[], float] = time.monotonic,
    metadata: dict[str, Any] | None = None,
) -> AsyncRecorder[C]:
    """:func:`record` for an async iterable of byte chunks."""
    return AsyncRecorder(chunks, clock, metadata)
