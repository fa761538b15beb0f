"""The fast path for runs of same-shaped blocks (sse_sansio/_receive/_uniform.py).

It must be invisible: for every stream, the items, spans, errors and state are those of
the line loop, which the reference model in tests/helpers/model.py stands for.  The streams here
are what the fast path is for (long runs of one block shape) and its near misses: a
block of another shape in the run, a missing space, an empty event type, an id field,
invalid UTF-8, every line end, small limits.  A white-box test checks that the fast
path does engage for each shape it claims, so that the agreement tests test it.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sse_sansio._receive._connection as connection_module
import sse_sansio._receive._interpret as interpret_module
from sse_sansio import Comment, Event
from sse_sansio._receive._uniform import BATCH_BLOCKS, MIN_BLOCKS, uniform_blocks
from tests import helpers
from tests.helpers import chunkings, feed
from tests.helpers.differential import check
from tests.helpers.model import MComment, MEvent, interpret
from tests.helpers.strategies import BAD_UTF8, LINE_ENDS, chunked, values

pytestmark = pytest.mark.usefixtures("conn_cls")  # both cores: tests/conftest.py

# Block shapes as their line prefixes: the ones the fast path reads, and near misses
# that it must hand back to the line loop.
SHAPES = (
    (b"data: ",),
    (b"data:",),
    (b"event: ", b"data: "),
    (b"data: ", b"event: "),
    (b"event:", b"data:"),
    (b"data: ", b"data: "),
    (b"event: ", b"data: ", b"data:", b"event: "),
    (b": ",),
    (b":",),
    (b"id: ", b"data: "),
    (b"retry: ", b"data: "),
    (b": ", b"data: "),
    (b"data", b"data: "),
    (b"Data: ",),
)

plain_values = st.text(alphabet="ab :é中\U0001f600", max_size=8).map(str.encode)
block_values = st.one_of(plain_values, plain_values, plain_values, values)

# What may replace a block, or follow it: another shape, stray line ends, a partial line.
INTRUDERS = (
    b"",
    b"\n",
    b"\r\n",
    b": ping\n\n",
    b"event: x\ndata: y\n\n",
    b"data: x\ndata: y\n\n",
    b"data: x\ndata: y\ndata: z\n\n",
    b": a\n: b\n\n",
    b"event:\ndata: y\n\n",
    b"id: 9\n\n",
    b"data: \xff\n\n",
    b"data:  two spaces\n\n",
    b"data\n\n",
    b"retry: 10\n\n",
    b"data: cut",
)


@st.composite
def uniform_streams(draw: st.DrawFn) -> bytes:
    """A run of blocks of one shape, long enough for the fast path, with a few flaws."""
    shape = draw(st.sampled_from(SHAPES))
    end = draw(st.sampled_from(LINE_ENDS))
    count = draw(st.integers(MIN_BLOCKS, 3 * MIN_BLOCKS + 10))
    texts = draw(st.lists(block_values, min_size=count * len(shape), max_size=count * len(shape)))
    blocks = []
    for index in range(count):
        cells = texts[index * len(shape) : (index + 1) * len(shape)]
        blocks.append(end.join(p + v for p, v in zip(shape, cells, strict=True)) + end + end)
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, count - 1))
        intruder = draw(st.sampled_from((*INTRUDERS, *BAD_UTF8)))
        if draw(st.booleans()):
            blocks[at] = intruder
        else:
            blocks.insert(at, intruder)
    head = draw(st.sampled_from((b"", b": hello\n", b"data: open", b"\n")))
    return head + b"".join(blocks) + draw(st.sampled_from((b"", b"data: tail", b"\r")))


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data(), stream=uniform_streams())
def test_uniform_runs_agree_with_model(data: Any, stream: bytes) -> None:
    limit = data.draw(st.one_of(st.none(), st.integers(1, 400), st.just(10**6)), label="limit")
    chunks = data.draw(chunked(stream), label="chunks")
    for errors in ("strict", "replace"):
        check(stream, [[stream], chunks], errors=errors, max_event_size=limit)


def test_uniform_runs_agree_with_model_at_every_chunk_size() -> None:
    # One stream of each shape, fed in chunks of every size from 1 to 300 bytes and
    # whole: the runs then start and end at every possible line of every block.
    for shape in SHAPES:
        for end in LINE_ENDS:
            stream = b"".join(
                end.join(p + f"v{i}é".encode() for p in shape) + end + end for i in range(40)
            )
            sizes = [*range(1, 300, 7), len(stream)]
            splits = [[stream[i : i + n] for i in range(0, len(stream), n)] for n in sizes]
            check(stream, splits, errors="strict", max_event_size=None)


@pytest.mark.slow  # an exhaustive search: every split of big inputs
@pytest.mark.parametrize("shape", SHAPES, ids=[b"|".join(s).decode() for s in SHAPES])
def test_a_flaw_anywhere_in_a_run(shape: tuple[bytes, ...]) -> None:
    # Each flaw at the start, early and late in a run: before, within and after the
    # first batch, in a run cut by the flaw into parts both above and below MIN_BLOCKS.
    blocks = [b"\n".join(p + f"v{i}".encode() for p in shape) + b"\n\n" for i in range(40)]
    for intruder in (*INTRUDERS, *BAD_UTF8):
        for at in (0, MIN_BLOCKS + 1, 20, 39):
            stream = b"".join([*blocks[:at], intruder, *blocks[at:]])
            splits = [[stream], [stream[i : i + 100] for i in range(0, len(stream), 100)]]
            for errors in ("strict", "replace"):
                check(stream, splits, errors=errors, max_event_size=None)


def test_the_limit_counts_from_the_block_after_a_run() -> None:
    # The run is read in one window that cannot reach the limit; the event after it
    # starts in that window and ends in later chunks, right at the limit.
    run = b"data: x\n\n" * 40  # 360 bytes
    for end in (b"\n", b"\r\n"):
        stream = run.replace(b"\n", end) + b"data: " + b"y" * 994 + end + end  # 1,000 bytes + end
        first = len(run.replace(b"\n", end)) + 100
        splits = [[stream[:first], stream[first : first + 600], stream[first + 600 :]]]
        for limit in (999, 1000, 1001):
            check(stream, splits, errors="strict", max_event_size=limit)
    # A run of CR-ended blocks whose last CR ends a chunk and turns out to be a CRLF:
    # the LF in the next chunk still belongs before the next block.
    run = b"data: x\r\r" * 40
    stream = run + b"\ndata: " + b"y" * 994 + b"\r\r"
    splits = [[run, stream[len(run) : len(run) + 600], stream[len(run) + 600 :]]]
    for limit in (999, 1000, 1001):
        check(stream, splits, errors="strict", max_event_size=limit)


# --------------------------------------------------------------------------- engagement


def _batched_items(stream: bytes, monkeypatch: pytest.MonkeyPatch, **options: Any) -> int:
    """How many items the fast path built when ``stream`` was fed whole."""
    built: list[Event | Comment] = []

    def spy(*args: Any) -> Any:
        got = uniform_blocks(*args)
        if got is not None:
            built.extend(got[0])
        return got

    monkeypatch.setattr(interpret_module, "uniform_blocks", spy)
    # The fast path is the pure core's: measure it there, whichever core is selected.
    monkeypatch.setattr(helpers, "Connection", connection_module.Connection)
    items, _ = feed([stream, b""], **options)
    # keep_raw changes no item (the model has no such option).
    want = interpret(stream, **{k: v for k, v in options.items() if k != "keep_raw"})
    assert [_spans(i) for i in items[:-1]] == [_spans(i) for i in want.items[:-1]]
    return len(built)


def _spans(item: Any) -> tuple[Any, ...]:
    if isinstance(item, (Event, MEvent)):
        return ("event", item.type, item.data, item.id, item.start, item.end)
    assert isinstance(item, (Comment, MComment))
    return ("comment", item.text, item.start, item.end)


@pytest.mark.parametrize(
    ("block", "kind"),
    [
        (b'data: {"n": 1}\n\n', "data"),
        (b'data:{"n": 1}\r\n\r\n', "data, no space, CRLF"),
        (b"event: delta\ndata: \xe4\xb8\xad\n\n", "typed"),
        (b"data: a\rdata: b\revent: t\r\r", "two data lines, CR"),
        (b": ping\n\n", "comments"),
        (b":ping\n\n", "comments, no space"),
    ],
)
def test_fast_path_engages(block: bytes, kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    stream = block * 300
    batched = _batched_items(stream, monkeypatch)
    # The line loop takes the first block of a window and one block after each batch.
    assert batched >= 300 - 300 // BATCH_BLOCKS - 2, kind


@pytest.mark.parametrize(
    ("stream", "options"),
    [
        (b"id: 1\ndata: x\n\n" * 100, {}),  # id fields change last_event_id: line loop
        (b"event:\ndata: x\n\n" * 100, {}),  # empty type: "message", said by the line loop
        (b": a\ndata: x\n\n" * 100, {}),  # a comment inside an event
        (b"data: x\n\n" * 100, {"keep_raw": True}),  # raw bytes per item
        (b"data: x\n\n" * 100, {"max_event_size": 899}),  # the window may reach the limit
        (b"data: x\n\n" * (MIN_BLOCKS - 1) + b"data: y", {}),  # too few blocks
    ],
)
def test_fast_path_declines(
    stream: bytes, options: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _batched_items(stream, monkeypatch, **options) == 0


def test_invalid_utf8_in_a_run_is_reported_where_it_is() -> None:
    # The fast path gives up on the run; the line loop delivers the events before the
    # bad byte and reports its offset, however the stream is chunked.
    good = b"data: ok\n\n" * 50
    stream = good + b"data: \xff\n\n" + good
    splits = [[c for c in chunks if c] for _, chunks in chunkings(stream, seeds=2)]
    for errors in ("strict", "replace"):
        check(stream, splits, errors=errors, max_event_size=None)


def test_the_documented_read_ahead_is_the_real_one() -> None:
    # README and next_event()'s docstring promise how far ahead a run may be read.
    from pathlib import Path

    from sse_sansio import Connection

    readme = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
    assert f"at most {BATCH_BLOCKS} items ahead" in " ".join(readme.split())
    docstring = Connection.next_event.__doc__ or ""
    assert f"at most {BATCH_BLOCKS} items ahead" in " ".join(docstring.split())
