"""The diagnostics' classifiers (sse_sansio/_receive/_diagnostics.py), on their own.

The connection calls them on the diagnostics path (tests/receive/test_diagnostics_stream.py tests
the items it hands out); here each classifier gets inputs shaped as the parser gives
them, with the codes worked out from the spec and the protocols the shapes come from
(RFC 9112's status line and chunk size, RFC 9110's field names, gzip's magic bytes).
"""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sse_sansio._receive._diagnostics import (
    CODES,
    QUOTED,
    SNIFF_BYTES,
    discarded_block,
    field_diagnostic,
    sniff_start,
)


def code_of(head: bytes) -> str | None:
    found = sniff_start(head)
    return None if found is None else found[0]


# --------------------------------------------------------------------------- sniff_start


def test_sniff_bytes_is_the_documented_bound() -> None:
    assert SNIFF_BYTES == 512


@pytest.mark.parametrize(
    "head",
    [
        b"HTTP/1.1 200 OK\r\n",
        b"HTTP/1.0 200 OK\n",
        b"HTTP/2 200\r\n",
        b"HTTP/1.1 404 Not Found\r",
        b"HTTP/1.1 200",  # the stream ended after it
    ],
)
def test_an_http_status_line(head: bytes) -> None:
    assert code_of(head) == "http-status-line"


@pytest.mark.parametrize(
    "head",
    [
        b"Content-Type: text/event-stream\r\n",
        b"content-type: text/event-stream\r\n",  # HTTP/2 writes names in lower case
        b"Cache-Control: no-cache\n",
        b"Date: Tue, 01 Dec 2026 14:00:00 GMT\r\n",
        b"X-Accel-Buffering:no\r\n",
        b"Data: x\n",  # field names are case-sensitive: not the data field
    ],
)
def test_a_header_line(head: bytes) -> None:
    assert code_of(head) == "http-header"


@pytest.mark.parametrize(
    "head",
    [b"1a\r\n", b"0\r\n", b"FFFF\n", b"1a;name=value\r\n", b"1a ;ext\r", b"7f\r"],
)
def test_a_chunk_size_line(head: bytes) -> None:
    assert code_of(head) == "chunk-size"


@pytest.mark.parametrize(
    "head",
    [
        b"1a",  # not ended yet: the start of a field name, perhaps
        b"1g\r\n",  # not hex
        b"12345678901234567\r\n",  # longer than any chunk size a stream may send
        b"1a:\r\n",  # a field named 1a with an empty value
    ],
)
def test_not_a_chunk_size_line(head: bytes) -> None:
    assert code_of(head) is None


@pytest.mark.parametrize(
    "head",
    [
        b"<!DOCTYPE html>\n",
        b"<html><head><title>502 Bad Gateway</title></head>\n",
        b"  \t<div>\r\n",
        b'<?xml version="1.0"?>\n',
    ],
)
def test_an_html_document(head: bytes) -> None:
    assert code_of(head) == "html"


@pytest.mark.parametrize("head", [b'{"error": "bad key"}\n', b"[1, 2]\n", b' {"a"\r'])
def test_a_json_document(head: bytes) -> None:
    assert code_of(head) == "json"


def test_gzip_magic_bytes_before_any_decoding() -> None:
    head = gzip.compress(b"data: x\n\n")[:20]  # not UTF-8 at all
    assert head[:2] == b"\x1f\x8b"
    assert code_of(head) == "gzip"


@pytest.mark.parametrize(
    "head",
    [
        b"data: hello\n",
        b"data\n",
        b"event: update\r\n",
        b"id: 7\r",
        b"retry: 1000\n",
        b": keepalive\n",
        b":\n",
        b"\n",
        b"\r\n",
        b"",
        b"foo: bar\n",  # an unknown field, which field_diagnostic() names
        b"x\n",
        b"data: <html>\n",
        b"data: {}\n",
        b"HTTP/1.1\n",
        b"cafe: 1\n",
    ],
)
def test_event_stream_starts_look_like_nothing_else(head: bytes) -> None:
    assert sniff_start(head) is None


@given(st.sampled_from(["data", "event", "id", "retry", ""]), st.text(max_size=40))
def test_a_known_field_or_a_comment_first_is_never_flagged(name: str, value: str) -> None:
    line = f"{name}:{value}".replace("\r", " ").replace("\n", " ") + "\n"
    assert sniff_start(line.encode()[:SNIFF_BYTES]) is None


def test_the_messages_quote_the_line_and_say_what_to_do() -> None:
    found = sniff_start(b"HTTP/1.1 200 OK\r\n")
    assert found is not None
    assert "'HTTP/1.1 200 OK'" in found[1]
    assert "body" in found[1]
    found = sniff_start(b"1a\r\n")
    assert found is not None
    assert "'1a'" in found[1]
    assert "chunked" in found[1]


def test_the_body_shapes_are_described_as_the_response_check_does() -> None:
    found = sniff_start(b"<html><title>Sign in</title>\n")
    assert found is not None
    assert "titled 'Sign in'" in found[1]
    found = sniff_start(b'{"error": {"message": "Invalid API key"}}\n')
    assert found is not None
    assert "'Invalid API key'" in found[1]
    found = sniff_start(b"\x1f\x8b\x08\x00\xff\n")
    assert found is not None
    assert "1f 8b" in found[1]


def test_a_long_first_line_is_quoted_short() -> None:
    head = b"Set-Cookie: " + b"a" * 600
    found = sniff_start(head[:SNIFF_BYTES])
    assert found is not None
    assert found[0] == "http-header"
    assert f"... ({SNIFF_BYTES} characters)" in found[1]
    assert len(found[1]) < 250


def test_invalid_utf8_in_a_header_line_is_escaped() -> None:
    found = sniff_start(b"X-Name: \xff\xfe\n")
    assert found is not None
    assert "\\xff\\xfe" in found[1]


# --------------------------------------------------------------------------- fields


@pytest.mark.parametrize(
    ("field", "value"),
    [("event", "x"), ("event", ""), ("data", "x"), ("id", ""), ("id", "7"), ("retry", "0")],
)
def test_fields_the_spec_accepts(field: str, value: str) -> None:
    assert field_diagnostic(field, value) is None


@pytest.mark.parametrize("value", ["1e3", "-1", " 1", "1 ", "1.5", "١٢", "", "x"])
def test_a_retry_that_is_not_only_ascii_digits(value: str) -> None:
    found = field_diagnostic("retry", value)
    assert found is not None
    assert found[0] == "invalid-retry"
    assert repr(value) in found[1]


def test_a_retry_with_more_digits_than_int_accepts_is_valid() -> None:
    # It sets the reconnection time, clamped (docs/conformance.rst): nothing to say.
    assert field_diagnostic("retry", "9" * 5000) is None
    assert field_diagnostic("retry", "0" * 5000 + "5") is None


def test_an_empty_retry_says_so() -> None:
    found = field_diagnostic("retry", "")
    assert found is not None
    assert "empty" in found[1]


def test_an_id_holding_nul() -> None:
    found = field_diagnostic("id", "a\0b")
    assert found == (
        "id-with-nul",
        "an id holding U+0000 (NUL) is ignored, the last event ID stays: 'a\\x00b'",
    )


@pytest.mark.parametrize("field", ["foo", "Data", "DATA", "ID", "", "event ", "\x00"])
def test_an_unknown_field(field: str) -> None:
    found = field_diagnostic(field, "value")
    assert found is not None
    assert found[0] == "unknown-field"
    assert repr(field) in found[1]


def test_quotes_are_capped_and_escaped() -> None:
    name = "é\x1b" * 100
    found = field_diagnostic(name, "")
    assert found is not None
    assert repr(name[:QUOTED]) in found[1]
    assert repr(name[: QUOTED + 1]) not in found[1]
    assert "... (200 characters)" in found[1]
    assert "\x1b" not in found[1]  # an escape sequence would reach the terminal


def test_quoting_costs_what_is_shown_not_what_was_sent() -> None:
    found = field_diagnostic("x" * 10_000_000, "")
    assert found is not None
    assert len(found[1]) < 250


# --------------------------------------------------------------------------- blocks


def test_a_discarded_block_says_what_took_effect() -> None:
    code, message = discarded_block(False, False)
    assert code == "discarded-block"
    assert "nothing in it took effect" in message
    code, message = discarded_block(True, False)
    assert code == "discarded-block"
    assert "last event ID" in message
    assert "reconnection time" not in message
    code, message = discarded_block(False, True)
    assert "reconnection time" in message
    assert "last event ID" not in message
    code, message = discarded_block(True, True)
    assert "last event ID" in message
    assert "reconnection time" in message


def test_a_long_line_that_is_not_utf8_is_quoted_short_as_bytes() -> None:
    found = sniff_start(b"X-Name: " + b"\xff" * 300 + b"\n")
    assert found is not None
    assert repr(b"X-Name: " + b"\xff" * (QUOTED - 8)) + "... (308 bytes)" in found[1]


# --------------------------------------------------------------------------- the codes

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_every_code_returned_is_a_known_code() -> None:
    heads = [b"HTTP/1.1 200 OK\n", b"Date: x\n", b"1a\n", b"<p>\n", b"{}\n", b"\x1f\x8b"]
    fields = [("retry", "x"), ("id", "\0"), ("x", "")]
    found = [sniff_start(head) for head in heads] + [field_diagnostic(*f) for f in fields]
    codes = [code for code, _ in filter(None, found)] + [discarded_block(False, False)[0]]
    assert sorted(codes) == sorted(CODES)


def test_the_docs_table_lists_every_code_in_order() -> None:
    page = (DOCS / "huge-input.rst").read_text(encoding="utf-8")
    table = page[page.index(".. list-table::") : page.index("The start of the stream gets")]
    listed = re.findall(r"^   \* - ``([a-z-]+)``$", table, re.M)
    assert listed[0] == "code"  # the header row
    assert tuple(listed[1:]) == CODES
