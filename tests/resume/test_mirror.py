"""Issue 34, item 2, in one process: a MirrorStore keeps the events of a shared store
under the IDs that store gave them, so that a process's Hub, fed from the shared store's
tail, sends every event with the same ID as every other process and answers a resuming
client as the shared store itself would.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sse_sansio import Event, Hub, LocalProtocolError, ReplayWindow, Resume
from sse_sansio.stores import MirrorStore


def fed(source_events: list[Event], mirror: MirrorStore) -> ReplayWindow:
    window = ReplayWindow(store=mirror)
    for event in source_events:
        assert window.append(event) == event  # kept and sent under its own ID
    return window


@given(st.integers(1, 6), st.integers(0, 12), st.integers(0, 12))
def test_a_mirror_answers_every_id_as_the_shared_store_does(
    max_events: int, before: int, after: int
) -> None:
    # The follower starts after `before` events were appended (it reads what the
    # shared store still keeps, then every later event).
    source = ReplayWindow(max_events=max_events)
    early = [source.append(Event(data=f"early {n}")) for n in range(before)]
    kept = source.resume(f"{source.token}-0").events
    late = [source.append(Event(data=f"late {n}", retry=n or None)) for n in range(after)]
    mirror = MirrorStore(source.token, max_events=max_events)
    window = fed([*kept, *late], mirror)
    ids = [f"{source.token}-0", *(e.id for e in early + late), f"{source.token}-99", "x-1"]
    for last_event_id in ids:
        assert window.resume(last_event_id) == source.resume(last_event_id), last_event_id
    assert window.token == source.token
    assert mirror.resets == 0


def test_a_hole_empties_the_mirror_and_is_counted() -> None:
    source = ReplayWindow()
    sent = [source.append(Event(data=str(n))) for n in range(6)]
    mirror = MirrorStore(source.token)
    window = fed([sent[0], sent[1]], mirror)
    window.append(sent[4])  # 3 and 4 were never seen here
    assert mirror.resets == 1
    assert window.resume(sent[1].id) == Resume("gap", (sent[4],))
    assert window.resume(sent[3].id) == Resume("continue", (sent[4],))
    assert window.resume(sent[5].id) == Resume("unknown")  # not issued, as far as it knows


def test_a_new_token_starts_again_and_old_ids_are_unknown() -> None:
    old, new = ReplayWindow(), ReplayWindow()
    a = old.append(Event(data="a"))
    b, c = new.append(Event(data="b")), new.append(Event(data="c"))
    mirror = MirrorStore(old.token)
    window = fed([a], mirror)
    window.append(c)  # the stream was made again; its first event here is number 2
    assert mirror.resets == 1
    assert window.resume(a.id) == Resume("unknown")
    assert window.resume(b.id) == Resume("continue", (c,))
    assert window.token == new.token


@pytest.mark.parametrize("ident", ["", "no id", "abc-0", "abc-01"])
def test_a_mirror_refuses_an_event_without_a_store_id(ident: str) -> None:
    with pytest.raises(LocalProtocolError, match="with a store's ID"):
        MirrorStore("abc").append(Event(data="x", id=ident))


def test_a_mirror_refuses_an_event_not_after_the_newest() -> None:
    mirror = MirrorStore("abc")
    mirror.append(Event(data="x", id="abc-2"))
    for ident in ("abc-2", "abc-1"):
        with pytest.raises(LocalProtocolError, match="is not after abc-2"):
            mirror.append(Event(data="x", id=ident))


@pytest.mark.parametrize("token", ["", "a-b", "x" * 65, "é"])
def test_a_mirror_needs_a_token(token: str) -> None:
    with pytest.raises(ValueError, match="not a stream token"):
        MirrorStore(token)


def test_a_hub_over_a_mirror_sends_the_shared_ids_and_replays_them() -> None:
    source = ReplayWindow(max_events=3)
    hub = Hub(max_buffer=1 << 16, window=ReplayWindow(store=MirrorStore(source.token)), now=0.0)
    live = hub.subscribe(0.0)
    sent = [source.append(Event(data=str(n))) for n in range(4)]
    for event in sent:
        assert hub.publish(event, 1.0) == event.id
    body = live.data_to_send(1.0).decode()
    assert [line[4:] for line in body.splitlines() if line.startswith("id: ")] == [
        e.id for e in sent
    ]
    again = hub.subscribe(2.0, last_event_id=sent[1].id)
    assert again.data_to_send(2.0).decode().count("data: ") == 2  # events 2 and 3
