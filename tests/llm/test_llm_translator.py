"""The Translator (issue 35, item 1): every ordered pair of dialects keeps the ending.

What is checked, for every source stream (the recorded-shape streams of tests/data/llm
and the hand-written scenarios of tests/helpers/llm_translate.py) and every target: the
target's own Tracker, fed the translated bytes, reports the source's outcome word, the
stop kind of the documented table (written out here, not read from the code), the
answer (text, reasoning, tool calls by name and parsed arguments) and the usage where
the source's figures are final; the same holds when the source is cut at every item
boundary, and a cut source never gets the target's terminal frame.
"""

from __future__ import annotations

import itertools
import json
import pickle
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sse_sansio import NEED_DATA, Comment, EndOfStream, Event, LocalProtocolError, serialize
from sse_sansio.llm import (
    REFRAMER_DIALECTS,
    UI_MESSAGE_STREAM_HEADERS,
    Outcome,
    PayloadError,
    Tracker,
    Translator,
    Usage,
)
from sse_sansio.testing import parse
from tests.helpers import llm_translate as w

DATA = Path(__file__).resolve().parent.parent / "data" / "llm"
NAMES = tuple(REFRAMER_DIALECTS)
PAIRS = [(a, b) for a in NAMES for b in NAMES]

# The stop kinds of docs/llm-translation.rst: each API's words for a stop that is not
# success, by kind.  A word not listed is "other".
STOP_KINDS: dict[str, dict[str, str]] = {
    "openai-chat": {"length": "length", "content_filter": "filter"},
    "openai-responses": {"max_output_tokens": "length", "content_filter": "filter"},
    "anthropic": {
        "max_tokens": "length",
        "model_context_window_exceeded": "length",
        "refusal": "refusal",
    },
    "gemini": {
        "MAX_TOKENS": "length",
        **dict.fromkeys(
            ("SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY"),
            "filter",
        ),
    },
    "ai-sdk-ui": {"length": "length", "content-filter": "filter"},
}
# The nearest kind a target can say, where it has no exact word (the table's rows).
NEAREST: dict[str, dict[str, str]] = {
    "openai-chat": {"refusal": "filter", "other": "length"},
    "openai-responses": {"refusal": "filter", "other": "length"},
    "anthropic": {"filter": "refusal"},
    "gemini": {"refusal": "filter"},
    "ai-sdk-ui": {"refusal": "filter"},
}


def stop_kind(dialect: str, outcome: Outcome) -> str | None:
    if outcome.outcome != "stopped":
        return None
    return STOP_KINDS[dialect].get(outcome.stop_reason or "", "other")


def source_of(path: Path) -> str:
    return max((name for name in NAMES if path.name.startswith(name)), key=len)


RECORDED = sorted(DATA.glob("*.sse"))


def translated(source: str, target: str, items: list[Any]) -> tuple[Translator, bytes]:
    translator = Translator(source, target)
    out: list[Event | Comment] = []
    for item in items:
        out += translator.feed(item)
    out += translator.end()  # a second end() adds nothing after an EndOfStream
    return translator, b"".join(serialize(item) for item in out)


def tracked(dialect: str, items: list[Any]) -> Tracker:
    tracker = Tracker(dialect)
    for item in items:
        tracker.feed(item)
    tracker.end()
    return tracker


def calls(tracker: Tracker) -> list[tuple[str | None, Any]]:
    return [(call.name, call.arguments_json) for call in tracker.answer.tool_calls]


def assert_kept(source: str, target: str, items: list[Any]) -> None:
    """The target's Tracker reads what the source's Tracker read."""
    before = tracked(source, items)
    translator, data = translated(source, target, items)
    after = tracked(target, parse(data))
    was, now = before.outcome, after.outcome
    assert translator.outcome == was
    assert now.outcome == was.outcome, (was.reason, now.reason)
    kind = stop_kind(source, was)
    assert stop_kind(target, now) == NEAREST[target].get(kind or "", kind)
    if was.outcome == "failed":
        assert now.error_message == was.error_message
    assert after.answer.text == before.answer.text
    assert after.answer.reasoning == before.answer.reasoning
    if was.outcome in ("completed", "stopped") and target == "gemini":
        # Gemini sends calls whole: a call never said whole goes when its arguments
        # are an object all the same, and is left out when they are cut half-way.
        kept = [
            c for c in before.answer.tool_calls if c.complete or isinstance(c.arguments_json, dict)
        ]
        assert calls(after) == [(c.name, c.arguments_json) for c in kept]
    elif was.outcome in ("completed", "stopped"):
        assert calls(after) == calls(before)
    else:
        # A cut: every call the source began, by name (Gemini, which sends calls whole,
        # only those that became whole); a call the target says is whole (Anthropic
        # closes a block when the next begins) has the source's arguments.
        began = before.answer.tool_calls
        if target == "gemini":
            assert calls(after) == [(c.name, c.arguments_json) for c in began if c.complete]
        else:
            assert [call.name for call in after.answer.tool_calls] == [c.name for c in began]
            for call, origin in zip(after.answer.tool_calls, began, strict=True):
                assert not call.complete or call.arguments_json == origin.arguments_json
    if was.outcome in ("completed", "stopped") and was.usage.provenance == "reported":
        assert now.usage == carried(target, was.usage)
    if was.outcome == "cut":
        assert not ends(target, data)


def carried(target: str, usage: Usage) -> Usage:
    """The usage a target can carry: Anthropic counts no reasoning tokens apart."""
    if target == "anthropic":
        return replace(usage, reasoning_tokens=None)
    return usage


def ends(target: str, data: bytes) -> bool:
    """The bytes hold the target's terminal frame."""
    marks = {
        "openai-chat": b"data: [DONE]",
        "openai-responses": b"event: response.completed",
        "anthropic": b"event: message_stop",
        "gemini": b'"finishReason"',
        "ai-sdk-ui": b'"type": "finish"',
    }
    return marks[target] in data


@pytest.mark.parametrize("target", NAMES)
@pytest.mark.parametrize("path", RECORDED, ids=[path.stem for path in RECORDED])
def test_a_recorded_stream_keeps_its_ending_in_every_target(path: Path, target: str) -> None:
    assert_kept(source_of(path), target, parse(path.read_bytes()))


@pytest.mark.parametrize("target", NAMES)
@pytest.mark.parametrize("path", RECORDED, ids=[path.stem for path in RECORDED])
def test_a_recorded_stream_cut_at_every_item_boundary(path: Path, target: str) -> None:
    items = [item for item in parse(path.read_bytes()) if not isinstance(item, EndOfStream)]
    for size in range(len(items)):
        assert_kept(source_of(path), target, items[:size])
        assert_kept(source_of(path), target, [*items[:size], EndOfStream(partial_event=True)])


@pytest.mark.parametrize(("source", "target"), PAIRS)
def test_headers_name_an_event_stream(source: str, target: str) -> None:
    headers = Translator(source, target).headers
    assert headers["content-type"] == "text/event-stream"
    if target == "ai-sdk-ui":
        assert headers == UI_MESSAGE_STREAM_HEADERS


def test_unknown_dialects_are_refused() -> None:
    with pytest.raises(ValueError, match="source"):
        Translator("auto", "anthropic")
    with pytest.raises(ValueError, match="target"):
        Translator("anthropic", "klingon")


def test_outcome_before_the_end_and_feed_after_it_are_errors() -> None:
    translator = Translator("anthropic", "openai-chat")
    with pytest.raises(LocalProtocolError):
        translator.outcome  # noqa: B018
    assert translator.end() == []  # nothing arrived: a cut writes nothing
    assert translator.end() == []
    with pytest.raises(LocalProtocolError):
        translator.feed(Event(data="{}"))


def test_comments_pass_through_as_fresh_comments() -> None:
    translator = Translator("openai-chat", "anthropic")
    (item,) = parse(b": keepalive\n\n")[:1]
    assert translator.feed(item) == [Comment(text="keepalive")]


def test_a_translator_mid_stream_pickles_and_carries_on() -> None:
    items = parse((DATA / "anthropic-tool-use.sse").read_bytes())
    whole = Translator("anthropic", "openai-responses")
    twin = Translator("anthropic", "openai-responses")
    half = len(items) // 2
    out_whole = [event for item in items for event in whole.feed(item)]
    out_twin = [event for item in items[:half] for event in twin.feed(item)]
    twin = pickle.loads(pickle.dumps(twin))
    out_twin += [event for item in items[half:] for event in twin.feed(item)]
    assert out_twin == out_whole
    assert twin.outcome == whole.outcome


# -- hand-written scenarios in every dialect: each stop word, an error, a cut -------------

CALLS = (
    ("call_a", "get_weather", ('{"city": ', '"Paris", "unit": "C"}')),
    ("call_b", "get_time", ('{"tz": "CET"}',)),
)
FULL = w.Scenario(
    text=("Let me ", "check ", "that ✓."),
    reasoning=("The user ", "wants weather."),
    calls=CALLS,
    usage=(31, 17, 8, 5),
)
PLAIN = w.Scenario(text=("Hello", ", world"), usage=(5, 2, 0, 0))
ENDINGS = [
    *((source, ("stop", word)) for source in NAMES for word in w.WORDS[source]),
    *((source, ("error", "upstream overloaded")) for source in NAMES),
    *((source, ("cut",)) for source in NAMES),
]


@pytest.mark.parametrize("target", NAMES)
@pytest.mark.parametrize(
    ("source", "ending"), ENDINGS, ids=[f"{s}-{'-'.join(e)}" for s, e in ENDINGS]
)
def test_a_scenario_keeps_its_ending_in_every_target(
    source: str, ending: tuple[str, ...], target: str
) -> None:
    for scenario in (FULL, PLAIN, w.Scenario()):
        data = w.stream(source, replace(scenario, ending=ending))
        items = parse(data)
        assert_kept(source, target, items)
        events = [item for item in items if isinstance(item, Event)]
        for size in range(len(events)):
            assert_kept(source, target, events[:size])


# -- the round trip: A -> B -> A keeps the outcome, the answer and the usage ------------

TEXT = st.text(st.characters(codec="utf-8"), max_size=12)


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[str, w.Scenario]:
    source = draw(st.sampled_from(NAMES))
    arguments = st.dictionaries(
        st.text("abcxyz", min_size=1, max_size=4), st.integers(0, 99) | TEXT, max_size=3
    )
    calls = []
    for n, args in enumerate(draw(st.lists(arguments, max_size=2))):
        whole = json.dumps(args)
        cuts = sorted(draw(st.sets(st.integers(1, max(1, len(whole) - 1)), max_size=3)))
        pieces = [whole[a:b] for a, b in itertools.pairwise([0, *cuts, len(whole)])]
        calls.append((f"call_{n}", draw(st.sampled_from(("f", "get_weather"))), tuple(pieces)))
    ending = draw(
        st.sampled_from(
            [*(("stop", word) for word in w.WORDS[source]), ("error", "boom"), ("cut",)]
        )
    )
    usage = draw(st.none() | st.tuples(*[st.integers(0, 10_000)] * 4))
    scenario = w.Scenario(
        text=tuple(draw(st.lists(TEXT, max_size=4))),
        reasoning=tuple(draw(st.lists(TEXT, max_size=2))),
        calls=tuple(calls),
        usage=usage,
        ending=ending,
    )
    return source, scenario


def through(source: str, target: str, items: list[Any]) -> list[Any]:
    _, data = translated(source, target, items)
    return parse(data)


@settings(max_examples=300, deadline=None)
@given(scenarios(), st.sampled_from(NAMES))
def test_a_to_b_to_a_keeps_outcome_answer_and_usage(
    drawn: tuple[str, w.Scenario], middle: str
) -> None:
    source, scenario = drawn
    items = parse(w.stream(source, scenario))
    there = through(source, middle, items)
    back = through(middle, source, there)
    before, after = tracked(source, items), tracked(source, back)
    was, now = before.outcome, after.outcome
    assert now.outcome == was.outcome
    assert now.error_message == was.error_message
    assert after.answer.text == before.answer.text
    assert after.answer.reasoning == before.answer.reasoning
    # Calls travel into Gemini whole (see test_a_scenario_keeps_...): on the hop into
    # it, those the reading on the way says are whole, or are an object at the finish.
    ended = was.outcome in ("completed", "stopped")
    expected = before.answer.tool_calls
    for hop, reading in ((middle, before), (source, tracked(middle, there))):
        if hop == "gemini":
            whole = [
                c.complete or (ended and isinstance(c.arguments_json, dict))
                for c in reading.answer.tool_calls
            ]
            expected = tuple(c for c, kept in zip(expected, whole, strict=True) if kept)
    assert calls(after) == [(c.name, c.arguments_json) for c in expected]
    if was.outcome in ("completed", "stopped") and was.usage.provenance == "reported":
        assert now.usage == carried(middle, was.usage)


def test_the_benchmark_translates_one_answer_into_every_dialect() -> None:
    # benchmarks/llm_translator.py times these streams: each must be a whole answer.
    from benchmarks import llm_translator

    answers = llm_translator.streams(20)
    assert tuple(answers) == ("openai-chat", *(n for n in NAMES if n != "openai-chat"))
    texts = set()
    for dialect, events in answers.items():
        tracker = tracked(dialect, events)
        assert tracker.outcome.outcome == "completed"
        texts.add(tracker.answer.text)
    assert len(texts) == 1
    assert texts != {""}
    # Both sides of a ratio run on these events (main() times them all, gc.collect()
    # before each: seconds on a big test process, so not here).
    events = answers["anthropic"]
    deltas = sum(event.type == "content_block_delta" for event in events)
    # Gemini: one chunk per text delta, and the chunk with the finishReason.
    assert llm_translator.translating("anthropic", "gemini", events)() == deltas + 1
    assert llm_translator.floor(events)() > 0


# -- tool calls that no scenario streams: interleaved, cut half-way, text between --------


def chat(*deltas: dict[str, Any], finish: str | None = None) -> list[Any]:
    """An OpenAI Chat stream of these deltas for choice 0, finished as said."""
    chunks: list[dict[str, Any]] = [
        {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]} for delta in deltas
    ]
    if finish is not None:
        chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    data = b"".join(b"data: " + json.dumps(chunk).encode() + b"\n\n" for chunk in chunks)
    return parse(data + (b"data: [DONE]\n\n" if finish is not None else b""))


def call(index: int, arguments: str, name: str | None = None) -> dict[str, Any]:
    function: dict[str, Any] = {"arguments": arguments}
    if name is not None:
        function["name"] = name
        return {"tool_calls": [{"index": index, "id": f"call_{index}", "function": function}]}
    return {"tool_calls": [{"index": index, "function": function}]}


INTERLEAVED = (
    call(0, "", "get_weather"),
    call(1, '{"tz": ', "get_time"),
    call(0, '{"city": '),
    call(1, '"CET"}'),
    call(0, '"Paris"}'),
)


@pytest.mark.parametrize("finish", ["tool_calls", "length"])
@pytest.mark.parametrize("target", NAMES)
def test_parallel_calls_streamed_interleaved_stay_apart(target: str, finish: str) -> None:
    # Anthropic's blocks do not interleave: the second call waits for the first.
    items = chat({"role": "assistant"}, *INTERLEAVED, finish=finish)
    assert_kept("openai-chat", target, items)
    after = tracked(target, through("openai-chat", target, items))
    assert calls(after) == [("get_weather", {"city": "Paris"}), ("get_time", {"tz": "CET"})]


@pytest.mark.parametrize("target", NAMES)
def test_a_call_cut_half_way_by_a_length_stop_is_never_sent_as_an_empty_object(
    target: str,
) -> None:
    items = chat(call(0, '{"city": "Par', "get_weather"), finish="length")
    after = tracked(target, through("openai-chat", target, items))
    assert after.outcome.outcome == "stopped"
    # Gemini sends calls whole: half a call is left out, not sent as get_weather({}).
    assert calls(after) == ([] if target == "gemini" else [("get_weather", None)])


def test_text_between_a_calls_fragments_closes_its_anthropic_block() -> None:
    # No API streams this; Anthropic cannot reopen a block, so the rest is dropped.
    items = chat(call(0, '{"a": ', "f"), {"content": "hm"}, call(0, "1}"), finish="tool_calls")
    after = tracked("anthropic", through("openai-chat", "anthropic", items))
    assert after.answer.text == "hm"
    assert [(c.name, c.arguments) for c in after.answer.tool_calls] == [("f", '{"a": ')]


@pytest.mark.parametrize("target", NAMES)
def test_a_call_that_ends_while_it_waits_for_its_anthropic_block(target: str) -> None:
    # The AI SDK keys calls by id: the second call may end before the first.
    parts: list[dict[str, Any]] = [
        {"type": "start"},
        {"type": "tool-input-start", "toolCallId": "a", "toolName": "get_weather"},
        {"type": "tool-input-delta", "toolCallId": "a", "inputTextDelta": '{"city": '},
        {"type": "tool-input-start", "toolCallId": "b", "toolName": "get_time"},
        {"type": "tool-input-delta", "toolCallId": "b", "inputTextDelta": '{"tz": "CET"}'},
        {
            "type": "tool-input-available",
            "toolCallId": "b",
            "toolName": "get_time",
            "input": {"tz": "CET"},
        },
        {"type": "tool-input-delta", "toolCallId": "a", "inputTextDelta": '"Paris"}'},
        {
            "type": "tool-input-available",
            "toolCallId": "a",
            "toolName": "get_weather",
            "input": {"city": "Paris"},
        },
        {"type": "finish", "finishReason": "tool-calls"},
    ]
    items = parse(b"".join(b"data: " + json.dumps(p).encode() + b"\n\n" for p in parts))
    assert_kept("ai-sdk-ui", target, items)
    after = tracked(target, through("ai-sdk-ui", target, items))
    assert calls(after) == [("get_weather", {"city": "Paris"}), ("get_time", {"tz": "CET"})]


@pytest.mark.parametrize("target", NAMES)
def test_a_call_never_said_whole_before_one_that_was(target: str) -> None:
    # The first call's arguments are whole JSON but the source never said so: a
    # length stop.  Every target keeps both, in the order they began.
    parts: list[dict[str, Any]] = [
        {"type": "tool-input-start", "toolCallId": "a", "toolName": "get_weather"},
        {"type": "tool-input-delta", "toolCallId": "a", "inputTextDelta": '{"city": "Paris"}'},
        {"type": "tool-input-start", "toolCallId": "b", "toolName": "get_time"},
        {"type": "tool-input-available", "toolCallId": "b", "toolName": "get_time", "input": {}},
        {"type": "finish", "finishReason": "length"},
    ]
    items = parse(b"".join(b"data: " + json.dumps(p).encode() + b"\n\n" for p in parts))
    assert_kept("ai-sdk-ui", target, items)
    after = tracked(target, through("ai-sdk-ui", target, items))
    assert calls(after) == [("get_weather", {"city": "Paris"}), ("get_time", {})]


# -- the documented table is the one the writers use --------------------------------------

PAGE = Path(__file__).resolve().parents[2] / "docs" / "llm-translation.rst"
KIND_ROWS = {
    "stop": "stop",
    "tool calls": "tool_calls",
    "length": "length",
    "content filter or safety": "filter",
    "refusal": "refusal",
    "other": "other",
}


def table(title: str) -> dict[str, list[str]]:
    """A list-table of the page by its title: each row's first cell -> the others."""
    text = PAGE.read_text(encoding="utf-8")
    body = text[text.index(f".. list-table:: {title}") :]
    body = body[: body.index("\n\n", body.index("   * - Kind"))]
    rows: dict[str, list[str]] = {}
    for row in body.split("   * - ")[2:]:
        cells = [" ".join(cell.split()) for cell in row.split("\n     - ")]
        rows[cells[0]] = cells[1:]
    return rows


def test_the_documented_writing_table_is_the_writers() -> None:
    # Each cell is the word the target's Tracker then reads (tested above), in italics
    # exactly where the word's kind is not the row's (the nearest).
    rows = table("Writing")
    assert set(rows) == set(KIND_ROWS)
    for row, cells in rows.items():
        kind = KIND_ROWS[row]
        for target, cell in zip(NAMES, cells, strict=True):
            nearest = cell.startswith("*") or ", *" in cell
            assert written(target, kind) in cell.replace("*", ""), (row, target, cell)
            assert nearest == (NEAREST[target].get(kind, kind) != kind), (row, target)


def written(target: str, kind: str) -> str:
    """The word a translation to ``target`` writes for a stop of ``kind``, read back
    from the bytes: a scenario of that kind in Anthropic's words (or a completed one)."""
    anthropic_word = {
        "stop": "end_turn",
        "tool_calls": "tool_use",
        "length": "max_tokens",
        "refusal": "refusal",
        "other": "pause_turn",
    }
    if kind == "filter":
        source, scenario = "gemini", w.Scenario(text=("x",), ending=("stop", "SAFETY"))
    else:
        calls = CALLS if kind == "tool_calls" else ()
        scenario = w.Scenario(text=("x",), calls=calls, ending=("stop", anthropic_word[kind]))
        source = "anthropic"
    after = tracked(target, through(source, target, parse(w.stream(source, scenario))))
    return after.outcome.stop_reason or ""


def test_the_documented_reading_table_lists_every_stop_word_in_its_row() -> None:
    rows = table("Reading")
    assert set(rows) == {
        f"{row} (completed)" if row in ("stop", "tool calls") else row for row in KIND_ROWS
    }
    by_kind = {KIND_ROWS[row.removesuffix(" (completed)")]: cells for row, cells in rows.items()}
    for cell_index, source in enumerate(NAMES):
        for word, kind in STOP_KINDS[source].items():
            assert f"``{word}``" in by_kind[kind][cell_index], (source, word)


# -- a real client: the openai SDK's own stream accumulators read the output ---------------


def served(data: bytes, headers: dict[str, str]) -> Any:
    """An openai client whose every request gets ``data`` as a streamed response."""
    openai = pytest.importorskip("openai")
    httpx = pytest.importorskip("httpx")

    def handler(request: Any) -> Any:
        return httpx.Response(200, headers=headers, content=data)

    transport = httpx.MockTransport(handler)
    http_client = httpx.Client(transport=transport)
    return openai.OpenAI(api_key="-", base_url="http://upstream/v1", http_client=http_client)


TOOL_CALLS = {  # each API's word for a turn that ends in tool calls
    "openai-chat": "tool_calls",
    "openai-responses": "completed",
    "anthropic": "tool_use",
    "gemini": "STOP",
    "ai-sdk-ui": "tool-calls",
}


@pytest.mark.parametrize("source", NAMES)
def test_the_openai_sdk_assembles_a_translated_chat_stream(source: str) -> None:
    scenario = replace(FULL, ending=("stop", TOOL_CALLS[source]))
    translator, data = translated(source, "openai-chat", parse(w.stream(source, scenario)))
    client = served(data, translator.headers)
    with client.chat.completions.stream(
        model="m", messages=[{"role": "user", "content": "?"}]
    ) as stream:
        for _ in stream:
            pass
        final = stream.get_final_completion()
    (choice,) = final.choices
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content == "Let me check that ✓."
    got = [(c.function.name, json.loads(c.function.arguments)) for c in choice.message.tool_calls]
    assert got == [("get_weather", {"city": "Paris", "unit": "C"}), ("get_time", {"tz": "CET"})]
    assert (final.usage.prompt_tokens, final.usage.completion_tokens) == (31, 17)
    assert final.usage.total_tokens == 48


@pytest.mark.parametrize("source", NAMES)
def test_the_openai_sdk_assembles_a_translated_responses_stream(source: str) -> None:
    scenario = replace(FULL, ending=("stop", TOOL_CALLS[source]))
    items = parse(w.stream(source, scenario))
    translator, data = translated(source, "openai-responses", items)
    client = served(data, translator.headers)
    with client.responses.stream(model="m", input="?") as stream:
        for _ in stream:
            pass
        final = stream.get_final_response()
    assert final.status == "completed"
    assert final.output_text == "Let me check that ✓."
    reasoning = [o for o in final.output if o.type == "reasoning"]
    assert [s.text for o in reasoning for s in o.summary] == ["The user wants weather."]
    got = [(o.name, json.loads(o.arguments)) for o in final.output if o.type == "function_call"]
    assert got == [("get_weather", {"city": "Paris", "unit": "C"}), ("get_time", {"tz": "CET"})]
    assert (final.usage.input_tokens, final.usage.output_tokens) == (31, 17)


# -- when the ending is written ----------------------------------------------------------


@pytest.mark.parametrize("target", NAMES)
@pytest.mark.parametrize("source", [name for name in NAMES if name != "gemini"])
def test_the_ending_comes_with_the_event_that_settles_the_source(source: str, target: str) -> None:
    # A client gets its end marker when the upstream's arrives, not when the upstream
    # closes its connection; what comes after it changes nothing.
    items = parse(w.stream(source, replace(PLAIN, ending=("stop", w.WORDS[source][0]))))
    events = [item for item in items if isinstance(item, Event)]
    if source in ("openai-chat", "ai-sdk-ui"):
        events = events[:-1]  # data: [DONE] comes after the finish (AI SDK: it settles)
    translator, tracker = Translator(source, target), Tracker(source)
    out: list[Event | Comment] = []
    for event in events:
        tracker.feed(event)
        out += translator.feed(event)
    if source == "openai-chat":  # [DONE] settles OpenAI Chat: the finish chunk did not
        assert not tracker.settled
        out += translator.feed(Event(data="[DONE]"))
    assert ends(target, b"".join(serialize(item) for item in out))
    assert translator.feed(events[-1]) == []  # a stray event after the terminal one
    assert translator.end() == []
    assert translator.outcome.outcome == "completed"


def test_the_caller_giving_up_is_a_cut_with_no_ending() -> None:
    translator = Translator("anthropic", "ai-sdk-ui")
    items = parse(w.stream("anthropic", replace(PLAIN, ending=("cut",))))
    out = [frame for item in items[:-1] for frame in translator.feed(item)]
    assert translator.end(gave_up="the watchdog saw no progress for 30 s") == []
    assert (translator.outcome.outcome, translator.outcome.cut) == ("cut", "gave-up")
    assert not ends("ai-sdk-ui", b"".join(serialize(item) for item in out))


def test_every_dialect_has_a_writer_beside_its_module() -> None:
    # Adding a dialect is its module, its writer (<module>_writer.py, which names it by
    # class, never by a quoted name: test_llm_registry.py) and a line in each table.
    from sse_sansio.llm._registry import DIALECTS
    from sse_sansio.llm._translator import WRITERS

    assert tuple(WRITERS) == tuple(DIALECTS)
    for name, writer in WRITERS.items():
        assert writer.dialect is DIALECTS[name]
        assert writer.__module__ == f"{DIALECTS[name].__module__}_writer"


def test_a_payload_that_breaks_the_source_rules_is_the_trackers_error() -> None:
    translator = Translator("anthropic", "openai-chat")
    with pytest.raises(PayloadError, match="message_start"):
        translator.feed(Event(type="message_start", data="{not json"))
    with pytest.raises(PayloadError):  # sticky, as the Tracker's
        translator.end()
    with pytest.raises(TypeError):
        Translator("gemini", "anthropic").feed(NEED_DATA)  # type: ignore[arg-type]


# -- usage that settles (issue 42, item 4) ----------------------------------------------


def _anthropic(start_usage: dict[str, Any], *rest: dict[str, Any]) -> list[Any]:
    def named(payload: dict[str, Any]) -> bytes:
        return f"event: {payload['type']}\ndata: {json.dumps(payload)}\n\n".encode()

    delta = {"type": "text_delta", "text": "Hi"}
    payloads: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"id": "m", "usage": start_usage}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}},
        {"type": "content_block_delta", "index": 0, "delta": delta},
        *rest,
    ]
    return parse(b"".join(named(payload) for payload in payloads))


FINISHED: tuple[dict[str, Any], ...] = (
    {"type": "content_block_stop", "index": 0},
    {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 7}},
    {"type": "message_stop"},
)
FAILED: tuple[dict[str, Any], ...] = (
    {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}},
)


def _through(translator: Translator, items: list[Any]) -> Tracker:
    out: list[Any] = []
    for item in items:
        out += translator.feed(item)
    out += translator.end()
    return tracked(translator.target, parse(b"".join(serialize(item) for item in out)))


def test_known_input_tokens_open_an_anthropic_stream() -> None:
    chunk = Event(data=json.dumps(w_chunk("Hi")))
    start = Translator("openai-chat", "anthropic", input_tokens=42).feed(chunk)[0]
    assert isinstance(start, Event)
    assert start.type == "message_start"
    assert json.loads(start.data)["message"]["usage"] == {"input_tokens": 42}
    unknown = Translator("openai-chat", "anthropic").feed(chunk)[0]
    assert isinstance(unknown, Event)
    assert json.loads(unknown.data)["message"]["usage"] == {}  # never a guessed 0


def w_chunk(text: str) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}


@pytest.mark.parametrize("target", NAMES)
def test_the_upstreams_reported_figures_win_over_the_known_ones(target: str) -> None:
    items = _anthropic({"input_tokens": 5}, *FINISHED)
    usage = _through(Translator("anthropic", target, input_tokens=42), items).outcome.usage
    assert (usage.input_tokens, usage.output_tokens, usage.provenance) == (5, 7, "reported")


@pytest.mark.parametrize("target", NAMES)
def test_known_input_tokens_fill_the_final_usage_the_upstream_left_them_out_of(
    target: str,
) -> None:
    items = _anthropic({}, *FINISHED)  # the upstream counts only the output
    usage = _through(Translator("anthropic", target, input_tokens=42), items).outcome.usage
    assert (usage.input_tokens, usage.output_tokens, usage.provenance) == (42, 7, "reported")
    bare = _through(Translator("anthropic", target), items).outcome.usage
    assert (bare.input_tokens, bare.output_tokens, bare.provenance) == (None, 7, "reported")


# Provenance on every ending, through a translation (docs/llm-translation.rst): the
# finish carries the final figures ("reported"); a cut or a failure carries none, so
# the target reads "unavailable", or "partial" where its opening frame carried the
# known input tokens (Anthropic's message_start).
USAGE_ENDINGS: dict[str, tuple[dict[str, Any], ...]] = {
    "completed": FINISHED,
    "cut": (),
    "failed": FAILED,
}


@pytest.mark.parametrize("known", [None, 42])
@pytest.mark.parametrize("ending", sorted(USAGE_ENDINGS))
@pytest.mark.parametrize("target", NAMES)
def test_provenance_on_every_ending_through_a_translation(
    target: str, ending: str, known: int | None
) -> None:
    items = _anthropic({"input_tokens": 5}, *USAGE_ENDINGS[ending])
    translator = Translator("anthropic", target, input_tokens=known)
    outcome = _through(translator, items).outcome
    assert outcome.outcome == ending
    source = translator.outcome.usage
    if ending == "completed":
        assert (source.provenance, outcome.usage.provenance) == ("reported", "reported")
        assert outcome.usage.input_tokens == 5
    else:
        assert source.provenance == "partial"  # message_start's figures, not the final ones
        opened = target == "anthropic" and known is not None
        assert outcome.usage.provenance == ("partial" if opened else "unavailable")
        assert outcome.usage.input_tokens == (known if opened else None)


# Where each figure came from (issue 42, item 4): the translator's outcome is the
# source's, with the known input where the upstream gave none, marked "given".  The
# expected sources are this table's, read from the stream's shape: message_start says
# input 5 (an interim report), message_delta output 7 (the final one).
@pytest.mark.parametrize("upstream_input", [{"input_tokens": 5}, {}])
@pytest.mark.parametrize("known", [None, 42])
@pytest.mark.parametrize("ending", sorted(USAGE_ENDINGS))
def test_the_translators_outcome_says_where_each_figure_came_from(
    ending: str, known: int | None, upstream_input: dict[str, Any]
) -> None:
    items = _anthropic(upstream_input, *USAGE_ENDINGS[ending])
    translator = Translator("anthropic", "openai-chat", input_tokens=known)
    _through(translator, items)
    usage = translator.outcome.usage
    final = ending == "completed"
    upstream_word = "reported" if final else "partial"
    if upstream_input:
        expected_input: tuple[Any, Any] = (5, upstream_word)  # the upstream's wins
    elif known is not None:
        expected_input = (42, "given")
    else:
        expected_input = (None, None)
    assert (usage.input_tokens, usage.provenance.input_tokens) == expected_input
    assert (usage.output_tokens, usage.provenance.output_tokens) == (
        (7, "reported") if final else (None, None)
    )
    assert (usage.provenance.cached_tokens, usage.provenance.reasoning_tokens) == (None, None)
    if final:
        word = "reported"
    elif upstream_input or known is not None:
        word = "partial"  # some figure is known, not the API's final report
    else:
        word = "unavailable"
    assert usage.provenance == word
    assert json.loads(json.dumps(translator.outcome.to_json()))["usage"]["provenance"] == word


@pytest.mark.parametrize(
    ("value", "error"), [(-1, ValueError), (True, TypeError), (1.5, TypeError), ("7", TypeError)]
)
def test_input_tokens_are_checked(value: Any, error: type[Exception]) -> None:
    with pytest.raises(error, match="input_tokens"):
        Translator("anthropic", "openai-chat", input_tokens=value)


def test_known_input_tokens_survive_a_pickle() -> None:
    translator = Translator("openai-chat", "anthropic", input_tokens=42)
    copy = pickle.loads(pickle.dumps(translator))
    (start,) = copy.feed(Event(data=json.dumps(w_chunk("Hi"))))[:1]
    assert isinstance(start, Event)
    assert json.loads(start.data)["message"]["usage"] == {"input_tokens": 42}


@pytest.mark.parametrize("target", NAMES)
def test_a_finish_without_final_figures_carries_only_the_known_input(target: str) -> None:
    finish = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    items = [Event(data=json.dumps(w_chunk("Hi"))), Event(data=json.dumps(finish))]
    items.append(Event(data="[DONE]"))  # no usage chunk: include_usage was not asked
    outcome = _through(Translator("openai-chat", target, input_tokens=42), items).outcome
    assert outcome.outcome == "completed"
    if target == "anthropic":
        assert (outcome.usage.input_tokens, outcome.usage.provenance) == (42, "partial")
    else:
        assert outcome.usage.provenance == "unavailable"
