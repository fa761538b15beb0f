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
# response may be endless, binary or hostile, and it goes into a log line.  The same
# holds for the headers a reason quotes (a 10 MB Content-Type gives a reason of a few
# hundred characters), and headers that are not text (a None value, an int name) are a
# TypeError naming them, not an AttributeError from inside.
#
# No I/O: the caller reads the status, the headers and at most a chunk of the body.

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypeAlias

from sse_sansio._errors import ProtocolError
from sse_sansio._excerpt import describe_body

if TYPE_CHECKING:
    # For the checkers only: email.message is a quarter of what ``import sse_sansio``
    # would cost, for a name that appears in annotations alone (issue 36, item 10).
    import email.message

    Headers: TypeAlias = (
        Mapping[str, str]
        | Mapping[bytes, bytes]
        | Iterable[tuple[str | bytes, str | bytes]]
        | email.message.Message  # http.client's and urllib's HTTPMessage
    )

__all__ = ["ResponseCheck", "ResponseError", "check_response", "describe_body"]

Action = Literal["stream", "stop", "fail"]

# RFC 9110, 5.5: "optional whitespace" around a field value is SP and HTAB, and only
# those: str.strip() would also take Unicode spaces such as U+0085 and U+00A0.
_HTTP_WHITESPACE = " \t"

# How many characters of a header value a reason quotes; the rest is counted.
QUOTED_CHARS = 100


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
        # Pickled as every ProtocolError is: message, check and body kept.


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
        TypeError: ``status`` is not an int, or a header's name or value is neither
            ``str`` nor ``bytes`` (a ``None`` value, say).
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
        got = _quoted(content_type) if content_type else "none"
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
            f"the body is encoded (Content-Encoding: {_cut(encoding)}) and would reach the "
            "parser "
            "undecoded: feed decoded bytes (httpx: iter_bytes(), not iter_raw(); pass "
            "decoded=True) or send Accept-Encoding: identity",
        )
    return decide("stream", f"200 {_cut(content_type)}")


def _header(headers: Headers, name: str) -> str:
    """The named header's values joined with ``", "``, as str, or ``""``.

    Joined, not the last one: httpx.Headers.items() already joins a repeated header
    (RFC 9110, 5.3: a field sent twice is one comma-separated list), so every shape
    of headers gets the same answer only if the other shapes' pairs are joined too.
    """
    values = []
    for key, value in _pairs(headers):
        key_text = _text(key, "name", key)
        text = _text(value, "value", key)
        if key_text.lower() == name:
            values.append(text.strip(_HTTP_WHITESPACE))
    return ", ".join(values)


def _text(field: object, what: str, name: object) -> str:
    """A header's name or value as str (bytes as latin-1); TypeError for anything else."""
    if isinstance(field, str):
        return field
    if isinstance(field, bytes):
        return field.decode("latin-1")
    shown = _quoted(name) if isinstance(name, (str, bytes)) else repr(name)
    raise TypeError(
        f"check_response(): a header {what} is str or bytes, not {type(field).__name__} "
        f"(header {shown})"
    )


def _quoted(value: str | bytes) -> str:
    """``repr(value)``, but of its first QUOTED_CHARS only, the rest counted."""
    if len(value) <= QUOTED_CHARS:
        return repr(value)
    return f"{value[:QUOTED_CHARS]!r}... ({len(value) - QUOTED_CHARS} more characters)"


def _cut(value: str) -> str:
    """``value``, but its first QUOTED_CHARS only, the rest counted."""
    if len(value) <= QUOTED_CHARS:
        return value
    return f"{value[:QUOTED_CHARS]}... ({len(value) - QUOTED_CHARS} more characters)"


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
        where = f"to {_quoted(location)}" if location else "without a Location header"
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
