# The spec's field rules that more than one Python path needs, in one place.
#
# Spec: WHATWG HTML, "Server-sent events", 9.2.6 "Interpreting an event stream", the
# steps to process a field (event, id, retry).  Every Python path imports these: the
# parser (_interpret.py), its opt-in modes' rooms (_modes.py) and the diagnostics
# (_diagnostics.py); the compiled core has its twin of each in _core_fields.h, which
# both its walkers call, and reads the constants below at import.  (uniform_blocks()
# in _uniform.py reads only blocks without id or retry fields and with non-empty event
# types, where the rules have nothing to decide.)
#
# Invariants: pure functions of a field's value; no state, no import of a parser.

from __future__ import annotations

from typing import Final

__all__ = ["RETRY_MAX", "RETRY_MAX_DIGITS", "event_type_of", "id_value", "retry_value"]

#: The most significant digits a reconnection time keeps: int() refuses longer strings
#: (sys.int_info.default_max_str_digits), and so does str(), so an Event could not
#: write a longer one.
RETRY_MAX_DIGITS: Final = 4300

#: What a longer retry value is clamped to: the largest number of that many digits.
RETRY_MAX: Final = 10**RETRY_MAX_DIGITS - 1


def event_type_of(value: str) -> str:
    """Spec: "If the field name is "event": Set the event type buffer to field value."

    Returns the event type buffer, read as dispatch reads it: "Initialize event's type
    attribute to "message"" and, "If the event type buffer has a value other than the
    empty string, change the type of the newly created event to equal the value of the
    event type buffer."  (An empty ``event:`` is "message" from here on.)
    """
    return value or "message"


def id_value(value: str) -> str | None:
    """Spec: "If the field name is "id": If the field value does not contain U+0000
    NULL, then set the last event ID buffer to the field value.  Otherwise, ignore the
    field."

    Returns the new last event ID buffer, or None to ignore the field.
    """
    return None if "\0" in value else value


def retry_value(value: str) -> int | None:
    """Spec: "If the field name is "retry": If the field value consists of only ASCII
    digits, then interpret the field value as an integer in base ten, and set the event
    stream's reconnection time to that integer.  Otherwise, ignore the field."

    Returns that integer, or None to ignore the field.  (isdigit() alone would accept
    other digits; the empty value, which gives no integer, is ignored.)  Leading zeros
    are dropped, so that ``000…05`` of any length is 5; a value of more than
    :data:`RETRY_MAX_DIGITS` significant digits (or more than a process that lowered
    int()'s limit accepts) is clamped to :data:`RETRY_MAX`.
    """
    if not (value.isascii() and value.isdigit()):
        return None
    digits = value.lstrip("0") or "0"
    if len(digits) > RETRY_MAX_DIGITS:
        return RETRY_MAX
    try:
        return int(digits)
    except ValueError:  # sys.set_int_max_str_digits() lowered the limit
        return RETRY_MAX
