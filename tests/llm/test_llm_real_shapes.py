"""The answer on shapes real providers send (issue 35, item 4), each stream written here
from the provider's documentation and SDK sources, fed at every chunking and cut at
every byte: Vertex AI's streamed function-call arguments, Mistral's list-shaped
content, an Anthropic tool without arguments, Ollama's tool calls that share an index,
Qwen's continuation fragments with an empty id, two Responses items (and two Anthropic
blocks) at one place, each also through every translation; and the ending for a caller
who gave up."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sse_sansio import NEED_DATA, Connection, EndOfStream, Event, serialize
from sse_sansio.llm import REFRAMER_DIALECTS, Answer, ToolCall, Tracker, Translator
from sse_sansio.testing import parse
from tests.helpers import chunkings


def data(payload: Any) -> bytes:
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


def named(payload: dict[str, Any]) -> bytes:
    return f"event: {payload['type']}\n".encode() + data(payload)


# --- Vertex AI, streamFunctionCallArguments ------------------------------------------
# From the aiplatform v1 reference (FunctionCall.partialArgs, .willContinue: "If true,
# another partial message for the current FunctionCall is expected to follow";
# PartialArg.jsonPath, stringValue / numberValue / boolValue / nullValue, willContinue)
# and Google ADK's StreamingResponseAggregator: the first piece names the function, the
# string pieces of one path are appended, a piece without willContinue ends the call.


def vertex_part(part: dict[str, Any], **candidate: Any) -> bytes:
    content = {"role": "model", "parts": [part]}
    return data({"candidates": [{"content": content, **candidate}], "modelVersion": "gemini-3"})


def vertex_last() -> bytes:
    content = {"role": "model", "parts": [{"text": ""}]}
    candidate = {"content": content, "finishReason": "STOP"}
    usage = {"promptTokenCount": 8, "candidatesTokenCount": 12}
    return data({"candidates": [candidate], "usageMetadata": usage, "modelVersion": "gemini-3"})


def piece(*args: Any, going: bool = True) -> bytes:
    call: dict[str, Any] = {"partialArgs": list(args)}
    if going:
        call["willContinue"] = True
    return vertex_part({"functionCall": call})


VERTEX = [
    vertex_part({"functionCall": {"name": "get_weather", "willContinue": True}}),
    piece({"jsonPath": "$.location", "stringValue": "Bos", "willContinue": True}),
    piece({"jsonPath": "$.location", "stringValue": "ton, MA"}),
    piece({"jsonPath": "$.days", "numberValue": 3}, {"jsonPath": "$.units[0]", "stringValue": "C"}),
    piece({"jsonPath": "$['alerts'].on", "boolValue": True}),
    vertex_part({"functionCall": {}}),  # ends the call
    vertex_part({"functionCall": {"name": "get_time", "id": "t1", "willContinue": True}}),
    piece({"jsonPath": "$.zone", "stringValue": "America/New_York"}, going=False),
    vertex_last(),
]
WEATHER = {"location": "Boston, MA", "days": 3, "units": ["C"], "alerts": {"on": True}}
VERTEX_CALLS = (
    ToolCall(None, "get_weather", json.dumps(WEATHER), WEATHER, True),
    ToolCall("t1", "get_time", '{"zone": "America/New_York"}', {"zone": "America/New_York"}, True),
)

# --- Mistral reasoning models (magistral) --------------------------------------------
# From Mistral's "Reasoning" docs and mistralai's ThinkChunk / TextChunk models: a
# delta's content is a string, or a list of {"type": "thinking", "thinking": [{"type":
# "text", "text"}]} and {"type": "text", "text"} chunks.

MISTRAL_CHUNK = {"id": "c1", "object": "chat.completion.chunk", "model": "magistral-medium-2509"}


def mistral(content: Any, finish: str | None = None, **more: Any) -> bytes:
    choice = {"index": 0, "delta": {"content": content}, "finish_reason": finish}
    return data({**MISTRAL_CHUNK, "choices": [choice], **more})


def thinking(text: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": [{"type": "text", "text": text}]}


MISTRAL = [
    mistral(""),
    mistral([thinking("The user asks")]),
    mistral([thinking(" for 2+2.")]),
    mistral([thinking(" Easy."), {"type": "text", "text": "2+2 "}]),
    mistral([{"type": "text", "text": "= "}]),
    mistral("4.", "stop", usage={"prompt_tokens": 10, "completion_tokens": 20}),
    b"data: [DONE]\n\n",
]

# --- Anthropic, a tool without arguments ---------------------------------------------
# "Streaming Messages": a tool_use block starts with "input": {}, and its input streams
# as input_json_delta partial_json; for a tool without arguments the one delta is "".

ANTHROPIC_NO_ARGS = [
    named(
        {
            "type": "message_start",
            "message": {"id": "msg_1", "role": "assistant", "usage": {"input_tokens": 5}},
        }
    ),
    named(
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "toolu_1", "name": "now", "input": {}},
        }
    ),
    named(
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": ""},
        }
    ),
    named({"type": "content_block_stop", "index": 0}),
    named(
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use"},
            "usage": {"output_tokens": 9},
        }
    ),
    named({"type": "message_stop"}),
]

# --- Ollama's OpenAI-compatible endpoint: every tool call whole, all under index 0 ----
# (its openai compatibility layer builds each chunk's tool_calls afresh, each call with
# its own id "call_..." and index 0).


def ollama_call(id: str, arguments: str) -> bytes:
    call = {
        "id": id,
        "index": 0,
        "type": "function",
        "function": {"name": "lookup", "arguments": arguments},
    }
    delta = {"role": "assistant", "content": "", "tool_calls": [call]}
    return data({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta}]})


OLLAMA = [
    ollama_call("call_a", '{"p":"a"}'),
    ollama_call("call_b", '{"p":"b"}'),
    data({"choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "tool_calls"}]}),
    b"data: [DONE]\n\n",
]
OLLAMA_CALLS = (
    ToolCall("call_a", "lookup", '{"p":"a"}', {"p": "a"}, True),
    ToolCall("call_b", "lookup", '{"p":"b"}', {"p": "b"}, True),
)

# --- Qwen's OpenAI-compatible endpoint: a call's later fragments say "id": "" --------
# (as DashScope's compatible mode streams them, observed: each tool_calls entry repeats
# its index, with "id": "" and "type": "function" after the first; the finish chunk
# carries one more empty fragment; then the usage chunk with "choices": []).


def qwen(calls: list[dict[str, Any]], finish: str | None = None, **delta: Any) -> bytes:
    choice = {
        "index": 0,
        "delta": {"content": None, **delta, "tool_calls": calls},
        "finish_reason": finish,
        "logprobs": None,
    }
    chunk = {"id": "chatcmpl-q", "object": "chat.completion.chunk", "model": "qwen-plus"}
    return data({**chunk, "choices": [choice], "usage": None, "system_fingerprint": None})


def qwen_call(index: int, arguments: str, id: str = "", name: str | None = None) -> dict[str, Any]:
    function: dict[str, Any] = {"arguments": arguments}
    if name is not None:
        function["name"] = name
    return {"index": index, "id": id, "type": "function", "function": function}


QWEN = [
    qwen([qwen_call(0, '{"location":', "call_1", "get_weather")], role="assistant"),
    qwen([qwen_call(0, ' "Hangzhou"')]),
    qwen([qwen_call(0, "}", name="")]),  # a name "" as well: no name, the call goes on
    qwen([qwen_call(1, "", "call_2", "get_time")]),
    qwen([qwen_call(1, '{"zone": "UTC+8"}')]),
    qwen([qwen_call(1, "")], finish="tool_calls"),
    data(
        {
            "id": "chatcmpl-q",
            "object": "chat.completion.chunk",
            "choices": [],
            "usage": {"prompt_tokens": 30, "completion_tokens": 12, "total_tokens": 42},
        }
    ),
    b"data: [DONE]\n\n",
]
QWEN_CALLS = (
    ToolCall("call_1", "get_weather", '{"location": "Hangzhou"}', {"location": "Hangzhou"}, True),
    ToolCall("call_2", "get_time", '{"zone": "UTC+8"}', {"zone": "UTC+8"}, True),
)

# --- Responses: two function_call items at one output_index (issue 42, item 1) -------
# Each item as the API reference shapes it (output_item.added / .done with the item,
# function_call_arguments.delta / .done with item_id and output_index); a call is its
# item, whatever place it is given.


def responses_call(item_id: str, call_id: str, name: str, arguments: list[str]) -> list[bytes]:
    item = {"id": item_id, "type": "function_call", "call_id": call_id, "name": name}
    at = {"item_id": item_id, "output_index": 0}
    whole = "".join(arguments)
    return [
        named(
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": {**item, "status": "in_progress", "arguments": ""},
            }
        ),
        *(
            named({"type": "response.function_call_arguments.delta", **at, "delta": piece})
            for piece in arguments
        ),
        named({"type": "response.function_call_arguments.done", **at, "arguments": whole}),
        named(
            {
                "type": "response.output_item.done",
                "output_index": 0,
                "item": {**item, "status": "completed", "arguments": whole},
            }
        ),
    ]


RESPONSES_ONE_PLACE = [
    named({"type": "response.created", "response": {"id": "resp_1", "status": "in_progress"}}),
    *responses_call("fc_1", "call_1", "get_weather", ['{"city":', ' "Paris"}']),
    *responses_call("fc_2", "call_2", "get_time", ['{"zone":', ' "CET"}']),
    named(
        {
            "type": "response.completed",
            "response": {
                "id": "resp_1",
                "status": "completed",
                "usage": {"input_tokens": 9, "output_tokens": 20},
            },
        }
    ),
]
TWO_CALLS = (
    ToolCall("call_1", "get_weather", '{"city": "Paris"}', {"city": "Paris"}, True),
    ToolCall("call_2", "get_time", '{"zone": "CET"}', {"zone": "CET"}, True),
)

# --- Anthropic: two tool_use blocks at one content block index (issue 41, item 8) -----


def anthropic_block(index: int, id: str, name: str, arguments: list[str]) -> list[bytes]:
    block = {"type": "tool_use", "id": id, "name": name, "input": {}}
    return [
        named({"type": "content_block_start", "index": index, "content_block": block}),
        *(
            named(
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": piece},
                }
            )
            for piece in arguments
        ),
        named({"type": "content_block_stop", "index": index}),
    ]


ANTHROPIC_ONE_PLACE = [
    named(
        {
            "type": "message_start",
            "message": {"id": "msg_1", "role": "assistant", "usage": {"input_tokens": 9}},
        }
    ),
    *anthropic_block(0, "call_1", "get_weather", ['{"city":', ' "Paris"}']),
    *anthropic_block(0, "call_2", "get_time", ['{"zone":', ' "CET"}']),
    named(
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use"},
            "usage": {"output_tokens": 20},
        }
    ),
    named({"type": "message_stop"}),
]

CASES = {
    "vertex": ("gemini", VERTEX, Answer("", "", VERTEX_CALLS, True)),
    "mistral": (
        "openai-chat",
        MISTRAL,
        Answer("2+2 = 4.", "The user asks for 2+2. Easy.", (), True),
    ),
    "anthropic-no-args": (
        "anthropic",
        ANTHROPIC_NO_ARGS,
        Answer("", "", (ToolCall("toolu_1", "now", "{}", {}, True),), True),
    ),
    "ollama": ("openai-chat", OLLAMA, Answer("", "", OLLAMA_CALLS, True)),
    "qwen": ("openai-chat", QWEN, Answer("", "", QWEN_CALLS, True)),
    "responses-one-place": (
        "openai-responses",
        RESPONSES_ONE_PLACE,
        Answer("", "", TWO_CALLS, True),
    ),
    "anthropic-one-place": ("anthropic", ANTHROPIC_ONE_PLACE, Answer("", "", TWO_CALLS, True)),
}


def fed(dialect: str, chunks: list[bytes]) -> Tracker:
    """A tracker fed everything a Connection makes of ``chunks`` and the end."""
    tracker, conn = Tracker(dialect), Connection()
    for chunk in [*(chunk for chunk in chunks if chunk), b""]:  # b"" is the end
        conn.receive_data(chunk)
        while (item := conn.next_event()) is not NEED_DATA:
            tracker.feed(item)
            if isinstance(item, EndOfStream):
                return tracker
    raise AssertionError("no end of stream")  # pragma: no cover - b"" always ends it


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_whole_answer_at_every_chunking(name: str) -> None:
    dialect, events, want = CASES[name]
    stream = b"".join(events)
    for label, chunks in chunkings(stream):
        tracker = fed(dialect, chunks)
        assert tracker.answer == want, label
        assert tracker.outcome.outcome == "completed", label


@pytest.mark.parametrize("name", sorted(CASES))
def test_cut_at_every_byte_never_claims_more_than_arrived(name: str) -> None:
    dialect, events, want = CASES[name]
    stream = b"".join(events)
    ends = [len(b"".join(events[: n + 1])) for n in range(len(events))]
    for cut in range(len(stream)):
        tracker = Tracker(dialect)
        for item in parse(stream[:cut]):
            tracker.feed(item)
        answer, outcome = tracker.answer, tracker.outcome
        assert outcome.outcome == "cut", cut
        assert not answer.complete, cut
        assert want.text.startswith(answer.text), cut
        assert want.reasoning.startswith(answer.reasoning), cut
        assert len(answer.tool_calls) <= len(want.tool_calls), cut
        for got, whole in zip(answer.tool_calls, want.tool_calls, strict=False):
            # Never a nameless or empty "complete" call: a whole call is the real one.
            assert got.name == whole.name, cut
            if got.complete:
                assert got == whole, cut
            else:
                assert got.arguments_json is None or got.arguments_json == whole.arguments_json
        if cut >= ends[-2] and dialect != "openai-chat":
            # Every event but the last arrived: the calls are whole (OpenAI's wait
            # for the finish reason, which is in the last event but [DONE]).
            assert answer.tool_calls == want.tool_calls, cut


def test_a_vertex_piece_of_another_shape_is_left_out() -> None:
    odd = [
        vertex_part({"functionCall": {"name": "f", "willContinue": True}}),
        piece({"jsonPath": "$.a", "stringValue": "x"}),
        piece({"jsonPath": "$.a.b", "stringValue": "y"}),  # a is a string: no member b
        piece({"jsonPath": "$.list[5]", "numberValue": 1}),  # no list yet, nor index 5
        piece({"jsonPath": "$.n[0]", "numberValue": 1}, {"jsonPath": "$.n[2]", "numberValue": 2}),
        piece({"jsonPath": "$.n[0].x", "numberValue": 2}),  # n[0] is a number
        piece(
            {"jsonPath": "$.k", "nullValue": None}, {"jsonPath": "$.m[0][0]", "boolValue": False}
        ),
        piece(
            {"jsonPath": "a.b", "stringValue": "no $"}, {"jsonPath": "$..deep", "numberValue": 1}
        ),
        piece({"jsonPath": "$", "stringValue": "root"}, {"jsonPath": "$.v"}, "not an arg"),
        piece({"jsonPath": "$[0]", "numberValue": 1}, {"jsonPath": "$.w", "numberValue": 1.5}),
        vertex_part({"functionCall": {"willContinue": False}}, finishReason="STOP"),
    ]
    (call,) = fed("gemini", [b"".join(odd)]).answer.tool_calls
    # The array made for an index it could not reach stays, empty: nothing invented.
    args = {"a": "x", "list": [], "n": [1], "k": None, "m": [[False]], "w": 1.5}
    assert (call.name, call.arguments_json, call.complete) == ("f", args, True)


def test_a_lone_end_marker_makes_no_call() -> None:
    stream = vertex_part({"functionCall": {}}, finishReason="STOP")
    assert fed("gemini", [stream]).answer.tool_calls == ()


def test_mistral_chunks_of_other_shapes_are_ignored() -> None:
    stream = mistral(
        [
            {"type": "image_url", "image_url": "x"},
            {"type": "thinking", "thinking": "plain"},
            {"type": "thinking", "thinking": [7, {"type": "text", "text": "!"}]},
            "loose",
            {"type": "text", "text": 5},
        ]
    )
    answer = fed("openai-chat", [stream]).answer
    assert (answer.text, answer.reasoning) == ("", "plain!")


def test_the_same_id_again_under_one_index_is_the_same_call() -> None:
    events = [ollama_call("call_a", '{"p":'), ollama_call("call_a", '"a"}'), *OLLAMA[2:]]
    (call,) = fed("openai-chat", [b"".join(events)]).answer.tool_calls
    assert call == ToolCall("call_a", "lookup", '{"p":"a"}', {"p": "a"}, True)


# --- the caller gave up --------------------------------------------------------------


def tracker_after(events: list[bytes], dialect: str = "openai-chat") -> Tracker:
    tracker = Tracker(dialect)
    for item in parse(b"".join(events)):
        if not isinstance(item, EndOfStream):
            tracker.feed(item)
    return tracker


def test_giving_up_is_a_cut_of_its_own() -> None:
    tracker = tracker_after(MISTRAL[:3])
    outcome = tracker.end(gave_up="the watchdog saw no progress for 30 s")
    assert (outcome.outcome, outcome.cut) == ("cut", "gave-up")
    assert outcome.reason.startswith(
        "the caller gave up on the stream (the watchdog saw no progress for 30 s) before "
    )
    assert outcome.offset == len(b"".join(MISTRAL[:3]))
    assert outcome.exit_status == 3
    assert outcome.to_json()["cut"] == "gave-up"
    assert tracker.end() is outcome  # fixed once given


def test_giving_up_is_told_apart_from_the_other_cuts() -> None:
    events = MISTRAL[:3]
    cuts = {
        tracker_after(events).end(gave_up="timeout").cut,
        tracker_after(events).end(truncated=True).cut,
        tracker_after(events).end().cut,
    }
    assert cuts == {"gave-up", "mid-event", "before-terminal"}
    # Giving up says more than where the bytes stopped: it wins over a cut event.
    assert tracker_after(events).end(truncated=True, gave_up="timeout").cut == "gave-up"


def test_giving_up_after_the_answer_ended_changes_nothing() -> None:
    tracker = tracker_after(MISTRAL[:-1])  # the finish reason came, [DONE] did not
    assert tracker.end(gave_up="slow").cut == "gave-up"
    outcome = tracker_after(MISTRAL).end(gave_up="slow")
    assert (outcome.outcome, outcome.cut, outcome.stop_reason) == ("completed", None, "stop")


# --- the hot paths keep the rules (issue 35, item 5) ---------------------------------


def test_an_event_of_a_subclass_is_judged_as_an_event() -> None:
    class Tagged(Event):
        __slots__ = ()

    tracker = Tracker("openai-chat")
    for item in parse(b"".join(MISTRAL)):
        if isinstance(item, Event):
            item = Tagged(type=item.type, data=item.data, id=item.id, retry=item.retry)
        tracker.feed(item)
    assert tracker.answer == CASES["mistral"][2]
    assert tracker.outcome.outcome == "completed"


def test_text_deltas_of_other_shapes_are_ignored_on_the_hot_paths() -> None:
    responses = named({"type": "response.output_text.delta", "delta": 7})
    responses += b"event: response.output_text.delta\ndata: [1]\n\n"
    responses += named({"type": "response.output_text.delta", "delta": "ok"})
    assert fed("openai-responses", [responses]).answer.text == "ok"
    ui = data({"type": "text-delta", "id": "t", "delta": 7})
    ui += b"event: delta\n" + data({"type": "text-delta", "id": "t", "delta": "named "})
    ui += data({"type": "text-delta", "id": "t", "delta": "ok"})
    assert fed("ai-sdk-ui", [ui]).answer.text == "named ok"
    anthropic = named(
        {"type": "content_block_delta", "index": "0", "delta": {"type": "text_delta", "text": "x"}}
    )
    anthropic += named(
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": 1}}
    )
    assert fed("anthropic", [anthropic]).answer.text == ""
    block = {"type": "tool_use", "id": "t", "name": "f", "input": {}}
    started = named({"type": "content_block_start", "index": "0", "content_block": block})
    assert fed("anthropic", [started]).answer.tool_calls == ()  # no place: no call


def test_gemini_figures_merge_chunk_by_chunk() -> None:
    def chunk(usage: dict[str, Any], **candidate: Any) -> bytes:
        content = {"parts": [{"text": "a"}], "role": "model"}
        return data({"candidates": [{"content": content, **candidate}], "usageMetadata": usage})

    stream = chunk({"promptTokenCount": 8, "thoughtsTokenCount": 3})
    stream += chunk({})  # no figure: no report
    stream += chunk({"candidatesTokenCount": 5, "promptTokenCount": "8"}, finishReason="STOP")
    usage = fed("gemini", [stream]).outcome.usage
    assert (usage.input_tokens, usage.output_tokens, usage.reasoning_tokens) == (8, 5, 3)
    assert usage.provenance == "reported"


def test_a_vertex_path_through_a_string_is_left_out() -> None:
    stream = vertex_part({"functionCall": {"name": "f", "willContinue": True}})
    stream += piece({"jsonPath": "$.a", "stringValue": "x"})
    stream += piece({"jsonPath": "$.a.b.c", "stringValue": "y"}, going=False)
    (call,) = fed("gemini", [stream]).answer.tool_calls
    assert (call.arguments_json, call.complete) == ({"a": "x"}, True)


# --- the calls of real streams through every translation (issue 42, item 1) ----------


@pytest.mark.parametrize("target", REFRAMER_DIALECTS)
@pytest.mark.parametrize("name", ["qwen", "ollama", "responses-one-place", "anthropic-one-place"])
def test_the_calls_stay_apart_through_every_translation_and_cut(name: str, target: str) -> None:
    dialect, events, want = CASES[name]
    stream = b"".join(events)
    translated = parse(through(dialect, target, parse(stream)))
    got = fed_items(target, translated).answer.tool_calls
    assert [(c.id is not None, c.name, c.arguments_json) for c in got] == [
        (True, c.name, c.arguments_json) for c in want.tool_calls
    ]
    for cut in range(len(stream)):
        calls = fed_items(target, parse(through(dialect, target, parse(stream[:cut]))))
        for call in calls.answer.tool_calls:  # never a nameless call, nor a merged one
            assert call.name in [c.name for c in want.tool_calls], (cut, call)
            if call.complete:
                assert call.arguments_json in [c.arguments_json for c in want.tool_calls]


def through(source: str, target: str, items: list[Any]) -> bytes:
    translator = Translator(source, target)
    out: list[Any] = []
    for item in items:
        out += translator.feed(item)
    out += translator.end()
    return b"".join(serialize(item) for item in out)


def fed_items(dialect: str, items: list[Any]) -> Tracker:
    tracker = Tracker(dialect)
    for item in items:
        tracker.feed(item)
    return tracker


def test_an_empty_id_first_then_the_real_one_is_one_call() -> None:
    events = [
        qwen([qwen_call(0, '{"a":', "", "f")]),
        qwen([qwen_call(0, " 1}", "call_9")]),
        qwen([qwen_call(0, "")], finish="tool_calls"),
        b"data: [DONE]\n\n",
    ]
    (call,) = fed("openai-chat", [b"".join(events)]).answer.tool_calls
    assert call == ToolCall("call_9", "f", '{"a": 1}', {"a": 1}, True)


def test_responses_fragments_of_two_items_at_one_place_interleaved_stay_apart() -> None:
    first = responses_call("fc_1", "call_1", "get_weather", ['{"city":', ' "Paris"}'])
    second = responses_call("fc_2", "call_2", "get_time", ['{"zone":', ' "CET"}'])
    # Both items added, then their fragments in turn, then both done.
    order = [first[0], second[0], first[1], second[1], first[2], second[2], *first[3:]]
    events = [RESPONSES_ONE_PLACE[0], *order, *second[3:], RESPONSES_ONE_PLACE[-1]]
    assert fed("openai-responses", [b"".join(events)]).answer.tool_calls == TWO_CALLS


def test_responses_fragments_that_name_only_their_place_go_to_its_latest_item() -> None:
    added = responses_call("fc_1", "call_1", "f", [])[0]
    loose = {"type": "response.function_call_arguments.delta", "output_index": 0}
    events = [
        added,
        named({**loose, "delta": '{"a": 1}'}),
        named({**loose, "item_id": "fc_unknown", "delta": ""}),
        named({**loose, "output_index": "0", "delta": "x"}),  # no place: ignored
        named({"type": "response.output_item.added", "item": {"type": "function_call"}}),
    ]
    (call,) = fed("openai-responses", [b"".join(events)]).answer.tool_calls
    assert (call.id, call.arguments) == ("call_1", '{"a": 1}')


def test_a_responses_item_without_an_id_is_keyed_by_its_place() -> None:
    item = {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": ""}
    events = [
        named({"type": "response.output_item.added", "output_index": 3, "item": item}),
        named({"type": "response.function_call_arguments.delta", "output_index": 3, "delta": "{}"}),
    ]
    item = {**item, "id": "fc_7", "call_id": "call_2"}  # an id, but no place given
    events += [
        named({"type": "response.output_item.added", "item": item}),
        named({"type": "response.function_call_arguments.delta", "item_id": "fc_7", "delta": "[]"}),
    ]
    first, second = fed("openai-responses", [b"".join(events)]).answer.tool_calls
    assert (first.id, first.name, first.arguments) == ("call_1", "f", "{}")
    assert (second.id, second.name, second.arguments) == ("call_2", "f", "[]")
