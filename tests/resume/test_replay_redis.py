"""The Redis stores: the same verdicts as the in-memory window, over a Redis stream.

Redis: one server for the module (tests/helpers/redis_server.py: a real ``redis-server``, which
CI requires; fakeredis's TCP server only where none is installed and nothing requires
one).  Every test and every Hypothesis example uses keys of its own.
"""

from __future__ import annotations

import asyncio
import itertools
import shutil
import uuid
import warnings
from collections.abc import Iterator
from typing import Any

import pytest
import redis
import redis.asyncio
from hypothesis import given, settings
from hypothesis import strategies as st

from sse_sansio import (
    AsyncReplayStore,
    AsyncReplayWindow,
    Comment,
    Event,
    LocalProtocolError,
    ReplayStore,
    ReplayWindow,
    Resume,
)
from sse_sansio.stores import AsyncRedisStreamStore, RedisStreamStore
from tests.helpers.redis_server import RedisServer, real_redis_required, redis_servers
from tests.helpers.replay_model import Played, expected, number_of, operations, play

pytestmark = pytest.mark.slow  # a live redis-server

_keys = itertools.count()
# fakeredis's TCP server (the fallback, see tests/helpers/redis_server.py) answers a round trip
# some hundred times slower than redis-server: fewer examples there.
REDIS_EXAMPLES = 50 if shutil.which("redis-server") else 10


def new_key() -> str:
    return f"test:{uuid.uuid4().hex[:8]}:{next(_keys)}"


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    yield from redis_servers()


@pytest.fixture(scope="module")
def client(redis_server: RedisServer) -> Iterator[redis.Redis]:
    with redis_server.client() as client:
        yield client


def window(client: redis.Redis, max_events: int = 1000, **options: Any) -> ReplayWindow:
    return ReplayWindow(store=RedisStreamStore(client, new_key(), max_events=max_events, **options))


def test_the_stores_keep_the_store_protocols(client: redis.Redis) -> None:
    # Checked by mypy: each store is accepted where its protocol is asked for.
    store: ReplayStore = RedisStreamStore(client, new_key(), max_events=1)
    async_store: AsyncReplayStore = AsyncRedisStreamStore(
        redis.asyncio.Redis(), new_key(), max_events=1
    )
    assert ReplayWindow(store=store).store is store
    assert AsyncReplayWindow(async_store).store is async_store


def test_the_server_is_real_where_ci_requires_it(redis_server: RedisServer) -> None:
    if real_redis_required():
        assert redis_server.kind == "redis-server"
    if redis_server.kind == "redis-server":  # the stores need 7.0 or later (XADD 0-*)
        with redis_server.client() as client:
            info = client.info("server")
            assert int(str(info["redis_version"]).split(".")[0]) >= 7


def normalized(played: Played) -> list[tuple[str, list[tuple[str, str, int | None, int]]]]:
    """The resumes' answers with each event's ID reduced to its number."""
    return [
        (r.verdict, [(e.type, e.data, e.retry, number_of(e.id)) for e in r.events])
        for *_, r in played.resumes
    ]


@settings(max_examples=REDIS_EXAMPLES)
@given(operations, st.integers(1, 4))
def test_redis_and_memory_agree_with_the_model(
    client: redis.Redis, ops: list[tuple[str, Any]], max_events: int
) -> None:
    in_redis, other = window(client, max_events), window(client, max_events)
    try:
        from_redis = play(in_redis, other, ops)
        got = [(r.verdict, list(r.events)) for *_, r in from_redis.resumes]
        assert got == expected(from_redis, max_events, None)
        in_memory = play(ReplayWindow(max_events=max_events), ReplayWindow(), ops)
        assert normalized(from_redis) == normalized(in_memory)
    finally:
        for store in (in_redis.store, other.store):
            assert isinstance(store, RedisStreamStore)
            store.delete()


def test_append_resume_gap_and_unknown(client: redis.Redis) -> None:
    w = window(client, max_events=2)
    primer = w.priming(retry=500)  # before any event: the token is made by the read
    assert (primer.data, primer.retry) == ("", 500)
    assert w.resume(primer.id) == Resume("continue")
    sent = [w.append(Event(type="delta", data=f"é{n}", retry=n or None)) for n in range(3)]
    assert [number_of(e.id) for e in sent] == [1, 2, 3]
    assert {e.id.rsplit("-", 1)[0] for e in sent} == {primer.id.rsplit("-", 1)[0]}
    assert w.resume(sent[0].id) == Resume("continue", tuple(sent[1:]))
    assert w.resume(primer.id) == Resume("gap", tuple(sent[1:]))
    assert w.resume(sent[2].id) == Resume("continue")
    assert w.priming().id == sent[2].id
    assert w.resume(primer.id[:-1] + "4") == Resume("unknown")  # not issued yet


def test_ids_of_another_key_are_unknown(client: redis.Redis) -> None:
    mine, theirs = window(client), window(client)
    theirs_sent = theirs.append(Event(data="secret"))
    mine.append(Event(data="mine"))
    assert number_of(theirs_sent.id) == 1
    assert mine.resume(theirs_sent.id) == Resume("unknown")


def test_a_deleted_stream_starts_again_with_a_new_token(client: redis.Redis) -> None:
    store = RedisStreamStore(client, new_key(), max_events=5)
    w = ReplayWindow(store=store)
    old = w.append(Event(data="a"))
    assert client.exists(*store.keys) == 2
    store.delete()
    assert client.exists(*store.keys) == 0
    new = w.append(Event(data="b"))
    assert number_of(new.id) == 1
    assert new.id != old.id
    assert w.resume(old.id) == Resume("unknown")


def test_a_client_that_decodes_responses_gives_the_same_answers(
    redis_server: RedisServer,
) -> None:
    with redis.Redis(port=redis_server.port, decode_responses=True) as decoding:
        # redis-py's handshake compares a bytes reply with a str when responses are
        # decoded, which ``python -bb`` (as CI runs the suite) makes an error: connect
        # once with BytesWarning ignored; the commands after it reuse the connection.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", BytesWarning)
            assert decoding.ping()
        w = window(decoding, max_events=3)
        sent = [w.append(Event(data=str(n), retry=7)) for n in range(2)]
        assert w.resume(w.priming(from_start=True).id) == Resume("continue", tuple(sent))


def test_approximate_trimming_keeps_the_verdicts_true(client: redis.Redis) -> None:
    store = RedisStreamStore(client, new_key(), max_events=3, approximate=True)
    w = ReplayWindow(store=store)
    start = w.priming().id
    sent = [w.append(Event(data=str(n))) for n in range(20)]
    kept = client.xlen(store.keys[0])
    assert kept >= 3  # MAXLEN ~ keeps at least max_events, maybe more
    resume = w.resume(start)
    assert resume.events == tuple(sent[-kept:])
    assert resume.verdict == ("continue" if kept == 20 else "gap")


@pytest.mark.parametrize(
    ("key", "max_events", "message"),
    [
        ("", 1, "key must be a non-empty str"),
        (b"k", 1, "key must be a non-empty str"),
        ("k", 0, "max_events must be a positive int"),
        ("k", True, "max_events must be a positive int"),
        ("k", None, "max_events must be a positive int"),
    ],
)
def test_bad_store_options(client: redis.Redis, key: Any, max_events: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RedisStreamStore(client, key, max_events=max_events)
    with pytest.raises(ValueError, match=message):
        AsyncRedisStreamStore(redis.asyncio.Redis(), key, max_events=max_events)


def test_the_asyncio_store_resumes_and_waits_for_new_events(redis_server: RedisServer) -> None:
    async def run() -> None:
        aclient = redis.asyncio.Redis(port=redis_server.port)
        try:
            store = AsyncRedisStreamStore(aclient, new_key(), max_events=2)
            w = AsyncReplayWindow(store)
            primer = await w.priming(from_start=True)
            first = await w.append(Event(data="a"))
            assert await w.resume(primer.id) == Resume("continue", (first,))
            # Nothing new: a short wait on XREAD BLOCK, then the same answer.
            assert await w.resume(first.id, wait=0.01) == Resume("continue")

            async def later() -> Event:
                await asyncio.sleep(0.05)
                return await w.append(Event(data="b"))

            appending = asyncio.ensure_future(later())
            # Waits (at most 10 s) until the other task appends.
            resumed = await w.resume(first.id, wait=10)
            assert resumed == Resume("continue", (await appending,))
            await w.append(Event(data="c"))
            gap = await w.resume(primer.id, wait=10)  # a gap does not wait
            assert gap.verdict == "gap"
            assert await w.resume("nope", wait=10) == Resume("unknown")
            with pytest.raises(LocalProtocolError, match="takes an Event, not Comment"):
                await w.append(Comment(text="x"))  # type: ignore[arg-type]
            await store.delete()
            assert await aclient.exists(*store.keys) == 0
        finally:
            await aclient.aclose()

    asyncio.run(asyncio.wait_for(run(), 30))
