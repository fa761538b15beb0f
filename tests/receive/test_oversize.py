"""Connection(on_oversize="skip"): an event over max_event_size is skipped, not fatal.

The expected values are worked out by hand from the stream (offsets counted in the
comments), or taken from what the default "error" mode does with the same bytes: the
skipped block must be exactly the one the limit refuses there, at the same offset.
"""

from __future__ import annotations

from itertools import accumulate
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sse_sansio import (
    NEED_DATA,
    Comment,
    EndOfStream,
    Event,
    LocalProtocolError,
    RemoteProtocolError,
    SkippedEvent,
    iter_events,
)
from sse_sansio._receive._connection import Connection
from sse_sansio.testing import chunkings
from tests.helpers.model import MComment, MEnd, MError, MEvent, ModelResult, MSkipped, interpret
from tests.helpers.strategies import chunked, streams

pytestmark = pytest.mark.usefixtures("conn_cls")  # both cores: tests/conftest.py

_BUDGET = settings().max_examples


def feed(chunks: list[bytes], **options: Any) -> tuple[list[Any], Connection, list[bytes]]:
    """Feed chunks then the end, draining after each; items, connection, take_raw() bytes."""
    conn = Connection(**options)
    items: list[Any] = []
    taken: list[bytes] = []
    for chunk in [*chunks, b""]:
        conn.receive_data(chunk)
        while (item := conn.next_event()) is not NEED_DATA:
            items.append(item)
            if isinstance(item, EndOfStream):
                break
        if options.get("keep_raw"):
            taken.append(conn.take_raw())
    return items, conn, taken


# "data: a\n\n" is 9 bytes (0-8); the big block starts at 9:
#   "event: big\n" 9-19, "data: " + 40 x 20-65 + "\n" 66, "id: 7\n" 67-72,
#   "retry: 30\n" 73-82, blank line at 83, so the block's size is 83 - 9 = 74,
#   and the SkippedEvent ends at 84.  "data: after\n\n" is 84-96.
STREAM = b"data: a\n\nevent: big\ndata: " + b"x" * 40 + b"\nid: 7\nretry: 30\n\ndata: after\n\n"


@pytest.mark.parametrize(("label", "chunks"), list(chunkings(STREAM)))
def test_skips_the_block_the_limit_refuses(label: str, chunks: list[bytes]) -> None:
    items, conn, _ = feed(chunks, max_event_size=30, on_oversize="skip")
    assert items == [
        Event(data="a"),
        SkippedEvent(type="big", id="7", size=74),
        Event(data="after", id="7"),
        EndOfStream(),
    ]
    assert [(i.start, i.end) for i in items[:3]] == [(0, 9), (9, 84), (84, 97)]
    assert items[1].raw is None
    # Its id and retry lines still counted, as the spec would have them.
    assert conn.last_event_id == "7"
    assert conn.retry == 30
    # The error mode refuses the same block, at its first byte + the limit.
    with pytest.raises(RemoteProtocolError) as info:
        feed(chunks, max_event_size=30)
    assert info.value.offset == 9 + 30


@pytest.mark.parametrize(("label", "chunks"), list(chunkings(STREAM)))
def test_keep_raw_forwards_the_stream_minus_the_skipped_block(
    label: str, chunks: list[bytes]
) -> None:
    items, _, taken = feed(chunks, max_event_size=30, on_oversize="skip", keep_raw=True)
    assert items[1].raw == b""
    forwarded = b"".join([*(i.raw for i in items), *taken])
    assert forwarded == STREAM[:9] + STREAM[84:]


def test_a_line_longer_than_the_limit_is_dropped_whatever_its_field() -> None:
    # The id line alone is 4 + 20 = 24 bytes > 10: dropped whole, so the id stays "1".
    stream = b"id: 1\n\ndata: " + b"y" * 20 + b"\nid: " + b"2" * 20 + b"\n\n"
    for _, chunks in chunkings(stream):
        items, conn, _ = feed(chunks, max_event_size=10, on_oversize="skip")
        assert items == [SkippedEvent(id="1", size=27 + 25), EndOfStream()]
        assert conn.last_event_id == "1"


def test_a_block_of_one_huge_comment_is_skipped_too() -> None:
    stream = b": " + b"c" * 50 + b"\n\ndata: ok\n\n"
    for _, chunks in chunkings(stream):
        items, _, _ = feed(chunks, max_event_size=20, on_oversize="skip")
        assert items == [SkippedEvent(size=53), Event(data="ok"), EndOfStream()]
        assert (items[0].start, items[0].end) == (0, 54)


def test_end_of_stream_inside_a_skipped_block_is_a_cut_event() -> None:
    stream = b"data: ok\n\ndata: " + b"z" * 40 + b"\nda"
    for _, chunks in chunkings(stream):
        items, _, _ = feed(chunks, max_event_size=20, on_oversize="skip")
        assert items == [Event(data="ok"), EndOfStream(partial_line=2, partial_event=True)]


def test_end_of_stream_inside_a_dropped_line() -> None:
    # The cut line is dropped unread: its invalid UTF-8 is not an error.
    stream = b"data: " + b"\xff" * 40
    for _, chunks in chunkings(stream):
        items, _, _ = feed(chunks, max_event_size=20, on_oversize="skip")
        assert items == [EndOfStream(partial_line=46, partial_event=True)]


def test_skipped_data_is_not_decoded_but_kept_fields_are() -> None:
    # A bad byte in a skipped data line is no error; one in an id line of the skipped
    # block is (that line is still interpreted), at its offset: 6 + 40 + 1 + 4 = 51.
    bad_data = b"data: " + b"a" * 40 + b"\xff\ndata: " + b"\xff\n\ndata: ok\n\n"
    items, _, _ = feed([bad_data], max_event_size=20, on_oversize="skip")
    assert items == [SkippedEvent(size=48 + 8), Event(data="ok"), EndOfStream()]
    bad_id = b"data: " + b"a" * 40 + b"\nid: \xff\n\n"
    with pytest.raises(RemoteProtocolError) as info:
        feed([bad_id], max_event_size=20, on_oversize="skip")
    assert info.value.offset == 51


def test_a_comment_inside_a_skipped_block_goes_with_it() -> None:
    stream = b"data: " + b"a" * 40 + b"\n: inside\nevent: e\n\n"
    items, _, _ = feed([stream], max_event_size=20, on_oversize="skip")
    assert items == [SkippedEvent(type="e", size=47 + 9 + 9), EndOfStream()]
    # Before the block outgrew the limit, a comment is handed out as always.
    items, _, _ = feed([b": before\n" + stream], max_event_size=20, on_oversize="skip")
    assert items[0] == Comment(text="before")


def test_the_option_is_checked() -> None:
    with pytest.raises(ValueError, match="on_oversize"):
        Connection(on_oversize="drop")  # type: ignore[call-overload]


def test_skipped_event_constructor_validates() -> None:
    item = SkippedEvent(type="t", id="i", size=3)
    assert (item.type, item.id, item.size, item.start, item.end, item.raw) == (
        "t",
        "i",
        3,
        -1,
        -1,
        None,
    )
    assert repr(item) == "SkippedEvent(type='t', id='i', size=3)"
    with pytest.raises(LocalProtocolError):
        SkippedEvent(size=-1)
    with pytest.raises(LocalProtocolError):
        SkippedEvent(id="a\nb")


@settings(
    max_examples=max(25, _BUDGET // 4),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data(), stream=streams(), limit=st.integers(1, 200))
def test_skip_refuses_exactly_what_error_mode_refuses(data: Any, stream: bytes, limit: int) -> None:
    # Until the first refused block both modes agree item for item; the first
    # SkippedEvent starts where the error mode's block started: offset - limit.
    chunks = data.draw(chunked(stream), label="chunks")
    errors = data.draw(st.sampled_from(("strict", "replace")), label="errors")
    try:
        want, _, _ = feed(chunks, max_event_size=limit, errors=errors)
        refused = None
    except RemoteProtocolError as exc:
        refused = exc.offset if "max_event_size" in str(exc) else -1
    try:
        got, _, _ = feed(chunks, max_event_size=limit, errors=errors, on_oversize="skip")
    except RemoteProtocolError:
        assert refused is not None  # a UTF-8 error: after a skip it may be in a kept line
        return
    skipped = [i for i, item in enumerate(got) if isinstance(item, SkippedEvent)]
    if refused is None:
        assert got == want
    elif refused >= 0:
        first = got[skipped[0]] if skipped else got[-1]
        if skipped:
            assert first.start + limit == refused
        else:
            # The stream ended inside the refused block.
            assert first.partial_event


@settings(
    max_examples=max(25, _BUDGET // 4),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data(), stream=streams(), limit=st.integers(1, 200))
def test_skip_agrees_with_the_model(data: Any, stream: bytes, limit: int) -> None:
    # The reference model (tests/helpers/model.py) with on_oversize="skip", under a drawn
    # chunking: every item with its span, the error if any, last_event_id and retry.
    chunks = data.draw(chunked(stream), label="chunks")
    errors = data.draw(st.sampled_from(("strict", "replace")), label="errors")
    options: dict[str, Any] = {"errors": errors, "max_event_size": limit, "on_oversize": "skip"}
    want = interpret(stream, **options, cuts=accumulate(map(len, chunks)))
    got = ModelResult()
    conn = Connection(**options)
    try:
        for chunk in [*chunks, b""]:
            conn.receive_data(chunk)
            while (item := conn.next_event()) is not NEED_DATA:
                got.items.append(to_model(item))
                if isinstance(item, EndOfStream):
                    break
    except RemoteProtocolError as exc:
        got.error = MError("size" if "max_event_size" in str(exc) else "utf8", exc.offset)
    got.last_event_id, got.retry = conn.last_event_id, conn.retry
    assert got == want


def to_model(item: Any) -> Any:
    if isinstance(item, Event):
        return MEvent(item.type, item.data, item.id, item.retry, item.start, item.end)
    if isinstance(item, Comment):
        return MComment(item.text, item.start, item.end)
    if isinstance(item, SkippedEvent):
        return MSkipped(item.type, item.id, item.size, item.start, item.end)
    return MEnd(item.partial_line, item.partial_event)


def test_iter_events_passes_the_new_items_through() -> None:
    conn = Connection(max_event_size=10, on_oversize="skip")
    stream = [b"data: " + b"x" * 50 + b"\n\ndata: ok\n\n"]
    assert list(iter_events(stream, connection=conn)) == [SkippedEvent(size=57), Event(data="ok")]
