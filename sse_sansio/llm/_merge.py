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
# Shapes, from each API's streaming reference (see _dialects.py for the sources):
# - openai-chat: {"choices": [{"index", "delta": {"content": TEXT}, "finish_reason": null}], ...}
# - openai-responses: event response.output_text.delta, {"type", "item_id",
#   "output_index", "content_index", "delta": TEXT, "sequence_number", "logprobs": []}
# - anthropic: event content_block_delta, {"type": "content_block_delta", "index",
#   "delta": {"type": "text_delta", "text": TEXT}}
# - gemini: {"candidates": [{"content": {"parts": [{"text": TEXT}], "role"}}],
#   "usageMetadata", "modelVersion", "responseId"}

from __future__ import annotations

import copy
import json
from typing import Any, Final, NamedTuple

from sse_sansio._events import Event

from ._dialects import DIALECT_NAMES

__all__ = ["TextMerge"]

Path = tuple[str | int, ...]


class _Shape(NamedTuple):
    event_type: str  # the event: line the deltas carry ("message" when none)
    text: Path  # where the text is; every list on the way must have one element
    fixed: tuple[tuple[Path, str], ...] = ()  # fields that must hold these values
    latest: tuple[str, ...] = ()  # top-level fields that may differ: keep the later one
    empty: tuple[str, ...] = ()  # fields that must be absent or empty to join


_SHAPES: Final[dict[str, _Shape]] = {
    "openai-chat": _Shape("message", ("choices", 0, "delta", "content"), latest=("obfuscation",)),
    "openai-responses": _Shape(
        "response.output_text.delta",
        ("delta",),
        fixed=((("type",), "response.output_text.delta"),),
        latest=("sequence_number", "obfuscation"),
        empty=("logprobs",),
    ),
    "anthropic": _Shape(
        "content_block_delta",
        ("delta", "text"),
        fixed=((("type",), "content_block_delta"), (("delta", "type"), "text_delta")),
    ),
    "gemini": _Shape(
        "message", ("candidates", 0, "content", "parts", 0, "text"), latest=("usageMetadata",)
    ),
}


class TextMerge:
    """Join consecutive text deltas of one dialect, for ``Coalescer(merge=...)``.

    ``merge(first, second)`` returns one event equal in meaning to ``first`` then
    ``second`` (the texts end to end, the later sequence number and usage, the later
    event ID), or None when they are not two plain text deltas of the same block with
    all else equal: then the coalescer keeps them apart.  The assembled text and the
    :class:`Tracker`'s outcome are those of the original stream (its event count and
    offsets are the merged stream's own).

    Args:
        dialect: ``"openai-chat"``, ``"openai-responses"``, ``"anthropic"`` or
            ``"gemini"`` (a proxy knows which API it relays: ``"auto"`` is refused).

    Raises:
        ValueError: any other dialect name.
    """

    def __init__(self, dialect: str) -> None:
        shape = _SHAPES.get(dialect)
        if shape is None:
            names = ", ".join(name for name in DIALECT_NAMES if name in _SHAPES)
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
