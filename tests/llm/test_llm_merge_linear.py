"""TextMerge is linear (issue 36, item 16: 32,000 held deltas took 11.8 s), and so is a
Coalescer merging with it, whatever its max_bytes (issue 42, item 6).

Not timed (a loaded machine breaks timings): the test counts the characters that go
through ``json`` (decoded and encoded) while a run of deltas is merged, one into the
event the last merge returned, as the Coalescer does.  Re-reading the growing event
on every merge, as the quadratic version did, puts ~n^2/2 deltas' worth through json;
the linear one puts each delta through once each way (plus the small frame around the
text).  The merged event stays byte for byte the compact JSON of the joined object."""

from __future__ import annotations

import json
import pickle
from typing import Any

import pytest

from sse_sansio import Coalescer, Comment, Event, serialize
from sse_sansio._health import _coalescer as coalescer_module
from sse_sansio.llm import TextMerge
from sse_sansio.llm import _merge as merge_module
from sse_sansio.testing import parse

CHUNK = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "m"}


def chat(text: str, **more: Any) -> dict[str, Any]:
    choice = {"index": 0, "delta": {"content": text}, "finish_reason": None}
    return {**CHUNK, "choices": [choice], **more}


def gemini(text: str, tokens: int) -> dict[str, Any]:
    candidate = {"content": {"parts": [{"text": text}], "role": "model"}}
    return {"candidates": [candidate], "usageMetadata": {"candidatesTokenCount": tokens}}


class CountingJson:
    """The json module, counting the characters decoded and encoded."""

    def __init__(self) -> None:
        self.chars = 0

    def loads(self, text: str) -> Any:
        self.chars += len(text)
        return json.loads(text)

    def dumps(self, value: Any, **options: Any) -> str:
        out = json.dumps(value, **options)
        self.chars += len(out)
        return out


def merged_run(dialect: str, payloads: list[dict[str, Any]]) -> Event:
    merger = TextMerge(dialect)
    held = Event(data=json.dumps(payloads[0]))
    for payload in payloads[1:]:
        joined = merger.merge(held, Event(data=json.dumps(payload)))
        assert joined is not None
        held = joined
    return held


@pytest.mark.parametrize("n", [500, 2000])
def test_json_work_grows_linearly_with_the_run(n: int, monkeypatch: pytest.MonkeyPatch) -> None:
    counter = CountingJson()
    monkeypatch.setattr(merge_module, "json", counter)
    payloads = [chat(f"t{i:04} ") for i in range(n)]
    held = merged_run("openai-chat", payloads)
    sent = sum(len(json.dumps(payload)) for payload in payloads)
    # Each delta decoded once and its frame encoded once, a few times its own size;
    # the quadratic version put ~n/2 times the whole input through json.
    assert counter.chars < 4 * sent
    text = "".join(f"t{i:04} " for i in range(n))
    assert held.data == json.dumps(chat(text), ensure_ascii=False, separators=(",", ":"))


def test_the_latest_fields_follow_the_last_delta() -> None:
    held = merged_run("gemini", [gemini("a", 1), gemini("b", 2), gemini("c", 3)])
    assert json.loads(held.data) == gemini("abc", 3)
    with_obfuscation = [chat("x", obfuscation="aa"), chat("y", obfuscation="b"), chat("z")]
    assert json.loads(merged_run("openai-chat", with_obfuscation).data) == chat("xyz")


def test_a_surrogate_pair_split_across_deltas_meets_again() -> None:
    # An emoji split between two deltas, each half escaped (valid JSON both).
    held = merged_run("openai-chat", [chat("a\ud83d"), chat("\ude00b"), chat("é\n")])
    held.data.encode()  # UTF-8 can carry it
    assert json.loads(held.data)["choices"][0]["delta"]["content"] == "a\U0001f600bé\n"


def test_a_delta_that_differs_ends_the_run_and_a_new_one_starts() -> None:
    merger = TextMerge("openai-chat")
    first = merger.merge(Event(data=json.dumps(chat("a"))), Event(data=json.dumps(chat("b"))))
    assert first is not None
    other = Event(data=json.dumps({**chat("c"), "model": "other"}))
    assert merger.merge(first, other) is None  # the frames differ
    assert merger.merge(first, Event(data="not json")) is None
    assert merger.merge(first, Event(data=json.dumps({"choices": []}))) is None
    again = merger.merge(other, Event(data=json.dumps({**chat("d"), "model": "other"})))
    assert again is not None
    assert json.loads(again.data) == {**chat("cd"), "model": "other"}
    # The event a merge returned, merged into again after another run: still right.
    assert json.loads(merger.merge(first, Event(data=json.dumps(chat("z")))).data) == chat("abz")  # type: ignore[union-attr]


def test_through_the_coalescer_a_long_run_is_one_event() -> None:
    coalescer = Coalescer(
        max_bytes=1 << 30, max_delay=60.0, now=0.0, merge=TextMerge("openai-chat")
    )
    for i in range(3000):
        coalescer.push(Event(data=json.dumps(chat(f"{i},"))), 0.0)
    (block,) = coalescer.flush().split(b"\n\n")[:-1]
    text = json.loads(block.removeprefix(b"data: "))["choices"][0]["delta"]["content"]
    assert text == "".join(f"{i}," for i in range(3000))


def test_through_the_coalescer_a_merged_event_grows_no_further_than_max_bytes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Held longer than its deadline, a run of deltas is merged into events of about
    # max_bytes each, not into one that grows without end: each merge serializes the
    # merged event whole, so one event per run made the hold quadratic.  The text is
    # the same, in order, and the json work stays linear in the run.
    counter = CountingJson()
    monkeypatch.setattr(merge_module, "json", counter)
    coalescer = Coalescer(max_bytes=1000, max_delay=60.0, now=0.0, merge=TextMerge("openai-chat"))
    pushed = [Event(data=json.dumps(chat(f"{i},"))) for i in range(3000)]
    for event in pushed:
        coalescer.push(event, 0.0)
    blocks = coalescer.flush().split(b"\n\n")[:-1]
    delta = max(len(event.data) for event in pushed) + len(b"data: \n\n")
    assert all(len(block) + 2 < 1000 + delta for block in blocks)
    payloads = [json.loads(block.removeprefix(b"data: ")) for block in blocks]
    texts = [payload["choices"][0]["delta"]["content"] for payload in payloads]
    whole = "".join(f"{i}," for i in range(3000))
    assert "".join(texts) == whole
    assert len(whole) // 1000 < len(blocks) < 3000  # merged, into several events
    assert counter.chars < 4 * sum(len(event.data) for event in pushed)


def test_a_field_that_holds_the_placeholder_keeps_the_events_apart() -> None:
    odd = {**chat("a"), "model": "\x00sse_sansio.TextMerge\x00"}
    merger = TextMerge("openai-chat")
    assert merger.merge(Event(data=json.dumps(odd)), Event(data=json.dumps(odd))) is None


@pytest.mark.parametrize(
    ("dialect", "payload", "event"),
    [
        (
            "anthropic",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "text": "{"},
            },
            "content_block_delta",
        ),
        (
            "openai-responses",
            {"type": "response.output_text.delta", "delta": "a", "logprobs": [{"token": "a"}]},
            "response.output_text.delta",
        ),
    ],
    ids=["anthropic-not-text", "responses-logprobs"],
)
def test_a_first_event_outside_the_shape_starts_no_run(
    dialect: str, payload: dict[str, Any], event: str
) -> None:
    first = Event(type=event, data=json.dumps(payload))
    assert TextMerge(dialect).merge(first, first) is None


class CountingSerialize:
    """serialize(), counting the bytes it writes."""

    def __init__(self) -> None:
        self.chars = 0

    def __call__(self, item: Event | Comment) -> bytes:
        out = serialize(item)
        self.chars += len(out)
        return out


def test_a_coalescer_with_any_max_bytes_merges_32000_deltas_linearly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 42, item 6: the size held is kept by arithmetic, not by serializing the
    merged event again on every merge (~n^2/2 deltas' worth through serialize)."""
    counter, serialized = CountingJson(), CountingSerialize()
    monkeypatch.setattr(merge_module, "json", counter)
    monkeypatch.setattr(merge_module, "serialize", serialized)
    monkeypatch.setattr(coalescer_module, "serialize", serialized)
    n = 32_000
    texts = [f"{i % 100:02}" for i in range(n)]  # two characters each
    events = [Event(data=json.dumps(chat(text))) for text in texts]
    sent = sum(len(event.data) for event in events)
    coalescer = Coalescer(
        max_bytes=1 << 30, max_delay=60.0, now=0.0, merge=TextMerge("openai-chat")
    )
    for event in events:
        coalescer.push(event, 0.0)
    held = coalescer.buffered
    out = coalescer.flush()
    assert held == len(out)  # the arithmetic is exact
    assert counter.chars + serialized.chars < 6 * sent
    (merged,) = parse(out)[:-1]  # one event, then the end of stream
    assert isinstance(merged, Event)
    assert json.loads(merged.data) == chat("".join(texts))


MERGED_RUNS = {
    "openai-chat": [chat("é"), chat("\ud83d"), chat("\ude00 ok"), chat("日本")],
    "gemini": [gemini("ß", 1), gemini("\u2028", 2), gemini("x" * 40, 3)],
    "anthropic": [
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}}
        for t in ("a", "€", "\ud800", "z")
    ],
}


@pytest.mark.parametrize("dialect", sorted(MERGED_RUNS))
@pytest.mark.parametrize("max_bytes", [1, 64, 1 << 20])
def test_the_size_held_is_what_the_coalescer_writes(dialect: str, max_bytes: int) -> None:
    """Beyond ASCII, an id line, an event: line, a split surrogate pair, any max_bytes:
    buffered is always the length of what flush() writes."""
    kind = "content_block_delta" if dialect == "anthropic" else "message"
    coalescer = Coalescer(max_bytes=max_bytes, max_delay=60.0, now=0.0, merge=TextMerge(dialect))
    for n, payload in enumerate(MERGED_RUNS[dialect]):
        coalescer.push(Event(type=kind, data=json.dumps(payload), id=f"e{n}"), 0.0)
        size = coalescer.buffered
        assert size == len(pickle.loads(pickle.dumps(coalescer)).flush())
    assert size == len(coalescer.flush())


def test_deltas_whose_frame_would_not_encode_merged_stay_apart() -> None:
    """A lone surrogate outside the text, sent escaped: merged, the frame would hold it
    raw and serialize() would refuse the event; the two stay apart, as sent."""
    coalescer = Coalescer(max_bytes=1 << 20, max_delay=60.0, now=0.0, merge=TextMerge("gemini"))
    odd = {"candidates": [{"content": {"parts": [{"text": "a"}], "role": "\ud800"}}]}
    first, second = Event(data=json.dumps(odd)), Event(data=json.dumps(odd))
    assert TextMerge("gemini").merge(first, second) is None
    coalescer.push(first, 0.0)
    coalescer.push(second, 0.0)
    assert coalescer.flush() == serialize(first) + serialize(second)
