"""The storage contract of sse_sansio.durable (issue 44, item 2): every store, the same
answers.

The memory store and the Redis store (on a real ``redis-server`` from
tests/helpers/redis_server.py; fakeredis only where none is installed and nothing
requires one) are held to one table of behaviour; a third engine's store would be added
to ``STORES``.  Then the protocol core runs over Redis, and a second store object (a
second process's view) sees the same streams, offsets and closure.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import uuid
from collections.abc import Callable, Iterator

import pytest

from sse_sansio.durable import (
    AppendPlan,
    DurableStreams,
    MemoryStore,
    Request,
    Response,
    Store,
    StreamMeta,
    decide_append,
)
from tests.helpers.redis_server import RedisServer, redis_servers

NOW = 1_800_000_000.0
_paths = itertools.count()


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    yield from redis_servers()


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.slow)])
def make_store(request: pytest.FixtureRequest) -> Callable[[], Store]:
    """A factory of views of one store (for Redis: each call is a new client)."""
    if request.param == "memory":
        store = MemoryStore()
        return lambda: store
    from sse_sansio.durable import RedisStore

    server: RedisServer = request.getfixturevalue("redis_server")
    prefix = f"t{uuid.uuid4().hex[:8]}:"
    return lambda: RedisStore(server.client(), prefix=prefix)


def meta(path: str, *, json: bool = False, **fields: object) -> StreamMeta:
    ctype = "application/json" if json else "text/plain"
    return StreamMeta(path=path, sid="s1", content_type=ctype, json=json, **fields)  # type: ignore[arg-type]


def plan(*units: bytes, json: bool = False, **fields: object) -> AppendPlan:
    values: dict[str, object] = {
        "units": list(units),
        "size": len(units) if json else sum(len(unit) for unit in units),
        "media_type": "application/json" if json else "text/plain",
        "close": False,
        "stream_seq": None,
        "producer": None,
        "now": NOW,
    }
    values.update(fields)
    return AppendPlan(**values)  # type: ignore[arg-type]


def path() -> str:
    return f"/v1/stream/c{next(_paths)}"


def test_create_meta_and_read(make_store: Callable[[], Store]) -> None:
    store = make_store()
    p = path()
    assert store.meta(p) is None
    assert store.create(meta(p, ttl=5, deadline=NOW + 5, config="c"), [b"hello"]) is None
    got = store.meta(p)
    assert got is not None
    assert (got.tail, got.ttl, got.deadline, got.closed, got.config) == (5, 5, NOW + 5, False, "c")
    assert store.read(p, 1, 5, 100) == [b"ello"]
    assert store.read(p, 0, 5, 2) == [b"he"]
    existing = store.create(meta(p, config="other"), [b"x"])
    assert existing is not None
    assert existing.config == "c"
    assert store.read(p, 0, 5, 100) == [b"hello"]


def test_json_units_and_boundaries(make_store: Callable[[], Store]) -> None:
    store = make_store()
    p = path()
    store.create(meta(p, json=True), [b"1", b"22", b"333"])
    assert store.append(p, plan(b"4", b"5", json=True)).tail == 5
    assert store.read(p, 1, 5, 100) == [b"22", b"333", b"4", b"5"]
    assert store.read(p, 0, 5, 3) == [b"1", b"22"]  # whole units within the bound
    assert store.read(p, 2, 5, 1) == [b"333"]  # at least one unit
    assert [store.boundary(p, position) for position in range(6)] == [3, 3, 3, 5, 5, 5]


def test_appends_follow_the_decision_table(make_store: Callable[[], Store]) -> None:
    store = make_store()
    p = path()
    assert store.append(p, plan(b"x")).verdict == "missing"
    store.create(meta(p), [])
    assert store.append(p, plan(b"ab", stream_seq="b")).verdict == "appended"
    assert store.append(p, plan(b"c", stream_seq="a")).verdict == "stream-seq"
    assert store.append(p, plan(b"c", media_type="a/b")).verdict == "content-type"
    first = store.append(p, plan(b"c", producer=("p", 0, 0)))
    assert (first.verdict, first.tail, first.epoch, first.seq) == ("appended", 3, 0, 0)
    assert store.append(p, plan(b"c", producer=("p", 0, 0))).verdict == "duplicate"
    gap = store.append(p, plan(b"c", producer=("p", 0, 4)))
    assert (gap.verdict, gap.seq) == ("seq-gap", 1)
    assert store.append(p, plan(b"c", producer=("p", 1, 1))).verdict == "epoch-seq"
    assert store.append(p, plan(b"c", producer=("q", 0, 1))).verdict == "epoch-seq"
    assert store.append(p, plan(b"d", producer=("p", 1, 0))).verdict == "appended"
    stale = store.append(p, plan(b"c", producer=("p", 0, 1)))
    assert (stale.verdict, stale.epoch) == ("stale-epoch", 1)
    closing = store.append(p, plan(b"e", close=True, producer=("p", 1, 1)))
    assert (closing.verdict, closing.closed, closing.tail) == ("appended", True, 5)
    retry = store.append(p, plan(b"e", close=True, producer=("p", 1, 1)))
    assert (retry.verdict, retry.closed) == ("duplicate", True)
    assert store.append(p, plan(close=True)).verdict == "closed-again"
    assert store.append(p, plan(b"f")).verdict == "closed"
    assert store.read(p, 0, 5, 100) == [b"abcde"]
    got = store.meta(p)
    assert got is not None
    assert (got.closed, got.closed_by, got.producers) == (True, ("p", 1, 1), {"p": (1, 1)})
    assert got.stream_seq == "b"


def test_forks_soft_delete_and_cascade(make_store: Callable[[], Store]) -> None:
    store = make_store()
    a, b, c = path(), path(), path()
    store.create(meta(a), [b"1234"])
    store.create(meta(b, fork_source=a, fork_position=2), [])
    store.create(meta(c, fork_source=b, fork_position=3), [])
    got_b = store.meta(b)
    assert got_b is not None
    assert (got_b.tail, got_b.fork_source) == (2, a)
    store.append(b, plan(b"xy"))
    assert store.read(b, 2, 4, 100) == [b"xy"]
    assert store.boundary(b, 2) == 4
    assert store.delete(a) == "soft"
    assert store.delete(a) == "gone"
    assert store.delete(b) == "soft"
    assert store.delete(c) == "deleted"
    assert (store.meta(a), store.meta(b), store.meta(c)) == (None, None, None)
    assert store.delete(c) == "missing"
    assert store.append(a, plan(b"x")).verdict == "missing"


def test_a_fork_of_a_live_source_releases_only_itself(make_store: Callable[[], Store]) -> None:
    store = make_store()
    a, b, c = path(), path(), path()
    store.create(meta(a), [b"1"])
    store.create(meta(b, fork_source=a, fork_position=1), [])
    store.create(meta(c, fork_source=a, fork_position=1), [])
    assert store.delete(b) == "deleted"
    got = store.meta(a)
    assert got is not None
    assert (got.refcount, got.soft_deleted) == (1, False)
    assert store.delete(a) == "soft"
    assert store.append(a, plan(b"x")).verdict == "gone"
    assert store.delete(c) == "deleted"
    assert store.meta(a) is None


def test_touch_moves_the_deadline(make_store: Callable[[], Store]) -> None:
    store = make_store()
    p = path()
    store.touch(p, NOW)  # no stream: nothing happens, nothing is made
    assert store.meta(p) is None
    store.create(meta(p, ttl=10, deadline=NOW + 10), [])
    store.touch(p, NOW + 30)
    got = store.meta(p)
    assert got is not None
    assert got.deadline == NOW + 30
    store.touch(p, None)
    got = store.meta(p)
    assert got is not None
    assert got.deadline is None


def test_appends_slide_the_ttl_and_find_expiry(make_store: Callable[[], Store]) -> None:
    """Section 5.1 in the append's own step: every verdict of a live stream moves a
    sliding TTL on; at or past the deadline the append is "expired" and changes nothing."""
    store = make_store()
    p = path()
    store.create(meta(p, ttl=10, deadline=NOW + 10), [])
    assert store.append(p, plan(b"ab", now=NOW + 4)).verdict == "appended"
    assert deadline(store, p) == NOW + 14
    assert store.append(p, plan(b"c", media_type="a/b", now=NOW + 6)).verdict == "content-type"
    assert deadline(store, p) == NOW + 16
    assert store.append(p, plan(b"d", now=NOW + 16)).verdict == "expired"
    got = store.meta(p)
    assert got is not None
    assert (got.tail, got.deadline) == (2, NOW + 16)
    assert store.read(p, 0, 2, 100) == [b"ab"]
    fixed = path()  # Stream-Expires-At: a deadline that no append moves
    store.create(meta(fixed, expires_at="x", deadline=NOW + 10), [])
    assert store.append(fixed, plan(b"a", now=NOW + 9)).verdict == "appended"
    assert deadline(store, fixed) == NOW + 10
    assert store.append(fixed, plan(b"b", now=NOW + 10)).verdict == "expired"


def test_a_deleted_stream_is_gone_before_expired(make_store: Callable[[], Store]) -> None:
    store = make_store()
    source, child = path(), path()
    store.create(meta(source, ttl=10, deadline=NOW + 10), [b"x"])
    store.create(meta(child, fork_source=source, fork_position=1), [])
    assert store.delete(source) == "soft"
    assert store.append(source, plan(b"y", now=NOW + 20)).verdict == "gone"
    assert store.append(source, plan(b"y", now=NOW + 5)).verdict == "gone"
    assert deadline(store, source) == NOW + 10  # not moved


def deadline(store: Store, p: str) -> float | None:
    got = store.meta(p)
    assert got is not None
    return got.deadline


def test_media_types_are_remembered_within_a_bound() -> None:
    from sse_sansio.durable import _store

    for n in range(300):
        assert _store.media_type(f" Text/X-{n} ; charset=utf-8") == f"text/x-{n}"
    assert _store.media_type(" Text/X-299 ; charset=utf-8") == "text/x-299"
    assert len(_store.MEDIA_TYPES) <= 256


def test_the_protocol_s_largest_numbers_are_exact(make_store: Callable[[], Store]) -> None:
    """Epochs and seqs up to 2^53 - 1 (section 5.2.1), and positions past 2^50, come
    back as they went (Redis's Lua counts in doubles)."""
    store = make_store()
    p = path()
    top = 2**53 - 1
    store.create(meta(p, fork_position=10**15 + 1), [])
    first = store.append(p, plan(b"ab", producer=("p", top, 0)))
    assert (first.verdict, first.tail, first.epoch, first.seq) == ("appended", 10**15 + 3, top, 0)
    store.append(p, plan(b"c", producer=("q", 0, 0)))
    again = store.append(p, plan(b"c", producer=("q", 0, top)))
    assert (again.verdict, again.seq) == ("seq-gap", 1)
    retry = store.append(p, plan(b"ab", producer=("p", top, 0)))
    assert (retry.verdict, retry.epoch, retry.seq, retry.tail) == ("duplicate", top, 0, 10**15 + 4)


def test_decide_append_alone() -> None:
    assert decide_append(None, plan(b"x")).verdict == "missing"
    assert decide_append(meta("/p", soft_deleted=True), plan(b"x")).verdict == "gone"


def test_concurrent_producers_never_duplicate(make_store: Callable[[], Store]) -> None:
    """Two writers retry the same producer batches at once: each lands once."""
    p = path()
    make_store().create(meta(p), [])
    barrier = threading.Barrier(2)

    def write() -> None:
        store = make_store()
        barrier.wait()
        for seq in range(50):
            store.append(p, plan(b"%03d" % seq, producer=("w", 0, seq)))

    threads = [threading.Thread(target=write) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    expected = b"".join(b"%03d" % seq for seq in range(50))
    assert make_store().read(p, 0, len(expected), 1 << 20) == [expected]


def test_the_protocol_over_two_views_of_one_store(make_store: Callable[[], Store]) -> None:
    """A second process serving the same store sees the same streams, offsets, closure."""
    first, second = DurableStreams(make_store()), DurableStreams(make_store())
    p = path()

    def call(ds: DurableStreams, method: str, body: bytes = b"", **headers: str) -> Response:
        answer = ds.handle(Request(method, p, list(headers.items()), "", body), NOW)
        assert isinstance(answer, Response)
        return answer

    assert call(first, "PUT", b"[1,2]", **{"Content-Type": "application/json"}).status == 201
    appended = call(second, "POST", b"[3]", **{"Content-Type": "application/json"})
    assert appended.status == 204
    read = call(first, "GET")
    assert read.body == b"[1,2,3]"
    assert read.header("stream-next-offset") == appended.header("stream-next-offset")
    call(first, "POST", b"", **{"Stream-Closed": "true"})
    assert call(second, "HEAD").header("stream-closed") == "true"


def test_a_subscription_redis_never_confirms_is_an_error() -> None:
    """subscribe() returns only once Redis confirmed the subscription: a pubsub that
    hears nothing within the bound makes it fail, not return before it is live."""
    from sse_sansio.durable import RedisStore

    class Silent:
        """A pubsub connection whose SUBSCRIBE is never confirmed."""

        def __init__(self) -> None:
            self.closed = False
            self.waited: list[float] = []

        def subscribe(self, **handlers: object) -> None:
            self.handlers = handlers

        def get_message(self, timeout: float) -> None:
            self.waited.append(timeout)

        def close(self) -> None:
            self.closed = True

    silent = Silent()

    class Client:
        def register_script(self, script: str) -> None:
            return None

        def pubsub(self) -> Silent:
            return silent

    store = RedisStore(Client(), prefix="x:")  # type: ignore[arg-type]
    store.subscribe_timeout = 0.25
    with pytest.raises(TimeoutError, match="did not confirm the subscription to x:changed"):
        store.subscribe(lambda changed: None)
    assert (list(silent.handlers), silent.waited, silent.closed) == (["x:changed"], [0.25], True)


@pytest.mark.slow  # a live redis-server
def test_redis_appends_awaited_on_the_loop(redis_server: RedisServer) -> None:
    """append_async is the same step as append: through the asyncio client, or in a
    worker thread for a store made without one."""
    from sse_sansio.durable import RedisStore

    prefix = f"a{uuid.uuid4().hex[:8]}:"
    awaited = RedisStore.from_url(redis_server.url, prefix=prefix)
    threaded = RedisStore(redis_server.client(), prefix=prefix)
    p = path()
    threaded.create(meta(p), [])

    async def scenario() -> list[tuple[object, ...]]:
        try:
            answers = [
                await awaited.append_async(p, plan(b"ab", producer=("w", 0, 0))),
                await threaded.append_async(p, plan(b"cd", producer=("w", 0, 1))),
                await awaited.append_async(p, plan(b"ab", producer=("w", 0, 0))),
                await awaited.append_async(path(), plan(b"x")),
            ]
        finally:
            await awaited.aclose()
            await threaded.aclose()  # no asyncio client: nothing to close
        return [(a.verdict, a.tail, a.seq) for a in answers]

    assert asyncio.run(scenario()) == [
        ("appended", 2, 0),
        ("appended", 4, 1),
        ("duplicate", 4, 1),
        ("missing", 0, 0),
    ]
    assert threaded.read(p, 0, 4, 100) == [b"abcd"]


@pytest.mark.slow  # a live redis-server
def test_redis_changes_reach_every_subscriber(redis_server: RedisServer) -> None:
    """Another process's append wakes this one's readers: the store's change channel."""
    from sse_sansio.durable import RedisStore

    prefix = f"s{uuid.uuid4().hex[:8]}:"
    listener = RedisStore.from_url(redis_server.url, prefix=prefix)
    writer = RedisStore.from_url(redis_server.url, prefix=prefix)
    heard: list[str] = []
    done = threading.Event()

    def callback(changed: str) -> None:
        heard.append(changed)
        done.set()

    listener.subscribe(callback)
    try:
        p = path()
        for _ in range(100):  # the subscription is live once a change is heard
            writer.create(meta(p), [])
            if done.wait(0.1):
                break
            writer.delete(p)
        assert heard[-1] == p
        done.clear()
        writer.append(p, plan(b"x"))
        assert done.wait(10)
        assert heard[-1] == p
    finally:
        listener.close()
    listener.close()  # twice: nothing left to stop


def test_the_package_names_its_late_members() -> None:
    import sse_sansio.durable as durable

    assert callable(durable.asgi_app)
    with pytest.raises(AttributeError, match="no_such_name"):
        durable.no_such_name  # noqa: B018
