# Reading one event for what it adds to the answer: the shared eye of HoldBack and
# StreamStats (issue 35, items 2 and 3).
#
# Both need to know, event by event, what the model wrote: HoldBack holds the answer's
# text back, character by character; StreamStats times the first token and the gaps
# between tokens, and tells keepalives from progress.  Neither learns any API's shape
# here: the dialect's own reading does it.  read() hands the event to the dialect
# (decode, then observe, as the Tracker does) and looks at what the dialect's Parts
# gained: new text fragments are the text the event carried, new reasoning fragments,
# new tool calls or argument fragments make it a token too.  So an event counts as text
# exactly when the dialect's Tracker would put text in Answer.text for it, and a fix to
# a dialect's reading (a new shape of delta) reaches both at once.
#
# State: the caller keeps a Mark (plain data: what the Parts held after the last event),
# so the objects that read stay picklable by their public class.  "auto" reads through
# the dialect it detected: when the dialect in charge changes, its Parts are new, and
# the counts start again from zero.  Once the dialect gave its verdict (the terminal
# event, an error), later events change nothing (the Tracker's rule), so they are read
# as adding nothing.  An event whose data breaks the dialect's rules (a PayloadError)
# adds nothing either: the Tracker reports it; a client's decoder shows no text of it.

from __future__ import annotations

from typing import NamedTuple

from sse_sansio._events import Event

from ._answer import Parts
from ._dialect import Dialect
from ._outcome import PayloadError, Verdict

__all__ = ["Mark", "Reading", "read"]


class Mark(NamedTuple):
    """What the dialect's Parts held after the last event read (plain data)."""

    dialect: str = ""  # the name of the dialect in charge (for "auto", the detected one)
    text: int = 0  # text fragments
    reasoning: int = 0  # reasoning fragments
    calls: int = 0  # tool calls, and argument fragments and whole values among them
    settled: bool = False  # the dialect gave its verdict: later events add nothing


class Reading(NamedTuple):
    """What one event added to the answer."""

    text: str  # the answer text it carried ("" for none)
    token: bool  # it carried output: text, reasoning or a tool call's name or arguments
    moves: bool  # it adds to the answer or ends it (Progress's rule)
    verdict: Verdict | None  # the verdict it gave, if it settled the outcome
    mark: Mark  # the new mark


def read(dialect: Dialect, event: Event, mark: Mark) -> Reading:
    """Read ``event`` with ``dialect``; ``mark`` is what the last reading returned."""
    if mark.settled:
        return Reading("", False, False, None, mark)
    try:
        payload = dialect.decode(event)
    except PayloadError:
        return Reading("", False, True, None, mark)  # the Tracker reports it
    verdict = dialect.observe(event, payload)
    current = dialect.current()
    if current.name != mark.dialect:
        mark = Mark(current.name)
    parts = dialect.answer_parts()
    texts, reasonings = parts.text, parts.reasoning
    # Most events add one fragment or none: slice and join only when there is one.
    text = "".join(texts[mark.text :]) if len(texts) > mark.text else ""
    reasoned = len(reasonings) > mark.reasoning and any(reasonings[mark.reasoning :])
    calls = _calls(parts) if parts.calls else 0
    token = bool(text) or reasoned or calls > mark.calls
    now = Mark(current.name, len(texts), len(reasonings), calls, verdict is not None)
    return Reading(text, token, current.moves(event, payload), verdict, now)


def _calls(parts: Parts) -> int:
    """A count that grows with every tool call, argument fragment or whole value."""
    return len(parts.calls) + sum(
        len(call.parts) + (call.value is not None) + (call.final is not None)
        for call in parts.calls.values()
    )
