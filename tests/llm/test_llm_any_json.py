"""The Reframer and UIMessageStreamWriter take any valid JSON (issue 35, item 4): strings
with lone surrogates (valid JSON as an escape, "\\ud800", that UTF-8 cannot carry raw)
included, and raise only their documented errors.  Property tests over JSON values of
every kind; what they write must parse back, on a fresh Connection, to the same JSON."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sse_sansio import Event
from sse_sansio.llm import REFRAMER_DIALECTS, Reframer, UIMessageStreamWriter
from sse_sansio.llm._dialect import decode_json
from sse_sansio.testing import parse

# Text of any code point, lone surrogates (category Cs) drawn often.
TEXT = st.text(st.characters(categories=["Cs"]) | st.characters(), max_size=8)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | TEXT
)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)
LONE = "a\ud800b\udfff"


def events_of(sent: bytes) -> list[Event]:
    return [item for item in parse(sent) if isinstance(item, Event)]


def reframed(dialect: str, event: Event) -> list[Event]:
    """What a proxy sends for ``event``, parsed back: it must be bytes UTF-8 holds."""
    reframer = Reframer(dialect)
    sent = Reframer.to_bytes(reframer.feed(event))
    return events_of(sent)


@settings(max_examples=60, deadline=None)  # (5 dialects x 3 shapes per example)
@given(error=JSON)
def test_an_upstream_error_of_any_json_becomes_the_dialects_error_event(error: Any) -> None:
    # The upstream's text is valid JSON (surrogates escaped, as json.dumps writes them).
    for dialect in REFRAMER_DIALECTS:
        for event in (
            Event(type="error", data=json.dumps({"error": error})),
            Event(data=json.dumps({"error": error, "type": "error"})),
            Event(type="error", data=json.dumps(error)),
        ):
            for out in reframed(dialect, event):
                json.loads(out.data)  # every event the proxy sends is JSON again


@pytest.mark.parametrize("dialect", REFRAMER_DIALECTS)
def test_a_lone_surrogate_in_an_error_message_is_sent_escaped(dialect: str) -> None:
    upstream = Event(type="error", data=json.dumps({"error": {"message": LONE, "type": LONE}}))
    *_, out = reframed(dialect, upstream)
    assert LONE in json.dumps(json.loads(out.data), ensure_ascii=False)  # the same text


@given(kind=TEXT)
@example(kind="a\ud800")
@example(kind="é")
def test_a_type_of_any_text_is_an_event_name_only_where_it_can_be_written(kind: str) -> None:
    # Anthropic names its events after "type": one that cannot be an event: line
    # (a line break, a lone surrogate, empty) leaves the event as it came.
    event = Event(data=json.dumps({"type": kind, "index": 0}))
    (out,) = reframed("anthropic", event)
    writable = bool(kind) and "\r" not in kind and "\n" not in kind
    try:
        kind.encode()
    except UnicodeEncodeError:
        writable = False
    assert out.type == (kind if writable else "message")


@settings(max_examples=60, deadline=None)
@given(value=JSON)
def test_an_error_line_of_any_json_becomes_the_error_event(value: Any) -> None:
    for dialect in REFRAMER_DIALECTS:
        raw = b"error: " + json.dumps(value).encode() + b"\n\n"
        for out in events_of(Reframer.to_bytes(Reframer(dialect).feed_raw(raw))):
            json.loads(out.data)


def test_an_error_too_deep_to_quote_is_said_so() -> None:
    deep: Any = []
    for _ in range(100_000):
        deep = [deep]
    (out,) = events_of(Reframer.to_bytes([Reframer("openai-chat")._error_event(deep)]))
    assert json.loads(out.data)["error"]["message"] == "an error object nested too deeply to quote"


# --- the writer -----------------------------------------------------------------------

WRITER = UIMessageStreamWriter()


@given(value=JSON, text=TEXT)
def test_the_writer_writes_any_json_and_it_parses_back(value: Any, text: str) -> None:
    writes = {
        "data-x": WRITER.part("data-x", data=value),
        "start": WRITER.start(text, metadata=value),
        "text-delta": WRITER.text_delta(text, text),
        "reasoning-delta": WRITER.reasoning_delta(text, text),
        "tool-input-available": WRITER.tool_input_available(text, text, value),
        "tool-output-available": WRITER.tool_output_available(text, value),
        "finish": WRITER.finish(text, metadata=value),
        "error": WRITER.error(text),
    }
    for kind, sent in writes.items():
        (event,) = events_of(sent)
        part = json.loads(event.data)
        assert part["type"] == kind
        assert value in part.values() or text in part.values()


@pytest.mark.parametrize(
    ("value", "error"),
    [
        (object(), TypeError),
        ({(1, 2): "tuple key"}, TypeError),
        (math.nan, ValueError),
        (math.inf, ValueError),
    ],
)
def test_the_writer_raises_only_its_documented_errors(value: Any, error: type) -> None:
    with pytest.raises(error):
        WRITER.part("data-x", data=value)


def test_a_circular_or_too_deep_value_is_a_value_error() -> None:
    circular: list[Any] = []
    circular.append(circular)
    with pytest.raises(ValueError, match=r"[Cc]ircular"):
        WRITER.part("data-x", data=circular)
    deep: Any = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(ValueError, match="nested too deeply"):
        WRITER.tool_output_available("t", deep)


# --- the tracker's JSON decoder (issue 35, item 5) ------------------------------------


def _outcome(decode: Any, text: str) -> tuple[str, Any]:
    try:
        return "value", decode(text)
    except (ValueError, RecursionError) as exc:
        return type(exc).__name__, str(exc)


@given(
    value=JSON,
    before=st.sampled_from(["", " ", "\n\t"]),
    after=st.sampled_from(["", " ", "x", "1"]),
)
def test_the_trackers_decoder_is_json_loads(value: Any, before: str, after: str) -> None:
    # The same values and the same errors as json.loads, for texts with whitespace
    # around the value, extra data, or cut short.
    text = before + json.dumps(value) + after
    for probe in (text, text[: len(text) // 2], after):
        assert repr(_outcome(decode_json, probe)) == repr(_outcome(json.loads, probe))
