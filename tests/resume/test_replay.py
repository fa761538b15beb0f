"""ReplayWindow in memory: IDs, verdicts, priming, limits (tests/helpers/replay_model.py has the
model the properties compare with)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sse_sansio
from sse_sansio import (
    Event,
    LocalProtocolError,
    MemoryStore,
    ReplayWindow,
    Resume,
    StoreSnapshot,
    serialize,
)
from tests.helpers.replay_model import expected, operations, play

limits = st.integers(1, 4) | st.none()
byte_limits = st.integers(1, 200) | st.none()


@settings(max_examples=150)
@given(operations, limits, byte_limits)
def test_every_verdict_is_the_models(
    ops: list[tuple[str, Any]], max_events: int | None, max_bytes: int | None
) -> None:
    window = ReplayWindow(max_events=max_events, max_bytes=max_bytes)
    played = play(window, ReplayWindow(), ops)
    got = [(resume.verdict, list(resume.events)) for *_, resume in played.resumes]
    assert got == expected(played, max_events, max_bytes)


def test_ids_are_numbered_in_order_and_name_the_stream() -> None:
    window, other = ReplayWindow(), ReplayWindow()
    first = window.append(Event(data="a", id="mine"))  # the caller's id is replaced
    second = window.append(Event(type="delta", data="b", retry=10))
    token = first.id.rsplit("-", 1)[0]
    assert (first.id, second.id) == (f"{token}-1", f"{token}-2")
    assert second == Event(type="delta", data="b", id=f"{token}-2", retry=10)
    assert other.append(Event(data="a")).id != first.id
    assert serialize(second) == f"event: delta\ndata: b\nid: {token}-2\nretry: 10\n\n".encode()


def test_resume_continues_after_the_id_and_with_nothing_at_the_newest() -> None:
    window = ReplayWindow()
    sent = [window.append(Event(data=str(n))) for n in range(3)]
    assert window.resume(sent[0].id) == Resume("continue", tuple(sent[1:]))
    assert window.resume(sent[2].id) == Resume("continue")


def test_the_priming_event_names_the_newest_event_or_the_start() -> None:
    window = ReplayWindow(max_events=2)
    start = window.priming(retry=3000)
    assert (start.data, start.retry) == ("", 3000)
    sent = [window.append(Event(data=str(n))) for n in range(3)]
    primer = window.priming()
    assert (primer.id, primer.retry) == (sent[-1].id, None)
    assert serialize(primer) == f"data: \nid: {primer.id}\n\n".encode()
    assert window.priming(from_start=True).id == start.id
    # The first event was dropped: from the start is a gap, with what is still kept.
    assert window.resume(start.id) == Resume("gap", tuple(sent[1:]))
    window.append(Event(data="new"))
    assert window.resume(primer.id).verdict == "continue"


def test_an_event_over_max_bytes_alone_is_numbered_and_dropped() -> None:
    window = ReplayWindow(max_bytes=40)
    small = window.append(Event(data="x"))
    big = window.append(Event(data="y" * 100))
    assert window.resume(small.id) == Resume("gap")
    assert window.resume(big.id) == Resume("continue")
    assert window.priming().id == big.id
    assert window.store.read(0) == StoreSnapshot(small.id.rsplit("-", 1)[0], 3, 2)


@pytest.mark.parametrize(
    "last_event_id",
    [
        "",
        "x",
        "-1",
        "abc-",
        "abc-01",
        "abc-1-2",
        "abc-+1",
        "a" * 65 + "-1",
        "abc-" + "9" * 19,  # above 2**63 - 1
        "abc-1" + " " * 10**6,  # an absurd header is not even read
        "é-1",
    ],
)
def test_malformed_ids_are_unknown(last_event_id: str) -> None:
    window = ReplayWindow()
    window.append(Event(data="a"))
    assert window.resume(last_event_id) == Resume("unknown")


def test_a_missing_header_passed_as_none_is_unknown() -> None:
    assert ReplayWindow().resume(None) == Resume("unknown")  # type: ignore[arg-type]


def test_an_id_number_not_issued_yet_is_unknown_even_later() -> None:
    window = ReplayWindow()
    token = window.priming().id.rsplit("-", 1)[0]
    assert window.resume(f"{token}-1") == Resume("unknown")
    assert window.resume(f"{token}-0") == Resume("continue")


def test_append_takes_only_an_event() -> None:
    with pytest.raises(LocalProtocolError, match="append\\(\\) takes an Event, not Comment"):
        ReplayWindow().append(sse_sansio.Comment(text="x"))  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [0, -1, True, 2.0, "3"])
@pytest.mark.parametrize("name", ["max_events", "max_bytes"])
def test_limits_must_be_positive_ints(name: str, bad: object) -> None:
    with pytest.raises(ValueError, match=f"{name} must be a positive int or None"):
        ReplayWindow(**{name: bad})  # type: ignore[arg-type]


def test_limits_belong_to_the_store_when_there_is_one() -> None:
    store = MemoryStore(max_events=2)
    window = ReplayWindow(store=store)
    assert window.store is store
    with pytest.raises(LocalProtocolError, match="pass max_events and max_bytes to the store"):
        ReplayWindow(max_events=2, store=store)


@pytest.mark.slow
def test_import_sse_sansio_does_not_import_redis() -> None:
    import subprocess
    import sys

    from tests.helpers.examples import subprocess_env

    code = "import sys, sse_sansio, sse_sansio.stores; assert 'redis' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, env=subprocess_env())


class _BadStore(MemoryStore):
    """A store whose append() breaks the contract in the way given."""

    def __init__(self, appended: tuple[Any, Any]) -> None:
        super().__init__()
        self.appended = appended

    def append(self, event: Event) -> tuple[str, int]:
        super().append(event)
        return self.appended


@pytest.mark.parametrize(
    "appended", [("", 1), ("a-b", 1), ("é", 1), ("a" * 65, 1), ("t", 0), ("t", "1"), ("t", 2**63)]
)
def test_a_store_that_returns_an_id_the_window_cannot_read_back_is_refused(
    appended: tuple[Any, Any],
) -> None:
    window = ReplayWindow(store=_BadStore(appended))
    with pytest.raises(LocalProtocolError, match="the store returned a bad token or number"):
        window.append(Event(data="x"))
    assert ReplayWindow(store=_BadStore(("t_1", 1))).append(Event()).id == "t_1-1"
