"""DurableStreams.append, the in-process producer's append (issue 44, item 8): a POST's
rules without a request or a response.

The reference is the POST path itself, over a memory store without its shortcut
(``append_bytes``: every append a plan judged by ``decide_append``): Hypothesis drives
one set of streams by POST requests (:meth:`DurableStreams.handle`) and a twin, over a
whole memory store, by :meth:`DurableStreams.append` with the same steps on the same
clock, and each step must give the same answer (the tail the POST's
``Stream-Next-Offset`` names, or the same status), the same wake-ups (the stores'
subscribers), and at the end the same bytes, tail and closure.  A third twin takes the
same POSTs over a whole memory store: handle()'s shortcut must answer them alike.  The
expectations of the other tests are read from PROTOCOL.md (sections named), as in
test_durable_protocol.py.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sse_sansio.durable import (
    AppendRefused,
    DurableStreams,
    MemoryStore,
    Request,
    Response,
    asgi_app,
    decode_offset,
    encode_offset,
)
from tests.durable.test_durable_asgi import GUARD, Client
from tests.helpers.redis_server import RedisServer, redis_servers

NOW = 1_800_000_000.0
PATH = "/v1/stream/s"


def put(ds: DurableStreams, content_type: str, body: bytes = b"", **headers: str) -> None:
    extra = [(name.replace("_", "-"), value) for name, value in headers.items()]
    request = Request("PUT", PATH, [("Content-Type", content_type), *extra], "", body)
    response = ds.handle(request, NOW)
    assert isinstance(response, Response)
    assert response.status == 201


def get(ds: DurableStreams, method: str = "GET", now: float = NOW) -> Response:
    response = ds.handle(Request(method, PATH, (), "offset=-1"), now)
    assert isinstance(response, Response)
    return response


def refusal(ds: DurableStreams, *args: object, **kwargs: object) -> AppendRefused:
    with pytest.raises(AppendRefused) as caught:
        ds.append(PATH, *args, **kwargs)  # type: ignore[arg-type]
    return caught.value


# -- the POST path as the reference -------------------------------------------------------

Producer = tuple[str, int, int]
Step = tuple[str, bytes, str | None, bool, Producer | None, str | None, float]

STREAM_TYPES = ["text/plain", "application/json", "application/octet-stream"]
DATA = st.sampled_from([b"", b"x", b"hello", b"[1,2]", b'{"a":1}', b"[]", b"[1,", b"\xff"])
STEP = st.tuples(
    st.sampled_from(["append", "append", "append", "delete"]),
    DATA,
    st.sampled_from([None, None, "text/plain", "Text/Plain; charset=utf-8", "application/json"]),
    st.sampled_from([False, False, False, True]),  # the plainest appends are the most
    st.sampled_from([None, None, None, ("p", 0, 0), ("p", 0, 1), ("p", 1, 0), ("q", 0, 2)]),
    st.sampled_from([None, None, None, "a", "b", "c"]),
    st.sampled_from([0.0, 1.5]),  # seconds the clock moves before the step (TTL: 2)
)


def post_headers(
    stream_type: str | None,
    content_type: str | None,
    close: bool,
    producer: Producer | None,
    stream_seq: str | None,
) -> list[tuple[str, str]]:
    """The POST twin of an append: None (the stream's own type) is the stream's type."""
    headers = []
    if content_type is None:
        content_type = stream_type
    if content_type is not None:
        headers.append(("Content-Type", content_type))
    if close:
        headers.append(("Stream-Closed", "true"))
    if producer is not None:
        pid, epoch, seq = producer
        headers += [
            ("Producer-Id", pid),
            ("Producer-Epoch", str(epoch)),
            ("Producer-Seq", str(seq)),
        ]
    if stream_seq is not None:
        headers.append(("Stream-Seq", stream_seq))
    return headers


class PlansOnly(MemoryStore):
    """The memory store without its shortcut: every append is a plan."""

    append_bytes = None  # type: ignore[assignment]


def heard(store: MemoryStore) -> list[str]:
    changes: list[str] = []
    store.subscribe(changes.append)
    return changes


@settings(max_examples=150, deadline=None)
@given(
    stream_type=st.none() | st.sampled_from(STREAM_TYPES),
    ttl=st.sampled_from([None, "2", "2"]),
    initial=DATA,
    steps=st.lists(STEP, max_size=12),
)
def test_append_answers_as_a_post_does(
    stream_type: str | None, ttl: str | None, initial: bytes, steps: Sequence[Step]
) -> None:
    stores = PlansOnly(), MemoryStore(), MemoryStore()
    by_post, by_append, by_fast_post = (DurableStreams(store) for store in stores)
    post_heard, append_heard, fast_heard = (heard(store) for store in stores)
    twins = (by_post, by_append, by_fast_post)
    if stream_type is not None:
        body = b"[0]" if stream_type == "application/json" else initial
        for ds in twins:
            put(ds, stream_type, body, **({} if ttl is None else {"Stream_TTL": ttl}))
    now = NOW
    for kind, data, content_type, close, producer, stream_seq, wait in steps:
        now += wait
        if kind == "delete":
            for ds in twins:
                ds.handle(Request("DELETE", PATH), now)
            stream_type = None
            continue
        headers = post_headers(stream_type, content_type, close, producer, stream_seq)
        posted = by_post.handle(Request("POST", PATH, headers, "", data), now)
        assert isinstance(posted, Response)
        # handle()'s plainest POST takes the store's shortcut: the same response.
        fast = by_fast_post.handle(Request("POST", PATH, headers, "", data), now)
        assert fast == posted
        try:
            tail: int | AppendRefused = by_append.append(
                PATH, data, now, content_type, close, producer, stream_seq
            )
        except AppendRefused as refused:
            tail = refused
        if posted.status in (200, 204):
            assert isinstance(tail, int), (posted.status, posted.body, tail)
            assert encode_offset(tail) == posted.header("stream-next-offset")
        else:
            assert isinstance(tail, AppendRefused), (posted.status, tail)
            assert tail.status == posted.status, (posted.body, str(tail))
        assert append_heard == post_heard == fast_heard  # the same wake-ups, step by step
        if posted.changed is not None:
            assert post_heard[-1] == PATH
    for method in ("GET", "HEAD"):
        ours, theirs = get(by_append, method, now), get(by_post, method, now)
        assert (ours.status, ours.body) == (theirs.status, theirs.body)
        for name in ("stream-next-offset", "stream-closed", "content-type"):
            assert ours.header(name) == theirs.header(name)


# -- the API on its own -------------------------------------------------------------------


def test_append_returns_the_tail_and_writes_the_bytes() -> None:
    ds = DurableStreams()
    put(ds, "text/plain", b"ab")
    assert ds.append(PATH, b"cde", NOW) == 5  # the stream's own type
    assert ds.append(PATH, b"f", NOW, "text/plain; charset=utf-8") == 6  # section 5.2: type
    assert ds.append(PATH, b"g", NOW, close=True) == 7
    read = get(ds)
    assert read.body == b"abcdefg"
    assert read.header("stream-closed") == "true"
    assert read.header("stream-next-offset") == encode_offset(7)
    assert decode_offset(encode_offset(7)) == 7
    assert ds.append(PATH, b"", NOW, close=True) == 7  # section 5.3: closing again is a success


def test_json_data_is_split_into_messages() -> None:
    ds = DurableStreams()
    put(ds, "application/json")
    assert ds.append(PATH, b'[1, {"a": [2]}]', NOW) == 2  # section 9.1: one level flattened
    assert ds.append(PATH, b'"three"', NOW, "application/json") == 3
    assert json.loads(get(ds).body) == [1, {"a": [2]}, "three"]
    assert refusal(ds, b"[]", NOW).status == 400  # 9.1.3: an empty array appends nothing
    assert refusal(ds, b"[1,", NOW).status == 400


def test_refusals_say_what_and_where() -> None:
    ds = DurableStreams()
    missing = refusal(ds, b"x", NOW)
    assert missing.status == 404
    assert missing.outcome is None
    assert PATH in str(missing)
    missing_typed = refusal(ds, b"x", NOW, "text/plain")  # the store says so: the same 404
    assert missing_typed.status == 404
    assert missing_typed.outcome is not None
    put(ds, "text/plain")
    other = refusal(ds, b"x", NOW, "application/octet-stream")
    assert other.status == 409
    assert "content type" in str(other)
    assert other.outcome is not None
    assert other.outcome.verdict == "content-type"
    assert refusal(ds, b"", NOW).status == 400  # neither data nor a close
    ds.append(PATH, b"a", NOW, producer=("p", 1, 0))
    stale = refusal(ds, b"b", NOW, producer=("p", 0, 0))  # section 5.2.1
    assert stale.status == 403
    assert stale.outcome is not None
    assert stale.outcome.epoch == 1
    gap = refusal(ds, b"b", NOW, producer=("p", 1, 5))
    assert gap.status == 409
    assert gap.outcome is not None
    assert gap.outcome.seq == 1
    assert ds.append(PATH, b"a", NOW, producer=("p", 1, 0)) == 1  # a retry lands once
    assert ds.append(PATH, b"", NOW, close=True) == 1
    closed = refusal(ds, b"x", NOW)
    assert closed.status == 409
    assert "closed" in str(closed)


@pytest.mark.parametrize(
    ("producer", "wording"),
    [
        (("", 0, 0), "id"),
        (("p", -1, 0), "epoch"),
        (("p", 0, 2**53), "seq"),
        (("p", True, 0), "epoch"),
        ((7, 0, 0), "id"),
    ],
)
def test_a_producer_out_of_range_is_400(producer: Producer, wording: str) -> None:
    ds = DurableStreams()
    put(ds, "text/plain")
    for content_type in (None, "text/plain"):
        refused = refusal(ds, b"x", NOW, content_type, producer=producer)
        assert refused.status == 400
        assert f"producer's {wording}" in str(refused)
        assert refused.outcome is None


def test_ttl_slides_and_an_expired_stream_is_removed() -> None:
    ds = DurableStreams()
    put(ds, "text/plain", Stream_TTL="10")
    assert ds.append(PATH, b"a", NOW + 8) == 1  # section 5.1: a write moves a sliding TTL on
    assert ds.append(PATH, b"b", NOW + 16, "text/plain") == 2
    assert get(ds, "HEAD", NOW + 25).status == 200
    assert refusal(ds, b"c", NOW + 26, "text/plain").status == 404  # section 4: expired
    assert ds.store.meta(PATH) is None  # and removed
    put(ds, "text/plain", Stream_TTL="10")
    assert refusal(ds, b"c", NOW + 10).status == 404  # the stream's own type: the same
    assert ds.store.meta(PATH) is None


def test_a_deleted_stream_read_by_a_fork_is_410() -> None:
    ds = DurableStreams()
    put(ds, "text/plain", b"ab")
    fork = Request("PUT", PATH + "-fork", [("Stream-Forked-From", PATH)])
    assert isinstance(ds.handle(fork, NOW), Response)
    assert ds.handle(Request("DELETE", PATH), NOW).status == 204  # type: ignore[union-attr]
    assert refusal(ds, b"x", NOW).status == 410  # section 4.2: soft-deleted
    assert refusal(ds, b"x", NOW, "text/plain").status == 410


def test_a_store_without_the_shortcut_gets_plans() -> None:
    ds = DurableStreams(PlansOnly())
    put(ds, "text/plain")
    assert ds.append(PATH, b"ab", NOW) == 2
    response = ds.handle(Request("POST", PATH, [("Content-Type", "text/plain")], "", b"c"), NOW)
    assert isinstance(response, Response)
    assert response.status == 204
    assert get(ds).body == b"abc"


# -- the memory store's shortcut and its subscribers ----------------------------------------


def test_the_shortcut_writes_only_what_surely_is_appended() -> None:
    store = MemoryStore()
    ds = DurableStreams(store)
    assert store.append_bytes(PATH, b"x", None, NOW) is None  # missing
    put(ds, "text/plain", Stream_TTL="10")
    assert store.append_bytes(PATH, b"x", "application/json", NOW) is None  # another type
    assert store.append_bytes(PATH, b"x", None, NOW + 10) is None  # at its deadline
    assert get(ds).body == b""  # nothing was written by any of those
    assert store.append_bytes(PATH, b"ab", "text/plain", NOW + 5) == 2
    meta = store.meta(PATH)
    assert meta is not None
    assert meta.deadline == NOW + 15
    assert meta.tail == 2
    assert store.boundary(PATH, 0) == 2  # an append's end is a data boundary
    ds.append(PATH, b"", NOW + 5, close=True)
    assert store.append_bytes(PATH, b"x", None, NOW + 5) is None  # closed
    put_json = Request("PUT", "/v1/stream/j", [("Content-Type", "application/json")])
    assert isinstance(ds.handle(put_json, NOW), Response)
    assert store.append_bytes("/v1/stream/j", b"1", None, NOW) is None  # a JSON stream
    assert get(ds).body == b"ab"


def test_subscribers_hear_every_change_and_nothing_else() -> None:
    store = MemoryStore()
    ds = DurableStreams(store)
    changes = heard(store)
    also = heard(store)
    put(ds, "text/plain")
    ds.append(PATH, b"a", NOW)
    ds.append(PATH, b"b", NOW, producer=("p", 0, 0))
    ds.append(PATH, b"b", NOW, producer=("p", 0, 0))  # a duplicate changes nothing
    with pytest.raises(AppendRefused):
        ds.append(PATH, b"c", NOW, "application/json")  # refused: nothing
    assert changes == [PATH] * 3
    ds.append(PATH, b"", NOW, close=True)
    ds.handle(Request("PUT", PATH + "-f", [("Stream-Forked-From", PATH)]), NOW)
    ds.handle(Request("DELETE", PATH), NOW)  # soft: a fork reads it
    ds.handle(Request("DELETE", PATH + "-f"), NOW)
    assert changes == [PATH] * 4 + [PATH + "-f", PATH, PATH + "-f"] == also


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    yield from redis_servers()


@pytest.mark.slow  # a redis-server
def test_over_redis_the_same_answers(redis_server: RedisServer) -> None:
    from sse_sansio.durable import RedisStore

    answers = []
    redis = RedisStore(redis_server.client(), prefix=f"t{uuid.uuid4().hex[:8]}:")
    for ds in (DurableStreams(redis), DurableStreams(MemoryStore())):  # plans; a shortcut
        put(ds, "text/plain")
        got: list[object] = [ds.append(PATH, b"ab", NOW)]
        got.append(ds.append(PATH, b"c", NOW, "text/plain", producer=("p", 0, 0)))
        got.append(ds.append(PATH, b"c", NOW, producer=("p", 0, 0)))  # a retry: once
        got.append(ds.append(PATH, b"", NOW, close=True))
        refused = refusal(ds, b"x", NOW)
        assert refused.outcome is not None
        got += [refused.status, refused.outcome.verdict, get(ds).body]
        answers.append(got)
    assert answers[0] == answers[1] == [2, 3, 3, 3, 409, "closed", b"abc"]


def test_the_store_is_fixed_at_construction() -> None:
    store = MemoryStore()
    ds = DurableStreams(store)
    assert ds.store is store
    with pytest.raises(AttributeError):
        ds.store = MemoryStore()  # type: ignore[misc]


def test_an_in_process_append_wakes_the_app_s_readers() -> None:
    app = asgi_app(long_poll_timeout=60, sse_lifetime=60)
    client = Client(app)

    async def scenario() -> None:
        await client.request("PUT", headers={"Content-Type": "text/plain"}, body=b"ab")
        poll = asyncio.create_task(client.request("GET", query="offset=now&live=long-poll"))
        gone = asyncio.Event()
        sse = asyncio.create_task(
            client.request("GET", query="offset=now&live=sse", disconnect=gone)
        )
        await asyncio.sleep(0.05)  # both are waiting: only the append can wake them
        assert not poll.done()
        assert not sse.done()
        app.protocol.append(PATH, b"cd", NOW)
        answer = await asyncio.wait_for(poll, GUARD)
        assert (answer["status"], answer["body"]) == (200, b"cd")
        app.protocol.append(PATH, b"", NOW, close=True)
        streamed = await asyncio.wait_for(sse, GUARD)
        assert b"event: data\ndata:cd\n" in streamed["body"]
        assert b'"streamClosed":true' in streamed["body"]

    asyncio.run(scenario())
