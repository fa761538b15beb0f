"""Differential tests: sse_sansio against the reference model in tests/helpers/model.py.

For random SSE-shaped streams, random chunkings, both decoding modes and random size
limits, the library and the model must agree on every item (values and spans), on the
error (kind and offset) if any, on ``last_event_id``, on ``retry`` and on the end of
stream.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.helpers import CONFIGS, parser_config
from tests.helpers.differential import check
from tests.helpers.model import (
    MComment,
    MEnd,
    MError,
    MEvent,
    interpret,
    utf8_decode,
)
from tests.helpers.strategies import BAD_UTF8, chunked, max_event_sizes, streams

pytestmark = pytest.mark.usefixtures("conn_cls")  # both cores: tests/conftest.py


# The profile in conftest.py sets the example budget; these tests are heavier than most
# (each example runs the model and several chunkings), so they take a share of it.
_BUDGET = settings().max_examples


@settings(
    max_examples=max(25, _BUDGET // 4),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data(), stream=streams(), limit=max_event_sizes)
@example(data=None, stream=b"data: x\r\n\r\n", limit=None)
@example(data=None, stream=b"\xef\xbb\xbfdata: \xff\n\ndata: y\n\n", limit=None)
@example(data=None, stream=b"\xef\xbb", limit=1)  # a cut BOM is no line: no limit
@pytest.mark.parametrize("config", CONFIGS)
def test_library_agrees_with_model(
    config: str, data: Any, stream: bytes, limit: int | None
) -> None:
    chunkings = [[stream] if stream else []]
    if data is not None:
        chunkings.append(data.draw(chunked(stream), label="chunks"))
    with parser_config(**CONFIGS[config]):
        for errors in ("strict", "replace"):
            check(stream, chunkings, errors=errors, max_event_size=limit)


@pytest.mark.slow  # an exhaustive search: every split of big inputs
@settings(max_examples=max(25, _BUDGET // 4), deadline=None)
@given(data=st.data(), stream=streams(allow_long=False))
@pytest.mark.parametrize("config", CONFIGS)
def test_agreement_every_byte_and_every_split(config: str, data: Any, stream: bytes) -> None:
    # Short streams, fed one byte at a time and split in two at every point.
    limit = data.draw(st.one_of(st.none(), st.integers(1, len(stream) + 2)), label="limit")
    errors = data.draw(st.sampled_from(("strict", "replace")), label="errors")
    last_event_id = data.draw(st.sampled_from(("", "7", "é")), label="last_event_id")
    chunkings = [[stream[i : i + 1] for i in range(len(stream))]]
    chunkings += [[stream[:cut], stream[cut:]] for cut in range(1, len(stream))]
    with parser_config(**CONFIGS[config]):
        check(stream, chunkings, errors=errors, max_event_size=limit, last_event_id=last_event_id)


def test_split_crlfs_follow_the_span_rule_at_the_start_and_later() -> None:
    # A stream opening with ":\r\n" (where the BOM look-ahead once joined the first
    # bytes) and the same lines later on, fed one byte at a time and split everywhere.
    for stream in (b":\r\n: x\r\n", b"data: a\r\n: x\r\n\r\n", b"\xef\xbb\xbf:\r\n"):
        chunkings = [[stream[i : i + 1] for i in range(len(stream))]]
        chunkings += [[stream[:cut], stream[cut:]] for cut in range(1, len(stream))]
        for config in CONFIGS.values():
            with parser_config(**config):
                check(stream, chunkings, errors="strict", max_event_size=None)


_LINE_ENDS = st.sampled_from((b"\r\n", b"\r", b"\n"))


@settings(max_examples=max(25, _BUDGET // 4), deadline=None)
@given(
    data=st.data(),
    blocks=st.lists(
        st.tuples(
            st.sampled_from((b"data: a", b": c", b"id: 7", b"event: e", b"data:", b"")),
            st.lists(_LINE_ENDS, min_size=1, max_size=7),
        ),
        max_size=12,
    ),
    limit=st.one_of(st.none(), st.integers(1, 40)),
)
@pytest.mark.parametrize("config", CONFIGS)
def test_stretches_of_mixed_line_ends(
    config: str, data: Any, blocks: list[tuple[bytes, list[bytes]]], limit: int | None
) -> None:
    # Lines followed by runs of line ends of every kind (the \r\n\r blank-line
    # shape): the blank lines after a dispatching one take a shortcut in _lines.py,
    # which must leave every item, span, limit and error where the model puts them.
    stream = b"".join(line + b"".join(ends) for line, ends in blocks)
    chunkings = [[stream] if stream else [], data.draw(chunked(stream), label="chunks")]
    with parser_config(**CONFIGS[config]):
        check(stream, chunkings, errors="strict", max_event_size=limit)


# --------------------------------------------------------------------------- the model itself

CASES: list[dict[str, Any]] = json.loads(
    (Path(__file__).parents[1] / "data" / "conformance_cases.json").read_text(encoding="utf-8")
)


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_model_passes_conformance_vectors(case: dict[str, Any]) -> None:
    # The model is only a referee if it is right: hold it to the shared vectors too.
    result = interpret(base64.b64decode(case["input_b64"]), **(case.get("options") or {}))
    events = [
        {"type": i.type, "data": i.data, "id": i.id} for i in result.items if isinstance(i, MEvent)
    ]
    assert (result.error is not None) == case["expect_error"]
    if case["expect_error"]:
        assert events == case["expect"][: len(events)]
        return
    assert events == case["expect"]
    if "expect_retry" in case:
        assert result.retry == case["expect_retry"]
    if "expect_last_event_id" in case:
        assert result.last_event_id == case["expect_last_event_id"]


@settings(max_examples=max(25, _BUDGET // 2), deadline=None)
@given(
    st.lists(
        st.one_of(
            # Never empty: hash(b"") == hash(""), so hypothesis's cache of choice
            # sequences would compare an empty bytes with an empty str, which is a
            # BytesWarning under -bb (and an error here).  An empty piece adds nothing.
            st.binary(min_size=1, max_size=4),
            st.sampled_from(BAD_UTF8),
            st.text(min_size=1, max_size=3).map(str.encode),
        ),
        max_size=8,
    ).map(b"".join)
)
def test_model_decoder_matches_python_codec(raw: bytes) -> None:
    # The model's hand-written WHATWG decoder and CPython's codec (which follows the
    # same "maximal subpart" practice) agree on replacement output and first error.
    body = raw[3:] if raw.startswith(b"\xef\xbb\xbf") else raw
    decoded = utf8_decode(raw)
    assert "".join(decoded.chars) == body.decode("utf-8", "replace")
    try:
        body.decode()
        first_error = None
    except UnicodeDecodeError as exc:
        first_error = exc.start + len(raw) - len(body)
    assert (decoded.errors[0] if decoded.errors else None) == first_error


def test_model_offsets_by_hand() -> None:
    # A worked example, computed by hand from the spec, so the model's spans and limit
    # arithmetic are checked against something other than the library.
    stream = b"\xef\xbb\xbf: hi\r\ndata: a\nid: 5\n\r\n"
    result = interpret(stream)
    assert result.items == [
        MComment("hi", 3, 9),
        MEvent("message", "a", "5", None, 9, 25),
        MEnd(0, False),
    ]
    # The block starts after the comment before its first field, at 9 (a comment there
    # is no part of it), and ends where the dispatching blank line starts, at 23: 14
    # bytes.
    assert interpret(stream, max_event_size=14).error is None
    assert interpret(stream, max_event_size=13).error == MError("size", 9 + 13)
    # Without the BOM, and with the blank line's CRLF: the same 14 bytes, from 6.
    assert interpret(stream[3:], max_event_size=13).error == MError("size", 6 + 13)
    # The comment counts while it is arriving, from the start of the block (after the
    # BOM): its 4 bytes reach past a limit of 3.
    assert interpret(stream, max_event_size=3).error == MError("size", 3 + 3)
    # A line still arriving counts with the bytes it has.
    assert interpret(b"data: 1\n\ndata: 12345", max_event_size=11).error is None
    assert interpret(b"data: 1\n\ndata: 12345", max_event_size=10).error == MError("size", 19)
    # An invalid byte in the second data line: the first event is delivered, the error
    # points at the byte.
    result = interpret(b"data: a\n\ndata: \xffb\n\n")
    assert result.items == [MEvent("message", "a", "", None, 0, 9)]
    assert result.error == MError("utf8", 15)
    # At end of stream an unfinished sequence in the partial line raises.
    assert interpret(b"data: a\n\n: \xe2\x82").error == MError("utf8", 11)
    assert interpret(b"data: a\n\n: \xe2\x82", errors="replace").items[-1] == MEnd(4, False)
