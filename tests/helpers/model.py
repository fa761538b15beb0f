"""A slow, obviously-correct reference model of "Interpreting an event stream".

The differential tests and the fuzzer compare sse_sansio against this model.  It shares
no code with the package and is written for clarity, not speed:

1. ``utf8_decode`` is the WHATWG Encoding standard's "UTF-8 decoder" written out step by
   step (bytes needed, bytes seen, lower and upper boundary).  It decodes the *whole*
   input first and remembers, for every character, the offset of its first byte, and
   for every error the offset of the first byte of the ill-formed sequence.
2. ``split_lines`` walks the characters one by one and cuts lines at CRLF, LF or CR.
3. ``interpret`` walks the lines and follows the spec's steps literally.

Where the spec leaves room, the model mirrors sse_sansio's documented choices:

- Comment lines are returned as items (text after the colon, one leading space removed).
- ``Event.retry`` is a valid ``retry`` value from the event's own block; an empty
  ``retry`` value is ignored; leading zeros do not count, and a value of more than
  ``RETRY_MAX_DIGITS`` significant digits (CPython's default limit for ``int()`` of a
  string) is clamped to the largest number of that many digits.
- Strict decoding: the items of every complete line before the line holding the first
  invalid byte are delivered, then the error, whose offset is that byte's offset.  An
  invalid or unfinished sequence in the unterminated last line raises at end of stream.
- ``max_event_size``: per block, the bytes from the block's first line (the comments
  among its fields and earlier lines' line ends included; comment lines before its
  first field are no part of it) to the end of the current line's text (its own line
  end left out) must not exceed the limit.  The unterminated last line counts too
  (the harness drains before signalling the end of stream), unless it is only the start
  of a BOM.  A leading BOM is no part of any block.  The error's offset is
  ``block_first + limit``.  The size check of a line comes before its decoding check.
- ``updates=True``: a blank line that ends a block without data, in which an ``id``
  field was taken (no NUL) or a ``retry`` field was valid, gives an ``MUpdate`` with
  the last event ID string after it and the block's retry (None if it set none),
  spanning the block's first field line to just past the blank line.  A skipped
  block gives its MSkipped only.
- Spans (the span rule): an item ends just after the line end that completes it, as
  received.  When a chunk ends with the CR of a CRLF (``cuts`` holds the stream offsets
  where chunks end), the item is handed out at that CR, so its ``end`` stops after the
  CR; the LF that follows belongs to no item.  This is the only way a span depends on
  the chunking.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass, field

# int() refuses strings of more digits than this (sys.get_int_max_str_digits()).
RETRY_MAX_DIGITS = 4300


def retry_of(value: str) -> int:
    """The reconnection time a retry value of only ASCII digits sets (not empty)."""
    significant = value.lstrip("0") or "0"
    if len(significant) > RETRY_MAX_DIGITS:
        return int("9" * RETRY_MAX_DIGITS)
    return int(significant)


REPLACEMENT = "\ufffd"


@dataclass(frozen=True)
class MEvent:
    """A dispatched event, with its span in the stream."""

    type: str
    data: str
    id: str
    retry: int | None
    start: int
    end: int


@dataclass(frozen=True)
class MComment:
    """A comment line, with its span in the stream."""

    text: str
    start: int
    end: int


@dataclass(frozen=True)
class MEnd:
    """The end of the stream."""

    partial_line: int
    partial_event: bool


@dataclass(frozen=True)
class MSkipped:
    """A block skipped by ``on_oversize="skip"``, with its span."""

    type: str
    id: str
    size: int
    start: int
    end: int


@dataclass(frozen=True)
class MUpdate:
    """A block without data that set the last event ID or the retry (updates=True)."""

    id: str
    retry: int | None
    start: int
    end: int


@dataclass(frozen=True)
class MError:
    """The error that stopped parsing: ``kind`` is ``"utf8"`` or ``"size"``."""

    kind: str
    offset: int


MItem = MEvent | MComment | MEnd | MSkipped | MUpdate


@dataclass
class ModelResult:
    """Everything the model says about one input."""

    items: list[MItem] = field(default_factory=list)
    error: MError | None = None
    last_event_id: str = ""
    retry: int | None = None


# --------------------------------------------------------------------------- decoding


@dataclass(frozen=True)
class Decoded:
    """The decoder's output: characters with the offset of their first byte."""

    chars: list[str]
    offsets: list[int]  # offsets[i] = stream offset of chars[i]'s first byte
    errors: list[int]  # stream offsets where an ill-formed sequence starts
    end: int  # stream length


def utf8_decode(stream: bytes) -> Decoded:
    """The WHATWG "UTF-8 decode": drop one leading BOM, then the "UTF-8 decoder".

    Every error yields U+FFFD (the "replacement" error mode); the caller decides whether
    an error is fatal.
    """
    chars: list[str] = []
    offsets: list[int] = []
    errors: list[int] = []
    i = 3 if stream[:3] == b"\xef\xbb\xbf" else 0

    needed = 0  # UTF-8 bytes needed
    seen = 0  # UTF-8 bytes seen
    code_point = 0
    lower, upper = 0x80, 0xBF
    seq_start = 0

    def error(at: int) -> None:
        chars.append(REPLACEMENT)
        offsets.append(at)
        errors.append(at)

    while i < len(stream):
        byte = stream[i]
        if needed == 0:
            seq_start = i
            if byte <= 0x7F:
                chars.append(chr(byte))
                offsets.append(i)
            elif 0xC2 <= byte <= 0xDF:
                needed, code_point = 1, byte & 0x1F
            elif 0xE0 <= byte <= 0xEF:
                if byte == 0xE0:
                    lower = 0xA0
                if byte == 0xED:
                    upper = 0x9F
                needed, code_point = 2, byte & 0xF
            elif 0xF0 <= byte <= 0xF4:
                if byte == 0xF0:
                    lower = 0x90
                if byte == 0xF4:
                    upper = 0x8F
                needed, code_point = 3, byte & 0x7
            else:
                error(i)
            i += 1
            continue
        if not lower <= byte <= upper:
            # Reset and report; the byte is processed again ("prepend byte to stream").
            needed = seen = code_point = 0
            lower, upper = 0x80, 0xBF
            error(seq_start)
            continue
        lower, upper = 0x80, 0xBF
        code_point = (code_point << 6) | (byte & 0x3F)
        seen += 1
        i += 1
        if seen == needed:
            chars.append(chr(code_point))
            offsets.append(seq_start)
            needed = seen = code_point = 0
    if needed:
        # End of queue with bytes still needed: one more error.
        error(seq_start)
    return Decoded(chars, offsets, errors, len(stream))


# --------------------------------------------------------------------------- lines


@dataclass(frozen=True)
class Line:
    """One line: its text (no terminator) and its byte span, terminator included."""

    text: str
    start: int
    end: int
    text_end: int  # where its line end starts (``end`` for the unterminated last line)
    complete: bool  # False for the unterminated last line


def split_lines(decoded: Decoded) -> list[Line]:
    """Cut the characters into lines at CRLF, LF or CR, one character at a time."""
    chars, offsets = decoded.chars, decoded.offsets
    lines: list[Line] = []
    current: list[str] = []
    line_start = offsets[0] if offsets else decoded.end
    i = 0
    while i < len(chars):
        char = chars[i]
        if char in "\r\n":
            terminator = 2 if char == "\r" and i + 1 < len(chars) and chars[i + 1] == "\n" else 1
            text_end = offsets[i]
            i += terminator
            end = offsets[i] if i < len(chars) else decoded.end
            lines.append(Line("".join(current), line_start, end, text_end, True))
            current = []
            line_start = end
        else:
            current.append(char)
            i += 1
    if current or line_start < decoded.end:
        # An unterminated last line (possibly just an unfinished UTF-8 sequence).
        lines.append(Line("".join(current), line_start, decoded.end, decoded.end, False))
    return lines


# --------------------------------------------------------------------------- interpreting


def interpret(
    stream: bytes,
    *,
    errors: str = "strict",
    last_event_id: str = "",
    max_event_size: int | None = None,
    cuts: Iterable[int] = (),
    on_oversize: str = "error",
    updates: bool = False,
) -> ModelResult:
    """Run the model over a whole stream; see the module docstring for the rules.

    ``cuts``: the stream offsets where the chunks it was fed in end (for the spans).
    """
    cut_at = set(cuts)
    decoded = utf8_decode(stream)
    # Strict mode: the offsets of the ill-formed sequences (a skipped block's lines are
    # not read, so the first error to count may come after one in them).
    strict_errors = decoded.errors if errors == "strict" else []
    result = ModelResult(last_event_id=last_event_id)

    data_buffer = ""
    type_buffer = ""
    id_buffer = last_event_id
    block_retry: int | None = None
    partial_line = 0
    # Where the current block's first line starts (after a leading BOM).
    block_first = 3 if stream[:3] == b"\xef\xbb\xbf" else 0
    event_start = -1  # the block's first field line
    skipping = False  # on_oversize="skip": the block passed the limit
    block_set = False  # an id field was taken, or a retry was valid, in this block

    for line in split_lines(decoded):
        # The size limit: from the block's first line to the end of this line's text.
        # (The start of a BOM that may yet complete is not a line yet: not counted.)
        bom_start = not line.complete and b"\xef\xbb\xbf".startswith(stream)
        if (
            max_event_size is not None
            and line.text_end - block_first > max_event_size
            and not bom_start
            and not skipping
        ):
            if on_oversize == "error":
                result.error = MError("size", block_first + max_event_size)
                return result
            skipping = True
            data_buffer = ""
        if skipping:
            assert max_event_size is not None
            # The rest of the block: a line longer than the limit is dropped unread;
            # of the others only event, id and retry lines are read (and decoded);
            # the blank line hands out the skipped block.
            if not line.complete:
                partial_line = line.end - line.start
                break
            name, _, value = line.text.partition(":")
            if (
                line.text
                and line.text_end - line.start <= max_event_size
                and name in ("event", "id", "retry")
            ):
                bad = _first_between(strict_errors, line.start, line.end)
                if bad is not None:
                    result.error = MError("utf8", bad)
                    return result
                value = value.removeprefix(" ")
                if name == "event":
                    type_buffer = value
                elif name == "id":
                    if "\0" not in value:
                        id_buffer = value
                elif value and all(c in "0123456789" for c in value):
                    result.retry = block_retry = retry_of(value)
            elif not line.text:
                item_end = line.end
                if line.end - line.text_end == 2 and line.text_end + 1 in cut_at:
                    item_end = line.text_end + 1
                result.last_event_id = id_buffer
                size = line.start - block_first
                result.items.append(
                    MSkipped(type_buffer or "message", id_buffer, size, block_first, item_end)
                )
                skipping = block_set = False
                type_buffer = ""
                block_retry = None
                event_start = -1
                block_first = line.end
            continue
        first_error = _first_between(strict_errors, line.start, line.end)
        if first_error is not None:
            # Reached the line that holds the first invalid byte (a complete line, or
            # the unterminated last one at end of stream).
            result.error = MError("utf8", first_error)
            return result
        if not line.complete:
            # End of stream: the unterminated last line is discarded.
            partial_line = line.end - line.start
            break

        text = line.text
        # The span rule: a CRLF whose CR ends a chunk ends the item at that CR.
        item_end = line.end
        if line.end - line.text_end == 2 and line.text_end + 1 in cut_at:
            item_end = line.text_end + 1
        if text == "":
            # Blank line: dispatch.
            result.last_event_id = id_buffer
            if data_buffer != "":
                if data_buffer.endswith("\n"):
                    data_buffer = data_buffer[:-1]
                result.items.append(
                    MEvent(
                        type_buffer or "message",
                        data_buffer,
                        result.last_event_id,
                        block_retry,
                        event_start,
                        item_end,
                    )
                )
            elif updates and block_set:
                result.items.append(
                    MUpdate(result.last_event_id, block_retry, event_start, item_end)
                )
            data_buffer = type_buffer = ""
            block_retry = None
            block_set = False
            event_start = -1
            block_first = line.end
            continue

        if text.startswith(":"):
            comment = text[1:]
            if comment.startswith(" "):
                comment = comment[1:]
            result.items.append(MComment(comment, line.start, item_end))
            if event_start < 0:
                block_first = line.end  # before the first field: no part of the block
            continue

        if event_start < 0:
            event_start = line.start
        if ":" in text:
            name = text[: text.index(":")]
            value = text[text.index(":") + 1 :]
            if value.startswith(" "):
                value = value[1:]
        else:
            name, value = text, ""

        if name == "data":
            data_buffer += value + "\n"
        elif name == "event":
            type_buffer = value
        elif name == "id":
            if "\0" not in value:
                id_buffer = value
                block_set = True
        elif name == "retry" and value and all(c in "0123456789" for c in value):
            result.retry = block_retry = retry_of(value)
            block_set = True

    # End of stream: an event without its blank line is not dispatched.
    result.items.append(MEnd(partial_line, data_buffer != "" or skipping))
    return result


def _first_between(offsets: list[int], start: int, end: int) -> int | None:
    """The first of the sorted ``offsets`` in ``[start, end)``, or None."""
    i = bisect.bisect_left(offsets, start)
    return offsets[i] if i < len(offsets) and offsets[i] < end else None
