"""sse_sansio.llm's parts of stream health: Progress for the Watchdog, TextMerge for the
Coalescer.  The merge property: the merged stream's assembled text and the Tracker's
outcome are the original's (the text extracted here by each API's documented shape)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sse_sansio import Coalescer, Comment, EndOfStream, Event
from sse_sansio.llm import Progress, TextMerge, Tracker, generic
from sse_sansio.testing import parse


def _event(data: Any, type: str = "message", id: str = "") -> Event:
    return Event(type=type, data=json.dumps(data), id=id)


def _chat(delta: dict[str, Any], finish: str | None = None) -> Event:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return _event({"id": "c1", "object": "chat.completion.chunk", "choices": [choice]})


def _anthropic(kind: str, **fields: Any) -> Event:
    return _event({"type": kind, **fields}, type=kind)


def _responses(kind: str, **fields: Any) -> Event:
    return _event({"type": kind, **fields}, type=kind)


def _gemini(parts: list[Any], finish: str | None = None, usage: int = 0) -> Event:
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}}
    if finish:
        candidate["finishReason"] = finish
    return _event({"candidates": [candidate], "usageMetadata": {"totalTokenCount": usage}})


# ---- Progress -----------------------------------------------------------------------------

PROGRESS_CASES = [
    ("anthropic", _anthropic("ping"), False),
    ("anthropic", _anthropic("message_start", message={}), False),
    ("anthropic", _anthropic("content_block_delta", index=0, delta={"type": "text_delta"}), True),
    ("anthropic", _anthropic("message_stop"), True),
    ("openai-chat", _chat({"role": "assistant", "content": ""}), False),
    ("openai-chat", _chat({}), False),
    ("openai-chat", _chat({"content": "Hi"}), True),
    ("openai-chat", _chat({"tool_calls": [{"index": 0}]}), True),
    ("openai-chat", _chat({}, finish="stop"), True),
    ("openai-chat", Event(data="[DONE]"), True),
    ("openai-chat", _event({"error": {"message": "x"}}), True),
    ("openai-chat", _event({"choices": "nonsense"}), False),
    ("openai-responses", _responses("response.created"), False),
    ("openai-responses", _responses("response.output_text.delta", delta="a"), True),
    ("openai-responses", _responses("response.completed"), True),
    ("openai-responses", _event({"type": "response.in_progress"}), False),
    ("gemini", _gemini([]), False),
    ("gemini", _gemini([{"text": "a"}]), True),
    ("gemini", _gemini([], finish="STOP"), True),
    ("gemini", _event({"promptFeedback": {"blockReason": "SAFETY"}}), True),
    ("gemini", _event({"candidates": [1]}), False),
    ("anthropic", Event(type="content_block_delta", data="not json"), True),
    # A type that is no string (a list is unhashable) moves nothing and never raises.
    ("anthropic", _event({"type": ["content_block_delta"]}), False),
    ("openai-responses", _event({"type": ["response.output_text.delta"]}), False),
    ("auto", _event({"type": [], "error": None}), True),
]


@pytest.mark.parametrize(("dialect", "event", "moves"), PROGRESS_CASES)
def test_progress_by_dialect(dialect: str, event: Event, moves: bool) -> None:
    assert Progress(dialect).of(event) is moves


def test_progress_auto_and_generic_and_other_items() -> None:
    auto = Progress()
    assert auto.of(_event({"type": "ping"}, type="ping")) is False  # not yet detected
    assert auto.of(_event({"type": "other"})) is True  # an unknown API: any event
    assert auto.of(_anthropic("message_start", message={})) is False  # now Anthropic
    assert auto.of(_anthropic("ping")) is False
    assert auto.of(_anthropic("content_block_stop", index=0)) is True
    assert Progress(generic("done")).of(Event(data="anything")) is True
    for item in (Comment(text="ping"), EndOfStream()):
        assert Progress("anthropic").of(item) is False
    with pytest.raises(ValueError, match="unknown dialect"):
        Progress("nope")


# ---- TextMerge --------------------------------------------------------------------------


def test_merge_joins_two_text_deltas() -> None:
    merge = TextMerge("anthropic")
    a = _anthropic("content_block_delta", index=0, delta={"type": "text_delta", "text": "你"})
    b = _anthropic("content_block_delta", index=0, delta={"type": "text_delta", "text": "好"})
    joined = merge.merge(a, b)
    assert joined is not None
    assert joined.type == "content_block_delta"
    assert json.loads(joined.data) == {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "text_delta", "text": "你好"},
    }
    seq = TextMerge("openai-responses")
    one = _responses("response.output_text.delta", delta="a", sequence_number=4, logprobs=[])
    two = _responses("response.output_text.delta", delta="b", sequence_number=5, logprobs=[])
    joined = seq.merge(one, two)
    assert joined is not None
    assert json.loads(joined.data)["delta"] == "ab"
    assert json.loads(joined.data)["sequence_number"] == 5  # the later one
    gem = TextMerge("gemini").merge(_gemini([{"text": "a"}], usage=1), _gemini([{"text": "b"}]))
    assert gem is not None
    assert json.loads(gem.data)["usageMetadata"] == {"totalTokenCount": 0}


def test_merge_keeps_apart_what_is_not_two_plain_text_deltas() -> None:
    chat = TextMerge("openai-chat")
    text = _chat({"content": "a"})
    assert chat.merge(_chat({"role": "assistant", "content": ""}), text) is None
    assert chat.merge(text, _chat({"content": "b"}, finish="stop")) is None
    assert chat.merge(text, Event(data="[DONE]")) is None
    assert chat.merge(text, _event([1])) is None
    assert chat.merge(text, Event(type="other", data=text.data)) is None
    assert chat.merge(text, Event(data=text.data, retry=5)) is None
    assert chat.merge(_event({"choices": []}), text) is None  # no text there
    assert chat.merge(_event({"choices": [{"delta": 1}]}), text) is None
    two = _event({"choices": [{"delta": {"content": "x"}}, {"delta": {"content": "y"}}]})
    assert chat.merge(two, two) is None  # several choices
    assert chat.merge(_event({"choices": {"0": 1}}), text) is None
    assert chat.merge(_chat({"content": "a"}), _chat({"content": 1})) is None
    ids = chat.merge(_chat({"content": "a"}), Event(data=text.data, id="7"))
    assert ids is not None
    assert ids.id == "7"
    assert chat.merge(Event(data=text.data, id="6"), Event(data=text.data, id="7")) is None
    thinking = {"type": "thinking_delta", "thinking": "hm", "text": "x"}
    delta = _anthropic("content_block_delta", index=0, delta=thinking)
    assert TextMerge("anthropic").merge(delta, delta) is None
    logprobs = _responses("response.output_text.delta", delta="a", logprobs=[{"t": 1}])
    assert TextMerge("openai-responses").merge(logprobs, logprobs) is None
    for name in ("auto", "ai-sdk-ui", "nope"):
        with pytest.raises(ValueError, match="no merge rules"):
            TextMerge(name)


# ---- the merge property -------------------------------------------------------------------


def _text_of(dialect: str, events: list[Event]) -> str:
    """The answer's text, read the way each API's documentation assembles it."""
    out = []
    for event in events:
        try:
            payload = json.loads(event.data)
        except ValueError:
            continue
        if dialect == "openai-chat":
            for choice in payload.get("choices", []):
                out.append(choice.get("delta", {}).get("content") or "")
        elif dialect == "anthropic" and event.type == "content_block_delta":
            out.append(payload["delta"].get("text", ""))
        elif dialect == "openai-responses" and event.type == "response.output_text.delta":
            out.append(payload["delta"])
        elif dialect == "gemini":
            for candidate in payload.get("candidates", []):
                out.extend(p.get("text", "") for p in candidate["content"]["parts"])
    return "".join(out)


_words = st.text(st.characters(codec="utf-8", exclude_characters="\r"), max_size=6)


@st.composite
def _answers(draw: st.DrawFn) -> tuple[str, list[Event]]:
    """A streamed answer of one dialect: text deltas among other events, maybe an end."""
    dialect = draw(st.sampled_from(["openai-chat", "anthropic", "openai-responses", "gemini"]))
    words = draw(st.lists(_words, max_size=12))
    events: list[Event] = []
    for n, word in enumerate(words):
        extra = draw(st.integers(0, 4))
        if dialect == "openai-chat":
            events.append(
                _chat({"role": "assistant", "content": word} if extra == 0 else {"content": word})
            )
            if extra == 1:
                events.append(_chat({"tool_calls": [{"index": 0}]}))
        elif dialect == "anthropic":
            if extra == 0:
                events.append(_anthropic("ping"))
            block = 1 if extra == 1 else 0
            events.append(
                _anthropic(
                    "content_block_delta", index=block, delta={"type": "text_delta", "text": word}
                )
            )
        elif dialect == "openai-responses":
            events.append(
                _responses(
                    "response.output_text.delta",
                    item_id="m",
                    output_index=0,
                    content_index=0,
                    delta=word,
                    sequence_number=n,
                )
            )
        else:
            events.append(_gemini([{"text": word}], usage=n))
    if draw(st.booleans()):
        events.append(
            {
                "openai-chat": _chat({}, finish="stop"),
                "anthropic": _anthropic("message_stop"),
                "openai-responses": _responses("response.completed"),
                "gemini": _gemini([], finish="STOP"),
            }[dialect]
        )
        if dialect == "openai-chat":
            events.append(Event(data="[DONE]"))
    return dialect, events


def _judge(dialect: str, events: list[Event]) -> tuple[Any, ...]:
    tracker = Tracker(dialect)
    for event in events:
        tracker.feed(event)
    outcome = tracker.end()
    # The event count and the offsets are the merged stream's own.
    return (outcome.outcome, outcome.reason, outcome.stop_reason, outcome.cut)


@settings(max_examples=100)
@given(answer=_answers(), max_bytes=st.integers(1, 400))
def test_merged_stream_has_the_original_text_and_outcome(
    answer: tuple[str, list[Event]], max_bytes: int
) -> None:
    dialect, events = answer
    out = Coalescer(max_bytes=max_bytes, max_delay=1, now=0, merge=TextMerge(dialect))
    writes = []
    for event in events:
        out.push(event, 0)
        writes.append(out.pop(0) or b"")
    writes.append(out.flush())
    merged = [item for item in parse(b"".join(writes)) if isinstance(item, Event)]
    assert len(merged) <= len(events)
    assert _text_of(dialect, merged) == _text_of(dialect, events)
    assert _judge(dialect, merged) == _judge(dialect, events)


def test_merging_makes_fewer_events() -> None:
    words = [_chat({"content": w}) for w in ("a", "b", "c")]
    out = Coalescer(max_bytes=10_000, max_delay=1, now=0, merge=TextMerge("openai-chat"))
    for event in words:
        out.push(event, 0)
    out.push(Event(data="[DONE]"), 0, urgent=True)  # urgent: never merged
    (joined, done, _end) = parse(out.pop(0) or b"")
    assert isinstance(joined, Event)
    assert json.loads(joined.data)["choices"][0]["delta"]["content"] == "abc"
    assert done == Event(data="[DONE]")
