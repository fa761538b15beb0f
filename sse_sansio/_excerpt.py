# Body excerpts: what the start of a body that is not an event stream looks like, in one
# bounded, escaped line for a log.
#
# Strategy: a wrong response may be endless, binary or hostile, and it goes into a log
# line, so describe_body() looks at the first bytes only and names what it recognises
# (an API's JSON error with its message, an HTML page with its title, gzip bytes, an
# empty body), then shows the start, decoded as UTF-8 with escapes for what is not and
# cut at ``limit`` characters.  json_message() is the JSON part on its own: the command
# line quotes it for a body that is not a stream.
#
# Part of the vocabulary every layer speaks: the response check (client layer), the
# receive core's diagnostics and the command line all describe bodies this one way.
# Invariant: standard library only, no I/O, no other sse_sansio module.

from __future__ import annotations

import re

__all__ = ["SHOWN", "describe_body", "json_message"]

# How much of a body describe_body() shows, in characters: enough for an API's error
# object, short enough for one log line.
SHOWN = 200

_GZIP_MAGIC = b"\x1f\x8b"
_TITLE = re.compile(rb"<title[^>]*>(.*?)</title", re.IGNORECASE | re.DOTALL)


def describe_body(body: bytes | bytearray | memoryview, *, limit: int = SHOWN) -> str:
    """Name what the start of a body that is not an event stream looks like.

    It tells a JSON body (quoting an API's error message: ``{"error": {"message":
    ...}}``, ``{"error": "..."}``, ``{"message": ...}``, ``{"detail": ...}``), an HTML
    page (with its title), gzip-compressed bytes and an empty body apart, and always ends
    with the start of the body, decoded as UTF-8 with escapes for what is not, and cut
    at ``limit`` characters.

    Args:
        body: The first bytes of the body (one chunk is enough).
        limit: The most characters of the body to show.

    Returns:
        One line of text for a log.  For an API's JSON error it quotes the message,
        then the start of the body, as in this line (wrapped here)::

            a JSON error: 'Invalid API key'; the body starts:
            '{"error": {"message": "Invalid API key"}}'

    """
    data = bytes(body)
    if not data:
        return "the body is empty"
    start = f"the body starts: {_shown(data, limit)}"
    if data.startswith(_GZIP_MAGIC):
        return f"the body is gzip-compressed (it starts with 1f 8b); {start}"
    stripped = data.lstrip()
    if stripped[:1] in (b"{", b"["):
        message = json_message(stripped)
        if message is not None:
            return f"a JSON error: {message!r}; {start}"
        return f"a JSON body; {start}"
    head = stripped[:1024].lower()
    if head.startswith((b"<!doctype html", b"<html")) or b"<html" in head:
        title = _TITLE.search(data[:4096])
        if title:
            name = title[1].decode("utf-8", "replace").strip()[:limit]
            return f"an HTML page titled {name!r}; {start}"
        return f"an HTML page; {start}"
    return start


def _shown(data: bytes, limit: int) -> str:
    """The start of the body as a Python literal: text if it is UTF-8, else bytes."""
    more = f"... ({len(data)} bytes read)"
    try:
        # A chunk may end inside a character: up to 3 bytes of it are not an error.
        text = _utf8_prefix(data)
    except UnicodeDecodeError:
        return repr(data[:limit]) + (more if len(data) > limit else "")
    return repr(text[:limit]) + (more if len(text) > limit else "")


def _utf8_prefix(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.reason != "unexpected end of data":
            raise
        return data[: exc.start].decode("utf-8")


def json_message(data: bytes) -> str | None:
    """An error message from a JSON body, if it parses and holds one."""
    import json  # here, for a body that is not a stream: ``import sse_sansio`` stays light

    try:
        value = json.loads(data.decode("utf-8"))
    except ValueError:  # also UnicodeDecodeError; a body cut short by the first chunk
        return None
    except RecursionError:  # nested deeper than json can go, such as 64 KiB of "["
        return None
    for key in ("error", "message", "detail", "error_description"):
        found = value.get(key) if isinstance(value, dict) else None
        if isinstance(found, dict):
            found = found.get("message", found.get("detail"))
        if isinstance(found, str):
            return found
    return None
