"""Helpers to test code that consumes sse_sansio, whatever the network does to the bytes.

A socket hands over a stream in chunks that can split anywhere: between events, inside a
line, between the CR and LF of a line end, inside a multibyte character.  Code that
works on the chunks a test happens to use can fail on the ones production sees.  These
helpers feed the same bytes whole, one byte at a time, split in two at every point and
in seeded random chunkings, and check that every way gives the same result, both for
sse_sansio's items and for what *your* code makes of them.

Standard library only; use them from any test runner::

    from sse_sansio.testing import assert_chunking_invariant

    def test_my_handler():
        assert_chunking_invariant(RECORDED_STREAM, handler=my_item_to_record)

The functions:

- :func:`chunkings`: the ways to cut some bytes into chunks, each with a label.
- :func:`parse`: feed bytes (or chunks) to a fresh :class:`~sse_sansio.Connection`, then
  end the stream; return every item.
- :func:`assert_chunking_invariant`: run a fresh connection (and your handler) for every
  chunking, and raise :class:`AssertionError` naming the first chunking whose result
  differs from the whole input's, with the differing item.

Cassettes keep a real stream as it arrived, with its chunk boundaries, timing and end,
and replay it, with faults injected if asked (docs/cassettes.rst):

- :class:`Cassette`: the chunks, the end, the metadata; :meth:`Cassette.load`,
  :meth:`~Cassette.save`, the faults and :meth:`~Cassette.redact`.
- :func:`record` and :func:`arecord`: wrap a client's (async) iterable of chunks.
- :func:`replay`: the recorded ``(seconds, bytes)`` chunks, on the recorded clock or paced.
- :func:`serve_cassette`: a loopback HTTP server that plays a cassette to real clients.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, overload

from sse_sansio._errors import RemoteProtocolError
from sse_sansio._events import EndOfStream, ReceivedItem
from sse_sansio._public import publish as _publish
from sse_sansio._receive._connection import NEED_DATA
from sse_sansio._receive._implementation import Connection

from ._cassette import Cassette, RecordedError, replay
from ._cassette_file import CassetteError
from ._cassette_server import CassetteServer, serve_cassette
from ._recording import AsyncRecorder, Recorder, arecord, record

__all__ = [
    "AsyncRecorder",
    "Cassette",
    "CassetteError",
    "CassetteServer",
    "Outcome",
    "RecordedError",
    "Recorder",
    "arecord",
    "assert_chunking_invariant",
    "chunkings",
    "parse",
    "record",
    "replay",
    "serve_cassette",
]

T = TypeVar("T")

BytesLike = bytes | bytearray | memoryview

# How many chunks to show in a failure message before eliding the rest.
_SHOW_CHUNKS = 12


def chunkings(
    data: BytesLike, *, seeds: int = 5, max_every_split: int = 4096
) -> Iterator[tuple[str, list[bytes]]]:
    """Yield ``(label, chunks)`` for many ways of cutting ``data`` into chunks.

    In order: ``"whole"`` (one chunk), ``"bytewise"`` (one byte per chunk),
    ``"split@N"`` (two chunks, cut before byte ``N``) for every ``N`` from 1 to
    ``len(data) - 1``, and ``"random(seed=S)"`` for ``S`` in ``range(seeds)``: chunks of
    random sizes from a :class:`random.Random` seeded with ``S``, so a failing chunking
    can be rebuilt from its label.  Chunks are never empty (``b""`` would mean the end
    of the stream), and joined they always give back ``data``.  Empty ``data`` yields
    only ``("whole", [])``.

    Splitting in two at every point re-parses the whole input once per byte; beyond
    ``max_every_split`` bytes, only ``max_every_split`` cut points spread evenly over the
    input are used, plus the first and last eight.

    Args:
        data: The bytes to cut.
        seeds: How many seeded random chunkings to add.
        max_every_split: The longest input split at every point.

    Raises:
        ValueError: ``seeds`` or ``max_every_split`` is negative.

    Example:
        >>> for label, chunks in chunkings(b"ab\\n", seeds=1):
        ...     print(label, chunks)
        whole [b'ab\\n']
        bytewise [b'a', b'b', b'\\n']
        split@1 [b'a', b'b\\n']
        split@2 [b'ab', b'\\n']
        random(seed=0) [b'ab', b'\\n']
    """
    if seeds < 0 or max_every_split < 0:
        raise ValueError("seeds and max_every_split must not be negative")
    data = bytes(data)
    n = len(data)
    if not n:
        yield "whole", []
        return
    yield "whole", [data]
    if n > 1:
        yield "bytewise", [data[i : i + 1] for i in range(n)]
    cuts: Iterable[int]
    if n <= max_every_split:
        cuts = range(1, n)
    else:
        spread = {n * k // (max_every_split + 1) for k in range(1, max_every_split + 1)}
        cuts = sorted(c for c in spread | {*range(1, 9), *range(n - 8, n)} if 0 < c < n)
    for cut in cuts:
        yield f"split@{cut}", [data[:cut], data[cut:]]
    for seed in range(seeds):
        yield f"random(seed={seed})", _random_chunks(data, random.Random(seed))


def _random_chunks(data: bytes, rng: random.Random) -> list[bytes]:
    # Mostly tiny chunks (they land on every kind of boundary), sometimes big ones.
    chunks = []
    i = 0
    while i < len(data):
        size = rng.randint(1, rng.choice((3, 16, 256, len(data))))
        chunks.append(data[i : i + size])
        i += size
    return chunks


def parse(
    data_or_chunks: BytesLike | Iterable[BytesLike], **connection_options: Any
) -> list[ReceivedItem]:
    """Feed bytes, or chunks of bytes, to a fresh Connection; return every item.

    Drains the connection after each chunk, then ends the stream and drains it again,
    so the last item is always the :class:`~sse_sansio.EndOfStream`.  Empty chunks are
    skipped (``b""`` would end the stream early).

    Args:
        data_or_chunks: One bytes-like object, or an iterable of them.
        **connection_options: Passed to :class:`~sse_sansio.Connection`
            (``errors``, ``last_event_id``, ``max_event_size``, ...).

    Raises:
        RemoteProtocolError: the stream is refused (invalid UTF-8 in strict mode, an
            event over ``max_event_size``).

    Example:
        >>> parse(b"data: hi\\n\\n: ping\\n")
        [Event(type='message', data='hi', id='', retry=None), Comment(text='ping'), \
EndOfStream(partial_line=0, partial_event=False)]
        >>> parse([b"data: h", b"i\\n", b"\\n"]) == parse(b"data: hi\\n\\n")
        True
    """
    items: list[ReceivedItem] = []
    _feed(Connection(**connection_options), _as_chunks(data_or_chunks), items.append)
    return items


def _as_chunks(data_or_chunks: BytesLike | Iterable[BytesLike]) -> Iterable[BytesLike]:
    if isinstance(data_or_chunks, (bytes, bytearray, memoryview)):
        return [data_or_chunks]
    return data_or_chunks


def _feed(
    conn: Connection, chunks: Iterable[BytesLike], on_item: Callable[[ReceivedItem], object]
) -> None:
    """Feed chunks, then the end of stream, draining after each; pass on every item."""
    for chunk in chunks:
        if len(chunk):
            conn.receive_data(chunk)
            _drain(conn, on_item)
    conn.receive_data(b"")
    _drain(conn, on_item)


def _drain(conn: Connection, on_item: Callable[[ReceivedItem], object]) -> None:
    while True:
        item = conn.next_event()
        if item is NEED_DATA:
            return
        on_item(item)
        if isinstance(item, EndOfStream):
            return


@dataclass(frozen=True)
class Outcome(Generic[T]):
    """What one run over the whole input produced (returned by assert_chunking_invariant).

    Attributes:
        results: The items, or what the handler returned for them (``None`` left out).
        error: The :class:`~sse_sansio.RemoteProtocolError` that ended the run, if any;
            ``results`` then holds what came before it.
        last_event_id: The connection's ``last_event_id`` at the end.
        retry: The connection's ``retry`` at the end.
    """

    results: list[T]
    error: RemoteProtocolError | None
    last_event_id: str
    retry: int | None


@overload
def assert_chunking_invariant(
    data: BytesLike,
    handler: None = None,
    *,
    handler_factory: None = None,
    seeds: int = ...,
    max_every_split: int = ...,
    **connection_options: Any,
) -> Outcome[ReceivedItem]: ...


@overload
def assert_chunking_invariant(
    data: BytesLike,
    handler: Callable[[ReceivedItem], T | None],
    *,
    handler_factory: None = None,
    seeds: int = ...,
    max_every_split: int = ...,
    **connection_options: Any,
) -> Outcome[T]: ...


@overload
def assert_chunking_invariant(
    data: BytesLike,
    handler: None = None,
    *,
    handler_factory: Callable[[], Callable[[ReceivedItem], T | None]],
    seeds: int = ...,
    max_every_split: int = ...,
    **connection_options: Any,
) -> Outcome[T]: ...


def assert_chunking_invariant(
    data: BytesLike,
    handler: Callable[[ReceivedItem], Any] | None = None,
    *,
    handler_factory: Callable[[], Callable[[ReceivedItem], Any]] | None = None,
    seeds: int = 5,
    max_every_split: int = 4096,
    **connection_options: Any,
) -> Outcome[Any]:
    """Check that every chunking of ``data`` gives the same result as the whole input.

    For each of :func:`chunkings`, a fresh :class:`~sse_sansio.Connection` is fed the
    chunks (drained after each one, as a network loop would) and then the end of the
    stream.  Without a handler the result is the list of items.  With ``handler``, it is
    what the handler returned for each item (``None`` results are left out), so you
    test *your* code: the function that turns items into application records, say.
    Use ``handler_factory`` instead when your handler keeps state between items (it
    assembles multi-event messages, counts, buffers): it is called once per chunking
    and must return a fresh per-item callable.  Handlers see every item, the final
    ``EndOfStream`` included.

    Items compare by value (type, data, id and retry for an event), not by their
    ``start``/``end`` offsets.  A run also compares its error (message and offset, if
    the stream is refused), and the connection's final ``last_event_id`` and ``retry``.

    Args:
        data: The stream's bytes (a recorded response body, say).
        handler: Called with every item; its non-``None`` return values are compared.
        handler_factory: Called once per chunking to get a fresh handler.
        seeds: How many seeded random chunkings to try (see :func:`chunkings`).
        max_every_split: The longest input split in two at every point.
        **connection_options: Passed to every :class:`~sse_sansio.Connection`.

    Returns:
        The whole input's :class:`Outcome`, for further assertions.

    Raises:
        AssertionError: a chunking's result differs; the message names the chunking,
            the first differing result on both sides, and the chunks when short.
        ValueError: both ``handler`` and ``handler_factory`` were given.
        Exception: whatever the handler raises on the whole input, unchanged.  (When it
            raises only under some other chunking, that is a difference: an
            AssertionError chained to it.)

    Example:
        >>> import json
        >>> from sse_sansio import Event
        >>> def record(item):
        ...     if isinstance(item, Event):
        ...         return json.loads(item.data)
        >>> outcome = assert_chunking_invariant(
        ...     b'data: {"n": 1}\\r\\n\\r\\ndata: {"n": 2}\\r\\n\\r\\n', handler=record
        ... )
        >>> outcome.results
        [{'n': 1}, {'n': 2}]
    """
    if handler is not None and handler_factory is not None:
        raise ValueError("pass handler or handler_factory, not both")

    def make_handler() -> Callable[[ReceivedItem], Any] | None:
        return handler if handler_factory is None else handler_factory()

    runs = chunkings(data, seeds=seeds, max_every_split=max_every_split)
    _, whole_chunks = next(runs)
    want = _run(whole_chunks, make_handler(), connection_options)
    if want.raised is not None:
        raise want.raised
    for label, chunks in runs:
        got = _run(chunks, make_handler(), connection_options)
        problem = _difference(want, got, label)
        if problem is not None:
            shown = ", ".join(repr(c) for c in chunks[:_SHOW_CHUNKS])
            more = "" if len(chunks) <= _SHOW_CHUNKS else f", ... ({len(chunks)} chunks)"
            message = f"chunking {label!r} differs from the whole input: {problem}\n"
            message += f"  chunks: [{shown}{more}]"
            raise AssertionError(message) from got.raised
    return Outcome(want.results, want.error, want.last_event_id, want.retry)


@dataclass
class _Run:
    results: list[Any]
    error: RemoteProtocolError | None = None
    last_event_id: str = ""
    retry: int | None = None
    raised: Exception | None = None  # what the handler raised, if it did
    raised_on: ReceivedItem | None = None


def _run(
    chunks: list[bytes],
    handler: Callable[[ReceivedItem], Any] | None,
    options: dict[str, Any],
) -> _Run:
    run = _Run([])

    def on_item(item: ReceivedItem) -> None:
        if handler is None:
            run.results.append(item)
            return
        try:
            result = handler(item)
        except Exception as exc:
            run.raised, run.raised_on = exc, item
            raise _HandlerFailed from exc
        if result is not None:
            run.results.append(result)

    conn = Connection(**options)
    try:
        _feed(conn, chunks, on_item)
    except RemoteProtocolError as exc:
        run.error = exc
    except _HandlerFailed:
        pass
    run.last_event_id = conn.last_event_id
    run.retry = conn.retry
    return run


class _HandlerFailed(Exception):
    """Unwinds the feeding loop when the handler raised (the cause is kept in the run)."""


def _error_key(error: RemoteProtocolError | None) -> tuple[str, int] | None:
    return None if error is None else (str(error), error.offset)


def _difference(want: _Run, got: _Run, label: str) -> str | None:
    """Describe the first way ``got`` differs from ``want``, or return None."""
    width = max(len(label), len("whole input"))
    for i, (a, b) in enumerate(zip(want.results, got.results, strict=False)):
        if a != b:
            return (
                f"result {i} differs\n  {'whole input':<{width}}: {a!r}\n  {label:<{width}}: {b!r}"
            )
    if got.raised is not None:
        return (
            f"the handler raised {got.raised!r} on {got.raised_on!r} after "
            f"{len(got.results)} results, where the whole input gave "
            + _describe_next(want, len(got.results))
        )
    if len(want.results) != len(got.results):
        n = min(len(want.results), len(got.results))
        return (
            f"{len(got.results)} results instead of {len(want.results)}; result {n}:\n"
            f"  {'whole input':<{width}}: {_describe_next(want, n)}\n"
            f"  {label:<{width}}: {_describe_next(got, n)}"
        )
    if _error_key(want.error) != _error_key(got.error):
        return f"error {_error_key(got.error)!r} instead of {_error_key(want.error)!r}"
    if want.last_event_id != got.last_event_id:
        return f"last_event_id {got.last_event_id!r} instead of {want.last_event_id!r}"
    if want.retry != got.retry:
        return f"retry {got.retry!r} instead of {want.retry!r}"
    return None


def _describe_next(run: _Run, n: int) -> str:
    if n < len(run.results):
        return repr(run.results[n])
    if run.error is not None:
        return f"the error {run.error!r}"
    return "nothing more"


# Every class and function of __all__ is named by this face (sse_sansio/_public.py).
_publish(globals(), __all__, __name__)
