# One pipeline, no glue (issue 42, item 2): the async loop every gateway wrote around
# Translator.feed and HoldBack.push, written once (Translator.pipe, HoldBack.pipe).
#
# A pipe reads an async iterable of received items (a Relay, or any source of Events
# and Comments) and yields what to send, in order.  Its rules:
# - the source ends cleanly: the stage's ending goes out (Translator.end()'s frames,
#   HoldBack.approve()'s held items), and the pipe returns;
# - the source raises StreamCut: every complete frame the stage holds goes out (a
#   Translator's writer flush, a HoldBack's held items: never a terminal frame), then
#   the StreamCut is raised again, so the serving adapter passes the cut on;
# - comments go through in their place;
# - the pipe ends, however it ends (closed by its consumer with aclose(), a veto, an
#   error): it closes the source, so a Relay stops reading and settles its outcome.
# This module holds the two steps both pipes share: reading the next item, closing.

from __future__ import annotations

from collections.abc import AsyncIterator

from sse_sansio._events import Comment, EndOfStream, Event

__all__ = ["Item", "close", "next_item"]

#: What a pipe reads.
Item = Event | Comment | EndOfStream


async def next_item(items: AsyncIterator[Item]) -> Item | None:
    """The source's next item, or None at its clean end (a StreamCut goes on up)."""
    try:
        return await anext(items)
    except StopAsyncIteration:
        return None


async def close(items: AsyncIterator[Item]) -> None:
    """Close the source where it can be closed (an async generator, a Relay's)."""
    aclose = getattr(items, "aclose", None)
    if aclose is not None:
        await aclose()
