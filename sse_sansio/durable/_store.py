"""The storage contract of sse_sansio.durable, and the store in memory.

Strategy: a store keeps, per stream path, a :class:`StreamMeta` (the configuration and
the writer state) and the stream's own data: its *units* in order.  A unit is one byte
string; the positions it covers are its length in bytes for a byte stream and one for a
JSON stream (one unit per flattened message, PROTOCOL.md 9.1).  A position is an integer
counted from the start of the stream's offset space (a fork's own data starts at its
fork position, section 4.2); offsets are positions written as sortable text
(:func:`encode_offset`).  Every append also records where it ended (``ends``): those are
the data boundaries that ``Stream-Fork-Sub-Offset`` may not cross.

Invariants a store keeps (tests/durable/test_durable_stores.py holds every store to
them):

- ``append`` is atomic: the checks of :func:`decide_append` (expiry on the plan's
  clock among them), the write and a sliding TTL's move happen as one step for a
  path, so two writers never both pass the same producer check, and the protocol
  core needs no read of the stream before an append;
- the tail only grows, closure is for good, and a read returns the bytes written;
- ``delete`` of a stream that forks still read is a soft delete (kept, marked), and
  removing a fork releases its source, cascading up a chain of soft-deleted sources;
- the memory store tells its subscribers (``MemoryStore.subscribe``) the path of every
  change, once it is made: a create, an append that wrote or closed, a delete.

The in-process producer's path (``DurableStreams.append``) first offers a store that
has one the plainest append, through the optional ``append_bytes``: one unit of bytes,
no producer, ``Stream-Seq`` or close.  The memory store writes it at once when the
stream surely takes it (an open byte stream of that type, before its deadline), with
no plan or outcome made; otherwise it changes nothing, the plan is made, and
:func:`decide_append` gives the verdict.  So every refusal is still decided in one
place, and the common append costs two calls and a copy.

The decisions themselves (:func:`decide_append`) are pure, so the Redis store's Lua
script can be held to the same table.
"""

from __future__ import annotations

import bisect
import itertools
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal, NamedTuple, Protocol

__all__ = [
    "AppendOutcome",
    "AppendPlan",
    "MemoryStore",
    "Store",
    "StreamMeta",
    "decide_append",
    "decode_offset",
    "encode_offset",
]

_WIDTH = 16
#: The largest position an offset can hold (16 decimal digits).
MAX_POSITION = 10**_WIDTH - 1


def encode_offset(position: int) -> str:
    """The offset of ``position``: fixed-width decimal, so text order is stream order.

    The first field is a reserved segment number (always zero here); the second is the
    position.  Neither sentinel (``-1``, ``now``) can come out of it.
    """
    return OFFSET_FORMAT % position


#: encode_offset's format, written out once (a nested format spec is parsed per call).
OFFSET_FORMAT = "0" * _WIDTH + f"_%0{_WIDTH}d"


def decode_offset(offset: str) -> int | None:
    """The position an offset names, or None when it is not one of ours."""
    segment, sep, position = offset.partition("_")
    if not sep or len(segment) != _WIDTH or len(position) != _WIDTH:
        return None
    if not (segment.isascii() and segment.isdigit() and position.isascii()):
        return None
    if not position.isdigit() or int(segment) != 0:
        return None
    return int(position)


@dataclass
class StreamMeta:
    """One stream's configuration and writer state, as a store keeps it.

    ``fork_position`` is where the stream's own data starts (0 unless it is a fork);
    ``tail`` is the position after its last unit.  ``deadline`` is the caller-clock
    time at which the stream expires (None: never); ``ttl`` slides it on each access.
    ``config`` is what an idempotent PUT must repeat, as one comparable string.  A
    store may hand out its own object: callers never change one.
    """

    path: str
    sid: str
    content_type: str
    json: bool
    tail: int = 0
    closed: bool = False
    ttl: int | None = None
    expires_at: str | None = None
    deadline: float | None = None
    fork_source: str | None = None
    fork_position: int = 0
    config: str = ""
    refcount: int = 0
    soft_deleted: bool = False
    stream_seq: str | None = None
    closed_by: tuple[str, int, int] | None = None
    producers: dict[str, tuple[int, int]] = field(default_factory=dict)


class AppendPlan(NamedTuple):
    """What one POST asks a store to do, checked and written as one step.

    ``units`` are empty for a close-only request; ``size`` is the positions they
    cover; ``media_type`` is the request's media type, lower case and without
    parameters (None when a body-less close sent none); ``producer`` is
    ``(id, epoch, seq)`` when the idempotent-producer headers came; ``now`` is the
    caller's time, for a store that keeps time of its own.  (A named tuple: one is
    made per append, and a tuple is the cheapest value to make.)
    """

    units: Sequence[bytes]
    size: int
    media_type: str | None
    close: bool
    stream_seq: str | None
    producer: tuple[str, int, int] | None
    now: float


Verdict = Literal[
    "appended",  # written (200 with a producer, else 204)
    "duplicate",  # a producer's retry: nothing written, 204
    "closed",  # the stream is closed: 409 with Stream-Closed
    "closed-again",  # an idempotent close of a closed stream: 204
    "gone",  # soft-deleted: 410
    "missing",  # 404
    "expired",  # past its deadline: nothing changed; the caller removes it (404)
    "content-type",  # 409
    "stream-seq",  # 409
    "stale-epoch",  # 403 with the current epoch
    "epoch-seq",  # a new epoch must start at seq 0: 400
    "seq-gap",  # 409 with the expected and received seq
]


class AppendOutcome(NamedTuple):
    """A store's answer to an :class:`AppendPlan`.

    ``tail`` and ``closed`` are the stream's state after the step; ``epoch`` and
    ``seq`` carry the producer headers to echo (the current epoch on "stale-epoch",
    the expected seq on "seq-gap", the highest accepted seq otherwise).
    """

    verdict: Verdict
    tail: int = 0
    closed: bool = False
    epoch: int = 0
    seq: int = 0


#: media_type()'s memory: Content-Type as sent -> media type (at most 256 entries).
MEDIA_TYPES: dict[str, str] = {}


def media_type(content_type: str) -> str:
    """The media type of a ``Content-Type``: lower case, without parameters.

    The few distinct values a server sees are remembered (at most 256), since every
    append compares its own with its stream's.
    """
    media = MEDIA_TYPES.get(content_type)
    if media is None:
        media = content_type.partition(";")[0].strip().lower()
        if len(MEDIA_TYPES) < 256:
            MEDIA_TYPES[content_type] = media
    return media


#: tuple.__new__: a named tuple made without its Python-level __new__ (a third of the
#: cost); the hot path's plans and outcomes are made with it.
new_tuple = tuple.__new__
_MISSING = AppendOutcome("missing")
_GONE = AppendOutcome("gone")
_EXPIRED = AppendOutcome("expired")


def decide_append(meta: StreamMeta | None, plan: AppendPlan) -> AppendOutcome:
    """The append rules of PROTOCOL.md 5.2 and 5.2.1, in their precedence, as data.

    Order: missing, gone, expired (``plan.now`` at or past the deadline: section 4, the
    stream is no more; the caller removes it), closed (a producer's retry of the
    closing append and a body-less close are successes), content type, the producer's
    epoch and seq, then ``Stream-Seq``.  The store writes the units and the writer
    state when the verdict is "appended", and moves a sliding TTL on for every verdict
    after "expired" (:meth:`Store.append`).
    """
    if meta is None:
        return _MISSING
    if meta.soft_deleted:
        return _GONE
    units, size, media, close, stream_seq, producer, now = plan
    deadline = meta.deadline
    if deadline is not None and now >= deadline:
        return _EXPIRED
    tail = meta.tail
    if meta.closed:
        if producer is not None and producer == meta.closed_by:
            return AppendOutcome("duplicate", tail, True, producer[1], producer[2])
        if close and not units:
            return AppendOutcome("closed-again", tail, True)
        return AppendOutcome("closed", tail, True)
    if units and media != (MEDIA_TYPES.get(meta.content_type) or media_type(meta.content_type)):
        return AppendOutcome("content-type", tail)
    epoch = seq = 0
    if producer is not None:
        pid, epoch, seq = producer
        known = meta.producers.get(pid)
        if known is not None and epoch < known[0]:
            return AppendOutcome("stale-epoch", tail, epoch=known[0])
        if known is None or epoch > known[0]:
            if seq != 0:
                return AppendOutcome("epoch-seq", tail, epoch=epoch, seq=seq)
        elif seq <= known[1]:
            return AppendOutcome("duplicate", tail, epoch=epoch, seq=known[1])
        elif seq != known[1] + 1:
            return AppendOutcome("seq-gap", tail, epoch=epoch, seq=known[1] + 1)
    if stream_seq is not None and meta.stream_seq is not None and stream_seq <= meta.stream_seq:
        return AppendOutcome("stream-seq", tail)
    return new_tuple(AppendOutcome, ("appended", tail + size, close, epoch, seq))


DeleteVerdict = Literal["deleted", "soft", "gone", "missing"]


class Store(Protocol):
    """The storage contract: what :class:`~sse_sansio.durable.DurableStreams` needs.

    Paths are the full request paths; positions are integers (``_store.py`` explains
    them).  Each method is one atomic step for the paths it names.  A store for another
    engine implements these seven methods and passes tests/durable/test_durable_stores.py.
    Optional: ``blocking = True`` (the ASGI app calls the store in a worker thread);
    ``async def append_async(path, plan)``, :meth:`append` awaited (the ASGI app awaits
    appends on its event loop with it); ``append_bytes(path, data, media_type, now)``,
    the plainest append written at once when the stream surely takes it, else None
    (:meth:`MemoryStore.append_bytes` says what it must do); ``subscribe(callback)``,
    ``callback(path)`` after each change (the ASGI app wakes its readers with it).
    """

    def meta(self, path: str) -> StreamMeta | None:
        """The stream at ``path`` (soft-deleted ones too), or None."""

    def create(self, meta: StreamMeta, units: Sequence[bytes]) -> StreamMeta | None:
        """Create the stream with ``units`` as its first append, unless ``meta.path``
        exists: then return the existing stream unchanged.  A fork's source gains a
        reference in the same step.  Returns None when created."""

    def append(self, path: str, plan: AppendPlan) -> AppendOutcome:
        """Check ``plan`` with :func:`decide_append` and, when "appended", write it,
        in one step.  The same step moves a sliding TTL on (``deadline = plan.now +
        ttl``) unless the verdict is "missing", "gone" or "expired" (section 5.1: a
        write touches the stream even when refused)."""

    def read(self, path: str, start: int, stop: int, max_bytes: int) -> list[bytes]:
        """The own units of ``path`` covering ``[start, stop)``, a byte stream's first
        and last ones cut to that range, at least one unit and then no more than
        ``max_bytes`` bytes in all (a byte stream's unit may be cut to fit)."""

    def boundary(self, path: str, position: int) -> int:
        """The end of the append holding ``position`` (own data; the tail if none)."""

    def touch(self, path: str, deadline: float | None) -> None:
        """Set the stream's expiry time (a sliding TTL moved on)."""

    def delete(self, path: str) -> DeleteVerdict:
        """Delete the stream: soft while forks reference it; a removed fork releases
        its source (and a soft-deleted source with no forks left goes too)."""


class _Stream:
    __slots__ = ("data", "ends", "media", "meta", "units", "writable")

    def __init__(self, meta: StreamMeta) -> None:
        self.meta = meta
        self.media = media_type(meta.content_type)  # the type every append must have
        # A byte stream neither closed nor deleted (kept with closed and soft_deleted).
        self.writable = not (meta.json or meta.closed or meta.soft_deleted)
        self.data = bytearray()  # a byte stream's own bytes
        self.units: list[bytes] = []  # a JSON stream's own messages
        self.ends: list[int] = []  # where each append ended


_ids = itertools.count()


def new_sid() -> str:
    """A token naming one incarnation of a stream (in ETags), unique across processes."""
    return f"{os.urandom(6).hex()}{next(_ids):x}"


class MemoryStore:
    """The storage contract in one process's memory (the ASGI app's default).

    A byte stream's data is one ``bytearray`` (a read is a slice); a JSON stream's is a
    list of messages.  Not shared between processes; bounded only by what is written
    (delete or expire streams to free it).  Beside the contract: :meth:`append_bytes`
    (the plainest append, with nothing made per call but the write) and
    :meth:`subscribe` (hear every change).
    """

    def __init__(self) -> None:
        self._streams: dict[str, _Stream] = {}
        self._listeners: list[Callable[[str], None]] = []

    def subscribe(self, callback: Callable[[str], None]) -> None:
        """Call ``callback(path)`` after every change to a stream from now on (created,
        appended to or closed, deleted), in the thread that made it.  The ASGI app
        wakes its readers with it, so an append made in-process
        (:meth:`DurableStreams.append <sse_sansio.durable.DurableStreams.append>`)
        wakes them as a request's does."""
        self._listeners.append(callback)

    def _changed(self, path: str) -> None:
        for callback in list(self._listeners):
            callback(path)

    def meta(self, path: str) -> StreamMeta | None:
        stream = self._streams.get(path)
        return None if stream is None else stream.meta

    def create(self, meta: StreamMeta, units: Sequence[bytes]) -> StreamMeta | None:
        existing = self._streams.get(meta.path)
        if existing is not None:
            return self.meta(meta.path)
        stream = _Stream(replace(meta, producers=dict(meta.producers)))
        self._write(stream, units, meta.fork_position)
        stream.meta.tail = meta.fork_position + sum(self._sizes(stream, units))
        if meta.fork_source is not None:
            self._streams[meta.fork_source].meta.refcount += 1
        self._streams[meta.path] = stream
        if self._listeners:
            self._changed(meta.path)
        return None

    def append(self, path: str, plan: AppendPlan) -> AppendOutcome:
        stream = self._streams.get(path)
        if stream is None:
            return _MISSING
        meta = stream.meta
        outcome = decide_append(meta, plan)
        verdict = outcome[0]
        if verdict == "appended":  # write, then the writer state (apply the step)
            units, _, _, close, stream_seq, producer, _ = plan
            tail = meta.tail = outcome[1]
            if units:
                if meta.json:
                    stream.units += units
                else:
                    data = stream.data
                    for unit in units:
                        data += unit
                stream.ends.append(tail)
            if stream_seq is not None:
                meta.stream_seq = stream_seq
            if producer is not None:
                meta.producers[producer[0]] = (producer[1], producer[2])
            if close:
                meta.closed = True
                meta.closed_by = producer
                stream.writable = False
            if self._listeners:
                self._changed(path)
        elif verdict == "gone" or verdict == "expired":
            return outcome
        if meta.ttl is not None:  # section 5.1: a write touches, even when refused
            meta.deadline = plan.now + meta.ttl
        return outcome

    def append_bytes(self, path: str, data: bytes, media: str | None, now: float) -> int | None:
        """The plainest append, when the stream surely takes it: ``data`` (not empty)
        as one unit, with no producer, ``Stream-Seq`` or close, at time ``now``.

        When the stream is a byte stream, open, not deleted, before its deadline and of
        media type ``media`` (None: whatever its type), this writes ``data``, moves a
        sliding TTL on, tells the subscribers, and returns the new tail: all that
        :meth:`append` does with that plan, which :func:`decide_append` can only call
        "appended" then.  Otherwise it changes nothing and returns None: make the plan,
        and :meth:`append` gives the verdict.  (Optional in the contract; one call, with
        no plan or outcome made, for ``DurableStreams.append``'s common case.)
        """
        try:
            stream = self._streams[path]
        except KeyError:
            return None
        meta = stream.meta
        deadline = meta.deadline
        if not stream.writable or (deadline is not None and now >= deadline):
            return None
        if media is not None and media != stream.media:
            return None
        stream.data += data
        tail = meta.tail = meta.tail + len(data)
        stream.ends.append(tail)
        if meta.ttl is not None:
            meta.deadline = now + meta.ttl
        if self._listeners:
            self._changed(path)
        return tail

    def read(self, path: str, start: int, stop: int, max_bytes: int) -> list[bytes]:
        stream = self._streams[path]
        base = stream.meta.fork_position
        if not stream.meta.json:
            end = min(stop, start + max(max_bytes, 1))
            return [bytes(stream.data[start - base : end - base])]
        out: list[bytes] = []
        size = 0
        for unit in itertools.islice(stream.units, start - base, stop - base):
            if out and size + len(unit) > max_bytes:
                break
            out.append(unit)
            size += len(unit)
        return out

    def boundary(self, path: str, position: int) -> int:
        stream = self._streams[path]
        index = bisect.bisect_right(stream.ends, position)
        return stream.ends[index] if index < len(stream.ends) else stream.meta.tail

    def touch(self, path: str, deadline: float | None) -> None:
        stream = self._streams.get(path)
        if stream is not None:
            stream.meta.deadline = deadline

    def delete(self, path: str) -> DeleteVerdict:
        stream = self._streams.get(path)
        if stream is None:
            return "missing"
        if stream.meta.soft_deleted:
            return "gone"
        verdict: DeleteVerdict = "soft"
        if stream.meta.refcount > 0:
            stream.meta.soft_deleted = True
            stream.writable = False
        else:
            self._remove(path)
            verdict = "deleted"
        if self._listeners:
            self._changed(path)
        return verdict

    def _remove(self, path: str) -> None:
        while True:
            source = self._streams.pop(path).meta.fork_source
            if source is None:
                return
            parent = self._streams[source].meta
            parent.refcount -= 1
            if parent.refcount > 0 or not parent.soft_deleted:
                return
            path = source

    @staticmethod
    def _sizes(stream: _Stream, units: Sequence[bytes]) -> list[int]:
        return [1] * len(units) if stream.meta.json else [len(unit) for unit in units]

    def _write(self, stream: _Stream, units: Sequence[bytes], at: int) -> None:
        if not units:
            return
        if stream.meta.json:
            stream.units.extend(units)
            stream.ends.append(at + len(units))
            return
        data = stream.data
        for unit in units:
            data += unit
        stream.ends.append(len(data) + stream.meta.fork_position)
