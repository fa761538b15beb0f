# Dialect-aware progress for the Watchdog: which events move an LLM answer on.
#
# A stream can be alive without moving: Anthropic sends ``ping`` events while the model
# thinks or the API is loaded, OpenAI-compatible servers send chunks with an empty delta
# or only a role, Gemini a chunk with only usage.  Counting those as progress is how a
# stalled generation kept warm by heartbeats never times out; counting nothing but text
# is how a long tool call or extended thinking is taken for a hang.  So progress is
# what adds to the answer or ends it: a text, reasoning (thinking) or tool delta, the
# start of a content block or output item, a finish or stop reason, the terminal event,
# an in-band error.  Everything else is life only.
#
# The dialect's own decode() reads each payload (its JSON rules, OpenAI's [DONE], the
# "auto" detection), and its moves() answers the question "does it move?" (each
# dialect module has its rule beside its tracking rules).  For a dialect without a rule
# of its own (generic(), the AI SDK stream), every event but a ``ping`` is progress:
# the Watchdog's own default.  A payload that is not the JSON the dialect documents
# counts as progress too: the Tracker reports it, not the watchdog.
#
# Pickling (issue 32, item 4): a Progress mid-stream is worth keeping ("auto" may have
# detected its dialect); it holds only its dialect, which pickles as
# sse_sansio.llm.Dialect (_dialect.py), so its default pickle names public paths only.

from __future__ import annotations

from sse_sansio._events import Event

from ._dialect import Dialect
from ._outcome import PayloadError
from ._registry import make_dialect

__all__ = ["Progress"]


class Progress:
    """Say which items of one LLM stream are progress, for :class:`sse_sansio.Watchdog`.

    A text, reasoning or tool delta is progress, and so is what ends the answer (a
    finish or stop reason, the terminal event, an error); an Anthropic ``ping``, a
    chunk with an empty delta or only usage, a comment are life only::

        progress = llm.Progress("auto")
        watchdog.saw_item(item, now, progress=progress.of(item))

    It keeps the state of one stream (``"auto"`` detects the dialect as it goes), so
    use a fresh one per stream.

    Args:
        dialect: One of :data:`DIALECT_NAMES`, or a dialect from :func:`generic` (for
            which every event but a ``ping`` is progress).

    Raises:
        ValueError: an unknown dialect name.
    """

    def __init__(self, dialect: str | Dialect = "auto") -> None:
        self._dialect = make_dialect(dialect) if isinstance(dialect, str) else dialect

    def of(self, item: object) -> bool:
        """Whether ``item`` (an Event, a Comment, any item) moves the answer on."""
        if not isinstance(item, Event):
            return False
        try:
            payload = self._dialect.decode(item)
        except PayloadError:
            return True  # an event nonetheless; the Tracker reports the bad payload
        return self._dialect.current().moves(item, payload)
