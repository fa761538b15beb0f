"""sse_sansio.llm over the hand-written streams in tests/data/llm/.

Each stream is judged whole with its own dialect and with "auto", at every split of
the bytes (the outcome and every decoded payload must not depend on the chunking), with
LF, CRLF and CR line ends, and cut at every byte: a prefix that lacks any of the
stream's events must be reported as a cut, never as completed (or anything else).
The expectations are in tests/data/llm/expected.json, written by hand from the
providers' documentation.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sse_sansio import Comment, EndOfStream, Event, ReceivedItem
from sse_sansio.llm import Outcome, Tracker
from sse_sansio.testing import assert_chunking_invariant, parse

DATA = Path(__file__).parents[1] / "data" / "llm"
EXPECTED: dict[str, dict[str, Any]] = {
    name: want
    for name, want in json.loads((DATA / "expected.json").read_text(encoding="utf-8")).items()
    if not name.startswith("//")
}
FILES = sorted(EXPECTED)
ENDINGS = {"lf": b"\n", "crlf": b"\r\n", "cr": b"\r"}


def stream(name: str, ending: str) -> bytes:
    return (DATA / name).read_bytes().replace(b"\n", ENDINGS[ending])


def judge(items: list[ReceivedItem], dialect: str) -> Outcome:
    tracker = Tracker(dialect)
    for item in items:
        tracker.feed(item)
    assert tracker.outcome is not None
    return tracker.outcome


def check(outcome: Outcome, want: dict[str, Any]) -> None:
    """The outcome has the expected fields, and no detail that its word does not have."""
    got = {key: getattr(outcome, key) for key in want}
    assert got == want, outcome
    assert outcome.reason
    assert (outcome.cut is not None) == (outcome.outcome == "cut")
    failed = outcome.outcome == "failed"
    assert (outcome.error_type is not None or outcome.error_message is not None) == failed
    for key in ("stop_reason", "error_type", "error_message", "cut"):
        if key not in want:
            assert getattr(outcome, key) is None, (key, outcome)


def without_offset(outcome: Outcome) -> Outcome:
    # A cut's offset is the end of the last complete item, and an item's end stops
    # before the LF of a CRLF that a chunk boundary split (the span rule): only there
    # does the outcome depend on the chunking.
    return dataclasses.replace(outcome, offset=None)


def test_every_stream_has_an_expectation() -> None:
    on_disk = sorted(p.name for p in DATA.glob("*.sse"))
    assert on_disk == FILES
    dialects = {want["dialect"] for want in EXPECTED.values()}
    assert dialects == {"openai-chat", "openai-responses", "anthropic", "gemini"}
    outcomes = {(want["dialect"], want["outcome"]) for want in EXPECTED.values()}
    for dialect in dialects:
        for word in ("completed", "stopped", "failed"):
            assert (dialect, word) in outcomes


@pytest.mark.parametrize("ending", sorted(ENDINGS))
@pytest.mark.parametrize("name", FILES)
def test_stream_is_judged_as_its_documentation_says(name: str, ending: str) -> None:
    want = EXPECTED[name]
    items = parse(stream(name, ending))
    named = judge(items, want["dialect"])
    check(named, want)
    assert named.events == sum(isinstance(item, Event) for item in items)
    # Auto-detection finds the same dialect and the same outcome.
    assert judge(items, "auto") == named


def _handler_factory(
    dialect: str, ending: str
) -> Callable[[], Callable[[ReceivedItem], object | None]]:
    def make() -> Callable[[ReceivedItem], object | None]:
        tracker = Tracker(dialect)

        def handle(item: ReceivedItem) -> object | None:
            payload: object = tracker.feed(item)
            if isinstance(item, EndOfStream):
                outcome = tracker.outcome
                assert outcome is not None
                return without_offset(outcome) if ending == "crlf" else outcome
            return payload

        return handle

    return make


@pytest.mark.parametrize("ending", sorted(ENDINGS))
@pytest.mark.parametrize("name", FILES)
def test_stream_outcome_and_payloads_do_not_depend_on_chunking(name: str, ending: str) -> None:
    want = EXPECTED[name]
    result = assert_chunking_invariant(
        stream(name, ending), handler_factory=_handler_factory(want["dialect"], ending), seeds=3
    )
    outcome = result.results[-1]
    assert isinstance(outcome, Outcome)
    check(outcome, want)


@pytest.mark.parametrize("dialect", ["named", "auto"])
@pytest.mark.parametrize("ending", sorted(ENDINGS))
@pytest.mark.parametrize("name", FILES)
def test_stream_cut_at_every_byte_is_reported_as_a_cut(
    name: str, ending: str, dialect: str
) -> None:
    data = stream(name, ending)
    chosen = EXPECTED[name]["dialect"] if dialect == "named" else "auto"
    whole_items = parse(data)
    whole_events = [item for item in whole_items if isinstance(item, Event)]
    whole = judge(whole_items, chosen)
    for n in range(len(data)):
        items = parse(data[:n])
        outcome = judge(items, chosen)
        end = items[-1]
        assert isinstance(end, EndOfStream)
        events = [item for item in items if isinstance(item, Event)]
        if events == whole_events:
            # Only the bytes after the last event are missing (the LF of a CRLF that
            # ends the stream): nothing of the answer is lost.
            assert without_offset(outcome) == without_offset(whole), n
            continue
        assert outcome.outcome == "cut", (n, outcome)
        assert outcome.cut == ("mid-event" if end.truncated else "before-terminal"), (n, outcome)
        assert outcome.events == len(events)


def test_the_stop_streams_keep_their_text() -> None:
    # The payloads the tracker hands back are the decoded JSON, in order.
    tracker = Tracker("openai-chat")
    texts = []
    for item in parse((DATA / "openai-chat-stop.sse").read_bytes()):
        payload = tracker.feed(item)
        if isinstance(payload, dict):
            texts.append(payload["choices"][0]["delta"].get("content") or "")
    assert "".join(texts) == "Hello there!"
    tracker = Tracker("anthropic")
    deltas = [tracker.feed(item) for item in parse((DATA / "anthropic-end-turn.sse").read_bytes())]
    assert [d["delta"]["text"] for d in deltas if d and d["type"] == "content_block_delta"] == [
        "Hello",
        "!",
    ]


def test_unknown_events_pass_through_as_json_or_text() -> None:
    tracker = Tracker("anthropic")
    got = {}
    for item in parse((DATA / "anthropic-unknown-events.sse").read_bytes()):
        payload = tracker.feed(item)
        if isinstance(item, Event):
            got[item.type] = payload
    assert got["an_event_from_the_future"] == {"type": "an_event_from_the_future", "whatever": True}
    assert got["another_one"] == "plain text, not JSON"
    tracker = Tracker("openai-responses")
    items = parse((DATA / "openai-responses-unknown-events.sse").read_bytes())
    assert any(isinstance(item, Comment) for item in items)
    payloads = [tracker.feed(item) for item in items]
    assert "not json at all" in payloads
