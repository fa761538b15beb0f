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
# "auto" detection), so this module adds only the question "does it move?".  For a
# dialect this module has no rule for (generic(), one added later), every event but a
# ``ping`` is progress: the Watchdog's own default.  A payload that is not the JSON the
# dialect documents counts as progress too: the Tracker reports it, not the watchdog.

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from sse_sansio._events import Event

from ._dialects import Auto, Dialect, _get, make_dialect
from ._outcome import PayloadError

__all__ = ["Progress"]

# The delta fields that carry output, in the Chat Completions chunk object (and the
# reasoning fields of OpenAI-compatible servers: DeepSeek, vLLM, OpenRouter).
_CHAT_TEXT: Final = ("content", "refusal", "reasoning_content", "reasoning")
_CHAT_CALLS: Final = ("tool_calls", "function_call")
# Responses events that move the answer besides every "*.delta" and "*.done".
_RESPONSES_MOVES: Final = frozenset(
    {
        "response.output_item.added",
        "response.content_part.added",
        "response.completed",
        "response.incomplete",
        "response.failed",
        "error",
    }
)
# Anthropic: all but message_start (sent before the model writes) and ping.
_ANTHROPIC_MOVES: Final = frozenset(
    {
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
        "error",
    }
)
_NO_EVENT_TYPE = "message"


def _kind(event: Event, payload: Any) -> Any:
    """The event's type, or the payload's "type" when the event has no event: line."""
    return event.type if event.type != _NO_EVENT_TYPE else _get(payload, "type")


def _chat(event: Event, payload: Any) -> bool:
    if event.data == "[DONE]" or event.type == "error" or _get(payload, "error"):
        return True
    choices = _get(payload, "choices")
    for choice in choices if isinstance(choices, list) else ():
        if isinstance(_get(choice, "finish_reason"), str):
            return True
        delta = _get(choice, "delta")
        if any(_get(delta, key) for key in _CHAT_TEXT + _CHAT_CALLS):
            return True
    return False


def _responses(event: Event, payload: Any) -> bool:
    kind = _kind(event, payload)
    return isinstance(kind, str) and (
        kind.endswith((".delta", ".done")) or kind in _RESPONSES_MOVES
    )


def _anthropic(event: Event, payload: Any) -> bool:
    kind = _kind(event, payload)
    return isinstance(kind, str) and kind in _ANTHROPIC_MOVES  # a list is unhashable


def _gemini(event: Event, payload: Any) -> bool:
    if _get(payload, "error") or _get(payload, "promptFeedback", "blockReason"):
        return True
    candidates = _get(payload, "candidates")
    for candidate in candidates if isinstance(candidates, list) else ():
        if _get(candidate, "finishReason") or _get(candidate, "content", "parts"):
            return True
    return False


def _other(event: Event, payload: Any) -> bool:
    return bool(_kind(event, payload) != "ping")


_RULES: Final[dict[str, Callable[[Event, Any], bool]]] = {
    "openai-chat": _chat,
    "openai-responses": _responses,
    "anthropic": _anthropic,
    "gemini": _gemini,
}


class Progress:
    """Say which items of one LLM stream are progress, for :class:`sse_sansio.Watchdog`.

    A text, reasoning or tool delta is progress, and so is what ends the answer (a
    finish or stop reason, the terminal event, an error); an Anthropic ``ping``, a
    chunk with an empty delta or only usage, a comment are life only::

        progress = llm.Progress("anthropic")
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
        dialect = self._dialect
        if isinstance(dialect, Auto) and dialect.inner is not None:
            dialect = dialect.inner
        return _RULES.get(dialect.name, _other)(item, payload)
