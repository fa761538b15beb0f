# Connection's options for type checkers, declared once: each option's type, and which
# values opt into the items a default connection never returns.
#
# Strategy.  Every call that makes a connection from options takes them as ``**options``
# typed by the two TypedDicts below: Connection() (_connection.py), iter_events() and
# aiter_events() (_client/_feeding.py), ReconnectPlanner.connection(), .events() and
# .aevents() (_client/_reconnect.py).  Each of those has one overload per TypedDict,
# classic first; a checker takes the first overload the call fits, so
# - a call whose opt-in options are absent or at their defaults fits ClassicOptions and
#   gets Connection[Never] (next_event() returns Event, Comment, EndOfStream, NEED_DATA);
# - any other call fits only OptInOptions and gets Connection[OptInItem] (next_event()
#   may also return SkippedEvent, DataPiece, PiecedEvent, Diagnostic).
# (The feeding helpers add, per end_of_stream, an overload for connection=, which takes
# no option: it passes on the connection's own parameter, as Added.)  A TypedDict
# cannot by itself map a key's Literal value to a return type, hence the pairs of
# overloads; what they spare is the option lists: no overload names an option.
#
# Adding an option, on the checkers' side (the runtime side is the pure core's __init__
# and its docstring, _contract.check_options() and the compiled core's keyword list):
# - one that adds no item type: one line, in _CommonOptions;
# - one that opts into new items: two lines here, its default's Literal in
#   ClassicOptions and its full type in OptInOptions (its items join OptInItem).
# Before this module such an option was written into 16 of the package's 20 overloads
# (both of Connection's, 4 of the 6 of iter_events and of aiter_events, the planner's 6),
# in three files.  The package still has 20 overloads (the feeding helpers' connection=
# ones keep "connection= or options, not both" a type error); none of them names an
# option.
#
# Invariants (tests/receive/test_options.py): the TypedDicts' keys are the keyword
# parameters of both cores' Connection; both admit every default; an opt-in value the
# cores accept (one that makes them hand out its items) only OptInOptions admits.
#
# Runtime: plain stdlib TypedDict and TypeVar; TypeVar's default (3.13) comes from
# typing_extensions in the modules that use it, for checkers only.

from __future__ import annotations

from typing import Literal, TypedDict, TypeVar

from sse_sansio._events import DataPiece, Diagnostic, PiecedEvent, SkippedEvent, Update

__all__ = ["Added", "ClassicOptions", "OptInItem", "OptInOptions"]

#: The items a connection made with an opt-in option may return besides the classic
#: ones (Event, Comment, EndOfStream, NEED_DATA): Connection's type parameter.
OptInItem = SkippedEvent | DataPiece | PiecedEvent | Diagnostic | Update


class _CommonOptions(TypedDict, total=False):
    """The options that change no item type (the pure core's docstring says what each
    does)."""

    errors: Literal["strict", "replace"]
    last_event_id: str
    max_event_size: int | None
    keep_raw: bool
    count_comments: bool


class ClassicOptions(_CommonOptions, total=False):
    """Connection's options with the opt-in ones only at their defaults."""

    on_oversize: Literal["error"]  # "skip": SkippedEvent
    piece_size: None  # an int: DataPiece, PiecedEvent
    diagnostics: Literal[False]  # True: Diagnostic
    updates: Literal[False]  # True: Update


class OptInOptions(_CommonOptions, total=False):
    """Connection's options at every value they take."""

    on_oversize: Literal["error", "skip"]
    piece_size: int | None
    diagnostics: bool
    updates: bool


# The opt-in items of a connection passed in as connection=, passed on to what a
# function returns.
Added = TypeVar("Added", bound=OptInItem)
