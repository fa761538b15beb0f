"""iter_events()'s drain loop at its edges: what comes before the first chunk and after
the last one.

The loop feeds a chunk, then drains to NEED_DATA (sse_sansio/_client/_feeding.py); items can
also come before any chunk (a connection passed in that holds some, or has ended) and
after receive_data(b"") (a Diagnostic that only the end of the stream decides).
"""

from __future__ import annotations

import pytest

from sse_sansio import Comment, Connection, Diagnostic, EndOfStream, Event, iter_events

pytestmark = pytest.mark.usefixtures("conn_cls")  # both cores: tests/conftest.py


def test_a_diagnostic_decided_at_the_end_is_yielded() -> None:
    stream = [b"<html>"]  # a cut line: the classifier decides at the end
    items: list[object] = list(iter_events(stream, diagnostics=True, end_of_stream="yield"))
    assert [type(item) for item in items] == [Diagnostic, EndOfStream]
    first = items[0]
    assert isinstance(first, Diagnostic)
    assert first.code == "html"


def test_a_given_connection_hands_out_what_it_holds_before_any_chunk() -> None:
    conn = Connection()
    conn.receive_data(b": held\n")
    items = list(iter_events([b"data: a\n\n"], connection=conn))
    assert [type(item) for item in items] == [Comment, Event]


def test_a_given_connection_that_ended_is_not_fed() -> None:
    conn = Connection()
    conn.receive_data(b"data: a\n\n")
    conn.receive_data(b"")
    chunks = iter([b"data: never read\n\n"])
    items = list(iter_events(chunks, connection=conn, end_of_stream="yield"))
    assert [type(item) for item in items] == [Event, EndOfStream]
    assert next(chunks) == b"data: never read\n\n"
    assert list(iter_events([], connection=conn)) == []  # a clean end: nothing more


def test_a_none_chunk_is_refused_as_not_bytes() -> None:
    with pytest.raises(TypeError, match="a chunk is None, not bytes"):
        list(iter_events([b"data: a\n\n", None, b"data: b\n\n"]))  # type: ignore[list-item]
