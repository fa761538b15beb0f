# The reconnection planner: after each attempt, reconnect (when, with which headers) or
# stop (and why).  A state machine with no I/O, no clock and no randomness of its own:
# the caller passes the time and, for jitter, a random source it may seed.
#
# Spec: WHATWG HTML, "Server-sent events", 9.2.3 "Processing model":
# https://html.spec.whatwg.org/multipage/server-sent-events.html#sse-processing-model
# - A network error, or the end of the body, "reestablish[es] the connection": wait the
#   reconnection time (set by a valid ``retry`` field), "optionally, wait some more" (the
#   spec allows exponential backoff), then fetch again with `Last-Event-ID` set to the
#   last event ID string if it is not empty.
# - A status other than 200, or a Content-Type other than text/event-stream, "fail[s]
#   the connection": no reconnection.  204 No Content is the server's way to say "stop
#   reconnecting" (9.2.5).
#
# What users need beyond that, decided here:
# - Exponential backoff: the first failed attempt in a run waits the reconnection time,
#   as the spec says; the n-th in a row waits min(cap, floor * backoff ** (n - 1)),
#   floor = max(reconnection time, MIN_BACKOFF), cap = max(max_delay, reconnection
#   time), less a random part (jitter) of what exceeds the reconnection time: every delay
#   lies in [reconnection time, cap], so the server's ``retry`` is always honoured, and
#   clients that fail together do not all come back together.  The floor is positive
#   so that ``retry: 0`` (or initial_delay=0) cannot make a refused connection a busy
#   loop; the power is computed so that no run of failures, however long, overflows.
# - The server's ``retry`` is bounded by max_retry: a hostile or buggy server cannot
#   park the client for a day (the bound is applied to the exact int, so that a value
#   of 400 digits clamps instead of overflowing a float).
# - The Last-Event-ID header is sent only when HTTP clients can send it: the spec
#   encodes the ID as UTF-8, but httpx refuses non-ASCII str values, h11 a value with
#   leading or trailing whitespace, aiohttp control characters.  Such an ID (the stream
#   may set any text without CR, LF or NUL) is left out of the headers, as an empty one
#   is, and the Reconnect's reason says so: the request still reaches the server, which
#   starts the stream over, instead of failing the same way on every reconnection.
# - Times must be finite numbers: a clock that gives inf, nan or an int beyond float
#   is a bug, refused with ValueError before it can poison every later delay.
# - A planner is a plain object, not thread-safe: use it from one thread or task at a
#   time (the one that runs the loop), as a Connection.
# - The run of failures is reset once an attempt delivered an event, or stayed connected
#   for reset_after seconds; max_attempts bounds a run of failures.
# - A protocol error (invalid UTF-8, an event over max_event_size) is not a network drop:
#   the server would send the same bytes again and the parser would refuse them again.
#   Reconnecting is only worth it when the last event ID moved during the attempt (the
#   server then resumes after the new ID, which may be past the bad bytes); otherwise
#   the planner stops.
# - resume_only=True (issue 36): a reconnection that cannot resume is not made.  A
#   stream that never gave an event ID (the last event ID is empty, or one no client
#   can send) would be fetched again from its start: a POST's answer would be lost, or
#   asked for twice, and some servers (MCP's Streamable HTTP) refuse a second GET.  The
#   planner stops instead (StopCause.NOT_RESUMABLE, the reason says why).  An attempt
#   that never connected is still tried again: no request was sent, nothing is lost.
# - A programming error is not a network error (issue 36): the exceptions of
#   PROGRAMMING_ERRORS given to ended() stop the planner with that error (FAILED),
#   instead of being retried max_attempts times.  The list holds what the language
#   raises for a bug in the code that runs the loop, and nothing an HTTP client raises
#   for the network (ValueError, KeyError and OSError are left out for that reason).
# - last_event_id and retry are read from the attempt's Connection while it runs, so
#   that they are current while events() is still yielding, not only after ended().
# - Two modes.  "eventsource": the browser's rules, a clean end reconnects.  "single":
#   one response that completes a piece of work (an LLM completion, a job's progress):
#   a clean end is the end of the work, and a cut, a network error or a protocol error
#   after the request was sent is a failure reported to the caller, never a silent
#   replay of a request that may not be repeated.  Only an attempt that never connected
#   (refused, DNS: the request was never sent) is tried again.
#
# Invariants (property-tested): once a Stop is returned, every later call returns that
# same Stop; every Reconnect's delay lies in [reconnection time, cap] (0 for a restart).

from __future__ import annotations

import enum
import math
import re
from collections.abc import AsyncGenerator, Collection, Generator
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, cast, overload

from sse_sansio._errors import LocalProtocolError, RemoteProtocolError
from sse_sansio._events import AnyItem, Comment, Event
from sse_sansio._pickling import public_reduce, refuse
from sse_sansio._receive._implementation import Connection
from sse_sansio._receive._options import OptInItem

from ._feeding import (
    AsyncChunks,
    AsyncItems,
    Chunks,
    TruncatedStreamError,
    chunks_of,
    feed_async,
    iter_events,
)
from ._response import ResponseCheck, ResponseError, check_response

if TYPE_CHECKING:
    from typing import Unpack

    from sse_sansio._receive._options import ClassicOptions, OptInOptions

    from ._response import Headers

__all__ = ["AttemptEnd", "Reconnect", "ReconnectPlanner", "Stop", "StopCause"]

# Defaults, in seconds.  3 s is what browsers use when the stream sets no ``retry``
# (Chromium's kDefaultReconnectDelay; Firefox waits 5 s); 30 s is the backoff cap of
# LaunchDarkly's and go-sse's clients; a server's ``retry`` above a minute is more
# likely a mistake (milliseconds read as seconds) than a wish.
DEFAULT_INITIAL_DELAY = 3.0
DEFAULT_MAX_DELAY = 30.0
DEFAULT_MAX_RETRY = 60.0
# A stream that stayed up this long was healthy (LaunchDarkly's retryResetInterval).
DEFAULT_RESET_AFTER = 60.0
# The smallest delay the backoff grows from, whatever ``retry`` and initial_delay say:
# a tenth of a second, so that 6 refused connections in a row take 3 s, not 0 s.
MIN_BACKOFF = 0.1


class AttemptEnd(enum.Enum):
    """How an attempt ended, for :meth:`ReconnectPlanner.ended` (or pass the exception)."""

    #: The body ended cleanly (``None`` means the same).
    CLEAN_END = "clean end"
    #: The body was cut: mid-event (TruncatedStreamError) or by a network error.
    CUT = "cut"
    #: A network error (connection reset, read timeout, ...) before or during the body.
    NETWORK_ERROR = "network error"
    #: The connection could not be made, so the request was never sent (refused, DNS).
    CONNECT_ERROR = "connect error"
    #: The parser refused the stream (invalid UTF-8, an event too large).
    PROTOCOL_ERROR = "protocol error"
    #: The caller closed this attempt on purpose to start a new one at once.
    RESTART = "restart"


class StopCause(enum.Enum):
    """Why a :class:`Stop` stops."""

    #: "single" mode: the response ended cleanly, the work is done.
    COMPLETED = "completed"
    #: The server answered 204 No Content: no stream for this client.
    NO_CONTENT = "no content"
    #: The response was not an event stream (status, Content-Type, Content-Encoding).
    REFUSED = "refused"
    #: "single" mode: the response was cut or failed after the request was sent.
    FAILED = "failed"
    #: A protocol error that reconnecting would only repeat.
    PROTOCOL_ERROR = "protocol error"
    #: max_attempts attempts in a row failed.
    GAVE_UP = "gave up"
    #: The caller called :meth:`ReconnectPlanner.close`.
    CLOSED = "closed"
    #: ``resume_only=True``: the stream gave no event ID to resume from, so a new
    #: attempt would start it over (a cut is a failure, a clean end is not).
    NOT_RESUMABLE = "not resumable"


@dataclass(frozen=True)
class Reconnect:
    """Make an attempt: wait ``delay`` seconds (until ``at``), then send ``headers``.

    Attributes:
        delay: Seconds to wait before connecting (0 for the first attempt).
        at: The time to connect, ``now + delay`` on the caller's clock.
        headers: The request headers the standard asks for: ``Accept:
            text/event-stream``, ``Cache-Control: no-cache``, and ``Last-Event-ID``
            when the last event ID is not empty and can be sent as a header (see
            :meth:`ReconnectPlanner.headers`).  A new dict each time: add your own.
        attempt: Which attempt of the current run of failures this is (1: the first
            after a healthy stream, or the very first).
        reason: Why, for a log line.
    """

    delay: float
    at: float
    headers: dict[str, str] = field(compare=False)
    attempt: int
    reason: str


@dataclass(frozen=True)
class Stop:
    """Do not connect again.

    Attributes:
        cause: A :class:`StopCause`.
        reason: One sentence for a person.
        error: The exception that ended the last attempt, if any (``None`` for a
            completed response, a 204 or a close): re-raise it to report a failure.
    """

    cause: StopCause
    reason: str
    error: BaseException | None = field(default=None, compare=False)

    @property
    def failed(self) -> bool:
        """True unless the stop is a success or a request: completed, 204, closed, or
        not resumable after a clean end (``error`` is None)."""
        if self.cause is StopCause.NOT_RESUMABLE:
            return self.error is not None
        return self.cause not in (StopCause.COMPLETED, StopCause.NO_CONTENT, StopCause.CLOSED)


class RandomSource(Protocol):
    """What the planner needs of a random source: ``random.Random`` has it."""

    def random(self) -> float: ...


Decision = Reconnect | Stop
How = AttemptEnd | BaseException | None

#: The exceptions that :meth:`ReconnectPlanner.ended` takes for a bug in the caller's
#: code, not a network error: the planner stops with them (``StopCause.FAILED``).
#: Subclasses count too (UnboundLocalError is a NameError, ModuleNotFoundError an
#: ImportError, RecursionError is listed itself).
PROGRAMMING_ERRORS: tuple[type[BaseException], ...] = (
    AssertionError,
    AttributeError,
    ImportError,
    NameError,
    NotImplementedError,
    RecursionError,
    SyntaxError,
    TypeError,
)


_MID_ATTEMPT = (
    "it holds the Connection of the attempt under way; pickle it between attempts"
    " (before connection() or events(), or once ended() has returned)"
)


class ReconnectPlanner:
    """Decide, after each attempt to read a stream, whether and when to try again.

    The loop it drives (``now`` is your monotonic clock, such as ``time.monotonic()``)::

        plan = ReconnectPlanner()
        step = plan.start(now)
        while isinstance(step, Reconnect):
            sleep(step.delay)
            try:
                response = get(url, headers=step.headers)
                for event in plan.events(response.chunks, response.status, response.headers):
                    handle(event)
                error = None
            except (YourHTTPClientError, ProtocolError) as exc:
                error = exc
            step = plan.ended(error, now=now)
        # step is a Stop: step.reason says why; step.error is the exception, if any

    Args:
        mode: ``"eventsource"`` (the default): the browser's rules, a clean end
            reconnects.  ``"single"``: a response that completes a piece of work; a
            clean end stops (COMPLETED), a failure after the request was sent stops
            (FAILED) and is never replayed.
        last_event_id: The last event ID to resume from (sent as ``Last-Event-ID``).
        initial_delay: The reconnection time in seconds until the stream sets
            ``retry`` (3 s, as browsers).
        max_delay: The cap of the exponential backoff, in seconds (30 s).
        max_retry: The most seconds a server's ``retry`` may ask for (60 s); a larger
            value counts as this.
        backoff: The factor between the delays of failed attempts in a row (2).
        jitter: The fraction (0 to 1) of a delay's exponential part that is random
            (0.5).
        reset_after: Seconds of connection after which an attempt counts as healthy
            and the run of failures restarts; ``None``: only events count (60 s).
        reset_on_event: Whether an attempt that delivered an event counts as healthy.
        max_attempts: The most attempts in a row that may fail before the planner
            gives up; ``None`` for no limit (the default in "eventsource" mode; 3 in
            "single" mode).
        retry_statuses: Statuses to retry with backoff instead of failing (the
            standard retries none; 502, 503 and 504 are common choices).
        random: The jitter's source, an object with ``random() -> float`` in [0, 1):
            pass ``random.Random(seed)`` for reproducible delays.
        resume_only: When true, reconnect only to resume: after an attempt that
            reached the server (a clean end, a cut, a network or protocol error), a
            planner whose :attr:`last_event_id` is empty (or cannot be sent as a
            header) stops with ``StopCause.NOT_RESUMABLE`` instead of fetching the
            stream again from its start.  For a POST whose answer would be lost, or
            a server that refuses a second GET (MCP's Streamable HTTP).  A connect
            error (no request sent) is still retried.

    A planner is a plain object, not thread-safe: use it from one thread or task at a
    time, the one that runs the loop.

    Raises:
        ValueError: an argument out of range.
    """

    def __init__(
        self,
        *,
        mode: Literal["eventsource", "single"] = "eventsource",
        last_event_id: str = "",
        initial_delay: float = DEFAULT_INITIAL_DELAY,
        max_delay: float = DEFAULT_MAX_DELAY,
        max_retry: float = DEFAULT_MAX_RETRY,
        backoff: float = 2.0,
        jitter: float = 0.5,
        reset_after: float | None = DEFAULT_RESET_AFTER,
        reset_on_event: bool = True,
        max_attempts: int | Literal["default"] | None = "default",
        retry_statuses: Collection[int] = (),
        random: RandomSource | None = None,
        resume_only: bool = False,
    ) -> None:
        if mode not in ("eventsource", "single"):
            raise ValueError(f'mode must be "eventsource" or "single", not {mode!r}')
        if issubclass(type(last_event_id), str):
            # An exact str copy, checked and kept: a str subclass's __contains__ could
            # hide CR or LF from the check, its encode() change what a client sends.
            last_event_id = str.__str__(last_event_id)
        Connection(last_event_id=last_event_id)  # the same checks as the parser's
        for name, value in (
            ("initial_delay", initial_delay),
            ("max_delay", max_delay),
            ("max_retry", max_retry),
            ("reset_after", 0.0 if reset_after is None else reset_after),
        ):
            if not _is_number(value) or not 0 <= value < float("inf"):
                raise ValueError(f"{name} must be a finite number >= 0, not {value!r}")
        if not _is_number(backoff) or not 1 <= backoff < float("inf"):
            raise ValueError(f"backoff must be a finite number >= 1, not {backoff!r}")
        if not _is_number(jitter) or not 0 <= jitter <= 1:
            raise ValueError(f"jitter must be a number from 0 to 1, not {jitter!r}")
        if max_attempts == "default":
            max_attempts = 3 if mode == "single" else None
        if max_attempts is not None and (
            isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 1
        ):
            raise ValueError(f"max_attempts must be a positive int or None, not {max_attempts!r}")
        self._single = mode == "single"
        self._initial_delay = float(initial_delay)
        self._max_delay = float(max_delay)
        self._max_retry = float(max_retry)
        self._backoff = float(backoff)
        self._jitter = float(jitter)
        self._reset_after = reset_after
        self._reset_on_event = bool(reset_on_event)
        self._max_attempts = max_attempts
        self._retry_statuses = frozenset(retry_statuses)
        self._random: RandomSource = _new_random() if random is None else random
        self._resume_only = bool(resume_only)

        self._last_event_id = last_event_id
        self._retry: int | None = None  # the server's latest retry, in milliseconds
        self._failures = 0  # failed attempts in a row
        self._stop: Stop | None = None
        # The attempt under way (or about to be): when it starts, where it resumed from,
        # what the caller told us about it so far.
        self._started = False
        self._attempt_at = 0.0
        self._attempt_id = last_event_id
        self._connection: Connection | None = None
        self._accepted = False
        self._events = 0

    # ---------------------------------------------------------------- public state

    @property
    def last_event_id(self) -> str:
        """The last event ID the next attempt resumes from; during an attempt, the
        attempt's Connection's, current while :meth:`events` is still yielding."""
        conn = self._connection
        return self._last_event_id if conn is None else conn.last_event_id

    @property
    def retry(self) -> int | None:
        """The server's latest ``retry`` value in milliseconds, or ``None``; current
        during an attempt, as :attr:`last_event_id`."""
        conn = self._connection
        if conn is None or conn.retry is None:
            return self._retry
        return conn.retry

    @property
    def reconnection_time(self) -> float:
        """The spec's reconnection time in seconds: ``retry`` (at most ``max_retry``)
        if the server set one, else ``initial_delay``."""
        if self._retry is None:
            return self._initial_delay
        # Clamped while still an exact int: retry: 1 and 400 zeros would overflow a float;
        # and again in seconds, since max_retry * 1000 / 1000 may round above max_retry.
        return min(min(self._retry, self._max_retry * 1000) / 1000, self._max_retry)

    @property
    def failures(self) -> int:
        """How many attempts in a row have failed (0 after a healthy one)."""
        return self._failures

    @property
    def stopped(self) -> Stop | None:
        """The :class:`Stop` once the planner has stopped, else ``None``."""
        return self._stop

    def headers(self) -> dict[str, str]:
        """The request headers for the next attempt (a new dict).

        ``Last-Event-ID`` is :attr:`last_event_id` when it is not empty and every
        documented client can send it: printable ASCII, spaces only between other
        characters.  Any other ID (``café``, ``42 `` with a trailing space, one with a
        control character) is left out, so the server starts the stream over instead of
        the request failing in the client on every reconnection; the Reconnect's
        ``reason`` says so.
        """
        headers = {"Accept": "text/event-stream", "Cache-Control": "no-cache"}
        last_id = self.last_event_id
        if last_id and _unsendable(last_id) is None:
            # Spec: "If the event source's last event ID string is not the empty
            # string, set (`Last-Event-ID`, last event ID string, encoded as UTF-8)".
            headers["Last-Event-ID"] = last_id
        return headers

    # ---------------------------------------------------------------- the attempt

    def start(self, now: float) -> Decision:
        """The first attempt: connect at once.  Call it once, before any other.

        Raises:
            LocalProtocolError: called a second time.
        """
        now = _check_now(now)
        if self._stop is not None:
            return self._stop
        if self._started:
            raise LocalProtocolError("start() was already called: call ended() after an attempt")
        self._started = True
        return self._next_attempt(now, 0.0, "the first attempt")

    # Typing: one overload per kind of options (_receive/_options.py says how they
    # narrow), here and for events() and aevents().
    @overload
    def connection(self, **connection_options: Unpack[ClassicOptions]) -> Connection: ...
    @overload
    def connection(self, **connection_options: Unpack[OptInOptions]) -> Connection[OptInItem]: ...
    def connection(self, **connection_options: Any) -> Connection[OptInItem]:
        """A :class:`Connection` for this attempt, resuming from :attr:`last_event_id`.

        :meth:`ended` reads its ``last_event_id`` and ``retry``.  :meth:`events` calls
        this for you.
        """
        self._connection = Connection(last_event_id=self._last_event_id, **connection_options)
        return self._connection

    def check(self, status: int, headers: Headers, *, decoded: bool = False) -> ResponseCheck:
        """:func:`check_response`, remembered: a response that streams counts as
        accepted (the request was taken), which matters to "single" mode."""
        result = check_response(status, headers, decoded=decoded)
        self._accepted = result.streams
        return result

    def received(self, item: Event | Comment | OptInItem) -> None:
        """Count an item of this attempt, for callers that drain a Connection
        themselves (:meth:`events` counts for you): an event makes the attempt
        healthy."""
        if type(item) is Event:
            self._events += 1

    @overload
    def events(
        self,
        chunks: Chunks,
        status: int | None = ...,
        headers: Headers | None = ...,
        *,
        decoded: bool = ...,
        **connection_options: Unpack[ClassicOptions],
    ) -> Generator[Event | Comment, None, None]: ...
    @overload
    def events(
        self,
        chunks: Chunks,
        status: int | None = ...,
        headers: Headers | None = ...,
        *,
        decoded: bool = ...,
        **connection_options: Unpack[OptInOptions],
    ) -> Generator[Event | Comment | OptInItem, None, None]: ...
    def events(
        self,
        chunks: Chunks,
        status: int | None = None,
        headers: Headers | None = None,
        *,
        decoded: bool = False,
        **connection_options: Any,
    ) -> Generator[Event | Comment | OptInItem, None, None]:
        """Check the response (when given its status and headers), then yield the
        events of its body, as :func:`iter_events` does, counting them for the planner.

        Raises:
            ResponseError: the response does not stream (its first chunk is read,
                for the message).
            TruncatedStreamError, RemoteProtocolError: as :func:`iter_events`.
        """
        if status is not None:
            result = self.check(status, {} if headers is None else headers, decoded=decoded)
            if not result.streams:
                raise result.error(next(iter(chunks_of(chunks)), b""))
        conn = self.connection(**connection_options)
        for item in iter_events(chunks, connection=conn):
            self.received(item)
            yield item

    @overload
    def aevents(
        self,
        async_chunks: AsyncChunks,
        status: int | None = ...,
        headers: Headers | None = ...,
        *,
        decoded: bool = ...,
        **connection_options: Unpack[ClassicOptions],
    ) -> AsyncGenerator[Event | Comment, None]: ...
    @overload
    def aevents(
        self,
        async_chunks: AsyncChunks,
        status: int | None = ...,
        headers: Headers | None = ...,
        *,
        decoded: bool = ...,
        **connection_options: Unpack[OptInOptions],
    ) -> AsyncGenerator[Event | Comment | OptInItem, None]: ...
    def aevents(
        self,
        async_chunks: AsyncChunks,
        status: int | None = None,
        headers: Headers | None = None,
        *,
        decoded: bool = False,
        **connection_options: Any,
    ) -> AsyncGenerator[Event | Comment | OptInItem, None]:
        """:meth:`events` for an async iterable of chunks (see :func:`aiter_events`:
        a read cancelled mid-way is refused the same way)."""
        items = AsyncItems()
        items.wrap(self._aevents(async_chunks, status, headers, decoded, connection_options, items))
        return cast("AsyncGenerator[Event | Comment | OptInItem, None]", items)

    async def _aevents(
        self,
        async_chunks: AsyncChunks,
        status: int | None,
        headers: Headers | None,
        decoded: bool,
        connection_options: dict[str, Any],
        told: AsyncItems,
    ) -> AsyncGenerator[AnyItem, None]:
        if status is not None:
            result = self.check(status, {} if headers is None else headers, decoded=decoded)
            if not result.streams:
                first = await anext(aiter(async_chunks), b"")
                raise result.error(first)
        conn = self.connection(**connection_options)
        # Closed here when the caller stops early, not left to the garbage collector.
        async with aclosing(feed_async(conn, async_chunks, "raise", told)) as items:
            async for item in items:
                self.received(item)  # type: ignore[arg-type]
                yield item

    def ended(
        self,
        how: How = None,
        *,
        now: float,
        connection: Connection[OptInItem] | None = None,
        events: int | None = None,
    ) -> Decision:
        """The attempt is over: reconnect (after what delay, with which headers) or stop.

        Args:
            how: ``None`` for a clean end, an :class:`AttemptEnd`, or the exception
                that ended the attempt: :class:`TruncatedStreamError` is a cut,
                :class:`RemoteProtocolError` a protocol error, :class:`ResponseError`
                a refused response, :class:`LocalProtocolError` a bug that stops;
                so does a programming error (``TypeError``, ``AttributeError``,
                ``NameError``, ``AssertionError``, ``ImportError``,
                ``NotImplementedError``, ``RecursionError``, ``SyntaxError``, and
                their subclasses): the Stop (``FAILED``) holds it in ``error``.  Any
                other exception is a network error (a connect error when its chain
                holds ConnectionRefusedError or socket.gaierror).  Catch only your
                HTTP client's transport errors and sse_sansio's errors: the planner
                cannot tell every bug of yours (a ``KeyError``, a ``ValueError``)
                from a network error.
            now: The time on your clock.
            connection: The Connection this attempt fed, if you made your own (the one
                from :meth:`connection` or :meth:`events` is used otherwise): its
                ``last_event_id`` and ``retry`` carry over.
            events: How many events the attempt delivered, if you counted them
                yourself (otherwise what :meth:`events` or :meth:`received` counted).

        Returns:
            :class:`Reconnect` or :class:`Stop`; once stopped, always the same Stop.
            ``AttemptEnd.RESTART`` while waiting for a Reconnect's ``at`` (no attempt
            made yet) is a Reconnect at once: the rest of the wait is skipped and the
            run of failures is kept (the next failure backs off as before).

        Raises:
            ValueError: ``now`` is not finite (inf, nan, an int too large for a float).
        """
        now = _check_now(now)
        if self._stop is not None:
            return self._stop
        if not self._started:
            raise LocalProtocolError("ended() before start(): call start() first")
        self._absorb(connection if connection is not None else self._connection)
        delivered = self._events if events is None else events
        healthy = (self._reset_on_event and delivered > 0) or (
            self._accepted
            and self._reset_after is not None
            and now - self._attempt_at >= self._reset_after
        )
        if healthy:
            self._failures = 0
        return self._decide(how, now)

    def close(self, reason: str = "closed by the caller") -> Stop:
        """Stop for good (the user closed the stream); later calls return this Stop."""
        if self._stop is None:
            self._absorb(self._connection)
            self._stop = Stop(StopCause.CLOSED, reason)
        return self._stop

    # ---------------------------------------------------------------- internals

    def _absorb(self, conn: Connection[OptInItem] | None) -> None:
        """Keep what the attempt's connection learnt (its last event ID and retry); the
        attempt is over, so the properties read them here from now on."""
        if conn is not None:
            self._last_event_id = conn.last_event_id
            if conn.retry is not None:
                self._retry = conn.retry
        self._connection = None

    def _decide(self, how: How, now: float) -> Decision:
        kind, error = _classify(how)
        if kind is AttemptEnd.RESTART:
            return self._next_attempt(now, 0.0, "restarted by the caller")
        if isinstance(error, ResponseError):
            return self._refused(error, now)
        if isinstance(error, LocalProtocolError):
            return self._stopping(StopCause.FAILED, f"a local error: {error}", error)
        if isinstance(error, PROGRAMMING_ERRORS):
            return self._stopping(
                StopCause.FAILED,
                f"a programming error ({type(error).__name__}: {error}), not a network"
                " error: not retried",
                error,
            )
        self._failures += 1
        if kind is AttemptEnd.PROTOCOL_ERROR:
            if self._single or self._last_event_id == self._attempt_id:
                return self._stopping(
                    StopCause.PROTOCOL_ERROR,
                    f"{_what(kind, error)}; reconnecting would get the same bytes again",
                    error,
                )
        elif self._single and kind is AttemptEnd.CLEAN_END:
            return self._stopping(StopCause.COMPLETED, "the response ended cleanly", None)
        elif self._single and kind is not AttemptEnd.CONNECT_ERROR:
            return self._stopping(
                StopCause.FAILED,
                f"{_what(kind, error)} after the request was sent; not repeated",
                error,
            )
        if self._resume_only and kind is not AttemptEnd.CONNECT_ERROR:
            blind = self._blind()
            if blind is not None:
                return self._stopping(
                    StopCause.NOT_RESUMABLE,
                    f"{_what(kind, error)}; {blind}: resume_only=True does not reconnect blindly",
                    error,
                )
        return self._backing_off(now, _what(kind, error), error)

    def _blind(self) -> str | None:
        """Why a reconnection now could not resume the stream, or None if it could."""
        last_id = self._last_event_id
        if not last_id:
            return "the stream gave no event ID to resume from"
        problem = _unsendable(last_id)
        return None if problem is None else f"the last event ID {last_id!r} {problem}"

    def _refused(self, error: ResponseError, now: float) -> Decision:
        check = error.check
        if check.action == "stop":
            return self._stopping(StopCause.NO_CONTENT, check.reason, None)
        if check.status in self._retry_statuses:
            self._failures += 1
            return self._backing_off(now, f"status {check.status}", error)
        return self._stopping(StopCause.REFUSED, str(error), error)

    def _backing_off(self, now: float, what: str, error: BaseException | None) -> Decision:
        if self._max_attempts is not None and self._failures >= self._max_attempts:
            return self._stopping(
                StopCause.GAVE_UP,
                f"{what}; {self._failures} attempts in a row failed or brought no event",
                error,
            )
        return self._next_attempt(now, self._delay(), what)

    def _delay(self) -> float:
        """The delay before the next attempt, after ``self._failures`` failures."""
        base = self.reconnection_time
        cap = max(self._max_delay, base)
        grown = (
            base
            if self._failures <= 1
            else _grown(max(base, MIN_BACKOFF), self._backoff, self._failures - 1, cap)
        )
        spread = (grown - base) * self._jitter * self._random.random()
        return min(cap, max(base, grown - spread))

    def _next_attempt(self, now: float, delay: float, what: str) -> Reconnect:
        self._attempt_at = now + delay
        self._attempt_id = self._last_event_id
        self._connection = None
        self._accepted = False
        self._events = 0
        attempt = self._failures + 1
        reason = f"{what}; connecting in {delay:.3g} s (attempt {attempt})"
        problem = _unsendable(self._last_event_id) if self._last_event_id else None
        if problem is not None:
            reason += f"; the last event ID {self._last_event_id!r} {problem}: not sent"
        return Reconnect(delay, now + delay, self.headers(), attempt, reason)

    def _stopping(self, cause: StopCause, reason: str, error: BaseException | None) -> Stop:
        self._stop = Stop(cause, reason, error)
        return self._stop

    # Pickling (issue 32, item 4): a planner between two attempts is worth keeping: the
    # last event ID, the retry, the run of failures and the random source (a seeded
    # random.Random gives the same next delay after) are plain data; its pickle names
    # sse_sansio.ReconnectPlanner (and the random source's own class).  During an
    # attempt it holds the attempt's Connection, the state of one stream, which refuses
    # pickle and copy: so does the planner then, saying when to pickle it.  A stopped
    # planner keeps no Connection: it reads nothing more.
    def __reduce__(self) -> tuple[object, ...]:
        if self._connection is not None and self._stop is None:
            refuse(self, _MID_ATTEMPT)
        return public_reduce(self, _connection=None)


def _classify(how: How) -> tuple[AttemptEnd | None, BaseException | None]:
    """The kind of ending and the exception behind it."""
    if how is None:
        return AttemptEnd.CLEAN_END, None
    if isinstance(how, AttemptEnd):
        return how, None
    if not isinstance(how, BaseException):
        raise TypeError(f"ended() takes None, an AttemptEnd or an exception, not {how!r}")
    if isinstance(how, (ResponseError, LocalProtocolError)):
        return None, how
    if isinstance(how, TruncatedStreamError):
        return AttemptEnd.CUT, how
    if isinstance(how, RemoteProtocolError):
        return AttemptEnd.PROTOCOL_ERROR, how
    return (AttemptEnd.CONNECT_ERROR if _never_connected(how) else AttemptEnd.NETWORK_ERROR), how


def _new_random() -> RandomSource:
    """A generator of the planner's own for the jitter.  random and socket (below) are
    imported where they are used: ``import sse_sansio`` does not pay for them."""
    import random

    return random.Random()


def _never_connected(error: BaseException) -> bool:
    """Whether the exception, or one it was raised from, says no connection was made."""
    import socket

    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, (ConnectionRefusedError, socket.gaierror)):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def _what(kind: AttemptEnd | None, error: BaseException | None) -> str:
    text = kind.value if kind is not None else "error"
    if error is not None:
        text += f" ({type(error).__name__}: {error})"
    return text


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_now(now: float) -> float:
    if not _is_number(now):
        raise TypeError(f"now must be a number (your clock's time), not {now!r}")
    try:
        value = float(now)
    except OverflowError:
        value = float("inf")
    if not math.isfinite(value):
        # (Not repr(now) for an int: one of over 4,300 digits has none.)
        shown = repr(now) if isinstance(now, float) else "an int too large for a float"
        raise ValueError(f"now must be a finite time on your clock, not {shown}")
    return value


def _grown(floor: float, backoff: float, exponent: int, cap: float) -> float:
    """min(cap, floor * backoff ** exponent), for an exponent of any size."""
    try:
        return min(cap, floor * backoff**exponent)
    except OverflowError:  # past a float's range: far past the cap
        return cap


# A header value every documented client sends as it is: visible ASCII, with spaces
# only inside (httpx encodes str values as ASCII, h11 refuses leading or trailing
# whitespace, aiohttp and http.client control characters).
_SENDABLE = re.compile(r"[!-~]+(?: +[!-~]+)*")


def _unsendable(event_id: str) -> str | None:
    """Why an ID cannot be sent as a Last-Event-ID header, or None if it can."""
    if _SENDABLE.fullmatch(event_id):
        return None
    if not event_id.isascii():
        return "is not ASCII, which HTTP clients do not send"
    if event_id != event_id.strip(" "):
        return "starts or ends with a space, which HTTP clients do not send"
    return "holds a control character, which HTTP clients do not send"
