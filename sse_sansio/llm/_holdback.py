# The hold-back window of a guardrail (issue 35, item 2): the answer's text reaches the
# client only once a checker had the chance to see what follows it, and a veto puts the
# dialect's own error event in place of what was still held.
#
# Why: a guardrail that checks a streamed answer sees the text as it goes, so the
# forbidden words reach the client before the check can object, and its verdict arrives
# as an error frame after them (api7/aisix#466); buffering the whole answer instead
# loses the streaming (LiteLLM #31389).  A window of ``chars`` characters (or
# ``seconds``) is the middle way: the checker sees each piece of text with up to
# ``chars`` characters of what follows before the client sees it.
#
# Strategy: items in, items out, in order.  Each pushed item joins the line; the line
# moves on from its head while the head may go: a text delta (an event the dialect's
# Tracker reads text from, _reading.py) once ``chars`` characters of text were pushed
# after its last one, or ``seconds`` after it was pushed; any other item (a tool delta,
# a finish chunk, the terminal event, a comment) as soon as it reaches the head, so it
# waits behind held text and never overtakes it.  approve() lets the whole line go;
# veto() drops it and returns the dialect's error event, and the end of stream the
# dialect sends after one (OpenAI Chat's and the AI SDK's ``data: [DONE]``), instead.
#
# Invariants:
# - what is released is a prefix of what was pushed, in the pushed order, each item
#   the very object pushed (a keep_raw connection's bytes go on unchanged);
# - a text delta is held whole, never split: every released event is one the upstream
#   sent, so it is as valid a frame of its API as it was (a split delta would be a new
#   frame this module wrote, for five schemas).  The window is thus at least ``chars``:
#   a long delta waits until ``chars`` characters follow its last one;
# - after a veto nothing is released again: the held characters, and every item pushed
#   later, are dropped (the client's answer ended with the error);
# - characters are code points (Python's len()).

from __future__ import annotations

import time
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Callable
from typing import Any, Final

from sse_sansio._clock import Clock
from sse_sansio._clock import seconds as checked_seconds
from sse_sansio._errors import LocalProtocolError, StreamCut
from sse_sansio._events import Comment, EndOfStream, Event
from sse_sansio._pickling import clock_state, public_reduce, restore, with_clock

from ._pipe import Item, close, next_item
from ._reading import Reader
from ._registry import DIALECTS, REFRAMER_DIALECTS, make_dialect

__all__ = ["HoldBack"]

#: What a served response sends: the end of the stream is the caller's (approve()).
Sent = Event | Comment


# One item in line, a plain tuple (one per pushed item: no class to build, issue 42,
# item 8): the item, the answer text it carries ("" for any other item), the count of
# text characters pushed up to its last one, and when it was pushed.
_Held = tuple[Sent, str, int, float]
_ITEM: Final = 0
_TEXT: Final = 1
_AT: Final = 3


class HoldBack:
    """Hold an LLM stream's text back until a guardrail had a window to see past it.

    Push every item of the upstream response in order; send on what each call
    returns.  A text delta is released once ``chars`` more characters of text have
    followed it, or ``seconds`` after it arrived (whichever comes first); every other
    item (a tool delta, a finish chunk, a comment) waits behind held text and goes as
    soon as none is ahead of it.  A checker reads the text as it arrives
    (:attr:`held_text` is what the client has not seen); when it objects,
    :meth:`veto` gives the dialect's error event to send instead of the held text.
    At the end of the upstream, call :meth:`approve` once the checker passed the
    tail (with ``chars``, the last ``chars`` characters are held until then)::

        hold = llm.HoldBack(dialect, chars=200, now=loop.time())
        seen = ""
        for item in upstream_items:
            out = hold.push(item, loop.time())
            seen = (seen + hold.last_text)[-400:]  # the checker's own copy
            if forbidden(seen):
                send(hold.veto("the answer broke the content policy"))  # not out
                break
            send(out)
        else:
            send(hold.approve())  # the checker passed the tail

    A checker that keeps its own copy of the text adds :attr:`last_text` after each
    push; one that checks right after each push, before sending what it returned (a
    veto then drops that too), sees every piece of text of up to ``chars``
    characters whole before any of it goes, unless ``seconds`` let it go first
    (with ``seconds``, call :meth:`pop` at :attr:`deadline` from a timer).

    A text delta is held whole, never cut: each released event is the upstream's own
    object, so the released stream is valid in its API's schema.  Text means what the
    dialect's :class:`Tracker` reads into :attr:`Answer.text`; reasoning and tool
    arguments are not counted, but keep their place in line.

    Args:
        dialect: One of :data:`REFRAMER_DIALECTS` (the veto writes its error event).
        chars: Release a text delta once this many characters followed it (None: no
            count; 0: release text at once).
        seconds: Release a text delta this long after it arrived (None: no time limit).
            With neither, text waits for :meth:`approve`.
        now: The time the stream began, on the clock every later ``now`` comes from
            (a monotonic one).

    Attributes:
        last_text: The answer text the last pushed item carried (``""`` for none).
        vetoed: :meth:`veto` was called: nothing is released any more.

    Raises:
        ValueError: an unknown dialect, or ``chars`` or ``seconds`` below 0 (or not
            finite); TypeError: ``chars`` not an int.
    """

    def __init__(
        self,
        dialect: str,
        *,
        chars: int | None = None,
        seconds: float | None = None,
        now: float,
    ) -> None:
        if dialect not in REFRAMER_DIALECTS:
            raise ValueError(
                f"HoldBack needs the stream's dialect, one of {', '.join(REFRAMER_DIALECTS)}; "
                f"got {dialect!r}"
            )
        self.dialect = dialect
        self.chars = _count(chars)
        self.seconds = checked_seconds("HoldBack: seconds", seconds)
        self._clock = Clock("HoldBack", now)
        self._dialect = make_dialect(dialect)
        self._reader = Reader(self._dialect)
        self._held: deque[_Held] = deque()
        self._pushed = 0  # characters of text pushed so far
        self.vetoed = False
        self.last_text = ""

    @property
    def held_text(self) -> str:
        """The text pushed but not released yet (what a veto would drop)."""
        return "".join(held[_TEXT] for held in self._held)

    @property
    def deadline(self) -> float | None:
        """When :meth:`pop` releases held text by time; None: nothing waits for time."""
        if self.seconds is None or not self._held:
            return None
        return self._held[0][_AT] + self.seconds  # the head is held text (_release)

    def push(self, item: Sent, now: float) -> list[Sent]:
        """Take the next item of the upstream (an Event or a Comment); return the items
        to send now, in order (none after a veto)."""
        at = self._clock.read(now, "push")
        if self.vetoed:
            return []
        text = self._reader.text_of(item) if isinstance(item, Event) else ""
        self.last_text = text
        held = self._held
        if not text:
            if not held:
                return [item]  # nothing ahead of it: it goes at once
            held.append((item, text, self._pushed, at))
            return self._release(at)
        self._pushed += len(text)
        held.append((item, text, self._pushed, at))
        return self._release(at)

    def pop(self, now: float) -> list[Sent]:
        """The items whose time has come (call it at :attr:`deadline`)."""
        at = self._clock.read(now, "pop")
        return [] if self.vetoed else self._release(at)

    def approve(self) -> list[Sent]:
        """Release everything held: the checker passed the text so far.  The window
        goes on for the text pushed later."""
        out = [held[_ITEM] for held in self._held]
        self._held.clear()
        return out

    def veto(self, reason: str, *, error_type: str | None = None) -> list[Event]:
        """Drop everything held; return the dialect's error event (``reason`` its
        message, ``error_type`` its type or code, the dialect's default when None), then
        its end of stream where it has one.  Later pushes release nothing.

        Raises:
            LocalProtocolError: a second veto (the stream already ended).
        """
        if self.vetoed:
            raise LocalProtocolError("HoldBack.veto() after a veto: the stream has ended")
        self.vetoed = True
        self._held.clear()
        rules = DIALECTS[self.dialect]
        out = [rules.error_event(reason, error_type)]
        if rules.stream_end is not None:
            out.append(Event(data=rules.stream_end))
        return out

    async def pipe(
        self,
        items: AsyncIterable[Event | Comment | EndOfStream],
        *,
        check: Callable[[str], str | None] | None = None,
        now: Callable[[], float] = time.monotonic,
    ) -> AsyncGenerator[Sent, None]:
        """Hold a whole stream back: ``items`` (a :class:`~sse_sansio.Relay`, a
        :meth:`Translator.pipe`, any async iterable of received items in this
        dialect) in, what to send out, as it is released.

        ``check`` is called with each piece of answer text as it is pushed, before
        any of it is sent (keep your own window across pieces for words that span
        two); it returns None to pass, or a reason to veto: then the dialect's error
        event (:meth:`veto`) goes out instead of everything held, ``items`` is closed
        and the pipe ends.  A clean end of ``items`` releases the rest
        (:meth:`approve`: the checker passed the tail); a
        :class:`~sse_sansio.StreamCut` from ``items`` is raised again after the held
        items (every one a complete frame; no terminal frame is added).  With
        ``seconds``, held text goes at :attr:`deadline` even while ``items`` is
        silent.  Closing the returned generator closes ``items``.  ``now`` is the
        clock the HoldBack was made on.  So a guarded gateway serves
        ``EventStreamResponse(hold.pipe(translator.pipe(relay), check=...))``.
        """
        source = aiter(items)
        reads = _Reads(source, now)
        try:
            while True:
                try:
                    item = await reads.next(self.deadline)
                except StreamCut:
                    for out in self.approve():  # the checker saw all of it
                        yield out
                    raise
                if item is None or isinstance(item, EndOfStream):
                    for out in self.approve():
                        yield out
                    return
                if item is _DUE:
                    for out in self.pop(now()):
                        yield out
                    continue
                assert isinstance(item, (Event, Comment))
                for out in self._checked(item, now(), check):
                    yield out
                if self.vetoed:
                    return
        finally:
            await reads.close()

    def _checked(
        self, item: Sent, at: float, check: Callable[[str], str | None] | None
    ) -> list[Sent]:
        """Push ``item``; what to send: what it released, or the veto's events."""
        out = self.push(item, at)
        if check is not None and self.last_text:
            reason = check(self.last_text)
            if reason is not None:
                return list(self.veto(reason))  # what this push released is dropped too
        return out

    def _release(self, now: float) -> list[Sent]:
        out: list[Sent] = []
        held = self._held
        chars, seconds, pushed = self.chars, self.seconds, self._pushed
        while held:
            _, text, through, at = held[0]
            if (
                text
                and (chars is None or pushed - through < chars)
                and (seconds is None or now - at < seconds)
            ):
                break  # held text whose time has not come
            out.append(held.popleft()[_ITEM])
        return out

    # Pickling (issue 32, item 4): a HoldBack mid-stream is a state machine worth
    # keeping; its pickle names sse_sansio.llm.HoldBack (the dialect pickles as
    # sse_sansio.llm.Dialect), its clock, reader's counts and held items as plain data.
    def __reduce__(self) -> tuple[object, ...]:
        return public_reduce(
            self,
            _clock=clock_state(self._clock),
            _reader=self._reader.state(),
            _held=list(self._held),
        )

    def __setstate__(self, state: dict[str, Any]) -> None:
        state = with_clock(state)
        state["_reader"] = Reader(state["_dialect"], state["_reader"])
        state["_held"] = deque(state["_held"])
        restore(self, state)


#: _Reads.next(): held text came due before the next item.
_DUE: Final = object()


class _Reads:
    """The reads of pipe()'s source.  Without a deadline, a plain read; with one, the
    read runs in a task that is waited for until the deadline, and never cancelled by
    that wait (a cancelled async generator is ended for good): the next call waits for
    the same read."""

    def __init__(self, source: AsyncIterator[Item], now: Callable[[], float]) -> None:
        self.source, self.now = source, now
        self.pending: Any = None  # the read in a task (asyncio is imported when needed)

    async def next(self, deadline: float | None) -> Item | object | None:
        """The next item (None at the clean end), or _DUE when ``deadline`` came first."""
        if self.pending is None and deadline is None:
            return await next_item(self.source)
        import asyncio

        if self.pending is None:
            self.pending = asyncio.ensure_future(next_item(self.source))
        reading = self.pending
        timeout = None if deadline is None else max(0.0, deadline - self.now())
        await asyncio.wait((reading,), timeout=timeout)
        if not reading.done():
            return _DUE
        self.pending = None
        item: Item | None = reading.result()
        return item

    async def close(self) -> None:
        """Finish a pending read (cancelled, waited for), then close the source."""
        reading = self.pending
        if reading is not None:
            import asyncio

            reading.cancel()
            # Its end (a cancellation, an item, an error) retrieved: nobody reads it now.
            await asyncio.gather(reading, return_exceptions=True)
        await close(self.source)


def _count(chars: int | None) -> int | None:
    if chars is None:
        return None
    if not isinstance(chars, int) or isinstance(chars, bool):
        raise TypeError(f"HoldBack: chars must be an int or None, not {chars!r}")
    if chars < 0:
        raise ValueError(f"HoldBack: chars must be >= 0, not {chars!r}")
    return chars
