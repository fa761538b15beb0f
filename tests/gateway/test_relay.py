"""sse_sansio.Relay (issue 33, item 4) over synthetic async byte iterators, on both cores.

Each upstream is an async generator written here; the LLM streams are the hand-written
ones of tests/helpers/llm_streams.py, so expected usage figures are a person's.  Clocks:
a test that needs the watchdog to fire either steps a fake clock from inside its
upstream, or uses tiny real clocks and asserts only what happened, never how long.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from sse_sansio import (
    Comment,
    Event,
    LocalProtocolError,
    Relay,
    StreamCut,
    Verdict,
    Watchdog,
    serialize,
)
from sse_sansio.llm import Usage
from tests.helpers.llm_streams import ANTHROPIC, OPENAI_CHAT, data

pytestmark = pytest.mark.usefixtures("conn_cls")  # the relay parses on the chosen core

GUARD = 30.0  # seconds: a failure guard only
DELTA = data({"choices": [{"index": 0, "delta": {"content": "Hel"}, "finish_reason": None}]})
DONE = b"data: [DONE]\n\n"


class Upstream:
    """An upstream body: ``parts`` (bytes, or a callable run at that point), then its
    end, or ``then`` (an exception to raise, or "hang": wait until cancelled)."""

    def __init__(self, *parts: bytes | Callable[[], Any], then: object = None) -> None:
        self.parts = parts
        self.then = then
        self.cancelled = False
        self.hanging = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            for part in self.parts:
                if isinstance(part, bytes):
                    yield part
                else:
                    await _maybe(part())
            if isinstance(self.then, BaseException):
                raise self.then
            if self.then == "hang":
                self.hanging = True
                await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise


async def _maybe(value: Any) -> None:
    if isinstance(value, Awaitable):
        await value


def run(relay: Relay) -> tuple[list[Event | Comment], BaseException | None]:
    """Everything the relay yields, and what it raised (None: a clean end)."""
    items: list[Event | Comment] = []

    async def main() -> None:
        async for item in relay:
            items.append(item)

    try:
        asyncio.run(asyncio.wait_for(main(), GUARD))
    except BaseException as exc:
        return items, exc
    return items, None


class FakeClock:
    """A clock that moves only when told to."""

    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t

    def step(self, seconds: float) -> Callable[[], None]:
        def move() -> None:
            self.t += seconds

        return move


def test_a_whole_answer_is_relayed_in_order_and_judged_with_its_usage() -> None:
    dog = Watchdog(first_byte=60, idle=60, progress=60, now=time.monotonic())
    first, rest = OPENAI_CHAT[0], b"".join(OPENAI_CHAT[1:])
    body = first + rest
    # Chunks split inside lines, a comment between two events: the items come out
    # whole, in order.
    parts = (first[:7], first[7:], b": keep\n", rest[:13], rest[13:])
    relay = Relay(Upstream(*parts), dialect="openai-chat", watchdog=dog)
    items, error = run(relay)
    assert error is None
    assert isinstance(items[0], Event)
    assert items[1] == Comment(text="keep")
    assert b"".join(serialize(item) for item in [items[0], *items[2:]]) == body
    assert relay.outcome is not None
    assert relay.outcome.outcome == "completed"
    assert relay.outcome.usage == Usage(9, 12, 4, 2, "reported")
    assert relay.verdict == Verdict("ok", None)  # the end of the stream stops the clocks


def test_without_dialect_or_watchdog_it_is_a_plain_parser() -> None:
    relay = Relay(Upstream(b"data: a\n\n", b"", b": c\n", b"data: b\n\n"))
    items, error = run(relay)
    assert error is None
    assert items == [Event(data="a"), Comment(text="c"), Event(data="b")]
    assert relay.outcome is None
    assert relay.verdict is None


def test_a_clean_end_before_the_terminal_event_is_a_cut_with_a_dialect_only() -> None:
    relay = Relay(Upstream(DELTA), dialect="openai-chat")
    items, error = run(relay)
    assert len(items) == 1
    assert isinstance(error, StreamCut)
    assert "[DONE]" in str(error)
    assert relay.outcome is not None
    assert relay.outcome.cut == "before-terminal"
    plain = Relay(Upstream(DELTA))
    assert run(plain)[1] is None


def test_an_end_inside_an_event_is_a_cut_after_every_complete_item() -> None:
    relay = Relay(Upstream(DELTA, b'data: {"choi'), dialect="openai-chat")
    items, error = run(relay)
    assert items == [Event(data=DELTA[6:-2].decode())]
    assert isinstance(error, StreamCut)
    assert "middle of an event" in str(error)
    assert relay.outcome is not None
    assert (relay.outcome.outcome, relay.outcome.cut) == ("cut", "mid-event")


def test_an_end_inside_an_event_is_a_cut_without_a_dialect_too() -> None:
    items, error = run(Relay(Upstream(b"data: a\n\ndata: b")))
    assert items == [Event(data="a")]
    assert isinstance(error, StreamCut)


def test_a_read_error_is_a_cut_carrying_its_cause() -> None:
    reset = ConnectionResetError("reset by peer")
    relay = Relay(Upstream(DELTA, then=reset), dialect="openai-chat")
    items, error = run(relay)
    assert items == [Event(data=DELTA[6:-2].decode())]
    assert isinstance(error, StreamCut)
    assert error.__cause__ is reset
    assert relay.outcome is not None
    assert relay.outcome.outcome == "cut"


def test_a_read_error_after_the_terminal_event_is_still_a_cut_but_the_answer_completed() -> None:
    relay = Relay(Upstream(*OPENAI_CHAT, then=OSError("late")), dialect="openai-chat")
    _, error = run(relay)
    assert isinstance(error, StreamCut)
    assert relay.outcome is not None
    assert relay.outcome.outcome == "completed"


def test_what_is_not_an_exception_goes_on_up_and_the_read_is_retrieved() -> None:
    class Halt(BaseException):
        pass

    halt = Halt()
    items, error = run(Relay(Upstream(b"data: a\n\n", then=halt)))
    assert items == [Event(data="a")]
    assert error is halt


def test_an_upstream_that_cancels_itself_is_a_cut() -> None:
    """Issue 41, item 1: a read that ends cancelled, though the relay cancelled
    nothing, is the upstream's failure: a StreamCut, never a cancellation that would
    leave the response waiting for an end."""
    relay = Relay(Upstream(DELTA, then=asyncio.CancelledError()), dialect="openai-chat")
    items, error = run(relay)
    assert len(items) == 1
    assert isinstance(error, StreamCut)
    assert "cancelled" in str(error)
    assert relay.outcome is not None
    assert relay.outcome.outcome == "cut"


def test_a_cancellation_of_the_relays_consumer_goes_on_up() -> None:
    upstream = Upstream(DELTA, then="hang")
    relay = Relay(upstream, dialect="openai-chat")
    items: list[Event | Comment] = []

    async def main() -> None:
        async def consume() -> None:
            async for item in relay:
                items.append(item)

        task = asyncio.ensure_future(consume())
        while not upstream.hanging:
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(asyncio.wait_for(main(), GUARD))
    assert len(items) == 1
    assert upstream.cancelled  # the pending read was cancelled with it
    assert relay.outcome is not None
    assert relay.outcome.outcome == "cut"


@pytest.mark.parametrize(
    ("fault", "words"),
    [
        (b"data: \xc3\x28\n\n", "invalid UTF-8"),
        (b"data: " + b"x" * (16 * 1024 * 1024 + 1) + b"\n\n", "max_event_size"),
    ],
    ids=["not-utf-8", "oversized"],
)
def test_an_upstream_the_parser_refuses_is_a_cut_after_every_complete_item(
    fault: bytes, words: str
) -> None:
    """Issue 41, item 9: the parser's RemoteProtocolError reaches the consumer as a
    StreamCut (the adapters' cut), after the items before the fault, those of the
    same chunk included."""
    relay = Relay(Upstream(DELTA, DELTA + fault), dialect="openai-chat")
    items, error = run(relay)
    assert items == [Event(data=DELTA[6:-2].decode())] * 2
    assert isinstance(error, StreamCut)
    assert words in str(error)
    assert relay.outcome is not None
    assert relay.outcome.outcome == "cut"


def test_a_stall_behind_keepalives_ends_with_the_dialects_error_event() -> None:
    clock = FakeClock()
    dog = Watchdog(first_byte=5, idle=5, progress=3, now=clock())
    pings = [part for _ in range(10) for part in (clock.step(1.0), b": ping\n\n")]
    upstream = Upstream(DELTA, *pings, then="hang")
    relay = Relay(upstream, dialect="openai-chat", watchdog=dog, now=clock)
    items, error = run(relay)
    assert error is None  # the error event is a clean end of our own
    assert items[0] == Event(data=DELTA[6:-2].decode())
    assert Comment(text="ping") in items  # life passed on
    last = items[-1]
    assert isinstance(last, Event)
    assert json.loads(last.data)["error"]["message"].startswith("the gateway gave up")
    assert relay.verdict is not None
    assert relay.verdict.state == "stalled"
    assert relay.outcome is not None
    assert (relay.outcome.outcome, relay.outcome.cut) == ("cut", "gave-up")
    assert "the upstream made no progress" in relay.outcome.reason


def test_no_first_byte_ends_with_an_anthropic_error_event() -> None:
    dog = Watchdog(first_byte=0.05, now=time.monotonic())
    upstream = Upstream(then="hang")
    relay = Relay(upstream, dialect="anthropic", watchdog=dog)
    items, error = run(relay)
    assert error is None
    assert len(items) == 1
    event = items[0]
    assert isinstance(event, Event)
    assert event.type == "error"
    assert json.loads(event.data)["type"] == "error"
    assert relay.verdict is not None
    assert relay.verdict.state == "no-first-byte"
    assert upstream.cancelled


def test_auto_writes_the_error_event_of_the_dialect_it_detected() -> None:
    clock = FakeClock()
    dog = Watchdog(idle=2, now=clock())
    upstream = Upstream(DELTA, clock.step(5.0), b"", then="hang")  # b"": no byte
    items, error = run(Relay(upstream, dialect="auto", watchdog=dog, now=clock))
    assert error is None
    last = items[-1]
    assert isinstance(last, Event)
    assert last.type == "message"  # OpenAI's shape: data: {"error": {...}}, no event: line
    assert "error" in json.loads(last.data)


@pytest.mark.parametrize("dialect", [None, "auto"])
def test_a_verdict_without_an_error_event_to_write_is_passed_on_as_a_cut(
    dialect: str | None,
) -> None:
    clock = FakeClock()
    dog = Watchdog(idle=2, now=clock())
    upstream = Upstream(b": hello\n", clock.step(5.0), b"", then="hang")  # b"": no byte
    relay = Relay(upstream, dialect=dialect, watchdog=dog, now=clock)
    items, error = run(relay)
    assert items == [Comment(text="hello")]
    assert isinstance(error, StreamCut)
    assert "silent" in str(error)
    assert relay.verdict is not None
    assert relay.verdict.state == "idle"
    if dialect is not None:  # the tracker was told the gateway gave up
        assert relay.outcome is not None
        assert (relay.outcome.outcome, relay.outcome.cut) == ("cut", "gave-up")


def test_a_verdict_after_a_payload_that_broke_the_dialect_reports_the_payload() -> None:
    clock = FakeClock()
    dog = Watchdog(idle=2, now=clock())
    upstream = Upstream(b"data: not json\n\n", clock.step(5.0), b"", then="hang")
    relay = Relay(upstream, dialect="openai-chat", watchdog=dog, now=clock)
    items, error = run(relay)
    assert error is None  # the error event of ours ended it
    assert items[0] == Event(data="not json")
    assert relay.outcome is not None
    assert (relay.outcome.outcome, relay.outcome.error_type) == ("failed", "PayloadError")


def test_waking_up_for_the_watchdog_never_cancels_the_pending_read() -> None:
    gate = asyncio.Event()

    class Wakeful(Watchdog):
        """Asks to be checked again at once, five times, then lets the upstream speak."""

        checks = 0

        def check(self, now: float) -> Verdict:
            super().check(now)
            self.checks += 1
            if self.checks == 5:
                gate.set()
            return Verdict("ok", now + 0.001)

    dog = Wakeful(progress=60, now=time.monotonic())
    upstream = Upstream(gate.wait, b"data: late\n\n")
    relay = Relay(upstream, watchdog=dog)
    items, error = run(relay)
    assert error is None
    assert items == [Event(data="late")]  # the read that waited was the one that answered
    assert dog.checks >= 5
    assert not upstream.cancelled


def test_a_watchdog_with_no_clock_running_waits_for_the_read() -> None:
    relay = Relay(Upstream(b"data: x\n\n"), watchdog=Watchdog(now=time.monotonic()))
    items, error = run(relay)
    assert (items, error) == ([Event(data="x")], None)
    assert relay.verdict == Verdict("ok", None)


def test_a_consumer_that_leaves_has_the_read_cancelled_and_gets_an_outcome() -> None:
    upstream = Upstream(DELTA, then="hang")
    relay = Relay(upstream, dialect="openai-chat")

    async def main() -> None:
        async def consume() -> None:
            async for _ in relay:
                pass

        task = asyncio.ensure_future(consume())
        while not upstream.hanging:  # the first item is through, the next read pending
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(asyncio.wait_for(main(), GUARD))
    assert upstream.cancelled
    assert relay.outcome is not None
    assert relay.outcome.cut == "before-terminal"


def test_a_payload_that_breaks_the_dialect_is_passed_on_and_reported() -> None:
    relay = Relay(Upstream(b"data: not json\n\n", DONE), dialect="openai-chat")
    items, error = run(relay)
    assert error is None
    assert items[0] == Event(data="not json")
    assert relay.outcome is not None
    assert relay.outcome.outcome == "failed"
    assert relay.outcome.error_type == "PayloadError"
    assert relay.outcome.offset == 0


def test_reframe_repairs_into_the_dialects_shape_and_drops_the_diagnostics() -> None:
    start = b"".join(ANTHROPIC).split(b"\n\n")[0] + b"\n\n"  # named: event: message_start
    unnamed = b"\n".join(line for line in start.split(b"\n") if not line.startswith(b"event:"))
    raw_error = b'error: {"type": "overloaded_error", "message": "busy"}\n\n'
    relay = Relay(Upstream(unnamed, raw_error), dialect="anthropic", reframe=True)
    items, error = run(relay)
    assert all(isinstance(item, (Event, Comment)) for item in items)
    first, last = items[0], items[-1]
    assert isinstance(first, Event)
    assert first.type == "message_start"  # the event: line put back
    assert isinstance(last, Event)
    assert last.type == "error"
    assert json.loads(last.data)["error"]["message"] == "busy"
    assert relay.outcome is not None
    assert relay.outcome.outcome == "failed"
    assert error is None


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"dialect": "klingon"}, "unknown dialect"),
        ({"reframe": True}, "reframe=True needs"),
        ({"dialect": "auto", "reframe": True}, "reframe=True needs"),
    ],
)
def test_options_are_checked_when_the_relay_is_made(options: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Relay(Upstream(), **options)


def test_a_relay_is_iterated_once() -> None:
    relay = Relay(Upstream())
    aiter(relay)
    with pytest.raises(LocalProtocolError, match="iterated once"):
        aiter(relay)


# -- Relay.open: the response head under the first-byte clock (issue 42, item 3) --------


class Head:
    """A response head, as httpx's Response is one: a status and a body to iterate."""

    def __init__(self, status: int, upstream: Upstream) -> None:
        self.status, self.upstream = status, upstream


class Send:
    """The request: ``before`` runs first (a clock step), then the head, or ``then``
    (an exception to raise, "hang": wait until cancelled)."""

    def __init__(
        self, head: Head | None, before: Callable[[], None] | None = None, then: object = None
    ) -> None:
        self.head, self.before, self.then = head, before, then
        self.started = self.cancelled = False

    async def __call__(self) -> Head:
        self.started = True
        try:
            if self.before is not None:
                self.before()
            await asyncio.sleep(0)
            if isinstance(self.then, BaseException):
                raise self.then
            if self.then == "hang":
                await asyncio.Event().wait()
            assert self.head is not None
            return self.head
        except asyncio.CancelledError:
            self.cancelled = True
            raise


def body(head: Head) -> Upstream:
    return head.upstream


def opened(send: Send, **options: Any) -> tuple[Head | None, Relay]:
    async def main() -> tuple[Head | None, Relay]:
        return await Relay.open(send(), body, **options)

    return asyncio.run(asyncio.wait_for(main(), GUARD))


def test_open_returns_the_head_and_relays_its_body() -> None:
    finish = data({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    head = Head(200, Upstream(DELTA, finish, DONE))
    got, relay = opened(Send(head), dialect="openai-chat")
    assert got is head
    items, error = run(relay)
    assert error is None
    assert [item.data for item in items if isinstance(item, Event)][-1] == "[DONE]"
    assert len(items) == 3
    assert relay.outcome is not None
    assert relay.outcome.outcome == "completed"


def test_a_non_stream_head_is_the_callers_and_its_relay_is_never_read() -> None:
    upstream = Upstream(b'{"error": "rate limited"}')
    got, relay = opened(Send(Head(429, upstream)), dialect="openai-chat")
    assert got is not None
    assert got.status == 429  # passed on with its status by the caller
    assert relay.outcome is None  # not iterated, not judged


def test_a_head_that_never_comes_is_the_first_byte_verdict() -> None:
    """The first-byte clock covers the wait for the head: the request is cancelled,
    and the relay yields the dialect's error event."""
    clock = FakeClock()
    dog = Watchdog(first_byte=0.05, idle=60, progress=60, now=clock())
    send = Send(None, before=clock.step(1.0), then="hang")  # late, then never
    got, relay = opened(send, dialect="openai-chat", watchdog=dog, now=clock)
    assert got is None
    assert send.cancelled
    items, error = run(relay)
    assert error is None
    (event,) = items
    assert isinstance(event, Event)
    assert "no first byte" in json.loads(event.data)["error"]["message"]
    assert relay.verdict is not None
    assert relay.verdict.state == "no-first-byte"
    assert relay.outcome is not None
    assert (relay.outcome.outcome, relay.outcome.cut) == ("cut", "gave-up")


def test_a_head_that_never_comes_without_a_dialect_is_a_cut() -> None:
    clock = FakeClock()
    dog = Watchdog(first_byte=0.05, now=clock())
    got, relay = opened(Send(None, before=clock.step(1.0), then="hang"), watchdog=dog, now=clock)
    assert got is None
    items, error = run(relay)
    assert items == []
    assert isinstance(error, StreamCut)


def test_what_the_request_raises_goes_on_up() -> None:
    with pytest.raises(ConnectionRefusedError):
        opened(Send(None, then=ConnectionRefusedError()))


def test_a_request_that_cancels_itself_is_a_cut() -> None:
    with pytest.raises(StreamCut, match="cancelled"):
        opened(Send(None, then=asyncio.CancelledError()), dialect="openai-chat")


def test_cancelling_open_cancels_the_request() -> None:
    send = Send(None, then="hang")

    async def main() -> None:
        opening = Relay.open(send(), body)
        task = asyncio.ensure_future(opening)
        while not send.started:
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(asyncio.wait_for(main(), GUARD))
    assert send.cancelled
