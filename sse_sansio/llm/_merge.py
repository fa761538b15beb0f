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
#
# Linear (issue 36, item 16: 32,000 held deltas took 11.8 s): a Coalescer merges each
# new delta into the event the last merge returned, so re-reading that event (decoding
# its JSON, re-encoding all its text) made a run of n deltas cost O(n^2) in JSON work.
# Instead the TextMerge keeps, for the event it returned last, its "frame" (the object
# with a placeholder where the text goes) and its text already encoded as JSON; merging
# the next delta into it decodes and encodes only that delta and the small frame, and
# joins the encoded texts.  So every delta's text goes through json once in either
# direction, whatever the run's length; what remains per merge is copying the joined
# text into the new event's data (a memcpy: the Event must hold its data whole).  The
# encoding of a text is the encodings of its pieces end to end (JSON escapes character
# by character), so the data is byte for byte what encoding the joined object gives;
# a piece holding a lone surrogate (half of a pair split across two deltas) is written
# with ASCII escapes, so the two halves meet again as a valid escaped pair.
#
# The Coalescer's size (issue 42, item 6: through a Coalescer whose max_bytes is large,
# each merge serialized the whole merged event again to learn its size): size() gives
# the bytes serialize() writes for the event the last merge returned, by arithmetic:
# the UTF-8 length of the encoded text is kept as the pieces join (each piece encoded
# once), plus the small frame around it and the event's lines (serialized once for an
# event of one character's data).  So the Coalescer serializes a merged event once,
# when it seals it.

from __future__ import annotations

import json
from typing import Any, Final

from sse_sansio._events import Event, new_event
from sse_sansio._pickling import public_reduce, restore
from sse_sansio._serializer import serialize

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
        # The event the last merge returned, its frame, its text encoded as JSON, and
        # the UTF-8 size of that encoded text.
        self._held: tuple[Event, dict[str, Any], str, int] | None = None
        self._size = 0  # what serialize() writes for that event

    def merge(self, first: Event, second: Event) -> Event | None:
        """The one event that says what ``first`` then ``second`` say, or None."""
        shape = self._shape
        if first.type != shape.event_type or second.type != shape.event_type:
            return None
        if first.retry is not None or second.retry is not None:
            return None
        if second.id and first.id and second.id != first.id:
            return None  # the client's last event ID would skip a value
        held = self._held
        start = held[1:] if held is not None and held[0] is first else self._start(first)
        b = _object(second.data)
        text_b = None if b is None else _text(b, shape.text)
        if start is None or b is None or text_b is None:
            return None
        frame, encoded, encoded_size = start
        # Everything but the text and the "latest" fields must be equal.
        if _with(b, shape.text, _HOLE, frame, shape.latest) != frame:
            return None
        joined = _with(frame, shape.text, _HOLE, b, shape.latest)
        head, hole, tail = json.dumps(joined, ensure_ascii=False, separators=_COMPACT).partition(
            _HOLE_JSON
        )
        if not hole or _HOLE_JSON in tail:  # another field holds the placeholder
            return None
        piece = _encoded(text_b)
        encoded += piece
        encoded_size += len(piece.encode())  # (_encoded() text always encodes)
        # Past the constructor's checks, which hold: JSON text has no line break, and
        # the type and id are those of checked events.
        data = "".join((head, encoded, tail))
        event = new_event(Event, (first.type, data, second.id or first.id, None, -1, -1, None))
        size = _framed(event, head, tail, encoded_size)
        if size is None:
            return None  # a field holds a lone surrogate: as sent, escaped, or not at all
        self._held = (event, joined, encoded, encoded_size)
        self._size = size
        return event

    def size(self, event: Event) -> int | None:
        """The bytes :func:`~sse_sansio.serialize` writes for ``event`` when it is the
        event the last merge returned (kept by arithmetic, not by serializing it), else
        None.  The :class:`~sse_sansio.Coalescer` asks it for the size of what it holds."""
        held = self._held
        return self._size if held is not None and held[0] is event else None

    def _start(self, first: Event) -> tuple[dict[str, Any], str, int] | None:
        """The frame and encoded text of an event no merge made, if it is a text delta
        whose fixed and empty fields hold."""
        shape = self._shape
        a = _object(first.data)
        text_a = None if a is None else _text(a, shape.text)
        if a is None or text_a is None:
            return None
        if any(_at(a, path) != value for path, value in shape.fixed):
            return None
        if any(a.get(key) not in (None, []) for key in shape.empty):
            return None
        encoded = _encoded(text_a)
        return _with(a, shape.text, _HOLE, a, ()), encoded, len(encoded.encode())

    # Pickling (issue 32, item 4): a TextMerge holds only its dialect's rules, so it
    # pickles (inside a Coalescer, say) as sse_sansio.llm.TextMerge with its dialect's
    # name; the rules, a NamedTuple of a private room, are looked up again on load.
    # The frame of the event it returned last is a cache (the slow path rebuilds it
    # from the event), so it is left out: a copy starts afresh and writes the same bytes.
    def __reduce__(self) -> tuple[object, ...]:
        return public_reduce(self, _shape=self.dialect, _held=None, _size=None)

    def __setstate__(self, state: dict[str, Any]) -> None:
        restore(self, {**state, "_shape": _shape(state["_shape"])})


# Where a frame's text goes: no API's delta holds NULs around these words, and a frame
# whose JSON holds the placeholder anywhere else is not merged.
_HOLE: Final = "\x00sse_sansio.TextMerge\x00"
_HOLE_JSON: Final = json.dumps(_HOLE)[1:-1]
_COMPACT: Final = (",", ":")


def _framed(event: Event, head: str, tail: str, encoded_size: int) -> int | None:
    """What serialize() writes for ``event``, whose data is ``head``, the encoded text
    (``encoded_size`` bytes) and ``tail``: the lines of an event of one character's
    data, less that character, plus the data's bytes; None when the frame around the
    text does not encode (a field other than the text holds a lone surrogate, which the
    events sent escaped: they stay apart, as sent)."""
    try:
        around = len(head.encode()) + len(tail.encode())
    except UnicodeEncodeError:
        return None
    lines = serialize(new_event(Event, (event.type, "x", event.id, None, -1, -1, None)))
    return len(lines) - 1 + around + encoded_size


def _encoded(text: str) -> str:
    """``text`` as it appears inside a JSON string (without the quotes): characters
    beyond ASCII as they are, but ASCII escapes for a text with a lone surrogate."""
    out = json.dumps(text, ensure_ascii=False)
    if not out.isascii():
        try:
            out.encode()
        except UnicodeEncodeError:
            out = json.dumps(text)
    return out[1:-1]


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
    """A copy of ``obj`` with ``text`` at ``path`` and the ``latest`` fields of ``other``.

    Only the containers on ``path`` (and the top level) are copied: the rest is shared,
    since nothing here changes an object once made."""
    out: dict[str, Any] = _replaced(obj, path, text)
    for key in latest:
        if key in other:
            out[key] = other[key]
        else:
            out.pop(key, None)
    return out


def _replaced(node: Any, path: Path, text: str) -> Any:
    """A copy of ``node`` with ``text`` at ``path`` (a list on the way has one item)."""
    if not path:
        return text
    step, rest = path[0], path[1:]
    if isinstance(step, int):
        return [_replaced(node[0], rest, text)]
    out = dict(node)
    out[step] = _replaced(node[step], rest, text)
    return out
