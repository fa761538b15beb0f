"""What a replay window must answer, worked out from first principles, for the property
tests of test_replay.py and test_replay_redis.py.

A run is a list of operations on one window: append an event, take a priming event,
or resume from an ID chosen by kind (one the window issued, one of another window, a
number not issued yet, or any text).  ``play()`` runs them and records what the window
said; ``expected()`` says what it should have said, from the events appended and the
limits alone: the window keeps the longest run of newest events within max_events and
max_bytes (an event's bytes: what serialize() writes for it, ID included).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from sse_sansio import Event, ReplayWindow, Resume, serialize

events = st.builds(
    Event,
    type=st.sampled_from(["message", "delta", "done"]),
    data=st.text(st.characters(codec="utf-8", exclude_characters="\r"), max_size=12),
    retry=st.none() | st.integers(0, 5000),
)
issued = st.tuples(st.just("issued"), st.integers(0, 10_000))
targets = st.one_of(
    issued,
    st.tuples(st.just("foreign"), st.integers(0, 10_000)),
    st.tuples(st.just("future"), st.integers(1, 3)),
    st.tuples(st.just("text"), st.text(max_size=30)),
)
appending = st.tuples(st.just("append"), events)
# Appends and resumes from issued IDs come more often than the rest: most runs then
# drop events, and most resumes ask about IDs the window knows.
operations = st.lists(
    st.one_of(
        appending,
        appending,
        appending,
        st.tuples(st.just("prime"), st.booleans()),
        st.tuples(st.just("resume"), issued),
        st.tuples(st.just("resume"), issued),
        st.tuples(st.just("resume"), targets),
    ),
    max_size=30,
)


@dataclass
class Played:
    """What happened: the events appended (as returned) and each resume, with the ID
    asked for and the number it names (None: not an ID this window issued)."""

    appended: list[Event]
    resumes: list[tuple[str, int | None, int, Resume]]  # id, number, events so far, answer


def number_of(event_id: str) -> int:
    return int(event_id.rsplit("-", 1)[1])


def play(window: ReplayWindow, foreign: ReplayWindow, ops: list[tuple[str, Any]]) -> Played:
    """Run ``ops`` on ``window``; ``foreign`` is another window, with IDs of its own."""
    issued = [window.priming(from_start=True).id]
    foreign_ids = [foreign.priming().id]
    played = Played([], [])
    for op, arg in ops:
        if op == "append":
            event = window.append(arg)
            played.appended.append(event)
            issued.append(event.id)
            foreign_ids.append(foreign.append(arg).id)
        elif op == "prime":
            issued.append(window.priming(from_start=arg).id)
        else:
            kind, value = arg
            number: int | None = None
            if kind == "issued":
                asked = issued[value % len(issued)]
                number = number_of(asked)
            elif kind == "foreign":
                asked = foreign_ids[value % len(foreign_ids)]
            elif kind == "future":
                token = issued[0].rsplit("-", 1)[0]
                asked = f"{token}-{len(played.appended) + value}"
            else:
                asked = value
                if asked in issued:
                    number = number_of(asked)
            resume = window.resume(asked)
            played.resumes.append((asked, number, len(played.appended), resume))
    return played


def kept(appended: list[Event], max_events: int | None, max_bytes: int | None) -> list[Event]:
    """The newest events that fit both limits."""
    out: list[Event] = []
    size = 0
    for event in reversed(appended):
        size += len(serialize(event))
        if (max_events is not None and len(out) + 1 > max_events) or (
            max_bytes is not None and size > max_bytes
        ):
            break
        out.append(event)
    return out[::-1]


def expected(
    played: Played, max_events: int | None, max_bytes: int | None
) -> list[tuple[str, list[Event]]]:
    """The verdict and events each resume should have given."""
    answers: list[tuple[str, list[Event]]] = []
    for _, number, count, _ in played.resumes:
        if number is None:
            answers.append(("unknown", []))
            continue
        so_far = played.appended[:count]
        now_kept = kept(so_far, max_events, max_bytes)
        after = [event for event in so_far if number_of(event.id) > number]
        missing = [event for event in after if event not in now_kept]
        answers.append(("gap" if missing else "continue", [e for e in after if e in now_kept]))
    return answers
