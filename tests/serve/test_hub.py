"""sse_sansio.Hub, one producer and many readers (issue 34, item 1).

Hypothesis drives the hub and an independent model (tests/helpers/hub_model.py, written
from the rules) through random publish / read / subscribe / unsubscribe interleavings,
under each policy, and compares every read and the set of subscribers.  Beside it, each
policy's guarantees one by one: memory bounded by max_buffer, order kept, the gap event
a client sees (parsed on both cores), the newest frame per key kept, a slow subscriber
dropped and resuming from the window with no loss and no duplicate, and a slow
subscriber never delaying a fast one.
"""

from __future__ import annotations

import copy
import json
import pickle
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sse_sansio import (
    Comment,
    Event,
    Hub,
    LocalProtocolError,
    ReplayWindow,
    ServerStream,
    serialize,
)
from sse_sansio._serve._server_stream import Frame
from tests.helpers.hub_model import HubModel, gap_frame

POLICIES = ["disconnect", "drop-oldest", "conflate"]


def received(conn_cls: Any, data: bytes) -> list[Event]:
    """The events a client parses from ``data`` on this core."""
    conn = conn_cls()
    conn.receive_data(data)
    events = []
    while isinstance(item := conn.next_event(), (Event, Comment)):
        if isinstance(item, Event):
            events.append(item)
    return events


# --- the model, under random interleavings --------------------------------------------

# An operation: ("publish", type index, data length), ("read", reader), ("subscribe",),
# ("unsubscribe", reader); readers are picked by position among the live ones.
operations = st.lists(
    st.one_of(
        st.tuples(st.just("publish"), st.integers(0, 3), st.integers(0, 30)),
        st.tuples(st.just("read"), st.integers(0, 5)),
        st.tuples(st.just("subscribe")),
        st.tuples(st.just("unsubscribe"), st.integers(0, 5)),
    ),
    max_size=60,
)


def comment_or_event(kind: int, size: int) -> Event | Comment:
    """Kind 3 is a comment (never conflated); 0-2 are events of three types."""
    if kind == 3:
        return Comment(text="c" * size)
    return Event(type=("message", "tick", "price")[kind], data="d" * size)


@pytest.mark.parametrize("policy", POLICIES)
@given(max_buffer=st.integers(1, 120), ops=operations)
@settings(max_examples=150, deadline=None)
def test_the_hub_delivers_what_the_model_says(policy: str, max_buffer: int, ops: list[Any]) -> None:
    hub = Hub(max_buffer=max_buffer, policy=policy, now=0.0)  # type: ignore[arg-type]
    model = HubModel(max_buffer, policy)
    streams: dict[int, ServerStream] = {}  # the model's reader number -> the hub's stream
    now = 0.0
    for op in ops:
        now += 0.5
        live = sorted(model.readers)
        if op[0] == "publish":
            item = comment_or_event(op[1], op[2])
            key = item.type if isinstance(item, Event) and policy == "conflate" else None
            hub.publish(item, now)
            model.publish(serialize(item), key)
        elif op[0] == "subscribe":
            streams[model.subscribe()] = hub.subscribe(now)
        elif live and op[0] == "read":
            reader = live[op[1] % len(live)]
            assert streams[reader].data_to_send(now) == model.read(reader)
        elif live:  # unsubscribe
            reader = live[op[1] % len(live)]
            hub.unsubscribe(streams[reader])
            model.unsubscribe(reader)
        assert hub.subscribers == tuple(streams[r] for r in sorted(model.readers))
        for reader in model.readers:
            assert streams[reader].buffered == model.readers[reader].size()
    for reader, stream in streams.items():
        if reader not in model.readers and stream.state == "slow":
            assert stream.data_to_send(now + 1) == b""  # dropped: nothing more


@pytest.mark.parametrize("policy", ["drop-oldest", "conflate"])
@given(
    max_buffer=st.integers(1, 200),
    sizes=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 60))),
)
@settings(max_examples=100, deadline=None)
def test_a_reader_that_never_reads_holds_at_most_max_buffer(
    policy: str, max_buffer: int, sizes: list[tuple[int, int]]
) -> None:
    hub = Hub(max_buffer=max_buffer, policy=policy, now=0.0)  # type: ignore[arg-type]
    stream = hub.subscribe(0.0)
    biggest = 0
    for kind, size in sizes:
        item = comment_or_event(kind, size)
        biggest = max(biggest, len(serialize(item)))
        hub.publish(item, 1.0)
        # The gap frame's few bytes, and one frame bigger than max_buffer on its own.
        bound = max(max_buffer, biggest) + len(gap_frame(len(sizes)))
        assert stream.buffered <= bound
    held = stream.buffered  # what it holds is what a read hands out
    assert len(stream.data_to_send(2.0)) == held


# --- drop-oldest: the gap event --------------------------------------------------------


def test_drop_oldest_puts_one_gap_event_where_frames_went_and_keeps_the_newest(
    conn_cls: Any,
) -> None:
    hub = Hub(max_buffer=40, policy="drop-oldest", now=0.0)
    slow = hub.subscribe(0.0)
    for n in range(10):
        hub.publish(Event(data=f"n{n}"), 1.0)  # 10 bytes each: four fit in 40
    events = received(conn_cls, slow.data_to_send(1.0))
    assert [(e.type, e.data) for e in events] == [
        ("sse_sansio.gap", '{"dropped": 6}'),
        ("message", "n6"),
        ("message", "n7"),
        ("message", "n8"),
        ("message", "n9"),
    ]
    assert Hub.GAP_EVENT == "sse_sansio.gap"
    # After a read, a new hole gets a new count (11 bytes each now: three fit).
    for n in range(10, 16):
        hub.publish(Event(data=f"n{n}"), 2.0)
    events = received(conn_cls, slow.data_to_send(2.0))
    assert json.loads(events[0].data) == {"dropped": 3}
    assert [e.data for e in events[1:]] == ["n13", "n14", "n15"]


def test_drop_oldest_keeps_a_frame_bigger_than_max_buffer_alone() -> None:
    hub = Hub(max_buffer=10, policy="drop-oldest", now=0.0)
    stream = hub.subscribe(0.0)
    hub.publish(Event(data="a"), 0.0)
    hub.publish(Event(data="b" * 50), 0.0)
    assert stream.data_to_send(0.0) == gap_frame(1) + b"data: " + b"b" * 50 + b"\n\n"


def test_drop_oldest_after_a_read_starts_a_new_gap_not_the_old_one() -> None:
    # The gap frame of an earlier hole was handed out: the next hole counts from 0,
    # even when the stream's own send() filled the queue in between.
    hub = Hub(max_buffer=20, policy="drop-oldest", now=0.0)
    stream = hub.subscribe(0.0)
    for data in ("aa", "bb", "cc"):
        hub.publish(Event(data=data), 0.0)
    assert stream.data_to_send(0.0).startswith(gap_frame(1))
    stream.send(Event(data="own"), 0.0)
    hub.publish(Event(data="dd"), 0.0)
    assert stream.data_to_send(0.0) == gap_frame(1) + b"data: dd\n\n"


# --- conflate -------------------------------------------------------------------------


def test_conflate_keeps_the_newest_frame_per_event_type_in_publish_order(conn_cls: Any) -> None:
    hub = Hub(max_buffer=1000, policy="conflate", now=0.0)
    slow = hub.subscribe(0.0)
    fast = hub.subscribe(0.0)
    for n in range(20):
        hub.publish(Event(type=("price", "volume")[n % 2], data=str(n)), 1.0)
        hub.publish(Comment(text=f"c{n}"), 1.0) if n in (5, 17) else None
        assert received(conn_cls, fast.data_to_send(1.0))[-1].data == str(n)
    events = received(conn_cls, slow.data_to_send(1.0))
    assert [(e.type, e.data) for e in events] == [("price", "18"), ("volume", "19")]
    # The comments, never conflated, stay where they were published (bytes: an
    # EventSource never shows comments).
    hub.publish(Event(type="price", data="a"), 2.0)
    hub.publish(Comment(text="kept"), 2.0)
    hub.publish(Event(type="price", data="b"), 2.0)
    assert slow.data_to_send(2.0) == b": kept\nevent: price\ndata: b\n\n"


def test_conflate_with_a_key_of_your_own() -> None:
    def by_symbol(item: Event | Comment) -> str | None:
        return item.data.split()[0] if isinstance(item, Event) and item.data else None

    hub = Hub(max_buffer=1000, policy="conflate", key=by_symbol, now=0.0)
    stream = hub.subscribe(0.0)
    for data in ("AAPL 1", "MSFT 2", "AAPL 3", "", "MSFT 4", ""):
        hub.publish(Event(data=data), 0.0)
    assert stream.data_to_send(0.0) == b"data: AAPL 3\n\ndata: \n\ndata: MSFT 4\n\ndata: \n\n"


def test_conflate_squeezes_its_blanks_and_keeps_memory_flat() -> None:
    hub = Hub(max_buffer=100, policy="conflate", now=0.0)
    stream = hub.subscribe(0.0)
    for n in range(10_000):
        hub.publish(Event(type=f"k{n % 3}", data=str(n)), 0.0)
    assert stream.buffered < 100
    frames = pickle.loads(pickle.dumps(stream)).data_to_send(0.0)
    assert frames == b"event: k1\ndata: 9997\n\nevent: k2\ndata: 9998\n\nevent: k0\ndata: 9999\n\n"


def test_conflate_past_max_buffer_with_one_frame_per_key_drops_the_reader() -> None:
    hub = Hub(max_buffer=30, policy="conflate", now=0.0)
    stream = hub.subscribe(0.0)
    for kind in ("a", "b", "c"):
        hub.publish(Event(type=kind, data="x"), 0.0)  # 19 bytes each: the second fits not
    assert stream.state == "slow"
    assert hub.subscribers == ()


def test_a_conflate_slot_that_outlived_a_read_blanks_no_stranger() -> None:
    hub = Hub(max_buffer=1000, policy="conflate", now=0.0)
    stream = hub.subscribe(0.0)
    hub.publish(Event(type="t", data="old"), 0.0)
    stream.data_to_send(0.0)
    stream.send(Event(data="own 1"), 0.0)
    stream.send(Event(data="own 2"), 0.0)  # the old slot's index now holds this frame
    hub.publish(Event(type="t", data="new"), 0.0)
    assert stream.data_to_send(0.0) == b"data: own 1\n\ndata: own 2\n\nevent: t\ndata: new\n\n"
    # A stale slot is forgotten when the blanks are squeezed out.
    hub.publish(Event(type="t", data="stale"), 0.0)
    stream.data_to_send(0.0)
    stream.send(Event(data="own 3"), 0.0)
    for n in range(5):
        hub.publish(Event(type="u", data=str(n)), 0.0)
    hub.publish(Event(type="t", data="fresh"), 0.0)
    want = b"data: own 3\n\nevent: u\ndata: 4\n\nevent: t\ndata: fresh\n\n"
    assert stream.data_to_send(0.0) == want


def test_a_subscriber_whose_own_clock_ran_ahead_takes_a_frame_published_earlier() -> None:
    hub = Hub(max_buffer=100, now=0.0)
    stream = hub.subscribe(0.0, keepalive=10.0)
    assert stream.data_to_send(5.0) == b""  # its writer read the clock at 5.0...
    hub.publish(Event(data="a"), 4.0)  # ...the producer at 4.0, before it
    assert stream.data_to_send(5.0) == b"data: a\n\n"
    assert stream.deadline == 15.0


# --- disconnect, and resuming from the window -------------------------------------------


def test_disconnect_drops_the_slow_reader_and_it_resumes_with_no_loss_and_no_duplicate(
    conn_cls: Any,
) -> None:
    window = ReplayWindow(max_events=1000)
    hub = Hub(max_buffer=200, window=window, now=0.0)
    fast = hub.subscribe(0.0)
    slow = hub.subscribe(0.0)
    seen: list[Event] = []  # what the slow client got, across its connections
    published = []
    now = 0.0
    for n in range(300):
        now += 0.01
        published.append(hub.publish(Event(data=f"event {n}"), now))
        fast.data_to_send(now)
        if n % 40 == 0:  # the slow client reads now and then
            seen += received(conn_cls, slow.data_to_send(now))
        if slow.state == "slow":  # the adapter closes it; the client reconnects
            assert slow not in hub.subscribers
            assert slow.data_to_send(now) == b""
            slow = hub.subscribe(now, last_event_id=seen[-1].id)
    seen += received(conn_cls, slow.data_to_send(now))
    assert [e.id for e in seen] == published
    assert [e.data for e in seen] == [f"event {n}" for n in range(300)]


def test_a_slow_reader_never_delays_a_fast_one() -> None:
    for policy in POLICIES:
        hub = Hub(max_buffer=64, policy=policy, now=0.0)  # type: ignore[arg-type]
        stalled = hub.subscribe(0.0)
        fast = hub.subscribe(0.0)
        for n in range(100):
            item = Event(type=f"t{n % 2}", data=str(n))
            hub.publish(item, float(n))
            # Every frame is there for the fast reader the moment it is published.
            assert fast.data_to_send(float(n)) == serialize(item)
            assert fast.deadline is None
        assert stalled.buffered <= 64 + len(gap_frame(100))


def test_resume_replays_what_the_window_has_and_signals_what_it_lost(conn_cls: Any) -> None:
    for policy in POLICIES:
        window = ReplayWindow(max_events=3)
        hub = Hub(max_buffer=10_000, policy=policy, window=window, now=0.0)  # type: ignore[arg-type]
        ids = [hub.publish(Event(data=str(n)), 0.0) for n in range(5)]
        # "conflate" conflates the replay too: of one event type, the newest only.
        wanted = ["4"] if policy == "conflate" else ["3", "4"]
        kept = hub.subscribe(1.0, last_event_id=ids[2])  # 3 and 4 still kept: continue
        assert [e.data for e in received(conn_cls, kept.data_to_send(1.0))] == wanted
        lost = hub.subscribe(1.0, last_event_id=ids[0])  # 1 was dropped: gap
        events = received(conn_cls, lost.data_to_send(1.0))
        assert (events[0].type, events[0].data) == ("sse_sansio.gap", '{"dropped": null}')
        assert [e.data for e in events[1:]] == (["4"] if policy == "conflate" else ["2", "3", "4"])
        foreign = hub.subscribe(1.0, last_event_id="another-stream-7")
        assert foreign.data_to_send(1.0) == gap_frame(None)
        newest = hub.subscribe(1.0, last_event_id=ids[4])  # nothing missed: nothing
        assert newest.data_to_send(1.0) == b""
        assert len(hub.subscribers) == 4


def test_resume_without_a_window_is_a_gap() -> None:
    hub = Hub(max_buffer=100, now=0.0)
    assert hub.subscribe(0.0, last_event_id="7").data_to_send(0.0) == gap_frame(None)


def test_resume_after_the_producer_finished_ends_the_stream_unsubscribed() -> None:
    window = ReplayWindow()
    hub = Hub(max_buffer=100, window=window, now=0.0)
    first = hub.publish(Event(data="a"), 0.0)
    hub.publish(Event(data="b"), 0.0)
    window.close(cut=True)
    stream = hub.subscribe(1.0, last_event_id=first)
    assert stream.state == "cut"
    assert stream.data_to_send(1.0).startswith(b"data: b\n")
    assert hub.subscribers == ()


@pytest.mark.parametrize("cut", [False, True])
def test_close_ends_every_reader_and_a_latecomer_at_once(conn_cls: Any, cut: bool) -> None:
    # A producer that finished must not leave a client waiting: the readers subscribed
    # get what was queued for them, then the ending; a client that comes later, with or
    # without a Last-Event-ID, gets its replay and the same ending, and is not kept.
    window = ReplayWindow()
    hub = Hub(max_buffer=100, window=window, now=0.0)
    reader, finished = hub.subscribe(0.0), hub.subscribe(0.0)
    finished.end(0.0)  # its connection's own end: close() leaves it as it is
    first = hub.publish(Event(data="a"), 0.0)
    assert first is not None
    hub.publish(Event(data="b"), 0.0)
    reader.data_to_send(3.0)  # the reader's clock ran ahead of the hub's
    hub.publish(Event(data="c"), 1.0)
    hub.close(2.0, cut=cut)
    assert (reader.state, finished.state) == ("cut" if cut else "ended", "ended")
    assert [e.data for e in received(conn_cls, reader.data_to_send(3.0))] == ["c"]
    assert reader.data_to_send(9.0) == b""
    assert hub.subscribers == ()
    assert window.resume(first).finished
    assert window.resume(first).cut is cut
    late = hub.subscribe(4.0)
    resumed = hub.subscribe(4.0, last_event_id=first)
    assert hub.subscribers == ()
    assert (late.state, late.data_to_send(4.0)) == ("cut" if cut else "ended", b"")
    assert [e.data for e in received(conn_cls, resumed.data_to_send(4.0))] == ["b", "c"]
    hub.close(5.0, cut=not cut)  # the first ending stands
    assert window.resume(first).cut is cut
    with pytest.raises(LocalProtocolError, match="after close"):
        hub.publish(Event(data="d"), 5.0)


def test_close_without_a_window_ends_the_readers() -> None:
    hub = Hub(max_buffer=100, now=0.0)
    reader = hub.subscribe(0.0)
    hub.publish(Comment(text="x"), 0.0)
    hub.close(0.0)
    assert reader.data_to_send(0.0) == b": x\n"
    assert reader.state == "ended"
    assert hub.subscribe(1.0, last_event_id="7").data_to_send(1.0) == gap_frame(None)


# --- the API's edges --------------------------------------------------------------------


def test_publish_returns_the_windows_id_and_none_without_one() -> None:
    window = ReplayWindow()
    hub = Hub(max_buffer=100, window=window, now=0.0)
    ident = hub.publish(Event(data="a"), 0.0)
    assert ident is not None
    assert window.resume(ident).verdict == "continue"
    assert hub.publish(Comment(text="c"), 0.0) is None
    bare = Hub(max_buffer=100, now=0.0)
    assert bare.publish(Event(data="a", id="mine"), 0.0) == "mine"
    assert bare.publish(Event(data="a"), 0.0) is None

    class Tagged(Event):  # a subclass: its id is read through the property
        __slots__ = ()

    assert bare.publish(Tagged(data="a", id="7"), 0.0) == "7"


def test_an_event_with_retry_is_due_at_once_despite_coalescing() -> None:
    hub = Hub(max_buffer=100, now=0.0)
    stream = hub.subscribe(0.0, coalesce_delay=1.0, keepalive=5.0)
    hub.publish(Event(data="held"), 0.0)
    assert stream.data_to_send(0.5) == b""
    hub.publish(Event(data="now", retry=100), 0.5)
    assert stream.data_to_send(0.5) == b"data: held\n\ndata: now\nretry: 100\n\n"
    assert stream.data_to_send(5.5) == b":\n"  # the stream's own keepalive


def test_unsubscribe_is_idempotent_and_an_ended_stream_gets_nothing() -> None:
    hub = Hub(max_buffer=100, now=0.0)
    stream = hub.subscribe(0.0)
    other = hub.subscribe(0.0)
    other.end(0.0)
    hub.publish(Event(data="a"), 0.0)
    assert other.data_to_send(0.0) == b""
    assert hub.subscribers == (stream, other)
    hub.unsubscribe(stream)
    hub.unsubscribe(stream)
    assert hub.subscribers.index(other) == 0
    assert len(hub.subscribers) == 1


def test_a_stream_its_own_sends_made_slow_is_dropped_at_the_next_publish() -> None:
    hub = Hub(max_buffer=20, now=0.0)
    stream = hub.subscribe(0.0)
    stream.send(Event(data="x" * 10), 0.0)
    stream.send(Event(data="y" * 10), 0.0)
    assert stream.state == "slow"
    hub.publish(Event(data="z"), 0.0)
    assert hub.subscribers == ()


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"max_buffer": 0}, ValueError),
        ({"max_buffer": 1.5}, TypeError),
        ({"max_buffer": True}, TypeError),
        ({"max_buffer": 10, "policy": "drop-newest"}, ValueError),
        ({"max_buffer": 10, "window": object()}, TypeError),
        ({"max_buffer": 10, "key": len}, ValueError),
        ({"max_buffer": 10, "policy": "conflate", "key": "type"}, TypeError),
        ({"max_buffer": 10, "now": -float("inf")}, ValueError),
    ],
)
def test_bad_options_are_refused(options: dict[str, Any], error: type[Exception]) -> None:
    with pytest.raises(error):
        Hub(**{"now": 0.0, **options})


def test_bad_items_and_clocks_are_refused() -> None:
    hub = Hub(max_buffer=10, now=1.0)
    stream = hub.subscribe(1.0)
    with pytest.raises(TypeError, match="Event or a Comment"):
        hub.publish(b"data: x\n\n", 1.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="backwards"):
        hub.publish(Event(data="x"), 0.5)
    with pytest.raises(LocalProtocolError):
        hub.publish(tuple.__new__(Event, ("", "x", "", None, -1, -1, None)), 1.0)
    hub.publish(Event(data="int clock"), 2)  # an int is a time too
    assert stream.data_to_send(2.0) == b"data: int clock\n\n"


def test_a_frame_is_read_only_and_lives_for_one_publish() -> None:
    frame = Frame(Event(data="a"), Comment(text="b"))
    assert (frame.data, frame.key, frame.urgent) == (b"data: a\n\n: b\n", None, False)
    with pytest.raises(AttributeError, match="read-only"):
        frame.data = b"data: injected\n\n"
    with pytest.raises(TypeError, match="not pickled"):
        pickle.dumps(frame)
    with pytest.raises(TypeError, match="not pickled"):
        copy.copy(frame)


def test_a_hub_pickled_with_its_streams_carries_on_as_its_twin() -> None:
    hub = Hub(max_buffer=30, policy="drop-oldest", window=ReplayWindow(), now=0.0)
    streams = [hub.subscribe(0.0), hub.subscribe(0.0)]
    hub.publish(Event(data="a" * 10), 0.0)
    streams[0].data_to_send(0.0)
    hub.publish(Event(data="b" * 10), 0.0)
    hub.publish(Event(data="c" * 10), 0.0)
    back_hub, back_streams = pickle.loads(pickle.dumps((hub, streams)))
    assert back_hub.subscribers == tuple(back_streams)
    for each in (hub, back_hub):
        each.publish(Event(data="d" * 10), 1.0)
    assert [s.data_to_send(1.0) for s in back_streams] == [s.data_to_send(1.0) for s in streams]
