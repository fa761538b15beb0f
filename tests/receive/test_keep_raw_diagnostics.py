"""A keep_raw proxy with diagnostics on: every item has ``raw``, and the items' raw
bytes, joined, are the stream (issue 26: Diagnostic had no ``raw``)."""

from __future__ import annotations

import pytest

from sse_sansio import NEED_DATA, Connection, Diagnostic, EndOfStream

pytestmark = pytest.mark.usefixtures("conn_cls")  # both cores: tests/conftest.py

STREAMS = [
    b"HTTP/1.1 200 OK\r\nfoo: 1\r\n\r\ndata: a\r\n\r\n",
    b"foo: 1\nretry: x\nid: 1\n\ndata: b\n\n: c\n",
    b"<html><title>502</title></html>\n\n",
    b"foo: bar\n\n",  # a diagnostic, then the end of the stream
]


def _forwarded(stream: bytes, chunk: int, **options: object) -> tuple[bytes, list[str]]:
    conn = Connection(keep_raw=True, diagnostics=True, **options)  # type: ignore[call-overload]
    out = bytearray()
    codes: list[str] = []
    pieces = [stream[i : i + chunk] for i in range(0, len(stream), chunk)] + [b""]
    for piece in pieces:
        conn.receive_data(piece)
        while (item := conn.next_event()) is not NEED_DATA:
            if isinstance(item, Diagnostic):
                codes.append(item.code)
            assert item.raw is not None, item
            out += item.raw
            if isinstance(item, EndOfStream):
                return bytes(out), codes
    raise AssertionError("no end of stream")


@pytest.mark.slow
@pytest.mark.parametrize("stream", STREAMS)
@pytest.mark.parametrize("chunk", [1, 7, 1000])
def test_a_verbatim_proxy_forwards_every_byte_with_diagnostics_on(
    stream: bytes, chunk: int
) -> None:
    out, codes = _forwarded(stream, chunk)
    assert out == stream
    assert codes  # each stream above has something to diagnose


def test_with_on_oversize_skip_and_pieces_too() -> None:
    stream = b"foo: 1\ndata: " + b"x" * 50 + b"\n\ndata: y\n\n"
    out, codes = _forwarded(stream, 5, piece_size=8)
    assert out == stream
    assert codes == ["unknown-field"]


def test_a_diagnostic_hands_out_no_bytes_and_none_without_keep_raw() -> None:
    conn = Connection(keep_raw=True, diagnostics=True)
    conn.receive_data(b"foo: 1\n")
    item = conn.next_event()
    assert isinstance(item, Diagnostic)
    assert item.raw == b""
    plain = Connection(diagnostics=True)
    plain.receive_data(b"foo: 1\n")
    item = plain.next_event()
    assert isinstance(item, Diagnostic)
    assert item.raw is None
    assert Diagnostic(code="unknown-field").raw is None
