# Reading one event for what it adds to the answer: the shared eye of HoldBack and
# StreamStats (issue 35, items 2 and 3).
#
# Both need to know, event by event, what the model wrote: HoldBack holds the answer's
# text back, character by character; StreamStats times the first token and the gaps
# between tokens, and tells keepalives from progress.  Neither learns any API's shape
# here: the dialect's own reading does it.  A Reader hands the event to the dialect
# (decode, then observe: the Tracker's reading, once) and looks at what the dialect's
# Parts gained: new text fragments are the text the event carried, new reasoning
# fragments, new tool calls or argument fragments make it a token too.  So an event
# counts as text exactly when the dialect's Tracker would put text in Answer.text for
# it, and a fix to a dialect's reading (a new shape of delta) reaches both at once.
#
# Cost (issue 42, item 8: HoldBack.push and StreamStats.saw_item at most 1.5x
# json.loads per event): each event is decoded and observed once, as the Tracker does,
# and nothing is built per event (no tuple, no list) but the text it carried.
# HoldBack asks only for the text (text_of()); StreamStats asks for the token and the
# progress as two bits (read()).  Progress is the dialect's moves(), a second look at
# the payload, asked only for an event that carried no text: in every dialect an event
# that adds answer text moves the answer on (a text delta, a block or item started
# with text, a chunk whose content is text), which tests/llm/test_llm_reading.py holds
# against moves() itself on every stream of the suite.
#
# State: plain counts (what the Parts held after the last event), so the objects that
# read stay picklable by their public class (state() and Reader(dialect, state)).
# "auto" reads through the dialect it detected: when the dialect in charge changes, its
# Parts are new (another object), and the counts start again from zero.  Once the
# dialect gave its verdict (the terminal event, an error), later events change nothing
# (the Tracker's rule), so they are read as adding nothing, without decoding them.  An
# event whose data breaks the dialect's rules (a PayloadError) adds nothing either but
# counts as progress: the Tracker reports it; a client's decoder shows no text of it.

from __future__ import annotations

from typing import Any, Final

from sse_sansio._events import Event

from ._answer import Parts
from ._dialect import Dialect
from ._outcome import PayloadError, Verdict

__all__ = ["MOVES", "TOKEN", "Reader", "ReaderState"]

#: read(): the event carried output (text, reasoning, a tool call's name or arguments).
TOKEN: Final = 1
#: read(): the event adds to the answer or ends it (Progress's rule).
MOVES: Final = 2

#: A Reader's counts as plain data: text and reasoning fragments, calls, settled.
ReaderState = tuple[int, int, int, bool]


class Reader:
    """What each event of one stream adds to the answer, by its dialect's reading."""

    __slots__ = ("calls", "dialect", "follows", "parts", "reasoning", "settled", "text", "verdict")

    def __init__(self, dialect: Dialect, state: ReaderState = (0, 0, 0, False)) -> None:
        self.dialect = dialect
        self.parts: Parts = dialect.answer_parts()  # the Parts the counts are of
        # Only a dialect that hands over to another ("auto") has Parts that change: the
        # others' are their own, for good, and are not asked for again per event.
        self.follows = type(dialect).answer_parts is not Dialect.answer_parts
        self.text, self.reasoning, self.calls, self.settled = state
        self.verdict: Verdict | None = None  # the verdict, from the event that settled

    def state(self) -> ReaderState:
        """The counts as plain data (for pickling; the Parts are the dialect's)."""
        return (self.text, self.reasoning, self.calls, self.settled)

    def text_of(self, event: Event) -> str:
        """The answer text ``event`` carried (``""`` for none): HoldBack's question."""
        if self.settled:
            return ""
        taken = self._take(event)
        if taken is None:
            return ""  # the Tracker reports it
        texts = taken[1].text
        seen, now = self.text, len(texts)
        if now == seen:
            return ""
        self.text = now
        # Most events add one fragment: join only when there are more.
        return texts[seen] if now == seen + 1 else "".join(texts[seen:])

    def read(self, event: Event) -> int:
        """What ``event`` did, as bits: TOKEN (it carried output), MOVES (progress).
        StreamStats's question, asked only while not :attr:`settled`."""
        taken = self._take(event)
        if taken is None:
            return MOVES  # the Tracker reports it: an event nonetheless
        payload, parts = taken
        texts, reasonings = parts.text, parts.reasoning
        seen, now = self.text, len(texts)
        if now == seen:
            wrote = False
        else:  # most events add one fragment: no slice for it
            wrote = texts[seen] != "" if now == seen + 1 else any(texts[seen:])
            self.text = now
        token = wrote
        if len(reasonings) > self.reasoning:
            token = token or any(reasonings[self.reasoning :])
            self.reasoning = len(reasonings)
        if parts.calls:
            calls = _calls(parts)
            token = token or calls > self.calls
            self.calls = calls
        if wrote:
            return TOKEN | MOVES  # text moves the answer on in every dialect (above)
        moves = MOVES if self.dialect.current().moves(event, payload) else 0
        return TOKEN | moves if token else moves

    def _take(self, event: Event) -> tuple[Any, Parts] | None:
        """Decode and observe ``event`` once, both questions' first step: its payload
        and the Parts to count (the dialect in charge's), or None when its data is not
        the dialect's JSON (the Tracker reports that)."""
        dialect = self.dialect
        try:
            payload = dialect.decode(event)
        except PayloadError:
            return None
        verdict = dialect.observe(event, payload)
        if verdict is not None:
            self.settled, self.verdict = True, verdict
        parts = self.parts
        if self.follows and dialect.answer_parts() is not parts:
            parts = self._restart(dialect.answer_parts())
        return payload, parts

    def _restart(self, parts: Parts) -> Parts:
        """The dialect in charge changed ("auto" detected one): count its Parts."""
        self.parts = parts
        self.text = self.reasoning = self.calls = 0
        return parts


def _calls(parts: Parts) -> int:
    """A count that grows with every tool call, argument fragment or whole value."""
    return len(parts.calls) + sum(
        len(call.parts) + (call.value is not None) + (call.final is not None)
        for call in parts.calls.values()
    )
