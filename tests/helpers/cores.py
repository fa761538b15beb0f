"""The two receive cores side by side: the compiled module (or None), the pure class, and
how to observe what one does with a list of chunks.

Shared by the tests that compare the cores themselves (tests/receive/).
"""

from __future__ import annotations

import os
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from sse_sansio import (
    NEED_DATA,
    EndOfStream,
    ProtocolError,
)
from sse_sansio._receive import _connection

ROOT = Path(__file__).resolve().parents[2]


PURE = _connection.PyConnection


REQUIRED = os.environ.get("SSE_SANSIO_REQUIRE_EXTENSIONS", "") not in ("", "0")


def _load_core() -> ModuleType | None:
    try:
        import sse_sansio._receive._core as core  # type: ignore[import-not-found]
    except ImportError:
        if REQUIRED:
            raise
        return None
    return core  # type: ignore[no-any-return]


CORE = _load_core()


needs_core = pytest.mark.skipif(
    CORE is None, reason="the compiled core was not built (no C compiler at install)"
)


def compiled(**options: Any) -> Any:
    assert CORE is not None
    return CORE.Connection(**options)


def observe(factory: Any, chunks: list[bytes], **options: Any) -> list[Any]:
    """Everything observable, chunk by chunk: items with their metadata, errors, state."""
    conn = factory(**options)
    keep_raw = options.get("keep_raw", False)
    seen: list[Any] = []
    for chunk in [*chunks, b""]:
        try:
            conn.receive_data(chunk)
            while True:
                item = conn.next_event()
                if item is NEED_DATA:
                    seen.append("NEED_DATA")
                    break
                seen.append((type(item), tuple(item)))
                if isinstance(item, EndOfStream):
                    break
        except ProtocolError as exc:
            seen.append((type(exc), str(exc), getattr(exc, "offset", None)))
            seen.extend(again(conn, type(exc)))
            break
        seen.append((conn.last_event_id, conn.retry))
        if keep_raw:
            seen.append(conn.take_raw())
    return seen


def again(conn: Any, kind: type[ProtocolError]) -> list[str]:
    """Sticky: what both methods raise after the error."""
    said = []
    for call in (conn.next_event, lambda: conn.receive_data(b"x")):
        with pytest.raises(kind) as again:
            call()
        said.append(str(again.value))
    return said
