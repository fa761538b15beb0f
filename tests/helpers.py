"""Shared test helpers: drive a Connection with every way of chunking the same bytes."""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator
from typing import Any

import pytest

from sse_sansio import NEED_DATA, Connection, EndOfStream, ReceivedItem, RemoteProtocolError


def drain(conn: Connection) -> list[ReceivedItem]:
    """Pull items until NEED_DATA or EndOfStream (the EndOfStream is included)."""
    out: list[ReceivedItem] = []
    while True:
        item = conn.next_event()
        if item is NEED_DATA:
            return out
        out.append(item)
        if isinstance(item, EndOfStream):
            return out


def feed(chunks: Iterable[bytes], **options: Any) -> tuple[list[ReceivedItem], Connection]:
    """Feed chunks then EOF, draining after each; return all items and the connection.

    A RemoteProtocolError propagates; its ``items`` attribute holds the items that
    came before it.
    """
    conn = Connection(**options)
    items: list[ReceivedItem] = []

    def pull() -> None:
        # Item by item, so that the items before an error are kept.
        while (item := conn.next_event()) is not NEED_DATA:
            items.append(item)
            if isinstance(item, EndOfStream):
                return

    try:
        for chunk in chunks:
            if not chunk:
                continue  # b"" would mean end of stream
            conn.receive_data(chunk)
            pull()
        conn.receive_data(b"")
        pull()
    except RemoteProtocolError as exc:
        exc.items = items  # type: ignore[attr-defined]
        raise
    return items, conn


# Inputs up to this size are split in two at every point; longer ones (the conformance
# corpus has 50-200 KB cases) at this many evenly spread points plus both ends, since
# every split re-parses the whole input and all points would take minutes.
EVERY_SPLIT_MAX = 4096


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
        step = n // EVERY_SPLIT_MAX * 16
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
