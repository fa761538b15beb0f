# The tracker: the state machine that sees one streamed response's items and the way
# the stream ended, and reports the outcome by its dialect's rules.
#
# States: open (items arrive; no verdict), settled (a terminal or error event gave the
# verdict; later events are counted and passed through, but change nothing), ended
# (the end of the stream was seen; the outcome is fixed), failed (a PayloadError was
# raised; it is raised again on every later call, as the Connection's errors are).
# Once settled, an event's data is decoded leniently (JSON if it is, else the text):
# "later events change nothing", so a stray non-JSON event after [DONE] cannot turn a
# completed answer into an error.  Every error about a payload is a PayloadError,
# whatever its shape (JSON nested too deeply for the interpreter's stack included).
#
# The tracker also keeps what the dialect gathers on the way: the usage figures (with
# their provenance) that go into the Outcome, and the answer's fragments, which
# Tracker.answer joins on demand.
#
# Precedence, in this order (docs/llm.rst says why):
# 1. The first event that settles the outcome wins: the terminal event (completed or
#    stopped, or a cut when it came without a finish or stop reason), or an in-band
#    error (failed).  A cut after it loses nothing of the answer: the API had said it
#    was over.
# 2. Otherwise a stream the caller gave up on (end(gave_up=...): a watchdog's verdict,
#    a timeout) is a cut "gave-up": whatever the bytes so far, the caller chose to
#    stop, which is neither the server's cut nor its clean end.
# 3. Otherwise a stream that ended inside an event (EndOfStream.truncated) is a cut
#    "mid-event": the discarded event may have been the terminal one.
# 4. Otherwise the dialect judges the clean end: a cut "before-terminal" for every API
#    with a terminal event; for Gemini, which has none, the candidates' finish reasons.

from __future__ import annotations

from typing import Any

from sse_sansio._errors import LocalProtocolError
from sse_sansio._events import Comment, EndOfStream, Event
from sse_sansio._pickling import public_reduce, restore

from ._answer import Answer
from ._dialect import Dialect, loads_lenient
from ._outcome import Outcome, PayloadError, Verdict
from ._registry import make_dialect

__all__ = ["Tracker"]


class Tracker:
    """Judge one streamed LLM response: completed, stopped, failed or cut.

    Feed it every item of the response in order (:class:`~sse_sansio.Event`,
    :class:`~sse_sansio.Comment`) and then tell it how the stream ended, with the
    :class:`~sse_sansio.EndOfStream` item or with :meth:`end`; :attr:`outcome` then
    holds the :class:`Outcome`.  No I/O, no clock: it only reads the items.

    Args:
        dialect: One of :data:`DIALECT_NAMES` (``"auto"``: detect the API from the
            first event only one of them would send), or a dialect from
            :func:`generic`.

    Raises:
        ValueError: an unknown dialect name.
    """

    def __init__(self, dialect: str | Dialect = "auto") -> None:
        self._dialect = make_dialect(dialect) if isinstance(dialect, str) else dialect
        self._verdict: Verdict | None = None
        self._outcome: Outcome | None = None
        self._error: PayloadError | None = None
        self._events = 0
        self._last_end: int | None = None  # just past the last complete item
        # No verdict, outcome or error yet: feed()'s hot path applies.
        self._open = True

    @property
    def dialect(self) -> str:
        """The dialect's name; with ``"auto"``, the one detected so far (or "auto")."""
        return self._dialect.current().name

    @property
    def outcome(self) -> Outcome:
        """The outcome, once the end of the stream was fed (or :meth:`end` called).

        Raises:
            LocalProtocolError: the end of the stream has not been fed yet.
            PayloadError: an earlier event's data was not JSON (the same error again).
        """
        if self._error is not None:
            raise self._error
        if self._outcome is None:
            raise LocalProtocolError(
                "Tracker.outcome before the end of the stream: feed the EndOfStream or call end()"
            )
        return self._outcome

    @property
    def settled(self) -> bool:
        """An event settled the outcome (the API's terminal event, or an in-band error)
        before the end of the stream: later events change nothing (the Translator
        writes the target's ending at once)."""
        return self._verdict is not None

    @property
    def answer(self) -> Answer:
        """The answer as far as it arrived: text, reasoning and tool calls, joined now.

        ``answer.complete`` is True once the outcome is ``"completed"`` or
        ``"stopped"``; each tool call has its own ``complete``.  It can be read at any
        time, while the stream runs too.
        """
        settled = self._outcome or self._verdict
        complete = settled is not None and settled.outcome in ("completed", "stopped")
        return self._dialect.answer_parts().snapshot(complete)

    def feed(self, item: Event | Comment | EndOfStream) -> Any:
        """Take the next item of the stream; return an event's decoded data.

        For an :class:`~sse_sansio.Event`, returns its payload: the JSON-decoded
        ``data`` where the dialect documents JSON (``None`` for OpenAI's
        ``data: [DONE]``), the data as text for a generic dialect without JSON, and for
        an event type the dialect does not know, the decoded JSON if the data is JSON,
        else the text.  Returns ``None`` for a comment and for the end of the stream
        (which sets :attr:`outcome`, as :meth:`end` does).

        Raises:
            PayloadError: the event's data is not the JSON its dialect documents (the
                message names the event type and its byte offset).  It is sticky: every
                later call raises it again.
            LocalProtocolError: an event or comment after the end of the stream
                (another ``EndOfStream`` is harmless).
            TypeError: not an Event, Comment or EndOfStream (``NEED_DATA``, say).
        """
        if not (self._open and type(item) is Event):
            # Not the hot path (an event of an open stream, issue 35, item 5): the
            # checks that only other items, or a stream settled or ended, need.
            if self._error is not None:
                raise self._error
            if isinstance(item, EndOfStream):
                self.end(truncated=item.truncated)
                return None
            if self._outcome is not None:
                raise LocalProtocolError("Tracker.feed() called after the end of the stream")
            if isinstance(item, Comment):
                self._mark_end(item.end)
                return None
            if not isinstance(item, Event):
                raise TypeError(
                    f"Tracker.feed() takes an Event, Comment or EndOfStream, not {item!r}"
                )
            if self._verdict is not None:
                self._events += 1
                self._mark_end(item.end)
                return loads_lenient(item)  # settled: later events change nothing
        self._events += 1
        try:
            payload = self._dialect.decode(item)
        except PayloadError as exc:
            self._fail(exc)
            raise
        if item.end >= 0:
            self._last_end = item.end
        verdict = self._dialect.observe(item, payload)
        if verdict is not None:
            self._settle(verdict, item)
        return payload

    def _settle(self, verdict: Verdict, item: Event) -> None:
        self._verdict = verdict._replace(offset=item.start if item.start >= 0 else None)
        self._open = False

    def _fail(self, error: PayloadError) -> None:
        self._error = error
        self._open = False

    def end(self, *, truncated: bool = False, gave_up: str | None = None) -> Outcome:
        """The stream has ended (``truncated``: inside an event); return the outcome.

        Use it where the feeding helpers end the stream for you:
        ``sse_sansio.iter_events()`` stops at a clean end (``end()``) and raises
        ``TruncatedStreamError`` at a cut one (``end(truncated=True)``, or feed its
        ``end_of_stream``).  When you stop reading yourself (a
        :class:`~sse_sansio.Watchdog` verdict, a timeout), say why in ``gave_up``:
        unless an event had already settled it, the outcome is a cut with
        ``cut="gave-up"`` and your words in its reason.  Calling it again returns the
        same outcome.

        Raises:
            PayloadError: an earlier event's data was not JSON (the same error again).
        """
        if self._error is not None:
            raise self._error
        if self._outcome is None:
            self._outcome = self._judge(truncated, gave_up)
            self._open = False
        return self._outcome

    def _mark_end(self, end: int) -> None:
        if end >= 0:
            self._last_end = end

    def _judge(self, truncated: bool, gave_up: str | None) -> Outcome:
        verdict = self._verdict
        if verdict is None and gave_up is not None:
            verdict = Verdict(
                "cut",
                f"the caller gave up on the stream ({gave_up}) before {self._dialect.missing()}",
                cut="gave-up",
            )
        elif verdict is None and truncated:
            verdict = Verdict(
                "cut",
                "the stream was cut in the middle of an event (which was discarded), "
                f"before {self._dialect.missing()}",
                cut="mid-event",
            )
        elif verdict is None:
            verdict = self._dialect.at_end()
        if verdict.outcome == "cut" and verdict.cut != "unfinished":
            verdict = verdict._replace(offset=self._last_end, stop_reason=self._dialect.stop_word())
        return Outcome(
            outcome=verdict.outcome,
            reason=verdict.reason,
            dialect=self.dialect,
            stop_reason=verdict.stop_reason,
            error_type=verdict.error_type,
            error_message=verdict.error_message,
            cut=verdict.cut,
            offset=verdict.offset,
            events=self._events,
            usage=self._dialect.usage(),
        )

    # Pickling (issue 32, item 4): a tracker mid-stream is worth keeping: fed the rest
    # of the stream after loading, it gives the outcome the stream would have given.
    # Its pickle names public paths only: sse_sansio.llm.Tracker, its dialect as
    # sse_sansio.llm.Dialect (_dialect.py), the Outcome and PayloadError as themselves;
    # the dialect's verdict, a NamedTuple of a private room, goes as a dict of its fields.
    def __reduce__(self) -> tuple[object, ...]:
        verdict = None if self._verdict is None else self._verdict._asdict()
        return public_reduce(self, _verdict=verdict)

    def __setstate__(self, state: dict[str, Any]) -> None:
        verdict = state["_verdict"]
        restore(self, {**state, "_verdict": None if verdict is None else Verdict(**verdict)})
