# Serializing events and comments to text/event-stream bytes, for servers and for
# proxies that rewrite events.  Stateless: one call, one item, complete bytes out.
#
# The encoder is the mirror image of the parser in _connection.py: whatever it writes,
# a fresh Connection parses back to an equal item (for data whose lines end with LF:
# CR and CRLF inside data necessarily come back as LF, since all three end a line).
#
# What would change the meaning of the stream never gets this far: Event and Comment
# refuse, when they are built, CR or LF in an event type, an id or a comment (it would
# start a line the application never wrote: newline injection, a hole several servers'
# encoders have had) and NUL in an id (the parser would ignore the field).  Stripping
# such characters silently, as some encoders do, would hide the bug that produced them.

from __future__ import annotations

from ._errors import LocalProtocolError
from ._events import Comment, Event

__all__ = ["serialize"]


def serialize(item: Event | Comment) -> bytes:
    """Encode an Event or a Comment as UTF-8 ``text/event-stream`` bytes.

    An Event becomes its ``event:`` line (left out for the default type
    ``"message"``), one ``data:`` line per line of ``data`` (split on CRLF, LF and CR),
    an ``id:`` line when ``id`` is not empty, a ``retry:`` line when ``retry`` is set,
    then the blank line that dispatches it.  A Comment becomes one ``:`` line.

    An event with an empty ``id`` writes no ``id:`` line, so the receiver keeps the
    last event ID it had; to clear it, write the bytes ``b"id\\n"`` yourself.

    Raises:
        LocalProtocolError: ``item`` is neither an Event nor a Comment, or its text
            holds a lone surrogate, which UTF-8 cannot encode.  (Items with
            CR or LF in ``type``, ``id`` or ``text``, or NUL in ``id``, cannot be
            built in the first place: their constructors raise LocalProtocolError.)
    """
    if isinstance(item, Event):
        parts = [] if item.type == "message" else [f"event: {item.type}\n"]
        data = item.data
        if "\r" in data:
            data = data.replace("\r\n", "\n").replace("\r", "\n")
        parts.extend(f"data: {line}\n" for line in data.split("\n"))
        if item.id:
            parts.append(f"id: {item.id}\n")
        if item.retry is not None:
            parts.append(f"retry: {item.retry}\n")
        parts.append("\n")
        return _encode("".join(parts))
    if isinstance(item, Comment):
        return _encode(f": {item.text}\n")
    raise LocalProtocolError(f"serialize() takes an Event or a Comment, not {type(item).__name__}")


def _encode(text: str) -> bytes:
    try:
        return text.encode()
    except UnicodeEncodeError as exc:
        # Only a lone surrogate (from "surrogateescape" decoding, say) gets here.
        raise LocalProtocolError(f"cannot encode as UTF-8: {exc.reason} at {exc.start}") from None
