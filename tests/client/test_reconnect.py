"""The reconnection planner: the WHATWG rules, backoff, the two modes, and its invariants.

Times are plain numbers on a fake clock; jitter comes from a seeded random.Random or
from a stub that always answers the same, so that every delay can be worked out by hand.
"""

from __future__ import annotations

import asyncio
import random
import socket
from collections.abc import AsyncIterator, Iterable
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from sse_sansio import (
    NEED_DATA,
    AttemptEnd,
    Comment,
    Connection,
    EndOfStream,
    Event,
    LocalProtocolError,
    Reconnect,
    ReconnectPlanner,
    RemoteProtocolError,
    ResponseError,
    Stop,
    StopCause,
    TruncatedStreamError,
    check_response,
)

pytestmark = pytest.mark.usefixtures("conn_cls")  # both cores: tests/conftest.py

SSE = {"Content-Type": "text/event-stream"}
CUT = TruncatedStreamError(EndOfStream(partial_line=3, partial_event=True), offset=10)
TOO_BIG = RemoteProtocolError("event exceeds max_event_size=8 bytes at byte offset 9", offset=9)


class Fixed:
    """A random source that always answers ``value``."""

    def __init__(self, value: float) -> None:
        self.value = value

    def random(self) -> float:
        return self.value


def reconnect(decision: Reconnect | Stop) -> Reconnect:
    assert isinstance(decision, Reconnect), decision
    return decision


def stop(decision: Reconnect | Stop) -> Stop:
    assert isinstance(decision, Stop), decision
    return decision


def run_attempt(plan: ReconnectPlanner, body: bytes, status: int = 200) -> BaseException | None:
    """Feed one response through plan.events(); return the exception that ended it."""
    try:
        for _ in plan.events([body], status, SSE):
            pass
    except (RemoteProtocolError, ResponseError) as exc:
        return exc
    return None


# ---- the first attempt and its headers ------------------------------------------------------


def test_the_first_attempt_is_at_once_with_the_standard_headers() -> None:
    plan = ReconnectPlanner()
    first = reconnect(plan.start(now=100.0))
    assert (first.delay, first.at, first.attempt) == (0.0, 100.0, 1)
    # LaunchDarkly's "default method and headers": no Last-Event-ID yet.
    assert first.headers == {"Accept": "text/event-stream", "Cache-Control": "no-cache"}


def test_an_initial_last_event_id_is_sent_on_the_first_request() -> None:
    plan = ReconnectPlanner(last_event_id="abc")
    assert reconnect(plan.start(0)).headers["Last-Event-ID"] == "abc"
    assert plan.connection().last_event_id == "abc"


def test_headers_are_a_new_dict_each_time() -> None:
    plan = ReconnectPlanner()
    headers = plan.headers()
    headers["Authorization"] = "Bearer x"
    assert "Authorization" not in plan.headers()


def test_start_is_called_once_and_ended_only_after_it() -> None:
    plan = ReconnectPlanner()
    with pytest.raises(LocalProtocolError, match="before start"):
        plan.ended(now=0)
    plan.start(0)
    with pytest.raises(LocalProtocolError, match="already called"):
        plan.start(1)


# ---- Last-Event-ID across reconnections (LaunchDarkly's "reconnection" group) ----------------


def test_sends_the_id_of_the_last_received_event() -> None:
    plan = ReconnectPlanner(initial_delay=0)
    plan.start(0)
    assert run_attempt(plan, b"id: abc\ndata: Hello\n\n") is None
    again = reconnect(plan.ended(ConnectionResetError(), now=1))
    assert again.headers["Last-Event-ID"] == "abc"
    assert again.delay == 0


def test_sends_the_last_id_if_later_events_had_none() -> None:
    plan = ReconnectPlanner(initial_delay=0)
    plan.start(0)
    run_attempt(plan, b"id: abc\ndata: Hello\n\ndata: World\n\n")
    assert reconnect(plan.ended(None, now=1)).headers["Last-Event-ID"] == "abc"


def test_an_empty_id_clears_the_header() -> None:
    plan = ReconnectPlanner(initial_delay=0)
    plan.start(0)
    run_attempt(plan, b"id: abc\ndata: Hello\n\nid: \ndata: World\n\n")
    assert "Last-Event-ID" not in reconnect(plan.ended(None, now=1)).headers


def test_a_partial_event_does_not_move_the_id() -> None:
    plan = ReconnectPlanner(initial_delay=0)
    plan.start(0)
    error = run_attempt(plan, b"id: abc\ndata: Hello\n\nid: def\ndata: Goodbye")
    assert isinstance(error, TruncatedStreamError)
    again = reconnect(plan.ended(error, now=1))
    assert again.headers["Last-Event-ID"] == "abc"
    # The next attempt's connection resumes from it.
    assert list(plan.events([b"data: We meet again\n\n"])) == [
        Event(data="We meet again", id="abc")
    ]


def test_an_id_only_block_counts_through_the_connection() -> None:
    plan = ReconnectPlanner()
    plan.start(0)
    conn = Connection()
    conn.receive_data(b"id: 9\n\nretry: 250\n\n")
    assert conn.next_event() is NEED_DATA
    again = reconnect(plan.ended(AttemptEnd.CUT, now=1, connection=conn))
    assert again.headers["Last-Event-ID"] == "9"
    assert plan.retry == 250
    assert again.delay == 0.25


# ---- the reconnection time, backoff and jitter -----------------------------------------------


def test_backoff_doubles_up_to_the_cap_without_jitter() -> None:
    plan = ReconnectPlanner(initial_delay=1, max_delay=10, jitter=0)
    plan.start(0)
    delays = [reconnect(plan.ended(AttemptEnd.NETWORK_ERROR, now=t)).delay for t in range(7)]
    assert delays == [1, 2, 4, 8, 10, 10, 10]
    assert plan.failures == 7


def test_jitter_takes_a_part_of_what_exceeds_the_reconnection_time() -> None:
    plan = ReconnectPlanner(initial_delay=1, max_delay=10, jitter=0.5, random=Fixed(0.5))
    plan.start(0)
    delays = [reconnect(plan.ended(AttemptEnd.NETWORK_ERROR, now=t)).delay for t in range(5)]
    # grown = 1, 2, 4, 8, 10; minus (grown - 1) * 0.5 * 0.5
    assert delays == [1, 1.75, 3.25, 6.25, 7.75]


def test_a_seeded_source_gives_the_same_delays() -> None:
    def delays(seed: int) -> list[float]:
        plan = ReconnectPlanner(initial_delay=0.5, random=random.Random(seed))
        plan.start(0)
        return [reconnect(plan.ended(AttemptEnd.CUT, now=t)).delay for t in range(8)]

    assert delays(7) == delays(7)
    assert delays(7) != delays(8)


def test_the_server_retry_sets_the_reconnection_time() -> None:
    plan = ReconnectPlanner(initial_delay=5, jitter=0)
    plan.start(0)
    run_attempt(plan, b"retry: 1500\ndata: a\n\n")
    again = reconnect(plan.ended(None, now=2))
    assert again.delay == 1.5
    assert again.at == 3.5
    assert plan.reconnection_time == 1.5


def test_a_client_bound_on_retry() -> None:
    plan = ReconnectPlanner(max_retry=10, jitter=0)
    plan.start(0)
    run_attempt(plan, b"retry: 86400000\ndata: a\n\n")  # a day
    assert reconnect(plan.ended(None, now=1)).delay == 10


def test_a_retry_above_the_backoff_cap_is_still_honoured() -> None:
    plan = ReconnectPlanner(max_delay=2, max_retry=60, jitter=1, random=Fixed(0.99))
    plan.start(0)
    run_attempt(plan, b"retry: 5000\n\n")  # no event: the failures run on
    for t in range(4):
        assert reconnect(plan.ended(AttemptEnd.NETWORK_ERROR, now=t)).delay == 5


def test_retry_zero_reconnects_at_once() -> None:
    plan = ReconnectPlanner()
    plan.start(0)
    run_attempt(plan, b"retry: 0\ndata: a\n\n")
    assert reconnect(plan.ended(None, now=1)).delay == 0


# ---- resets -------------------------------------------------------------------------------------


def test_an_attempt_that_delivered_an_event_resets_the_backoff() -> None:
    plan = ReconnectPlanner(initial_delay=1, jitter=0)
    plan.start(0)
    for t in range(3):
        plan.ended(AttemptEnd.CONNECT_ERROR, now=t)
    assert plan.failures == 3
    run_attempt(plan, b"data: a\n\n")
    again = reconnect(plan.ended(CUT, now=10))
    assert (again.delay, again.attempt, plan.failures) == (1, 2, 1)


def test_comments_alone_do_not_reset_the_backoff() -> None:
    plan = ReconnectPlanner(initial_delay=1, jitter=0)
    plan.start(0)
    plan.ended(AttemptEnd.NETWORK_ERROR, now=0)
    run_attempt(plan, b": ping\n\n")
    assert reconnect(plan.ended(None, now=1)).delay == 2


def test_a_healthy_period_resets_the_backoff() -> None:
    plan = ReconnectPlanner(initial_delay=1, jitter=0, reset_after=60, reset_on_event=False)
    plan.start(0)
    plan.ended(AttemptEnd.NETWORK_ERROR, now=0)  # next attempt at 1
    assert plan.check(200, SSE).streams
    assert reconnect(plan.ended(AttemptEnd.CUT, now=60)).delay == 2  # 59 s: not yet
    assert plan.check(200, SSE).streams  # the attempt starts at 62
    assert reconnect(plan.ended(AttemptEnd.CUT, now=124)).delay == 1
    # An attempt whose response was refused never was healthy, however long it took.
    plan.check(503, SSE)
    assert reconnect(plan.ended(AttemptEnd.NETWORK_ERROR, now=1000)).delay == 2


def test_events_counted_by_the_caller() -> None:
    plan = ReconnectPlanner(initial_delay=1, jitter=0, reset_after=None)
    plan.start(0)
    plan.ended(AttemptEnd.NETWORK_ERROR, now=0)
    assert reconnect(plan.ended(None, now=1, events=0)).delay == 2
    assert reconnect(plan.ended(None, now=2, events=3)).delay == 1
    plan.received(Comment(text="ping"))
    assert reconnect(plan.ended(None, now=3)).delay == 2
    plan.received(Event(data="x"))
    assert reconnect(plan.ended(None, now=4)).delay == 1


def test_max_attempts_gives_up_after_a_run_of_failures() -> None:
    plan = ReconnectPlanner(max_attempts=3)
    plan.start(0)
    reconnect(plan.ended(AttemptEnd.NETWORK_ERROR, now=1))
    reconnect(plan.ended(AttemptEnd.NETWORK_ERROR, now=2))
    error = ConnectionResetError("reset by peer")
    gave_up = stop(plan.ended(error, now=3))
    assert gave_up.cause is StopCause.GAVE_UP
    assert gave_up.error is error
    assert gave_up.failed
    assert "3 attempts in a row failed or brought no event" in gave_up.reason
    assert "ConnectionResetError: reset by peer" in gave_up.reason


# ---- the WHATWG cases ---------------------------------------------------------------------------


def test_eventsource_mode_reconnects_after_a_clean_end_and_after_a_cut() -> None:
    plan = ReconnectPlanner()
    plan.start(0)
    assert isinstance(plan.ended(None, now=1), Reconnect)
    assert isinstance(plan.ended(AttemptEnd.CLEAN_END, now=2), Reconnect)
    assert isinstance(plan.ended(CUT, now=3), Reconnect)
    assert isinstance(plan.ended(OSError("network down"), now=4), Reconnect)
    assert plan.stopped is None


def test_204_stops_for_good() -> None:
    plan = ReconnectPlanner()
    plan.start(0)
    error = run_attempt(plan, b"", status=204)
    assert isinstance(error, ResponseError)
    halt = stop(plan.ended(error, now=1))
    assert halt.cause is StopCause.NO_CONTENT
    assert halt.error is None
    assert not halt.failed
    assert plan.ended(None, now=2) is halt


@pytest.mark.parametrize("status", [500, 404, 401, 302, 201])
def test_other_statuses_fail_the_connection(status: int) -> None:
    plan = ReconnectPlanner()
    plan.start(0)
    error = run_attempt(plan, b'{"error": "nope"}', status=status)
    assert isinstance(error, ResponseError)
    assert "a JSON error: 'nope'" in str(error)  # the body was read for the message
    refused = stop(plan.ended(error, now=1))
    assert refused.cause is StopCause.REFUSED
    assert refused.error is error
    assert refused.failed


def test_a_wrong_content_type_fails_the_connection() -> None:
    plan = ReconnectPlanner()
    plan.start(0)
    check = plan.check(200, {"Content-Type": "text/html"})
    refused = stop(plan.ended(check.error(b"<html>"), now=1))
    assert refused.cause is StopCause.REFUSED
    assert "an HTML page" in refused.reason


def test_chosen_statuses_are_retried_with_backoff() -> None:
    plan = ReconnectPlanner(retry_statuses={503}, initial_delay=1, jitter=0, max_attempts=2)
    plan.start(0)
    first = reconnect(plan.ended(check_response(503, {}).error(), now=0))
    assert first.delay == 1
    assert "status 503" in first.reason
    assert stop(plan.ended(check_response(503, {}).error(), now=1)).cause is StopCause.GAVE_UP


def test_a_protocol_error_stops_unless_the_id_moved() -> None:
    plan = ReconnectPlanner()
    plan.start(0)
    # The id moved during the attempt: the server resumes after it; worth one more try.
    error = run_attempt(plan, b"id: 1\ndata: ok\n\ndata: \xff\n\n")
    assert isinstance(error, RemoteProtocolError)
    assert reconnect(plan.ended(error, now=1)).headers["Last-Event-ID"] == "1"
    # The same bytes again, the id did not move: reconnecting would only repeat them.
    error = run_attempt(plan, b"data: \xff\n\n")
    halted = stop(plan.ended(error, now=2))
    assert halted.cause is StopCause.PROTOCOL_ERROR
    assert "would get the same bytes again" in halted.reason
    assert halted.error is error


def test_an_oversized_event_without_ids_stops_at_once() -> None:
    plan = ReconnectPlanner()
    plan.start(0)
    assert stop(plan.ended(TOO_BIG, now=1)).cause is StopCause.PROTOCOL_ERROR


def test_a_local_protocol_error_is_a_bug_that_stops() -> None:
    plan = ReconnectPlanner()
    plan.start(0)
    bug = LocalProtocolError("receive_data() called with data after end of stream")
    halted = stop(plan.ended(bug, now=1))
    assert halted.cause is StopCause.FAILED
    assert halted.error is bug


def test_a_restart_reconnects_at_once_without_counting_a_failure() -> None:
    plan = ReconnectPlanner(initial_delay=2)
    plan.start(0)
    plan.ended(AttemptEnd.NETWORK_ERROR, now=0)
    restart = reconnect(plan.ended(AttemptEnd.RESTART, now=5))
    assert (restart.delay, restart.at, plan.failures) == (0, 5, 1)


def test_close_stops_for_good() -> None:
    plan = ReconnectPlanner()
    plan.start(0)
    closed = plan.close()
    assert closed == Stop(StopCause.CLOSED, "closed by the caller")
    assert not closed.failed
    assert plan.close("again") is closed
    assert plan.ended(None, now=1) is closed
    assert plan.stopped is closed
    assert ReconnectPlanner().close() is not closed


def test_start_after_a_close_is_the_stop() -> None:
    plan = ReconnectPlanner()
    closed = plan.close("user left")
    assert plan.start(0) is closed


# ---- single-response mode -------------------------------------------------------------------


def test_single_mode_a_clean_end_is_done() -> None:
    plan = ReconnectPlanner(mode="single")
    plan.start(0)
    assert run_attempt(plan, b"data: answer\n\n") is None
    done = stop(plan.ended(None, now=1))
    assert done.cause is StopCause.COMPLETED
    assert not done.failed


@pytest.mark.parametrize(
    "how", [CUT, AttemptEnd.CUT, ConnectionResetError("reset"), TimeoutError("read timeout")]
)
def test_single_mode_never_replays_after_the_request_was_sent(how: Any) -> None:
    plan = ReconnectPlanner(mode="single")
    plan.start(0)
    failed = stop(plan.ended(how, now=1))
    assert failed.cause is StopCause.FAILED
    assert failed.failed
    assert "not repeated" in failed.reason


def test_single_mode_protocol_errors_stop_even_when_the_id_moved() -> None:
    plan = ReconnectPlanner(mode="single")
    plan.start(0)
    error = run_attempt(plan, b"id: 1\ndata: ok\n\ndata: \xff\n\n")
    assert stop(plan.ended(error, now=1)).cause is StopCause.PROTOCOL_ERROR


def refused_then_wrapped() -> Exception:
    try:
        try:
            raise ConnectionRefusedError(111, "Connection refused")
        except OSError as exc:
            raise RuntimeError("ConnectError: All connection attempts failed") from exc
    except RuntimeError as wrapped:
        return wrapped


@pytest.mark.parametrize(
    "how",
    [
        AttemptEnd.CONNECT_ERROR,
        ConnectionRefusedError(111, "Connection refused"),
        socket.gaierror(-2, "Name or service not known"),
        refused_then_wrapped(),  # as httpx.ConnectError wraps the OSError
    ],
)
def test_single_mode_retries_what_never_connected(how: Any) -> None:
    plan = ReconnectPlanner(mode="single", initial_delay=1, jitter=0)
    plan.start(0)
    assert reconnect(plan.ended(how, now=1)).delay == 1
    assert reconnect(plan.ended(how, now=2)).delay == 2
    assert stop(plan.ended(how, now=3)).cause is StopCause.GAVE_UP  # 3 attempts by default


def test_an_exception_chain_that_loops_is_a_network_error() -> None:
    first, second = OSError("a"), OSError("b")
    first.__context__, second.__context__ = second, first
    plan = ReconnectPlanner(mode="single")
    plan.start(0)
    assert stop(plan.ended(first, now=1)).cause is StopCause.FAILED


# ---- the async events() ---------------------------------------------------------------------


async def agen(chunks: Iterable[bytes]) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield chunk


def test_aevents_counts_and_checks() -> None:
    async def run() -> tuple[list[Any], BaseException | None]:
        plan = ReconnectPlanner(initial_delay=1, jitter=0)
        plan.start(0)
        plan.ended(AttemptEnd.NETWORK_ERROR, now=0)
        items = [item async for item in plan.aevents(agen([b"id: 4\ndata: a\n\n: c\n"]), 200, SSE)]
        again = reconnect(plan.ended(None, now=1))
        assert (again.delay, again.headers["Last-Event-ID"]) == (1, "4")
        try:
            async for _ in plan.aevents(agen([b"<html>", b"more"]), 200, {}):
                pass
        except ResponseError as exc:
            return items, exc
        return items, None

    items, error = asyncio.run(run())
    assert items == [Event(data="a", id="4"), Comment(text="c")]
    assert isinstance(error, ResponseError)
    assert error.body == b"<html>"  # only the first chunk was read


def test_events_without_a_response_to_check() -> None:
    plan = ReconnectPlanner()
    plan.start(0)
    assert list(plan.events([b"data: a\n\n"], errors="replace")) == [Event(data="a")]


def test_events_with_a_status_and_no_headers_fails_on_the_content_type() -> None:
    plan = ReconnectPlanner()
    plan.start(0)
    with pytest.raises(ResponseError, match="got none"):
        list(plan.events([b"data: a\n\n"], 200))

    async def run() -> None:
        async for _ in plan.aevents(agen([]), 200):
            pass

    with pytest.raises(ResponseError, match="the body is empty"):
        asyncio.run(run())


def test_aevents_without_a_response_to_check() -> None:
    async def run() -> list[Any]:
        plan = ReconnectPlanner()
        plan.start(0)
        return [item async for item in plan.aevents(agen([b"data: a\n\n"]))]

    assert asyncio.run(run()) == [Event(data="a")]


# ---- arguments ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"mode": "browser"}, "mode must be"),
        ({"initial_delay": -1}, "initial_delay must be"),
        ({"max_delay": float("inf")}, "max_delay must be"),
        ({"max_retry": "1"}, "max_retry must be"),
        ({"reset_after": float("nan")}, "reset_after must be"),
        ({"backoff": 0.5}, "backoff must be"),
        ({"backoff": True}, "backoff must be"),
        ({"jitter": 1.5}, "jitter must be"),
        ({"max_attempts": 0}, "max_attempts must be"),
        ({"max_attempts": True}, "max_attempts must be"),
        ({"max_attempts": 2.0}, "max_attempts must be"),
        ({"last_event_id": "a\nb"}, "last_event_id may not contain"),
    ],
)
def test_bad_arguments(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ReconnectPlanner(**options)


def test_now_must_be_a_number() -> None:
    plan = ReconnectPlanner()
    for now in ("1", None, True):
        with pytest.raises(TypeError, match="now must be a number"):
            plan.start(now)  # type: ignore[arg-type]


def test_ended_refuses_what_is_not_an_ending() -> None:
    plan = ReconnectPlanner()
    plan.start(0)
    with pytest.raises(TypeError, match="ended\\(\\) takes None"):
        plan.ended("cut", now=1)  # type: ignore[arg-type]


def test_no_reset_after_and_max_attempts_none() -> None:
    plan = ReconnectPlanner(reset_after=None, max_attempts=None, reset_on_event=False, jitter=0)
    plan.start(0)
    plan.check(200, SSE)
    for t in range(50):
        reconnect(plan.ended(AttemptEnd.NETWORK_ERROR, now=1000.0 * t))
    assert plan.failures == 50


# ---- properties ---------------------------------------------------------------------------------

ENDINGS = st.sampled_from(
    [
        None,
        *AttemptEnd,
        CUT,
        TOO_BIG,
        ConnectionResetError("reset"),
        ConnectionRefusedError("refused"),
        check_response(204, {}).error(),
        check_response(503, {}).error(),
        check_response(404, {}).error(),
        LocalProtocolError("bug"),
    ]
)
STEPS = st.lists(
    st.tuples(
        ENDINGS,
        st.floats(min_value=0, max_value=100),  # time passed
        st.integers(min_value=0, max_value=3),  # events delivered
        st.one_of(st.none(), st.integers(min_value=0, max_value=10**9)),  # retry seen
        st.sampled_from(["", "a", "b"]),  # last event id seen
        st.booleans(),  # whether the response was accepted
        st.booleans(),  # whether the caller closes
    ),
    max_size=40,
)
PLANNERS = st.fixed_dictionaries(
    {
        "mode": st.sampled_from(["eventsource", "single"]),
        "initial_delay": st.floats(min_value=0, max_value=10),
        "max_delay": st.floats(min_value=0, max_value=100),
        "max_retry": st.floats(min_value=0, max_value=100),
        "backoff": st.floats(min_value=1, max_value=10),
        "jitter": st.floats(min_value=0, max_value=1),
        "reset_after": st.one_of(st.none(), st.floats(min_value=0, max_value=100)),
        "reset_on_event": st.booleans(),
        "max_attempts": st.one_of(st.none(), st.integers(min_value=1, max_value=10)),
        "retry_statuses": st.sampled_from([(), (503,)]),
    }
)


@given(options=PLANNERS, steps=STEPS, seed=st.integers())
@example(  # found by hypothesis: 33001 ms clamped to max_retry * 1000 / 1000 rounded up
    options={
        "mode": "eventsource",
        "initial_delay": 0.0,
        "max_delay": 0.0,
        "max_retry": 33.0006434814909,
        "backoff": 1.0,
        "jitter": 0.0,
        "reset_after": None,
        "reset_on_event": False,
        "max_attempts": None,
        "retry_statuses": (),
    },
    steps=[(None, 0.0, 0, 33001, "", False, False)],
    seed=0,
)
def test_no_sequence_reconnects_after_a_stop_and_delays_stay_in_bounds(
    options: dict[str, Any], steps: list[Any], seed: int
) -> None:
    plan = ReconnectPlanner(**options, random=random.Random(seed))
    now = 0.0
    decision = plan.start(now)
    stopped: Stop | None = None
    for how, elapsed, events, retry, last_id, accepted, close in steps:
        now += elapsed
        conn = Connection()
        if retry is not None:
            conn.receive_data(f"retry: {retry}\n".encode())
        if last_id:
            conn.receive_data(f"id: {last_id}\n\n".encode())
        assert conn.next_event() is NEED_DATA  # these blocks dispatch no event
        if accepted:
            plan.check(200, SSE)
        if close:
            decision = plan.close()
        else:
            decision = plan.ended(how, now=now, connection=conn, events=events)
        if stopped is not None:
            assert decision is stopped  # once stopped, always the same Stop
            continue
        if isinstance(decision, Stop):
            stopped = decision
            assert plan.stopped is decision
            continue
        # A reconnect: a restart is at once; anything else waits the reconnection
        # time at least, and the backoff cap (or the reconnection time) at most.
        base = plan.reconnection_time
        assert base <= options["max_retry"] or plan.retry is None
        if how is AttemptEnd.RESTART:
            assert decision.delay == 0
        else:
            assert base <= decision.delay <= max(options["max_delay"], base)
        assert decision.at == now + decision.delay
        if options["max_attempts"] is not None:
            assert plan.failures < options["max_attempts"]
        if plan.last_event_id:
            assert decision.headers["Last-Event-ID"] == plan.last_event_id
        else:
            assert "Last-Event-ID" not in decision.headers
    if stopped is not None:
        assert plan.start(now) is stopped
