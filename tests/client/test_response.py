"""check_response() and describe_body(): the WHATWG response rules, and a readable refusal."""

from __future__ import annotations

import gzip
import json
import pickle
from typing import Any

import pytest

from sse_sansio import ProtocolError, ResponseCheck, ResponseError, check_response, describe_body

SSE = {"Content-Type": "text/event-stream"}

# ---- what streams ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content_type",
    [
        "text/event-stream",
        "text/event-stream; charset=utf-8",
        "Text/Event-Stream",
        "  TEXT/EVENT-STREAM ;charset=UTF-8",
    ],
)
def test_200_text_event_stream_streams_with_parameters_and_in_any_case(content_type: str) -> None:
    check = check_response(200, {"content-type": content_type})
    assert check.action == "stream"
    assert check.streams
    assert check.status == 200
    assert check.content_type == content_type.strip()


@pytest.mark.parametrize(
    "headers",
    [
        {"Content-Type": "text/event-stream"},
        {b"content-type": b"text/event-stream"},
        [("CONTENT-TYPE", "text/event-stream")],
        [(b"Content-Type", b"text/event-stream"), (b"X-Other", b"1")],
        [("x", "y"), ("content-type", b"text/event-stream")],
    ],
)
def test_any_header_shape(headers: Any) -> None:
    assert check_response(200, headers).streams


def test_httpx_and_aiohttp_headers() -> None:
    import httpx
    from multidict import CIMultiDict, CIMultiDictProxy

    assert check_response(200, httpx.Headers({"content-type": "text/event-stream"})).streams
    proxy = CIMultiDictProxy(CIMultiDict({"Content-Type": "text/event-stream"}))
    assert check_response(200, proxy).streams


def test_a_repeated_header_counts_its_last_value() -> None:
    headers = [("Content-Type", "text/html"), ("Content-Type", "text/event-stream")]
    assert check_response(200, headers).streams


@pytest.mark.parametrize("encoding", ["", "identity", "Identity", " identity , identity"])
def test_identity_encoding_streams(encoding: str) -> None:
    assert check_response(200, {**SSE, "Content-Encoding": encoding}).streams


@pytest.mark.parametrize("encoding", ["gzip", "br", "identity, gzip", "deflate"])
def test_an_encoded_body_fails_unless_the_client_decodes_it(encoding: str) -> None:
    check = check_response(200, {**SSE, "Content-Encoding": encoding})
    assert check.action == "fail"
    assert f"Content-Encoding: {encoding}" in check.reason
    assert "iter_bytes()" in check.reason  # what to do instead
    assert check.content_encoding == encoding
    assert check_response(200, {**SSE, "Content-Encoding": encoding}, decoded=True).streams


# ---- what stops and what fails -----------------------------------------------------------------


def test_204_stops_for_good() -> None:
    check = check_response(204, {})
    assert check.action == "stop"
    assert not check.streams
    assert "do not reconnect" in check.reason
    error = check.error(b"")
    assert str(error) == check.reason  # no body to describe


@pytest.mark.parametrize(
    ("status", "hint"),
    [
        (201, "201, not 200"),
        (401, "credentials"),
        (403, "forbidden"),
        (404, "check the URL"),
        (405, "method"),
        (406, "Accept: text/event-stream"),
        (408, "timeout"),
        (429, "rate limited"),
        (500, "server error"),
        (503, "server error"),
        (418, "418"),
        (101, "101"),
    ],
)
def test_other_statuses_fail_with_a_hint(status: int, hint: str) -> None:
    check = check_response(status, SSE)
    assert check.action == "fail"
    assert check.reason.startswith(f"expected 200 text/event-stream, got {status}")
    assert hint in check.reason


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_a_redirect_that_was_not_followed(status: int) -> None:
    check = check_response(status, {"Location": "https://example.com/next"})
    assert check.action == "fail"
    assert "redirect to 'https://example.com/next'" in check.reason
    empty = check_response(status, {"Location": ""})
    assert "without a Location header" in empty.reason
    assert "without a Location header" in check_response(status, {}).reason


@pytest.mark.parametrize(
    ("headers", "shown"),
    [
        ({"Content-Type": "text/html; charset=utf-8"}, "'text/html; charset=utf-8'"),
        ({"Content-Type": "application/json"}, "'application/json'"),
        ({"Content-Type": "text/event-streams"}, "'text/event-streams'"),
        ({}, "none"),
    ],
)
def test_a_wrong_content_type_fails(headers: dict[str, str], shown: str) -> None:
    check = check_response(200, headers)
    assert check.action == "fail"
    assert f"expected Content-Type text/event-stream, got {shown}" in check.reason


def test_status_must_be_an_int() -> None:
    for status in ("200", 200.0, True):
        with pytest.raises(TypeError, match="status must be an int"):
            check_response(status, SSE)  # type: ignore[arg-type]


# ---- the error, with the body --------------------------------------------------------------


def test_the_error_names_the_cause_and_shows_the_body() -> None:
    body = json.dumps({"error": {"message": "Incorrect API key provided", "code": 401}}).encode()
    error = check_response(401, {"Content-Type": "application/json"}).error(body)
    assert isinstance(error, ResponseError)
    assert isinstance(error, ProtocolError)
    assert error.check.status == 401
    assert error.body == body
    text = str(error)
    assert text.startswith("expected 200 text/event-stream, got 401 unauthorized")
    assert "a JSON error: 'Incorrect API key provided'" in text
    assert 'the body starts: \'{"error": {"message"' in text


def test_the_error_pickles() -> None:
    error = check_response(404, {}).error(b"nope")
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is ResponseError
    assert (str(copy), copy.check, copy.body) == (str(error), error.check, b"nope")


def test_a_check_is_a_value() -> None:
    assert check_response(404, {}) == ResponseCheck(
        "fail", "expected 200 text/event-stream, got 404 not found: check the URL", 404
    )


# ---- describe_body --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "names"),
    [
        (b'{"error": {"message": "model not found"}}', "a JSON error: 'model not found'"),
        (b'{"error": "no such stream", "code": 404}', "a JSON error: 'no such stream'"),
        (b'  {"message": "Forbidden"}', "a JSON error: 'Forbidden'"),
        (b'{"detail": "Not authenticated"}', "a JSON error: 'Not authenticated'"),
        (b'{"error": {"detail": "quota"}}', "a JSON error: 'quota'"),
        (b'{"error_description": "expired"}', "a JSON error: 'expired'"),
        (
            b'{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}',
            "a JSON error: 'Overloaded'",
        ),
        (b'{"ok": false}', "a JSON body"),
        (b'{"error": 42}', "a JSON body"),
        (b"[1, 2]", "a JSON body"),
        (b'{"error": {"message": "cut', "a JSON body"),  # the first chunk only
    ],
)
def test_json_bodies(body: bytes, names: str) -> None:
    text = describe_body(body)
    assert text.startswith(names + "; the body starts: ")
    assert repr(body.decode()) in text


def test_html_pages() -> None:
    page = b"<!DOCTYPE html>\n<html><head><title> Sign in </title></head><body>...</body></html>"
    assert describe_body(page).startswith("an HTML page titled 'Sign in'; the body starts: ")
    assert describe_body(b"<HTML><body>502 Bad Gateway</body>").startswith("an HTML page; ")
    assert describe_body(b"\n<!-- x -->\n<html>").startswith("an HTML page; ")


def test_gzip_bytes_are_named() -> None:
    body = gzip.compress(b'{"error": "hidden"}')
    text = describe_body(body)
    assert text.startswith("the body is gzip-compressed (it starts with 1f 8b); ")
    assert repr(body) in text  # not UTF-8: shown as bytes, escaped


def test_empty_and_plain_bodies() -> None:
    assert describe_body(b"") == "the body is empty"
    assert describe_body(b"Service Unavailable") == "the body starts: 'Service Unavailable'"
    assert describe_body(bytearray(b"x")) == "the body starts: 'x'"


def test_the_start_is_escaped_and_bounded() -> None:
    hostile = b"\x1b[31mred\r\nfake log line" + b"A" * 1000
    text = describe_body(hostile)
    assert not {"\x1b", "\r", "\n"} & set(text)
    assert "\\x1b[31mred\\r\\nfake" in text
    assert text.endswith(f"... ({len(hostile)} bytes read)")
    assert len(text) < 300
    assert describe_body(b"A" * 50, limit=10) == "the body starts: 'AAAAAAAAAA'... (50 bytes read)"
    binary = bytes(range(128, 256)) * 4
    assert describe_body(binary, limit=8).endswith(f"... ({len(binary)} bytes read)")


def test_a_character_cut_by_the_chunk_is_not_binary() -> None:
    body = "错误".encode() + "信".encode()[:2]
    assert describe_body(body) == "the body starts: '错误'"
    assert describe_body(b"ok \xff") == "the body starts: b'ok \\xff'"
