"""Shared test helpers: drive a Connection with every way of chunking the same bytes."""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from sse_sansio import Connection, ReceivedItem, RemoteProtocolError
from sse_sansio._receive._connection import PyConnection
from sse_sansio._receive._interpret import Tuning
from sse_sansio.testing import _drain, _feed


def drain(conn: Connection) -> list[ReceivedItem]:
    """Pull items until NEED_DATA or EndOfStream (the EndOfStream is included)."""
    out: list[ReceivedItem] = []
    _drain(conn, out.append)
    return out


def feed(chunks: Iterable[bytes], **options: Any) -> tuple[list[ReceivedItem], Connection]:
    """Feed chunks then EOF, draining after each; return all items and the connection.

    The one feed-and-drain loop of the suite is sse_sansio.testing's; this adds the
    connection to the result.  A RemoteProtocolError propagates; its ``items`` attribute
    holds the items that came before it.
    """
    conn = Connection(**options)
    items: list[ReceivedItem] = []
    try:
        _feed(conn, chunks, items.append)
    except RemoteProtocolError as exc:
        exc.items = items  # type: ignore[attr-defined]
        raise
    return items, conn


@contextmanager
def parser_config(*, fast_path: bool = True, window: int | None = None) -> Iterator[None]:
    """Run the pure parser with the same-shape fast path off, or with tiny windows.

    Both are parameters of the parser (_interpret.Tuning); every pure connection made
    meanwhile passes PyConnection._tuning to its parser, so this sets that one class
    attribute and switching costs the hot path nothing.
    """
    saved = PyConnection._tuning
    tuning = Tuning(fast_path=fast_path)
    if window is not None:
        tuning = tuning._replace(window=window)
    PyConnection._tuning = tuning
    try:
        yield
    finally:
        PyConnection._tuning = saved


#: The configurations the differential tests run in: everything on, the fast path off
#: (every block through the line loop), and windows of a few bytes (the code at window
#: edges and split CRLFs then runs on every input, not only on 64 KiB ones).
CONFIGS: dict[str, dict[str, Any]] = {
    "all-on": {},
    "no-fast-path": {"fast_path": False},
    "tiny-windows": {"window": 3},
}


# Inputs up to this size are split in two at every point; longer ones (the conformance
# corpus has 50-200 KB cases) at SPREAD_SPLITS evenly spread points plus the first and
# last eight, since every split re-parses the whole input and all points would take
# minutes (hours on CPython 3.12, whose line tracing makes coverage runs 30-40 times
# slower than untraced ones on the pure core).  The random chunkings cut them further.
EVERY_SPLIT_MAX = 4096
SPREAD_SPLITS = 64


def remote_error(chunks: Iterable[bytes], **options: Any) -> tuple[int, list[ReceivedItem]]:
    """Feed chunks that must fail; return the error offset and every item before it."""
    with pytest.raises(RemoteProtocolError) as info:
        feed(chunks, **options)
    assert str(info.value).endswith(f"at byte offset {info.value.offset}")
    return info.value.offset, info.value.items  # type: ignore[attr-defined]


def chunkings(data: bytes, *, seeds: int = 5) -> Iterator[tuple[str, list[bytes]]]:
    """Yield (label, chunks): whole, byte by byte, two-part splits, random splits."""
    yield "whole", [data]
    yield "bytewise", [data[i : i + 1] for i in range(len(data))]
    n = len(data)
    if n <= EVERY_SPLIT_MAX:
        cuts: Iterable[int] = range(n + 1)
    else:
        step = n // SPREAD_SPLITS
        cuts = sorted({*range(0, n + 1, step), *range(8), *range(n - 8, n + 1)})
    for cut in cuts:
        yield f"split@{cut}", [data[:cut], data[cut:]]
    for seed in range(seeds):
        rng = random.Random(seed)
        chunks, i = [], 0
        while i < len(data):
            n = rng.randint(1, 9)
            chunks.append(data[i : i + n])
            i += n
        yield f"random{seed}", chunks
