# One producer, many readers, many channels (issues 34 and 40): a fan-out of items to
# subscribers' ServerStreams, sans-I/O on the caller's clock.
#
# Strategy: publish() serializes an item once (a Frame, _server_stream.py) and queues
# those same bytes on every subscriber that reads the item's channel and may read it, a
# constant amount of work each (amortized: a frame dropped or blanked was queued once).
# Each subscriber is a plain ServerStream that the caller drains with data_to_send() at
# its own pace, with its own keepalives and deadline; a subscriber that falls behind
# only grows its own queue, up to ``max_buffer``, where the hub's policy decides:
# - "disconnect": the stream turns "slow" and the hub drops it; the caller closes that
#   connection, and the client resumes from the window with its Last-Event-ID;
# - "drop-oldest": the oldest frames go, and the gap event (GAP_EVENT) takes their
#   place: ``event: sse_sansio.gap`` with ``data: {"dropped": n}``, never a silent hole;
# - "conflate": a frame blanks the older one of its key still queued (the event type by
#   default, or ``key(item)``; None, and every comment by default, is never conflated).
#
# Shared logs (issue 40, item 8: a publish to 1,000 readers of a channel within 2x of
# 1,000 deque appends): the common subscriber's frames need no work of its own (policy
# "disconnect", no may_read, no coalescing, nothing replayed into its queue first), so
# the subscribers that read the same channels share one FrameLog (``_groups``, routed
# like one subscriber; made for the second of them, as a log of one reader costs more
# memory than its own queue, about 1 KB, and saves nothing: the first, ``_solo``, stays
# served alone, so a hub per response or a channel per user is as before): a publish
# appends the bytes and the time once to each target log, and each reader's stream (a
# ServerStream still, made by join()) reads the log by its own cursor in
# data_to_send(), working out lazily what deliver() would have done to it: its due
# time, its clock, its "slow" turn (the log looks at its oldest readers only when a
# publish takes it past ``max_buffer``; _server_stream.py says how).  The wake-ups
# stay one call per reader that has one (its writer decides whether to write), the
# readers a publish made "slow" let go first.
# A reader that queues or ends on its own (its send(), end(), resume()) leaves its log
# with its unread frames as its own queue and is served alone from then on, as are the
# other subscribers: a publish to them queues as above.  A pickled hub holds no log:
# each reader pickles as a plain stream with its own queue, served alone after loading.
#
# Channels (issue 40, item 1): an item is published on one channel (a name, or None,
# the unnamed channel); a subscriber reads a set of exact names and shell-style
# patterns (fnmatch's rules, case-sensitive), or every channel (``channels=None``).
# Routing never walks the subscribers: they are indexed by exact name (``_exact``),
# by pattern (``_patterns``), and those reading everything (``_everyone``); the patterns
# a channel name matches are found once per name and cached (``_matched``, bounded), so
# publishing to a channel nobody reads costs two dict lookups and the window's append
# (one look-up, ``_fast``, while only exact names route, without a window).
# One log: the window holds every event of every channel, in publish order, and the
# hub keeps each event's channel beside it (``_channel_of``, by ID, trimmed to what the
# window still keeps), so one Last-Event-ID resumes every channel a subscriber reads.
#
# Authorization (issue 40, item 2): ``may_read(channel, item)``, given per subscriber, is
# asked for every item before it is queued for that subscriber, live and on replay
# alike, so a replay is judged by the subscriber's rights now (Mercure's rule).  An item
# refused leaves no trace in that stream.  A may_read that raises ends its subscriber as
# a cut (logged); nobody else notices.
#
# Invariants (tests/serve/test_hub.py and test_hub_channels.py, against models in
# tests/helpers/):
# - every subscriber receives, in publish order, what its channels, its may_read and
#   the policy let through: all of it ("disconnect", until dropped), the newest frames
#   after one gap event per hole ("drop-oldest"), the newest frame per key ("conflate");
# - after close(), every subscriber's stream is ended (clean, or cut) and nothing more is
#   published; a later subscriber gets its replay and the same ending at once, so no
#   client waits for a producer that finished (with or without a Last-Event-ID);
# - memory: each subscriber's queue holds at most ``max_buffer`` bytes plus one frame
#   (plus the gap frame), and a shared log at most ``max_buffer`` bytes plus one frame
#   before its newest frame; the window holds what its store keeps, and the channel log at
#   most twice as many entries;
# - with a window, every event is appended once (before any subscriber sees it) and
#   carries the window's ID, and subscribe(last_event_id=...) replays what the window
#   still has after it, of the subscriber's channels.  When it cannot replay everything
#   missed (the window lost part of it, the ID is not this window's, or there is no
#   window) the subscriber first gets the gap event with ``{"dropped": null}``.
# - ``wake`` (what an adapter passes to subscribe()) is called after anything is queued
#   on, or ends, that subscriber's stream: the adapter's writer sleeps until then.

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable, Iterable
from fnmatch import fnmatchcase
from typing import ClassVar, Literal

from sse_sansio._clock import Clock
from sse_sansio._errors import LocalProtocolError
from sse_sansio._events import Comment, Event
from sse_sansio._pickling import clock_state, public_reduce, restore, with_clock
from sse_sansio._resume._replay import ReplayWindow, Resume

from ._server_stream import (
    GAP_EVENT,
    Frame,
    FrameLog,
    ServerStream,
    deliver,
    finish,
    join,
    leave,
    serialized,
    subscriber,
    trusted,
)

__all__ = ["Hub", "MayRead", "Policy"]

Policy = Literal["disconnect", "drop-oldest", "conflate"]
_POLICIES = ("disconnect", "drop-oldest", "conflate")

#: ``may_read(channel, item)``: may this subscriber read ``item``, published on
#: ``channel``?  Asked live and on replay alike.
MayRead = Callable[[str | None, Event | Comment], bool]
Wake = Callable[[], None]

#: The logger of the hub (a may_read that raised).
LOG = logging.getLogger("sse_sansio.serve")

_WILD = frozenset("*?[")
_INFINITY = float("inf")
_MATCHED_MAX = 4096  # channel names whose matching patterns are cached

# A subscriber's reading rule: (its channels, or None for every channel; may_read; wake).
Reader = tuple[frozenset[str] | None, MayRead | None, Wake | None]
# What a publish routes to: a subscriber's stream served alone, or a shared log.
Target = ServerStream | FrameLog
Route = dict[Target, Reader]


class Hub:
    """Fan events out to many subscribers, each a :class:`~sse_sansio.ServerStream`.

    :meth:`publish` an item once, on a channel if you like; :meth:`subscribe` a client
    (to channels, with a ``may_read`` rule, with its ``Last-Event-ID`` when it
    reconnects), write what its stream's :meth:`~sse_sansio.ServerStream.data_to_send`
    returns at the client's own pace, and :meth:`unsubscribe` it when it goes.  No I/O:
    every method takes ``now`` from your monotonic clock.  Not thread-safe: call it from
    one thread (an event loop's: see :doc:`/channels` for publishing from others).

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
        self._readers: dict[ServerStream, Reader] = {}  # insertion-ordered; O(1) removal
        # Each index maps a target (a stream served alone, or a shared log) to its
        # Reader, so a publish reads both in one step (issue 40, item 8).
        self._everyone: Route = {}  # channels=None
        self._exact: dict[str, Route] = {}
        self._patterns: dict[str, Route] = {}
        self._groups: dict[frozenset[str] | None, FrameLog] = {}  # channels -> shared log
        # channels -> the one subscriber that could share a log, served alone until a
        # second comes (a log of one reader costs more than it saves).
        self._solo: dict[frozenset[str] | None, ServerStream] = {}
        # publish()'s shortcut: the exact-name index while nothing else routes (no
        # window, no pattern, nobody reading everything, not closed); else None.
        self._fast: dict[str, Route] | None = None if window is not None else self._exact
        self._matched: dict[str, tuple[str, ...]] = {}  # name -> the patterns it matches
        self._channel_of: dict[str, str | None] = {}  # event ID -> channel, oldest first
        self._trim_at = 64  # the channel log's length that prompts a trim
        self._ending: bool | None = None  # after close(): cut (True) or clean (False)

    @property
    def subscribers(self) -> tuple[ServerStream, ...]:
        """The streams subscribed now, oldest first (a dropped ``"slow"`` one is not)."""
        return tuple(s for s in self._readers if s.state != "slow")

    def publish(
        self, item: Event | Comment, now: float, *, channel: str | None = None
    ) -> str | None:
        """Send ``item`` to every subscriber of ``channel`` that may read it.

        The item is serialized once, and only when somebody reads it.  With a window,
        an event is appended to it first (whoever reads it) and sent with the ID it
        assigns.  A subscriber whose stream turns ``"slow"`` (policy ``"disconnect"``)
        is dropped from the hub; one that was ended by its caller receives nothing.

        Returns:
            The ID the event was sent with (None for a comment or an event without one).

        Raises:
            TypeError: ``item`` is not an Event or a Comment, or ``channel`` not a str.
            LocalProtocolError: an item :func:`~sse_sansio.serialize` or the window
                refuses, or a publish after :meth:`close`.
        """
        clock = self._clock  # Clock.read()'s fast path, inline (issue 40, item 8)
        if type(now) is float and clock.latest <= now < _INFINITY:
            clock.latest = now
        else:
            now = clock.read(now, "publish")
        fast = self._fast  # exact names only: one look-up routes an exact Event
        if fast is not None and type(channel) is str and type(item) is Event:
            route = fast.get(channel)
            if route:
                self._deliver_all(route, channel, item, now)
            return item[2] or None  # (an exact Event's own slot: its ID)
        if self._ending is not None:
            raise LocalProtocolError("Hub.publish() after close(): the producer finished")
        if channel is not None and type(channel) is not str:
            raise TypeError(f"Hub.publish(): channel must be a str or None, not {channel!r}")
        if type(item) is Event and self._window is None:  # (an exact Event's own slot)
            ident = item[2] or None
        elif isinstance(item, Event):
            if self._window is not None:
                item = self._window.append(item)
                self._log_channel(item.id, channel)
            ident = item.id or None
        elif isinstance(item, Comment):
            ident = None
        else:
            raise TypeError(f"Hub.publish() takes an Event or a Comment, not {item!r}")
        # _targets()' commonest cases, inline: everyone, or exact names only.
        targets: Route | None
        if channel is None:
            targets = self._everyone
        elif not self._everyone and not self._patterns:
            targets = self._exact.get(channel)
        else:
            targets = self._targets(channel)
        if targets:
            self._deliver_all(targets, channel, item, now)
        return ident

    def subscribe(
        self,
        now: float,
        *,
        channels: Iterable[str] | None = None,
        may_read: MayRead | None = None,
        last_event_id: str | None = None,
        keepalive: float | None = None,
        first_byte: float | None = None,
        padding: int = 0,
        coalesce_bytes: int = 0,
        coalesce_delay: float = 0.0,
        wake: Wake | None = None,
    ) -> ServerStream:
        """A new subscriber's stream, primed with the replay after ``last_event_id``.

        ``channels``: the exact names and shell-style patterns (``"scores/*"``) it
        reads, or None (the default) for every channel, the unnamed one included.
        ``may_read(channel, item)`` is asked for every item before it is queued for
        this subscriber, replayed ones included; an item refused leaves no trace in its
        stream, and a ``may_read`` that raises ends it as a cut.  ``wake`` is called
        after anything is queued on the stream or it ends (an adapter's writer sleeps
        until then).

        The replay comes from the window, of this subscriber's channels; when part of
        what the client missed cannot be replayed, the gap event (``{"dropped":
        null}``) comes first.  When the window's producer finished
        (:meth:`~sse_sansio.ReplayWindow.close`), the stream is ended at once after the
        replay and not subscribed.  The other options are the stream's own
        (:class:`~sse_sansio.ServerStream`).

        Raises:
            TypeError: ``channels`` is a str (a name must be in an iterable) or holds
                something else than a str; ``may_read`` or ``wake`` not callable.
        """
        now = self._clock.read(now, "subscribe")
        _check_callable("may_read", may_read)
        _check_callable("wake", wake)
        reader: Reader = (_channel_set(channels), may_read, wake)
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
            resume = self._replay(stream, reader, last_event_id, now)
        if stream.state != "open":  # its may_read raised during the replay: cut
            return stream
        if resume is not None and resume.finished:
            stream.end(now, cut=resume.cut)
        elif self._ending is not None:
            stream.end(now, cut=self._ending)
        else:
            if self._shares(stream, may_read):
                stream = self._join(stream, reader)
            else:
                self._route(stream, reader)
            self._readers[stream] = reader
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
        self._fast = None
        if self._window is not None:
            self._window.close(cut=cut)
        self._end_all(now, cut)

    def cut_subscribers(self, now: float) -> None:
        """End every subscriber's stream as a cut, and let them go; the hub stays open.

        For a log that was replaced under the hub (a Redis restarted without
        persistence: :meth:`~sse_sansio.stores.AsyncRedisStreamStore.follow_channels`
        raised :class:`~sse_sansio.StreamCut`): the live subscribers would miss events
        without a sign, so each is cut, and its client resumes (and learns of the gap).
        Later subscribers are served as usual.
        """
        self._end_all(self._clock.read(now, "cut_subscribers"), True)

    def _end_all(self, now: float, cut: bool) -> None:
        """End every subscriber (after what is queued for it) and let it go."""
        readers = list(self._readers.items())
        for stream, _ in readers:
            self.unsubscribe(stream)
        for stream, (_, _, wake) in readers:
            finish(stream, now, cut=cut)
            if wake is not None:
                wake()

    def unsubscribe(self, stream: ServerStream) -> None:
        """Stop publishing to ``stream``; a stream not subscribed (any more) is ignored,
        so a connection's clean-up may call this whether or not the hub dropped it."""
        reader = self._readers.pop(stream, None)
        if reader is None:
            return
        if stream._log is not None:  # a reader of a shared log: it takes its frames
            log = leave(stream)
            if not log.marks:
                self._ungroup(log)
            return
        if self._solo.get(reader[0]) is stream:
            del self._solo[reader[0]]
        self._unroute(stream, reader[0])

    # Routing.

    def _shares(self, stream: ServerStream, may_read: MayRead | None) -> bool:
        """Whether a new subscriber reads a shared log: its frames need no work of its
        own (policy "disconnect", no may_read, no coalescing) and nothing is queued on
        it yet (a replay: it is served alone)."""
        plain = self._policy == "disconnect" and may_read is None
        return plain and not stream._hold and not stream._size

    def _join(self, stream: ServerStream, reader: Reader) -> ServerStream:
        """The reader of the shared log of its channels that takes the place of the new
        subscriber ``stream``; or ``stream`` itself, served alone, when it is the first
        that could share one (the log is made for the second)."""
        names = reader[0]
        log = self._groups.get(names)
        if log is None:
            if self._solo.pop(names, None) is None:
                self._solo[names] = stream
                self._route(stream, reader)
                return stream
            log = self._groups[names] = FrameLog(names, self._max_buffer, self._alone)
            self._route(log, (names, None, None))
        return join(log, stream, reader[2])

    def _alone(self, stream: ServerStream, log: FrameLog) -> None:
        """``stream`` left its shared ``log`` on its own (it queued or ended): it stays
        subscribed, served alone."""
        self._route(stream, self._readers[stream])
        if not log.marks:
            self._ungroup(log)

    def _ungroup(self, log: FrameLog) -> None:
        """Forget a shared log its last reader left."""
        del self._groups[log.channels]
        self._unroute(log, log.channels)

    def _route(self, target: Target, reader: Reader) -> None:
        if _add_route(self._everyone, self._exact, self._patterns, target, reader):
            self._matched.clear()  # a new pattern: the cached matches are stale
        self._refresh_fast()

    def _unroute(self, target: Target, names: frozenset[str] | None) -> None:
        if names is None:
            del self._everyone[target]
        for name in names or ():
            index = self._patterns if _WILD.intersection(name) else self._exact
            readers = index[name]
            del readers[target]
            if not readers:
                del index[name]
        self._refresh_fast()

    def _refresh_fast(self) -> None:
        plain = self._window is None and self._ending is None
        only_exact = plain and not self._everyone and not self._patterns
        self._fast = self._exact if only_exact else None

    def _targets(self, channel: str) -> Route | None:
        """The subscribers of a named ``channel``, each once (None or empty: nobody)."""
        everyone = self._everyone
        exact = self._exact.get(channel)
        patterns = self._patterns_of(channel) if self._patterns else ()
        if not patterns:
            if exact is None:
                return everyone
            return {**everyone, **exact} if everyone else exact
        targets = {**everyone, **exact} if exact is not None else dict(everyone)
        for pattern in patterns:
            targets.update(self._patterns.get(pattern, ()))
        return targets

    def _patterns_of(self, channel: str) -> tuple[str, ...]:
        """The patterns ``channel`` matches, matched once per name (then cached)."""
        found = self._matched.get(channel)
        if found is None:
            if len(self._matched) >= _MATCHED_MAX:
                self._matched.clear()
            found = tuple(p for p in self._patterns if fnmatchcase(channel, p))
            self._matched[channel] = found
        return found

    def _deliver_all(
        self,
        targets: Route,
        channel: str | None,
        item: Event | Comment,
        now: float,
    ) -> None:
        """Queue ``item`` on each of ``targets`` that may read it (serialized once)."""
        gone = []
        data, hurry = serialized(item)
        length = len(data)
        frame = None  # made for deliver() only: a subscriber with a policy, or full
        for stream, (_, may_read, wake) in tuple(targets.items()):
            if type(stream) is FrameLog:  # its readers' frames, once for all of them
                slow = stream.append(data, now)
                if slow:  # (let go before any wake-up runs: one may unsubscribe)
                    self._dropped(stream, slow)
                if stream.wakes:
                    for each in [*stream.wakes.values()]:
                        each()
                continue
            if may_read is not None and not self._may(stream, may_read, channel, item, now):
                if stream.state != "open":  # may_read raised: cut, and its writer told
                    gone.append(stream)
                    if wake is not None:
                        wake()
                continue
            # deliver()'s commonest case inline (issue 40, item 8): an open "disconnect"
            # subscriber with room, whose clock did not run ahead of the hub's.
            size = stream._size
            total = size + length
            clock = stream._clock
            if stream._plain and (total <= stream._max_buffer or not size) and now >= clock.latest:
                clock.latest = now
                stream._frames.append(data)
                stream._size = total
                due_at = stream._due_at
                if due_at is None:
                    due_at = now + stream._hold
                if (hurry or total >= stream._burst) and now < due_at:
                    due_at = now
                stream._due_at = due_at
            else:
                if frame is None:
                    key = None if self._policy != "conflate" else self._key_of(item)
                    frame = trusted(data, key, hurry)
                if deliver(stream, frame, now):
                    gone.append(stream)
            if wake is not None:
                wake()
        for stream in gone:
            self.unsubscribe(stream)

    def _dropped(self, log: FrameLog, slow: list[ServerStream]) -> None:
        """Let go of the readers a publish made "slow" in ``log``, and wake them."""
        wakes = [self._readers.pop(stream)[2] for stream in slow]
        if not log.marks:
            self._ungroup(log)
        for wake in wakes:
            if wake is not None:
                wake()

    def _may(
        self,
        stream: ServerStream,
        may_read: MayRead,
        channel: str | None,
        item: Event | Comment,
        now: float,
    ) -> bool:
        """``may_read``'s answer; one that raises ends ``stream`` as a cut."""
        try:
            return bool(may_read(channel, item))
        except Exception:
            LOG.exception("sse_sansio: may_read raised; its subscriber's stream is cut")
            finish(stream, now, cut=True)
            return False

    # The channel log beside the window.

    def _log_channel(self, ident: str, channel: str | None) -> None:
        log = self._channel_of
        log[ident] = channel
        if len(log) >= self._trim_at:
            self._trim_log()

    def _trim_log(self) -> None:
        """Forget the channels of events the window no longer keeps (amortized O(1):
        a trim runs when the log has doubled since the last one)."""
        assert self._window is not None  # only a window's events are logged
        snapshot = self._window.store.read(None)
        kept = snapshot.last - snapshot.first + 1
        log = self._channel_of
        for ident in list(log)[: max(0, len(log) - kept)]:
            del log[ident]
        self._trim_at = max(64, 2 * len(log))

    # Replay.

    def _key_of(self, item: Event | Comment) -> Hashable | None:
        """The conflation key of ``item`` (policy "conflate")."""
        if self._key is not None:
            return self._key(item)
        return item.type if isinstance(item, Event) else None

    def _replay(
        self, stream: ServerStream, reader: Reader, last_event_id: str, now: float
    ) -> Resume | None:
        """Queue what the client missed, of its channels; the window's Resume (None: no
        window)."""
        resume = None if self._window is None else self._window.resume(last_event_id)
        items: list[Event] = []
        if resume is None or resume.verdict != "continue":
            items.append(Event(type=GAP_EVENT, data='{"dropped": null}'))
        if resume is not None:
            items.extend(self._readable(stream, reader, resume.events, now))
        if not items or stream.state != "open":
            return resume
        if self._policy == "disconnect":
            # One frame: a long replay must not make the stream "slow" before its
            # consumer could read a byte (as ServerStream.resume()).
            deliver(stream, Frame(*items, urgent=True), now)
        elif self._policy == "conflate":
            deliver(stream, Frame(*self._conflated(items), urgent=True), now)
        else:
            for item in items:
                deliver(stream, Frame(item, urgent=True), now)
        return resume

    def _readable(
        self, stream: ServerStream, reader: Reader, events: Iterable[Event], now: float
    ) -> list[Event]:
        """The replayed ``events`` this subscriber reads and may read now."""
        names, may_read, _ = reader
        log = self._channel_of
        kept = []
        for event in events:
            channel = log.get(event.id)
            if names is not None and not _reads(names, channel):
                continue
            if may_read is not None and not self._may(stream, may_read, channel, event, now):
                if stream.state != "open":
                    return []
                continue
            kept.append(event)
        return kept

    def _conflated(self, items: list[Event]) -> list[Event]:
        """The newest item per key, in order (a None key is never conflated)."""
        newest: dict[Hashable, int] = {}
        for index, item in enumerate(items):
            key = self._key_of(item)
            if key is not None:
                newest[key] = index
        return [
            item
            for index, item in enumerate(items)
            if (key := self._key_of(item)) is None or newest[key] == index
        ]

    # Pickling (issue 32, item 4): a state machine worth keeping, through its public
    # class: the subscribers' streams, the window and the options are plain or public
    # (a ``key``, a ``may_read`` and a ``wake`` must be picklable themselves:
    # module-level functions, not lambdas).  Pickle the hub together with the streams
    # your connections hold, in one dump, so that they stay the same objects.  The
    # Clock goes as plain data (_pickling.py).
    # A shared log is not pickled: its readers pickle as streams with their own queues
    # (_server_stream.py), so the state routes each of them alone.
    def __reduce__(self) -> tuple[object, ...]:
        everyone: Route = {}
        exact: dict[str, Route] = {}
        patterns: dict[str, Route] = {}
        for stream, reader in self._readers.items():
            _add_route(everyone, exact, patterns, stream, reader)
        return public_reduce(
            self,
            _clock=clock_state(self._clock),
            _everyone=everyone,
            _exact=exact,
            _patterns=patterns,
            _groups={},
            _fast=None if self._fast is None else exact,
        )

    def __setstate__(self, state: dict[str, object]) -> None:
        restore(self, with_clock(state))


def _add_route(
    everyone: Route,
    exact: dict[str, Route],
    patterns: dict[str, Route],
    target: Target,
    reader: Reader,
) -> bool:
    """Index ``target`` by its reader's channels; whether it added a new pattern."""
    names = reader[0]
    if names is None:
        everyone[target] = reader
        return False
    new = False
    for name in names:
        if not _WILD.intersection(name):
            exact.setdefault(name, {})[target] = reader
        elif name in patterns:
            patterns[name][target] = reader
        else:
            patterns[name] = {target: reader}
            new = True
    return new


def _channel_set(channels: Iterable[str] | None) -> frozenset[str] | None:
    if channels is None:
        return None
    if isinstance(channels, (str, bytes)):
        raise TypeError(f"Hub.subscribe(): channels must be an iterable of str, not {channels!r}")
    names = frozenset(channels)
    for name in names:
        if type(name) is not str:
            raise TypeError(f"Hub.subscribe(): a channel must be a str, not {name!r}")
    return names


def _check_callable(name: str, value: object) -> None:
    if value is not None and not callable(value):
        raise TypeError(f"Hub.subscribe(): {name} must be callable, not {value!r}")


def _reads(names: frozenset[str], channel: str | None) -> bool:
    """Whether a subscriber reading ``names`` reads ``channel`` (the unnamed channel is
    read only by those who read every channel)."""
    if channel is None:
        return False
    if channel in names:
        return True
    return any(_WILD.intersection(n) and fnmatchcase(channel, n) for n in names)
