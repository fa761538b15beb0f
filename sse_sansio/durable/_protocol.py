"""The Durable Streams protocol as decisions: a request in, a response (or a live read) out.

Strategy: :class:`DurableStreams` holds a :class:`~sse_sansio.durable.Store` and no
socket, task or clock.  :meth:`DurableStreams.handle` takes a :class:`Request` (method,
path, headers, query, body) and the caller's time, and returns a :class:`Response`
(status, headers, body) or a :class:`LiveRead`: a long-poll or SSE read the caller holds
open.  For a live read the caller asks again (:meth:`DurableStreams.poll` for
long-poll, :meth:`DurableStreams.sse_step` for SSE) when the stream changes (a
:class:`Response` names the path it changed in ``changed``) or the read's deadline
comes; nothing here waits.  An append is one store step (``Store.append`` checks
the stream and writes, atomically): the request is judged on its own first, and only
a request refused on its own or a stream past its deadline reads the stream before,
so that the answer keeps section 5.2's precedence (``DurableStreams._post``).
:meth:`DurableStreams.append` is the same append for a producer in this process, with
the request's parts as values and the tail or :class:`AppendRefused` as the answer;
the plainest append of either kind first goes to the store's optional
``append_bytes``, which writes it only when the stream surely takes it.

Invariants:

- the clock is the caller's, in seconds since the Unix epoch (``Stream-Expires-At`` is
  a wall-clock time): TTLs, expiry and long-poll deadlines are all read from ``now``;
- offsets are ``encode_offset(position)``: fixed-width decimal, so text order is stream
  order, and neither sentinel (``-1``, ``now``) is ever minted;
- every response carries the browser security headers of PROTOCOL.md 12.7 and the CORS
  headers a browser client needs to read the protocol's own headers;
- a catch-up read returns at most ``max_read_bytes`` (at least one unit), so memory per
  response is bounded; ``Stream-Up-To-Date`` only when the tail was reached.

The section of PROTOCOL.md each rule comes from is named beside it.
"""

from __future__ import annotations

import base64
import json
import random
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, NamedTuple
from urllib.parse import parse_qs

from ._store import (
    MAX_POSITION,
    MEDIA_TYPES,
    OFFSET_FORMAT,
    AppendOutcome,
    AppendPlan,
    MemoryStore,
    Store,
    StreamMeta,
    decode_offset,
    encode_offset,
    media_type,
    new_sid,
    new_tuple,
)

__all__ = ["AppendRefused", "DurableStreams", "LiveRead", "Request", "Response", "SseEnd"]

Headers = list[tuple[str, str]]
#: How an SSE read ends (DurableStreams.sse_step).
SseEnd = Literal["closed", "lifetime", "gone"]

#: Section 5.2.1: producer epochs and seqs are at most 2^53 - 1.
_MAX_INT = 2**53 - 1
#: Section 5.1: "a non-negative integer in decimal notation without leading zeros".
_DECIMAL = re.compile(r"0|[1-9][0-9]*")
_DIGITS = re.compile(r"[0-9]+")
#: RFC 3339 date-time (section 5.1, Stream-Expires-At).
_RFC3339 = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?"
    r"([Zz]|[+-][0-9]{2}:[0-9]{2})"
)
#: Section 10.1: cursors count 20-second intervals from 2024-10-09T00:00:00Z.
CURSOR_EPOCH = 1728432000.0
CURSOR_INTERVAL = 20.0

_EXPOSED = ", ".join(
    [
        "Stream-Next-Offset",
        "Stream-Cursor",
        "Stream-Up-To-Date",
        "Stream-Closed",
        "Stream-TTL",
        "Stream-Expires-At",
        "Stream-Sse-Data-Encoding",
        "Producer-Epoch",
        "Producer-Seq",
        "Producer-Expected-Seq",
        "Producer-Received-Seq",
        "ETag",
        "Location",
        "Content-Type",
    ]
)
_ALLOWED_HEADERS = ", ".join(
    [
        "Content-Type",
        "Authorization",
        "If-None-Match",
        "Last-Event-ID",
        "Stream-Seq",
        "Stream-TTL",
        "Stream-Expires-At",
        "Stream-Closed",
        "Stream-Forked-From",
        "Stream-Fork-Offset",
        "Stream-Fork-Sub-Offset",
        "Producer-Id",
        "Producer-Epoch",
        "Producer-Seq",
    ]
)
#: Sent on every response (section 12.7, and CORS so browsers can read our headers).
_COMMON: Headers = [
    ("x-content-type-options", "nosniff"),
    ("cross-origin-resource-policy", "cross-origin"),
    ("access-control-allow-origin", "*"),
    ("access-control-expose-headers", _EXPOSED),
]
_CACHEABLE = "public, max-age=60, stale-while-revalidate=300"


class Request(NamedTuple):
    """One HTTP request, as an adapter read it.

    ``path`` is the URL path (a stream's name is its whole path); ``headers`` are
    ``(name, value)`` pairs in any case; ``query`` is the raw query string; ``origin``
    (``http://host:port``) makes the ``Location`` of a 201 absolute.  (A named tuple:
    one is made per request, and a tuple is the cheapest immutable value to make.)
    """

    method: str
    path: str
    headers: Iterable[tuple[str, str]] = ()
    query: str = ""
    body: bytes = b""
    origin: str = ""


@dataclass(slots=True)
class Response:
    """What to answer: ``status``, ``headers`` (lower-case names), ``body``.

    ``changed`` names the stream path this request changed (appended, closed, deleted):
    wake that path's live readers.
    """

    status: int
    headers: Headers
    body: bytes = b""
    changed: str | None = None

    def header(self, name: str) -> str | None:
        """The first value of header ``name`` (lower case), or None."""
        for key, value in self.headers:
            if key == name:
                return value
        return None


@dataclass
class LiveRead:
    """A read to hold open: a long-poll (answer when data comes or at ``deadline``) or
    an SSE stream (send :meth:`DurableStreams.sse_step`'s events until it says done;
    close the connection at ``deadline``, section 10.2).

    ``position`` moves on as data is handed out; ``headers`` are the SSE response's.
    """

    mode: Literal["long-poll", "sse"]
    path: str
    position: int
    deadline: float
    cursor: str | None
    headers: Headers = field(default_factory=list)
    encoding: Literal["json", "text", "base64"] = "text"
    started: bool = False
    #: SSE: more data is there already (sse_step handed out one event of it).
    behind: bool = False


class _Bad(Exception):
    """A request the protocol answers with ``status`` (raised inside handle() only)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class AppendRefused(Exception):
    """An in-process append (:meth:`DurableStreams.append`) refused, as a ``POST`` of
    it would be: ``status`` is that POST's status, the message says what and where.

    ``outcome`` is the store's answer when the store refused it (its ``verdict``:
    "closed", "content-type", "seq-gap", ...; the current epoch of a "stale-epoch",
    the expected seq of a "seq-gap"), None when the append was refused on its own (a
    400: neither data nor a close, a producer out of range, JSON that is not JSON) or
    the stream was missing or deleted before a plan was made (404, 410).
    """

    def __init__(self, status: int, message: str, outcome: AppendOutcome | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.outcome = outcome


class DurableStreams:
    """The Durable Streams protocol over ``store``, sans-I/O (the module says how).

    Args:
        store: Where streams live (a :class:`~sse_sansio.durable.MemoryStore` if None).
        long_poll_timeout: Seconds a long-poll waits for data before its 204 (> 0).
        sse_lifetime: Seconds after which an SSE response is closed so that CDNs can
            collapse (section 10.2; > 0).
        max_read_bytes: The most bytes one catch-up response (or one SSE data event)
            carries (>= 1); a larger stream is read in several.
        public: ``Cache-Control: public`` on catch-up reads (section 10.1); False for
            ``private``, for streams with user-specific data.
        rng: The random source of the cursor's jitter (section 10.1).
    """

    def __init__(
        self,
        store: Store | None = None,
        *,
        long_poll_timeout: float = 30.0,
        sse_lifetime: float = 60.0,
        max_read_bytes: int = 1 << 20,
        public: bool = True,
        rng: random.Random | None = None,
    ) -> None:
        if not long_poll_timeout > 0 or not sse_lifetime > 0:
            raise ValueError("long_poll_timeout and sse_lifetime must be > 0 seconds")
        if max_read_bytes < 1:
            raise ValueError(f"max_read_bytes must be >= 1, not {max_read_bytes}")
        self._store: Store = MemoryStore() if store is None else store
        #: The store's shortcut for the plainest append, if it has one (Store says).
        self._append_bytes: Callable[[str, bytes, str | None, float], int | None] | None = getattr(
            self._store, "append_bytes", None
        )
        self.long_poll_timeout = long_poll_timeout
        self.sse_lifetime = sse_lifetime
        self.max_read_bytes = max_read_bytes
        self._cache = _CACHEABLE if public else _CACHEABLE.replace("public", "private")
        self._rng = random.Random() if rng is None else rng

    @property
    def store(self) -> Store:
        """Where the streams live (fixed at construction)."""
        return self._store

    # -- the entry point -------------------------------------------------------------

    def handle(self, request: Request, now: float) -> Response | LiveRead:
        """Decide ``request`` at time ``now`` (seconds since the Unix epoch)."""
        headers = {name.lower(): value for name, value in request.headers}
        method = request.method
        try:
            if method == "POST":  # appends are the hot path: no upper() for them
                return self._post(request.path, headers, request.body, now)
            method = method.upper()
            if method == "GET":
                return self._get(request.path, headers, _query(request.query), now)
            if method == "POST":
                return self._post(request.path, headers, request.body, now)
            if method == "PUT":
                response = self._put(request.path, headers, request.body, now)
                if response.status == 201:  # section 5.1: Location SHOULD be sent
                    response.headers.append(("location", request.origin + request.path))
                return response
            if method == "HEAD":
                return self._head(request.path, now)
            if method == "DELETE":
                return self._delete(request.path, now)
            if method == "OPTIONS":
                return _preflight()
            raise _Bad(405, f"method {request.method} is not part of the protocol")
        except _Bad as bad:
            return _error(bad.status, str(bad))

    # -- the in-process producer ------------------------------------------------------

    def append(
        self,
        path: str,
        data: bytes,
        now: float,
        content_type: str | None = None,
        close: bool = False,
        producer: tuple[str, int, int] | None = None,
        stream_seq: str | None = None,
    ) -> int:
        """Append ``data`` to the stream at ``path`` at time ``now``, from this process:
        what a ``POST`` of it does (section 5.2), without a request or a response.

        Args:
            content_type: The data's ``Content-Type``; None: the stream's own.  A JSON
                stream's data is split into its messages as a POST's body is (9.1).
            close: Close the stream with this append (``Stream-Closed: true``); ``data``
                may then be empty.
            producer: ``(id, epoch, seq)``, the idempotent producer's headers (5.2.1):
                a retry lands once.
            stream_seq: The ``Stream-Seq`` header (bytewise greater each time).

        Returns the stream's tail after the call, a position: ``encode_offset(tail)`` is
        the offset the POST's ``Stream-Next-Offset`` names (formatted only if asked
        for).  A producer's duplicate and a repeated close change nothing and return
        the tail too.  Raises :class:`AppendRefused` with the POST's status when it
        would be refused (404, 409, 410, 403, 400), with section 5.2's precedence; a
        stream found past its deadline is removed (404).  A sliding TTL moves on as
        with a POST.  An append that returns changed ``path`` as the POST's
        ``Response.changed`` would say: its readers are to be woken.  A store with
        ``subscribe`` (:class:`MemoryStore`, the Redis store) tells its subscribers
        itself, and the ASGI app subscribes.  The plainest append (data and nothing
        else) is one call of the store's ``append_bytes`` when it has one: no plan and
        no outcome made.
        """
        fast = self._append_bytes
        if fast is not None and data and not close and producer is None and stream_seq is None:
            media = content_type and (MEDIA_TYPES.get(content_type) or media_type(content_type))
            tail = fast(path, data, media, now)
            if tail is not None:
                return tail
        return self._append_planned(path, data, now, content_type, close, producer, stream_seq)

    def _append_planned(
        self,
        path: str,
        data: bytes,
        now: float,
        content_type: str | None,
        close: bool,
        producer: tuple[str, int, int] | None,
        stream_seq: str | None,
    ) -> int:
        """:meth:`append` through a plan: ``_post``'s two paths, with the request's
        parts given as values (the stream read first only for a plan refused on its
        own, an expired stream, or the stream's own type to look up)."""
        plan: AppendPlan | None = None
        if content_type is not None:
            try:
                plan = _given_plan(data, media_type(content_type), close, stream_seq, producer, now)
            except _Bad:
                plan = None  # refused on its own: the checked path answers
        if plan is not None:
            outcome = self._store.append(path, plan)
            if outcome.verdict != "expired":
                return _appended(path, outcome)
        try:
            meta = self._existing(path, now)
            media = media_type(meta.content_type if content_type is None else content_type)
            parse_json = meta.json and not meta.closed
            plan = _given_plan(data, media, close, stream_seq, producer, now, parse_json)
        except _Bad as bad:
            raise AppendRefused(bad.status, f"append to {path} refused: {bad}") from None
        return _appended(path, self._store.append(path, plan))

    # -- live reads ------------------------------------------------------------------

    def poll(self, live: LiveRead, now: float) -> Response | None:
        """A long-poll's answer at ``now``, or None to keep waiting (section 5.7)."""
        meta = self._meta(live.path, now)
        if meta is None or meta.soft_deleted:
            return _error(404 if meta is None else 410, "the stream is gone")
        if live.position < meta.tail:
            return self._read(meta, live.position, None, now, live_cursor=live.cursor)
        if meta.closed or now >= live.deadline:
            return self._caught_up(meta, live.cursor, status=204)
        return None

    def sse_step(self, live: LiveRead, now: float) -> tuple[list[bytes], SseEnd | None]:
        """The SSE frames due at ``now`` for ``live``, and how the stream ends, if it does.

        Section 5.8: each data event is followed by a control event carrying the next
        offset, the cursor while the stream is open, ``upToDate`` at the tail and
        ``streamClosed`` once a closed stream's last byte went; the first step sends a
        control event even without data.  A step hands out one data event at most
        (``max_read_bytes``); while ``live.behind`` is true, ask again at once.  The
        end: "closed" (the stream's EOF was
        sent), "lifetime" (past ``deadline``: the client reconnects from the last
        offset; section 10.2), "gone" (deleted or expired under the reader: a cut, so
        the client knows it did not get an end), or None to go on.
        """
        meta = self._meta(live.path, now)
        if meta is None or meta.soft_deleted:
            return [], "gone"
        events: list[bytes] = []
        if live.position < meta.tail:  # one data event a step: memory stays bounded
            units, position = self._gather(meta, live.position, meta.tail, self.max_read_bytes)
            live.position = position
            events.append(_frame("data", self._sse_data(live, units)))
            events.append(self._control(meta, live))
        live.behind = live.position < meta.tail
        closed = meta.closed and not live.behind
        if not events and (closed or not live.started):  # a close without data comes too
            events.append(self._control(meta, live))
        live.started = True
        if closed:
            return events, "closed"
        return events, "lifetime" if now >= live.deadline and not live.behind else None

    def _control(self, meta: StreamMeta, live: LiveRead) -> bytes:
        offset = encode_offset(live.position)
        control: dict[str, object] = {"streamNextOffset": offset}
        at_tail = live.position >= meta.tail
        if meta.closed and at_tail:
            control["streamClosed"] = True
        else:
            control["streamCursor"] = live.cursor
        if at_tail:
            control["upToDate"] = True
        # The ID is the offset too: a plain EventSource resumes with Last-Event-ID.
        return _frame("control", json.dumps(control, separators=(",", ":")), offset)

    @staticmethod
    def _sse_data(live: LiveRead, units: list[bytes]) -> str:
        if live.encoding == "json":
            return "[" + ",".join(unit.decode("utf-8") for unit in units) + "]"
        raw = b"".join(units)
        if live.encoding == "base64":
            return base64.b64encode(raw).decode("ascii")
        return raw.decode("utf-8", "replace")

    # -- methods ---------------------------------------------------------------------

    def _meta(self, path: str, now: float) -> StreamMeta | None:
        """The stream at ``path``, after removing it if it expired (section 4)."""
        meta = self._store.meta(path)
        expired = meta is not None and meta.deadline is not None and now >= meta.deadline
        if expired and meta is not None and not meta.soft_deleted:
            self._store.delete(path)
            meta = self._store.meta(path)
        return meta

    def _existing(self, path: str, now: float) -> StreamMeta:
        meta = self._meta(path, now)
        if meta is None:
            raise _Bad(404, f"no stream at {path}")
        if meta.soft_deleted:
            raise _Bad(410, f"the stream at {path} was deleted")
        return meta

    def _touch(self, meta: StreamMeta, now: float) -> None:
        """Section 5.1: each read or write moves a sliding TTL on (HEAD does not)."""
        if meta.ttl is not None:
            meta.deadline = now + meta.ttl
            self._store.touch(meta.path, meta.deadline)

    def _head(self, path: str, now: float) -> Response:
        meta = self._existing(path, now)
        headers = _meta_headers(meta)
        headers.append(("cache-control", "no-store"))  # section 5.5
        return Response(200, headers)

    def _delete(self, path: str, now: float) -> Response:
        self._meta(path, now)
        verdict = self._store.delete(path)
        if verdict == "missing":
            raise _Bad(404, f"no stream at {path}")
        if verdict == "gone":
            raise _Bad(410, f"the stream at {path} was deleted")
        return Response(204, list(_COMMON), changed=path)

    def _put(self, path: str, headers: Mapping[str, str], body: bytes, now: float) -> Response:
        closed = _is_true(headers.get("stream-closed"))
        ttl, expires_at, deadline = _expiry(headers, now)
        source_path = headers.get("stream-forked-from")
        if source_path is None and (
            "stream-fork-offset" in headers or "stream-fork-sub-offset" in headers
        ):
            raise _Bad(400, "Stream-Fork-Offset needs Stream-Forked-From")
        content_type = headers.get("content-type")
        fork: tuple[StreamMeta, int, int] | None = None
        if source_path is not None:
            fork = self._fork_point(source_path, headers, now)
            source = fork[0]
            if content_type is None:
                content_type = source.content_type
            elif media_type(content_type) != media_type(source.content_type):
                raise _Bad(409, "a fork's Content-Type must match its source's")
            if ttl is None and expires_at is None:  # section 4.2's table
                ttl, expires_at = source.ttl, source.expires_at
                deadline = source.deadline if ttl is None else now + ttl
        if content_type is None:
            content_type = "application/octet-stream"
        is_json = media_type(content_type) == "application/json"
        units = _units(body, is_json, allow_empty=True) if body else []
        config = _config(content_type, ttl, expires_at, fork)
        existing = self._meta(path, now)
        if existing is None:
            meta = StreamMeta(
                path=path,
                sid=new_sid(),
                content_type=content_type,
                json=is_json,
                closed=closed,
                ttl=ttl,
                expires_at=expires_at,
                deadline=deadline,
                config=config,
            )
            if fork is not None:
                meta.fork_source = fork[0].path
                meta.fork_position = fork[1] + fork[2]
            existing = self._store.create(meta, units)
            if existing is None:
                created = self._store.meta(path)
                assert created is not None
                return Response(201, _meta_headers(created), changed=path)
        if existing.soft_deleted:
            raise _Bad(409, f"the stream at {path} was deleted; its path is not reused")
        if existing.config != config or existing.closed != closed:  # section 5.1
            raise _Bad(409, f"a stream exists at {path} with another configuration")
        self._touch(existing, now)
        return Response(200, _meta_headers(existing))

    def _fork_point(
        self, source_path: str, headers: Mapping[str, str], now: float
    ) -> tuple[StreamMeta, int, int]:
        """Section 4.2: the source, the fork offset's position and the sub-offset."""
        source = self._meta(source_path, now)
        if source is None:
            raise _Bad(404, f"no stream at {source_path} to fork")
        if source.soft_deleted:
            raise _Bad(409, f"the stream at {source_path} was deleted")
        raw = headers.get("stream-fork-offset")
        # _offset() refuses an offset past the tail: 400, as section 5.1 asks.
        position = source.tail if raw is None else _offset(raw, source.tail)
        sub_raw = headers.get("stream-fork-sub-offset", "0")
        if not _DECIMAL.fullmatch(sub_raw):
            raise _Bad(400, f"Stream-Fork-Sub-Offset must be a non-negative integer: {sub_raw!r}")
        sub = int(sub_raw)
        if sub and position + sub > self._boundary(source, position):
            raise _Bad(400, "Stream-Fork-Sub-Offset passes the next data boundary")
        return source, position, sub

    def _boundary(self, meta: StreamMeta, position: int) -> int:
        while position < meta.fork_position:
            assert meta.fork_source is not None
            source = self._store.meta(meta.fork_source)
            assert source is not None
            return min(self._boundary(source, position), meta.fork_position)
        return self._store.boundary(meta.path, position)

    def _post(self, path: str, headers: Mapping[str, str], body: bytes, now: float) -> Response:
        """Section 5.2: an append, in one store step when the request is whole on its own.

        The plainest append (a body and its type, no option) goes to the store's
        ``append_bytes`` first, when it has one: written at once if the stream surely
        takes it.  Otherwise, optimistic: the plan is made from the request without
        reading the stream (a body typed JSON is parsed as a JSON stream's messages),
        and the store's one atomic step judges it against the stream (missing, gone,
        closed, type, producer, ``Stream-Seq``).  A request refused on its own (a 400)
        and a stream found past its deadline take the checked path instead, which reads
        the stream first and so keeps the precedence of 404, 410 and 409 over 400 and
        removes an expired stream.
        """
        fast = self._append_bytes
        if fast is not None and body and _OPTIONS.isdisjoint(headers):
            content_type = headers.get("content-type")
            if content_type is not None:  # the plainest append: the store's shortcut
                media = MEDIA_TYPES.get(content_type) or media_type(content_type)
                tail = fast(path, body, media, now)
                if tail is not None:
                    headers_out = [*_COMMON, ("stream-next-offset", OFFSET_FORMAT % tail)]
                    return Response(204, headers_out, b"", path)
        try:
            plan = _plan(headers, body, now, True)
        except _Bad:
            return self._post_checked(path, headers, body, now)
        outcome = self._store.append(path, plan)
        if outcome.verdict == "expired":
            return self._post_checked(path, headers, body, now)
        return _append_response(path, outcome, plan.producer, bool(plan.units))

    # -- an append in two halves, for a caller that runs the store step itself -----------

    def append_plan(self, request: Request, now: float) -> AppendPlan | None:
        """The first half of :meth:`handle` for a ``POST``: its plan, made from the
        request alone, for the caller to hand to the store's append (an awaited one, on
        an event loop); then :meth:`append_response`.  None when the request is refused
        on its own: :meth:`handle` answers it (after reading the stream, section 5.2's
        precedence)."""
        headers = {name.lower(): value for name, value in request.headers}
        try:
            return _plan(headers, request.body, now, True)
        except _Bad:
            return None

    def append_response(
        self, path: str, plan: AppendPlan, outcome: AppendOutcome
    ) -> Response | None:
        """The second half: the store's ``outcome`` of ``plan`` as the response.  None
        when the stream was past its deadline: :meth:`handle` removes it and answers."""
        if outcome.verdict == "expired":
            return None
        return _append_response(path, outcome, plan.producer, bool(plan.units))

    def _post_checked(
        self, path: str, headers: Mapping[str, str], body: bytes, now: float
    ) -> Response:
        meta = self._existing(path, now)
        # Section 5.2's precedence: a closed stream or another type is a 409 before the
        # body is looked at.
        plan = _plan(headers, body, now, meta.json and not meta.closed)
        outcome = self._store.append(path, plan)
        return _append_response(path, outcome, plan.producer, bool(plan.units))

    def _get(
        self, path: str, headers: Mapping[str, str], query: dict[str, str], now: float
    ) -> Response | LiveRead:
        meta = self._existing(path, now)
        live = query.get("live")
        if live not in (None, "long-poll", "sse"):
            raise _Bad(400, f"live must be long-poll or sse, not {live!r}")
        raw = query.get("offset")
        if raw is None:
            if live is not None:  # section 5.7, 5.8: the offset is required
                raise _Bad(400, "a live read needs an offset")
            raw = "-1"
        if live == "sse" and raw == "-1" and "last-event-id" in headers:
            raw = headers["last-event-id"]  # our extension: EventSource's resumption
        position = _offset(raw, meta.tail)
        self._touch(meta, now)
        if live is None:
            if raw == "now":
                return self._caught_up(meta, None, status=200)
            return self._read(meta, position, headers.get("if-none-match"), now)
        cursor = self._cursor(query.get("cursor"), now)
        if live == "sse":
            return self._sse(meta, position, cursor, now)
        if position < meta.tail and raw != "now":
            return self._read(meta, position, None, now, live_cursor=cursor)
        if meta.closed:
            return self._caught_up(meta, None, status=204)
        return LiveRead("long-poll", path, meta.tail, now + self.long_poll_timeout, cursor)

    def _sse(self, meta: StreamMeta, position: int, cursor: str, now: float) -> LiveRead:
        media = media_type(meta.content_type)
        headers = [
            *_COMMON,
            ("content-type", "text/event-stream"),
            ("cache-control", "no-cache"),
        ]
        encoding: Literal["json", "text", "base64"] = "text"
        if meta.json:
            encoding = "json"
        elif not media.startswith("text/"):  # section 5.8: binary streams go as base64
            encoding = "base64"
            headers.append(("stream-sse-data-encoding", "base64"))
        live = LiveRead("sse", meta.path, position, now + self.sse_lifetime, cursor, headers)
        live.encoding = encoding
        return live

    def _cursor(self, given: str | None, now: float) -> str:
        """Section 10.1: the interval number, never at or below the client's cursor."""
        interval = int((now - CURSOR_EPOCH) // CURSOR_INTERVAL)
        if given is not None and _DIGITS.fullmatch(given) and int(given) >= interval:
            jitter = self._rng.randint(1, 3600)
            interval = int(given) + max(1, -(-jitter // int(CURSOR_INTERVAL)))
        return str(interval)

    # -- reads -----------------------------------------------------------------------

    def _gather(
        self, meta: StreamMeta, start: int, stop: int, budget: int
    ) -> tuple[list[bytes], int]:
        """Units from ``start`` towards ``stop`` (a fork's inherited ones first), at most
        ``budget`` bytes past the first unit; and the position reached."""
        units: list[bytes] = []
        position = start
        if position < meta.fork_position:
            assert meta.fork_source is not None
            source = self._store.meta(meta.fork_source)
            assert source is not None
            units, position = self._gather(source, start, min(stop, meta.fork_position), budget)
            budget -= sum(len(unit) for unit in units)
        if position >= meta.fork_position and position < stop and (budget > 0 or not units):
            own = self._store.read(meta.path, position, stop, budget)
            units += own
            position += len(own) if meta.json else sum(len(unit) for unit in own)
        return units, position

    def _read(
        self,
        meta: StreamMeta,
        start: int,
        if_none_match: str | None,
        now: float,
        *,
        live_cursor: str | None = None,
    ) -> Response:
        """A catch-up read (section 5.6), or a long-poll's answer with data (5.7)."""
        units, position = self._gather(meta, start, meta.tail, self.max_read_bytes)
        at_tail = position >= meta.tail
        closed = meta.closed and at_tail
        etag = (
            f'"{meta.sid}:{encode_offset(start)}:{encode_offset(position)}{":c" if closed else ""}"'
        )
        headers = [*_COMMON, ("etag", etag)]
        if if_none_match is not None and etag in _etags(if_none_match):
            return Response(304, headers)  # section 10.1
        headers += [
            ("content-type", meta.content_type),
            ("stream-next-offset", encode_offset(position)),
            ("cache-control", self._cache),
        ]
        if at_tail:
            headers.append(("stream-up-to-date", "true"))
        if closed:
            headers.append(("stream-closed", "true"))
        elif live_cursor is not None:
            headers.append(("stream-cursor", live_cursor))
        body = b"[" + b",".join(units) + b"]" if meta.json else b"".join(units)
        return Response(200, headers, body)

    def _caught_up(self, meta: StreamMeta, cursor: str | None, *, status: int) -> Response:
        """At the tail: offset=now (200, section 8) or a long-poll's 204 (5.7); neither
        is cached (the tail moves)."""
        headers = [
            *_COMMON,
            ("content-type", meta.content_type),
            ("stream-next-offset", encode_offset(meta.tail)),
            ("stream-up-to-date", "true"),
        ]
        headers.append(("cache-control", "no-store"))
        if meta.closed:
            headers.append(("stream-closed", "true"))
        elif cursor is not None:
            headers.append(("stream-cursor", cursor))
        body = b"[]" if meta.json and status == 200 else b""
        return Response(status, headers, body)


_LINES = re.compile(r"\r\n|\r|\n")


def _frame(kind: str, data: str, event_id: str | None = None) -> bytes:
    """One SSE event, written as the suite reads it: ``data:`` with no space after the
    colon (a space would be stripped by any parser; the conformance suite looks for the
    text as the reference server writes it), the ID after the data."""
    lines = "".join(f"data:{line}\n" for line in _LINES.split(data))
    tail = "" if event_id is None else f"id:{event_id}\n"
    return f"event: {kind}\n{lines}{tail}\n".encode()


# -- request parsing ---------------------------------------------------------------------


def _query(raw: str) -> dict[str, str]:
    query: dict[str, str] = {}
    for name, values in parse_qs(raw, keep_blank_values=True).items():
        if len(values) > 1:
            raise _Bad(400, f"query parameter {name} given {len(values)} times")
        query[name] = values[0]
    return query


def _offset(raw: str, tail: int) -> int:
    """Section 8: ``-1`` is the start, ``now`` the tail, anything else one of ours."""
    if raw == "-1":
        return 0
    if raw == "now":
        return tail
    position = decode_offset(raw)
    if position is None:
        raise _Bad(400, f"malformed offset {raw!r}")
    if position > tail:
        raise _Bad(400, f"offset {raw!r} is past the stream's tail")
    return position


def _is_true(value: str | None) -> bool:
    """Section 4.1: only ``true`` (any case) counts; any other value is no header."""
    return value is not None and value.strip().lower() == "true"


def _expiry(headers: Mapping[str, str], now: float) -> tuple[int | None, str | None, float | None]:
    """Section 5.1: ``(ttl, expires_at, deadline)`` from Stream-TTL / Stream-Expires-At."""
    ttl_raw = headers.get("stream-ttl")
    expires_raw = headers.get("stream-expires-at")
    if ttl_raw is not None and expires_raw is not None:
        raise _Bad(400, "Stream-TTL and Stream-Expires-At exclude each other")
    if ttl_raw is not None:
        if not _DECIMAL.fullmatch(ttl_raw) or int(ttl_raw) > MAX_POSITION:
            raise _Bad(400, f"Stream-TTL must be whole seconds in plain decimal: {ttl_raw!r}")
        ttl = int(ttl_raw)
        return ttl, None, now + ttl
    if expires_raw is not None:
        return None, expires_raw, _timestamp(expires_raw)
    return None, None, None


def _timestamp(raw: str) -> float:
    if not _RFC3339.fullmatch(raw):
        raise _Bad(400, f"Stream-Expires-At must be an RFC 3339 time: {raw!r}")
    try:  # RFC 3339 allows a lower-case "t" and "z" (5.6); fromisoformat, upper case
        return datetime.fromisoformat(raw.upper()).timestamp()
    except ValueError:
        raise _Bad(400, f"Stream-Expires-At is no real time: {raw!r}") from None


def _producer(headers: Mapping[str, str]) -> tuple[str, int, int]:
    """Section 5.2.1: all three producer headers (some came); integers to 2^53 - 1."""
    pid = headers.get("producer-id")
    epoch = headers.get("producer-epoch")
    seq = headers.get("producer-seq")
    if pid is None or epoch is None or seq is None:
        raise _Bad(400, "Producer-Id, Producer-Epoch and Producer-Seq go together")
    if not pid:
        raise _Bad(400, "Producer-Id must not be empty")
    numbers = []
    for name, value in (("Producer-Epoch", epoch), ("Producer-Seq", seq)):
        if not _DIGITS.fullmatch(value) or int(value) > _MAX_INT:
            raise _Bad(400, f"{name} must be an integer from 0 to 2^53-1: {value!r}")
        numbers.append(int(value))
    return pid, numbers[0], numbers[1]


#: The POST headers that make an append more than the plainest one.
_OPTIONS = frozenset(
    ["stream-closed", "stream-seq", "producer-id", "producer-epoch", "producer-seq"]
)


def _plan(headers: Mapping[str, str], body: bytes, now: float, parse_json: bool) -> AppendPlan:
    """Section 5.2: what a POST asks for, from the request alone (``_Bad`` if refused).

    A body typed ``application/json`` is split into its messages when ``parse_json``
    (a JSON stream's units, one position each, section 9.1); any other body is one unit
    of its length in bytes.  (Typed JSON but for a stream of another type, the store
    refuses it on the type, whatever the size says.)
    """
    get = headers.get
    closed = get("stream-closed")
    close = closed is not None and _is_true(closed)
    content_type = get("content-type")
    media = None if content_type is None else MEDIA_TYPES.get(content_type)
    if media is None and content_type is not None:
        media = media_type(content_type)
    _check_body(body, media, close)
    producer = None
    if "producer-id" in headers or "producer-epoch" in headers or "producer-seq" in headers:
        producer = _producer(headers)
    return _make_plan(body, media, close, get("stream-seq"), producer, now, parse_json)


def _check_body(body: bytes, media: str | None, close: bool) -> None:
    if not body and not close:
        raise _Bad(400, "an append needs a body (or Stream-Closed: true)")
    if body and media is None:
        raise _Bad(400, "an append with a body needs a Content-Type")


def _make_plan(
    body: bytes,
    media: str | None,
    close: bool,
    stream_seq: str | None,
    producer: tuple[str, int, int] | None,
    now: float,
    parse_json: bool,
) -> AppendPlan:
    """The plan of an append whose parts were checked (a JSON body's still may not be)."""
    if body:
        if parse_json and media == "application/json":
            units = _units(body, True, allow_empty=False)
            size = len(units)
        else:
            units, size = [body], len(body)
    else:
        units, size = [], 0
    return new_tuple(AppendPlan, (units, size, media, close, stream_seq, producer, now))


def _given_plan(
    data: bytes,
    media: str,
    close: bool,
    stream_seq: str | None,
    producer: tuple[str, int, int] | None,
    now: float,
    parse_json: bool = True,
) -> AppendPlan:
    """:func:`_plan` for :meth:`DurableStreams.append`, whose parts come as values."""
    _check_body(data, media, close)
    if producer is not None:
        pid, epoch, seq = producer
        if not isinstance(pid, str) or not pid:
            raise _Bad(400, f"a producer's id must be a non-empty string: {pid!r}")
        for name, value in (("epoch", epoch), ("seq", seq)):
            if type(value) is not int or not 0 <= value <= _MAX_INT:
                raise _Bad(
                    400, f"a producer's {name} must be an integer from 0 to 2^53-1: {value!r}"
                )
    return _make_plan(data, media, close, stream_seq, producer, now, parse_json)


def _units(body: bytes, is_json: bool, *, allow_empty: bool) -> list[bytes]:
    """A body's units: itself, or a JSON body's messages (section 9.1)."""
    if not is_json:
        return [body]
    try:
        text = body.decode("utf-8")
        messages = _json_messages(text)
    except (UnicodeDecodeError, ValueError) as exc:
        raise _Bad(400, f"the body is not valid JSON: {exc}") from None
    if not messages and not allow_empty:
        raise _Bad(400, "an append of an empty JSON array appends nothing")  # 9.1.3
    return [message.encode("utf-8") for message in messages]


def _reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)
_SPACE = re.compile(r"[ \t\n\r]*")


def _json_messages(text: str) -> list[str]:
    """The messages of a JSON body, each as its own source text: an array's elements
    (one level flattened, section 9.1.2), or the one value."""
    _DECODER.decode(text)  # the whole body is one valid JSON value, or ValueError
    start = _SPACE.match(text, 0).end()  # type: ignore[union-attr]
    if text[start] != "[":
        return [text.strip(" \t\n\r")]
    messages: list[str] = []
    index = _SPACE.match(text, start + 1).end()  # type: ignore[union-attr]
    if text[index] == "]":
        return messages
    while True:
        _, end = _DECODER.raw_decode(text, index)
        messages.append(text[index:end])
        index = _SPACE.match(text, end).end()  # type: ignore[union-attr]
        if text[index] == "]":
            return messages
        index = _SPACE.match(text, index + 1).end()  # type: ignore[union-attr]  # the comma


def _config(
    content_type: str,
    ttl: int | None,
    expires_at: str | None,
    fork: tuple[StreamMeta, int, int] | None,
) -> str:
    """What an idempotent PUT must repeat (section 5.1, 4.2), as one comparable string."""
    expires = None if expires_at is None else _timestamp(expires_at)
    parts: list[object] = [media_type(content_type), ttl, expires]
    if fork is not None:
        parts += [fork[0].path, fork[1] + fork[2]]
    return json.dumps(parts)


def _etags(header: str) -> set[str]:
    return {tag.strip() for tag in header.split(",")}


# -- responses ---------------------------------------------------------------------------


def _meta_headers(meta: StreamMeta) -> Headers:
    headers = [
        *_COMMON,
        ("content-type", meta.content_type),
        ("stream-next-offset", encode_offset(meta.tail)),
    ]
    if meta.ttl is not None:
        headers.append(("stream-ttl", str(meta.ttl)))
    if meta.expires_at is not None:
        headers.append(("stream-expires-at", meta.expires_at))
    if meta.closed:
        headers.append(("stream-closed", "true"))
    return headers


def _error(status: int, message: str) -> Response:
    headers = [*_COMMON, ("content-type", "text/plain; charset=utf-8")]
    if status == 405:
        headers.append(("allow", "GET, HEAD, POST, PUT, DELETE, OPTIONS"))
    return Response(status, headers, message.encode("utf-8"))


def _preflight() -> Response:
    return Response(
        204,
        [
            *_COMMON,
            ("access-control-allow-methods", "GET, HEAD, POST, PUT, DELETE, OPTIONS"),
            ("access-control-allow-headers", _ALLOWED_HEADERS),
            ("access-control-max-age", "86400"),
        ],
    )


_APPEND_STATUS = {
    "appended": 204,
    "duplicate": 204,
    "closed": 409,
    "closed-again": 204,
    "gone": 410,
    "missing": 404,
    "expired": 404,
    "content-type": 409,
    "stream-seq": 409,
    "stale-epoch": 403,
    "epoch-seq": 400,
    "seq-gap": 409,
}
_REFUSED = frozenset({"gone", "missing", "expired", "content-type", "stream-seq", "epoch-seq"})


def _append_response(
    path: str, outcome: AppendOutcome, producer: tuple[str, int, int] | None, wrote: bool
) -> Response:
    """Sections 5.2, 5.2.1, 5.3: a store's verdict as status and headers."""
    verdict, tail, closed, epoch, seq = outcome
    headers = [*_COMMON, ("stream-next-offset", OFFSET_FORMAT % tail)]  # encode_offset(tail)
    if verdict == "appended" and producer is None:  # the plain append, first
        if closed:
            headers.append(("stream-closed", "true"))
        return Response(204, headers, b"", path)
    if verdict in _REFUSED:
        return _error(_APPEND_STATUS[verdict], f"append refused: {verdict}")
    status = _APPEND_STATUS[verdict]
    if closed:
        headers.append(("stream-closed", "true"))
    if verdict == "stale-epoch":
        headers.append(("producer-epoch", str(epoch)))
    elif verdict == "seq-gap":
        headers.append(("producer-expected-seq", str(seq)))
        headers.append(("producer-received-seq", str(producer[2] if producer else 0)))
    elif producer is not None and verdict in ("appended", "duplicate"):
        headers.append(("producer-epoch", str(epoch)))
        headers.append(("producer-seq", str(seq)))
        if verdict == "appended" and wrote:
            status = 200
    changed = path if verdict == "appended" else None
    return Response(status, headers, changed=changed)


#: Why the store refused an append, for AppendRefused's message.
_REASONS = {
    "closed": "the stream is closed",
    "gone": "the stream was deleted",
    "missing": "there is no stream",
    "expired": "the stream expired",
    "content-type": "its content type is not the stream's",
    "stream-seq": "its Stream-Seq is not above the stream's last one",
    "stale-epoch": "the producer's epoch is older than the stream's",
    "epoch-seq": "a producer's new epoch must start at seq 0",
    "seq-gap": "the producer's seq skips some",
}


def _appended(path: str, outcome: AppendOutcome) -> int:
    """An in-process append's answer: the tail, or the POST's refusal raised."""
    verdict = outcome.verdict
    if verdict == "appended" or verdict == "duplicate" or verdict == "closed-again":
        return outcome.tail
    status = _APPEND_STATUS[verdict]
    raise AppendRefused(status, f"append to {path} refused: {_REASONS[verdict]}", outcome)
