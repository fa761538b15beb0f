"""Reframer: each repair, what it reports, and a stream in good shape kept byte for byte."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sse_sansio import NEED_DATA, Comment, Connection, Diagnostic, EndOfStream, Event
from sse_sansio.llm import REFRAMER_DIALECTS, Reframer, Tracker
from sse_sansio.testing import parse
from tests.helpers import llm_streams as s


def through(dialect: str, stream: bytes, **options: Any) -> tuple[bytes, list[Diagnostic]]:
    """What a proxy with a Reframer sends for ``stream``, and the repairs it logged."""
    reframer = Reframer(dialect)
    conn = Connection(**options)
    sent, notes = bytearray(), []
    for chunk in (stream, b""):
        conn.receive_data(chunk)
        while (item := conn.next_event()) is not NEED_DATA:
            out = reframer.feed(item)
            notes += [x for x in out if isinstance(x, Diagnostic)]
            sent += reframer.to_bytes(out)
            if isinstance(item, EndOfStream):
                break
        if options.get("keep_raw"):
            raw = conn.take_raw()
            sent += raw
            out = reframer.feed_raw(raw)
            notes += [x for x in out if isinstance(x, Diagnostic)]
            sent += reframer.to_bytes(out)
    return bytes(sent), notes


def judged(dialect: str, stream: bytes) -> Any:
    tracker = Tracker(dialect)
    for item in parse(stream):
        tracker.feed(item)
    return tracker.outcome


@pytest.mark.parametrize(
    ("dialect", "events"),
    [
        ("anthropic", s.ANTHROPIC),
        ("openai-responses", s.OPENAI_RESPONSES),
        ("openai-chat", s.OPENAI_CHAT),
        ("gemini", s.GEMINI),
        ("ai-sdk-ui", s.AI_SDK_UI),
    ],
)
def test_a_stream_in_good_shape_keeps_its_bytes(dialect: str, events: list[bytes]) -> None:
    stream = b": hello\n\n" + b"".join(events)
    sent, notes = through(dialect, stream, keep_raw=True)
    assert (sent, notes) == (stream, [])
    reframer = Reframer(dialect)
    for item in parse(stream):
        assert reframer.feed(item) == [item]


@pytest.mark.parametrize("dialect", ["anthropic", "openai-responses"])
def test_event_lines_are_added_from_the_data_type(dialect: str) -> None:
    events = s.ANTHROPIC if dialect == "anthropic" else s.OPENAI_RESPONSES
    stripped = b"".join(e.split(b"\n", 1)[1] for e in events)  # a proxy dropped event:
    assert all(item.type == "message" for item in parse(stripped) if isinstance(item, Event))
    sent, notes = through(dialect, stripped)
    assert sent == b"".join(parse_and_serialize(events))
    assert {n.code for n in notes} == {"reframe-event-line"}
    assert len(notes) == len(events)
    assert notes[0].start == 0


def parse_and_serialize(events: list[bytes]) -> list[bytes]:
    from sse_sansio import serialize

    return [serialize(item) for item in parse(b"".join(events)) if isinstance(item, Event)]


def test_an_error_field_becomes_the_error_event() -> None:
    # llama.cpp: `error: {json}` as a field of its own, which the parser ignores.
    first = s.OPENAI_CHAT[1]
    error = b'error: {"code": 500, "message": "context overflow", "type": "server_error"}\n\n'
    assert judged("openai-chat", first + error).outcome == "cut"
    sent, notes = through("openai-chat", first + error, keep_raw=True)
    outcome = judged("openai-chat", sent)
    assert (outcome.outcome, outcome.error_type, outcome.error_message) == (
        "failed",
        "server_error",
        "context overflow",
    )
    assert [n.code for n in notes] == ["reframe-error"]


def test_an_error_field_that_is_not_json_keeps_its_text() -> None:
    reframer = Reframer("anthropic")
    out = reframer.feed_raw(b"id: 1\nerror: upstream went away\r\n")
    assert [type(x) for x in out] == [Diagnostic, Event]
    event = out[1]
    assert isinstance(event, Event)
    assert event.type == "error"
    assert json.loads(event.data) == {
        "type": "error",
        "error": {"type": "api_error", "message": "upstream went away"},
    }


def test_an_error_field_inside_an_events_raw_bytes() -> None:
    stream = b'data: {"choices": []}\nerror: {"message": "boom"}\n\n'
    sent, notes = through("openai-chat", stream, keep_raw=True)
    assert judged("openai-chat", sent).error_message == "boom"
    assert len(notes) == 1


# (dialect, an error in a shape the dialect's decoders pass over, the outcome's fields)
ERROR_SHAPES = [
    (
        "anthropic",
        s.data({"error": {"type": "overloaded_error", "message": "busy"}}, "x"),
        "overloaded_error",
        "busy",
    ),
    ("anthropic", b"event: error\ndata: upstream timed out\n\n", "api_error", "upstream timed out"),
    ("anthropic", s.data({"type": "error", "message": "bad"}), "error", "bad"),
    (
        "openai-chat",
        b"event: error\ndata: upstream timed out\n\n",
        "server_error",
        "upstream timed out",
    ),
    ("openai-chat", s.data({"error": {"message": "m", "code": 429}}, "upstream_error"), "429", "m"),
    (
        "openai-responses",
        s.data({"error": {"message": "m", "code": "rate_limit"}}, "x"),
        "rate_limit",
        "m",
    ),
    ("openai-responses", s.data({"error": "quota"}), None, "quota"),
    (
        "gemini",
        s.data({"error": {"message": "m", "status": "UNAVAILABLE"}}, "error"),
        "UNAVAILABLE",
        "m",
    ),
    ("ai-sdk-ui", s.data({"error": "boom"}), None, "boom"),
    ("ai-sdk-ui", s.data({"type": "error", "message": "boom"}, "error"), "error", "boom"),
]


@pytest.mark.parametrize(("dialect", "event", "kind", "message"), ERROR_SHAPES)
def test_error_shapes_become_the_dialects_error_event(
    dialect: str, event: bytes, kind: str | None, message: str
) -> None:
    sent, notes = through(dialect, event)
    assert [n.code for n in notes] == ["reframe-error"]
    outcome = judged(dialect, sent)
    assert outcome.outcome == "failed"
    if dialect not in ("ai-sdk-ui", "openai-responses"):  # "type" is "error" there
        assert outcome.error_type == kind
    assert outcome.error_message == message


@pytest.mark.parametrize(
    ("dialect", "event"),
    [
        ("openai-chat", s.data({"error": {"message": "m"}})),
        (
            "gemini",
            s.data({"error": {"code": 429, "message": "m", "status": "RESOURCE_EXHAUSTED"}}),
        ),
        (
            "anthropic",
            s.data({"type": "error", "error": {"type": "api_error", "message": "m"}}, "error"),
        ),
        ("openai-responses", s.data({"type": "error", "code": "c", "message": "m"}, "error")),
        (
            "openai-responses",
            s.data(
                {"type": "response.failed", "response": {"error": {"message": "m"}}},
                "response.failed",
            ),
        ),
        ("ai-sdk-ui", s.data({"type": "error", "errorText": "m"})),
        ("openai-chat", s.data({"choices": [{"index": 0, "delta": {"content": "an error"}}]})),
    ],
)
def test_the_dialects_own_error_events_pass_untouched(dialect: str, event: bytes) -> None:
    assert through(dialect, event) == (event, [])


def test_empty_events_are_dropped() -> None:
    stream = b"event: ping\ndata:\n\ndata: \n\ndata:  \n\n" + s.OPENAI_CHAT[1]
    sent, notes = through("openai-chat", stream)
    assert sent == s.OPENAI_CHAT[1]
    assert [n.code for n in notes] == ["reframe-dropped"] * 3
    assert [n.start for n in notes] == [0, 19, 27]


def test_an_injected_error_closes_the_open_event() -> None:
    # The upstream was cut inside an event, whose bytes a streaming proxy already sent.
    reframer = Reframer("anthropic")
    sent = b'event: content_block_delta\ndata: {"type": "content_bl'
    for item in parse(sent):
        reframer.feed(item)
    out = reframer.error("upstream read timed out", error_type="overloaded_error")
    assert [x.code for x in out if isinstance(x, Diagnostic)] == ["reframe-closed-event"]
    items = [x for x in parse(sent + reframer.to_bytes(out)) if isinstance(x, Event)]
    assert [x.type for x in items] == ["content_block_delta", "error"]
    assert json.loads(items[1].data)["error"] == {
        "type": "overloaded_error",
        "message": "upstream read timed out",
    }
    # Once closed, a second error needs no closing; nor does one after a clean end.
    assert [type(x) for x in reframer.error("again")] == [Event]
    clean = Reframer("openai-chat")
    clean.feed(EndOfStream())
    assert (
        clean.to_bytes(clean.error("x"))
        == b'data: {"error": {"message": "x", "type": "server_error"}}\n\n'
    )
    assert len(clean.error("x", open_event=True)) == 2


def test_to_bytes_writes_items_without_raw_and_leaves_notes_out() -> None:
    items: list[Any] = [
        Comment(text="hi"),
        Diagnostic(code="reframe-dropped"),
        Event(data="x"),
        EndOfStream(),
    ]
    assert Reframer.to_bytes(items) == b": hi\ndata: x\n\n"


def test_other_items_pass_through() -> None:
    reframer = Reframer("gemini")
    note = Diagnostic(code="unknown-field", message="m")
    assert reframer.feed(note) == [note]


def test_a_reframer_needs_a_dialect_it_can_write() -> None:
    assert "auto" not in REFRAMER_DIALECTS
    with pytest.raises(ValueError, match="got 'auto'"):
        Reframer("auto")


def test_the_end_of_streams_raw_bytes_are_forwarded() -> None:
    stream = b"data: x\n\nfoo: 1\n\n"
    items = parse(stream, keep_raw=True)
    end = items[-1]
    assert isinstance(end, EndOfStream)
    assert end.raw
    reframer = Reframer("openai-chat")
    assert reframer.to_bytes(x for item in items for x in reframer.feed(item)) == stream
