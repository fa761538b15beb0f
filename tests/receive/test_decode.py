"""The compiled core's UTF-8 decoder (``_core_decode.h``) against Python's own.

The compiled core decodes a line's bytes into a str of the right length and kind in two
passes of its own, and leaves bytes that are not UTF-8 to CPython's decoder.  What it
makes must be the str that ``bytes.decode("utf-8")`` makes: the same characters, and the
same kind (CPython's ``==`` is false between strs of different kinds, so equality checks
that too), wherever the wide characters sit in the 16-byte steps of its loops, on
both sides of the size up to which it decodes in one pass.  Bytes
that are not UTF-8 must give the pure core's error at the same offset, or, with
``errors="replace"``, the replacement characters of ``bytes.decode(..., "replace")``.

Every path that decodes is tried: a block's first data line (decoded where it lies), a
joined data buffer, an event type, an ID and a comment.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sse_sansio import NEED_DATA, Comment, EndOfStream, Event, RemoteProtocolError
from tests.helpers.cores import PURE, compiled, needs_core

pytestmark = needs_core

# One character of each width: 1 byte (ASCII), 2 bytes in and past Latin-1, 3 bytes
# (Chinese, the replacement character, the last of the BMP), 4 bytes.
WIDE = ["é", "ÿ", "Ā", "߿", "ࠀ", "中", "\ufffd", "\uffff", "\U00010000", "😀", "\U0010ffff"]
# No line ends (they end the line), nothing a line cannot hold.
LINE_TEXT = st.text(st.characters(codec="utf-8", exclude_characters="\r\n"))


def _items(conn: Any, stream: bytes) -> list[object]:
    items: list[object] = []
    try:
        conn.receive_data(stream)
        conn.receive_data(b"")
        while (item := conn.next_event()) is not NEED_DATA:
            items.append(item)
            if isinstance(item, EndOfStream):
                break
    except RemoteProtocolError as exc:
        items.append(("error", str(exc)))
    return items


def _every_path(value: bytes) -> bytes:
    """A stream that decodes ``value`` as each kind of field and as a comment."""
    return (
        b"data: " + value + b"\n\n"  # a first data line
        b"data: x\ndata: " + value + b"\n\n"  # a joined data buffer
        b"event: " + value + b"\ndata: y\n\n"  # an event type
        b"id: " + value + b"\ndata: z\n\n"  # an ID
        b": " + value + b"\n"  # a comment
    )


def _decoded(items: list[object]) -> list[str]:
    """The strs the stream's fields came out as, in _every_path()'s order."""
    events = [item for item in items if isinstance(item, Event)]
    comments = [item for item in items if isinstance(item, Comment)]
    assert len(events) == 4
    assert len(comments) == 1
    first, joined, typed, with_id = events
    return [first.data, joined.data.removeprefix("x\n"), typed.type, with_id.id, comments[0].text]


def _check_text(text: str) -> None:
    """The compiled core decodes ``text``'s UTF-8 to ``text`` on every path."""
    for errors in ("strict", "replace"):
        got = _decoded(_items(compiled(errors=errors), _every_path(text.encode())))
        expected = [text] * 5
        if not text:
            expected[2] = "message"  # an empty type is the spec's default
        if "\0" in text:
            expected[3] = ""  # an ID with NUL is ignored: the last ID (none) stays
        assert got == expected


@given(LINE_TEXT)
def test_text_of_any_width_decodes_to_itself(text: str) -> None:
    _check_text(text)


@pytest.mark.parametrize("wide", WIDE)
def test_one_wide_character_at_every_place_of_the_16_byte_steps(wide: str) -> None:
    for length in (15, 16, 17, 33, 70):
        for at in range(length):
            _check_text("a" * at + wide + "b" * (length - at - 1))


@pytest.mark.parametrize("wide", WIDE)
def test_runs_of_ascii_between_wide_characters(wide: str) -> None:
    # Runs of every length from 0 to 40 between wide characters: the fill loops switch
    # between their 16-byte ASCII step and the one-character step at every offset.
    _check_text("".join("x" * run + wide for run in range(41)))


@pytest.mark.parametrize("wide", WIDE)
def test_values_either_side_of_the_one_pass_limit(wide: str) -> None:
    # Values of up to 1024 bytes are decoded in one pass, longer ones in two: the same
    # strs on both sides, the wide character first, in the middle or last.
    for size in (1000, 1023, 1024, 1025, 3000):
        fill = size - len(wide.encode())
        for text in (wide + "a" * fill, "a" * (fill // 2) + wide + "b" * (fill - fill // 2)):
            _check_text(text)
        _check_text("c" * fill + wide)
        # Mostly wide: a value's characters fewer than its bytes.
        _check_text(wide * (size // len(wide.encode())))


def test_the_narrowest_kind_is_chosen_by_the_widest_character() -> None:
    # A str of Latin-1 characters is one byte a character, even when most of its bytes
    # are two-byte sequences; one character past U+00FF makes all of it two bytes.
    for text in ("é" * 40, "é" * 40 + "Ā", "\U0001f600" + "é" * 40, "a" * 40 + "ÿ"):
        _check_text(text)


@given(st.binary(max_size=80).filter(lambda b: b"\r" not in b and b"\n" not in b))
def test_bytes_that_are_not_utf8_are_cpythons_to_refuse_or_replace(value: bytes) -> None:
    stream = b"data: " + value + b"\n\n"
    strict = _items(compiled(), stream)
    assert strict == _items(PURE(), stream)
    try:
        text = value.decode()
    except UnicodeDecodeError:
        assert strict[0][0] == "error"  # type: ignore[index]
    else:
        assert strict[0] == Event(data=text)
    replaced = _items(compiled(errors="replace"), stream)
    assert replaced[0] == Event(data=value.decode(errors="replace"))


@pytest.mark.parametrize(
    "bad",
    [
        b"\x80",  # a continuation byte alone
        b"\xc0\xaf",  # an overlong form
        b"\xe0\x80\xaf",  # an overlong three-byte form
        b"\xed\xa0\x80",  # a surrogate
        b"\xf4\x90\x80\x80",  # past U+10FFFF
        b"\xf5\x80\x80\x80",  # a lead byte that never starts a sequence
        b"\xe4\xb8",  # a sequence cut by the line end
    ],
)
def test_invalid_sequences_after_wide_characters_keep_the_pure_cores_offsets(
    bad: bytes,
) -> None:
    for before in ("", "中" * 6, "a" * 17 + "é"):
        value = before.encode() + bad + "尾".encode()
        for stream in (b"data: " + value + b"\n\n", b"data: x\ndata: " + value + b"\n\n"):
            got = _items(compiled(), stream)
            assert got == _items(PURE(), stream)
            assert got[-1][0] == "error"  # type: ignore[index]
            replaced = _items(compiled(errors="replace"), stream)
            assert replaced == _items(PURE(errors="replace"), stream)
