# The feeding helpers: chunks in, items out, the end of the stream never forgotten.
#
# iter_events() and aiter_events() are the drain loop of Connection written once: feed
# each chunk, hand out every item it completes, and when the chunks run out call
# receive_data(b"") themselves.  That last call is the one a hand-written loop forgets,
# and without it a stream cut in the middle of an event looks exactly like one that is
# still open: the unfinished event is silently lost.  So the default shape is:
#
# - Event and Comment items are yielded in stream order, and only those: the caller's
#   loop body never has to test for NEED_DATA or EndOfStream.
# - A clean end stops the iteration, as the end of any Python iterable does.
# - A cut end (EndOfStream.truncated) raises TruncatedStreamError, a RemoteProtocolError,
#   after every complete item has been yielded.  An exception and not a last item,
#   because a last item is what a newcomer's ``for`` loop ignores; an exception cannot
#   be ignored by accident, and ``except sse_sansio.RemoteProtocolError`` (or
#   ProtocolError) already in the code catches it.  ``end_of_stream="yield"`` hands out
#   the EndOfStream item instead, for callers (proxies, recorders) that handle it.
# - Errors from the parser propagate unchanged, with their byte offsets.
#
# - A file object is read with read1() where it has one (http.client's response,
#   io.BufferedReader, BytesIO): it returns what has arrived, where read(65536) waits
#   for 64 KiB or the end, and a slow stream's first event would wait with it.
#
# - A read cancelled mid-way (issue 36): asyncio.wait_for(items.__anext__(), t) cancels
#   the pending __anext__ at its timeout, and the CancelledError thrown into the async
#   generator at its await of the next chunk ends the generator (and, through it, an
#   async-generator chunk source such as httpx's).  A bare async generator would then
#   answer the next __anext__ with StopAsyncIteration: the stream would look cleanly
#   ended, with nothing said.  So aiter_events() returns the generator wrapped in an
#   AsyncItems, which the generator tells when a read is interrupted: at its await of
#   a chunk (cancelled, or failed with the source's own error) or at its yield (a
#   cancelled __anext__ that had not started yet, athrow()); from then on every __anext__
#   raises LocalProtocolError saying the read was cancelled (or failed), with what
#   interrupted it as __cause__.  Going on after the cut is not offered: what the
#   source had read when the cancellation hit it is lost with it.  The wrapper costs a
#   slot test per item, no coroutine: it hands out the generator's own awaitables.
#
# Invariants: a chunk is fed only when the parser has returned NEED_DATA, so at most one
# chunk is buffered beyond what the caller has consumed (the pull model is kept); empty
# chunks are skipped, since b"" would end the stream early; only running out of chunks
# ends the stream: a None chunk (or a non-blocking file's None read) is an error, never
# a quiet clean end; nothing here reads a clock, opens a socket or knows an HTTP client.

from __future__ import annotations

import io
from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Generator,
    Iterable,
)
from typing import TYPE_CHECKING, Any, Literal, NoReturn, Protocol, cast, overload

from sse_sansio._errors import LocalProtocolError, RemoteProtocolError
from sse_sansio._events import AnyItem, Comment, EndOfStream, Event
from sse_sansio._need_data import NEED_DATA
from sse_sansio._receive._implementation import Connection
from sse_sansio._receive._options import OptInItem

__all__ = [
    "READ_SIZE",
    "AsyncItems",
    "TruncatedStreamError",
    "aiter_events",
    "feed_async",
    "iter_events",
]

# How many bytes a file object is asked for at a time: the parser's window size, so
# that one read is one window.
READ_SIZE = 64 * 1024


class TruncatedStreamError(RemoteProtocolError):
    """The stream ended in the middle of a line or an event (``EndOfStream.truncated``).

    Every complete item before the cut was yielded; what the cut left unfinished was
    discarded, as the standard says, and this error reports it.

    Attributes:
        end_of_stream: The :class:`EndOfStream` item, with ``partial_line`` and
            ``partial_event``.
        offset: The stream offset where the discarded part starts: the first byte of
            the unterminated last line (the total bytes received when the stream ended
            on a line end).  When ``end_of_stream.partial_event`` is true, the lines of
            that event before this offset were discarded too.
    """

    def __init__(self, end_of_stream: EndOfStream, *, offset: int) -> None:
        what = "an event" if end_of_stream.partial_event else "a line"
        super().__init__(
            f"the stream was cut in the middle of {what} ({end_of_stream.partial_line} bytes"
            f" of an unterminated line discarded) at byte offset {offset}",
            offset=offset,
        )
        self.end_of_stream = end_of_stream
        # Pickled as every ProtocolError is: message, offset and end_of_stream kept.


class _BinaryReader(Protocol):
    def read(self, size: int, /) -> bytes: ...


Chunk = bytes | bytearray | memoryview
Chunks = Iterable[Chunk] | _BinaryReader
AsyncChunks = AsyncIterable[Chunk]
EndOfStreamMode = Literal["raise", "yield"]
if TYPE_CHECKING:
    from typing import Unpack

    from sse_sansio._receive._options import Added, ClassicOptions, OptInOptions

    # Any connection (the parameter is covariant).  For checkers only: the compiled
    # class has the same API but takes no subscript at run time.
    AnyConnection = Connection[OptInItem]


def _connection(connection: AnyConnection | None, options: dict[str, Any]) -> AnyConnection:
    if connection is None:
        return Connection(**options)
    if options:
        raise TypeError(
            f"pass either connection= or Connection options, not both: {sorted(options)}"
        )
    return connection


def chunks_of(chunks: Chunks) -> Iterable[Chunk]:
    if isinstance(chunks, io.TextIOBase):
        raise TypeError("iter_events() needs bytes: open the file in binary mode ('rb')")
    if isinstance(chunks, (bytes, bytearray, memoryview)):
        # Iterating bytes gives ints: name the mistake instead of failing on the first.
        raise TypeError(
            f"iter_events() takes an iterable of byte chunks, not {type(chunks).__name__}"
            " itself: pass [data]"
        )
    if hasattr(chunks, "read"):
        # A file object: read it in blocks (iterating it would split it into lines).
        return _blocks(cast(_BinaryReader, chunks))
    return chunks


def _blocks(file: _BinaryReader) -> Generator[bytes, None, None]:
    """A file's blocks until its end: what has arrived (read1) where the file can say."""
    read1 = getattr(file, "read1", None)
    read = read1 if callable(read1) else file.read
    while True:
        block = read(READ_SIZE)
        if block is None:
            raise ValueError(
                "the file's read returned None: it is non-blocking and has no data yet;"
                " iter_events() needs a blocking file (or use aiter_events())"
            )
        if not block:
            return
        yield block


_NONE_CHUNK = "a chunk is None, not bytes: only running out of chunks ends the stream"


async def _anext_chunk(source: AsyncIterator[Chunk]) -> Chunk | None:
    """The next non-empty chunk, or None when the chunks ran out."""
    async for chunk in source:
        if chunk is None:
            raise TypeError(_NONE_CHUNK)
        if chunk:
            return chunk
    return None


def _end(item: EndOfStream, received: int, mode: EndOfStreamMode) -> EndOfStream | None:
    """What a feeding helper does with the EndOfStream: None to stop, or the item."""
    if mode == "yield":
        return item
    if item.truncated:
        raise TruncatedStreamError(item, offset=received - item.partial_line)
    return None


def _check_mode(end_of_stream: str) -> None:
    if end_of_stream not in ("raise", "yield"):
        raise ValueError(f'end_of_stream must be "raise" or "yield", not {end_of_stream!r}')


# Typing: for each end_of_stream, three overloads: classic options, a connection made
# elsewhere (its type parameter passed on; no options beside it, as at run time), opt-in
# options.  _receive/_options.py declares the options and says how they narrow.
@overload
def iter_events(
    chunks: Chunks,
    *,
    connection: None = ...,
    end_of_stream: Literal["raise"] = ...,
    **connection_options: Unpack[ClassicOptions],
) -> Generator[Event | Comment, None, None]: ...
@overload
def iter_events(
    chunks: Chunks,
    *,
    connection: Connection[Added],
    end_of_stream: Literal["raise"] = ...,
) -> Generator[Event | Comment | Added, None, None]: ...
@overload
def iter_events(
    chunks: Chunks,
    *,
    connection: None = ...,
    end_of_stream: Literal["raise"] = ...,
    **connection_options: Unpack[OptInOptions],
) -> Generator[Event | Comment | OptInItem, None, None]: ...
@overload
def iter_events(
    chunks: Chunks,
    *,
    connection: None = ...,
    end_of_stream: Literal["yield"],
    **connection_options: Unpack[ClassicOptions],
) -> Generator[Event | Comment | EndOfStream, None, None]: ...
@overload
def iter_events(
    chunks: Chunks,
    *,
    connection: Connection[Added],
    end_of_stream: Literal["yield"],
) -> Generator[Event | Comment | Added | EndOfStream, None, None]: ...
@overload
def iter_events(
    chunks: Chunks,
    *,
    connection: None = ...,
    end_of_stream: Literal["yield"],
    **connection_options: Unpack[OptInOptions],
) -> Generator[Event | Comment | OptInItem | EndOfStream, None, None]: ...
def iter_events(
    chunks: Chunks,
    *,
    connection: AnyConnection | None = None,
    end_of_stream: EndOfStreamMode = "raise",
    **connection_options: Any,
) -> Generator[AnyItem, None, None]:
    """Parse a whole stream from an iterable of byte chunks; yield its items.

    ``chunks`` is anything that gives bytes: httpx's ``response.iter_raw()``, a list, a
    generator, or a binary file object (read in blocks of up to :data:`READ_SIZE`
    bytes, with ``read1()`` where it has one, so that what has arrived is parsed at
    once instead of waiting for a full block).
    When the chunks run out, the stream is ended (``receive_data(b"")``) for you.

    Args:
        chunks: An iterable of ``bytes``, ``bytearray`` or ``memoryview``, or a file
            object opened in binary mode.  Empty chunks are skipped.
        connection: A :class:`Connection` to feed, so that you can read its
            ``last_event_id`` and ``retry`` afterwards (to reconnect); by default a new
            one made with ``connection_options``.
        end_of_stream: ``"raise"`` (the default): a clean end stops the iteration, a
            cut end raises :class:`TruncatedStreamError`.  ``"yield"``: the
            :class:`EndOfStream` item is yielded last, whatever it says.
        **connection_options: Passed to :class:`Connection` (``errors``,
            ``last_event_id``, ``max_event_size``, ``keep_raw``).

    Yields:
        Each :class:`Event` and :class:`Comment`, in stream order, and the items of the
        opt-in modes when the connection's options ask for them.  For type checkers
        the options decide: with ``on_oversize``, ``piece_size``, ``diagnostics`` or
        ``updates`` at other than their defaults (or a ``connection`` made so), the
        yield type also holds :class:`SkippedEvent`, :class:`DataPiece`,
        :class:`PiecedEvent`, :class:`Diagnostic` and :class:`Update`.

    Raises:
        TruncatedStreamError: the stream ended in the middle of a line or an event;
            every complete item before it was yielded.
        RemoteProtocolError: from the parser (invalid UTF-8, an event too large),
            after every item before the bad byte.
        TypeError: a text file, ``bytes`` itself instead of an iterable of chunks, a
            chunk that is not bytes (``None`` included), or both ``connection`` and
            Connection options.
        ValueError: a non-blocking file whose read returned ``None``.
    """
    _check_mode(end_of_stream)
    conn = _connection(connection, connection_options)
    return _iter_events(conn, chunks_of(chunks), end_of_stream)


def _iter_events(
    conn: AnyConnection,
    chunks: Iterable[bytes | bytearray | memoryview],
    mode: EndOfStreamMode,
) -> Generator[AnyItem, None, None]:
    # Speed: one pass of the loop per chunk, as a hand-written drain loop has (within
    # 1.15x of one on the compiled core, benchmarks/README.md).  Only a drain after
    # receive_data(b"") can meet the EndOfStream: before that, only one that a
    # connection passed in already holds (so the chunks are not fed at all).
    # The bytes received are counted for TruncatedStreamError's offset; the chunks of a
    # list or tuple, all fed by the time the stream ends, only when it ends cut.
    next_event = conn.next_event
    receive_data = conn.receive_data
    received = 0
    counted = type(chunks) is not list and type(chunks) is not tuple
    while (item := next_event()) is not NEED_DATA:
        if type(item) is EndOfStream:
            last = _end(item, received, mode)
            if last is not None:
                yield last
            return
        yield item
    for chunk in chunks:
        if not chunk:
            if chunk is None:
                raise TypeError(_NONE_CHUNK)
            continue  # an empty chunk is not the end
        receive_data(chunk)
        if counted:
            received += len(chunk) if type(chunk) is bytes else _size(chunk)
        while (item := next_event()) is not NEED_DATA:
            yield item
    receive_data(b"")  # the chunks ran out: the end of the stream
    while type(item := next_event()) is not EndOfStream:
        yield item  # type: ignore[misc]
    if not counted and item.truncated:
        received = sum(map(_size, chunks))
    last = _end(item, received, mode)
    if last is not None:
        yield last


def _size(chunk: Chunk) -> int:
    return chunk.nbytes if isinstance(chunk, memoryview) else len(chunk)  # (b"" gives 0)


@overload
def aiter_events(
    async_chunks: AsyncChunks,
    *,
    connection: None = ...,
    end_of_stream: Literal["raise"] = ...,
    **connection_options: Unpack[ClassicOptions],
) -> AsyncGenerator[Event | Comment, None]: ...
@overload
def aiter_events(
    async_chunks: AsyncChunks,
    *,
    connection: Connection[Added],
    end_of_stream: Literal["raise"] = ...,
) -> AsyncGenerator[Event | Comment | Added, None]: ...
@overload
def aiter_events(
    async_chunks: AsyncChunks,
    *,
    connection: None = ...,
    end_of_stream: Literal["raise"] = ...,
    **connection_options: Unpack[OptInOptions],
) -> AsyncGenerator[Event | Comment | OptInItem, None]: ...
@overload
def aiter_events(
    async_chunks: AsyncChunks,
    *,
    connection: None = ...,
    end_of_stream: Literal["yield"],
    **connection_options: Unpack[ClassicOptions],
) -> AsyncGenerator[Event | Comment | EndOfStream, None]: ...
@overload
def aiter_events(
    async_chunks: AsyncChunks,
    *,
    connection: Connection[Added],
    end_of_stream: Literal["yield"],
) -> AsyncGenerator[Event | Comment | Added | EndOfStream, None]: ...
@overload
def aiter_events(
    async_chunks: AsyncChunks,
    *,
    connection: None = ...,
    end_of_stream: Literal["yield"],
    **connection_options: Unpack[OptInOptions],
) -> AsyncGenerator[Event | Comment | OptInItem | EndOfStream, None]: ...
def aiter_events(
    async_chunks: AsyncChunks,
    *,
    connection: AnyConnection | None = None,
    end_of_stream: EndOfStreamMode = "raise",
    **connection_options: Any,
) -> AsyncGenerator[AnyItem, None]:
    """:func:`iter_events` for an async iterable of byte chunks.

    ``async_chunks`` is httpx's ``response.aiter_raw()``, aiohttp's
    ``response.content.iter_any()``, an anyio or trio byte stream (they are async
    iterables of bytes that stop at end of stream), or any async generator of bytes.
    The arguments, items and errors are those of :func:`iter_events`.

    A pending ``__anext__`` that is cancelled (``asyncio.wait_for`` at its timeout)
    ends the stream: every later ``__anext__`` raises :class:`LocalProtocolError`
    saying the read was cancelled, never a quiet end.  Put a timeout around the whole
    read instead (docs/client.rst, "Waiting with a timeout").
    """
    _check_mode(end_of_stream)
    conn = _connection(connection, connection_options)
    items = AsyncItems()
    items.wrap(feed_async(conn, async_chunks, end_of_stream, items))
    return cast("AsyncGenerator[AnyItem, None]", items)


class AsyncItems:
    """The async generator of :func:`aiter_events`, told when a read was interrupted.

    Iterates, sends, throws and closes as the generator it wraps (``async for``,
    ``aclosing()``); once :attr:`interrupted` holds the exception that interrupted a
    read of the chunks (a cancellation), every ``__anext__`` raises
    :class:`LocalProtocolError` saying so instead of ending the iteration in silence.
    """

    __slots__ = ("_gen", "interrupted")

    def __init__(self) -> None:
        self._gen: AsyncGenerator[AnyItem, None] | None = None
        self.interrupted: BaseException | None = None

    def wrap(self, gen: AsyncGenerator[AnyItem, None]) -> None:
        self._gen = gen

    def __aiter__(self) -> AsyncItems:
        return self

    def __anext__(self) -> Awaitable[AnyItem]:
        if self.interrupted is not None:
            return _interrupted(self.interrupted)
        return self._gen.__anext__()  # type: ignore[union-attr]

    def asend(self, value: None) -> Awaitable[AnyItem]:
        if self.interrupted is not None:
            return _interrupted(self.interrupted)
        return self._gen.asend(value)  # type: ignore[union-attr]

    def athrow(self, *args: Any) -> Awaitable[AnyItem]:
        return self._gen.athrow(*args)  # type: ignore[union-attr]

    def aclose(self) -> Awaitable[None]:
        return self._gen.aclose()  # type: ignore[union-attr]


AsyncGenerator.register(AsyncItems)


async def _interrupted(cause: BaseException) -> NoReturn:
    what = "cancelled" if not isinstance(cause, Exception) else "interrupted"
    raise LocalProtocolError(
        f"a pending read of the stream was {what} ({type(cause).__name__}): the stream"
        " cannot go on from there (the chunk source was stopped with it); put a timeout"
        " around the whole read, not around one __anext__()"
    ) from cause


async def feed_async(
    conn: AnyConnection, chunks: AsyncChunks, mode: EndOfStreamMode, items: AsyncItems
) -> AsyncGenerator[AnyItem, None]:
    """aiter_events()'s loop: ``items`` is told of a read interrupted (the header)."""
    next_event = conn.next_event
    receive_data = conn.receive_data
    source = aiter(chunks)
    received = 0
    while True:
        item = next_event()
        if item is NEED_DATA:
            try:
                chunk = await _anext_chunk(source)
            except BaseException as exc:
                items.interrupted = exc
                raise
            if chunk is None:
                receive_data(b"")  # the chunks ran out: the end of the stream
            else:
                received += chunk.nbytes if isinstance(chunk, memoryview) else len(chunk)
                receive_data(chunk)
        elif type(item) is EndOfStream:
            last = _end(item, received, mode)
            if last is not None:
                yield last
            return
        else:
            try:
                yield item
            except GeneratorExit:
                raise  # aclose(): a close, not an interruption
            except BaseException as exc:
                # Thrown in at the yield: a cancelled __anext__ that had not started
                # (asyncio.wait_for(..., 0)), or athrow().
                items.interrupted = exc
                raise
