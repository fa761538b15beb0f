"""ServerStream, the sans-I/O sending side (issue 33, item 1): unit tests, and
Hypothesis runs against a small model written from the issue's rules, not the code:

- what data_to_send() hands out, keepalives left aside, is the serialized items in the
  order sent, cut only between whole frames;
- a keepalive comes only after ``keepalive`` seconds with nothing handed out
  (``first_byte`` before the first real frame), and never while frames are queued;
- coalesced frames wait at most ``coalesce_delay``, and go at once at
  ``coalesce_bytes``, with an urgent frame or a ``retry``, and at the end;
- past ``max_buffer`` the stream turns "slow" and holds nothing more.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sse_sansio import (
    Comment,
    Connection,
    Event,
    LocalProtocolError,
    ReplayWindow,
    ServerStream,
    StreamCut,
    serialize,
)

# --- the model -------------------------------------------------------------------------


@dataclass
class Model:
    """The rules, for one stream, with the frames' bytes written by hand where it
    matters (``data: x`` plus a blank line): serialize() has its own tests."""

    keepalive: float | None
    first_byte: float | None
    delay: float
    burst: int
    start: float
    held: list[tuple[bytes, float, bool]] = field(default_factory=list)  # frame, when, urgent
    written_at: float = 0.0
    real: bool = False
    ended: bool = False

    def __post_init__(self) -> None:
        self.written_at = self.start

    def send(self, frame: bytes, now: float, urgent: bool) -> None:
        self.held.append((frame, now, urgent))

    def due(self, now: float) -> bool:
        if not self.held:
            return False
        size = sum(len(frame) for frame, _, _ in self.held)
        oldest = self.held[0][1]
        return (
            self.ended
            or now >= oldest + self.delay
            or any(urgent for _, _, urgent in self.held)
            or (self.burst > 0 and size >= self.burst)
            or self.keepalive_due(now)
        )

    def keepalive_due(self, now: float) -> bool:
        if self.keepalive is None or self.ended:
            return False
        wait = self.first_byte if (not self.real and self.first_byte) else self.keepalive
        return now >= self.written_at + wait

    def pull(self, now: float) -> bytes:
        if self.due(now):
            out = b"".join(frame for frame, _, _ in self.held)
            self.held.clear()
            self.written_at, self.real = now, True
            return out
        if self.keepalive_due(now):
            self.written_at = now
            return b":\n"
        return b""


def frame_of(text: str) -> bytes:
    return b"data: " + text.encode() + b"\n\n"


steps = st.lists(
    st.tuples(
        st.sampled_from(["send", "urgent", "retry", "pull", "pull"]),
        st.sampled_from([0.0, 0.0, 0.01, 0.25, 0.5, 1.0, 3.0]),
        st.text(alphabet="ab", min_size=1, max_size=8),
    ),
    max_size=40,
)


@given(
    steps=steps,
    keepalive=st.sampled_from([None, 0.5, 2.0]),
    first_byte=st.sampled_from([None, 0.25]),
    delay=st.sampled_from([0.0, 0.3, 1.0]),
    burst=st.sampled_from([0, 12, 40]),
)
def test_the_stream_hands_out_what_the_model_says(
    steps: list[tuple[str, float, str]],
    keepalive: float | None,
    first_byte: float | None,
    delay: float,
    burst: int,
) -> None:
    if keepalive is None:
        first_byte = None
    stream = ServerStream(
        now=10.0,
        keepalive=keepalive,
        first_byte=first_byte,
        coalesce_bytes=burst,
        coalesce_delay=delay,
    )
    model = Model(keepalive, first_byte, delay, burst, start=10.0)
    now, out, sent = 10.0, [], []
    for action, dt, text in steps:
        now += dt
        if action == "pull":
            got = stream.data_to_send(now)
            assert got == model.pull(now)
            out.append(got)
            deadline = stream.deadline
            assert deadline is None or deadline > now  # nothing more due right now
            continue
        if action == "retry":  # an event with a retry field is urgent by itself
            stream.send(Event(data=text, retry=5), now)
            frame = b"data: " + text.encode() + b"\nretry: 5\n\n"
        else:
            stream.send(Event(data=text), now, urgent=action == "urgent")
            frame = frame_of(text)
        model.send(frame, now, action != "send")
        sent.append(frame)
        assert stream.buffered == sum(len(f) for f, _, _ in model.held)
    stream.end(now)
    model.ended = True
    last = stream.data_to_send(now)
    assert last == model.pull(now)
    out.append(last)
    assert stream.data_to_send(now + 100) == b""
    assert stream.deadline is None
    assert stream.state == "ended"
    # Keepalives aside, the bytes are the frames, in order, cut only between frames.
    real = b"".join(chunk for chunk in out if chunk != b":\n")
    assert real == b"".join(sent)


# --- keepalives ------------------------------------------------------------------------


def test_keepalives_come_after_the_silence_and_are_padded() -> None:
    stream = ServerStream(now=0, keepalive=15, first_byte=2, padding=8)
    assert stream.deadline == 2  # the first-byte wait
    assert stream.data_to_send(1.9) == b""
    assert stream.data_to_send(2) == b":      \n"  # 8 bytes
    assert stream.deadline == 4  # still before the first real frame
    stream.send(Event(data="x"), 3)
    assert stream.data_to_send(3) == b"data: x\n\n"
    assert stream.deadline == 18
    assert stream.data_to_send(17.9) == b""
    assert stream.data_to_send(18) == b":      \n"


def test_without_keepalive_nothing_is_ever_due_unasked() -> None:
    stream = ServerStream(now=0)
    assert stream.deadline is None
    assert stream.data_to_send(1e9) == b""


def test_queued_frames_go_instead_of_a_keepalive() -> None:
    stream = ServerStream(now=0, keepalive=1, coalesce_delay=5, coalesce_bytes=1000)
    stream.send(Comment(text="held"), 0.5)
    assert stream.deadline == 1  # the keepalive's time, before the frame's 5.5
    assert stream.data_to_send(1) == b": held\n"


# --- coalescing, urgency, the end --------------------------------------------------------


def test_coalesced_frames_wait_for_the_delay_or_the_size() -> None:
    stream = ServerStream(now=0, coalesce_delay=0.05, coalesce_bytes=20)
    stream.send(Event(data="a"), 0)
    stream.send(Event(data="b"), 0.01)
    assert stream.data_to_send(0.04) == b""
    assert stream.deadline == 0.05
    assert stream.data_to_send(0.05) == b"data: a\n\ndata: b\n\n"
    for text in "cde":  # 9 bytes each: the third passes 20
        stream.send(Event(data=text), 1)
    assert stream.deadline == 1
    assert stream.data_to_send(1) == b"data: c\n\ndata: d\n\ndata: e\n\n"


def test_urgent_frames_and_the_end_flush_at_once() -> None:
    stream = ServerStream(now=0, coalesce_delay=10, coalesce_bytes=4096)
    stream.send(Event(data="a"), 0)
    stream.send(Comment(text="now"), 1, urgent=True)
    assert stream.data_to_send(1) == b"data: a\n\n: now\n"
    stream.send(b"data: raw\n\n", 2)
    assert stream.data_to_send(2) == b""
    stream.end(3, cut=True)
    assert stream.state == "cut"
    assert stream.deadline == 3
    assert stream.data_to_send(3) == b"data: raw\n\n"
    assert stream.data_to_send(4) == b""
    with pytest.raises(LocalProtocolError, match="after end"):
        stream.send(Event(data="late"), 5)
    with pytest.raises(LocalProtocolError, match="twice"):
        stream.end(5)


# --- slow consumers -----------------------------------------------------------------------


def test_a_consumer_that_falls_behind_turns_the_stream_slow_and_memory_stays_bounded() -> None:
    window = ReplayWindow()
    stream = ServerStream(now=0, max_buffer=100, window=window, keepalive=1)
    big = Event(data="x" * 150)
    states = [stream.state]
    stream.send(big, 0)  # alone in an empty queue: never slow
    states.append(stream.state)
    assert stream.buffered > 100
    assert stream.data_to_send(0).startswith(b"data: xxx")
    ids = [stream.send(Event(data="y" * 30), 1) for _ in range(3)]  # 3 x ~60 bytes
    states.append(stream.state)
    assert states == ["open", "open", "slow"]
    assert stream.buffered == 0
    assert stream.deadline is None
    assert stream.data_to_send(100) == b""  # no keepalive for a dropped consumer
    # Still going into the window, for the client to resume from.
    later = stream.send(Event(data="z"), 101)
    assert stream.buffered == 0
    resumed = window.resume(ids[0] or "")
    assert [event.data for event in resumed.events] == ["y" * 30, "y" * 30, "z"]
    assert later == resumed.events[-1].id
    assert stream.send(Comment(text="dropped"), 102) is None
    stream.end(103)  # the producer's end changes nothing: the consumer is gone
    assert stream.state == "slow"


# --- the window -------------------------------------------------------------------------


def test_events_get_the_windows_ids_and_a_resume_replays_in_one_go() -> None:
    window = ReplayWindow()
    first = ServerStream(now=0, window=window)
    ids = [first.send(Event(data=text), 0) for text in "abc"]
    assert first.send(Comment(text="c"), 0) is None
    replayed = window.resume(window.priming(from_start=True).id or "").events
    assert ids == [event.id for event in replayed]
    second = ServerStream(now=0, window=window, max_buffer=1)
    resume = second.resume(ids[0] or "", 1)
    assert resume.verdict == "continue"
    assert not resume.finished
    assert second.state == "open"  # a replay bigger than max_buffer is not "slow"
    assert second.data_to_send(1) == b"".join(serialize(event) for event in resume.events)


def test_a_resume_after_the_producer_finished_replays_and_ends() -> None:
    window = ReplayWindow()
    producer = ServerStream(now=0, window=window)
    first = producer.send(Event(data="a"), 0)
    producer.send(Event(data="b"), 0)
    window.close(cut=True)
    client = ServerStream(now=0, window=window, keepalive=1)
    resume = client.resume(first or "", 1)
    assert resume.finished
    assert resume.cut
    assert client.state == "cut"
    out = client.data_to_send(1)
    connection = Connection()
    connection.receive_data(out)
    assert connection.next_event() == Event(data="b", id=resume.events[0].id)
    assert client.data_to_send(50) == b""  # no keepalive after the end
    # Resumed at the newest event: nothing to replay, the end at once.
    newest = ServerStream(now=0, window=window)
    assert newest.resume(resume.events[-1].id, 0).events == ()
    assert newest.state == "cut"
    assert newest.data_to_send(0) == b""
    with pytest.raises(LocalProtocolError, match="on a stream that is cut"):
        client.resume(first or "", 60)


def test_the_event_id_is_returned_without_a_window() -> None:
    stream = ServerStream(now=0)
    assert stream.send(Event(data="a", id="7"), 0) == "7"
    assert stream.send(Event(data="a"), 0) is None


def test_an_event_subclass_is_read_through_its_properties() -> None:
    # An exact Event's id and retry are read from its slots (issue 33, item 6); a
    # subclass's through its fields, which it may compute.
    class Tagged(Event):
        __slots__ = ()

        @property
        def id(self) -> str:  # type: ignore[override]
            return "tag-" + str(self[2])

    stream = ServerStream(now=0, coalesce_delay=5.0)
    assert stream.send(Tagged(data="a", id="1"), 0) == "tag-1"
    assert stream.data_to_send(0) == b""  # held: no retry, not urgent
    assert stream.send(Tagged(data="b", retry=10), 1) == "tag-"
    assert stream.data_to_send(1) == b"data: a\nid: 1\n\ndata: b\nretry: 10\n\n"


# --- refusals ------------------------------------------------------------------------------


def test_what_the_stream_refuses() -> None:
    with pytest.raises(LocalProtocolError, match="needs a window"):
        ServerStream(now=0).resume("x", 0)
    with pytest.raises(LocalProtocolError, match="bypass"):
        ServerStream(now=0, window=ReplayWindow()).send(b"data: x\n\n", 0)
    with pytest.raises(TypeError, match="takes an Event, a Comment or bytes"):
        ServerStream(now=0).send("data: x\n\n", 0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="whole frames"):
        ServerStream(now=0).send(b"data: x", 0)
    stream = ServerStream(now=5)
    with pytest.raises(ValueError, match="backwards"):
        stream.data_to_send(4)


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"keepalive": 0}, ValueError, "keepalive must be > 0"),
        ({"first_byte": 1.0}, ValueError, "set keepalive"),
        ({"padding": 4}, ValueError, "set keepalive"),
        ({"keepalive": 1, "first_byte": -1}, ValueError, "first_byte must be > 0"),
        ({"keepalive": 1, "padding": 70000}, ValueError, "padding"),
        ({"coalesce_delay": -1}, ValueError, "coalesce_delay"),
        ({"coalesce_bytes": -1}, ValueError, "coalesce_bytes must be >= 0"),
        ({"coalesce_bytes": 1.5}, TypeError, "coalesce_bytes must be an int"),
        ({"max_buffer": 0}, ValueError, "max_buffer must be >= 1"),
        ({"max_buffer": True}, TypeError, "max_buffer must be an int"),
    ],
)
def test_options_are_checked(options: dict[str, object], error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        ServerStream(now=0, **options)  # type: ignore[arg-type]


def test_stream_cut_is_a_protocol_error_with_a_default_message() -> None:
    from sse_sansio import ProtocolError

    assert issubclass(StreamCut, ProtocolError)
    assert not issubclass(StreamCut, OSError)
    assert str(StreamCut()) == "the stream was cut"
    assert str(StreamCut("upstream reset")) == "upstream reset"


# --- send()'s inline path writes what serialize() writes (issue 33, item 6) ------------


class _Str(str):
    """A str subclass whose tests could lie: never on the inline path."""

    def __contains__(self, item: object) -> bool:
        return False


_fields = st.sampled_from(["", "message", "x", "a\nb", "a\rb", "\0", "\ud800", _Str("m\ne")])
_data = st.one_of(st.text(alphabet="ab\r\n\0\ud800\u00e9", max_size=6), _fields)


@st.composite
def _any_event(draw: st.DrawFn) -> Event:
    """Events made by the constructor, and forged ones the constructor would refuse."""
    # Biased to the inline path's form (the default type, no ID, no retry).
    event_type = draw(st.one_of(st.just("message"), _fields))
    data, ident = draw(_data), draw(st.one_of(st.just(""), _fields))
    retry = draw(st.one_of(st.none(), st.integers(-1, 5)))
    if draw(st.booleans()):
        try:
            return Event(type=event_type, data=data, id=ident, retry=retry)
        except (TypeError, ValueError, LocalProtocolError):
            pass
    slots = draw(st.integers(0, 7))
    return tuple.__new__(Event, (event_type, data, ident, retry, -1, -1, None)[:slots])


def _outcome(call: object) -> object:
    try:
        return call()  # type: ignore[operator]
    except (TypeError, ValueError, LocalProtocolError, UnicodeError) as exc:
        return (type(exc).__name__, str(exc))


@given(event=_any_event())
@example(event=Event(data="a\ud800"))  # UTF-8 cannot encode it: serialize() words why
@example(event=tuple.__new__(Event, ("message", _Str("m\ne"), "", None, -1, -1, None)))
@example(event=tuple.__new__(Event, (_Str("message"), "x", _Str(""), None, -1, -1, None)))
@settings(max_examples=400)
def test_send_writes_what_serialize_writes_or_refuses_as_it_does(event: Event) -> None:
    stream = ServerStream(now=0.0)

    def sent() -> bytes:
        stream.send(event, 0.0)
        return stream.data_to_send(0.0)

    assert _outcome(sent) == _outcome(lambda: serialize(event))


@given(event=_any_event(), queued=st.booleans(), hold=st.sampled_from([0.0, 0.5]))
@example(event=Event(data="a\ud800"), queued=False, hold=0.0)
@example(
    event=tuple.__new__(Event, ("message", _Str("m\ne"), "", None, -1, -1, None)),
    queued=False,
    hold=0.0,
)
@settings(max_examples=400)
def test_send_now_is_send_then_data_to_send(event: Event, queued: bool, hold: float) -> None:
    # The pump's feeder hands an item out in one call (issue 40, item 8): the same
    # bytes, refusals and state as send() then data_to_send().
    fast, slow = (ServerStream(now=0.0, keepalive=5.0, coalesce_delay=hold) for _ in "ab")
    if queued:
        for stream in (fast, slow):
            stream.send(Event(data="before"), 0.0)

    def sent() -> bytes:
        slow.send(event, 1.0)
        return slow.data_to_send(1.0)

    assert _outcome(lambda: fast._send_now(event, 1.0)) == _outcome(sent)
    assert (fast.buffered, fast.deadline, fast.state) == (slow.buffered, slow.deadline, slow.state)
    assert fast.data_to_send(6.5) == slow.data_to_send(6.5)  # the keepalives alike
