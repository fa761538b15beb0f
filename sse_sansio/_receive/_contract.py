# What both cores promise at their edges, written once: Connection's options (their
# checks, their defaults, their error messages) and the messages of the refusals that
# do not depend on the stream.
#
# Strategy.  The pure core (_connection.py) calls check_options() from __init__; the
# compiled core (_core.c) looks this module up at import, as it does the docstrings:
# it calls check_options() for any connection made with an option given, reads
# DEFAULT_MAX_EVENT_SIZE for the default limit (and its signature's text), and formats
# its refusals from the templates below.  A change to an option's rule or message is
# then one edit here; tests/receive/test_contract.py gives both cores every bad option and
# compares what they raise.
#
# Invariants: nothing here imports a core (the compiled core imports this module while
# it initializes); the templates are %-style, so that C formats them with
# PyUnicode_Format() exactly as Python's % does.

from __future__ import annotations

import sys
from typing import Final

__all__ = [
    "DEFAULT_MAX_EVENT_SIZE",
    "NESTED_CALL",
    "NOT_COPYABLE",
    "NO_LIMIT",
    "check_count_comments",
    "check_options",
]

# The default limit on one event's size in the stream, from the first byte of its block
# (its first field line; the comments among its fields count, those before it do not)
# up to the blank line that dispatches it.  The line end that
# ends the current line is never counted: a CR ending a chunk may be half a CRLF, and
# the limit must not depend on how the stream was chunked.
#
# 16 MiB.  LLM APIs send single events far larger than a text delta: OpenAI's image
# generation streams base64 partial images of 1 to 4 MB in one data line, and tool
# results or reasoning summaries can reach megabytes.  A 64 KiB cap (common in Go and
# Java clients, where bufio.Scanner defaults to 64 KiB lines) is a known foot-gun for
# exactly this traffic; no cap at all lets one peer exhaust a proxy's memory.  16 MiB is
# four times the largest payload we know of, yet a thousand connections filled to the
# limit still fit in 16 GiB.  For comparison, eventsource-parser has no default limit
# and h11 caps HTTP headers at 16 KiB.  Pass ``max_event_size=None`` for no limit.
DEFAULT_MAX_EVENT_SIZE: Final = 16 * 1024 * 1024

#: The limit that is no limit: no stream offset reaches it.
NO_LIMIT: Final = sys.maxsize

#: copy.copy() or copy.deepcopy() of a connection (either core).
NOT_COPYABLE: Final = (
    "a Connection cannot be copied: it is the state of one stream; to resume that stream"
    " elsewhere, make a new one with last_event_id=conn.last_event_id"
)

#: A call made while next_event() runs on the same connection (% the method's name).
#: The pure core's generator raises its own ValueError for a nested next_event().
NESTED_CALL: Final = (
    "Connection.%s() called while next_event() is running on the same connection (from"
    " a finalizer or another thread): a connection is used by one thread at a time"
)


def check_options(
    errors: object,
    last_event_id: object,
    max_event_size: object,
    on_oversize: object,
    piece_size: object,
) -> tuple[bool, int]:
    """Check Connection's options; return ``(strict, limit)``.

    ``limit`` is the size limit as an int (:data:`NO_LIMIT` for ``None``).  Raises the
    TypeError or ValueError that ``Connection(...)`` raises, in this order of checks.
    """
    if errors not in ("strict", "replace"):
        raise ValueError(f'errors must be "strict" or "replace", not {errors!r}')
    if not isinstance(last_event_id, str):
        raise TypeError(f"last_event_id must be str, not {type(last_event_id).__name__}")
    # Checked as an exact str, as serialize() does: a subclass's __contains__ could pass
    # the check below and keep CR or LF in what is stored and sent.
    last_event_id = str.__str__(last_event_id)
    if "\0" in last_event_id or "\r" in last_event_id or "\n" in last_event_id:
        # The stream itself can never set such an ID; refusing it here also keeps it
        # from being sent back in a Last-Event-ID header.
        raise ValueError("last_event_id may not contain NUL, CR or LF")
    if max_event_size is not None and (
        isinstance(max_event_size, bool)
        or not isinstance(max_event_size, int)
        or max_event_size < 1
    ):
        raise ValueError(f"max_event_size must be a positive int or None, not {max_event_size!r}")
    limit = NO_LIMIT if max_event_size is None else max_event_size
    if on_oversize not in ("error", "skip"):
        raise ValueError(f'on_oversize must be "error" or "skip", not {on_oversize!r}')
    if piece_size is not None and (
        isinstance(piece_size, bool)
        or not isinstance(piece_size, int)
        or not 1 <= piece_size <= limit
    ):
        raise ValueError(
            f"piece_size must be None or an int from 1 to max_event_size, not {piece_size!r}"
        )
    return errors == "strict", limit


def check_count_comments(keep_raw: object) -> None:
    """Check ``count_comments=True`` (given) against the other options.

    A counted comment is not handed out, and with it its bytes: a keep_raw proxy would
    lose them, so the two are refused together.  Both cores call this only when
    count_comments is true (the default, False, needs no check).
    """
    if keep_raw:
        raise ValueError(
            "count_comments=True drops the comments with their bytes: it cannot be"
            " combined with keep_raw=True"
        )
