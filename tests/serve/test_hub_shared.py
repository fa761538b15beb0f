"""Subscribers that read alike share one frame log (issue 40, item 8), sans-I/O.

A publish appends an item's bytes once to a shared log, and each subscriber's stream
reads it by its own cursor; nothing a subscriber sees may change.  The property test
holds a hub whose subscribers share logs against a twin whose subscribers are each
served alone (a ``may_read`` that allows everything keeps a subscriber off the shared
path: that is today's per-subscriber queue, the reference), under random publishes,
reads at different paces and clocks, keepalives, own sends and ends, unsubscribes and
pickles: the bytes handed out, ``buffered``, ``state``, ``deadline`` and the hub's
subscribers must be the same at every step.  The other tests check what the twin
cannot show: the log's memory, the wake-ups, and what a pickle holds.  What a client
receives is parsed on both cores.
"""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable
from functools import partial
from typing import Any, Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sse_sansio import Comment, Event, Hub, LocalProtocolError, ServerStream, serialize

pytestmark = pytest.mark.usefixtures("conn_cls")

CHANNEL_SETS: list[list[str] | None] = [None, ["a"], ["a", "b"], ["b*"]]
CHANNELS = [None, "a", "b", "bx"]


def anyone(channel: str | None, item: Event | Comment) -> bool:
    """A may_read that allows everything: its subscriber is served alone."""
    return True


def shared_log(hub: Hub, channels: list[str] | None = None) -> Any:
    """The hub's shared log of the readers of ``channels`` (the test looks inside)."""
    return hub._groups[None if channels is None else frozenset(channels)]


def solo(hub: Hub, **options: Any) -> ServerStream:
    """The first subscriber of its channels that could share a log: it is served alone,
    and the log is made for the second."""
    stream = hub.subscribe(0.0, **options)
    assert type(stream) is ServerStream
    return stream


def parsed(conn_cls: Any, data: bytes) -> list[str]:
    conn = conn_cls()
    conn.receive_data(data)
    datas = []
    while isinstance(item := conn.next_event(), (Event, Comment)):
        if isinstance(item, Event):
            datas.append(item.data)
    return datas


# --- the twin: shared logs against subscribers served alone ------------------------------

operations = st.lists(
    st.one_of(
        st.tuples(
            st.just("publish"),
            st.integers(0, 3),
            st.one_of(st.integers(0, 40), st.integers(100, 200)),  # (some past max_buffer)
        ),
        st.tuples(st.just("read"), st.integers(0, 7), st.sampled_from([0.0, 0.25, -0.25])),
        st.tuples(st.just("deadline"), st.integers(0, 7)),
        st.tuples(st.just("subscribe"), st.integers(0, 3), st.booleans()),
        st.tuples(st.just("unsubscribe"), st.integers(0, 7)),
        st.tuples(st.just("send"), st.integers(0, 7)),
        st.tuples(st.just("end"), st.integers(0, 7)),
        st.tuples(
            st.just("pickle"),
        ),
        st.tuples(
            st.just("tick"),
        ),
    ),
    min_size=5,
    max_size=80,
)
# The subscribers made before the operations (channel set, keepalive): most read the
# same channels, so most share a log.
first_subscribers = st.lists(
    st.tuples(st.sampled_from([0, 0, 1, 1, 2, 3]), st.booleans()), min_size=2, max_size=6
)


def observed(stream: ServerStream) -> tuple[object, ...]:
    return (stream.buffered, stream._size, stream.state, stream.deadline)


def outcome(call: Callable[[], object]) -> object:
    """What ``call`` returns, or the class of what it raises."""
    try:
        return call()
    except (ValueError, LocalProtocolError) as error:
        return type(error)


@given(max_buffer=st.integers(1, 150), early=first_subscribers, ops=operations)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_shared_readers_see_what_readers_served_alone_see(
    max_buffer: int, early: list[tuple[int, bool]], ops: list[Any]
) -> None:
    hubs = [Hub(max_buffer=max_buffer, now=0.0) for _ in range(2)]
    streams: list[list[ServerStream]] = [[], []]  # every stream made, shared and alone
    own: list[float] = []  # each reader's own latest time
    now = 0.0
    for op in [("subscribe", *options) for options in early] + ops:
        if op[0] == "tick":
            now += 0.5
        elif op[0] == "publish":
            item = Event(data="d" * op[2]) if op[1] < 3 else Comment(text="c" * op[2])
            for hub in hubs:
                hub.publish(item, now, channel=CHANNELS[op[1]])
        elif op[0] == "subscribe":
            options: dict[str, Any] = {"channels": CHANNEL_SETS[op[1]]}
            if op[2]:
                options["keepalive"] = 1.0
            streams[0].append(hubs[0].subscribe(now, **options))
            streams[1].append(hubs[1].subscribe(now, may_read=anyone, **options))
            own.append(now)
        elif op[0] == "pickle":
            back = pickle.loads(pickle.dumps((hubs[0], streams[0])))
            hubs[0], streams[0] = back
        elif streams[0]:
            number = op[1] % len(streams[0])
            pair = (streams[0][number], streams[1][number])
            if op[0] == "read":  # at its own time, ahead of it, or before (refused alike)
                at = max(own[number], now) + op[2]
                results = [outcome(partial(stream.data_to_send, at)) for stream in pair]
                assert results[0] == results[1]
                own[number] = max(own[number], at)
            elif op[0] == "deadline":
                assert pair[0].deadline == pair[1].deadline
            elif op[0] == "unsubscribe":
                for hub, stream in zip(hubs, pair, strict=True):
                    hub.unsubscribe(stream)
            elif pair[0].state == "open":
                at = own[number] = max(own[number], now)
                for stream in pair:
                    if op[0] == "send":
                        stream.send(Event(data="own"), at)
                    else:
                        stream.end(at)
        for first, second in zip(*streams, strict=True):
            assert observed(first) == observed(second)
        shared = [streams[0].index(s) for s in hubs[0].subscribers]
        assert shared == [streams[1].index(s) for s in hubs[1].subscribers]
    for first, second in zip(*streams, strict=True):  # what is left goes out the same
        assert first.data_to_send(now + 100) == second.data_to_send(now + 100)


# --- the log itself ---------------------------------------------------------------------


def test_readers_at_different_paces_each_get_every_frame_once(conn_cls: Any) -> None:
    hub = Hub(max_buffer=10_000, now=0.0)
    eager, steady, late = (hub.subscribe(0.0, channels=["room"]) for _ in range(3))
    got: dict[int, list[str]] = {0: [], 1: [], 2: []}
    for n in range(60):
        hub.publish(Event(data=f"e{n}"), float(n), channel="room")
        got[0] += parsed(conn_cls, eager.data_to_send(float(n)))
        if n % 7 == 0:
            got[1] += parsed(conn_cls, steady.data_to_send(float(n)))
    got[1] += parsed(conn_cls, steady.data_to_send(60.0))
    got[2] += parsed(conn_cls, late.data_to_send(60.0))
    assert got[0] == got[1] == got[2] == [f"e{n}" for n in range(60)]


def test_the_log_holds_at_most_max_buffer_and_a_frame(conn_cls: Any) -> None:
    frame = serialize(Event(data="e00"))
    hub = Hub(max_buffer=10 * len(frame), now=0.0)
    fast, steady = hub.subscribe(0.0), hub.subscribe(0.0)
    log = shared_log(hub)
    got: list[str] = []
    for n in range(100):
        hub.publish(Event(data=f"e{n:02}"), 0.0)
        fast.data_to_send(0.0)
        if n % 7 == 6:  # never more than 7 frames behind: never slow
            got += parsed(conn_cls, steady.data_to_send(0.0))
        assert sum(map(len, log.frames)) <= 11 * len(frame)
        assert len(log.frames) == log.end - log.first
    got += parsed(conn_cls, steady.data_to_send(0.0))
    assert got == [f"e{n:02}" for n in range(100)]
    assert hub.subscribers == (fast, steady)


def test_readers_leaving_from_anywhere_in_the_log_take_their_frames(conn_cls: Any) -> None:
    frame = serialize(Event(data="e00"))
    hub = Hub(max_buffer=4 * len(frame), now=0.0)
    solo(hub)
    first = hub.subscribe(0.0)
    hub.publish(Event(data="e00"), 0.0)
    middle = hub.subscribe(0.0)  # marked after the first frame
    hub.publish(Event(data="e01"), 0.0)
    last = hub.subscribe(0.0)
    hub.publish(Event(data="e02"), 0.0)
    hub.unsubscribe(middle)  # its mark goes; the log's memory waits for a publish
    assert parsed(conn_cls, middle.data_to_send(0.0)) == ["e01", "e02"]
    assert parsed(conn_cls, first.data_to_send(0.0)) == ["e00", "e01", "e02"]
    got = []
    for n in range(3, 30):
        hub.publish(Event(data=f"e{n:02}"), 0.0)
        got += parsed(conn_cls, first.data_to_send(0.0))
        if n % 3 == 0:
            hub.unsubscribe(last)  # (unsubscribed once; then ignored)
    assert got == [f"e{n:02}" for n in range(3, 30)]
    assert parsed(conn_cls, last.data_to_send(0.0)) == ["e02", "e03"]
    assert len(shared_log(hub).frames) <= 5


def test_a_slow_reader_is_dropped_from_the_log_and_its_memory_goes_with_it() -> None:
    frame = serialize(Event(data="x" * 20))  # 28 bytes
    hub = Hub(max_buffer=3 * len(frame), now=0.0)
    woken: list[str] = []
    fast = hub.subscribe(0.0, wake=lambda: woken.append("fast"))
    stalled = hub.subscribe(0.0, wake=lambda: woken.append("stalled"))
    log = shared_log(hub)
    for n in range(10):
        hub.publish(Event(data="x" * 20), 0.0)
        fast.data_to_send(0.0)
        assert len(log.frames) <= 3 + 1  # max_buffer and one frame
        if n == 3:  # the fourth frame takes the stalled reader past max_buffer
            assert stalled.state == "slow"
            assert hub.subscribers == (fast,)
            assert woken[-2:] == ["fast", "stalled"]  # told, so its adapter closes it
    assert (woken.count("fast"), woken.count("stalled")) == (10, 4)
    assert (stalled.buffered, stalled.data_to_send(1.0)) == (0, b"")


def test_a_reader_one_big_frame_behind_is_not_slow_though_marked_further_back() -> None:
    hub = Hub(max_buffer=20, now=0.0)
    solo(hub)
    reader = hub.subscribe(0.0)
    hub.publish(Event(data="a"), 0.0)
    assert reader.data_to_send(0.0) == b"data: a\n\n"  # read: its mark stays behind
    big = Event(data="b" * 30)
    hub.publish(big, 0.0)  # past max_buffer from the mark: the log looks at the reader
    assert reader.state == "open"
    assert reader.data_to_send(0.0) == serialize(big)


def test_one_frame_bigger_than_max_buffer_on_an_empty_queue_is_not_slow() -> None:
    hub = Hub(max_buffer=10, now=0.0)
    big, other = hub.subscribe(0.0), hub.subscribe(0.0)
    hub.publish(Event(data="y" * 50), 0.0)
    assert (big.state, other.state) == ("open", "open")
    assert other.data_to_send(0.0) == serialize(Event(data="y" * 50))
    hub.publish(Event(data="z"), 0.0)  # a second frame on a non-empty queue: slow
    assert (big.state, other.state) == ("slow", "open")
    assert hub.subscribers == (other,)
    hub.unsubscribe(other)
    assert hub._groups == {}  # the last reader gone: the log is too
    hub.publish(Event(data="after"), 0.0)  # nobody reads it
    assert (hub._exact, hub._everyone) == ({}, {})


def test_every_reader_of_a_log_is_dropped_at_once_when_all_lag() -> None:
    hub = Hub(max_buffer=20, now=0.0)
    readers = [hub.subscribe(0.0, channels=["a"]) for _ in range(3)]
    hub.publish(Event(data="1" * 10), 0.0, channel="a")
    hub.publish(Event(data="2" * 10), 0.0, channel="a")
    assert [r.state for r in readers] == ["slow"] * 3
    assert (hub.subscribers, hub._groups) == ((), {})
    assert hub.publish(Event(data="3"), 0.0, channel="a") is None


def test_a_reader_is_woken_on_every_publish_that_queues_for_it() -> None:
    hub = Hub(max_buffer=1000, now=0.0)
    woken: list[int] = []

    def waker(number: int) -> Callable[[], None]:
        return lambda: woken.append(number)

    readers = [hub.subscribe(0.0, channels=["a"], wake=waker(n)) for n in range(3)]
    plain = hub.subscribe(0.0, channels=["a"])  # no wake: nothing to call
    hub.publish(Event(data="1"), 0.0, channel="a")
    hub.publish(Event(data="2"), 0.0, channel="b")  # nobody reads b
    assert sorted(woken) == [0, 1, 2]
    hub.unsubscribe(readers[1])
    hub.publish(Event(data="3"), 0.0, channel="a")
    assert sorted(woken) == [0, 0, 1, 2, 2]
    assert plain.data_to_send(0.0) == b"data: 1\n\ndata: 3\n\n"


def test_a_wake_that_reads_and_unsubscribes_during_a_publish_is_safe() -> None:
    hub = Hub(max_buffer=1000, now=0.0)
    written: list[bytes] = []

    def write_then_leave() -> None:
        written.append(first.data_to_send(0.0))
        hub.unsubscribe(first)

    first = hub.subscribe(0.0, wake=write_then_leave)
    second = hub.subscribe(0.0, wake=lambda: written.append(second.data_to_send(0.0)))
    hub.publish(Event(data="a"), 0.0)
    hub.publish(Event(data="b"), 0.0)
    assert written == [b"data: a\n\n", b"data: a\n\n", b"data: b\n\n"]
    assert hub.subscribers == (second,)


# --- the due time and the clock, looked up lazily ---------------------------------------


def test_the_deadline_sees_frames_published_since_the_last_look() -> None:
    hub = Hub(max_buffer=1000, now=0.0)
    solo(hub)
    stream = hub.subscribe(0.0, keepalive=10.0)
    assert stream.deadline == 10.0
    hub.publish(Event(data="a"), 2.0)
    assert stream.deadline == 2.0  # due when published
    hub.publish(Event(data="b"), 3.0)
    assert stream.deadline == 2.0  # still the first frame's time
    assert stream.data_to_send(3) == b"data: a\n\ndata: b\n\n"  # (an int is a time too)
    assert stream.deadline == 13.0
    with pytest.raises(ValueError, match="backwards"):
        hub.publish(Event(data="c"), 2.5)
    hub.publish(Event(data="c"), 4.0)
    with pytest.raises(ValueError, match="backwards"):
        stream.data_to_send(3.5)  # the stream's clock saw the publish at 4.0
    assert stream.deadline == 4.0
    hub.publish(Event(data="d"), 5.0)
    assert stream.data_to_send(5.0) == b"data: c\n\ndata: d\n\n"


def test_a_reader_whose_clock_ran_ahead_is_due_at_its_own_time() -> None:
    hub = Hub(max_buffer=1000, now=0.0)
    solo(hub)
    ahead = hub.subscribe(0.0)
    ahead.data_to_send(5.0)
    hub.publish(Event(data="a"), 1.0)
    assert ahead.deadline == 5.0  # as deliver() takes a frame at the stream's time
    assert ahead.data_to_send(5.0) == b"data: a\n\n"


# --- what leaves the log ----------------------------------------------------------------


def test_a_readers_own_send_end_or_resume_serves_it_alone_from_then_on() -> None:
    hub = Hub(max_buffer=1000, now=0.0)
    alone = solo(hub, channels=["a"])
    sender, ender, resumer, stays = (hub.subscribe(0.0, channels=["a"]) for _ in range(4))
    hub.publish(Event(data="1"), 0.0, channel="a")
    sender.send(Event(data="own"), 0.0)
    ender.end(0.0)
    with pytest.raises(LocalProtocolError, match="needs a window"):
        resumer.resume("x", 0.0)
    hub.publish(Event(data="2"), 0.0, channel="a")
    assert sender.data_to_send(0.0) == b"data: 1\n\ndata: own\n\ndata: 2\n\n"
    assert (ender.data_to_send(0.0), ender.state) == (b"data: 1\n\n", "ended")
    assert resumer.data_to_send(0.0) == b"data: 1\n\ndata: 2\n\n"
    assert stays.data_to_send(0.0) == b"data: 1\n\ndata: 2\n\n"
    assert hub.subscribers == (alone, sender, ender, resumer, stays)
    for stream in (alone, sender, ender, resumer, stays):
        hub.unsubscribe(stream)
    assert (hub._groups, hub._exact) == ({}, {})


def test_a_readers_send_now_takes_it_off_the_log() -> None:
    hub = Hub(max_buffer=1000, now=0.0)
    solo(hub)
    stream = hub.subscribe(0.0)
    hub.publish(Event(data="1"), 0.0)
    assert stream._send_now(Event(data="2"), 0.0) == b"data: 1\n\ndata: 2\n\n"
    assert hub._groups == {}
    hub.publish(Event(data="3"), 0.0)
    assert stream.data_to_send(0.0) == b"data: 3\n\n"


def test_close_ends_shared_readers_after_their_frames() -> None:
    hub = Hub(max_buffer=1000, now=0.0)
    woken: list[str] = []
    solo(hub)
    reader = hub.subscribe(0.0, wake=lambda: woken.append("r"))
    hub.publish(Event(data="last"), 0.0)
    hub.close(1.0, cut=True)
    assert woken == ["r", "r"]
    assert (reader.state, hub._groups) == ("cut", {})
    assert reader.data_to_send(1.0) == b"data: last\n\n"


def test_who_shares_a_log_and_who_is_served_alone() -> None:
    hub = Hub(max_buffer=1000, now=0.0)
    first = solo(hub, channels=["a"])  # alone while no other reads "a" alike
    hub.subscribe(0.0, channels=["a"], coalesce_delay=0.5)  # coalescing: alone
    hub.subscribe(0.0, channels=["a"], may_read=anyone)  # may_read: alone
    hub.subscribe(0.0, last_event_id="unknown")  # a gap queued first: alone
    assert hub._groups == {}
    hub.subscribe(0.0, channels=["a"])  # the second: the log is made
    hub.subscribe(0.0, channels=["a"], keepalive=5.0)  # keepalives are each stream's own
    assert list(hub._groups) == [frozenset({"a"})]
    assert len(shared_log(hub, ["a"]).marks[0]) == 2
    assert len(hub._exact["a"]) == 4  # the log and the three served alone
    hub.unsubscribe(first)
    hub.subscribe(0.0, channels=["b"])  # "b" has its first
    assert list(hub._groups) == [frozenset({"a"})]
    policies: list[Literal["drop-oldest", "conflate"]] = ["drop-oldest", "conflate"]
    for policy in policies:
        other = Hub(max_buffer=1000, policy=policy, now=0.0)
        other.subscribe(0.0)
        other.subscribe(0.0)
        assert other._groups == {}


def test_the_first_is_alone_again_once_the_others_left() -> None:
    hub = Hub(max_buffer=1000, now=0.0)
    first = solo(hub)
    hub.unsubscribe(first)
    second = solo(hub)  # the first left before a second came: no log
    third = hub.subscribe(0.0)
    hub.unsubscribe(third)  # the log's last reader: the log goes
    assert hub._groups == {}
    fourth = solo(hub)  # a log of one reader would cost more than it saves
    fifth = hub.subscribe(0.0)
    assert type(fifth) is not ServerStream
    hub.publish(Event(data="x"), 0.0)
    assert [s.data_to_send(0.0) for s in (second, fourth, fifth)] == [b"data: x\n\n"] * 3


# --- pickles -----------------------------------------------------------------------------


def test_a_hub_with_shared_logs_pickles_its_readers_with_their_own_frames() -> None:
    hub = Hub(max_buffer=1000, now=0.0)
    streams = [hub.subscribe(0.0, channels=["a"]) for _ in range(3)]
    hub.publish(Event(data="1"), 1.0, channel="a")
    streams[0].data_to_send(1.0)
    hub.publish(Event(data="2"), 2.0, channel="a")
    back_hub, back = pickle.loads(pickle.dumps((hub, streams)))
    assert back_hub._groups == {}  # each reader now served alone, with its frames
    assert back_hub._fast is back_hub._exact
    assert [type(s) for s in back] == [ServerStream] * 3
    assert back_hub.subscribers == tuple(back)
    for each in (hub, back_hub):
        each.publish(Event(data="3"), 3.0, channel="a")
    for stream, twin in zip(streams, back, strict=True):
        assert (twin.buffered, twin.deadline) == (stream.buffered, stream.deadline)
        assert twin.data_to_send(3.0) == stream.data_to_send(3.0)
    assert [s.data_to_send(3.0) for s in back] == [b""] * 3
    lone = copy.copy(streams[1])  # a copy of a reader is a plain stream too
    assert (type(lone), lone.buffered) == (ServerStream, 0)


def test_a_shared_log_itself_is_not_pickled() -> None:
    hub = Hub(max_buffer=1000, now=0.0)
    hub.subscribe(0.0)
    hub.subscribe(0.0)
    with pytest.raises(TypeError, match="not pickled"):
        pickle.dumps(shared_log(hub))


def test_a_wake_may_unsubscribe_a_reader_the_same_publish_made_slow() -> None:
    hub = Hub(max_buffer=20, now=0.0)
    first = solo(hub)

    def read_and_tidy() -> None:
        fast.data_to_send(0.0)
        if stalled.state == "slow":
            hub.unsubscribe(stalled)  # already let go: ignored

    fast = hub.subscribe(0.0, wake=read_and_tidy)
    stalled = hub.subscribe(0.0)
    for _ in range(2):
        hub.publish(Event(data="x" * 10), 0.0)
        first.data_to_send(0.0)
    assert stalled.state == "slow"
    assert hub.subscribers == (first, fast)
