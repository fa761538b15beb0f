"""sse_sansio.testing: chunkings, parse, assert_chunking_invariant (100% branch coverage)."""

from __future__ import annotations

import doctest
import itertools
import json
import random
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import sse_sansio.testing
from sse_sansio import (
    Comment,
    Connection,
    EndOfStream,
    Event,
    ReceivedItem,
    RemoteProtocolError,
)
from sse_sansio.testing import Outcome, assert_chunking_invariant, chunkings, parse

pytestmark = pytest.mark.usefixtures("conn_cls")  # both cores: tests/conftest.py

STREAM = b"data: a\r\n\r\n: ping\nid: 7\nretry: 30\ndata: b\ndata: c\r\rdata: tail"


# --------------------------------------------------------------------------- chunkings


def test_docstring_examples_run() -> None:
    result = doctest.testmod(sse_sansio.testing, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 8
    assert result.failed == 0


@given(data=st.binary(max_size=300), seeds=st.integers(0, 4), limit=st.integers(0, 400))
def test_chunkings_cover_the_input(data: bytes, seeds: int, limit: int) -> None:
    results = list(chunkings(data, seeds=seeds, max_every_split=limit))
    labels = [label for label, _ in results]
    assert len(set(labels)) == len(labels)
    for label, chunks in results:
        assert b"".join(chunks) == data, label
        assert all(chunks), label  # b"" would end the stream
    assert results[0] == ("whole", [data] if data else [])
    if len(data) > 1:
        assert results[1] == ("bytewise", [bytes([b]) for b in data])
    splits = [label for label in labels if label.startswith("split@")]
    if len(data) <= limit:
        assert splits == [f"split@{i}" for i in range(1, len(data))]
    else:
        # Evenly spread cuts plus both ends, never more than limit + 16.
        assert len(splits) <= limit + 16
        assert {"split@1", f"split@{len(data) - 1}"} <= set(splits) or len(data) < 2
    assert labels[len(labels) - seeds :] == [f"random(seed={s})" for s in range(seeds)] or not data


def test_chunkings_of_empty_and_single_byte() -> None:
    assert list(chunkings(b"")) == [("whole", [])]
    assert list(chunkings(b"x", seeds=1)) == [("whole", [b"x"]), ("random(seed=0)", [b"x"])]


def test_chunkings_big_input_spreads_its_cuts() -> None:
    data = bytes(range(256)) * 40  # 10240 bytes
    splits = [int(lb[6:]) for lb, _ in chunkings(data, seeds=0) if lb.startswith("split@")]
    assert 4096 <= len(splits) == len(set(splits)) <= 4096 + 16
    assert splits == sorted(splits)
    assert splits[:8] == list(range(1, 9))
    assert splits[-8:] == list(range(len(data) - 8, len(data)))
    gaps = [b - a for a, b in itertools.pairwise(splits[8:-8])]
    assert max(gaps) <= 3  # 10240 / 4097 rounds to gaps of 2 or 3


def test_random_chunkings_are_reproducible_and_mixed() -> None:
    data = bytes(5000)
    first = dict(chunkings(data, max_every_split=0))
    again = dict(chunkings(bytearray(data), max_every_split=0))
    assert first == again
    sizes = [len(c) for lb, chunks in first.items() if lb.startswith("random") for c in chunks]
    assert min(sizes) == 1
    assert max(sizes) > 256  # big chunks too, not only tiny ones


@pytest.mark.parametrize(("seeds", "limit"), [(-1, 10), (1, -1)])
def test_chunkings_refuse_negative_counts(seeds: int, limit: int) -> None:
    with pytest.raises(ValueError, match="must not be negative"):
        next(chunkings(b"x", seeds=seeds, max_every_split=limit))


# --------------------------------------------------------------------------- parse


def test_parse_bytes_and_chunks() -> None:
    want = [
        Event(data="a"),
        Comment(text="ping"),
        Event(data="b\nc", id="7", retry=30),
        EndOfStream(partial_line=10),
    ]
    assert parse(STREAM) == want
    assert parse(bytearray(STREAM)) == want
    assert parse(memoryview(STREAM)) == want
    assert parse([STREAM[:5], b"", STREAM[5:9], memoryview(b""), STREAM[9:]]) == want
    assert parse(iter([STREAM[i : i + 1] for i in range(len(STREAM))])) == want
    assert parse([]) == [EndOfStream()]


def test_parse_passes_connection_options() -> None:
    assert parse(b"data: \xff\n\n", errors="replace") == [Event(data="\ufffd"), EndOfStream()]
    assert parse(b"data: x\n\n", last_event_id="5")[0] == Event(data="x", id="5")
    with pytest.raises(RemoteProtocolError) as info:
        parse(b"data: x\n\ndata: \xff\n\n")
    assert info.value.offset == 15


# --------------------------------------------------------------------------- the invariant


def test_invariant_holds_for_the_library_without_handler() -> None:
    outcome = assert_chunking_invariant(STREAM)
    assert outcome == Outcome(results=parse(STREAM), error=None, last_event_id="7", retry=30)


def test_invariant_reports_the_whole_input_error() -> None:
    data = b"data: a\n\ndata: b\xe2\x82"
    outcome = assert_chunking_invariant(data, seeds=2)
    assert outcome.results == [Event(data="a")]
    assert isinstance(outcome.error, RemoteProtocolError)
    assert outcome.error.offset == len(data) - 2


def records(item: ReceivedItem) -> dict[str, Any] | None:
    # A typical application handler: JSON events to records, everything else dropped.
    if isinstance(item, Event):
        return {"kind": item.type, **json.loads(item.data)}
    return None


def test_invariant_with_a_handler() -> None:
    data = 'event: tick\ndata: {"n": 1,\ndata:  "s": "é"}\r\n\r\n: x\ndata: {}\n\n'.encode()
    outcome = assert_chunking_invariant(data, handler=records, seeds=3)
    assert outcome.results == [{"kind": "tick", "n": 1, "s": "é"}, {"kind": "message"}]


def test_invariant_with_a_handler_factory() -> None:
    calls: list[int] = []

    def factory() -> Callable[[ReceivedItem], str | None]:
        calls.append(1)
        seen: list[str] = []

        def handle(item: ReceivedItem) -> str | None:
            # Stateful: joins every event's data seen so far.
            if isinstance(item, Event):
                seen.append(item.data)
                return "+".join(seen)
            return None

        return handle

    data = b"data: a\n\ndata: b\n\n"
    outcome = assert_chunking_invariant(data, handler_factory=factory, seeds=2)
    assert outcome.results == ["a", "a+b"]
    assert len(calls) == 1 + 1 + (len(data) - 1) + 2  # whole, bytewise, splits, seeds


def test_invariant_refuses_two_handlers() -> None:
    with pytest.raises(ValueError, match="not both"):
        assert_chunking_invariant(  # type: ignore[call-overload]
            b"", handler=records, handler_factory=lambda: records
        )


def test_handler_error_on_whole_input_propagates() -> None:
    with pytest.raises(json.JSONDecodeError):
        assert_chunking_invariant(b"data: {\n\n", handler=records)


def _flaky_factory(
    bad: Callable[[ReceivedItem], Any],
) -> Callable[[], Callable[[ReceivedItem], Any]]:
    """A factory whose first handler is the identity and later ones are ``bad``.

    The library itself is chunking-invariant, so a difference has to be staged: the
    first run is always the whole input.
    """
    runs = iter(range(1_000_000))

    def factory() -> Callable[[ReceivedItem], Any]:
        return (lambda item: item) if next(runs) == 0 else bad

    return factory


def test_difference_in_a_result_names_the_chunking_and_items() -> None:
    def bad(item: ReceivedItem) -> Any:
        return Event(data="B") if item == Event(data="b") else item

    data = b"data: a\n\ndata: b\n\n"
    with pytest.raises(AssertionError) as info:
        assert_chunking_invariant(data, handler_factory=_flaky_factory(bad))
    message = str(info.value)
    assert message.startswith("chunking 'bytewise' differs from the whole input: result 1")
    assert "whole input: Event(type='message', data='b', id='', retry=None)" in message
    assert "bytewise   : Event(type='message', data='B', id='', retry=None)" in message
    # Long chunk lists are elided after twelve chunks.
    assert "chunks: [b'd', b'a', b't', b'a', b':', b' ', b'a', b'\\n', b'\\n', b'd', " in message
    assert f"... ({len(data)} chunks)]" in message


def test_difference_in_count_shows_the_first_missing_result() -> None:
    def fewer(item: ReceivedItem) -> Any:
        return None if isinstance(item, EndOfStream) else item

    with pytest.raises(AssertionError) as info:
        assert_chunking_invariant(b"data: a\n\n", handler_factory=_flaky_factory(fewer))
    message = str(info.value)
    assert "'bytewise' differs from the whole input: 1 results instead of 2; result 1:" in message
    assert "whole input: EndOfStream(partial_line=0, partial_event=False)" in message
    assert "bytewise   : nothing more" in message


def test_difference_in_count_against_an_error() -> None:
    def events_only(item: ReceivedItem) -> Any:
        return item if isinstance(item, Event) else None

    # The whole input's run keeps nothing; the later runs keep the event before the error.
    runs = iter([lambda item: None, *[events_only] * 100])

    with pytest.raises(AssertionError) as info:
        assert_chunking_invariant(
            b"data: a\n\ndata: \xff\n\n", handler_factory=lambda: next(runs), seeds=0
        )
    message = str(info.value)
    assert "'bytewise' differs from the whole input: 1 results instead of 0; result 0:" in message
    assert "whole input: the error RemoteProtocolError('invalid UTF-8" in message
    assert "bytewise   : Event(type='message', data='a', id='', retry=None)" in message


def test_handler_raising_only_under_a_chunking() -> None:
    def boom(item: ReceivedItem) -> Any:
        raise KeyError("no such record")

    with pytest.raises(AssertionError) as info:
        assert_chunking_invariant(b"data: a\n\n", handler_factory=_flaky_factory(boom))
    message = str(info.value)
    assert "the handler raised KeyError('no such record') on Event(type='message', data='a'" in (
        message
    )
    assert "after 0 results, where the whole input gave Event(" in message
    assert isinstance(info.value.__cause__, KeyError)


class _Staged(Connection):
    """A Connection that misbehaves once it has been fed more than two chunks."""

    mode = ""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.chunks = 0

    def receive_data(self, data: bytes | bytearray | memoryview) -> None:
        self.chunks += 1
        if self.mode == "error" and self.chunks > 2 and not data:
            raise RemoteProtocolError("staged at byte offset 3", offset=3)
        super().receive_data(data)

    @property
    def last_event_id(self) -> str:
        return super().last_event_id + ("!" if self.mode == "id" and self.chunks > 2 else "")

    @property
    def retry(self) -> int | None:
        return 99 if self.mode == "retry" and self.chunks > 2 else super().retry


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("error", "error ('staged at byte offset 3', 3) instead of None"),
        ("id", "last_event_id '5!' instead of '5'"),
        ("retry", "retry 99 instead of 10"),
    ],
)
def test_difference_in_connection_state(
    monkeypatch: pytest.MonkeyPatch, mode: str, expected: str
) -> None:
    monkeypatch.setattr(_Staged, "mode", mode)
    monkeypatch.setattr(sse_sansio.testing, "Connection", _Staged)

    def no_end(item: ReceivedItem) -> Any:
        return None if isinstance(item, EndOfStream) else item

    with pytest.raises(AssertionError) as info:
        assert_chunking_invariant(b"id: 5\nretry: 10\n\n", handler=no_end)
    assert str(info.value).startswith(
        f"chunking 'bytewise' differs from the whole input: {expected}\n  chunks: [b'i', "
    )


def _conformance_inputs() -> Iterator[bytes]:
    import base64
    from pathlib import Path

    cases = json.loads((Path(__file__).parents[1] / "data" / "conformance_cases.json").read_text())
    for case in cases:
        data = base64.b64decode(case["input_b64"])
        if len(data) < 2000:
            yield data


def test_invariant_holds_on_the_conformance_inputs() -> None:
    # A realistic use: every short conformance input, both decoding modes.
    for data in _conformance_inputs():
        for errors in ("strict", "replace"):
            assert_chunking_invariant(data, seeds=2, max_every_split=200, errors=errors)


def test_random_seed_labels_rebuild_their_chunking() -> None:
    # A failing "random(seed=S)" label is enough to rebuild the chunks by hand.
    data = bytes(random.Random(1).randbytes(700))
    table = dict(chunkings(data, seeds=3, max_every_split=0))
    for seed in range(3):
        assert (
            table[f"random(seed={seed})"]
            == dict(chunkings(data, seeds=seed + 1))[f"random(seed={seed})"]
        )
