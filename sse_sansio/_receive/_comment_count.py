# Connection(count_comments=True): comments counted, not handed out.
#
# Strategy.  The spec says a comment line is ignored; this library hands each one to
# the caller as a Comment item by default, since a keep-alive comment is the only sign
# of life a quiet stream gives.  A caller that wants that sign and nothing else (a
# watchdog, a benchmark against parsers that drop comments) asks for a count instead:
# the pure core passes its parser's items through CommentCounter, which drops each
# Comment and counts it; the compiled core counts in its comment branch and builds no
# item at all.  Connection.comment_count reads the count.
#
# Invariants: every other item passes unchanged and in order; an exception from the
# parser passes through unchanged, so the connection's failure stays final (the chain
# in PyConnection then moves on to the sticky error, as without the counter).  Strict
# mode still refuses invalid UTF-8 in a counted comment: the parser decodes it first.

from __future__ import annotations

from collections.abc import Iterator
from typing import TypeVar

from sse_sansio._events import Comment

__all__ = ["CommentCounter"]

_T = TypeVar("_T")


class CommentCounter(Iterator[_T]):
    """The items of ``items`` but its comments, which it counts in ``count``."""

    __slots__ = ("_items", "count")

    def __init__(self, items: Iterator[_T]) -> None:
        self._items = items
        self.count = 0  # the comments dropped so far

    def __next__(self) -> _T:
        items = self._items
        item = next(items)
        while type(item) is Comment:
            self.count += 1
            item = next(items)
        return item
