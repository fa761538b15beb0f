"""check_response() against hostile headers (issue 36, item 15).

A header name that is not text, or a value of None, is a TypeError that names the
header, not an AttributeError from deep inside; a 10 MB header value gives a reason of
bounded length (the reason goes into log lines), while the check's fields keep the
header as sent.
"""

from __future__ import annotations

from typing import Any

import pytest

from sse_sansio import check_response

BIG = "x" * 10_000_000


@pytest.mark.parametrize(
    ("headers", "named"),
    [
        ([(1, "text/event-stream")], "1"),
        ({"Content-Type": None}, "Content-Type"),
        ([("content-type", None)], "content-type"),
        ([(None, "x")], "None"),
        ([(b"content-type", 5)], "content-type"),
    ],
)
def test_a_header_that_is_not_text_is_a_clear_type_error(headers: Any, named: str) -> None:
    with pytest.raises(TypeError, match="str or bytes") as caught:
        check_response(200, headers)
    assert named in str(caught.value)


@pytest.mark.parametrize(
    ("status", "headers"),
    [
        (200, {"Content-Type": BIG}),
        (200, {"Content-Type": "text/event-stream", "Content-Encoding": BIG}),
        (302, {"Location": BIG}),
    ],
)
def test_a_huge_header_gives_a_bounded_reason(status: int, headers: dict[str, str]) -> None:
    check = check_response(status, headers)
    assert check.action == "fail"
    assert len(check.reason) < 500
    assert "more characters" in check.reason
    assert len(str(check.error(b"x" * 1000))) < 1000
    if "Content-Type" in headers:
        assert check.content_type == headers["Content-Type"]  # kept as sent


def test_a_short_header_is_quoted_whole() -> None:
    check = check_response(200, {"Content-Type": "text/html; charset=utf-8"})
    assert "'text/html; charset=utf-8'" in check.reason


def test_a_huge_event_stream_content_type_gives_a_bounded_stream_reason() -> None:
    check = check_response(200, {"Content-Type": "text/event-stream; x=" + BIG})
    assert check.streams
    assert len(check.reason) < 500
    assert check.reason.startswith("200 text/event-stream; x=xxx")
