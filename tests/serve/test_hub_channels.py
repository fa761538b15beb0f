"""Channels and authorization on the hub (issue 40, items 1 and 2), sans-I/O.

One log, many channels: a subscriber reads exact names and shell-style patterns (or
everything), in publish order; ``may_read`` is asked live and on replay alike, so a
replay follows the subscriber's rights *now*; a refused event leaves no trace; a
``may_read`` that raises cuts its subscriber alone.  The property test compares the
hub with an independent model (written here from the issue's words, not from the
code) under random publish / subscribe / resume / revoke sequences.  What a client
receives is parsed on both cores.
"""

from __future__ import annotations

import logging
from fnmatch import fnmatchcase
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sse_sansio import Comment, Event, Hub, ReplayWindow, ServerStream

pytestmark = pytest.mark.usefixtures("conn_cls")


def parsed(conn_cls: Any, stream: ServerStream, now: float = 100.0) -> list[Event]:
    conn = conn_cls()
    conn.receive_data(stream.data_to_send(now))
    events = []
    while isinstance(item := conn.next_event(), (Event, Comment)):
        if isinstance(item, Event):
            events.append(item)
    return events


def datas(conn_cls: Any, stream: ServerStream) -> list[str]:
    return [e.data for e in parsed(conn_cls, stream)]


def test_exact_names_patterns_and_everything(conn_cls: Any) -> None:
    hub = Hub(max_buffer=10_000, now=0.0)
    a = hub.subscribe(0.0, channels=["a"])
    scores = hub.subscribe(0.0, channels=["scores/*"])
    both = hub.subscribe(0.0, channels=["scores/1", "scores/*", "a"])
    everything = hub.subscribe(0.0)
    hub.publish(Event(data="1"), 1.0, channel="a")
    hub.publish(Event(data="2"), 1.0, channel="scores/1")
    hub.publish(Event(data="3"), 1.0, channel="news/1")
    hub.publish(Event(data="4"), 1.0)  # the unnamed channel: only "everything" reads it
    hub.publish(Event(data="5"), 1.0, channel="scores/2")
    assert datas(conn_cls, a) == ["1"]
    assert datas(conn_cls, scores) == ["2", "5"]
    assert datas(conn_cls, both) == ["1", "2", "5"]  # once each, in publish order
    assert datas(conn_cls, everything) == ["1", "2", "3", "4", "5"]


def test_patterns_follow_fnmatch_and_are_case_sensitive(conn_cls: Any) -> None:
    hub = Hub(max_buffer=10_000, now=0.0)
    stream = hub.subscribe(0.0, channels=["room-[ab]", "user/?"])
    for name in ["room-a", "room-c", "Room-a", "user/7", "user/77", "room-b"]:
        hub.publish(Event(data=name), 1.0, channel=name)
    assert datas(conn_cls, stream) == ["room-a", "user/7", "room-b"]


def test_a_pattern_that_comes_later_sees_names_already_published(conn_cls: Any) -> None:
    hub = Hub(max_buffer=10_000, now=0.0)
    early = hub.subscribe(0.0, channels=["s/*"])
    hub.publish(Event(data="1"), 1.0, channel="s/x")
    late = hub.subscribe(1.0, channels=["*/x"])
    hub.publish(Event(data="2"), 2.0, channel="s/x")
    hub.unsubscribe(early)
    hub.publish(Event(data="3"), 3.0, channel="s/x")
    assert datas(conn_cls, early) == ["1", "2"]
    assert datas(conn_cls, late) == ["2", "3"]


def test_many_channel_names_keep_routing_right(conn_cls: Any) -> None:
    hub = Hub(max_buffer=10_000_000, now=0.0)
    stream = hub.subscribe(0.0, channels=["n/*7"])
    for number in range(5000):  # more names than the match cache holds
        hub.publish(Event(data=str(number)), 1.0, channel=f"n/{number}")
    hub.publish(Event(data="again"), 1.0, channel="n/7")
    expected = [str(n) for n in range(5000) if str(n).endswith("7")] + ["again"]
    assert datas(conn_cls, stream) == expected


def test_unsubscribing_the_last_reader_of_a_name_or_pattern_forgets_it(conn_cls: Any) -> None:
    hub = Hub(max_buffer=10_000, now=0.0)
    first = hub.subscribe(0.0, channels=["a", "b/*"])
    second = hub.subscribe(0.0, channels=["a", "b/*"])
    hub.unsubscribe(first)
    hub.unsubscribe(first)  # twice: nothing
    hub.publish(Event(data="1"), 1.0, channel="b/1")
    hub.unsubscribe(second)
    assert hub.publish(Event(data="2", id="x"), 1.0, channel="a") == "x"
    assert hub.subscribers == ()
    assert datas(conn_cls, second) == ["1"]
    third = hub.subscribe(2.0, channels=["b/*"])
    hub.publish(Event(data="3"), 2.0, channel="b/2")
    assert datas(conn_cls, third) == ["3"]


def test_a_publish_nobody_reads_is_still_logged_and_serialized_for_nobody() -> None:
    window = ReplayWindow()
    hub = Hub(max_buffer=10_000, window=window, now=0.0)
    hub.subscribe(0.0, channels=["other"])
    ident = hub.publish(Event(data="x"), 1.0, channel="nobody")
    assert ident is not None
    assert [e.data for e in window.resume(window.priming(from_start=True).id).events] == ["x"]


def test_one_cursor_resumes_every_channel_and_only_the_readers_channels(conn_cls: Any) -> None:
    hub = Hub(max_buffer=10_000, window=ReplayWindow(), now=0.0)
    first = hub.publish(Event(data="a0"), 1.0, channel="a")
    for data, channel in [("b1", "b"), ("a2", "a"), ("c3", "c/1"), ("n4", None), ("a5", "a")]:
        hub.publish(Event(data=data), 1.0, channel=channel)
    assert first is not None
    stream = hub.subscribe(2.0, channels=["a", "c/*"], last_event_id=first)
    assert datas(conn_cls, stream) == ["a2", "c3", "a5"]
    everything = hub.subscribe(2.0, last_event_id=first)
    assert datas(conn_cls, everything) == ["b1", "a2", "c3", "n4", "a5"]


def test_may_read_is_asked_live_and_on_replay_with_todays_rights(conn_cls: Any) -> None:
    rights = {"alice": {"user/alice", "public"}}
    asked: list[tuple[str | None, str]] = []

    def may_read(channel: str | None, item: Event | Comment) -> bool:
        asked.append((channel, item.data if isinstance(item, Event) else item.text))
        return channel in rights["alice"]

    hub = Hub(max_buffer=10_000, window=ReplayWindow(), now=0.0)
    stream = hub.subscribe(0.0, channels=["user/*", "public"], may_read=may_read)
    ids = [
        hub.publish(Event(data=d), 1.0, channel=c)
        for d, c in [("mine", "user/alice"), ("bob's", "user/bob"), ("pub", "public")]
    ]
    live = parsed(conn_cls, stream)
    assert [e.data for e in live] == ["mine", "pub"]
    assert asked == [("user/alice", "mine"), ("user/bob", "bob's"), ("public", "pub")]
    # The refused event left no trace: no ID of it, no gap.
    assert [e.id for e in live] == [ids[0], ids[2]]
    # Revoked: a resume from before them replays only what the rights cover now.
    rights["alice"] = {"public"}
    assert ids[0] is not None
    hub.unsubscribe(stream)
    again = hub.subscribe(
        2.0, channels=["user/*", "public"], may_read=may_read, last_event_id=ids[0]
    )
    assert datas(conn_cls, again) == ["pub"]
    start = hub.subscribe(
        2.0, channels=["user/*"], may_read=may_read, last_event_id=f"{ids[0].rsplit('-', 1)[0]}-0"
    )
    assert datas(conn_cls, start) == []


def test_a_may_read_that_raises_cuts_its_subscriber_alone(
    conn_cls: Any, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(channel: str | None, item: Event | Comment) -> bool:
        raise RuntimeError("the rights service is down")

    woken: list[str] = []
    hub = Hub(max_buffer=10_000, window=ReplayWindow(), now=0.0)
    bad = hub.subscribe(0.0, channels=["a"], may_read=broken, wake=lambda: woken.append("bad"))
    good = hub.subscribe(0.0, channels=["a"], wake=lambda: woken.append("good"))
    with caplog.at_level(logging.ERROR, logger="sse_sansio.serve"):
        first = hub.publish(Event(data="1"), 1.0, channel="a")
    assert bad.state == "cut"
    assert hub.subscribers == (good,)
    assert "may_read raised" in caplog.text
    assert "the rights service is down" in caplog.text
    hub.publish(Event(data="2"), 2.0, channel="a")
    assert datas(conn_cls, good) == ["1", "2"]
    assert woken == ["bad", "good", "good"]
    assert first is not None
    # On replay too: cut at once, not subscribed.
    resumed = hub.subscribe(3.0, channels=["a"], may_read=broken, last_event_id=first)
    assert resumed.state == "cut"
    assert resumed not in hub.subscribers


def test_comments_follow_channels_and_may_read(conn_cls: Any) -> None:
    hub = Hub(max_buffer=10_000, now=0.0)
    seen: list[object] = []

    def may_read(channel: str | None, item: Event | Comment) -> bool:
        seen.append(item)
        return True

    stream = hub.subscribe(0.0, channels=["a"], may_read=may_read)
    hub.publish(Comment(text="ping"), 1.0, channel="a")
    hub.publish(Comment(text="elsewhere"), 1.0, channel="b")
    assert stream.data_to_send(1.0) == b": ping\n"  # a comment line; no blank line needed
    assert seen == [Comment(text="ping")]


def test_wake_is_called_on_a_frame_and_on_close_and_not_for_other_channels() -> None:
    hub = Hub(max_buffer=10_000, now=0.0)
    woken: list[str] = []
    hub.subscribe(0.0, channels=["a"], wake=lambda: woken.append("a"))
    hub.subscribe(0.0, channels=["b"], wake=lambda: woken.append("b"))
    hub.publish(Event(data="x"), 1.0, channel="a")
    assert woken == ["a"]
    hub.close(2.0)
    assert sorted(woken) == ["a", "a", "b"]


def test_the_channel_log_stays_within_twice_the_window() -> None:
    window = ReplayWindow(max_events=10)
    hub = Hub(max_buffer=10_000, window=window, now=0.0)
    for number in range(1000):
        hub.publish(Event(data=str(number)), 1.0, channel=f"c{number % 3}")
    assert len(hub._channel_of) <= 128
    stream = hub.subscribe(2.0, channels=["c1"], last_event_id=window.priming(from_start=True).id)
    # The window kept events 990-999: the gap first, then c1's of those.
    replayed = [e.data for e in parsed_any(stream)]
    assert replayed[0] == '{"dropped": null}'
    assert replayed[1:] == [str(n) for n in range(990, 1000) if n % 3 == 1]


def parsed_any(stream: ServerStream) -> list[Event]:
    from sse_sansio import Connection

    return parsed(Connection, stream)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda hub: hub.publish(Event(data="x"), 1.0, channel=7), "channel must be a str"),
        (lambda hub: hub.subscribe(1.0, channels="abc"), "iterable of str"),
        (lambda hub: hub.subscribe(1.0, channels=[b"a"]), "a channel must be a str"),
        (lambda hub: hub.subscribe(1.0, may_read=True), "may_read must be callable"),
        (lambda hub: hub.subscribe(1.0, wake=1), "wake must be callable"),
    ],
)
def test_bad_channels_and_callbacks_are_type_errors(call: Any, message: str) -> None:
    hub = Hub(max_buffer=10, now=0.0)
    with pytest.raises(TypeError, match=message):
        call(hub)


# --- issue 41, item 4: hub replays -------------------------------------------------------


def test_a_conflating_hubs_long_replay_comes_conflated_in_one_frame(conn_cls: Any) -> None:
    window = ReplayWindow()
    hub = Hub(max_buffer=100, policy="conflate", window=window, now=0.0)
    start = window.priming(from_start=True).id
    for number in range(50):
        hub.publish(Event(type=f"t{number % 3}", data=f"{number:03}"), 1.0)
    hub.publish(Comment(text="c"), 1.0)
    stream = hub.subscribe(2.0, last_event_id=start)
    assert stream.state == "open"
    assert datas(conn_cls, stream) == ["047", "048", "049"]
    hub.close(3.0)
    after = hub.subscribe(4.0, last_event_id=start)
    assert after.state == "ended"
    assert datas(conn_cls, after) == ["047", "048", "049"]


def test_a_dropped_unknown_gap_keeps_the_merged_gap_unknown(conn_cls: Any) -> None:
    hub = Hub(max_buffer=60, policy="drop-oldest", window=ReplayWindow(), now=0.0)
    stream = hub.subscribe(0.0, last_event_id="not-an-id-of-this-window")
    for number in range(5):
        hub.publish(Event(data=f"{number:020}"), 1.0)
    events = parsed(conn_cls, stream)
    assert events[0].type == Hub.GAP_EVENT
    assert events[0].data == '{"dropped": null}'
    assert events[-1].data == f"{4:020}"


def test_subscribers_never_lists_a_slow_stream() -> None:
    hub = Hub(max_buffer=30, now=0.0)
    slow = hub.subscribe(0.0)
    fast = hub.subscribe(0.0)
    hub.publish(Event(data="x" * 20), 1.0)
    fast.data_to_send(1.0)
    hub.publish(Event(data="y" * 20), 1.0)
    assert slow.state == "slow"
    assert hub.subscribers == (fast,)


# --- the model -----------------------------------------------------------------------------

CHANNELS = ["a", "b", "s/1", "s/2", None]
SPECS: list[tuple[str, ...] | None] = [None, ("a",), ("s/*",), ("a", "s/1"), ("b", "s/?")]


class Model:
    """What each subscriber must have received, from the issue's rules alone."""

    def __init__(self) -> None:
        self.log: list[tuple[int, str | None]] = []  # (number, channel), every event
        self.rights: set[str | None] = set(CHANNELS)

    def reads(self, spec: tuple[str, ...] | None, channel: str | None) -> bool:
        if spec is None:
            return True
        return channel is not None and any(fnmatchcase(channel, p) for p in spec)

    def allowed(self, spec: tuple[str, ...] | None, channel: str | None) -> bool:
        return self.reads(spec, channel) and channel in self.rights


ops = st.lists(
    st.one_of(
        st.tuples(st.just("publish"), st.integers(0, len(CHANNELS) - 1)),
        st.tuples(st.just("subscribe"), st.integers(0, len(SPECS) - 1)),
        st.tuples(st.just("resume"), st.integers(0, 7)),
        st.tuples(st.just("revoke"), st.integers(0, len(CHANNELS) - 1)),
        st.tuples(st.just("grant"), st.integers(0, len(CHANNELS) - 1)),
    ),
    max_size=40,
)


@given(ops=ops)
# conn_cls is the same class for every example: nothing in it to reset.
@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_channels_and_may_read_match_the_model(conn_cls: Any, ops: list[Any]) -> None:
    model = Model()
    window = ReplayWindow()
    hub = Hub(max_buffer=1_000_000, window=window, now=0.0)

    def may_read(channel: str | None, item: Event | Comment) -> bool:
        return channel in model.rights

    # Each reader: its spec, its stream, the events it got, what the model expects.
    readers: list[tuple[tuple[str, ...] | None, ServerStream, list[Event], list[int]]] = []
    start = window.priming(from_start=True).id
    for op in ops:
        if op[0] == "publish":
            channel = CHANNELS[op[1]]
            number = len(model.log) + 1
            hub.publish(Event(data=str(number)), 1.0, channel=channel)
            model.log.append((number, channel))
            for spec, _, _, expected in readers:
                if model.allowed(spec, channel):
                    expected.append(number)
        elif op[0] == "subscribe":
            spec = SPECS[op[1]]
            readers.append((spec, hub.subscribe(1.0, channels=spec, may_read=may_read), [], []))
        elif op[0] == "resume" and readers:
            spec, stream, got, expected = readers[op[1] % len(readers)]
            got.extend(parsed(conn_cls, stream))
            hub.unsubscribe(stream)
            cursor = got[-1].id if got else start
            after = int(cursor.rsplit("-", 1)[1])
            again = hub.subscribe(1.0, channels=spec, may_read=may_read, last_event_id=cursor)
            expected[:] = [n for n in expected if n <= after]
            expected += [n for n, c in model.log if n > after and model.allowed(spec, c)]
            readers[op[1] % len(readers)] = (spec, again, got, expected)
        elif op[0] == "revoke":
            model.rights.discard(CHANNELS[op[1]])
        elif op[0] == "grant":
            model.rights.add(CHANNELS[op[1]])
    for _, stream, got, expected in readers:
        got.extend(parsed(conn_cls, stream))
        assert [int(e.data) for e in got] == expected


def conflation_key(item: Event | Comment) -> str | None:
    """Events whose data starts with "k" conflate by type; the others never do."""
    return item.type if isinstance(item, Event) and item.data.startswith("k") else None


def test_a_conflated_replay_keeps_every_item_without_a_key(conn_cls: Any) -> None:
    window = ReplayWindow()
    hub = Hub(max_buffer=1000, policy="conflate", window=window, now=0.0, key=conflation_key)
    start = window.priming(from_start=True).id
    for data in ["k1", "x1", "k2", "x2", "k3"]:
        hub.publish(Event(data=data), 1.0)
    stream = hub.subscribe(2.0, last_event_id=start)
    assert datas(conn_cls, stream) == ["x1", "x2", "k3"]


def test_a_may_read_that_raises_without_a_wake_still_cuts() -> None:
    def broken(channel: str | None, item: Event | Comment) -> bool:
        raise ValueError("no")

    hub = Hub(max_buffer=100, now=0.0)
    stream = hub.subscribe(0.0, may_read=broken)
    hub.publish(Event(data="x"), 1.0)
    assert stream.state == "cut"
    assert hub.subscribers == ()


def test_cut_subscribers_cuts_every_reader_and_the_hub_goes_on(conn_cls: Any) -> None:
    hub = Hub(max_buffer=1000, window=ReplayWindow(), now=0.0)
    woken: list[str] = []
    first = hub.subscribe(0.0, channels=["a"], wake=lambda: woken.append("a"))
    second = hub.subscribe(0.0)
    hub.publish(Event(data="1"), 1.0, channel="a")
    hub.cut_subscribers(2.0)
    assert (first.state, second.state) == ("cut", "cut")
    assert hub.subscribers == ()
    assert woken == ["a", "a"]
    assert datas(conn_cls, first) == ["1"]  # what was queued still goes out
    later = hub.subscribe(3.0, channels=["a"])
    hub.publish(Event(data="2"), 3.0, channel="a")
    assert datas(conn_cls, later) == ["2"]
