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
#
# Invariant: the bytes written are exactly the values checked here.  serialize() does not
# trust the item it is given: one made with ``tuple.__new__`` or rebuilt from a pickle
# never met the constructor, and a subclass can override the properties.  So it reads the
# value slots with tuple's own methods, copies each value to an exact str or int (a str
# subclass's ``__contains__`` could pass the check and its ``__format__`` or ``__str__``
# write another line; an int subclass's too), checks the copies with the constructors'
# own rules, and writes only the copies, by concatenation: no f-string or format() ever
# sees a caller's object.
#
# The fast path (issue 33: serialize() within 3x of an f-string) keeps that invariant
# for the items nearly every call gets: an exact Event (or Comment) whose value slots
# hold exact strs and no retry.  For those the copies are the values themselves, the
# class's methods are tuple's own, and the rules reduce to a few substring tests, each
# the same test the constructor makes: the type is "message" or a non-empty str
# without CR or LF, the id has no CR, LF or NUL, the comment text no CR or LF.  (Its
# f-strings see exact strs only, which format as themselves.)  An item
# that fails any of them (or has a retry, a subclass, a short tuple) takes the full
# path, which refuses or writes it exactly as before.  So an Event built by tuple.__new__
# or unpickled is still checked, at the price of those tests, not trusted: being exact
# types is what makes the tests sound, not where the item came from.

from __future__ import annotations

from ._errors import LocalProtocolError
from ._events import Comment, Event, comment_text, event_values

__all__ = ["serialize"]

_slots = tuple.__getitem__


def serialize(item: Event | Comment) -> bytes:
    """Encode an Event or a Comment as UTF-8 ``text/event-stream`` bytes.

    An Event becomes its ``event:`` line (left out for the default type
    ``"message"``), one ``data:`` line per line of ``data`` (split on CRLF, LF and CR),
    an ``id:`` line when ``id`` is not empty, a ``retry:`` line when ``retry`` is set,
    then the blank line that dispatches it.  A Comment becomes one ``:`` line.

    An event with an empty ``id`` writes no ``id:`` line, so the receiver keeps the
    last event ID it had; to clear it, write the bytes ``b"id\\n"`` yourself.

    The values are checked again here, by the constructors' rules, and what is written
    is exactly what was checked: an item that bypassed the constructor (``tuple.__new__``,
    a crafted pickle) or whose fields are subclasses of str or int with their own
    ``__format__``, ``__str__`` or ``__contains__`` cannot inject a line.

    Raises:
        LocalProtocolError: ``item`` is neither an Event nor a Comment, a field breaks
            the constructors' rules (CR or LF in ``type``, ``id`` or ``text``, NUL in
            ``id``, an empty ``type``, a field of the wrong type, a bad ``retry``), or
            its text holds a lone surrogate, which UTF-8 cannot encode.
    """
    cls = type(item)  # not isinstance(): an object can fake its __class__
    if cls is Event:
        plain = _plain_event(item)
        if plain is not None:
            try:
                return plain.encode()
            except UnicodeEncodeError:
                pass  # the full path words the error
    elif cls is Comment:
        plain = _plain_comment(item)
        if plain is not None:
            return _encode(plain)
    if issubclass(cls, Event):
        return _encode(_event_text(_values(item, 4, "Event")))
    if issubclass(cls, Comment):
        (text,) = _values(item, 1, "Comment")
        return _encode(": " + comment_text(text) + "\n")
    raise LocalProtocolError(f"serialize() takes an Event or a Comment, not {cls.__name__}")


def _values(item: Event | Comment, count: int, owner: str) -> tuple[object, ...]:
    """The item's first ``count`` slots (its value fields), read past any override."""
    values = _slots(item, slice(0, count))
    if len(values) != count:
        raise LocalProtocolError(f"malformed {owner}: {count} value fields expected")
    return values


def _plain_event(item: tuple[object, ...]) -> str | None:
    """The text of an exact Event whose values are exact strs that pass the
    constructor's tests and whose retry is None; None for any other (the full path's)."""
    try:
        event_type, data, event_id, retry = item[:4]  # an exact Event: tuple's own slice
    except ValueError:  # a malformed tuple.__new__ item
        return None
    if retry is not None or type(event_type) is not str or type(data) is not str:
        return None
    if type(event_id) is not str:
        return None
    if event_type == "message" and not event_id and "\n" not in data and "\r" not in data:
        return f"data: {data}\n\n"  # the common event; exact strs format as themselves
    if event_id and ("\n" in event_id or "\r" in event_id or "\0" in event_id):
        return None
    if event_type != "message" and (not event_type or "\n" in event_type or "\r" in event_type):
        return None
    if "\n" in data or "\r" in data:
        # "split on CRLF, LF and CR": one data line per line of data.
        data = data.replace("\r\n", "\n").replace("\r", "\n").replace("\n", "\ndata: ")
    head = "" if event_type == "message" else f"event: {event_type}\n"
    tail = f"id: {event_id}\n\n" if event_id else "\n"
    return f"{head}data: {data}\n{tail}"


def _plain_comment(item: tuple[object, ...]) -> str | None:
    """The line of an exact Comment whose text is an exact str without CR or LF."""
    try:
        text, _, _, _ = item
    except ValueError:
        return None
    if type(text) is not str or "\n" in text or "\r" in text:
        return None
    return ": " + text + "\n"


def _event_text(values: tuple[object, ...]) -> str:
    event_type, data, event_id, retry = event_values(*values)
    parts = [] if event_type == "message" else ["event: " + event_type + "\n"]
    if "\r" in data:
        data = data.replace("\r\n", "\n").replace("\r", "\n")
    parts.extend("data: " + line + "\n" for line in data.split("\n"))
    if event_id:
        parts.append("id: " + event_id + "\n")
    if retry is not None:
        # An exact int whose digits event_values() checked that str() can write.
        parts.append("retry: " + int.__repr__(retry) + "\n")
    parts.append("\n")
    return "".join(parts)


def _encode(text: str) -> bytes:
    try:
        return text.encode()
    except UnicodeEncodeError as exc:
        # Only a lone surrogate (from "surrogateescape" decoding, say) gets here.
        raise LocalProtocolError(f"cannot encode as UTF-8: {exc.reason} at {exc.start}") from None
