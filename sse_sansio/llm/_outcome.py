# What the tracker reports: the outcome of one streamed LLM response, and the error for
# a payload that is not the JSON its dialect promises.
#
# The four outcome words, the "kind" of the JSON line and the exit statuses are fixed by
# the issue and by the command line's shared table (completed 0, cut 3, stopped 4,
# failed 5): outside checks read them, so they never change.

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Final, Literal, NamedTuple

from sse_sansio._errors import RemoteProtocolError

from ._usage import UNAVAILABLE, Usage

__all__ = ["EXIT_STATUS", "Outcome", "PayloadError", "Verdict"]

OutcomeWord = Literal["completed", "stopped", "failed", "cut"]
CutWhere = Literal["mid-event", "before-terminal", "unfinished", "gave-up"]

# The command line's exit status for each outcome (a protocol error exits with 1).
EXIT_STATUS: Final[dict[str, int]] = {"completed": 0, "cut": 3, "stopped": 4, "failed": 5}


@dataclass(frozen=True)
class Outcome:
    """How one streamed LLM response ended, judged by the rules of its API.

    Attributes:
        outcome: ``"completed"`` (the API said the answer is finished, a turn that ends
            in tool calls included), ``"stopped"`` (the model stopped for a reason that
            is not success: a token limit, a content filter, a refusal, a paused turn),
            ``"failed"`` (the API reported an error inside the stream) or ``"cut"``
            (the stream ended before the API said it was over).
        reason: What happened, in words a person can act on.
        dialect: The dialect that judged the stream (for ``"auto"``, the one detected,
            or ``"auto"`` when no event of a known API arrived).
        stop_reason: The API's own word for why the answer ended (``"stop"``,
            ``"length"``, ``"end_turn"``, ``"max_tokens"``, ``"MAX_TOKENS"``,
            ``"max_output_tokens"``...), when it gave one; for a cut, the last one seen.
        error_type: For ``"failed"``: the error's type or code, as the API named it.
        error_message: For ``"failed"``: the error's message.
        cut: For ``"cut"``: ``"mid-event"`` (the stream ended inside an event, which
            was discarded), ``"before-terminal"`` (it ended between events, before
            the API's terminal event), ``"unfinished"`` (the terminal event came, but
            the API never said why the answer ended: no finish or stop reason) or
            ``"gave-up"`` (the caller stopped reading before the API said it was over:
            a watchdog's verdict, a timeout; :meth:`Tracker.end`'s ``gave_up``).
        offset: The stream offset the outcome points at: the start of the event that
            decided it, or for a cut the end of the last complete item (where the lost
            part begins); ``None`` when unknown (items built by hand).
        events: How many events the tracker was fed.
        usage: The token usage the stream reported, with its provenance
            (``"reported"``, ``"partial"`` or ``"unavailable"``): a :class:`Usage`.
    """

    outcome: OutcomeWord
    reason: str
    dialect: str
    stop_reason: str | None = None
    error_type: str | None = None
    error_message: str | None = None
    cut: CutWhere | None = None
    offset: int | None = None
    events: int = 0
    usage: Usage = UNAVAILABLE

    @property
    def exit_status(self) -> int:
        """The command line's exit status: 0 completed, 3 cut, 4 stopped, 5 failed."""
        return EXIT_STATUS[self.outcome]

    def to_json(self) -> dict[str, Any]:
        """The JSON object ``--llm`` prints last: ``{"kind": "outcome", ...}``, with
        ``usage`` as an object of its five fields."""
        return {"kind": "outcome", **asdict(self)}


class Verdict(NamedTuple):
    """A dialect's judgement, before the tracker adds the dialect, offset and count."""

    outcome: OutcomeWord
    reason: str
    stop_reason: str | None = None
    error_type: str | None = None
    error_message: str | None = None
    cut: CutWhere | None = None
    offset: int | None = None


class PayloadError(RemoteProtocolError):
    """An event's ``data`` is not the JSON its dialect documents.

    A :class:`~sse_sansio.RemoteProtocolError`: the peer (or something between it and
    you) sent it.  ``offset`` is the stream offset of the event's first byte
    (``Event.start``), and the message names the event's type and that offset.
    """
