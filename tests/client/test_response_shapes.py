"""check_response() and describe_body() on what issue 26 found: HTTPMessage headers,
Unicode spaces, a repeated Content-Type in every shape, and a deeply nested body."""

from __future__ import annotations

import http.client
import io

import httpx
import pytest
from multidict import CIMultiDict, CIMultiDictProxy

from sse_sansio import ReconnectPlanner, ResponseError, check_response, describe_body


def _message(raw: bytes) -> http.client.HTTPMessage:
    """Headers as http.client and urllib hand them out (response.headers / .msg)."""
    return http.client.parse_headers(io.BytesIO(raw + b"\r\n"))


def test_http_client_and_urllib_headers_are_accepted() -> None:
    good = _message(b"Content-Type: text/event-stream\r\nX-Other: 1\r\n")
    assert check_response(200, good).streams
    html = check_response(200, _message(b"Content-Type: text/html\r\n"))
    assert html.action == "fail"
    assert html.content_type == "text/html"


@pytest.mark.parametrize(
    "value", ["\x85text/event-stream\xa0", "\u2003text/event-stream", "text/event-stream\x0b"]
)
def test_only_http_whitespace_is_stripped(value: str) -> None:
    assert check_response(200, {"Content-Type": value}).action == "fail"


def test_spaces_and_tabs_are_stripped() -> None:
    check = check_response(200, [("Content-Type", " \ttext/event-stream\t ")])
    assert check.streams
    assert check.content_type == "text/event-stream"


@pytest.mark.parametrize(
    ("first", "second", "streams"),
    [
        ("text/html", "text/event-stream", True),
        ("text/event-stream", "text/html", False),
    ],
)
def test_a_repeated_content_type_has_one_answer_in_every_shape(
    first: str, second: str, streams: bool
) -> None:
    pairs = [("Content-Type", first), ("Content-Type", second)]
    raw = f"Content-Type: {first}\r\nContent-Type: {second}\r\n".encode()
    shapes: list[object] = [
        pairs,
        [(k.encode(), v.encode()) for k, v in pairs],
        httpx.Headers(pairs),
        dict(httpx.Headers(pairs).items()),  # httpx's own join, "a, b"
        CIMultiDictProxy(CIMultiDict(pairs)),
        _message(raw),
    ]
    checks = [check_response(200, shape) for shape in shapes]  # type: ignore[arg-type]
    assert [check.streams for check in checks] == [streams] * len(shapes)
    assert {check.content_type for check in checks} == {f"{first}, {second}"}


def test_a_repeated_content_encoding_counts_every_value() -> None:
    pairs = [("Content-Type", "text/event-stream")]
    pairs += [("Content-Encoding", "identity"), ("Content-Encoding", "gzip")]
    for shape in (pairs, httpx.Headers(pairs)):
        assert check_response(200, shape).action == "fail"


DEEP = b"[" * 65536


def test_a_deeply_nested_body_is_described_not_a_recursion_error() -> None:
    assert describe_body(DEEP).startswith("a JSON body; the body starts: '[[[")


def test_the_planner_refuses_a_deeply_nested_body_with_a_response_error() -> None:
    plan = ReconnectPlanner()
    plan.start(now=0)
    with pytest.raises(ResponseError, match="a JSON body"):
        list(plan.events([DEEP], 200, {"Content-Type": "application/json"}))
