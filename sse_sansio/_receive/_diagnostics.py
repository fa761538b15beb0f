# The diagnostics' classifiers: what the spec tells a parser to ignore, named and worded.
#
# Spec: WHATWG HTML, "Server-sent events", section 9.2.6 "Interpreting an event stream"
# https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation
# Every input is a valid event stream: an unknown field "is ignored", a retry that is not
# all ASCII digits "is ignored", an id holding NULL "is ignored", a block without data
# dispatches nothing.  That is right for a browser and hard on a person: a transport
# wired wrongly (HTTP headers left in, chunked-encoding size lines never removed, an
# HTML error page, a body still gzip-compressed) parses as unknown fields, silently,
# with a clean end.  Connection(diagnostics=True) makes each of these visible as a
# Diagnostic item; this module decides which code applies and words the message.
#
# Strategy: pure functions of what the parser already holds, called only on the
# diagnostics path (the default parser never imports them):
# - sniff_start(head): once, on the stream's first line as bytes (after any BOM, before
#   any decoding, so that a gzip stream is named even in strict mode, where the next
#   step fails it as invalid UTF-8).  The first line alone decides; what describes a
#   body (HTML title, a JSON error's message, gzip) is describe_body()'s wording, as the
#   response check gives it.
# - field_diagnostic(field, value): for every field line other than data.
# - discarded_block(id_seen, retry_seen): at a blank line that ends a block with fields
#   but no data.
#
# Invariants: no function keeps state; every one costs at most O(len of its input) and
# quotes at most QUOTED characters of it (escaped as a Python literal: a hostile stream
# goes into a log line), so a message stays one short line whatever the stream sends.

from __future__ import annotations

import re
from typing import Final

from sse_sansio._excerpt import describe_body

from ._fields import id_value, retry_value

__all__ = ["CODES", "SNIFF_BYTES", "discarded_block", "field_diagnostic", "sniff_start"]

#: Every code a Diagnostic may carry: what the spec ignores, then the start-of-stream
#: shapes (docs/huge-input.rst lists them in this order).
CODES: Final = (
    "unknown-field",
    "invalid-retry",
    "id-with-nul",
    "discarded-block",
    "http-status-line",
    "http-header",
    "chunk-size",
    "html",
    "json",
    "gzip",
)

#: The most bytes of the stream's start that sniff_start() is given: a status line or a
#: header is far shorter, and the parser holds no more of a first line for it.
SNIFF_BYTES: Final = 512

#: The most characters of a field name or value a message quotes.
QUOTED: Final = 80

_GZIP_MAGIC: Final = b"\x1f\x8b"
# RFC 9112 2.3: HTTP-version SP 3DIGIT SP [reason-phrase]; HTTP/2 and 3 print "HTTP/2".
_STATUS_LINE: Final = re.compile(rb"HTTP/[0-9](?:\.[0-9])? [0-9]{3}(?:[ \r\n]|\Z)")
# RFC 9112 7.1: chunk-size (hex digits) [chunk-ext] CRLF.  The line must be complete:
# "1a" at the end of what has arrived may be the start of a field name.
_CHUNK_SIZE: Final = re.compile(rb"[0-9A-Fa-f]{1,16}[ \t]*(?:;[^\r\n]*)?(?:\r\n?|\n)")
# RFC 9110 5.6.2: a field name is a token.  Headers are written Title-Case
# (Content-Type, Cache-Control, Date) or, in HTTP/2, lower case with hyphens
# (content-type): so a token with a capital letter or a hyphen before the colon looks
# like a header, and a lowercase word ("foo: 1") like an unknown field.  None of the
# spec's four names (event, data, id, retry) has either; "Data" is not the data field.
_HEADER: Final = re.compile(rb"([!#$%&'*+.^_`|~0-9A-Za-z-]+):")
_HEADER_LOOK: Final = re.compile(rb"[A-Z-]")
# What bytes.strip() and describe_body() take for leading whitespace.
_WHITESPACE: Final = b" \t\n\r\x0b\x0c"


def sniff_start(head: bytes) -> tuple[str, str] | None:
    """(code, message) if the stream's first bytes look like something other than an
    event stream.  head: the bytes after any BOM, up to and including the first line
    end, at most SNIFF_BYTES (fewer at end of stream).

    The codes, checked in this order: ``"gzip"`` (the bytes 1f 8b), ``"http-status-line"``
    (``HTTP/1.1 200 OK``), ``"html"`` (``<`` first, after any whitespace), ``"json"``
    (``{`` or ``[`` first), ``"chunk-size"`` (a line of only hex digits, with an optional
    ``;extension``, that has ended), ``"http-header"`` (``Name: value`` whose name is a
    token, not one of the spec's fields, with a capital letter or a hyphen).
    """
    if head.startswith(_GZIP_MAGIC):
        return "gzip", (
            "the stream is gzip-compressed, not an event stream: decode the "
            f"Content-Encoding before the parser; {describe_body(head, limit=QUOTED)}"
        )
    if _STATUS_LINE.match(head):
        return "http-status-line", (
            f"the stream starts with an HTTP status line {_first_line(head)}: feed the "
            "response body only, without the status line and headers"
        )
    stripped = head.lstrip(_WHITESPACE)
    if stripped.startswith(b"<"):
        return "html", (
            "the stream starts like an HTML or XML document, not an event stream "
            f"(an error or login page?); {describe_body(head, limit=QUOTED)}"
        )
    if stripped.startswith((b"{", b"[")):
        return "json", (
            "the stream starts like a JSON document, not an event stream "
            f"(an API's error answer?); {describe_body(head, limit=QUOTED)}"
        )
    if _CHUNK_SIZE.fullmatch(head):
        return "chunk-size", (
            f"the stream starts with a line of hex digits {_first_line(head)}, like an HTTP "
            "chunk size: undo the chunked Transfer-Encoding before the parser"
        )
    header = _HEADER.match(head)
    if header and _HEADER_LOOK.search(header[1]):
        return "http-header", (
            f"the stream starts with what looks like an HTTP header {_first_line(head)}: "
            "feed the response body only, without the headers"
        )
    return None


def field_diagnostic(field: str, value: str) -> tuple[str, str] | None:
    """For a field line that is not data (field != "data"): "unknown-field",
    "invalid-retry" or "id-with-nul", with a message quoting (escaped, capped at 80
    characters) the name or value; None for a field the spec accepts."""
    if field == "event" or field == "data":
        return None
    if field == "id":
        if id_value(value) is not None:
            return None
        # Spec: "If the field value does not contain U+0000 NULL, then set the last
        # event ID buffer to the field value.  Otherwise, ignore the field."
        return "id-with-nul", (
            f"an id holding U+0000 (NUL) is ignored, the last event ID stays: {_quoted(value)}"
        )
    if field == "retry":
        if retry_value(value) is not None:
            return None
        # Spec: "If the field value consists of only ASCII digits, then interpret the
        # field value as an integer in base ten ...  Otherwise, ignore the field."
        why = "is empty" if not value else "is not only ASCII digits"
        return "invalid-retry", (
            f"a retry value {why}, so it is ignored and the reconnection time stays: "
            f"{_quoted(value)}"
        )
    # Spec: "Otherwise: The field is ignored."
    return "unknown-field", (
        f"an unknown field is ignored (the spec's are event, data, id and retry): {_quoted(field)}"
    )


def discarded_block(id_seen: bool, retry_seen: bool) -> tuple[str, str]:
    """The "discarded-block" diagnostic for a data-less block.

    Spec: "If the data buffer is an empty string, set the data buffer and the event type
    buffer to the empty string and return": the block dispatches no event.

    Args:
        id_seen: An id field in the block was taken (it did not hold NUL): the blank
            line still set the last event ID from it.
        retry_seen: A valid retry field in the block set the reconnection time.
    """
    kept = []
    if id_seen:
        kept.append("its id set the last event ID")
    if retry_seen:
        kept.append("its retry set the reconnection time")
    effect = " and ".join(kept) if kept else "nothing in it took effect"
    return "discarded-block", f"a block without data ends here and dispatches no event; {effect}"


def _first_line(head: bytes) -> str:
    """The first line of head without its line end: quoted as _quoted() does if it is
    UTF-8, else as a bytes literal (capped the same way)."""
    line = re.split(rb"[\r\n]", head, maxsplit=1)[0]
    try:
        return _quoted(line.decode("utf-8"))
    except UnicodeDecodeError:
        if len(line) <= QUOTED:
            return repr(line)
        return f"{line[:QUOTED]!r}... ({len(line)} bytes)"


def _quoted(text: str) -> str:
    """At most QUOTED characters of text as a Python literal, with "..." if cut."""
    if len(text) <= QUOTED:
        return repr(text)
    return f"{text[:QUOTED]!r}... ({len(text)} characters)"
