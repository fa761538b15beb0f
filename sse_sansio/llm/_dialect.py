# What every dialect is: the Dialect base class, and the payload helpers the dialect
# modules and the generic ones (tracker, progress, merge, reframer) share.
#
# A dialect is one API's rules for its stream, gathered on one class so that the
# generic modules ask the dialect instead of branching on its name:
# - tracking (per stream, so one object per stream): decode() turns an event's data
#   into its payload (JSON where the API documents JSON); observe() looks at the
#   payload and returns a Verdict when the event settles the outcome (the API's
#   terminal event, an in-band error), else None; at_end() judges a stream that ended
#   cleanly without such an event (a cut, except where the API has no terminal event);
#   usage() and answer_parts() give what the events carried;
# - progress: moves() says whether an event adds to the answer or ends it (Progress);
# - merging: text_delta, the shape of the API's plain text delta (TextMerge), or None;
# - reframing: named_events, standard_error() and error_event(), the API's own way of
#   naming events and reporting an error (Reframer);
# - detection: claims_event() and claims_payload(), the signs that only this API
#   sends ("auto").
# The rules of the last three kinds hold no state: they are class attributes and
# static methods, read from the class that the registry (_registry.py) keeps by name.
#
# Forward compatibility (anthropic-sdk-python #993, #1357): an event type a dialect does
# not know passes through untouched, its data decoded as JSON when it is JSON and kept
# as text when not; a payload of an unexpected shape is ignored, never trusted and never
# a crash (every field is checked with isinstance before use: get() and text() below).
# An unknown finish or stop reason is reported as "stopped" with the API's word kept:
# claiming success for a word nobody has read the documentation of is the mistake this
# package exists to prevent.

from __future__ import annotations

import json
import json.scanner
from typing import Any, ClassVar, Final, NamedTuple

from sse_sansio._events import Event

from ._answer import Parts
from ._outcome import PayloadError, Verdict
from ._usage import UNAVAILABLE, Usage

__all__ = [
    "NO_EVENT_TYPE",
    "DeltaShape",
    "Dialect",
    "Path",
    "decode_json",
    "dialect_class",
    "dumps",
    "failed",
    "finish_verdict",
    "get",
    "kind_of",
    "loads",
    "loads_lenient",
    "quoted",
    "text",
]

NO_EVENT_TYPE = "message"  # what Event.type is when the block had no event: field

# -- reading payloads ------------------------------------------------------------------


# json.loads(text) is the scanner json.loads runs, behind three layers of wrapping (loads,
# decode, raw_decode and two whitespace matches) that cost as much as decoding a small
# payload (issue 35, item 5: the tracker at most 1.3x json.loads of the same events).
# decode_json() calls that scanner directly when the text is one JSON value with nothing
# around it, as every API sends it; anything else (whitespace around the value, no value,
# extra data) goes to json.loads itself, so what is accepted and what is raised are
# json.loads's own.
# (typeshed types make_scanner's argument as itself, not the decoder it takes)
_SCAN: Final = json.scanner.make_scanner(json.JSONDecoder())  # type: ignore[arg-type]


def decode_json(text: str) -> Any:
    """``json.loads(text)`` for a str: the same value, the same errors, less overhead."""
    try:
        value, end = _SCAN(text, 0)
    except StopIteration:
        return json.loads(text)  # whitespace before the value, or no value: its error
    if end != len(text):
        return json.loads(text)  # whitespace after the value, or extra data: its error
    return value


def loads(event: Event) -> Any:
    """Decode the event's data as JSON, or raise PayloadError naming the event."""
    try:
        return decode_json(event.data)
    except (ValueError, RecursionError) as exc:
        # RecursionError: JSON nested deeper than the interpreter's stack allows; the
        # payload is the peer's, so it is the peer's error, like any other bad JSON.
        why = exc if isinstance(exc, ValueError) else "it is nested too deeply to decode"
        where = f"byte offset {event.start}" if event.start >= 0 else "an event built by hand"
        raise PayloadError(
            f"the data of the {event.type!r} event at {where} is not JSON: {why}",
            offset=event.start,
        ) from None


def loads_lenient(event: Event) -> Any:
    """JSON when the data is JSON, else the text: for event types nobody documented."""
    try:
        return decode_json(event.data)
    except (ValueError, RecursionError):
        return event.data


def dumps(value: Any, *, allow_nan: bool = True) -> str:
    """JSON text as the APIs write it: characters beyond ASCII kept as they are, but
    when a string holds a lone surrogate (valid JSON, ``"\\ud800"``, decodes to one;
    UTF-8 cannot carry it), the text escapes every non-ASCII character, so that it
    always encodes (issue 35: a proxy died on such an upstream error)."""
    out = json.dumps(value, ensure_ascii=False, allow_nan=allow_nan)
    if out.isascii():
        return out
    try:
        out.encode()
    except UnicodeEncodeError:
        return json.dumps(value, allow_nan=allow_nan)
    return out


def quoted(word: str | None) -> str:
    """A word of the API's, quoted as it appears in the JSON ("stop", null)."""
    return json.dumps(word, ensure_ascii=False)


def get(obj: Any, *path: str) -> Any:
    """``obj[path[0]][path[1]]...``, or None where a step is missing or not a dict."""
    for key in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def text(value: Any) -> str | None:
    """A field as a string: str kept, int (an HTTP-like code) written out, else None."""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def kind_of(event: Event, payload: Any) -> Any:
    """The event's type, or the payload's "type" when the event had no event: line."""
    return event.type if event.type != NO_EVENT_TYPE else get(payload, "type")


# -- verdicts --------------------------------------------------------------------------


def failed(error: Any, where: str) -> Verdict:
    """The verdict for an in-band error object (or a bare message string)."""
    if isinstance(error, dict):
        kind = text(error.get("type")) or text(error.get("status")) or text(error.get("code"))
        message = text(error.get("message"))
    else:
        kind, message = None, text(error)
    said = ": ".join(part for part in (kind, message) if part) or "no details given"
    return Verdict(
        "failed",
        f"the API reported an error {where} ({said}); the answer is incomplete: "
        "retry if the error is transient (overloaded, rate limit, server error)",
        error_type=kind,
        error_message=message,
    )


def finish_verdict(
    finishes: dict[int, str],
    unfinished: list[int],
    table: dict[str, tuple[bool, str]],
    field: str,
    unit: str,
    ended: str,
) -> Verdict:
    """Judge the finish reasons of every choice (candidate); the worst one decides.

    ``table`` maps each documented word to (success, explanation).  A choice seen but
    never finished makes the stream a cut; an unknown word is a stop.
    """
    if unfinished or not finishes:
        which = (
            f"{unit} {unfinished[0]} had no {field}" if unfinished else f"no {unit} had a {field}"
        )
        return Verdict(
            "cut",
            f"{ended} but {which}: the server (or a "
            "proxy) ended the stream without saying why the answer ended; retry the request",
            cut="unfinished",
        )
    several = len(finishes) > 1
    for index, word in sorted(finishes.items()):
        success, explanation = table.get(
            word, (False, "the model stopped for a reason this version does not know")
        )
        if not success:
            prefix = f"{unit} {index}: " if several else ""
            return Verdict("stopped", f"{prefix}{explanation} ({field} {quoted(word)})", word)
    index, word = min(finishes.items())
    return Verdict("completed", f"{table[word][1]} ({field} {quoted(word)})", word)


# -- the shape of a text delta, for TextMerge --------------------------------------------

Path = tuple[str | int, ...]


class DeltaShape(NamedTuple):
    """Where an API's plain text delta keeps its text, and what else it may hold."""

    event_type: str  # the event: line the deltas carry ("message" when none)
    text: Path  # where the text is; every list on the way must have one element
    fixed: tuple[tuple[Path, str], ...] = ()  # fields that must hold these values
    latest: tuple[str, ...] = ()  # top-level fields that may differ: keep the later one
    empty: tuple[str, ...] = ()  # fields that must be absent or empty to join


# -- the base class ----------------------------------------------------------------------


class Dialect:
    """One API's rules: what :func:`generic` returns and :class:`Tracker` accepts.

    A dialect keeps the state of one stream, so use a fresh one per :class:`Tracker`.
    Its methods are not part of the API (they may change in any release).
    """

    name: str = ""
    #: The API's end marker, in the words a reason uses ("data: [DONE]").
    terminal: str = ""
    #: The event types whose data the API documents as JSON (strict decoding).
    json_types: frozenset[str] = frozenset()

    #: TextMerge: the API's plain text delta, or None (no merge rules).
    text_delta: ClassVar[DeltaShape | None] = None
    #: Reframer: the API names each event after its data's "type" (event: lines).
    named_events: ClassVar[bool] = False
    #: HoldBack's veto: the data of the event the API ends its stream with after its
    #: last event, an error event included ("[DONE]"), or None where it has none.
    stream_end: ClassVar[str | None] = None
    #: "auto": claims_payload() looks for a "type" no other API sends, so it is asked
    #: before the dialects that go by a payload's shape (which are asked in the
    #: registry's order).
    detect_first: ClassVar[bool] = False

    def __init__(self) -> None:
        self.parts = Parts()
        self.figures = UNAVAILABLE
        self.slots: dict[object, object] = {}  # a place in the stream reused by a new call

    def call_key(self, place: object, id: Any, *, new: bool = False) -> object:
        """The key of the call a fragment streamed under ``place`` (a tool-call index,
        a content block index, an output index) belongs to.

        An id names one call (the tool result must quote it), so a fragment that names
        a non-empty id other than the one the call open at ``place`` has starts a new
        call there (Ollama gives every call index 0), and so does ``new`` (the API said
        a call starts: a second content block at one index).  An empty or missing id
        continues the open call: OpenAI sends the id on a call's first fragment only,
        Qwen sends ``"id": ""`` on every later one (issue 42, item 1).
        """
        key = self.slots.get(place, place)
        known = self.parts.calls.get(key)
        if known is None:
            return key
        if new or (isinstance(id, str) and id and known.id not in (None, id)):
            key = self.slots[place] = (place, len(self.parts.calls))
        return key

    def open_key(self, place: object) -> object:
        """The key of the call open at ``place`` (the latest one begun there)."""
        return self.slots.get(place, place)

    # -- tracking ------------------------------------------------------------------

    def decode(self, event: Event) -> Any:
        if event.type in self.json_types:
            try:
                return decode_json(event.data)  # (loads() inline: this runs per event)
            except (ValueError, RecursionError):
                return loads(event)  # raises the PayloadError that names the event
        return loads_lenient(event)

    def usage(self) -> Usage:
        """The usage figures so far, merged by the API's rules."""
        return self.figures

    def answer_parts(self) -> Parts:
        """The answer's fragments so far."""
        return self.parts

    def observe(self, event: Event, payload: Any) -> Verdict | None:  # pragma: no cover
        raise NotImplementedError  # every dialect defines it

    def at_end(self) -> Verdict:
        return Verdict("cut", f"the stream ended before {self.missing()}", cut="before-terminal")

    def missing(self) -> str:
        """What a cut stream lacks, in words that follow "the stream ended before"."""
        return f"{self.terminal}, so the answer may be incomplete: retry the request"

    def stop_word(self) -> str | None:
        """The last finish or stop reason seen, for the report of a cut."""
        return None

    def current(self) -> Dialect:
        """The dialect whose rules apply now (for "auto", the one it detected)."""
        return self

    # -- progress ------------------------------------------------------------------

    def moves(self, event: Event, payload: Any) -> bool:
        """Whether the event adds to the answer or ends it (Progress).  Where a dialect
        has no rule of its own, every event but a ``ping`` does: the Watchdog's own
        default."""
        return bool(kind_of(event, payload) != "ping")

    # -- reframing (every dialect in the registry defines both) ----------------------

    @staticmethod
    def standard_error(event: Event, payload: Any) -> bool:  # pragma: no cover
        """The event is already the API's own error event (or holds no error)."""
        raise NotImplementedError  # the Reframer is made only for registered dialects

    @staticmethod
    def error_event(message: str, kind: str | None) -> Event:  # pragma: no cover
        """The API's own error event, for a message and an error type (or None)."""
        raise NotImplementedError  # the Reframer is made only for registered dialects

    # -- detection ("auto") ----------------------------------------------------------

    @staticmethod
    def claims_event(event: Event) -> bool:
        """The event, before its data is decoded, is one only this API sends."""
        return False

    @staticmethod
    def claims_payload(kind: str | None, payload: Any) -> bool:
        """The decoded payload (its "type", ``kind``, when a string) is this API's."""
        return False

    # -- pickling ----------------------------------------------------------------------
    #
    # A dialect mid-stream is worth keeping: a Tracker or a Progress pickled mid-stream
    # carries it.  The dialects' classes live in private rooms of sse_sansio.llm, so a
    # dialect pickles as a call of the public base class, sse_sansio.llm.Dialect(), with
    # its name and its attributes as plain data; loading looks the class up by that name
    # among this package's dialects (_OURS) and makes the object one of it again.  A
    # dialect class of the caller's own is named by its own path instead.

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__module__.startswith(__package__ + "._"):
            _OURS[cls.name] = cls

    def __reduce__(self) -> tuple[object, ...]:
        cls = type(self)
        kind: str | type[Dialect] = cls.name if _OURS.get(cls.name) is cls else cls
        return (Dialect, (), (kind, self.plain_state()))

    def __setstate__(self, state: tuple[str | type[Dialect], dict[str, Any]]) -> None:
        kind, attributes = state
        self.__class__ = dialect_class(kind) if isinstance(kind, str) else kind
        self.load_state(attributes)

    def plain_state(self) -> dict[str, Any]:
        """The dialect's attributes as plain data (for pickling)."""
        return {**vars(self), "parts": self.parts.plain()}

    def load_state(self, attributes: dict[str, Any]) -> None:
        """Set the attributes that plain_state() gave (on loading a pickle)."""
        vars(self).update(attributes, parts=Parts.from_plain(attributes["parts"]))


#: This package's dialect classes by name (the registry's, Auto and Generic).
_OURS: dict[str, type[Dialect]] = {}


def dialect_class(name: str) -> type[Dialect]:
    """This package's dialect class called ``name`` (KeyError if none)."""
    return _OURS[name]
