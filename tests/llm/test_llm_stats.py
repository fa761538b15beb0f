"""llm.StreamStats (issue 35, item 3): the figures of one stream, from a fake clock.

Every expected value below is worked out by hand from the times written in the test
(the comments show the sums), never read back from the code: time to first byte,
first event and first token (a control frame such as response.created is no token),
the inter-token gaps (median, nearest-rank p95, max), stalls (gaps of at least
``stall`` seconds without progress in which keepalives came; a silent gap is none),
and the counts.
"""

from __future__ import annotations

import copy
import pickle
from pathlib import Path
from typing import Any

import pytest

from sse_sansio import Comment, Event, LocalProtocolError
from sse_sansio.llm import REFRAMER_DIALECTS, PayloadError, StreamStats, generic
from sse_sansio.llm._reading import MOVES, TOKEN, Reader
from sse_sansio.llm._registry import make_dialect
from sse_sansio.testing import parse
from tests.helpers.llm_streams import data, named


def events(*blocks: bytes) -> list[Event]:
    return [item for item in parse(b"".join(blocks)) if isinstance(item, Event)]


def responses_delta(text: str) -> bytes:
    return named({"type": "response.output_text.delta", "output_index": 0, "delta": text})


def anthropic_delta(text: str, kind: str = "text") -> bytes:
    delta = {"type": f"{kind}_delta", kind: text}
    return named({"type": "content_block_delta", "index": 0, "delta": delta})


def chat(delta: dict[str, Any], finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return data({"object": "chat.completion.chunk", "choices": [choice]})


PING = named({"type": "ping"})


def test_first_byte_event_and_token_and_the_gaps() -> None:
    created, added, d1, d2, d3, d4, completed = events(
        named({"type": "response.created", "response": {"status": "in_progress"}}),
        named({"type": "response.output_item.added", "output_index": 0, "item": {}}),
        responses_delta("Hel"),
        responses_delta("lo"),
        responses_delta(" wor"),
        responses_delta("ld"),
        named({"type": "response.completed", "response": {"usage": {"output_tokens": 4}}}),
    )
    stats = StreamStats("openai-responses", now=100.0)
    stats.saw_bytes(0, 100.1)  # an empty read is no byte
    stats.saw_bytes(40, 100.25)
    stats.saw_item(created, 100.5)
    stats.saw_item(added, 100.75)
    stats.saw_bytes(60, 101.0)
    for item, at in ((d1, 101.0), (d2, 101.25), (d3, 102.25), (d4, 102.5)):
        stats.saw_item(item, at)
    stats.saw_item(completed, 102.75)
    assert stats.as_dict()["duration"] is None  # not ended yet
    stats.end(103.0)
    assert stats.token_gaps() == [0.25, 1.0, 0.25]  # 101.25-101, 102.25-101.25, 102.5-102.25
    assert stats.as_dict() == {
        "time_to_first_byte": 0.25,
        "time_to_first_event": 0.5,
        "time_to_first_token": 1.0,  # the first delta, not response.created at 0.5
        "duration": 3.0,
        # sorted 0.25, 0.25, 1.0: the middle one; p95 is the ceil(0.95*3) = 3rd
        "inter_token_gaps": {"count": 3, "median": 0.25, "p95": 1.0, "max": 1.0},
        "stalls": {"count": 0, "seconds": 0, "longest": None, "threshold": 10.0},
        "token_events": 4,
        "keepalives": 1,  # response.created moves nothing on
        "events": 7,
        "bytes": 100,
        "output_tokens": 4,
        "outcome": "completed",
    }


def test_stalls_are_gaps_without_progress_while_keepalives_came() -> None:
    stream = events(
        named({"type": "message_start", "message": {"usage": {"input_tokens": 5}}}),
        PING,
        named({"type": "content_block_start", "index": 0, "content_block": {"type": "text"}}),
        anthropic_delta("Hi"),
        anthropic_delta(" th"),
        PING,
        anthropic_delta("ere"),
        PING,
        PING,
        named(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": 7},
            }
        ),
        named({"type": "message_stop"}),
        PING,
    )
    start, ping1, block, hi, th, ping2, ere, ping3, ping4, delta, stop, late = stream
    stats = StreamStats("anthropic", now=0.0, stall=10.0)
    stats.saw_bytes(10, 0.5)  # progress clock starts at the first byte, 0.5
    stats.saw_item(start, 0.5)  # life only
    stats.saw_item(Comment(text=" keepalive"), 3.0)
    stats.saw_item(ping1, 6.0)
    stats.saw_item(block, 12.0)  # progress after 12 - 0.5 = 11.5 s of keepalives: a stall
    stats.saw_item(hi, 12.5)
    stats.saw_item(th, 30.0)  # 17.5 s of silence: no stall (the watchdog's idle clock)
    stats.saw_item(ping2, 35.0)
    stats.saw_item(ere, 39.0)  # 9 s with a ping: below the threshold
    stats.saw_item(ping3, 40.0)
    stats.saw_item(ping4, 45.0)
    stats.saw_item(delta, 52.0)  # 52 - 39 = 13 s of pings: a stall
    stats.saw_item(stop, 52.0)
    stats.saw_item(late, 52.25)  # after message_stop: an event, no keepalive
    stats.end(52.5)
    figures = stats.as_dict()
    assert figures["stalls"] == {"count": 2, "seconds": 24.5, "longest": 13.0, "threshold": 10.0}
    # message_start, the comment and four pings before message_stop
    assert figures["keepalives"] == 6
    assert figures["events"] == 12
    assert figures["time_to_first_token"] == 12.5
    # gaps 30 - 12.5 = 17.5 and 39 - 30 = 9: the median is their mean, p95 the 2nd
    assert figures["inter_token_gaps"] == {"count": 2, "median": 13.25, "p95": 17.5, "max": 17.5}
    assert (figures["output_tokens"], figures["outcome"]) == (7, "completed")


def test_a_stall_until_a_cut_counts_and_the_cut_is_the_outcome() -> None:
    role, text = events(chat({"role": "assistant"}), chat({"content": "Hi"}))
    stats = StreamStats("openai-chat", now=0.0, stall=10.0)
    stats.saw_bytes(5, 1.0)
    stats.saw_item(role, 1.0)  # a role-only chunk moves nothing on
    stats.saw_item(text, 2.0)
    for at in (5.0, 9.0, 14.0):
        stats.saw_item(Comment(text=""), at)
    stats.end(20.0, truncated=True)
    figures = stats.as_dict()
    assert figures["stalls"]["count"] == 1
    assert figures["stalls"]["seconds"] == 18.0  # 20 - 2
    assert figures["outcome"] == "cut"
    assert figures["output_tokens"] is None  # no usage came
    assert figures["inter_token_gaps"] == {"count": 0, "median": None, "p95": None, "max": None}


def test_p95_is_the_nearest_rank() -> None:
    # 21 token events one second apart but one 5 s gap: 20 gaps, ceil(0.95*20) = 19th
    # of the sorted gaps is 1.0 (only the 20th is 5.0).
    stats = StreamStats("anthropic", now=0.0)
    times = [float(n) for n in range(10)] + [float(n) + 4.0 for n in range(10, 21)]
    for at in times:
        stats.saw_item(events(anthropic_delta("x"))[0], at)
    gaps = stats.as_dict()["inter_token_gaps"]
    assert gaps == {"count": 20, "median": 1.0, "p95": 1.0, "max": 5.0}


@pytest.mark.parametrize(
    ("block", "why"),
    [
        (anthropic_delta("hmm", "thinking"), "a reasoning delta"),
        (
            named(
                {
                    "type": "content_block_start",
                    "index": 1,
                    "content_block": {"type": "tool_use", "id": "t1", "name": "f", "input": {}},
                }
            ),
            "a tool call begins",
        ),
    ],
)
def test_reasoning_and_tool_deltas_are_tokens(block: bytes, why: str) -> None:
    stats = StreamStats("anthropic", now=0.0)
    stats.saw_item(events(block)[0], 2.0)
    assert stats.as_dict()["time_to_first_token"] == 2.0, why


def test_a_tool_call_chunk_is_a_token_in_openai_chat() -> None:
    call = {"index": 0, "id": "c", "function": {"name": "f", "arguments": ""}}
    stats = StreamStats("auto", now=0.0)
    stats.saw_item(events(chat({"role": "assistant", "content": ""}))[0], 1.0)  # no token
    stats.saw_item(events(chat({"tool_calls": [call]}))[0], 3.0)
    assert stats.as_dict()["time_to_first_token"] == 3.0


def test_gemini_is_judged_at_its_end() -> None:
    chunk = data({"candidates": [{"content": {"parts": [{"text": "Hi"}]}, "finishReason": "STOP"}]})
    stats = StreamStats("gemini", now=0.0)
    stats.saw_item(events(chunk)[0], 1.0)
    assert stats.as_dict()["outcome"] is None  # no terminal event: known at the end
    stats.end(1.5)
    assert stats.as_dict()["outcome"] == "completed"


def test_a_generic_dialect_reads_no_tokens() -> None:
    stats = StreamStats(generic("done"), now=0.0)
    stats.saw_item(Comment(text=""), 0.5)  # without saw_bytes, the first item starts the clock
    for at, name in ((1.0, "message"), (2.0, "done")):
        stats.saw_item(Event(type=name, data="x"), at)
    stats.end(3.0)
    figures = stats.as_dict()
    assert figures["time_to_first_token"] is None
    assert (figures["events"], figures["outcome"]) == (2, "completed")


def test_a_broken_payload_is_an_event_but_no_token() -> None:
    stats = StreamStats("openai-chat", now=0.0)
    stats.saw_item(Event(data="{broken"), 1.0)
    stats.saw_item(object(), 1.0)  # not an item: ignored
    figures = stats.as_dict()
    assert (figures["events"], figures["keepalives"], figures["token_events"]) == (1, 0, 0)


def test_nothing_seen_gives_nothing() -> None:
    figures = StreamStats("anthropic", now=0.0).as_dict()
    assert figures["time_to_first_byte"] is None
    assert figures["time_to_first_event"] is None
    assert (figures["bytes"], figures["events"], figures["outcome"]) == (0, 0, None)


def test_misuse_is_refused() -> None:
    with pytest.raises(ValueError, match="stall must be > 0"):
        StreamStats("anthropic", now=0.0, stall=0)
    with pytest.raises(ValueError, match="unknown dialect"):
        StreamStats("nope", now=0.0)
    stats = StreamStats("anthropic", now=5.0)
    with pytest.raises(ValueError, match="went backwards"):
        stats.saw_bytes(1, 4.0)
    stats.end(6.0)
    with pytest.raises(LocalProtocolError, match=r"saw_item\(\) after end\(\)"):
        stats.saw_item(Comment(text=""), 7.0)
    with pytest.raises(LocalProtocolError, match=r"saw_bytes\(\) after end\(\)"):
        stats.saw_bytes(1, 7.0)
    with pytest.raises(LocalProtocolError, match=r"end\(\) after end\(\)"):
        stats.end(7.0)


def test_stats_pickled_mid_stream_carry_on_as_their_twin() -> None:
    first, second = events(anthropic_delta("a"), anthropic_delta("b"))
    stats = StreamStats("anthropic", now=0.0)
    stats.saw_item(first, 1.0)
    for back in (pickle.loads(pickle.dumps(stats)), copy.deepcopy(stats)):
        back.saw_item(second, 1.5)
        back.end(2.0)
        assert back.as_dict()["inter_token_gaps"]["max"] == 0.5
        assert back.as_dict()["token_events"] == 2


# -- the shared reading (issue 42, item 8): the fast path reads as the plain rule does ----
#
# The Reader (sse_sansio/llm/_reading.py) decodes and observes each event once and asks
# the dialect's moves() only for an event that carried no text.  Here the plain rule,
# written out again: after each event, what the dialect's Parts gained (the new text
# joined; a new reasoning fragment that is not empty; a new call, argument fragment or
# whole value) and moves() asked on every event; nothing read after the verdict; a bad
# payload adds nothing and counts as progress.  Both must agree on every event of every
# stream of tests/data/llm and of the corners below, in the stream's dialect and "auto".

DATA = Path(__file__).resolve().parent.parent / "data" / "llm"


def _plain(dialect_name: str, stream: list[Event]) -> list[tuple[str, bool, bool]]:
    """(text, token, moves) per event, by the plain rule."""
    dialect = make_dialect(dialect_name)
    out: list[tuple[str, bool, bool]] = []
    settled = False
    for event in stream:
        if settled:
            out.append(("", False, False))
            continue
        before = dialect.answer_parts()
        texts, reasonings = list(before.text), list(before.reasoning)
        calls = {
            k: (len(c.parts), c.value is not None, c.final is not None)
            for k, c in before.calls.items()
        }
        try:
            payload = dialect.decode(event)
        except PayloadError:
            out.append(("", False, True))
            continue
        settled = dialect.observe(event, payload) is not None
        after = dialect.answer_parts()
        if after is not before:  # "auto" detected its dialect: everything is new
            texts, reasonings, calls = [], [], {}
        text = "".join(after.text[len(texts) :])
        reasoned = any(after.reasoning[len(reasonings) :])
        grew = any(
            key not in calls
            or (len(call.parts), call.value is not None, call.final is not None) != calls[key]
            for key, call in after.calls.items()
        )
        moves = dialect.current().moves(event, payload)
        out.append((text, bool(text) or reasoned or grew, moves))
    return out


def _fast(dialect_name: str, stream: list[Event]) -> list[tuple[str, bool, bool]]:
    """(text, token, moves) per event, by two Readers: text_of() and read()."""
    texts, bits = Reader(make_dialect(dialect_name)), Reader(make_dialect(dialect_name))
    out = []
    for event in stream:
        text = texts.text_of(event)
        did = 0 if bits.settled else bits.read(event)
        out.append((text, bool(did & TOKEN), bool(did & MOVES)))
    return out


CORNERS: dict[str, tuple[str, bytes]] = {
    # Two text parts in one chunk: the event's text is both, joined.
    "gemini-two-parts": (
        "gemini",
        data({"candidates": [{"content": {"parts": [{"text": "a"}, {"text": "b"}]}}]})
        + data({"candidates": [{"content": {"parts": [{"text": "c"}]}, "finishReason": "STOP"}]}),
    ),
    # An empty content, an empty reasoning fragment, then reasoning; an empty
    # function_call object starts a (nameless) call without moving the answer.
    "openai-chat-corners": (
        "openai-chat",
        chat({"role": "assistant", "content": ""})
        + chat({"reasoning_content": ""})
        + chat({"reasoning_content": "hm"})
        + chat({"function_call": {}})
        + chat({"function_call": {"arguments": "{}"}})
        + chat({"content": [{"type": "text", "text": "x"}, {"type": "text", "text": "y"}]})
        + chat({}, "stop")
        + b"data: [DONE]\n\n"
        + chat({"content": "after the end"}),
    ),
    # Thinking, a ping, a payload that is not JSON (the Tracker's error), then text.
    "anthropic-corners": (
        "anthropic",
        anthropic_delta("think", "thinking")
        + PING
        + b"event: content_block_delta\ndata: {not json\n\n"
        + anthropic_delta("text")
        + named({"type": "message_stop"}),
    ),
}


def _streams() -> list[tuple[str, str, list[Event]]]:
    found = []
    for path in sorted(DATA.glob("*.sse")):
        dialect = next(name for name in REFRAMER_DIALECTS if path.name.startswith(name + "-"))
        found.append((path.stem, dialect, events(path.read_bytes())))
    for name, (dialect, stream) in CORNERS.items():
        found.append((name, dialect, events(stream)))
    return found


@pytest.mark.parametrize("mode", ["own", "auto"])
def test_the_readers_fast_path_reads_as_the_plain_rule(mode: str) -> None:
    streams = _streams()
    assert len(streams) == len(list(DATA.glob("*.sse"))) + len(CORNERS) >= 25
    for name, dialect, stream in streams:
        chosen = dialect if mode == "own" else "auto"
        assert _fast(chosen, stream) == _plain(chosen, stream), name


def test_the_corners_hold_what_they_are_written_for() -> None:
    # (the plain rule itself, on the corners: each shape above is the case it names)
    gemini = _plain("gemini", events(CORNERS["gemini-two-parts"][1]))
    assert gemini[0] == ("ab", True, True)
    chat_read = _plain("openai-chat", events(CORNERS["openai-chat-corners"][1]))
    assert [(t, token, moves) for t, token, moves in chat_read] == [
        ("", False, False),  # role and empty content
        ("", False, False),  # empty reasoning
        ("", True, True),  # reasoning
        ("", True, False),  # {} starts a call: output, but nothing moves
        ("", True, True),  # its arguments
        ("xy", True, True),
        ("", False, True),  # the finish reason
        ("", False, True),  # [DONE]
        ("", False, False),  # after the verdict: nothing read
    ]
    anthropic = _plain("anthropic", events(CORNERS["anthropic-corners"][1]))
    assert [token for _, token, _ in anthropic] == [True, False, False, True, False]
    assert [moves for _, _, moves in anthropic] == [True, False, True, True, True]


def test_a_pickled_reader_state_counts_on_from_where_it_was() -> None:
    # Pickled mid-answer with "auto" (the dialect detected), the stats count on.
    first, second = events(anthropic_delta("a"), anthropic_delta("b"))
    stats = StreamStats("auto", now=0.0)
    stats.saw_item(first, 1.0)
    back = pickle.loads(pickle.dumps(stats))
    back.saw_item(second, 2.0)
    assert back.as_dict()["token_events"] == 2
    assert back.token_gaps() == [1.0]
