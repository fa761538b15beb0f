"""Issue 34, items 3 and 4 on Redis: a batch append in one round trip, and appends that
never duplicate: a retry of an append (redis-py sends a command again when its reply is
late) stores the events once, even after Redis was paused with SIGSTOP for 7 seconds
under redis-py's default client (5 s socket timeout, retries on).
"""

from __future__ import annotations

import asyncio
import shutil
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator

import pytest
import redis
import redis.asyncio

from sse_sansio import AsyncReplayWindow, Event, ReplayWindow, Resume, StreamCut
from sse_sansio.stores import AsyncRedisStreamStore, RedisStreamStore
from sse_sansio.stores._redis import APPEND_SCRIPT, DEDUP_WINDOW
from tests.helpers.redis_server import RedisServer, free_port, real_redis_required, redis_servers

pytestmark = pytest.mark.slow  # a live redis-server


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    yield from redis_servers()


@pytest.fixture(scope="module")
def client(redis_server: RedisServer) -> Iterator[redis.Redis]:
    with redis_server.client() as client:
        yield client


def new_key() -> str:
    return f"appends:{uuid.uuid4().hex}"


def datas(resume: Resume) -> list[str]:
    return [event.data for event in resume.events]


def test_append_many_keeps_a_batch_in_order_and_numbers_it_without_a_hole(
    client: redis.Redis,
) -> None:
    store = RedisStreamStore(client, new_key(), max_events=100)
    window = ReplayWindow(store=store)
    first = window.append(Event(data="a"))
    token, last = store.append_many(Event(data=str(n), retry=n or None) for n in range(5))
    assert (token, last) == (window.token, 6)
    resume = window.resume(first.id)
    assert datas(resume) == [str(n) for n in range(5)]
    assert [e.retry for e in resume.events] == [None, 1, 2, 3, 4]
    assert [e.id for e in resume.events] == [f"{token}-{n}" for n in range(2, 7)]
    assert store.append_many([]) == (token, 6)  # nothing kept: the newest number
    store.delete()


def test_append_many_on_an_empty_stream_makes_its_token(client: redis.Redis) -> None:
    for approximate in (False, True):
        store = RedisStreamStore(client, new_key(), max_events=3, approximate=approximate)
        token, last = store.append_many([])
        assert last == 0
        assert store.append_many([Event(data="x")] * 5) == (token, 5)
        snapshot = store.read(None)
        if approximate:  # MAXLEN ~ 3: at least the newest 3, maybe more
            assert snapshot.first <= 3
        else:
            assert snapshot.first == 3
        store.delete()


def test_the_async_store_appends_a_batch_too(redis_server: RedisServer) -> None:
    async def main() -> None:
        async with redis.asyncio.Redis(host="127.0.0.1", port=redis_server.port) as aclient:
            store = AsyncRedisStreamStore(aclient, new_key(), max_events=10)
            window = AsyncReplayWindow(store)
            primer = await window.priming(from_start=True)
            token, empty = await store.append_many([])
            assert empty == 0
            assert await store.append_many([Event(data="a"), Event(data="b")]) == (token, 2)
            one = await window.append(Event(data="c"))
            assert datas(await window.resume(primer.id)) == ["a", "b", "c"]
            assert one.id == f"{token}-3"
            await store.delete()

    asyncio.run(main())


def test_a_retried_append_is_stored_once(client: redis.Redis) -> None:
    # What redis-py does when a reply is late: the very same EVALSHA again.  In between,
    # other producers may append up to DEDUP_WINDOW - 1 entries.
    key = new_key()
    store = RedisStreamStore(client, key, max_events=1000)
    script = client.register_script(APPEND_SCRIPT)
    args = ["tok", "1000", "=", "the-key", "message", "once", "", "-"]  # "-": no channel
    old, first_id = script(keys=[key, f"{key}:token"], args=args)
    store.append_many([Event(data="other")] * (DEDUP_WINDOW - 1))
    old, retried_id = script(keys=[key, f"{key}:token"], args=args)
    assert (old, retried_id) == (b"tok", first_id)  # recognised: nothing added
    snapshot = store.read(0)
    assert [e.data for _, e in snapshot.events].count("once") == 1
    assert snapshot.last == DEDUP_WINDOW
    store.delete()


def test_an_append_with_a_new_key_is_a_new_append(client: redis.Redis) -> None:
    store = RedisStreamStore(client, new_key(), max_events=10)
    window = ReplayWindow(store=store)
    a = window.append(Event(data="same"))
    b = window.append(Event(data="same"))
    assert (a.id, b.id) == (f"{window.token}-1", f"{window.token}-2")
    store.delete()


# -- the pause: a real redis-server of this test's own, stopped with SIGSTOP ----------

PAUSE = 7.0  # seconds: longer than redis-py's default 5 s socket timeout


@pytest.fixture
def pausable_server() -> Iterator[tuple[int, subprocess.Popen[bytes]]]:
    binary = shutil.which("redis-server")
    if binary is None:
        if real_redis_required():
            pytest.fail("redis-server is not on PATH (CI=true or SSE_SANSIO_REQUIRE_REDIS=1)")
        pytest.skip("pausing a server needs a real redis-server process (fakeredis has none)")
    port = free_port()
    process = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        with redis.Redis(host="127.0.0.1", port=port, retry_on_error=[redis.ConnectionError]) as c:
            c.ping()  # the default retries wait for it to listen
        yield port, process
    finally:
        process.send_signal(signal.SIGCONT)
        process.terminate()
        process.wait(timeout=10)


def evalsha_calls(client: redis.Redis) -> int:
    stats = client.info("commandstats")
    return int(stats.get("cmdstat_evalsha", {}).get("calls", 0))


def test_a_pause_during_an_append_stores_each_event_once(
    pausable_server: tuple[int, subprocess.Popen[bytes]],
) -> None:
    port, process = pausable_server
    key = new_key()
    producer = redis.Redis(host="127.0.0.1", port=port)  # redis-py's defaults, on purpose
    window = ReplayWindow(store=RedisStreamStore(producer, key, max_events=100))
    primer = window.priming(from_start=True)
    sent = [window.append(Event(data=str(n))) for n in range(5)]
    calls_before = evalsha_calls(producer)

    process.send_signal(signal.SIGSTOP)
    resume = threading.Timer(PAUSE, process.send_signal, (signal.SIGCONT,))
    resume.start()
    started = time.monotonic()
    sent.append(window.append(Event(data="5")))  # times out, is retried, is stored once
    paused_for = time.monotonic() - started
    resume.join()
    sent += [window.append(Event(data=str(n))) for n in range(6, 10)]

    assert paused_for > 5.0  # the append really waited out redis-py's socket timeout
    # A retry reached the server: more EVALSHAs ran than appends were made.
    assert evalsha_calls(producer) - calls_before > 5
    assert [e.id for e in sent] == [f"{window.token}-{n}" for n in range(1, 11)]

    async def async_reader() -> Resume:
        async with redis.asyncio.Redis(host="127.0.0.1", port=port) as aclient:
            store = AsyncRedisStreamStore(aclient, key, max_events=100)
            return await AsyncReplayWindow(store).resume(primer.id)

    readers = []
    for _ in range(3):  # every resuming client, each with a client of its own
        with redis.Redis(host="127.0.0.1", port=port) as reader:
            readers.append(ReplayWindow(store=RedisStreamStore(reader, key, max_events=100)))
            assert readers[-1].resume(primer.id) == Resume("continue", tuple(sent))
    assert asyncio.run(async_reader()) == Resume("continue", tuple(sent))
    assert datas(readers[0].resume(sent[4].id)) == ["5", "6", "7", "8", "9"]
    producer.close()


def test_follow_yields_what_is_kept_then_each_new_event_with_its_id(
    redis_server: RedisServer,
) -> None:
    async def main() -> None:
        async with redis.asyncio.Redis(host="127.0.0.1", port=redis_server.port) as aclient:
            store = AsyncRedisStreamStore(aclient, new_key(), max_events=3)
            window = AsyncReplayWindow(store)
            early = [await window.append(Event(data=str(n))) for n in range(5)]
            got: list[Event] = []
            follower = store.follow(count=2, block=0.05)
            async for event in follower:
                got.append(event)
                if len(got) == 3:  # what MAXLEN kept: 3, 4 and 5
                    late = await window.append(Event(data="late", retry=7))
                if len(got) == 4:
                    break
            await follower.aclose()
            assert got == [*early[2:], late]
            # From a number on, and across empty blocks (nothing new for a while).
            tail = store.follow(after=6, block=0.01)
            waiting = asyncio.ensure_future(anext(tail))
            await asyncio.sleep(0.05)
            assert not waiting.done()
            assert await window.append(Event(data="later")) == await waiting
            # Once the producer finished and everything was yielded, the tail ends.
            await window.close(cut=True)
            assert [e async for e in tail] == []
            assert (await store.read(None)).cut
            await tail.aclose()
            rest = [e.data async for e in store.follow(after=5, block=0.01)]
            assert rest == ["late", "later"]  # a late follower gets the rest, then ends
            await store.delete()

    asyncio.run(main())


# -- a follower whose stream is replaced under it (issue 41, item 6) --------------------


async def next_or_cut(follower: AsyncIterator[Event]) -> Event | StreamCut:
    """The follower's next event, or the StreamCut it raised; never waits past 10 s."""
    try:
        return await asyncio.wait_for(anext(follower), timeout=10.0)
    except StreamCut as cut:
        return cut


def test_a_follower_is_cut_when_its_stream_goes_back_or_loses_its_token(
    redis_server: RedisServer,
) -> None:
    async def main() -> None:
        async with redis.asyncio.Redis(host="127.0.0.1", port=redis_server.port) as aclient:
            key = new_key()
            store = AsyncRedisStreamStore(aclient, key, max_events=100)
            token, _ = await store.append_many([Event(data=f"old {n}") for n in range(41)])
            follower = store.follow(block=0.05)
            seen = [await anext(follower) for _ in range(41)]
            assert seen[-1].id == f"{token}-41"
            # A failover to a replica that lags: the same token, 30 entries of the 41.
            await aclient.delete(key)
            for n in range(1, 31):
                fields = {"type": "message", "data": f"old {n - 1}", "retry": ""}
                await aclient.xadd(key, fields, id=f"0-{n}")  # type: ignore[arg-type]
            cut = await next_or_cut(follower)
            assert isinstance(cut, StreamCut)
            assert "went back to event 30 after 41" in str(cut)
            # The keys deleted while a follower waits: its next check finds no token.
            waiting = store.follow(after=30, block=0.05)
            pending = asyncio.ensure_future(next_or_cut(waiting))
            await asyncio.sleep(0.2)
            assert not pending.done()  # nothing after 30 yet: it waits
            await store.delete()
            cut = await pending
            assert isinstance(cut, StreamCut)
            assert "no token" in str(cut)

    asyncio.run(main())


def start_redis(binary: str, port: int) -> subprocess.Popen[bytes]:
    """A redis-server that keeps nothing on disk: a restart starts it empty."""
    process = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    with redis.Redis(host="127.0.0.1", port=port, retry_on_error=[redis.ConnectionError]) as c:
        c.ping()  # the default retries wait for it to listen
    return process


def test_a_follower_across_a_restart_without_persistence_is_cut_and_follows_anew() -> None:
    # The review's figures: 41 events followed, Redis restarted empty, 150 appended.
    binary = shutil.which("redis-server")
    if binary is None:
        if real_redis_required():
            pytest.fail("redis-server is not on PATH (CI=true or SSE_SANSIO_REQUIRE_REDIS=1)")
        pytest.skip("restarting a server needs a real redis-server process (fakeredis has none)")
    port = free_port()
    processes = [start_redis(binary, port)]

    async def main() -> None:
        key = new_key()
        # redis-py's defaults, on purpose: it reconnects and retries by itself, unseen.
        async with redis.asyncio.Redis(host="127.0.0.1", port=port) as aclient:
            store = AsyncRedisStreamStore(aclient, key, max_events=1000)
            with redis.Redis(host="127.0.0.1", port=port) as producer:
                shared = RedisStreamStore(producer, key, max_events=1000)
                old, _ = shared.append_many([Event(data=f"old {n}") for n in range(41)])
                follower = store.follow(block=0.2)
                assert [(await anext(follower)).id for _ in range(41)][-1] == f"{old}-41"
                processes[0].terminate()
                processes[0].wait(timeout=10)
                processes[0] = start_redis(binary, port)  # empty: a new stream, a new token
                new, _ = shared.append_many([Event(data=f"new {n}") for n in range(150)])
                assert new != old
                got = await next_or_cut(follower)  # reconnects by itself, unseen
                assert isinstance(got, StreamCut), got  # not "new 41" under the old token
                assert f"the token {new}, not {old}" in str(got)
                # Followed anew: every event of the new stream, under its own token.
                shared.finish()
                again = [event async for event in store.follow(block=0.05)]
        assert [e.data for e in again] == [f"new {n}" for n in range(150)]
        assert [e.id for e in again] == [f"{new}-{n}" for n in range(1, 151)]

    try:
        asyncio.run(main())
    finally:
        processes[0].terminate()
        processes[0].wait(timeout=10)
