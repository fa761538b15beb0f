# Merging consecutive text deltas into one event, for the Coalescer's ``merge``.
#
# A streamed answer is one event per token; a proxy that coalesces writes can also send
# fewer events by joining two text deltas into one whose text is theirs end to end.
# The joined event must be one the API could have sent (schema-valid: its SDK parses
# it) and must change nothing else: the assembled text, the outcome the Tracker gives,
# the last event ID.  So two events are joined only when they are the same kind of
# text delta and every other field is equal, but for the fields that legitimately
# differ from one event to the next, where the later value is kept (a sequence number,
# cumulative usage, OpenAI's random ``obfuscation`` padding).  Anything else (a role,
# a finish reason, logprobs, several choices or parts, a tool delta, an id line that
# changes, a retry field) keeps the events apart.
#
# Shapes: each dialect module gives its text delta's shape (Dialect.text_delta, a
# DeltaShape: the event type, where the text is, the fields that must hold fixed values,
# that may differ, that must be empty), from its API's streaming reference; a dialect
# without one (the AI SDK stream, "auto", generic()) has no merge rules.

from __future__ import annotations

import copy
import json
from typing import Any

from sse_sansio._events import Event
from sse_sansio._pickling import public_reduce, restore

from ._dialect import DeltaShape, Path
from ._registry import DIALECTS

__all__ = ["TextMerge"]


def _shape(dialect: str) -> DeltaShape | None:
    """The text delta's shape of the dialect named ``dialect``, or None."""
    known = DIALECTS.get(dialect)
    return None if known is None else known.text_delta


class TextMerge:
    """Join consecutive text deltas of one dialect, for ``Coalescer(merge=...)``.

    ``merge(first, second)`` returns one event equal in meaning to ``first`` then
    ``second`` (the texts end to end, the later sequence number and usage, the later
    event ID), or None when they are not two plain text deltas of the same block with
    all else equal: then the coalescer keeps them apart.  The assembled text and the
    :class:`Tracker`'s outcome are those of the original stream (its event count and
    offsets are the merged stream's own).

    Args:
        dialect: The API the proxy relays: one of :data:`DIALECT_NAMES` but
            ``"auto"`` (a proxy knows which API it relays) and the AI SDK stream
            (for which there are no merge rules).

    Raises:
        ValueError: any other dialect name (the message lists those with rules).
    """

    def __init__(self, dialect: str) -> None:
        shape = _shape(dialect)
        if shape is None:
            names = ", ".join(name for name in DIALECTS if _shape(name) is not None)
            raise ValueError(
                f"TextMerge: no merge rules for dialect {dialect!r}; expected one of {names}"
            )
        self.dialect = dialect
        self._shape = shape

    def merge(self, first: Event, second: Event) -> Event | None:
        """The one event that says what ``first`` then ``second`` say, or None."""
        shape = self._shape
        if first.type != shape.event_type or second.type != shape.event_type:
            return None
        if first.retry is not None or second.retry is not None:
            return None
        if second.id and first.id and second.id != first.id:
            return None  # the client's last event ID would skip a value
        a, b = _object(first.data), _object(second.data)
        if a is None or b is None:
            return None
        text_a, text_b = _text(a, shape.text), _text(b, shape.text)
        if text_a is None or text_b is None:
            return None
        if any(_at(a, path) != value for path, value in shape.fixed):
            return None
        if any(a.get(key) not in (None, []) for key in shape.empty):
            return None
        # Everything but the text and the "latest" fields must be equal.
        probe = _with(b, shape.text, text_a, a, shape.latest)
        if probe != a:
            return None
        joined = _with(a, shape.text, text_a + text_b, b, shape.latest)
        data = json.dumps(joined, ensure_ascii=False, separators=(",", ":"))
        return Event(type=first.type, data=data, id=second.id or first.id)

    # Pickling (issue 32, item 4): a TextMerge holds only its dialect's rules, so it
    # pickles (inside a Coalescer, say) as sse_sansio.llm.TextMerge with its dialect's
    # name; the rules, a NamedTuple of a private room, are looked up again on load.
    def __reduce__(self) -> tuple[object, ...]:
        return public_reduce(self, _shape=self.dialect)

    def __setstate__(self, state: dict[str, Any]) -> None:
        restore(self, {**state, "_shape": _shape(state["_shape"])})


def _object(data: str) -> dict[str, Any] | None:
    try:
        value = json.loads(data)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _at(obj: Any, path: Path) -> Any:
    """The value at ``path``, or None where a step is missing or a list is not of one."""
    for step in path:
        if isinstance(step, int):
            if not isinstance(obj, list) or len(obj) != 1:
                return None
            obj = obj[0]
        elif isinstance(obj, dict):
            obj = obj.get(step)
        else:
            return None
    return obj


def _text(obj: dict[str, Any], path: Path) -> str | None:
    value = _at(obj, path)
    return value if isinstance(value, str) else None


def _with(
    obj: dict[str, Any], path: Path, text: str, other: dict[str, Any], latest: tuple[str, ...]
) -> dict[str, Any]:
    """A copy of ``obj`` with ``text`` at ``path`` and the ``latest`` fields of ``other``."""
    out = copy.deepcopy(obj)
    node: Any = out
    for step in path[:-1]:
        node = node[0] if isinstance(step, int) else node[step]
    node[path[-1]] = text
    for key in latest:
        if key in other:
            out[key] = other[key]
        else:
            out.pop(key, None)
    return out
