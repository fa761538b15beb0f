"""Comments before a block's first field do not count toward max_event_size (issue 26/17).

Each comment is handed out as it completes and nothing is held for it, so a block
starts at its first field line: a long run of keep-alive comments without a blank line
is not an oversize event.  The comments among a block's fields still count (keep_raw
holds them with their event), and so does a comment line while it is still arriving.
Both cores, their default paths and their opt-in modes' (``diagnostics=True``), each
chunking from tests/strategies' splits: whole and byte by byte.
"""

from __future__ import annotations

from typing import Any

import pytest

from sse_sansio import NEED_DATA, Comment, EndOfStream, Event, RemoteProtocolError
from tests.helpers.cores import CORE, PURE, needs_core

CORES = [
    pytest.param(PURE, id="py"),
    pytest.param(CORE.Connection if CORE else None, id="c", marks=needs_core),
]
MODES = [
    pytest.param({}, id="default"),
    pytest.param({"keep_raw": True}, id="keep_raw"),
    pytest.param({"diagnostics": True}, id="modes"),
]


def _items(core: Any, stream: bytes, whole: bool, **options: Any) -> list[object]:
    conn = core(**options)
    chunks = [stream] if whole else [stream[i : i + 1] for i in range(len(stream))]
    items: list[object] = []
    for chunk in [*chunks, b""]:
        conn.receive_data(chunk)
        while (item := conn.next_event()) is not NEED_DATA:
            items.append(item)
            if isinstance(item, EndOfStream):
                return [i for i in items if isinstance(i, (Event, Comment, EndOfStream))]
    raise AssertionError("no end of stream")  # pragma: no cover - the loop returns


@pytest.mark.parametrize("core", CORES)
@pytest.mark.parametrize("options", MODES)
@pytest.mark.parametrize("whole", [True, False], ids=["whole", "bytewise"])
def test_comments_before_the_first_field_do_not_count(
    core: Any, options: dict[str, Any], whole: bool
) -> None:
    # 40 comment lines of 8 bytes (320 bytes), then an event of exactly 12 bytes (its
    # data line and that line's LF; the blank line's own LF does not count).
    stream = b": ping\r\n" * 40 + b"data: 12345\n\n"
    items = _items(core, stream, whole, max_event_size=12, **options)
    assert [type(i) for i in items] == [Comment] * 40 + [Event, EndOfStream]
    event = items[40]
    assert isinstance(event, Event)
    assert (event.data, event.start) == ("12345", 320)


@pytest.mark.parametrize("core", CORES)
@pytest.mark.parametrize("options", MODES)
def test_a_comment_among_the_fields_still_counts(core: Any, options: dict[str, Any]) -> None:
    # The block starts at "data: 1" (offset 8); 8 + 11 bytes reach past the limit 15.
    stream = b": ping\r\ndata: 1\n: ping\ndata: 2\n\n"
    with pytest.raises(RemoteProtocolError) as raised:
        _items(core, stream, True, max_event_size=15, **options)
    assert raised.value.offset == 8 + 15


@pytest.mark.parametrize("core", CORES)
@pytest.mark.parametrize("options", MODES)
def test_a_comment_line_longer_than_the_limit_is_still_refused(
    core: Any, options: dict[str, Any]
) -> None:
    stream = b": ok\n: " + b"x" * 20 + b"\n\n"
    with pytest.raises(RemoteProtocolError) as raised:
        _items(core, stream, False, max_event_size=10, **options)
    assert raised.value.offset == 5 + 10  # from the start of the long comment line
