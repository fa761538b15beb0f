"""The planner against hostile numbers, clocks and IDs (issue 26): no overflow, no busy
loop, no header a client refuses, no silent acceptance of a broken clock."""

from __future__ import annotations

from typing import Any

import h11
import httpx
import pytest

from sse_sansio import (
    AttemptEnd,
    Connection,
    Reconnect,
    ReconnectPlanner,
    Stop,
    TruncatedStreamError,
)

pytestmark = pytest.mark.usefixtures("conn_cls")  # both cores: tests/conftest.py


def reconnect(decision: Reconnect | Stop) -> Reconnect:
    assert isinstance(decision, Reconnect), decision
    return decision


def feed(plan: ReconnectPlanner, stream: bytes) -> BaseException | None:
    try:
        list(plan.events([stream]))
    except TruncatedStreamError as exc:
        return exc
    return None


# ---- backoff: no overflow, a positive floor, clamps ---------------------------------------------


def test_a_night_long_outage_never_overflows() -> None:
    plan = ReconnectPlanner()  # the defaults: no attempt limit
    plan.start(now=0)
    delays = [
        reconnect(plan.ended(ConnectionRefusedError(), now=float(t))).delay for t in range(1100)
    ]
    assert plan.failures == 1100
    assert all(3.0 <= delay <= 30.0 for delay in delays)
    assert max(delays[-50:]) > 15  # still backing off near the cap, not reset


def test_a_retry_of_401_digits_clamps_to_max_retry() -> None:
    plan = ReconnectPlanner(jitter=0)
    plan.start(now=0)
    feed(plan, b"retry: 1" + b"0" * 400 + b"\ndata: a\n\n")
    assert reconnect(plan.ended(None, now=1)).delay == 60.0
    assert plan.retry == 10**400
    assert plan.reconnection_time == 60.0


@pytest.mark.parametrize(
    ("options", "stream"),
    [({}, b"retry: 0\ndata: a\n\n"), ({"initial_delay": 0}, b"data: a\n\n")],
    ids=["retry: 0", "initial_delay=0"],
)
def test_a_zero_reconnection_time_still_backs_off_after_failures(
    options: dict[str, Any], stream: bytes
) -> None:
    plan = ReconnectPlanner(**options)
    plan.start(now=0)
    feed(plan, stream)
    delays = [reconnect(plan.ended(ConnectionRefusedError(), now=t)).delay for t in range(6)]
    assert plan.reconnection_time == 0
    assert delays[0] == 0  # after a healthy stream: the server's retry, as the spec says
    assert all(delay > 0 for delay in delays[1:])  # then no busy loop
    assert sum(delays) > 1


def test_backoff_grows_from_the_floor_without_jitter() -> None:
    plan = ReconnectPlanner(initial_delay=0, jitter=0, max_delay=1)
    plan.start(now=0)
    delays = [reconnect(plan.ended(AttemptEnd.NETWORK_ERROR, now=t)).delay for t in range(8)]
    assert delays[0] == 0
    assert delays[1:] == sorted(delays[1:])
    assert delays[1] < delays[2] < delays[3]
    assert delays[-1] == 1  # the cap


def test_huge_settings_clamp_instead_of_overflowing() -> None:
    plan = ReconnectPlanner(initial_delay=1e300, max_delay=1e308, backoff=1e300, jitter=0)
    plan.start(now=0)
    delays = [reconnect(plan.ended(AttemptEnd.NETWORK_ERROR, now=t)).delay for t in range(3)]
    assert delays == [1e300, 1e308, 1e308]


# ---- clocks ----------------------------------------------------------------------------------


@pytest.mark.parametrize("now", [10**400, float("inf"), float("-inf"), float("nan")])
def test_a_broken_clock_is_a_clear_value_error(now: float) -> None:
    with pytest.raises(ValueError, match="now must be a finite time"):
        ReconnectPlanner().start(now)
    plan = ReconnectPlanner()
    plan.start(0)
    with pytest.raises(ValueError, match="now must be a finite time"):
        plan.ended(None, now=now)


def test_a_restart_while_waiting_connects_at_once_and_keeps_the_failures() -> None:
    plan = ReconnectPlanner(initial_delay=1, jitter=0)
    plan.start(now=0)
    plan.ended(AttemptEnd.CONNECT_ERROR, now=0)
    waiting = reconnect(plan.ended(AttemptEnd.CONNECT_ERROR, now=1))
    assert (waiting.delay, waiting.attempt) == (2, 3)
    now = reconnect(plan.ended(AttemptEnd.RESTART, now=1.5))
    assert (now.delay, now.at, now.attempt) == (0, 1.5, 3)
    assert reconnect(plan.ended(AttemptEnd.CONNECT_ERROR, now=2)).delay == 4


# ---- the Last-Event-ID header ----------------------------------------------------------------


def _sendable_by_clients(headers: dict[str, str]) -> None:
    """Raises as the documented clients would on sending these headers."""
    httpx.Request("GET", "http://127.0.0.1/", headers=headers)
    pairs = [("Host", "127.0.0.1"), *headers.items()]
    h11.Connection(h11.CLIENT).send(h11.Request(method="GET", target="/", headers=pairs))


@pytest.mark.parametrize("event_id", ["café", "42 ", " 42", "\x0b", "a\tb", "\x7f", "日本"])
def test_an_id_no_client_can_send_is_left_out_and_said(event_id: str) -> None:
    plan = ReconnectPlanner(initial_delay=0)
    plan.start(now=0)
    feed(plan, f"id: {event_id}\ndata: x\n\n".encode())
    step = reconnect(plan.ended(None, now=1))
    assert plan.last_event_id == event_id  # kept: the stream set it
    assert "Last-Event-ID" not in step.headers
    assert f"the last event ID {event_id!r}" in step.reason
    assert "not sent" in step.reason
    _sendable_by_clients(step.headers)


@pytest.mark.parametrize("event_id", ["42", "a b", '{"k":1}', "~!"])
def test_an_id_clients_can_send_is_sent(event_id: str) -> None:
    plan = ReconnectPlanner(initial_delay=0)
    plan.start(now=0)
    feed(plan, f"id: {event_id}\ndata: x\n\n".encode())
    step = reconnect(plan.ended(None, now=1))
    assert step.headers["Last-Event-ID"] == event_id
    assert "not sent" not in step.reason
    _sendable_by_clients(step.headers)


def test_an_unsendable_id_never_loops_the_same_failure() -> None:
    # The request goes out without the header and the server restarts the stream: the
    # next attempt delivers events, so the run of failures does not grow.
    plan = ReconnectPlanner(initial_delay=0)
    plan.start(now=0)
    for t in range(3):
        feed(plan, b"id: 42 \ndata: x\n\n")
        step = reconnect(plan.ended(None, now=t))
        _sendable_by_clients(step.headers)
        assert step.attempt == 2


# ---- a str subclass cannot smuggle CR or LF --------------------------------------------------


class Sneaky(str):
    def __contains__(self, item: object) -> bool:
        return False


@pytest.mark.parametrize("event_id", ["a\nb", "a\rb", "a\0b"])
def test_a_str_subclass_cannot_hide_cr_lf_or_nul(event_id: str) -> None:
    with pytest.raises(ValueError, match="may not contain"):
        Connection(last_event_id=Sneaky(event_id))
    with pytest.raises(ValueError, match="may not contain"):
        ReconnectPlanner(last_event_id=Sneaky(event_id))


def test_a_str_subclass_id_is_kept_as_an_exact_str() -> None:
    plan = ReconnectPlanner(last_event_id=Sneaky("7"))
    assert type(plan.last_event_id) is str
    assert type(reconnect(plan.start(0)).headers["Last-Event-ID"]) is str


def test_a_last_event_id_that_is_no_str_is_refused() -> None:
    with pytest.raises(TypeError, match="last_event_id must be str"):
        ReconnectPlanner(last_event_id=7)  # type: ignore[arg-type]
