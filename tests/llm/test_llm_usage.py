"""Outcome.usage: each API's figures, merged by its rules, and whether they are final.

Each stream is written by hand in the shape of the API's documentation
(tests/helpers/llm_streams.py) and cut at every byte: the usage after a cut is what the events
that arrived whole say, and "reported" only once the API's final figures came.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import pickle
from typing import Any

import pytest

from sse_sansio import Event
from sse_sansio.llm import Provenance, Tracker, Usage, _dialect
from sse_sansio.testing import parse
from tests.helpers import llm_streams as s

NONE = Usage()

# (dialect, the events, the usage once each event has arrived whole)
CASES: list[tuple[str, list[bytes], list[Usage]]] = [
    (
        "openai-chat",
        s.OPENAI_CHAT,
        [NONE, NONE, NONE, Usage(9, 12, 4, 2, "reported"), Usage(9, 12, 4, 2, "reported")],
    ),
    ("openai-responses", s.OPENAI_RESPONSES, [NONE, NONE, NONE, Usage(36, 87, 6, 64, "reported")]),
    (
        "anthropic",
        s.ANTHROPIC,
        [Usage(25, 1, 10, None, "partial")] * 5 + [Usage(25, 15, 10, None, "reported")] * 2,
    ),
    ("gemini", s.GEMINI, [Usage(8, 1, None, None, "partial"), Usage(8, 2, 3, 5, "reported")]),
    (
        "ai-sdk-ui",
        s.AI_SDK_UI,
        [NONE] * 6 + [Usage(3, 1, None, None, "partial")] + [Usage(3, 2, 1, 0, "reported")] * 2,
    ),
]


def usage_of(dialect: str, stream: bytes) -> Usage:
    tracker = Tracker(dialect)
    for item in parse(stream):
        tracker.feed(item)
    return tracker.outcome.usage


@pytest.mark.parametrize(("dialect", "events", "after"), CASES, ids=[c[0] for c in CASES])
def test_usage_cut_at_every_byte(dialect: str, events: list[bytes], after: list[Usage]) -> None:
    stream = b"".join(events)
    ends = [len(b"".join(events[: n + 1])) for n in range(len(events))]
    for cut in range(len(stream) + 1):
        whole = sum(1 for end in ends if end <= cut)  # events that arrived whole
        want = after[whole - 1] if whole else NONE
        assert usage_of(dialect, stream[:cut]) == want, (dialect, cut)


@pytest.mark.parametrize(("dialect", "events", "after"), CASES, ids=[c[0] for c in CASES])
def test_auto_reads_the_same_usage(dialect: str, events: list[bytes], after: list[Usage]) -> None:
    assert usage_of("auto", b"".join(events)) == after[-1]


def test_anthropic_cumulative_delta_replaces_what_it_gives() -> None:
    # Newer API versions repeat the input figures in message_delta: they replace
    # message_start's; a figure left out keeps message_start's.
    start = s.ANTHROPIC[0]
    delta = s.named(
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"input_tokens": 30, "output_tokens": 40, "cache_read_input_tokens": None},
        }
    )
    stream = start + delta + s.named({"type": "message_stop"})
    assert usage_of("anthropic", stream) == Usage(30, 40, 10, None, "reported")


def test_openai_chat_usage_with_the_choices_is_final_only_just_before_done() -> None:
    # Compatible servers that send running figures (or the usage with the last
    # choice) are "partial" until [DONE] follows the chunk that carried them.
    def chunk(usage: Any, finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": {"content": "x"}, "finish_reason": finish}
        return s.data({"choices": [choice], "usage": usage})

    running = chunk({"prompt_tokens": 5, "completion_tokens": 1})
    last = chunk({"prompt_tokens": 5, "completion_tokens": 2}, "stop")
    assert usage_of("openai-chat", running + last) == Usage(5, 2, None, None, "partial")
    done = b"data: [DONE]\n\n"
    assert usage_of("openai-chat", running + last + done) == Usage(5, 2, None, None, "reported")
    later = chunk(None, "stop")
    assert usage_of("openai-chat", running + later + done) == Usage(5, 1, None, None, "partial")


@pytest.mark.parametrize(
    "usage",
    [{}, {"prompt_tokens": "9"}, {"prompt_tokens": True}, {"prompt_tokens": -1}, "12", None],
)
def test_figures_that_are_not_counts_are_none(usage: Any) -> None:
    stream = s.data({"choices": [], "usage": usage}) + b"data: [DONE]\n\n"
    assert usage_of("openai-chat", stream) == NONE


def test_responses_incomplete_and_failed_carry_usage_too() -> None:
    for kind in ("response.incomplete", "response.failed"):
        stream = s.named({"type": kind, "response": {"usage": {"input_tokens": 3}}})
        assert usage_of("openai-responses", stream) == Usage(3, None, None, None, "reported")


def test_gemini_blocked_prompt_usage_is_final() -> None:
    stream = s.data(
        {"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 7}}
    )
    assert usage_of("gemini", stream) == Usage(7, None, None, None, "reported")


def test_ai_sdk_6_usage_details() -> None:
    usage = {
        "inputTokens": 4,
        "outputTokens": 5,
        "inputTokenDetails": {"cacheReadTokens": 2},
        "outputTokenDetails": {"reasoningTokens": 1},
    }
    stream = s.data({"type": "finish", "messageMetadata": {"usage": usage}})
    assert usage_of("ai-sdk-ui", stream) == Usage(4, 5, 2, 1, "reported")


def test_generic_and_undetected_streams_have_no_usage() -> None:
    assert Tracker("auto").end().usage == NONE
    tracker = Tracker("auto")
    tracker.feed(Event(data='{"usage": {"prompt_tokens": 1}}'))
    assert tracker.end().usage == NONE


def test_the_outcome_line_holds_the_usage() -> None:
    record = json.loads(json.dumps(Tracker("openai-chat").end().to_json()))
    assert record["usage"] == {
        "input_tokens": None,
        "output_tokens": None,
        "cached_tokens": None,
        "reasoning_tokens": None,
        "provenance": "unavailable",
    }


def test_a_huge_event_is_decoded_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # Reading usage costs no second decoding of a 1 MiB event: the JSON decoder runs
    # once per event, and the figures are dict lookups in what it returned.
    calls: list[int] = []
    decode_json = _dialect.decode_json

    def loads(text: str) -> Any:
        calls.append(len(text))
        return decode_json(text)

    monkeypatch.setattr(_dialect, "decode_json", loads)
    big = {
        "choices": [{"index": 0, "delta": {"content": "x" * (1 << 20)}, "finish_reason": "stop"}]
    }
    usage = {"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 1 << 18}}
    stream = s.data(big) + s.data(usage) + b"data: [DONE]\n\n"
    tracker = Tracker("openai-chat")
    for item in parse(stream):
        tracker.feed(item)
    assert tracker.outcome.usage == Usage(1, 1 << 18, None, None, "reported")
    assert len(calls) == 2  # the two JSON events, once each; [DONE] is not decoded
    assert calls[0] > 1 << 20


# Provenance figure by figure (issue 42, item 4).


def test_a_usage_word_becomes_a_provenance_for_its_figures() -> None:
    usage = Usage(input_tokens=3, cached_tokens=0, provenance="partial")
    provenance = usage.provenance
    assert isinstance(provenance, Provenance)
    assert (provenance, str(provenance), hash(provenance)) == (
        "partial",
        "partial",
        hash("partial"),
    )
    sources = [getattr(provenance, f) for f in ("input_tokens", "output_tokens")]
    sources += [provenance.cached_tokens, provenance.reasoning_tokens]
    assert sources == ["partial", None, "partial", None]
    assert json.dumps({"p": provenance}) == '{"p": "partial"}'
    assert Usage().provenance == "unavailable"
    assert Usage().provenance.input_tokens is None


def test_a_provenance_pickles_and_copies_as_itself() -> None:
    provenance = Provenance("reported", "given", "reported")
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        back = pickle.loads(pickle.dumps(provenance, protocol))
        assert (type(back), back, back.input_tokens, back.output_tokens) == (
            Provenance,
            "reported",
            "given",
            "reported",
        )
    assert copy.deepcopy(provenance) is provenance
    assert repr(provenance) == (
        "Provenance('reported', input_tokens='given', output_tokens='reported')"
    )
    assert repr(Provenance("unavailable")) == "Provenance('unavailable')"


@pytest.mark.parametrize(
    "args",
    [
        ("final",),
        ("reported", "maybe"),
        ("partial", None, "reported", None, None, "x"),
        ("unavailable", "given"),
    ],
)
def test_a_provenance_says_what_is_wrong(args: tuple[Any, ...]) -> None:
    with pytest.raises((ValueError, TypeError)):
        Provenance(*args)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"provenance": "final"},
        {"input_tokens": 3, "provenance": "unavailable"},
        {"input_tokens": 3, "provenance": Provenance("reported", None, "given")},
    ],
)
def test_a_usage_refuses_a_provenance_that_is_not_its_own(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="Usage"):
        Usage(**kwargs)


def test_replace_keeps_the_apis_word_for_the_new_figures() -> None:
    usage = dataclasses.replace(Usage(input_tokens=3, provenance="reported"), output_tokens=4)
    assert (usage.provenance.input_tokens, usage.provenance.output_tokens) == (
        "reported",
        "reported",
    )
