"""Connection(diagnostics=True): Diagnostic items in stream order, with their spans.

Only codes and spans are asserted (the wording belongs to the classifiers in
sse_sansio/_receive/_diagnostics.py, tested on their own).
"""

from __future__ import annotations

from itertools import accumulate
from typing import Any

import pytest

from sse_sansio import NEED_DATA, Diagnostic, EndOfStream, Event, LocalProtocolError
from sse_sansio._receive._connection import Connection
from sse_sansio.testing import chunkings

pytestmark = pytest.mark.usefixtures("conn_cls")  # both cores: tests/conftest.py


def feed(chunks: list[bytes], **options: Any) -> list[tuple[str, int, int]]:
    """(kind or code, start, end) of every item, fed chunk by chunk."""
    conn = Connection(diagnostics=True, **options)
    out: list[tuple[str, int, int]] = []
    for chunk in [*chunks, b""]:
        conn.receive_data(chunk)
        while (item := conn.next_event()) is not NEED_DATA:
            if isinstance(item, EndOfStream):
                out.append(("end", -1, -1))
                break
            name = item.code if isinstance(item, Diagnostic) else type(item).__name__
            out.append((name, item.start, item.end))
    return out


# "foo: 1\n" 0-6; "retry: x\n" 7-15; "id: a\0b\n" 16-23; "data: d\n" 24-31; blank 32;
# "id: 9\n" 33-38; blank 39.
STREAM = b"foo: 1\nretry: x\nid: a\0b\ndata: d\n\nid: 9\n\n"


@pytest.mark.parametrize(("label", "chunks"), list(chunkings(STREAM)))
def test_field_diagnostics_come_before_the_event(label: str, chunks: list[bytes]) -> None:
    assert feed(chunks) == [
        ("unknown-field", 0, 7),
        ("invalid-retry", 7, 16),
        ("id-with-nul", 16, 24),
        ("Event", 0, 33),
        ("discarded-block", 33, 40),
        ("end", -1, -1),
    ]


@pytest.mark.parametrize(
    ("stream", "code", "end"),
    [
        (b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\ndata: x\n\n", "http", 17),
        (b"\xef\xbb\xbfHTTP/1.1 200 OK\n\n", "http", 19),
        (b"\x1f\x8b\x08\x00", "gzip", 4),
    ],
)
def test_the_start_of_the_stream_is_sniffed_once(stream: bytes, code: str, end: int) -> None:
    for _, chunks in chunkings(stream):
        items = feed(chunks, errors="replace")
        assert items[0][0].startswith(code)
        # The span rule: a chunk that ends at the CR of the first CRLF ends the span.
        cr_cut = stream[end - 2 : end] == b"\r\n" and end - 1 in accumulate(map(len, chunks))
        start = 3 if stream.startswith(b"\xef") else 0
        assert items[0][1:] == (start, end - 1 if cr_cut else end)
        assert not any(i[0].startswith(code) for i in items[1:])


def test_gzip_in_strict_mode_says_so_before_the_error() -> None:
    conn = Connection(diagnostics=True)
    conn.receive_data(b"\x1f\x8b\x08\x00\n")
    item = conn.next_event()
    assert isinstance(item, Diagnostic)
    assert item.code == "gzip"
    with pytest.raises(Exception, match="invalid UTF-8"):
        conn.next_event()


def test_a_stream_cut_inside_a_bom_is_sniffed_at_its_end() -> None:
    assert feed([b"\xef\xbb"], errors="replace") == [("end", -1, -1)]
    assert feed([b"HT"], errors="replace") == [("end", -1, -1)]


def test_a_plain_event_stream_has_no_diagnostics() -> None:
    items = feed([b"event: e\nid: 1\nretry: 10\ndata: x\n\n"])
    assert items == [("Event", 0, 34), ("end", -1, -1)]


def test_diagnostic_constructor_validates() -> None:
    item = Diagnostic(code="unknown-field", message="m")
    assert (item.code, item.message, item.span) == ("unknown-field", "m", (-1, -1))
    assert item == Diagnostic(code="unknown-field", message="m")
    with pytest.raises(LocalProtocolError):
        Diagnostic(code=1)  # type: ignore[arg-type]
    assert Event(data="x") != item
