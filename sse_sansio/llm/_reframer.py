# The re-framer: repairs, for a proxy, the shapes of an LLM stream that the vendors'
# own decoders trip over, and says what it repaired.
#
# What breaks clients, seen in gateways' issue threads: a proxy that drops the event:
# lines (Anthropic's SDK dispatches on the event name, so every event is lost); an
# error reported in a field the format ignores (llama.cpp's `error: {...}` line) or in
# a JSON shape under another event name, which decoders pass over as data; blocks that
# carry no JSON (an empty data line as a keep-alive), which make a JSON decoder raise;
# an error event a gateway injects after a read error, glued into the event that was
# open.  Each dialect's own error event and naming rules are those the dialect pages
# cite (docs/llm-reframer.rst has the table); they live in the dialect modules
# (Dialect.named_events, standard_error(), error_event()), and this module asks the
# class the registry keeps under the name it was given.
#
# Strategy: items in, items out.  feed() returns the item itself when nothing needs
# repair (so a keep_raw proxy forwards item.raw, byte for byte), else the repaired
# items, each repair preceded by a Diagnostic item (code "reframe-...") saying what was
# done and where.  Only what may need repair is decoded: an unnamed event in a dialect
# with named events, an event whose data mentions "error", so a stream in good shape
# costs a substring search per event.  Nothing is on unless a Reframer is made: a
# pass-through proxy keeps its bytes.
#
# Invariants: the output is a valid stream of the dialect (every Event built here goes
# through the Event constructor and serialize()); a repair never invents content, only
# moves what the upstream sent into the dialect's shape; an `error:` field is seen only
# in raw bytes (Connection(keep_raw=True)), since the parser rightly ignores it.

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any, Final

from sse_sansio._events import AnyItem, Comment, Diagnostic, EndOfStream, Event, new_event
from sse_sansio._pickling import public_reduce, restore
from sse_sansio._serializer import serialize

from ._dialect import NO_EVENT_TYPE, dumps, get, text
from ._registry import DIALECTS, REFRAMER_DIALECTS

__all__ = ["Reframer"]

# A line of raw bytes that is an `error:` field (llama.cpp's in-stream error).
_ERROR_LINE: Final = re.compile(rb"^error:[ ]?(.*?)\r?$", re.MULTILINE)


class Reframer:
    """Repair an LLM stream on its way through a proxy, into ``dialect``'s own shape.

    Feed it every item the upstream connection returns; forward what it returns.  Each
    repair comes with a :class:`~sse_sansio.Diagnostic` item before the repaired
    items (``code`` one of ``"reframe-event-line"``, ``"reframe-error"``,
    ``"reframe-dropped"``, ``"reframe-closed-event"``): log it, do not forward it
    (:meth:`to_bytes` leaves it out).

    Args:
        dialect: One of :data:`REFRAMER_DIALECTS`: the shape the client expects.

    Raises:
        ValueError: another dialect name (``"auto"`` cannot say what to write).
    """

    def __init__(self, dialect: str) -> None:
        if dialect not in REFRAMER_DIALECTS:
            raise ValueError(
                f"Reframer needs the client's dialect, one of {', '.join(REFRAMER_DIALECTS)}; "
                f"got {dialect!r}"
            )
        self.dialect = dialect
        self._rules = DIALECTS[dialect]
        self._cut_inside = False  # the upstream ended inside an event

    def feed(self, item: AnyItem) -> list[AnyItem]:
        """The items to forward for ``item``: ``[item]`` when it needs no repair."""
        out: list[AnyItem] = []
        if isinstance(item, Event):
            out = self._event(item)
        else:
            if isinstance(item, EndOfStream):
                self._cut_inside = bool(item.partial_event or item.partial_line)
            out = [item]
        raw = getattr(item, "raw", None)
        if isinstance(raw, bytes) and b"error:" in raw:
            out += self.feed_raw(raw, at=getattr(item, "start", -1))
        return out

    def feed_raw(self, data: bytes, *, at: int = -1) -> list[AnyItem]:
        """The error events for ``error:`` lines in ``data``: bytes that a
        ``keep_raw=True`` connection's ``take_raw()`` handed out (the parser ignores
        unknown fields, so only the raw bytes show them).  Forward ``data`` as well."""
        out: list[AnyItem] = []
        for match in _ERROR_LINE.finditer(data):
            value = match[1].decode("utf-8", "replace")
            try:
                error: Any = json.loads(value)
            except (ValueError, RecursionError):
                error = value
            error = get(error, "error") or error  # {"error": {...}} or the object itself
            out.append(_note(at, "reframe-error", "an error: field became the error event"))
            out.append(self._error_event(error))
        return out

    def error(
        self, message: str, *, error_type: str | None = None, open_event: bool | None = None
    ) -> list[AnyItem]:
        """The dialect's own error event, for a proxy that reports a failure itself
        (an upstream read error, a timeout).

        Args:
            message: What went wrong, for the client.
            error_type: The error's type or code (the dialect's default when None).
            open_event: Whether the bytes already sent end inside an event; None: as
                the upstream's end of stream said (fed before).  When open, the output
                starts with a ``"reframe-closed-event"`` Diagnostic, which
                :meth:`to_bytes` writes as the line ends that close that event, so
                the error is an event of its own, not data glued to the open one.
        """
        error: dict[str, Any] = {"message": message}
        if error_type is not None:
            error["type"] = error_type
        out: list[AnyItem] = []
        if self._cut_inside if open_event is None else open_event:
            out.append(
                _note(
                    -1,
                    "reframe-closed-event",
                    "the open event was closed before the injected error",
                )
            )
            self._cut_inside = False
        out.append(self._error_event(error))
        return out

    @staticmethod
    def to_bytes(items: Iterable[AnyItem]) -> bytes:
        """The bytes to send for ``items``: an item's own ``raw`` where it has it (a
        keep_raw connection's items that needed no repair), else serialize()'s; a
        ``"reframe-closed-event"`` Diagnostic as ``b"\\n\\n"``; other items nothing."""
        out = bytearray()
        for item in items:
            if isinstance(item, (Event, Comment)):
                out += item.raw if item.raw is not None else serialize(item)
            elif isinstance(item, Diagnostic) and item.code == "reframe-closed-event":
                # Ends the open line, then the open block: whatever was in it is
                # dispatched as it was, and what follows starts afresh.
                out += b"\n\n"
            elif isinstance(item, EndOfStream) and item.raw:
                out += item.raw
        return bytes(out)

    # -- the repairs ---------------------------------------------------------------

    def _event(self, event: Event) -> list[AnyItem]:
        if not event.data.strip():
            # No JSON at all (a keep-alive written as an event): every dialect's
            # decoder would raise on it, and it carries nothing.
            return [
                _note(event.start, "reframe-dropped", f"an empty {event.type!r} event was dropped")
            ]
        named = self._rules.named_events and event.type == NO_EVENT_TYPE
        if not (named or event.type == "error" or "error" in event.data):
            return [event]
        try:
            payload: Any = json.loads(event.data)
        except (ValueError, RecursionError):
            payload = None
        error = self._error_in(event, payload)
        if error is not None:
            return [
                _note(
                    event.start,
                    "reframe-error",
                    f"a non-standard error ({event.type!r} event) became the error event",
                ),
                self._error_event(error),
            ]
        kind = get(payload, "type")
        if named and _event_name(kind):
            renamed = Event(type=kind, data=event.data, id=event.id, retry=event.retry)
            return [_note(event.start, "reframe-event-line", f"added event: {kind}"), renamed]
        return [event]

    def _error_in(self, event: Event, payload: Any) -> Any:
        """The error an event holds in a shape the dialect does not decode, or None."""
        if payload is None:
            # Text that is not JSON under the name "error": the error is the text.
            return event.data if event.type == "error" else None
        if self._rules.standard_error(event, payload):
            return None
        error = get(payload, "error")
        if error:
            return error
        if event.type == "error" or get(payload, "type") == "error":
            return payload
        return None

    def _error_event(self, error: Any) -> Event:
        """The dialect's own error event for an error object or message."""
        if isinstance(error, dict):
            message = text(error.get("message")) or _quoted(error)
            kind = text(error.get("type")) or text(error.get("status")) or text(error.get("code"))
        else:
            message, kind = text(error) or _quoted(error), None
        return self._rules.error_event(message, kind)

    # Pickling (issue 32, item 4): a reframer mid-stream is worth keeping (whether the
    # upstream was cut inside an event is plain data).  Its pickle names
    # sse_sansio.llm.Reframer only: its rules, a dialect class of a private room, go as
    # the dialect's name and are looked up again on load.
    def __reduce__(self) -> tuple[object, ...]:
        return public_reduce(self, _rules=self._rules.name)

    def __setstate__(self, state: dict[str, Any]) -> None:
        restore(self, {**state, "_rules": DIALECTS[state["_rules"]]})


def _note(start: int, code: str, message: str) -> Diagnostic:
    """A Diagnostic at the stream offset ``start`` (-1: unknown)."""
    return new_event(Diagnostic, (code, message, start, start))


def _quoted(error: Any) -> str:
    """An error object as JSON text, for a message (one too deep to write: said so)."""
    try:
        return dumps(error)
    except RecursionError:
        return "an error object nested too deeply to quote"


def _event_name(kind: Any) -> bool:
    """``kind`` can be an event: line: a non-empty string of one line that UTF-8 can
    carry (a lone surrogate, from an escape in valid JSON, cannot be written)."""
    if not isinstance(kind, str) or not kind or "\r" in kind or "\n" in kind:
        return False
    return kind.isascii() or _encodes(kind)


def _encodes(value: str) -> bool:
    try:
        value.encode()
    except UnicodeEncodeError:
        return False
    return True
