"""The library against the model (tests/helpers/model.py): feed chunks to a Connection and
say what happened in the model's terms, then compare across chunkings.
"""

from __future__ import annotations

import itertools
from typing import Any

from sse_sansio import (
    Comment,
    Connection,
    EndOfStream,
    Event,
    RemoteProtocolError,
    SkippedEvent,
    Update,
)
from sse_sansio.testing import _feed
from tests.helpers.model import (
    MComment,
    MEnd,
    MError,
    MEvent,
    MItem,
    ModelResult,
    MSkipped,
    MUpdate,
    interpret,
)


def run_library(chunks: list[bytes], **options: Any) -> ModelResult:
    """Feed chunks (draining after each), then the end of stream; say what happened."""
    conn = Connection(**options)
    result = ModelResult()
    try:
        _feed(conn, chunks, lambda item: result.items.append(_to_model(item)))
    except RemoteProtocolError as exc:
        kind = "size" if "max_event_size" in str(exc) else "utf8"
        message = str(exc)
        result.error = MError(kind, exc.offset)
    else:
        message = ""
    # Every error message ends with the offset it reports (test_hostile checks the rest).
    assert result.error is None or message.endswith(f"at byte offset {result.error.offset}")
    result.last_event_id = conn.last_event_id
    result.retry = conn.retry
    return result


def _to_model(item: Event | Comment | EndOfStream | Update | SkippedEvent) -> MItem:
    if isinstance(item, Event):
        return MEvent(item.type, item.data, item.id, item.retry, item.start, item.end)
    if isinstance(item, Comment):
        return MComment(item.text, item.start, item.end)
    if isinstance(item, Update):
        return MUpdate(item.id, item.retry, item.start, item.end)
    if isinstance(item, SkippedEvent):
        return MSkipped(item.type, item.id, item.size, item.start, item.end)
    return MEnd(item.partial_line, item.partial_event)


def check(
    data: bytes,
    chunkings: list[list[bytes]],
    *,
    errors: str,
    max_event_size: int | None,
    last_event_id: str = "",
    **opt_in: Any,
) -> None:
    """Assert that the library, fed each of ``chunkings``, agrees with the model.

    ``opt_in``: ``updates`` and ``on_oversize``, which both the model and the library
    take."""
    options: dict[str, Any] = {
        "errors": errors,
        "last_event_id": last_event_id,
        "max_event_size": max_event_size,
        **opt_in,
    }
    whole = interpret(data, **options)
    for chunks in chunkings:
        assert b"".join(chunks) == data
        got = run_library(chunks, **options)
        # Spans follow the span rule: only a chunk that ends with the CR of a CRLF can
        # change one, and the model applies the rule given where the chunks end.
        want = whole
        if any(a.endswith(b"\r") and b.startswith(b"\n") for a, b in itertools.pairwise(chunks)):
            want = interpret(data, **options, cuts=itertools.accumulate(map(len, chunks)))
        assert got == want, chunks
