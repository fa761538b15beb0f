# The response check: is this HTTP response an event stream, and if not, why not?
#
# Spec: WHATWG HTML, "Server-sent events", 9.2.3 "Processing model", the fetch step:
# https://html.spec.whatwg.org/multipage/server-sent-events.html#sse-processing-model
#   "if res's status is not 200, or if res's `Content-Type` is not `text/event-stream`,
#   then fail the connection" (no reconnection), and the note under 9.2.5: "a client can
#   be told to stop reconnecting using the HTTP 204 No Content response code".
#
# Strategy: check_response() looks at the status and the headers only, in any shape an
# HTTP client hands them out (a mapping such as httpx.Headers or aiohttp's multidict, a
# list of pairs as h11 gives, str or bytes), and answers with a ResponseCheck: stream,
# stop (204) or fail, with a reason that names what to do.  The body of a response that
# is not a stream is the best clue to what went wrong (an API's JSON error, a login page,
# gzip bytes the client did not decode), so ResponseCheck.error() takes its first bytes
# and describe_body() names them and shows their start, escaped and bounded: a wrong
# response may be endless, binary or hostile, and it goes into a log line.
#
# No I/O: the caller reads the status, the headers and at most a chunk of the body.

from __future__ import annotations

import email.message
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from ._errors import ProtocolError

__all__ = ["ResponseCheck", "ResponseError", "check_response", "describe_body"]

# How much of a body describe_body() shows, in characters: enough for an API's error
# object, short enough for one log line.
SHOWN = 200

Headers = (
    Mapping[str, str]
    | Mapping[bytes, bytes]
    | Iterable[tuple[str | bytes, str | bytes]]
    | email.message.Message  # http.client's and urllib's HTTPMessage
)
Action = Literal["stream", "stop", "fail"]

_GZIP_MAGIC = b"\x1f\x8b"
# RFC 9110, 5.5: "optional whitespace" around a field value is SP and HTAB, and only
# those: str.strip() would also take Unicode spaces such as U+0085 and U+00A0.
_HTTP_WHITESPACE = " \t"
_TITLE = re.compile(rb"<title[^>]*>(.*?)</title", re.IGNORECASE | re.DOTALL)


class ResponseError(ProtocolError):
    """The response is not an event stream: a 204, another status, or a wrong type.

    :meth:`ResponseCheck.error` makes it, with the start of the body; the planner's
    ``events()`` raises it.  Per the standard, it ends the stream for good: do not
    reconnect.

    Attributes:
        check: The :class:`ResponseCheck` that refused the response.
        body: The first bytes of the body that were described (may be empty).
    """

    def __init__(self, check: ResponseCheck, body: bytes = b"") -> None:
        message = check.reason
        if check.action == "fail":
            message += f"; {describe_body(body)}"
        super().__init__(message)
        self.check = check
        self.body = bytes(body)

    def __reduce__(self) -> tuple[object, ...]:
        return (ResponseError, (self.check, self.body))


@dataclass(frozen=True)
class ResponseCheck:
    """What to do with a response, as :func:`check_response` decides it.

    Attributes:
        action: ``"stream"``: parse the body.  ``"stop"``: a 204 No Content, the
            server's way to say there is no stream: stop for good, not an error of the
            server's.  ``"fail"``: not an event stream; fail the connection, do not
            reconnect.
        reason: One sentence for a person: what the response was and what to do.
        status: The status code.
        content_type: The ``Content-Type`` header as sent (``""`` when absent).
        content_encoding: The ``Content-Encoding`` header as sent (``""`` when absent).
    """

    action: Action
    reason: str
    status: int
    content_type: str = ""
    content_encoding: str = ""

    @property
    def streams(self) -> bool:
        """True when the body is an event stream to parse (``action == "stream"``)."""
        return self.action == "stream"

    def error(self, body: bytes | bytearray | memoryview = b"") -> ResponseError:
        """The :class:`ResponseError` to raise for a response that does not stream.

        Args:
            body: The first bytes of the body, if read (one chunk is enough; never
                read a wrong response to its end, which may not come).  Its start is
                shown, escaped, in the message, with what it looks like.
        """
        return ResponseError(self, bytes(body))


def check_response(status: int, headers: Headers, *, decoded: bool = False) -> ResponseCheck:
    """Decide whether an HTTP response is an event stream, as the standard says.

    - 200 with ``Content-Type: text/event-stream`` (parameters such as ``charset``
      allowed, any case): ``"stream"``.
    - 204 No Content: ``"stop"``: the server has no stream for this client; do not
      reconnect.
    - Any other status, or another content type: ``"fail"``, with a reason naming the
      likely cause (a redirect not followed, credentials, the URL, a rate limit, a
      server error).
    - A ``Content-Encoding`` other than ``identity`` on an otherwise good response:
      ``"fail"``, unless ``decoded`` says the HTTP client undoes it: the parser would
      read compressed bytes.

    Args:
        status: The response's status code.
        headers: The response headers: a mapping (``httpx.Headers``, aiohttp's
            ``CIMultiDictProxy``, a ``dict``), ``http.client``'s and urllib's
            ``HTTPMessage``, or an iterable of ``(name, value)`` pairs (h11's), names
            and values ``str`` or ``bytes`` (latin-1).  Names are matched without
            regard to case; values lose their HTTP whitespace (spaces and tabs, nothing
            else).  A header sent more than once counts as its values joined with
            ``", "``, whatever the shape, and of a ``Content-Type`` list the last
            member decides, as Fetch's "extract a MIME type" does.
        decoded: True when the body you will feed is already decoded from its
            Content-Encoding (httpx's ``iter_bytes()``, aiohttp by default); False for
            raw bytes (httpx's ``iter_raw()``, h11, a socket).

    Returns:
        A :class:`ResponseCheck`.

    Raises:
        TypeError: ``status`` is not an int.
    """
    if isinstance(status, bool) or not isinstance(status, int):
        raise TypeError(f"status must be an int, not {type(status).__name__}")
    content_type = _header(headers, "content-type")
    encoding = _header(headers, "content-encoding")
    location = _header(headers, "location")
    essence = content_type.rpartition(",")[2].partition(";")[0].strip(_HTTP_WHITESPACE).lower()

    def decide(action: Action, reason: str) -> ResponseCheck:
        return ResponseCheck(action, reason, status, content_type, encoding)

    if status == 204:
        return decide("stop", "204 No Content: the server has no stream for us; do not reconnect")
    if status != 200:
        got = _status_reason(status, location)
        return decide("fail", f"expected 200 text/event-stream, got {got}")
    if essence != "text/event-stream":
        got = repr(content_type) if content_type else "none"
        return decide(
            "fail",
            f"expected Content-Type text/event-stream, got {got}: not an event stream "
            "(a wrong URL, a login page, a proxy's error page?)",
        )
    codings = [c.strip(_HTTP_WHITESPACE).lower() for c in encoding.split(",")]
    codings = [c for c in codings if c]
    if not decoded and any(c != "identity" for c in codings):
        return decide(
            "fail",
            f"the body is encoded (Content-Encoding: {encoding}) and would reach the parser "
            "undecoded: feed decoded bytes (httpx: iter_bytes(), not iter_raw(); pass "
            "decoded=True) or send Accept-Encoding: identity",
        )
    return decide("stream", f"200 {content_type}")


def _header(headers: Headers, name: str) -> str:
    """The named header's values joined with ``", "``, as str, or ``""``.

    Joined, not the last one: httpx.Headers.items() already joins a repeated header
    (RFC 9110, 5.3: a field sent twice is one comma-separated list), so every shape
    of headers gets the same answer only if the other shapes' pairs are joined too.
    """
    values = []
    for key, value in _pairs(headers):
        key_text = key.decode("latin-1") if isinstance(key, bytes) else key
        if key_text.lower() == name:
            text = value.decode("latin-1") if isinstance(value, bytes) else value
            values.append(text.strip(_HTTP_WHITESPACE))
    return ", ".join(values)


def _pairs(headers: Headers) -> Iterable[tuple[str | bytes, str | bytes]]:
    """(name, value) pairs of any shape of headers, a repeated header once per value."""
    multi_items = getattr(headers, "multi_items", None)  # httpx.Headers: unjoined pairs
    if callable(multi_items):
        return multi_items()  # type: ignore[no-any-return]
    items = getattr(headers, "items", None)  # a Mapping, a multidict, an HTTPMessage
    if callable(items):
        return items()  # type: ignore[no-any-return]
    return headers  # type: ignore[return-value]


def _status_reason(status: int, location: str) -> str:
    """The status with what it usually means for a stream request."""
    if 300 <= status < 400:
        where = f"to {location!r}" if location else "without a Location header"
        return f"{status}, a redirect {where} that was not followed (follow redirects?)"
    hints = {
        401: "unauthorized: check the credentials (API key, token)",
        403: "forbidden: check the credentials and their permissions",
        404: "not found: check the URL",
        405: "method not allowed: check the HTTP method",
        406: "not acceptable: send Accept: text/event-stream",
        408: "request timeout",
        429: "too many requests: rate limited, slow down",
    }
    if status in hints:
        return f"{status} {hints[status]}"
    if 500 <= status < 600:
        return f"{status}, a server error"
    if 200 <= status < 300:
        return f"{status}, not 200"
    return str(status)


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
        message = _json_message(stripped)
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


def _json_message(data: bytes) -> str | None:
    """An error message from a JSON body, if it parses and holds one."""
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
