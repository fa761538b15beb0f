"""The planner for clients such as MCP's (issue 36, items 1 to 3): resume_only=True
never reconnects blindly, last_event_id and retry are current during an attempt, and a
programming error stops the planner instead of being retried as a network error."""

from __future__ import annotations

import pytest

from sse_sansio import (
    AttemptEnd,
    Event,
    Reconnect,
    ReconnectPlanner,
    Stop,
    StopCause,
    TruncatedStreamError,
)

pytestmark = pytest.mark.usefixtures("conn_cls")  # both cores: tests/conftest.py


def attempt(plan: ReconnectPlanner, stream: bytes) -> BaseException | None:
    """Feed one attempt's body through plan.events(); the exception it ended with."""
    try:
        list(plan.events([stream]))
    except TruncatedStreamError as exc:
        return exc
    return None


def stop(decision: Reconnect | Stop) -> Stop:
    assert isinstance(decision, Stop), decision
    return decision


# ---- item 1: resume_only ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stream", "how"),
    [
        (b"data: answer\n\n", None),  # a clean end
        (b"data: answer\n\ndata: cut", "cut"),  # a cut mid-event
        (b"data: answer\n\n", ConnectionResetError()),  # a network error
        (b"id: 7\ndata: a\n\nid\ndata: b\n\n", None),  # an ID given, then taken back
    ],
)
def test_resume_only_stops_a_stream_without_an_event_id(stream: bytes, how: object) -> None:
    plan = ReconnectPlanner(resume_only=True)
    plan.start(now=0)
    cut = attempt(plan, stream)
    end = cut if how == "cut" else how
    decision = stop(plan.ended(end, now=1))  # type: ignore[arg-type]
    assert decision.cause is StopCause.NOT_RESUMABLE
    assert "no event ID" in decision.reason
    assert "resume_only=True" in decision.reason
    assert decision.error is end
    # A clean end that cannot resume is not a failure; a cut or an error is.
    assert decision.failed is (end is not None)
    assert plan.ended(None, now=2) is decision  # stopped for good


def test_resume_only_resumes_a_stream_that_gave_an_event_id() -> None:
    plan = ReconnectPlanner(resume_only=True)
    plan.start(now=0)
    cut = attempt(plan, b"id: 5\nretry: 2000\n\ndata: part\n\ndata: cu")
    decision = plan.ended(cut, now=1)
    assert isinstance(decision, Reconnect)
    assert decision.headers["Last-Event-ID"] == "5"
    assert decision.delay == 2.0


def test_resume_only_resumes_from_the_id_it_was_given() -> None:
    plan = ReconnectPlanner(resume_only=True, last_event_id="41")
    plan.start(now=0)
    attempt(plan, b"data: no id here\n\n")
    decision = plan.ended(None, now=1)
    assert isinstance(decision, Reconnect)
    assert decision.headers["Last-Event-ID"] == "41"


def test_resume_only_refuses_an_id_no_client_can_send() -> None:
    plan = ReconnectPlanner(resume_only=True)
    plan.start(now=0)
    attempt(plan, "id: café\ndata: a\n\n".encode())
    decision = stop(plan.ended(None, now=1))
    assert decision.cause is StopCause.NOT_RESUMABLE
    assert "'café' is not ASCII" in decision.reason


def test_resume_only_still_retries_a_request_never_sent() -> None:
    plan = ReconnectPlanner(resume_only=True)
    plan.start(now=0)
    assert isinstance(plan.ended(ConnectionRefusedError(), now=1), Reconnect)
    assert isinstance(plan.ended(AttemptEnd.RESTART, now=2), Reconnect)


def test_without_resume_only_a_stream_without_an_id_reconnects() -> None:
    plan = ReconnectPlanner()
    plan.start(now=0)
    attempt(plan, b"data: answer\n\n")
    assert isinstance(plan.ended(None, now=1), Reconnect)


# ---- item 2: current during the attempt ---------------------------------------------------------


def test_last_event_id_and_retry_are_current_while_events_yield() -> None:
    plan = ReconnectPlanner(last_event_id="0")
    plan.start(now=0)
    seen = []
    body = [b"id: 1\ndata: a\n\n", b"retry: 2500\nid: 2\ndata: b\n\n", b"data: c\n\n"]
    for event in plan.events(body):
        assert isinstance(event, Event)
        seen.append((event.data, plan.last_event_id, plan.retry, plan.headers()["Last-Event-ID"]))
    assert seen == [("a", "1", None, "1"), ("b", "2", 2500, "2"), ("c", "2", 2500, "2")]
    plan.ended(None, now=1)
    assert (plan.last_event_id, plan.retry) == ("2", 2500)


def test_a_retry_kept_from_an_earlier_attempt_stays_until_a_new_one() -> None:
    plan = ReconnectPlanner()
    plan.start(now=0)
    attempt(plan, b"retry: 700\nid: a\n\n")
    plan.ended(None, now=1)
    values = [plan.retry for _ in plan.events([b"data: x\n\n"])]
    assert values == [700]


def test_close_mid_attempt_keeps_what_the_attempt_learnt() -> None:
    plan = ReconnectPlanner()
    plan.start(now=0)
    items = plan.events([b"id: 9\nretry: 10\ndata: a\n\n", b"data: b\n\n"])
    next(items)
    plan.close()
    assert (plan.last_event_id, plan.retry) == ("9", 10)


# ---- item 3: programming errors -----------------------------------------------------------------


@pytest.mark.parametrize(
    "error",
    [
        TypeError("unsupported operand"),
        AttributeError("'NoneType' object has no attribute 'data'"),
        NameError("name 'hnadle' is not defined"),
        UnboundLocalError("cannot access local variable 'x'"),
        AssertionError("invariant"),
        ModuleNotFoundError("No module named 'orjson'"),
        NotImplementedError(),
        RecursionError("maximum recursion depth exceeded"),
    ],
)
def test_a_programming_error_stops_with_that_error(error: BaseException) -> None:
    plan = ReconnectPlanner()
    plan.start(now=0)
    decision = stop(plan.ended(error, now=1))
    assert decision.cause is StopCause.FAILED
    assert decision.error is error
    assert "programming error" in decision.reason
    assert type(error).__name__ in decision.reason
    assert decision.failed
    assert plan.failures == 0  # not counted as a failed attempt: nothing to back off


@pytest.mark.parametrize("error", [ConnectionResetError(), TimeoutError(), OSError("eof")])
def test_network_errors_are_still_retried(error: BaseException) -> None:
    plan = ReconnectPlanner()
    plan.start(now=0)
    assert isinstance(plan.ended(error, now=1), Reconnect)
