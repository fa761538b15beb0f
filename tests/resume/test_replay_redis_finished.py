"""The producer's end kept in Redis (issue 33): a window over a Redis stream sees
``close()`` made by another process's window, because the end lives with the stream's
token (``key:token`` holds ``<token> ended`` or ``<token> cut``), and the two keys are
still all a stream has.  Redis: see tests/helpers/redis_server.py."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import pytest
import redis
import redis.asyncio

from sse_sansio import AsyncReplayWindow, Event, ReplayWindow, Resume
from sse_sansio.stores import AsyncRedisStreamStore, RedisStreamStore
from tests.helpers.redis_server import RedisServer, redis_servers

pytestmark = [
    pytest.mark.slow,  # a live redis-server
    pytest.mark.filterwarnings(r"ignore::BytesWarning:(redis|fakeredis)(\.|$)"),
]


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    yield from redis_servers()


def test_a_close_in_one_process_is_seen_by_a_window_of_another(redis_server: RedisServer) -> None:
    key = f"test:{uuid.uuid4().hex}"
    with redis_server.client() as one, redis_server.client() as two:
        producer = ReplayWindow(store=RedisStreamStore(one, key, max_events=10))
        reader = ReplayWindow(store=RedisStreamStore(two, key, max_events=10))
        first = producer.append(Event(data="a"))
        second = producer.append(Event(data="b"))
        assert reader.resume(first.id) == Resume("continue", (second,))
        producer.close(cut=True)
        producer.close()  # the first close wins
        assert reader.resume(first.id) == Resume("continue", (second,), finished=True, cut=True)
        # The token is unchanged by the mark: the IDs issued before still match.
        assert reader.resume(second.id).verdict == "continue"
        assert set(RedisStreamStore(two, key, max_events=10).keys) == {key, key + ":token"}
        assert one.exists(key, key + ":token") == 2


def test_a_close_before_any_event_still_makes_a_token(redis_server: RedisServer) -> None:
    key = f"test:{uuid.uuid4().hex}"
    with redis_server.client() as client:
        window = ReplayWindow(store=RedisStreamStore(client, key, max_events=10))
        window.close()
        primer = window.priming(from_start=True)
        assert window.resume(primer.id) == Resume("continue", (), finished=True, cut=False)
        # A window over the same stream that appends after the end still gets numbers
        # under the same token (refusing is the closing window's own guard).
        late = ReplayWindow(store=RedisStreamStore(client, key, max_events=10))
        event = late.append(Event(data="late"))
        assert event.id.split("-")[0] == primer.id.split("-")[0]


def test_the_asyncio_store_keeps_the_end_too(redis_server: RedisServer) -> None:
    async def run() -> None:
        key = f"test:{uuid.uuid4().hex}"
        client = redis.asyncio.Redis(port=redis_server.port)
        try:
            window = AsyncReplayWindow(AsyncRedisStreamStore(client, key, max_events=10))
            event = await window.append(Event(data="a"))
            await window.close()
            # Finished: no XREAD BLOCK wait, the answer comes at once.
            assert await window.resume(event.id, wait=30) == Resume("continue", (), True, False)
        finally:
            await client.aclose()

    asyncio.run(run())
