# One producer, many readers (issue 34): a fan-out of items to subscribers' ServerStreams,
# sans-I/O on the caller's clock.
#
# Strategy: publish() serializes an item once (a Frame, _server_stream.py) and queues
# those same bytes on every subscriber's stream, a constant amount of work each
# (amortized: a frame dropped or blanked was queued once).  Each subscriber is a plain
# ServerStream that the caller drains with data_to_send() at its own pace, with its own
# keepalives and deadline; a subscriber that falls behind only grows its own queue, up
# to ``max_buffer``, where the hub's policy decides:
# - "disconnect": the stream turns "slow" and the hub drops it; the caller closes that
#   connection, and the client resumes from the window with its Last-Event-ID;
# - "drop-oldest": the oldest frames go, and the gap event (GAP_EVENT) takes their
#   place: ``event: sse_sansio.gap`` with ``data: {"dropped": n}``, never a silent hole;
# - "conflate": a frame blanks the older one of its key still queued (the event type by
#   default, or ``key(item)``; None, and every comment by default, is never conflated).
#
# Invariants (tests/serve/test_hub.py, against tests/helpers/hub_model.py):
# - every subscriber receives, in publish order, what the policy lets through: all of
#   it ("disconnect", until dropped), the newest frames after one gap event per hole
#   ("drop-oldest"), the newest frame per key ("conflate");
# - after close(), every subscriber's stream is ended (clean, or cut) and nothing more is
#   published; a later subscriber gets its replay and the same ending at once, so no
#   client waits for a producer that finished (with or without a Last-Event-ID);
# - memory: each subscriber's queue holds at most ``max_buffer`` bytes plus one frame
#   (plus the gap frame), and the window holds what its store keeps;
# - with a window, every event is appended once (before any subscriber sees it) and
#   carries the window's ID, and subscribe(last_event_id=...) replays what the window
#   still has after it.  When it cannot replay everything missed (the window lost part
#   of it, the ID is not this window's, or there is no window) the subscriber first gets
#   the gap event with ``{"dropped": null}``.

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import ClassVar, Literal

from sse_sansio._clock import Clock
from sse_sansio._errors import LocalProtocolError
from sse_sansio._events import Comment, Event
from sse_sansio._pickling import clock_state, public_reduce, restore, with_clock
from sse_sansio._resume._replay import ReplayWindow, Resume

from ._server_stream import GAP_EVENT, Frame, ServerStream, deliver, finish, subscriber

__all__ = ["Hub", "Policy"]

Policy = Literal["disconnect", "drop-oldest", "conflate"]
_POLICIES = ("disconnect", "drop-oldest", "conflate")


class Hub:
    """Fan events out to many subscribers, each a :class:`~sse_sansio.ServerStream`.

    :meth:`publish` an item once; :meth:`subscribe` a client (with its
    ``Last-Event-ID`` when it reconnects), write what its stream's
    :meth:`~sse_sansio.ServerStream.data_to_send` returns at the client's own pace, and
    :meth:`unsubscribe` it when it goes.  No I/O: every method takes ``now`` from your
    monotonic clock.

    Args:
        max_buffer: The bytes a subscriber may fall behind by (>= 1) before
            ``policy`` applies.
        policy: ``"disconnect"`` (the subscriber's stream turns ``"slow"`` and is
            dropped: close its connection; the client resumes from the window),
            ``"drop-oldest"`` (its oldest frames go, and the gap event
            :attr:`GAP_EVENT` takes their place) or ``"conflate"`` (of the frames
            queued for it, only the newest per key is kept).
        window: A :class:`~sse_sansio.ReplayWindow`: each event published is appended
            to it and sent with its ID, and subscribers resume from it.
        now: The time on your clock.
        key: With ``"conflate"``: the key of an item (frames of equal keys conflate;
            None: never).  By default an event's type, and None for comments.

    Raises:
        TypeError: an option of the wrong type.
        ValueError: an option out of range, or ``key`` without ``"conflate"``.
    """

    #: The event type of the gap signal: ``event: sse_sansio.gap`` with ``data:
    #: {"dropped": n}`` (frames dropped; ``null`` when a resume could not say).
    GAP_EVENT: ClassVar[str] = GAP_EVENT

    def __init__(
        self,
        *,
        max_buffer: int,
        policy: Policy = "disconnect",
        window: ReplayWindow | None = None,
        now: float,
        key: Callable[[Event | Comment], Hashable | None] | None = None,
    ) -> None:
        self._clock = Clock("Hub", now)
        if not isinstance(max_buffer, int) or isinstance(max_buffer, bool):
            raise TypeError(f"Hub: max_buffer must be an int, not {max_buffer!r}")
        if max_buffer < 1:
            raise ValueError(f"Hub: max_buffer must be >= 1, not {max_buffer}")
        if policy not in _POLICIES:
            raise ValueError(f"Hub: policy must be one of {_POLICIES}, not {policy!r}")
        if window is not None and not isinstance(window, ReplayWindow):
            raise TypeError(f"Hub: window must be a ReplayWindow, not {window!r}")
        if key is not None and policy != "conflate":
            raise ValueError("Hub: key is the conflation key; it needs policy='conflate'")
        if key is not None and not callable(key):
            raise TypeError(f"Hub: key must be callable, not {key!r}")
        self._max_buffer = max_buffer
        self._policy: Policy = policy
        self._window = window
        self._key = key
        self._subscribers: dict[ServerStream, None] = {}  # insertion-ordered; O(1) removal
        self._ending: bool | None = None  # after close(): cut (True) or clean (False)

    @property
    def subscribers(self) -> tuple[ServerStream, ...]:
        """The streams subscribed now, oldest first (a dropped ``"slow"`` one is not)."""
        return tuple(self._subscribers)

    def publish(self, item: Event | Comment, now: float) -> str | None:
        """Send ``item`` to every subscriber, serialized once.

        With a window, an event is appended to it first and sent with the ID it
        assigns.  A subscriber whose stream turns ``"slow"`` (policy ``"disconnect"``)
        is dropped from the hub; one that was ended by its caller receives nothing.

        Returns:
            The ID the event was sent with (None for a comment or an event without one).

        Raises:
            TypeError: ``item`` is not an Event or a Comment.
            LocalProtocolError: an item :func:`~sse_sansio.serialize` or the window
                refuses, or a publish after :meth:`close`.
        """
        now = self._clock.read(now, "publish")
        if self._ending is not None:
            raise LocalProtocolError("Hub.publish() after close(): the producer finished")
        if isinstance(item, Event):
            if self._window is not None:
                item = self._window.append(item)
            ident = item.id or None
        elif isinstance(item, Comment):
            ident = None
        else:
            raise TypeError(f"Hub.publish() takes an Event or a Comment, not {item!r}")
        frame = Frame(item, key=self._key_of(item))
        slow = [stream for stream in self._subscribers if deliver(stream, frame, now)]
        for stream in slow:
            del self._subscribers[stream]
        return ident

    def subscribe(
        self,
        now: float,
        *,
        last_event_id: str | None = None,
        keepalive: float | None = None,
        first_byte: float | None = None,
        padding: int = 0,
        coalesce_bytes: int = 0,
        coalesce_delay: float = 0.0,
    ) -> ServerStream:
        """A new subscriber's stream, primed with the replay after ``last_event_id``.

        The replay comes from the window; when part of what the client missed cannot
        be replayed, the gap event (``{"dropped": null}``) comes first.  When the
        window's producer finished (:meth:`~sse_sansio.ReplayWindow.close`), the stream
        is ended at once after the replay and not subscribed.  The other options are
        the stream's own (:class:`~sse_sansio.ServerStream`).
        """
        now = self._clock.read(now, "subscribe")
        stream = subscriber(
            now,
            max_buffer=self._max_buffer,
            overflow=self._policy,
            keepalive=keepalive,
            first_byte=first_byte,
            padding=padding,
            coalesce_bytes=coalesce_bytes,
            coalesce_delay=coalesce_delay,
        )
        resume = None
        if last_event_id is not None:
            resume = self._replay(stream, last_event_id, now)
        if resume is not None and resume.finished:
            stream.end(now, cut=resume.cut)
        elif self._ending is not None:
            stream.end(now, cut=self._ending)
        else:
            self._subscribers[stream] = None
        return stream

    def close(self, now: float, *, cut: bool = False) -> None:
        """The producer finished (``cut=True``: it was cut): end every subscriber.

        Each open subscriber's stream ends (a clean end or a cut, after what is queued
        for it), and the hub lets them all go; the window, if any, is closed too
        (:meth:`~sse_sansio.ReplayWindow.close`), so a client resuming later, here or in
        another process, learns it.  After this, :meth:`subscribe` hands out a stream
        that replays what it may and ends at once the same way, and :meth:`publish`
        raises.  A second close changes nothing (the first ending stands).
        """
        now = self._clock.read(now, "close")
        if self._ending is not None:
            return
        self._ending = cut
        if self._window is not None:
            self._window.close(cut=cut)
        for stream in self._subscribers:
            finish(stream, now, cut=cut)
        self._subscribers.clear()

    def unsubscribe(self, stream: ServerStream) -> None:
        """Stop publishing to ``stream``; a stream not subscribed (any more) is ignored,
        so a connection's clean-up may call this whether or not the hub dropped it."""
        self._subscribers.pop(stream, None)

    def _key_of(self, item: Event | Comment) -> Hashable | None:
        if self._policy != "conflate":
            return None
        if self._key is not None:
            return self._key(item)
        return item.type if isinstance(item, Event) else None

    def _replay(self, stream: ServerStream, last_event_id: str, now: float) -> Resume | None:
        """Queue what the client missed; the window's Resume (None: no window)."""
        resume = None if self._window is None else self._window.resume(last_event_id)
        events = () if resume is None else resume.events
        items: list[Event] = []
        if resume is None or resume.verdict != "continue":
            items.append(Event(type=GAP_EVENT, data='{"dropped": null}'))
        items.extend(events)
        if not items:
            return resume
        if self._policy == "disconnect":
            # One frame: a long replay must not make the stream "slow" before its
            # consumer could read a byte (as ServerStream.resume()).
            deliver(stream, Frame(*items, urgent=True), now)
        else:
            for item in items:
                deliver(stream, Frame(item, key=self._key_of(item), urgent=True), now)
        return resume

    # Pickling (issue 32, item 4): a state machine worth keeping, through its public
    # class: the subscribers' streams, the window and the options are plain or public
    # (a ``key`` must be picklable itself: a module-level function, not a lambda).
    # Pickle the hub together with the streams your connections hold, in one dump, so
    # that they stay the same objects.  The Clock goes as plain data (_pickling.py).
    def __reduce__(self) -> tuple[object, ...]:
        return public_reduce(self, _clock=clock_state(self._clock))

    def __setstate__(self, state: dict[str, object]) -> None:
        restore(self, with_clock(state))
