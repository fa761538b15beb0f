"""Connection(updates=True) (issue 36, item 4): a block that dispatches no event but sets
the last event ID or the reconnection time is handed out as an Update, on both cores,
through the feeding helpers and the planner; off by default.

The rule (sse_sansio.Update's docstring): at the blank line ending a block without
data, an Update when the block took an ``id`` field (no NUL; an ID equal to the one in
force and an empty one count) or a valid ``retry``.  The reference model
(tests/helpers/model.py) holds the same rule, written apart, and referees both cores,
the pure core's fast loop and its opt-in rooms (_modes.py, forced at every block), under
random chunkings.
"""

from __future__ import annotations

import asyncio
import copy
import pickle
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from sse_sansio import (
    NEED_DATA,
    Comment,
    Diagnostic,
    EndOfStream,
    Event,
    LocalProtocolError,
    ReconnectPlanner,
    SkippedEvent,
    Update,
    aiter_events,
    iter_events,
)
from sse_sansio._receive._connection import PyConnection
from tests.helpers import CONFIGS, parser_config
from tests.helpers.differential import check
from tests.helpers.strategies import chunked, max_event_sizes, streams

pytestmark = pytest.mark.usefixtures("conn_cls")  # both cores: tests/conftest.py

_BUDGET = settings().max_examples

PRIMING = b"id: 5\nretry: 2000\n\n"  # MCP's priming event (Streamable HTTP)


def items(conn_cls: Any, data: bytes, **options: Any) -> list[Any]:
    """Every item of ``data`` fed whole, then the end of stream (EndOfStream left out)."""
    conn = conn_cls(**options)
    conn.receive_data(data)
    conn.receive_data(b"")
    out = []
    while not isinstance(item := conn.next_event(), EndOfStream):
        assert item is not NEED_DATA
        out.append(item)
    return out


# ---- the rule -----------------------------------------------------------------------------------


def test_the_priming_event_is_an_update(conn_cls: Any) -> None:
    got = items(conn_cls, PRIMING + b"data: hello\n\n", updates=True)
    assert got == [Update(id="5", retry=2000), Event(data="hello", id="5")]
    assert got[0].span == (0, len(PRIMING))
    assert (got[0].start, got[0].end, got[0].raw) == (0, 19, None)


def test_off_by_default_and_when_false(conn_cls: Any) -> None:
    for options in ({}, {"updates": False}):
        conn = conn_cls(**options)
        conn.receive_data(PRIMING + b"data: hello\n\n")
        assert conn.next_event() == Event(data="hello", id="5")
        assert (conn.last_event_id, conn.retry) == ("5", 2000)


@pytest.mark.parametrize(
    ("block", "want"),
    [
        (b"id: 7\n\n", [Update(id="7")]),
        (b"retry: 300\n\n", [Update(id="4", retry=300)]),  # the ID in force stays
        (b"id: 4\n\n", [Update(id="4")]),  # the same ID again still counts
        (b"id\n\n", [Update(id="")]),  # an empty id resets the last event ID
        (b"id: 1\nid: 2\nretry: 1\nretry: x\n\n", [Update(id="2", retry=1)]),
        (b"event: ping\n\n", []),  # sets neither
        (b"retry: soon\n\n", []),  # an invalid retry is ignored
        (b"id: a\x00b\n\n", []),  # an id holding NUL is ignored
        (b": just a comment\n\n", [Comment(text="just a comment")]),
        (b"id: 7\ndata: x\n\n", [Event(data="x", id="7")]),  # data: an Event carries it
        (b"id: 7\ndata\n\n", [Event(data="", id="7")]),  # empty data is still data
        (b"id: 7\nretry: 5", []),  # cut off by the end of the stream: sets nothing
    ],
)
def test_which_blocks_give_an_update(conn_cls: Any, block: bytes, want: list[Any]) -> None:
    assert items(conn_cls, block, updates=True, last_event_id="4") == want


def test_every_line_end_and_chunking(conn_cls: Any) -> None:
    for end in (b"\n", b"\r", b"\r\n"):
        stream = b"id: 5" + end + b"retry: 2000" + end + end + b"data: a" + end + end
        want = items(conn_cls, stream, updates=True)
        assert [type(i) for i in want] == [Update, Event]
        assert want[0].span == (0, 2 * len(end) + 16 + len(end))
        for size in (1, 2, 3, 7):
            conn = conn_cls(updates=True)
            got = []
            for i in range(0, len(stream), size):
                conn.receive_data(stream[i : i + size])
                while (item := conn.next_event()) is not NEED_DATA:
                    got.append(item)
            assert got == want
            # A CR split from its LF by a chunk end ends the item at the CR.
            assert all(g.span[0] == w.span[0] for g, w in zip(got, want, strict=True))


def test_keep_raw_hands_the_block_out_as_before(conn_cls: Any) -> None:
    conn = conn_cls(updates=True, keep_raw=True)
    conn.receive_data(b": hi\n" + PRIMING)
    assert conn.next_event().raw == b": hi\n"
    update = conn.next_event()
    assert update == Update(id="5", retry=2000)
    assert update.raw == b""
    assert conn.next_event() is NEED_DATA
    assert conn.take_raw() == PRIMING  # the bytes go out as without updates


def test_with_diagnostics_the_update_comes_first(conn_cls: Any) -> None:
    got = items(conn_cls, PRIMING + b"event: x\n\n", updates=True, diagnostics=True)
    assert [type(i) for i in got] == [Update, Diagnostic, Diagnostic]
    assert got[0] == Update(id="5", retry=2000)
    assert got[1].code == "discarded-block"
    assert got[0].span == got[1].span
    assert "its id set the last event ID" in got[1].message


def test_a_skipped_block_is_a_skipped_event_not_an_update(conn_cls: Any) -> None:
    stream = b"id: 8\ndata: " + b"x" * 40 + b"\n\n" + PRIMING
    got = items(conn_cls, stream, updates=True, on_oversize="skip", max_event_size=20)
    assert got == [
        SkippedEvent(id="8", size=len(stream) - len(PRIMING) - 1),
        Update(id="5", retry=2000),
    ]


def test_a_pieced_event_carries_its_id(conn_cls: Any) -> None:
    got = items(conn_cls, b"id: 3\ndata: abcdefgh\n\nid: 4\n\n", updates=True, piece_size=4)
    assert [type(i).__name__ for i in got] == ["DataPiece", "PiecedEvent", "Update"]
    assert got[-1] == Update(id="4")


# ---- the item -----------------------------------------------------------------------------------


def test_update_is_a_value() -> None:
    update = Update(id="5", retry=2000)
    assert update == Update(retry=2000, id="5")
    assert update != Update(id="5")
    assert update != Event(id="5", retry=2000)
    assert update != ("5", 2000, -1, -1, None)  # not a plain tuple
    assert hash(update) == hash(Update(id="5", retry=2000))
    assert repr(update) == "Update(id='5', retry=2000)"
    assert Update() == Update(id="", retry=None)
    assert (update.start, update.end, update.raw, update.span) == (-1, -1, None, (-1, -1))
    with pytest.raises(TypeError):
        _ = update < Update()
    match update:
        case Update(event_id, retry):
            assert (event_id, retry) == ("5", 2000)


@pytest.mark.parametrize(
    "kwargs",
    [{"id": 5}, {"id": "a\nb"}, {"id": "a\x00"}, {"retry": -1}, {"retry": True}, {"retry": "9"}],
)
def test_update_refuses_what_no_stream_gives(kwargs: dict[str, Any]) -> None:
    with pytest.raises(LocalProtocolError):
        Update(**kwargs)


def test_update_pickles_by_its_public_path(conn_cls: Any) -> None:
    [parsed] = items(conn_cls, PRIMING, updates=True)
    assert Update.__module__ == "sse_sansio"
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        data = pickle.dumps(parsed, protocol)
        assert b"sse_sansio._" not in data
        back = pickle.loads(data)
        assert type(back) is Update
        assert tuple(back) == tuple(parsed)  # metadata kept
    assert copy.deepcopy(parsed) == parsed


# ---- the model referees both cores --------------------------------------------------------------


@contextmanager
def every_block_to_modes() -> Iterator[None]:
    """The pure core hands each block to _modes.py at its first byte (Tuning.hand_over_at,
    a test switch), so the model referees that room's Update too."""
    saved = PyConnection._tuning
    PyConnection._tuning = saved._replace(hand_over_at=0)
    try:
        yield
    finally:
        PyConnection._tuning = saved


@settings(
    max_examples=max(25, _BUDGET // 4),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data(), stream=streams(), limit=max_event_sizes)
@example(data=None, stream=PRIMING + b"id\r\n\r\nretry: 1\r\rid: 5\n\n", limit=None)
@pytest.mark.parametrize("config", [*CONFIGS, "modes"])
def test_both_cores_agree_with_the_model(
    config: str, data: Any, stream: bytes, limit: int | None
) -> None:
    chunkings = [[stream] if stream else []]
    if data is not None:
        chunkings.append(data.draw(chunked(stream), label="chunks"))
    switch = every_block_to_modes() if config == "modes" else parser_config(**CONFIGS[config])
    with switch:
        for errors in ("strict", "replace"):
            check(stream, chunkings, errors=errors, max_event_size=limit, updates=True)
            if limit is not None:
                check(
                    stream,
                    chunkings,
                    errors=errors,
                    max_event_size=limit,
                    updates=True,
                    on_oversize="skip",
                )


@settings(max_examples=max(25, _BUDGET // 4), deadline=None)
@given(
    data=st.data(),
    blocks=st.lists(
        st.sampled_from(
            (
                b"id: 7",
                b"id",
                b"id: 7\x00",
                b"retry: 20",
                b"retry: x",
                b"data: a",
                b": c",
                b"event: e",
                b"",
                b"",
                b"",
            )
        ),
        max_size=16,
    ),
    end=st.sampled_from((b"\n", b"\r", b"\r\n")),
)
def test_id_and_retry_shaped_blocks_agree_with_the_model(
    data: Any, blocks: list[bytes], end: bytes
) -> None:
    stream = b"".join(line + end for line in blocks)
    chunkings = [[stream] if stream else [], data.draw(chunked(stream), label="chunks")]
    check(stream, chunkings, errors="strict", max_event_size=None, updates=True)


# ---- through the feeding helpers and the planner ------------------------------------------------

BODY = [b"id: 5\nretry: 20", b"00\n\ndata: a\n\n"]


def test_iter_events_yields_updates() -> None:
    assert list(iter_events(BODY, updates=True)) == [
        Update(id="5", retry=2000),
        Event(data="a", id="5"),
    ]
    assert list(iter_events(BODY)) == [Event(data="a", id="5")]


def test_aiter_events_yields_updates() -> None:
    async def chunks() -> AsyncIterator[bytes]:
        for chunk in BODY:
            yield chunk

    async def main() -> list[Any]:
        return [item async for item in aiter_events(chunks(), updates=True)]

    assert asyncio.run(main()) == [Update(id="5", retry=2000), Event(data="a", id="5")]


def test_the_planner_yields_updates_and_its_state_follows_them() -> None:
    plan = ReconnectPlanner(resume_only=True)
    plan.start(now=0)
    seen = []
    for item in plan.events(BODY, updates=True):
        seen.append((item, plan.last_event_id, plan.retry))
    assert seen == [
        (Update(id="5", retry=2000), "5", 2000),
        (Event(data="a", id="5"), "5", 2000),
    ]
    decision = plan.ended(None, now=1)  # the priming event made the stream resumable
    assert decision.headers["Last-Event-ID"] == "5"  # type: ignore[union-attr]
    assert decision.delay == 2.0  # type: ignore[union-attr]
