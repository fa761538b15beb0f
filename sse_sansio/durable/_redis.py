"""The storage contract on Redis: :class:`RedisStore` (redis-py, imported here only).

Strategy: each stream has its own keys under ``prefix`` (``ds:`` by default), named by
its path:

- ``{prefix}m:{path}``, a hash: the :class:`~sse_sansio.durable.StreamMeta` fields
  (tail, closure, TTL and deadline, fork, writer state);
- ``{prefix}p:{path}``, a hash: each idempotent producer's ``epoch:seq``;
- ``{prefix}d:{path}``, a string: a byte stream's own bytes (APPEND, GETRANGE);
- ``{prefix}u:{path}``, a list: a JSON stream's own messages;
- ``{prefix}e:{path}``, a sorted set: where each append ended (the data boundaries).

Every change is one Lua script, so one round trip and atomic: an append runs
:func:`~sse_sansio.durable.decide_append`'s table in Lua (missing, gone, expired,
closed, content type, the producer's epoch and seq, ``Stream-Seq``), moves a sliding TTL
on and writes the units and the writer state in the same step (the protocol core reads
nothing before it, so an append is one round trip); a create writes the stream and
counts the fork's reference on its source; a delete is soft while forks read the stream
and cascades up a chain of soft-deleted sources.  Closure and the expiry deadline are
fields of the hash, so they survive a restart of the serving process, and a second
process serving the same Redis sees the same streams, offsets and closure.  Each change
is also published on the channel ``{prefix}changed`` (the path as message):
:meth:`RedisStore.subscribe` hands them to a server's live readers, which is how another
process's append wakes them.

The client is synchronous (``blocking = True``: the ASGI app calls it in a worker
thread); appends awaited on an event loop (:meth:`RedisStore.append_async`) go through
the store's asyncio client, or, for a store made by :meth:`RedisStore.from_url`, over a
connection of its own (:class:`~sse_sansio.durable._resp.AppendLine`: the same
``EVALSHA`` for about half the CPU time, redis-py taking over whatever it cannot
deliver).  Integers up to 2^53 - 1 are exact in Lua's doubles, which is the protocol's
own bound for epochs and seqs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

import redis
import redis.asyncio

from sse_sansio._public import publish

from ._resp import AppendLine
from ._store import AppendOutcome, AppendPlan, DeleteVerdict, StreamMeta, Verdict

__all__ = ["RedisStore"]

_APPEND = """
-- Few arguments (each costs the client an encode): the stream's keys are made here
-- from the prefix and the path, the numbers and flags come as one word list.
local prefix, path, media, sseq, pid = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local m, p, d = prefix .. 'm:' .. path, prefix .. 'p:' .. path, prefix .. 'd:' .. path
local u, e, channel = prefix .. 'u:' .. path, prefix .. 'e:' .. path, prefix .. 'changed'
local w = {}
for word in string.gmatch(ARGV[6], '%S+') do w[#w + 1] = word end
local close, has_sseq, has_producer = w[1] == '1', w[2] == '1', w[3] == '1'
local epoch_s, seq_s = w[4], w[5]
local epoch, seq, size, now = tonumber(epoch_s), tonumber(seq_s), tonumber(w[6]), tonumber(w[7])
local first = 7
-- The answer is one bulk string (one reply to parse): verdict tail closed epoch seq.
local function answer(verdict, tail, closed, epoch, seq)
  return string.format('%s %d %d %d %d', verdict, tail, closed, epoch, seq)
end
local count = #ARGV - first + 1
if redis.call('EXISTS', m) == 0 then return answer('missing', 0, 0, 0, 0) end
local f = redis.call('HMGET', m, 'tail', 'closed', 'soft', 'media', 'closed_by',
                     'stream_seq', 'json', 'deadline', 'ttl')
local tail = tonumber(f[1])
if f[3] == '1' then return answer('gone', tail, 0, 0, 0) end
if f[8] and f[8] ~= '' and now >= tonumber(f[8]) then return answer('expired', 0, 0, 0, 0) end
if f[9] and f[9] ~= '' then  -- a sliding TTL moves on, whatever the verdict (5.1)
  redis.call('HSET', m, 'deadline', string.format('%.17g', now + tonumber(f[9])))
end
local me = ''
if has_producer then me = pid .. '\\n' .. epoch_s .. '\\n' .. seq_s end
if f[2] == '1' then
  if has_producer and f[5] == me then return answer('duplicate', tail, 1, epoch, seq) end
  if close and count == 0 then return answer('closed-again', tail, 1, 0, 0) end
  return answer('closed', tail, 1, 0, 0)
end
if count > 0 and media ~= f[4] then return answer('content-type', tail, 0, 0, 0) end
if has_producer then
  local known = redis.call('HGET', p, pid)
  if known then
    local sep = string.find(known, ':', 1, true)
    local k_epoch = tonumber(string.sub(known, 1, sep - 1))
    local k_seq = tonumber(string.sub(known, sep + 1))
    if epoch < k_epoch then return answer('stale-epoch', tail, 0, k_epoch, 0) end
    if epoch > k_epoch then
      if seq ~= 0 then return answer('epoch-seq', tail, 0, epoch, seq) end
    elseif seq <= k_seq then return answer('duplicate', tail, 0, epoch, k_seq)
    elseif seq ~= k_seq + 1 then return answer('seq-gap', tail, 0, epoch, k_seq + 1)
    end
  elseif seq ~= 0 then return answer('epoch-seq', tail, 0, epoch, seq)
  end
end
if has_sseq and f[6] and sseq <= f[6] then return answer('stream-seq', tail, 0, 0, 0) end
local new_tail = tail + size
if count > 0 then
  if f[7] == '1' then
    for i = first, #ARGV do redis.call('RPUSH', u, ARGV[i]) end
  else
    for i = first, #ARGV do redis.call('APPEND', d, ARGV[i]) end
  end
  redis.call('ZADD', e, new_tail, new_tail)
end
redis.call('HSET', m, 'tail', new_tail)
if has_sseq then redis.call('HSET', m, 'stream_seq', sseq) end
if has_producer then redis.call('HSET', p, pid, epoch_s .. ':' .. seq_s) end
if close then
  redis.call('HSET', m, 'closed', '1')
  if has_producer then redis.call('HSET', m, 'closed_by', me) end
end
redis.call('PUBLISH', channel, path)
return answer('appended', new_tail, close and 1 or 0, epoch, seq)
"""

_CREATE = """
local m, d, u, e, source = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
if redis.call('EXISTS', m) == 1 then return 0 end
local n = tonumber(ARGV[1])
for i = 2, 2 * n, 2 do redis.call('HSET', m, ARGV[i], ARGV[i + 1]) end
local first = 2 * n + 2
local is_json = redis.call('HGET', m, 'json') == '1'
if #ARGV >= first then
  for i = first, #ARGV do
    if is_json then redis.call('RPUSH', u, ARGV[i]) else redis.call('APPEND', d, ARGV[i]) end
  end
  local tail = tonumber(redis.call('HGET', m, 'tail'))
  redis.call('ZADD', e, tail, tail)
end
if source ~= m then redis.call('HINCRBY', source, 'refcount', 1) end
return 1
"""

_DELETE = """
local prefix, path, channel = ARGV[1], ARGV[2], ARGV[3]
local m = prefix .. 'm:' .. path
if redis.call('EXISTS', m) == 0 then return 'missing' end
local f = redis.call('HMGET', m, 'soft', 'refcount')
if f[1] == '1' then return 'gone' end
if tonumber(f[2] or '0') > 0 then
  redis.call('HSET', m, 'soft', '1')
  redis.call('PUBLISH', channel, path)
  return 'soft'
end
while true do
  local source = redis.call('HGET', prefix .. 'm:' .. path, 'fork_source')
  for _, kind in ipairs({'m:', 'p:', 'd:', 'u:', 'e:'}) do
    redis.call('DEL', prefix .. kind .. path)
  end
  redis.call('PUBLISH', channel, path)
  if not source or source == '' then return 'deleted' end
  local sm = prefix .. 'm:' .. source
  local left = redis.call('HINCRBY', sm, 'refcount', -1)
  if left > 0 or redis.call('HGET', sm, 'soft') ~= '1' then return 'deleted' end
  path = source
end
"""

_READ = """
local m, d, u = KEYS[1], KEYS[2], KEYS[3]
local f = redis.call('HMGET', m, 'fork_position', 'json')
local base = tonumber(f[1] or '0')
local start, stop = tonumber(ARGV[1]) - base, tonumber(ARGV[2]) - base
local max_bytes = tonumber(ARGV[3])
if f[2] ~= '1' then
  local last = math.min(stop, start + math.max(max_bytes, 1)) - 1
  if last < start then return {''} end
  return {redis.call('GETRANGE', d, start, last)}
end
local out, size = {}, 0
while start < stop do
  local batch = redis.call('LRANGE', u, start, math.min(stop, start + 256) - 1)
  for _, unit in ipairs(batch) do
    if #out > 0 and size + #unit > max_bytes then return out end
    out[#out + 1] = unit
    size = size + #unit
  end
  start = start + 256
end
return out
"""


def _outcome(reply: bytes) -> AppendOutcome:
    verdict, tail, closed, epoch, seq = reply.split()
    name: Verdict = verdict.decode()  # type: ignore[assignment]
    return AppendOutcome(name, int(tail), closed == b"1", int(epoch), int(seq))


_TEXT_FIELDS = ("sid", "content_type", "expires_at", "fork_source", "stream_seq", "config")


class RedisStore:
    """Durable Streams on Redis (7 or later); the module docstring gives the layout.

    Args:
        client: A ``redis.Redis`` (bytes replies: ``decode_responses`` off).
        prefix: The start of every key this store names.
        async_client: A ``redis.asyncio.Redis`` on the same server, for
            :meth:`append_async` (the ASGI app's appends, awaited on its event loop
            instead of a worker thread; the client serves that one loop).
            :meth:`from_url` makes one.
    """

    #: The ASGI app calls a blocking store from a worker thread.
    blocking = True

    def __init__(
        self,
        client: redis.Redis,
        *,
        prefix: str = "ds:",
        async_client: redis.asyncio.Redis | None = None,
    ) -> None:
        self._client = client
        self._prefix = prefix
        self._channel = f"{prefix}changed"
        self._append = client.register_script(_APPEND)
        self._async_client = async_client
        self._append_async = None if async_client is None else async_client.register_script(_APPEND)
        self._create = client.register_script(_CREATE)
        self._delete = client.register_script(_DELETE)
        self._read = client.register_script(_READ)
        self._listener: Any = None
        self._line: AppendLine | None = None

    @classmethod
    def from_url(cls, url: str, *, prefix: str = "ds:") -> RedisStore:
        """A store on the Redis server at ``url`` (``redis://host:port/db``), with an
        asyncio client beside the blocking one for :meth:`append_async`, whose appends
        take a connection of their own where the URL allows (the module docstring)."""
        store = cls(
            redis.Redis.from_url(url), prefix=prefix, async_client=redis.asyncio.Redis.from_url(url)
        )
        store._line = AppendLine.for_url(url, _APPEND, store._append.sha)
        return store

    def _key(self, kind: str, path: str) -> str:
        return f"{self._prefix}{kind}:{path}"

    def meta(self, path: str) -> StreamMeta | None:
        pipe = self._client.pipeline(transaction=True)
        pipe.hgetall(self._key("m", path))
        pipe.hgetall(self._key("p", path))
        fields, producers = pipe.execute()
        if not fields:
            return None
        text = {k.decode(): v.decode() for k, v in fields.items()}
        closed_by = None
        if text.get("closed_by"):
            pid, epoch, seq = text["closed_by"].split("\n")
            closed_by = (pid, int(epoch), int(seq))
        states = {}
        for pid_raw, state in producers.items():
            epoch, _, seq = state.decode().partition(":")
            states[pid_raw.decode()] = (int(epoch), int(seq))
        return StreamMeta(
            path=path,
            sid=text["sid"],
            content_type=text["content_type"],
            json=text["json"] == "1",
            tail=int(text["tail"]),
            closed=text.get("closed") == "1",
            ttl=int(text["ttl"]) if text.get("ttl") else None,
            expires_at=text.get("expires_at") or None,
            deadline=float(text["deadline"]) if text.get("deadline") else None,
            fork_source=text.get("fork_source") or None,
            fork_position=int(text.get("fork_position", "0")),
            config=text.get("config", ""),
            refcount=int(text.get("refcount", "0")),
            soft_deleted=text.get("soft") == "1",
            stream_seq=text.get("stream_seq"),
            closed_by=closed_by,
            producers=states,
        )

    def create(self, meta: StreamMeta, units: Sequence[bytes]) -> StreamMeta | None:
        size = len(units) if meta.json else sum(len(unit) for unit in units)
        fields: dict[str, str] = {
            "json": "1" if meta.json else "0",
            "media": meta.content_type.partition(";")[0].strip().lower(),
            "tail": str(meta.fork_position + size),
            "closed": "1" if meta.closed else "0",
            "fork_position": str(meta.fork_position),
            "refcount": "0",
            "soft": "0",
            "ttl": "" if meta.ttl is None else str(meta.ttl),
            "deadline": "" if meta.deadline is None else repr(meta.deadline),
        }
        for name in _TEXT_FIELDS:
            value = getattr(meta, name)
            if value is not None:
                fields[name] = value
        flat: list[str | bytes] = [str(len(fields))]
        for name, value in fields.items():
            flat += [name, value]
        keys = [self._key(kind, meta.path) for kind in ("m", "d", "u", "e")]
        source = meta.fork_source
        keys.append(keys[0] if source is None else self._key("m", source))
        if self._create(keys=keys, args=[*flat, *units]):
            self._client.publish(self._channel, meta.path)
            return None
        return self.meta(meta.path)

    def append(self, path: str, plan: AppendPlan) -> AppendOutcome:
        return _outcome(self._append(args=self._append_call(path, plan)))

    async def append_async(self, path: str, plan: AppendPlan) -> AppendOutcome:
        """:meth:`append` awaited on the event loop through the asyncio client (one
        round trip, no worker thread), or in a worker thread without one."""
        if self._append_async is None:
            return await asyncio.to_thread(self.append, path, plan)
        args = self._append_call(path, plan)
        if self._line is not None:
            reply = await self._line.call(args)
            if reply is not None:
                return _outcome(reply)
        return _outcome(await self._append_async(args=args))

    def _append_call(self, path: str, plan: AppendPlan) -> list[str | bytes]:
        pid, epoch, seq = plan.producer or ("", 0, 0)
        flags = f"{plan.close:d} {plan.stream_seq is not None:d} {plan.producer is not None:d}"
        words = f"{flags} {epoch} {seq} {plan.size} {plan.now!r}"
        head = [self._prefix, path, plan.media_type or "", plan.stream_seq or "", pid, words]
        return [*head, *plan.units]

    def read(self, path: str, start: int, stop: int, max_bytes: int) -> list[bytes]:
        keys = [self._key(kind, path) for kind in ("m", "d", "u")]
        units: list[bytes] = self._read(keys=keys, args=[start, stop, max_bytes])
        return units

    def boundary(self, path: str, position: int) -> int:
        key = self._key("e", path)
        found: list[Any] = self._client.zrangebyscore(key, f"({position}", "+inf", 0, 1)
        if found:
            return int(found[0])
        return int(self._client.hget(self._key("m", path), "tail") or 0)

    def touch(self, path: str, deadline: float | None) -> None:
        key = self._key("m", path)
        value = "" if deadline is None else repr(deadline)
        # Only an existing stream: HSET on a missing key would make a husk of one.
        self._client.eval(
            "if redis.call('EXISTS', KEYS[1]) == 1 then "
            "redis.call('HSET', KEYS[1], 'deadline', ARGV[1]) end",
            1,
            key,
            value,
        )

    def delete(self, path: str) -> DeleteVerdict:
        verdict: bytes = self._delete(args=[self._prefix, path, self._channel])
        name: DeleteVerdict = verdict.decode()  # type: ignore[assignment]
        return name

    #: Seconds :meth:`subscribe` waits for Redis to confirm the subscription.
    subscribe_timeout = 10.0

    def subscribe(self, callback: Callable[[str], None]) -> None:
        """Call ``callback(path)`` (in a thread of its own) for every change any process
        makes to this store's streams from now on; the ASGI app wakes its readers with
        it.  Returns once Redis confirmed the subscription (TimeoutError if it does not
        within :attr:`subscribe_timeout`), so a change after the return is heard."""
        pubsub = self._client.pubsub()
        pubsub.subscribe(**{self._channel: lambda message: callback(message["data"].decode())})
        if pubsub.get_message(timeout=self.subscribe_timeout) is None:  # the confirmation
            pubsub.close()
            raise TimeoutError(f"Redis did not confirm the subscription to {self._channel}")
        self._listener = pubsub.run_in_thread(sleep_time=1.0, daemon=True)

    async def aclose(self) -> None:
        """Close the asyncio client's connections and the appends' own (on the event
        loop that used them)."""
        if self._line is not None:
            self._line.close()
        if self._async_client is not None:
            await self._async_client.aclose()

    def close(self) -> None:
        """Stop the listener thread, if :meth:`subscribe` started one."""
        if self._listener is not None:
            self._listener.stop()
            self._listener = None


# Named by the face that exports it, sse_sansio.durable (which loads this module on
# first use): pickles and tracebacks show the public path.
publish(globals(), ["RedisStore"], "sse_sansio.durable")
