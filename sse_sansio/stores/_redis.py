# Replay-window stores in a Redis stream, shared by every server process.
#
# Layout, under the key the caller chooses per session or resource (``key``):
# - ``key``: a Redis stream, one entry per event, fields ``type``, ``data``, ``retry``
#   ("" for none), ``c`` the event's channel when it has one (issue 40, item 7: a Hub's
#   channels across processes; an entry without it is on the unnamed channel), and on
#   the last entry of each append (or batch) ``k``, the append's idempotency key.
#   Entries are added with ``XADD key MAXLEN max_events 0-* ...``: the
#   explicit ``0-*`` makes Redis (7.0 or later) number the entries 0-1, 0-2, 0-3... by
#   itself, atomically, whichever process appends, so the numbers have no holes and the
#   window's event numbers are the entries' sequence parts.
# - ``key:token``: the stream's random token, written once by the first append or read
#   (``SET key:token <fresh> NX GET``, in the same script or MULTI as the rest), then
#   `` ended`` or `` cut`` appended by finish() (``APPEND``, after the same SET NX, so
#   that a finish before any event still keeps a token): the producer's end lives with
#   the token, so every process sees it and the two keys are still all there is.  A
#   token never holds a space; the first word after it is the end that counts.
#
# The verdicts read what Redis really holds, in one MULTI: the token, the oldest
# and newest entries (XRANGE - + COUNT 1, XREVRANGE + - COUNT 1) and the entries after
# the number asked for (XRANGE (0-n +).  A gap is "the oldest kept entry is past n + 1",
# so it is exact whatever trimmed the stream: exact MAXLEN (the default) keeps exactly
# max_events entries; ``approximate=True`` (``MAXLEN ~``, cheaper on long streams) may
# keep some more, and the verdicts stay right because they look at the entries kept.
# MAXLEN never drops the newest entry, so the newest number is always readable.
#
# Appends that never duplicate (issue 34, item 3).  redis-py (its default client: a
# socket timeout, retries on) sends a command again when the reply did not come in time;
# a Redis that was paused (SIGSTOP, a long fork, a failover) then runs both, and an XADD
# stored the event twice.  So an append is one Lua script (APPEND_SCRIPT, EVALSHA: one round
# trip for one event or a batch) that carries a fresh idempotency key, the same in every
# retry redis-py makes of that call: before adding, the script looks for the key among
# the newest DEDUP_WINDOW entries and, when it is there, adds nothing and answers with
# the number that entry got.  A script runs atomically, so the check and the adds are one
# step.  The key is recognised while fewer than DEDUP_WINDOW entries were appended by
# other producers between the lost try and its retry (with one producer per stream, as
# usual, always).  An append that failed for good (redis-py raised after its retries)
# may still have been stored, or be stored later by a command queued in a paused server:
# the caller cannot know from the error (docs/resumption.rst says how to find out).
#
# A follower that outlives its stream (issue 41, item 6).  A Redis restarted without
# persistence, or a failover to a replica that lags or never had the stream, answers the
# follower's next XREAD (redis-py reconnects and retries by itself, unseen) from a stream
# whose numbers name other events: XREAD after 0-41 skipped the new stream's first 41
# events and follow() gave the rest the old token, so one ID named two events.  So each
# XREAD goes in one pipeline with GET of the token, answered by the same server after
# the entries: a token that changed or vanished raises StreamCut before anything of that
# batch is yielded.  When a block passes empty, the token and the newest entry are read
# together: a newest number below the last one yielded raises too (a batch needs no such
# check: its entries are past that number).
# A replica that lags but was written to until its numbers passed the follower's again
# between two reads goes unseen (it has the same token and enough numbers): the entries
# themselves would have to be compared, which costs every batch a read of the old ones.

# Delete or expire the two keys together (``keys``, ``delete()``): a stream made again
# under an old token would issue its old IDs a second time.  Never XDEL an entry: the
# numbers kept must have no hole.

from __future__ import annotations

import secrets
from collections.abc import AsyncGenerator, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from sse_sansio._errors import StreamCut
from sse_sansio._events import Event
from sse_sansio._pickling import refuse
from sse_sansio._resume._replay_store import StoreSnapshot, new_token, wait_seconds

if TYPE_CHECKING:
    import redis
    import redis.asyncio

__all__ = ["AsyncRedisStreamStore", "RedisStreamStore"]

Text = bytes | str
Entry = tuple[Text, Mapping[Text, Text]]


def _text(value: Text) -> str:
    """A reply as str, whether the client decodes responses or not."""
    return value.decode() if isinstance(value, bytes) else value


def _number(entry_id: Text) -> int:
    """The event number of a stream entry ``0-<number>``."""
    return int(_text(entry_id).partition("-")[2])


def _event(fields: Mapping[Text, Text], ident: str = "") -> Event:
    return _entry(fields, ident)[0]


def _entry(fields: Mapping[Text, Text], ident: str = "") -> tuple[Event, str | None]:
    """The event of an entry's fields, and its channel (None: the unnamed one)."""
    values = {_text(name): _text(value) for name, value in fields.items()}
    retry = int(values["retry"]) if values["retry"] else None
    event = Event(type=values["type"], data=values["data"], id=ident, retry=retry)
    return event, values.get("c")


def _token_and_end(value: Text) -> tuple[str, bool, bool]:
    """The token, finished and cut, from the token key's value."""
    token, _, end = _text(value).partition(" ")
    mark = end.split(" ", 1)[0]
    return token, bool(mark), mark == "cut"


def _same_token(key: str, token: str, held: Text | None) -> bool:
    """Check that the stream ``key`` a follower read still has the token it gave its
    events; return whether the producer finished.  A token that changed or vanished (a
    Redis restarted without persistence, a replica that never had the stream, the keys
    deleted) raises StreamCut: the numbers now name other events."""
    now, finished, _ = _token_and_end(held) if held is not None else ("", False, False)
    if now != token:
        found = f"the token {now}" if now else "no token"
        raise StreamCut(
            f"{key}: the followed stream was replaced ({found}, not {token}): follow it anew"
        )
    return finished


def _not_behind(key: str, newest: Sequence[Any], number: int) -> int:
    """The newest number of the stream ``key``, checked not to be below ``number``, the
    last one yielded: a replica that lags raises StreamCut (the numbers past its newest
    will be given to other events)."""
    last = _number(newest[0][0]) if newest else 0
    if last < number:
        raise StreamCut(
            f"{key}: the followed stream went back to event {last} after {number} was "
            "yielded (a lagging replica?): follow it anew"
        )
    return last


# How many of the newest entries an append looks through for its idempotency key: each
# costs the script the entry's fields (measured: 8 entries of 260 bytes add about 10 us
# to an append's 90, 32 add 90 us).  With one producer per stream a retry finds its key
# in the newest entry; 8 leaves room for 7 appends of other producers in between.
DEDUP_WINDOW = 8

# KEYS: the stream, the token's key.  ARGV: a fresh token, max_events, "~" or "=", the
# idempotency key, then type, data, retry and channel of each event (the channel "-"
# for none, else "+" and its name, so that an empty name stays a name).  Answers the
# token's key's old value ("" for none) and the ID of the entry holding the idempotency
# key: the last event of this append, added now or by an earlier try of the same append.
APPEND_SCRIPT = """
local old = redis.call('SET', KEYS[2], ARGV[1], 'NX', 'GET') or ''
local newest = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', DEDUP_WINDOW)
for _, entry in ipairs(newest) do
  local fields = entry[2]
  for i = 1, #fields, 2 do
    if fields[i] == 'k' and fields[i + 1] == ARGV[4] then
      return {old, entry[1]}
    end
  end
end
local last
for i = 5, #ARGV, 4 do
  local fields = {'type', ARGV[i], 'data', ARGV[i + 1], 'retry', ARGV[i + 2]}
  if ARGV[i + 3] ~= '-' then
    table.insert(fields, 'c')
    table.insert(fields, string.sub(ARGV[i + 3], 2))
  end
  if i + 4 > #ARGV then
    table.insert(fields, 'k')
    table.insert(fields, ARGV[4])
  end
  last = redis.call('XADD', KEYS[1], 'MAXLEN', ARGV[3], ARGV[2], '0-*', unpack(fields))
end
return {old, last}
""".replace("DEDUP_WINDOW", str(DEDUP_WINDOW))


def _channels(channels: Iterable[str | None] | None) -> tuple[str | None, ...] | None:
    return None if channels is None else tuple(channels)


def _check(key: object, max_events: object) -> str:
    if not isinstance(key, str) or not key:
        raise ValueError(f"key must be a non-empty str, not {key!r}")
    if type(max_events) is not int or max_events < 1:
        raise ValueError(f"max_events must be a positive int, not {max_events!r}")
    return key


# Pickling (issue 32, item 4): a store is a handle on a Redis client (its connection
# pool), which means nothing in another process or after a copy, while the events it
# keeps are in Redis already.  So pickle and copy refuse it, and say what to do instead.
_NOT_KEPT = (
    "it holds a Redis client; the events are in Redis: make a store with the same key"
    " (and a client of its own) where you need it"
)


class _Layout:
    """The keys, the commands and the reading of their replies, for both clients."""

    def __init__(self, key: str, max_events: int, approximate: bool) -> None:
        self.key = _check(key, max_events)
        self.token_key = f"{key}:token"
        self.max_events = max_events
        self.approximate = bool(approximate)

    def append_args(
        self, events: Sequence[Event], token: str, channels: Sequence[str | None] | None
    ) -> tuple[list[str], list[str]]:
        """The script's KEYS and ARGV for appending ``events`` (at least one), each on
        its channel of ``channels`` (None: all on the unnamed channel)."""
        if channels is None:
            channels = (None,) * len(events)
        elif len(channels) != len(events):
            raise ValueError(f"{len(events)} events but {len(channels)} channels")
        args = [token, str(self.max_events), "~" if self.approximate else "="]
        args.append(secrets.token_hex(8))  # the idempotency key: 64 random bits
        for event, channel in zip(events, channels, strict=True):
            if channel is not None and type(channel) is not str:
                raise TypeError(f"a channel must be a str or None, not {channel!r}")
            retry = "" if event.retry is None else str(event.retry)
            args += (event.type, event.data, retry, "-" if channel is None else f"+{channel}")
        return [self.key, self.token_key], args

    def appended(self, reply: Sequence[Any], token: str) -> tuple[str, int]:
        old, entry_id = reply
        return (_token_and_end(old)[0] if old else token), _number(entry_id)

    def queue_finish(self, pipe: Any, cut: bool, token: str) -> None:
        pipe.set(self.token_key, token, nx=True)
        pipe.append(self.token_key, " cut" if cut else " ended")

    def queue_read(self, pipe: Any, after: int | None, token: str) -> None:
        # The token is made by whichever comes first, an append or a read: the priming
        # event of a stream with no event yet needs it too.
        pipe.set(self.token_key, token, nx=True, get=True)
        pipe.xrange(self.key, count=1)
        pipe.xrevrange(self.key, count=1)
        if after is not None:
            pipe.xrange(self.key, min=f"(0-{after}", max="+")

    def snapshot(self, replies: Sequence[Any], token: str) -> StoreSnapshot:
        old, oldest, newest, *after = replies
        last = _number(newest[0][0]) if newest else 0
        first = _number(oldest[0][0]) if oldest else last + 1
        entries: list[Entry] = after[0] if after else []
        events = tuple((_number(entry_id), _event(fields)) for entry_id, fields in entries)
        end = (token, False, False) if old is None else _token_and_end(old)
        return StoreSnapshot(end[0], first, last, events, end[1], end[2])


class RedisStreamStore:
    """A :class:`~sse_sansio.ReplayStore` in the Redis stream ``key``, for
    ``ReplayWindow(store=...)`` with a ``redis.Redis`` client.

    ``key`` names one stream: choose it per session or resource (a client's
    ``Last-Event-ID`` is only ever matched against it).  The stream keeps the newest
    ``max_events`` events (``XADD ... MAXLEN``, exact unless ``approximate=True``).
    Needs Redis 7.0 or later.  The token lives in ``key + ":token"``.
    """

    def __init__(
        self, client: redis.Redis, key: str, *, max_events: int, approximate: bool = False
    ) -> None:
        self._client = client
        self._layout = _Layout(key, max_events, approximate)
        self._script: Any = None  # registered with the client at the first append

    @property
    def keys(self) -> tuple[str, str]:
        """The stream's key and its token's key: expire or delete them together."""
        return self._layout.key, self._layout.token_key

    def append(self, event: Event, *, channel: str | None = None) -> tuple[str, int]:
        """As :meth:`~sse_sansio.ReplayStore.append`, once however often redis-py
        retries it (see :doc:`/stores-contract`); ``channel``: the Hub channel it is
        published on, kept beside it (:meth:`AsyncRedisStreamStore.follow_channels`)."""
        return self.append_many((event,), channels=(channel,))

    def append_many(
        self, events: Iterable[Event], *, channels: Iterable[str | None] | None = None
    ) -> tuple[str, int]:
        """Keep ``events`` in order in one round trip, once however often redis-py
        retries it; return the token and the number of the last one (the others
        have the numbers just before it).  With no event, the newest number.
        ``channels``: each event's channel, in order (None: none has one)."""
        batch = tuple(events)
        if not batch:
            snapshot = self.read(None)
            return snapshot.token, snapshot.last
        if self._script is None:  # EVALSHA, loading the script when Redis lacks it
            self._script = self._client.register_script(APPEND_SCRIPT)
        token = new_token()
        keys, args = self._layout.append_args(batch, token, _channels(channels))
        return self._layout.appended(self._script(keys=keys, args=args), token)

    def read(self, after: int | None) -> StoreSnapshot:
        token = new_token()
        pipe = self._client.pipeline(transaction=True)
        self._layout.queue_read(pipe, after, token)
        return self._layout.snapshot(pipe.execute(), token)

    def finish(self, *, cut: bool = False) -> None:
        """As :meth:`~sse_sansio.ReplayStore.finish`: kept in the token's key."""
        pipe = self._client.pipeline(transaction=True)
        self._layout.queue_finish(pipe, cut, new_token())
        pipe.execute()

    def delete(self) -> None:
        """Delete the stream and its token: its IDs become unknown."""
        self._client.delete(*self.keys)

    def __reduce__(self) -> NoReturn:
        refuse(self, _NOT_KEPT)


class AsyncRedisStreamStore:
    """:class:`RedisStreamStore` for a ``redis.asyncio.Redis`` client, an
    :class:`~sse_sansio.AsyncReplayStore` for :class:`~sse_sansio.AsyncReplayWindow`.

    ``read(after, wait=seconds)`` waits for a new entry with ``XREAD BLOCK``.
    """

    def __init__(
        self,
        client: redis.asyncio.Redis,
        key: str,
        *,
        max_events: int,
        approximate: bool = False,
    ) -> None:
        self._client = client
        self._layout = _Layout(key, max_events, approximate)
        self._script: Any = None  # registered with the client at the first append

    @property
    def keys(self) -> tuple[str, str]:
        """As :attr:`RedisStreamStore.keys`."""
        return self._layout.key, self._layout.token_key

    async def append(self, event: Event, *, channel: str | None = None) -> tuple[str, int]:
        """As :meth:`RedisStreamStore.append`."""
        return await self.append_many((event,), channels=(channel,))

    async def append_many(
        self, events: Iterable[Event], *, channels: Iterable[str | None] | None = None
    ) -> tuple[str, int]:
        """As :meth:`RedisStreamStore.append_many`."""
        batch = tuple(events)
        if not batch:
            snapshot = await self.read(None)
            return snapshot.token, snapshot.last
        if self._script is None:
            self._script = self._client.register_script(APPEND_SCRIPT)
        token = new_token()
        keys, args = self._layout.append_args(batch, token, _channels(channels))
        return self._layout.appended(await self._script(keys=keys, args=args), token)

    async def read(self, after: int | None, *, wait: float | None = None) -> StoreSnapshot:
        """As :meth:`~sse_sansio.AsyncReplayStore.read`; ``wait`` is checked as
        :meth:`~sse_sansio.AsyncReplayWindow.resume` checks it (ValueError past a day)."""
        wait = wait_seconds("wait", wait)
        if wait is not None and after is not None:
            # Returns as soon as an entry after 0-<after> exists (at once if one does);
            # BLOCK 0 would wait forever, so at least 1 ms.
            block = max(1, round(wait * 1000))
            await self._client.xread({self._layout.key: f"0-{after}"}, count=1, block=block)
        token = new_token()
        pipe = self._client.pipeline(transaction=True)
        self._layout.queue_read(pipe, after, token)
        return self._layout.snapshot(await pipe.execute(), token)

    async def follow(
        self, after: int = 0, *, count: int = 100, block: float = 5.0
    ) -> AsyncGenerator[Event, None]:
        """Every event kept after number ``after`` (0: from the oldest kept), then
        each one appended from now on, as it comes, with the ID the store gave it:
        the live tail that feeds a process's :class:`~sse_sansio.Hub` through a
        :class:`~sse_sansio.stores.MirrorStore` (docs/fanout.rst, across processes).
        :meth:`follow_channels` says more, and gives each event's channel too."""
        tail = self.follow_channels(after, count=count, block=block)
        try:
            async for event, _ in tail:
                yield event
        finally:
            await tail.aclose()

    async def follow_channels(
        self, after: int = 0, *, count: int = 100, block: float = 5.0
    ) -> AsyncGenerator[tuple[Event, str | None], None]:
        """As :meth:`follow`, each event with the channel it was appended on (None:
        the unnamed one): what a process's Hub publishes it on, so that its channels
        and ``may_read`` rule it as in the process that published it.

        Every event kept after number ``after`` (0: from the oldest kept), then
        each one appended from now on, as it comes, with the ID the store gave it:
        the live tail that feeds a process's :class:`~sse_sansio.Hub` through a
        :class:`~sse_sansio.stores.MirrorStore` (docs/fanout.rst, across processes).

        Reads with ``XREAD COUNT count BLOCK block`` in a loop.  It ends once the
        producer finished (:meth:`finish`) and every event was yielded, which it checks
        each time ``block`` seconds pass with nothing new (so within about ``block``
        seconds of the end); :meth:`read` then tells whether it was a cut.  Otherwise
        cancel the task, or stop iterating, to stop.

        Raises:
            ValueError: ``block`` is not a number of seconds above 0 and at most a day.
            StreamCut: the stream it follows is gone: its token changed (a Redis
                restarted without persistence, a failover to a replica that never had
                the stream, the keys deleted and made again) or its newest number went
                back below the last one yielded (a failover to a lagging replica).
                Nothing of the new stream was yielded: follow it anew, from 0, into a
                new :class:`~sse_sansio.stores.MirrorStore` (or the same one, which
                resets on the new token), and cut the live subscribers, who resume.
        """
        checked = wait_seconds("block", block)
        if checked is None or checked == 0:
            raise ValueError(f"block must be a number of seconds above 0, not {block!r}")
        token = (await self.read(None)).token
        number = after
        block_ms = max(1, round(checked * 1000))
        key, token_key = self.keys
        while True:
            # One round trip, on one connection, so on one server: the entries, then
            # the token as that same server holds it after them.  A retry of redis-py
            # after a lost connection (a restart, a failover) runs both again on the
            # new connection, so the token read with a batch is its stream's.
            pipe = self._client.pipeline(transaction=False)
            pipe.xread({key: f"0-{number}"}, count=count, block=block_ms)
            pipe.get(token_key)
            reply, held = await pipe.execute()
            _same_token(key, token, held)
            if not reply:
                # Idle: the token again, with the newest entry, for the end and for a
                # stream that went back (a batch proves the newest is past ``number``).
                pipe = self._client.pipeline(transaction=False)
                pipe.get(token_key)
                pipe.xrevrange(key, count=1)
                held, newest = await pipe.execute()
                finished = _same_token(key, token, held)
                if _not_behind(key, newest, number) == number and finished:
                    return  # the producer finished, and everything was yielded
            for _key, entries in reply or ():
                for entry_id, fields in entries:
                    number = _number(entry_id)
                    yield _entry(fields, f"{token}-{number}")

    async def finish(self, *, cut: bool = False) -> None:
        """As :meth:`RedisStreamStore.finish`."""
        pipe = self._client.pipeline(transaction=True)
        self._layout.queue_finish(pipe, cut, new_token())
        await pipe.execute()

    async def delete(self) -> None:
        """As :meth:`RedisStreamStore.delete`."""
        await self._client.delete(*self.keys)

    def __reduce__(self) -> NoReturn:
        refuse(self, _NOT_KEPT)
