"""Channels in the Redis log (issue 40, item 7): each entry keeps the channel its event
was published on, so that every process's Hub, fed by ``follow_channels()``, routes
and authorizes it as the publishing process would.  Against a real redis-server (or,
outside CI, the fakeredis fallback: tests/helpers/redis_server.py).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import pytest
import redis
import redis.asyncio

from sse_sansio import Event, Hub, ReplayWindow
from sse_sansio.stores import AsyncRedisStreamStore, MirrorStore, RedisStreamStore
from tests.helpers.redis_server import RedisServer, redis_servers


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    yield from redis_servers()


def new_key() -> str:
    return f"channels-test:{uuid.uuid4().hex}"


def test_follow_channels_gives_each_event_its_channel(redis_server: RedisServer) -> None:
    key = new_key()
    with redis.Redis(host="127.0.0.1", port=redis_server.port) as client:
        store = RedisStreamStore(client, key, max_events=100)
        store.append(Event(data="a"), channel="user/ann")
        store.append(Event(data="plain"))  # the unnamed channel
        store.append_many(
            [Event(data="b"), Event(data="c", retry=10), Event(data="d")],
            channels=["scores/1", None, ""],  # an empty name is still a name
        )
        store.finish()

    async def follow() -> list[tuple[str, str | None, int | None]]:
        async with redis.asyncio.Redis(host="127.0.0.1", port=redis_server.port) as aclient:
            astore = AsyncRedisStreamStore(aclient, key, max_events=100)
            await astore.append(Event(data="e"), channel="user/bob")
            got = []
            async for event, channel in astore.follow_channels(block=0.05):
                got.append((event.data, channel, event.retry))
            plain = [e.data async for e in astore.follow(block=0.05)]
            assert plain == [data for data, _, _ in got]
            await astore.delete()
            return got

    assert asyncio.run(follow()) == [
        ("a", "user/ann", None),
        ("plain", None, None),
        ("b", "scores/1", None),
        ("c", None, 10),
        ("d", "", None),
        ("e", "user/bob", None),
    ]


def test_channels_must_match_the_events(redis_server: RedisServer) -> None:
    with redis.Redis(host="127.0.0.1", port=redis_server.port) as client:
        store = RedisStreamStore(client, new_key(), max_events=10)
        with pytest.raises(ValueError, match="2 events but 1 channels"):
            store.append_many([Event(data="a"), Event(data="b")], channels=["x"])
        with pytest.raises(TypeError, match="a channel must be a str or None"):
            store.append(Event(data="a"), channel=7)  # type: ignore[arg-type]
        assert store.read(None).last == 0  # nothing was appended


def test_a_hub_fed_from_the_log_routes_by_the_stored_channel(redis_server: RedisServer) -> None:
    key = new_key()

    async def main() -> list[str]:
        async with redis.asyncio.Redis(host="127.0.0.1", port=redis_server.port) as aclient:
            store = AsyncRedisStreamStore(aclient, key, max_events=100)
            token = (await store.read(None)).token
            mirror = MirrorStore(token, max_events=100)
            hub = Hub(max_buffer=10_000, window=ReplayWindow(store=mirror), now=0.0)
            reader = hub.subscribe(0.0, channels=["user/ann"])
            for data, name in [("1", "user/ann"), ("2", "user/bob"), ("3", "user/ann")]:
                await store.append(Event(data=data), channel=name)
            await store.finish()
            async for event, channel in store.follow_channels(block=0.05):
                hub.publish(event, 1.0, channel=channel)
            frames = reader.data_to_send(2.0).decode()
            await store.delete()
            return [line[6:] for line in frames.splitlines() if line.startswith("data: ")]

    assert asyncio.run(main()) == ["1", "3"]
