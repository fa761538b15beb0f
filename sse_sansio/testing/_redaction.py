"""Redaction: rewrite event data in a recorded stream, keep every other byte.

A secret can be split across two chunks, where a search of each chunk finds nothing, so
the stream is parsed as a whole (``errors="replace"``) and each event's data is handed to
the caller's function.  An event whose data comes back changed has only its data lines
rewritten, and within each line only the bytes that differ (the ``data:`` prefix and the
line end stay): a line's value that stays keeps its bytes.  The unfinished block a cut
leaves at the end is redacted too, its data read from its lines the way the parser
would.

The caller's function is checked: it returns a str, and one without CR, which a parser
reads as a line end ("a single U+000D CARRIAGE RETURN (CR) character"), so that the
rewritten line would end early and the rest of the value become a field of its own
(``id``, ``event``, ``retry``).  LF is allowed: it is what separates the data's lines,
and each line the new data has is written as a ``data:`` line of its own, so no field
can come of it.

Then the recorded boundaries are moved to the new bytes: one outside the changed bytes
keeps its place among the bytes around it; one inside them moves to the start of the
change, so no byte is delivered earlier than it was recorded.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from sse_sansio._events import EndOfStream, Event
from sse_sansio._receive._implementation import Connection

__all__ = ["redact"]


def redact(
    data: bytes, function: Callable[[str], str], boundaries: list[int]
) -> tuple[bytes, list[int]] | None:
    """The redacted bytes and the boundaries moved to them, or None if nothing changed."""
    edits = list(_redactions(data, function))
    if not edits:
        return None
    return _apply(data, edits, boundaries)


@dataclass(frozen=True)
class _Edit:
    start: int  # the old line's offsets
    stop: int
    new: bytes


# One line and its end: CRLF, LF or CR, or none at the end of the bytes.
_LINE = re.compile(rb"([^\r\n]*)(\r\n|\n|\r|\Z)")


def _redactions(data: bytes, function: Callable[[str], str]) -> Iterator[_Edit]:
    """The line edits that redact ``data``: for each event whose data changes, and for
    the unfinished block a cut leaves at the end."""
    function = _checked(function)
    conn = Connection(errors="replace", max_event_size=None)
    conn.receive_data(data)
    conn.receive_data(b"")
    done = 3 if data.startswith(b"\xef\xbb\xbf") else 0  # past a BOM
    while not isinstance(item := conn.next_event(), EndOfStream):
        if isinstance(item, Event):
            new = function(item.data)
            if new != item.data:
                yield from _rewrite_block(data, item.start, item.end, new)
            done = item.end
    # After the last event: blocks without data (else they would be events), comments,
    # and the unfinished block, whose data lines these are.
    values = [_value(m[1]) for m in _lines(data, done, len(data)) if _is_data(m[1])]
    if values:
        old = "\n".join(values)
        new = function(old)
        if new != old:
            yield from _rewrite_block(data, done, len(data), new)


def _checked(function: Callable[[str], str]) -> Callable[[str], str]:
    """``function``, refusing a result that is not a str or that holds a CR."""

    def checked(old: str) -> str:
        new = function(old)
        if not isinstance(new, str):
            raise TypeError(f"redact(): the function returns a str, not {type(new).__name__}")
        if "\r" in new:
            raise ValueError(
                "redact(): the function returned data holding CR, which would end the "
                f"data line early and inject a field: {new[:80]!r}"
            )
        return new

    return checked


def _lines(data: bytes, start: int, stop: int) -> list[re.Match[bytes]]:
    """The lines of ``data[start:stop]``, each with its line end (none for a last,
    unterminated line)."""
    return [m for m in _LINE.finditer(data, start, stop) if m.start() != m.end()]


def _is_data(line: bytes) -> bool:
    return line.partition(b":")[0] == b"data"


def _value(line: bytes) -> str:
    """A data line's value: after the colon and one space, if there is one."""
    value = line.partition(b":")[2]
    return (value[1:] if value.startswith(b" ") else value).decode("utf-8", "replace")


def _rewrite_block(data: bytes, start: int, stop: int, new: str) -> Iterator[_Edit]:
    """The edits that give the block ``data[start:stop]`` the data ``new``."""
    data_lines = [m for m in _lines(data, start, stop) if _is_data(m[1])]
    new_lines = new.split("\n")
    last = len(data_lines) - 1
    for k, match in enumerate(data_lines):
        prefix = b"data: " if match[1].startswith(b"data: ") else b"data:"
        # The last old line takes the last new line (and any extra); the others take
        # the first new lines in order, and those not needed go.  No line is dropped
        # right before the blank line, where a CR before it would join that LF.
        if k == last:
            wanted = new_lines[min(k, len(new_lines) - 1) :]
        else:
            wanted = new_lines[k : k + 1] if k < len(new_lines) - 1 else []
        if wanted == [_value(match[1])]:
            continue  # this line's value stays: so do its bytes
        ending = match[2] or b"\n"
        replacement = b"".join(prefix + text.encode("utf-8", "replace") + ending for text in wanted)
        if not match[2] and replacement:
            replacement = replacement[: -len(ending)]  # an unterminated line stays so
        # Only the bytes that differ: the prefix and line end stay, with the boundaries
        # in them.
        same = _common(match[0], replacement)
        tail = _common(match[0][same:][::-1], replacement[same:][::-1])
        changed = replacement[same : len(replacement) - tail]
        yield _Edit(match.start() + same, match.end() - tail, changed)


def _common(a: bytes, b: bytes) -> int:
    """The length of the bytes ``a`` and ``b`` start with alike."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _apply(data: bytes, edits: list[_Edit], boundaries: list[int]) -> tuple[bytes, list[int]]:
    """The edited bytes, and each boundary moved to its place in them."""
    pieces = []
    spans = []  # (old start, old stop, new start) of each edit
    position = shift = 0
    for edit in edits:
        pieces += [data[position : edit.start], edit.new]
        spans.append((edit.start, edit.stop, edit.start + shift))
        shift += len(edit.new) - (edit.stop - edit.start)
        position = edit.stop
    pieces.append(data[position:])

    def move(boundary: int) -> int:
        for old_start, old_stop, new_start in spans:
            if boundary < old_stop:
                if boundary > old_start:
                    return new_start  # inside the changed bytes: to their start
                return boundary + new_start - old_start
        return boundary + shift

    return b"".join(pieces), [move(b) for b in boundaries]
