# Stream metrics for one LLM response (issue 35, item 3): how long until the first
# byte, the first event, the first token; how even the tokens came; how often the
# stream stalled while keepalives made it look alive.
#
# Why apart from the Watchdog: the watchdog decides when to give up; these figures say
# how a stream went, for a dashboard.  And time to first byte is not time to first
# token: a control frame (OpenAI Responses' response.created, Anthropic's
# message_start, a role-only chunk) comes long before the model wrote anything
# (tinfoilsh/confidential-model-router#435), so a token here is what the dialect's
# Tracker reads into the answer (_reading.py): a text, reasoning or tool delta.
#
# Definitions (docs/llm-gateway.rst has them for readers):
# - times are seconds since ``now`` at construction (when the request was sent);
# - a keepalive is a comment or an event that does not move the answer on (Progress's
#   rule: Anthropic's ping, a chunk with an empty delta or only usage), before the
#   event that settled the answer; ``events`` counts every event;
# - progress is an event that moves the answer on (Progress's rule); a stall is a gap
#   of at least ``stall`` seconds between two moments of progress (the first byte
#   counts as one, or the first item without saw_bytes(); the end of the stream counts
#   too) in which at least one keepalive arrived:
#   the connection looked alive while the answer did not move (scaleapi/scale-agentex
#   #387).  A silent gap is no stall: it is the Watchdog's idle clock;
# - the inter-token gaps are the times between consecutive token events; the median is
#   the middle one (the mean of the two middle ones for an even count), p95 the
#   nearest-rank 95th percentile (the smallest gap with at least 95% of the gaps at or
#   below it);
# - output tokens are the usage the stream reported (None when it reported none).
#
# No I/O and no clock of its own: every figure is a function of the times passed in.

from __future__ import annotations

import math
from typing import Any

from sse_sansio._clock import Clock, duration
from sse_sansio._errors import LocalProtocolError
from sse_sansio._events import Comment, Event
from sse_sansio._pickling import clock_state, public_reduce, restore, with_clock

from ._dialect import Dialect
from ._reading import MOVES, TOKEN, Reader
from ._registry import make_dialect

__all__ = ["StreamStats"]


class StreamStats:
    """Measure one streamed LLM response: first byte, first event, first token, gaps,
    stalls behind keepalives, counts and output tokens.

    Tell it of every chunk of bytes (:meth:`saw_bytes`) and every item
    (:meth:`saw_item`) as they arrive, with the time, then :meth:`end`;
    :meth:`as_dict` gives the figures (at any time; those not known yet are None)::

        stats = llm.StreamStats(dialect, now=time.monotonic())
        ...
        stats.saw_bytes(len(chunk), time.monotonic())
        for item in items:
            stats.saw_item(item, time.monotonic())
        stats.end(time.monotonic())
        log.info("stream", extra=stats.as_dict())

    A token is an event the dialect's :class:`Tracker` reads output from (text,
    reasoning, a tool call's name or arguments), never a control frame such as
    ``response.created``.  A stall is a gap of at least ``stall`` seconds without
    progress (:class:`Progress`'s rule) in which keepalives still arrived.

    Args:
        dialect: One of :data:`DIALECT_NAMES`, or a dialect from :func:`generic`
            (which reads no tokens: only bytes, events and keepalives are counted).
        now: When the request was sent, on the clock every later ``now`` comes from
            (a monotonic one).
        stall: The shortest gap that counts as a stall, in seconds (> 0).

    Raises:
        ValueError: an unknown dialect name, or ``stall`` not > 0.
    """

    def __init__(self, dialect: str | Dialect, *, now: float, stall: float = 10.0) -> None:
        self._dialect = make_dialect(dialect) if isinstance(dialect, str) else dialect
        self.stall = duration("StreamStats: stall", stall, positive=True)
        self._clock = Clock("StreamStats", now)
        self._start = self._clock.latest
        self._reader = Reader(self._dialect)
        self._first_byte: float | None = None
        self._first_event: float | None = None
        self._first_token: float | None = None
        self._last_token: float | None = None
        self._gaps: list[float] = []
        self._bytes = 0
        self._events = 0
        self._keepalives = 0
        self._tokens = 0
        # Stalls: since the last progress, when it was and whether a keepalive came.
        self._progress_at: float | None = None
        self._kept_alive = False
        self._stalls: list[float] = []
        self._outcome: str | None = None  # the verdict's word, once an event gave one
        self._end: float | None = None

    def saw_bytes(self, n: int, now: float) -> None:
        """``n`` bytes of the response body arrived (0: an empty read, no byte)."""
        at = self._read(now, "saw_bytes")
        if n > 0 and self._first_byte is None:
            self._first_byte = self._progress_at = at
        self._bytes += n

    def saw_item(self, item: object, now: float) -> None:
        """An item of the stream arrived (an Event or a Comment; others are ignored)."""
        if self._end is not None:  # (self._read() inline: this runs per item)
            raise LocalProtocolError("StreamStats.saw_item() after end()")
        at = self._clock.read(now, "saw_item")
        if self._progress_at is None:
            self._progress_at = at  # no saw_bytes() came: the first item stands for it
        if isinstance(item, Event):
            self._event(item, at)
        elif isinstance(item, Comment):
            self._keepalive()

    def end(self, now: float, *, truncated: bool = False) -> None:
        """The stream is over (``truncated``: inside an event); a gap up to now may be
        a stall.  With no event that settled the answer, the dialect judges the end as
        the :class:`Tracker` does (a cut, or for Gemini the finish reasons)."""
        at = self._read(now, "end")
        self._close_gap(at)
        self._end = at
        if self._outcome is None:
            self._outcome = "cut" if truncated else self._dialect.at_end().outcome

    def as_dict(self) -> dict[str, Any]:
        """The figures as JSON-ready data (seconds as floats; None where unknown).

        Keys: ``time_to_first_byte``, ``time_to_first_event``,
        ``time_to_first_token``, ``duration`` (None before :meth:`end`),
        ``inter_token_gaps`` (``count``, ``median``, ``p95``, ``max``), ``stalls``
        (``count``, ``seconds`` in all, ``longest``, and ``threshold``: the ``stall``
        argument), ``token_events``, ``keepalives``, ``events``, ``bytes``,
        ``output_tokens`` (as the stream's usage reported it), and ``outcome``
        (``"completed"``, ``"stopped"``, ``"failed"`` or ``"cut"``, as the
        :class:`Tracker` judges it; None before :meth:`end` unless an event settled it).
        """
        gaps = sorted(self._gaps)
        return {
            "time_to_first_byte": self._since(self._first_byte),
            "time_to_first_event": self._since(self._first_event),
            "time_to_first_token": self._since(self._first_token),
            "duration": self._since(self._end),
            "inter_token_gaps": {
                "count": len(gaps),
                "median": _median(gaps),
                "p95": gaps[math.ceil(0.95 * len(gaps)) - 1] if gaps else None,
                "max": gaps[-1] if gaps else None,
            },
            "stalls": {
                "count": len(self._stalls),
                "seconds": sum(self._stalls),
                "longest": max(self._stalls, default=None),
                "threshold": self.stall,
            },
            "token_events": self._tokens,
            "keepalives": self._keepalives,
            "events": self._events,
            "bytes": self._bytes,
            "output_tokens": self._dialect.usage().output_tokens,
            "outcome": self._outcome,
        }

    def token_gaps(self) -> list[float]:
        """Every inter-token gap so far, in seconds, in the order they happened."""
        return list(self._gaps)

    # -- the steps -----------------------------------------------------------------

    def _read(self, now: float, method: str) -> float:
        if self._end is not None:
            raise LocalProtocolError(f"StreamStats.{method}() after end()")
        return self._clock.read(now, method)

    def _event(self, event: Event, at: float) -> None:
        # (One call per event, no helper calls on the way: issue 42, item 8.)
        self._events += 1
        if self._first_event is None:
            self._first_event = at
        reader = self._reader
        if reader.settled:
            return  # after the answer's verdict: an event, neither progress nor life
        did = reader.read(event)
        if reader.verdict is not None:
            self._outcome = reader.verdict.outcome
        if did & TOKEN:  # a token: the gap since the last one
            self._tokens += 1
            last = self._last_token
            if last is None:
                self._first_token = at
            else:
                self._gaps.append(at - last)
            self._last_token = at
        if did & MOVES:
            if self._kept_alive:  # (else _close_gap() finds no stall)
                self._close_gap(at)
            self._progress_at = at
        else:
            self._keepalive()

    def _keepalive(self) -> None:
        self._keepalives += 1
        self._kept_alive = True

    def _close_gap(self, at: float) -> None:
        """Progress (or the end) at ``at``: the gap since the last one, if a stall."""
        since = self._progress_at
        if since is not None and self._kept_alive and at - since >= self.stall:
            self._stalls.append(at - since)
        self._kept_alive = False

    def _since(self, at: float | None) -> float | None:
        return None if at is None else at - self._start

    # Pickling (issue 32, item 4): a StreamStats mid-stream is a state machine worth
    # keeping; its pickle names sse_sansio.llm.StreamStats (the dialect pickles as
    # sse_sansio.llm.Dialect), its clock and reader's counts as plain tuples.
    def __reduce__(self) -> tuple[object, ...]:
        return public_reduce(self, _clock=clock_state(self._clock), _reader=self._reader.state())

    def __setstate__(self, state: dict[str, Any]) -> None:
        state = with_clock(state)
        restore(self, {**state, "_reader": Reader(state["_dialect"], state["_reader"])})


def _median(ordered: list[float]) -> float | None:
    """The middle of sorted values, the mean of the two middle ones for an even count
    (statistics.median's rule, without importing statistics: it loads random and
    decimal)."""
    if not ordered:
        return None
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2
