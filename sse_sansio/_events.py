# The items that Connection.next_event() returns.
#
# Every item is an immutable value: two items are equal when their *values* are equal
# (Event: type, data, id, retry; Comment: text; EndOfStream: what was cut off), so tests
# can write ``assert items == [Event(data="hi")]``.  Where the item lies in the stream
# (``start``/``end``) and its raw bytes (``raw``) ride along as metadata: they take no
# part in equality, hashing or repr, so an event built by hand equals the same event
# parsed from a stream.
#
# Why tuples and not frozen dataclasses: one item is built per event on the parser's hot
# path.  Measured on CPython 3.10-3.13, ``tuple.__new__`` with seven fields costs about
# 120-200 ns; a ``@dataclass(frozen=True, slots=True)`` pays ``object.__setattr__`` per
# field and costs 750-950 ns, four to six times as much, which alone would eat most of a
# microsecond-per-event budget.  A tuple subclass is immutable for free.  What it would
# leak we close off: equality compares the value fields and the class, ordering raises
# TypeError, and the public constructors validate their arguments (the parser uses the
# unchecked ``_make`` helpers, whose inputs it has already checked).  That the items are
# tuples underneath is an implementation detail, not API: do not index or unpack them.

from __future__ import annotations

from operator import itemgetter
from typing import Any

from ._errors import LocalProtocolError

__all__ = [
    "Comment",
    "DataPiece",
    "Diagnostic",
    "EndOfStream",
    "Event",
    "PiecedEvent",
    "ReceivedItem",
    "SkippedEvent",
    "Update",
]

# new_event(cls, values): an item made of values already checked, past the checks of
# the constructor (which leaves the offsets at -1); sse_sansio.llm's Reframer uses it
# for a Diagnostic at a stream offset.
new_event = tuple.__new__


def _text(owner: str, name: str, value: object, forbidden: str = "") -> str:
    """``value`` as an exact ``str``, checked; LocalProtocolError when it is not one.

    A subclass of str is copied to a plain str before it is checked, so that what is
    checked is what is stored and written: a subclass's ``__contains__``, ``__format__``
    or ``__str__`` could otherwise pass the check and write something else.
    """
    if not issubclass(type(value), str):
        raise LocalProtocolError(f"{owner}.{name} must be str, not {type(value).__name__}")
    text = str.__str__(value)
    for char in forbidden:
        if char in text:
            # CR or LF would start a new line when serialized (newline injection);
            # a parser never produces them here, so such an item is a bug upstream.
            raise LocalProtocolError(f"{owner}.{name} may not contain {char!r}: {text!r}")
    return text


def _count(owner: str, name: str, value: object, what: str) -> int:
    """``value`` as an exact non-negative ``int`` (bool refused), or LocalProtocolError.

    ``int.__index__`` copies an int subclass to a plain int, whose ``__str__`` and
    comparisons are int's own.
    """
    cls = type(value)
    if issubclass(cls, int) and not issubclass(cls, bool):
        number = int.__index__(value)  # type: ignore[arg-type]
        if number >= 0:
            return number
    raise LocalProtocolError(f"{owner}.{name} must be a non-negative int{what}, not {value!r}")


def _retry(value: object) -> int | None:
    """A valid ``retry``: None or an exact non-negative int that str() can write."""
    if value is None:
        return None
    number = _count("Event", "retry", value, " or None")
    if _digits(number) is None:
        # A parser never produces it (it ignores such values) and str() refuses it.
        raise LocalProtocolError("Event.retry has too many digits to be written")
    return number


def _digits(number: int) -> str | None:
    """The decimal digits of an exact int, or None when they are more than str() may
    write (sys.int_info's str_digits_check_threshold)."""
    try:
        return int.__repr__(number)
    except ValueError:
        return None


def event_values(
    type: object, data: object, id: object, retry: object
) -> tuple[str, str, str, int | None]:
    """An event's value fields as exact, checked values: what Event() stores and what
    serialize() writes (it checks again: an item made by ``tuple.__new__`` or from a
    pickle never went through the constructor)."""
    event_type = _text("Event", "type", type, "\r\n")
    if not event_type:
        # A parser never produces it: an empty event type buffer means "message".
        raise LocalProtocolError('Event.type may not be empty (the default is "message")')
    return (
        event_type,
        _text("Event", "data", data),
        _text("Event", "id", id, "\r\n\0"),
        _retry(retry),
    )


def comment_text(text: object) -> str:
    """A comment's text as an exact, checked str (for Comment() and serialize())."""
    return _text("Comment", "text", text, "\r\n")


def _field(index: int, doc: str) -> Any:
    return property(itemgetter(index), doc=doc)


class _Item(tuple):  # type: ignore[type-arg]
    """Shared value semantics: equal by class and value fields, unordered."""

    __slots__ = ()
    # How many leading tuple slots are value fields (the rest is metadata).
    _n_values = 0

    # Not NotImplemented for other types: Python would then fall back to tuple's own
    # comparison, and an item would equal (or sort against) a plain tuple.
    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return False
        n = self._n_values
        return self[:n] == other[:n]

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash((type(self).__name__, self[: self._n_values]))

    def _unordered(self, other: object) -> Any:
        raise TypeError(f"{type(self).__name__} items have no order")

    __lt__ = __le__ = __gt__ = __ge__ = _unordered

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickle and copy through the unchecked constructor with every slot, metadata
        # included: ``tuple.__new__(cls, values)``.  A pickle names only public paths,
        # the class (sse_sansio.Event) and builtins' tuple.__new__, so moving this
        # module breaks no pickle (sse_sansio._public).
        return (tuple.__new__, (type(self), tuple(self)))

    def __repr__(self) -> str:
        names = self._repr_fields
        inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in names)
        return f"{type(self).__name__}({inner})"

    _repr_fields: tuple[str, ...] = ()


class Event(_Item):
    """One dispatched event (the spec's ``MessageEvent``).

    Attributes:
        type: The event type: the last ``event:`` field of the block, or ``"message"``
            when the block set none (or set it to the empty string).
        data: The ``data:`` lines of the block joined with ``"\\n"``.  Plain text: the
            application decides whether it is JSON.
        id: The last event ID string in force when the event was dispatched (``""``
            when the stream never set one).  Like the browser's ``lastEventId``, it
            carries over from earlier events.
        retry: The reconnection time in milliseconds given by a valid ``retry:`` field in
            this event's own block, else ``None``.  ``Connection.retry`` keeps the
            latest value across events.
        start: Offset of the event's first field line in the stream (bytes counted from
            the first byte received, BOM included); ``-1`` for an event built by hand.
        end: Offset just past the blank line that dispatched the event; ``-1`` for an
            event built by hand.  When a chunk ends between the CR and the LF of that
            line's CRLF, the event is returned at once (never held back for a byte that
            may not come), so ``end`` stops before the LF; the LF then goes with the
            next item's ``raw`` or :meth:`Connection.take_raw`.
        raw: With ``Connection(keep_raw=True)``, the exact bytes to forward for this
            event (see ``Connection.take_raw``); otherwise ``None``.

    Only ``type``, ``data``, ``id`` and ``retry`` take part in equality and hashing.
    """

    __slots__ = ()
    # Positional class patterns (``case Event(t, d)``) and, because the class says how it
    # matches, keyword ones for pyright too, which otherwise treats a tuple subclass as
    # the builtin tuple and allows only one positional sub-pattern.
    __match_args__ = ("type", "data", "id", "retry")
    _n_values = 4
    _repr_fields = __match_args__

    type: str = _field(0, "The event type (``'message'`` by default).")
    data: str = _field(1, "The data buffer, lines joined with LF.")
    id: str = _field(2, "The last event ID string at dispatch.")
    retry: int | None = _field(3, "A valid retry value from this event's block.")
    start: int = _field(4, "Stream offset of the event's first field line.")
    end: int = _field(5, "Stream offset just past the dispatching blank line.")
    raw: bytes | None = _field(6, "The raw bytes to forward (keep_raw mode only).")

    def __new__(
        cls,
        *,
        type: str = "message",
        data: str = "",
        id: str = "",
        retry: int | None = None,
    ) -> Event:
        return new_event(cls, (*event_values(type, data, id, retry), -1, -1, None))

    @property
    def span(self) -> tuple[int, int]:
        """``(start, end)``: the event's bytes in the stream, as a slice would take them."""
        return (self[4], self[5])


class Comment(_Item):
    """A comment line (one starting with a colon), such as a ``: ping`` keepalive.

    Attributes:
        text: The line after its colon, with one leading space removed.
        start: Offset of the comment line in the stream; ``-1`` when built by hand.
        end: Offset just past the line's terminator (before the LF of a CRLF that a
            chunk end split, as for :attr:`Event.end`); ``-1`` when built by hand.
        raw: With ``Connection(keep_raw=True)``, the bytes to forward with this comment
            (empty when the comment sits inside an unfinished event: its bytes then go
            out with that event); otherwise ``None``.

    Only ``text`` takes part in equality and hashing.
    """

    __slots__ = ()
    __match_args__ = ("text",)
    _n_values = 1
    _repr_fields = __match_args__

    text: str = _field(0, "The comment text, one leading space removed.")
    start: int = _field(1, "Stream offset of the comment line.")
    end: int = _field(2, "Stream offset just past the comment line.")
    raw: bytes | None = _field(3, "The raw bytes to forward (keep_raw mode only).")

    def __new__(cls, *, text: str = "") -> Comment:
        return new_event(cls, (comment_text(text), -1, -1, None))

    @property
    def span(self) -> tuple[int, int]:
        """``(start, end)``: the comment line's bytes in the stream."""
        return (self[1], self[2])


class EndOfStream(_Item):
    """The stream has ended and every complete item before the end was delivered.

    The spec discards an event that the stream cut off before its blank line, and so
    does sse_sansio; this item says whether that happened and how much was lost.

    Attributes:
        partial_line: Bytes of the unterminated last line that were discarded (``0``
            when the stream ended on a line end).
        partial_event: True when an event had received ``data`` lines but not the blank
            line that would have dispatched it.
        raw: With ``Connection(keep_raw=True)``, the complete bytes not yet handed out
            that are safe to forward (never part of a cut-off event); otherwise ``None``.

    ``truncated`` is true when either was cut off.  Only ``partial_line`` and
    ``partial_event`` take part in equality.
    """

    __slots__ = ()
    __match_args__ = ("partial_line", "partial_event")
    _n_values = 2
    _repr_fields = __match_args__

    partial_line: int = _field(0, "Bytes of the discarded unterminated last line.")
    partial_event: bool = _field(1, "Whether an event with data was cut off.")
    raw: bytes | None = _field(2, "Safe bytes not yet handed out (keep_raw mode only).")

    def __new__(cls, *, partial_line: int = 0, partial_event: bool = False) -> EndOfStream:
        count = _count("EndOfStream", "partial_line", partial_line, "")
        return new_event(cls, (count, bool(partial_event), None))

    @property
    def truncated(self) -> bool:
        """True when the stream was cut mid-line or mid-event (something was discarded)."""
        return bool(self[0] > 0 or self[1])


# The items of the opt-in modes (Connection's on_oversize, piece_size, diagnostics and
# updates).
# A connection without those options never returns them.


class SkippedEvent(_Item):
    """An event that ``Connection(on_oversize="skip")`` skipped: it outgrew max_event_size.

    Nothing more of the block was buffered once it passed the limit: its data is lost,
    but its ``event``, ``id`` and ``retry`` lines were still interpreted, so that
    :attr:`Connection.last_event_id` and :attr:`Connection.retry` end as the spec
    would leave them (a single line longer than max_event_size is dropped whole,
    whatever its field).

    Attributes:
        type: The event type buffer at the blank line (``"message"`` if none).
        id: The last event ID string at that blank line, as for :attr:`Event.id`.
        size: The block's bytes from ``start`` up to the start of its blank line (what
            the limit counts).
        start: Offset of the block's first byte; ``-1`` when built by hand.
        end: Offset just past the blank line that ended it (as for :attr:`Event.end`).
        raw: ``b""`` with ``Connection(keep_raw=True)`` (a verbatim proxy forwards the
            stream minus skipped blocks); otherwise ``None``.

    Only ``type``, ``id`` and ``size`` take part in equality and hashing.
    """

    __slots__ = ()
    __match_args__ = ("type", "id", "size")
    _n_values = 3
    _repr_fields = __match_args__

    type: str = _field(0, "The event type buffer at the blank line.")
    id: str = _field(1, "The last event ID string at the blank line.")
    size: int = _field(2, "The block's bytes up to its blank line.")
    start: int = _field(3, "Stream offset of the block's first byte.")
    end: int = _field(4, "Stream offset just past the blank line.")
    raw: bytes | None = _field(5, "b'' in keep_raw mode, else None.")

    def __new__(cls, *, type: str = "message", id: str = "", size: int = 0) -> SkippedEvent:
        event_type, _, event_id, _ = event_values(type, "", id, None)
        count = _count("SkippedEvent", "size", size, "")
        return new_event(cls, (event_type, event_id, count, -1, -1, None))


class DataPiece(_Item):
    """A piece of the data of an event still arriving (``Connection(piece_size=n)``).

    The pieces of one event, joined, are its data: ``"".join(p.text for p in pieces)``
    equals the :attr:`Event.data` a connection without piece_size returns.  The LF
    between two data lines starts the second line's text; the spec's final LF is never
    in a piece.  A :class:`PiecedEvent` follows the last piece.

    Attributes:
        text: The decoded data, at least ``piece_size`` UTF-8 bytes of it except in the
            event's last piece.
        start: Offset where the stream bytes this piece covers begin (the first piece:
            the block's first field line); ``-1`` when built by hand.
        end: Offset just past the stream bytes it covers; ``-1`` when built by hand.
        raw: With ``Connection(keep_raw=True)``, the raw bytes received since the last
            item handed some out, for a verbatim proxy; otherwise ``None``.

    Only ``text`` takes part in equality and hashing.
    """

    __slots__ = ()
    __match_args__ = ("text",)
    _n_values = 1
    _repr_fields = __match_args__

    text: str = _field(0, "A piece of the event's data.")
    start: int = _field(1, "Stream offset where the bytes it covers begin.")
    end: int = _field(2, "Stream offset just past the bytes it covers.")
    raw: bytes | None = _field(3, "The raw bytes to forward (keep_raw mode only).")

    def __new__(cls, *, text: str = "") -> DataPiece:
        return new_event(cls, (_text("DataPiece", "text", text), -1, -1, None))


class PiecedEvent(_Item):
    """The end of an event whose data came in :class:`DataPiece` items.

    Its ``type``, ``id`` and ``retry`` are those of the :class:`Event` that a connection
    without piece_size returns for the same block; ``start`` and ``end`` are that
    Event's too.  ``raw`` (keep_raw mode) holds the bytes not handed out by a piece.
    """

    __slots__ = ()
    __match_args__ = ("type", "id", "retry")
    _n_values = 3
    _repr_fields = __match_args__

    type: str = _field(0, "The event type (``'message'`` by default).")
    id: str = _field(1, "The last event ID string at dispatch.")
    retry: int | None = _field(2, "A valid retry value from this event's block.")
    start: int = _field(3, "Stream offset of the event's first field line.")
    end: int = _field(4, "Stream offset just past the dispatching blank line.")
    raw: bytes | None = _field(5, "The raw bytes to forward (keep_raw mode only).")

    def __new__(
        cls, *, type: str = "message", id: str = "", retry: int | None = None
    ) -> PiecedEvent:
        event_type, _, event_id, event_retry = event_values(type, "", id, retry)
        return new_event(cls, (event_type, event_id, event_retry, -1, -1, None))


class Diagnostic(_Item):
    """Something the spec tells a parser to ignore, made visible
    (``Connection(diagnostics=True)``).

    Attributes:
        code: What was seen, one of ``"unknown-field"``, ``"invalid-retry"``,
            ``"id-with-nul"``, ``"discarded-block"``, or a start-of-stream shape:
            ``"http-status-line"``, ``"http-header"``, ``"chunk-size"``, ``"html"``,
            ``"json"``, ``"gzip"``.
        message: A sentence for a human; its wording may change.
        start: Offset of the line or bytes concerned; ``-1`` when built by hand.
        end: Offset just past them; ``-1`` when built by hand.
        raw: ``b""`` with ``Connection(keep_raw=True)``: a diagnostic hands out no
            bytes, the line it names is forwarded with the next item that does (a
            verbatim proxy writes every item's ``raw``); otherwise ``None``.

    Only ``code`` and ``message`` take part in equality and hashing.
    """

    __slots__ = ()
    __match_args__ = ("code", "message")
    _n_values = 2
    _repr_fields = __match_args__

    code: str = _field(0, "What was seen (a fixed string).")
    message: str = _field(1, "A sentence for a human.")
    start: int = _field(2, "Stream offset of the line or bytes concerned.")
    end: int = _field(3, "Stream offset just past them.")
    raw: bytes | None = _field(4, "b'' in keep_raw mode, else None.")

    def __new__(cls, *, code: str, message: str = "") -> Diagnostic:
        text = _text("Diagnostic", "code", code)
        return new_event(cls, (text, _text("Diagnostic", "message", message), -1, -1, None))

    @property
    def span(self) -> tuple[int, int]:
        """``(start, end)``: the bytes concerned in the stream."""
        return (self[2], self[3])


class Update(_Item):
    """A block that dispatched no event but set the last event ID or the reconnection
    time (``Connection(updates=True)``): MCP's priming event ``id: 5`` / ``retry:
    2000``, a server's ``id:``-only checkpoint.

    The rule.  At the blank line that ends a block with no ``data`` field (the spec
    dispatches nothing: "If the data buffer is an empty string, ... return"), an
    Update is returned when the block held an ``id`` field the spec took (one without
    NUL) or a valid ``retry`` field.  An ``id`` equal to the last event ID in force
    still gives one: the server said it again (a priming event after a resume repeats
    the ID it resumed from), and an ``id:`` with an empty value, which resets the last
    event ID, gives ``Update(id="")``.  A block with data is an :class:`Event`, which
    carries the same ``id`` and ``retry``; a skipped block is a :class:`SkippedEvent`;
    a block cut off by the end of the stream sets nothing and gives nothing.

    Attributes:
        id: The last event ID string after the block, as :attr:`Connection.last_event_id`
            then reads it (the ID in force, if the block set none).
        retry: The block's valid ``retry`` value in milliseconds, or ``None`` when it
            gave none (:attr:`Connection.retry` keeps the latest across blocks).
        start: Offset of the block's first field line; ``-1`` when built by hand.
        end: Offset just past the blank line that ended it; ``-1`` when built by hand.
        raw: ``b""`` with ``Connection(keep_raw=True)``: the block's bytes are handed out
            as without updates (by :meth:`Connection.take_raw` or the next item that
            hands some out); otherwise ``None``.

    Only ``id`` and ``retry`` take part in equality and hashing.
    """

    __slots__ = ()
    __match_args__ = ("id", "retry")
    _n_values = 2
    _repr_fields = __match_args__

    id: str = _field(0, "The last event ID string after the block.")
    retry: int | None = _field(1, "The block's valid retry value, or None.")
    start: int = _field(2, "Stream offset of the block's first field line.")
    end: int = _field(3, "Stream offset just past the blank line that ended it.")
    raw: bytes | None = _field(4, "b'' in keep_raw mode, else None.")

    def __new__(cls, *, id: str = "", retry: int | None = None) -> Update:
        _, _, event_id, event_retry = event_values("message", "", id, retry)
        return new_event(cls, (event_id, event_retry, -1, -1, None))

    @property
    def span(self) -> tuple[int, int]:
        """``(start, end)``: the block's bytes in the stream."""
        return (self[2], self[3])


# The union of what next_event() can return besides NEED_DATA.  An alias, not a base
# class: ``Event`` is already the name of the SSE message itself.
ReceivedItem = Event | Comment | EndOfStream

# Everything next_event() can return on a connection that sets on_oversize, piece_size,
# diagnostics or updates.  (ReceivedItem is to grow to this; the callers across the package
# and its tests that assume the three classic items move with it, in one change.)
AnyItem = ReceivedItem | SkippedEvent | DataPiece | PiecedEvent | Diagnostic | Update
