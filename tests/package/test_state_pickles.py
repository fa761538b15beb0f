"""Pickles of the public state machines (issue 32, item 4): kept, or refused.

A state machine worth keeping (tests/helpers/pickles.py, STATE_MACHINES) is driven
through a scenario of steps; at every cut between two steps it is pickled at every
protocol (and deep-copied), each pickle must name public paths only, and each copy is
fed the rest of the steps beside its twin, the object that was never pickled: every
result must be the same (what a step raises included).  So a pickle that lost a clock's
latest time, a frame held, a dialect's parts or a seeded random source's state shows
as a different result.  A handle (HANDLES) must refuse pickle and copy with a
TypeError that names its public class.  Each name of both groups has its cases here.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
import pickle
import random
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import sse_sansio
from sse_sansio import (
    AsyncMemoryStore,
    AsyncReplayWindow,
    Coalescer,
    Comment,
    EndOfStream,
    Event,
    Hub,
    KeepalivePlanner,
    MemoryStore,
    ReconnectPlanner,
    ReplayWindow,
    ResponseError,
    ServerStream,
    StoreSnapshot,
    Watchdog,
    llm,
    stores,
    testing,
)
from sse_sansio._pickling import attributes, restore
from sse_sansio.testing import parse
from tests.helpers import llm_streams
from tests.helpers.pickles import (
    HANDLES,
    NO_INSTANCES,
    PROTOCOLS,
    STATE_MACHINES,
    assert_public,
    exported_classes,
    load_recording,
)

LLM_DATA = Path(__file__).resolve().parent.parent / "data" / "llm"

Step = Callable[[Any], object]


@dataclass
class Scenario:
    cls: str  # the exported name of the class it drives
    build: Callable[[], object]
    steps: list[Step]


def outcome_of(step: Step, obj: object) -> object:
    """What a step returned, or the class and message of what it raised."""
    try:
        return step(obj)
    except (TypeError, ValueError, sse_sansio.ProtocolError) as exc:
        return ("raised", type(exc).__name__, str(exc))


def calling(method: str, *args: Any) -> Step:
    """A step that calls ``method`` of the object with ``args``."""
    return lambda obj: getattr(obj, method)(*args)


def run(obj: object, steps: list[Step]) -> list[object]:
    return [outcome_of(step, obj) for step in steps]


def copies(obj: object) -> Iterator[tuple[str, object]]:
    """``obj`` pickled at every protocol (its names checked) and deep-copied."""
    for protocol in PROTOCOLS:
        back, names = load_recording(pickle.dumps(obj, protocol))
        assert_public(names)
        assert type(back) is type(obj)
        yield f"protocol {protocol}", back
    yield "deepcopy", copy.deepcopy(obj)


# -------------------------------------------------------------- the stream health


WATCHDOG = Scenario(
    "Watchdog",
    lambda: Watchdog(first_byte=2.0, idle=5.0, progress=3.0, now=0.0),
    [
        lambda w: w.check(1.0),
        lambda w: w.saw_bytes(10, 1.5),
        lambda w: w.saw_item(Comment(text="ping"), 2.0),
        lambda w: w.check(4.0),
        lambda w: w.saw_item(Event(data="x"), 4.25),
        lambda w: w.check(7.5),
        lambda w: w.check(3.0),  # backwards: the latest time survived the pickle
        lambda w: w.saw_item(EndOfStream(), 8.0),
        lambda w: w.check(9.0),
    ],
)

KEEPALIVE = Scenario(
    "KeepalivePlanner",
    lambda: KeepalivePlanner(interval=3.0, first_byte=1.0, padding=8, now=0.0),
    [
        lambda k: k.due(0.5),
        lambda k: k.due(1.0),
        lambda k: k.deadline,
        lambda k: k.sent(1.5),
        lambda k: k.deadline,
        lambda k: k.due(4.0),
        lambda k: k.due(4.5),
        lambda k: k.due(2.0),
    ],
)


def delta(text: str) -> Event:
    """An OpenAI Chat text delta (the shape of its API reference's streamed chunk)."""
    choice = {"index": 0, "delta": {"content": text}, "finish_reason": None}
    chunk = {"id": "c1", "object": "chat.completion.chunk", "model": "m", "choices": [choice]}
    return Event(data=json.dumps(chunk))


DELTAS = [delta(text) for text in ("Hel", "lo", ", wor", "ld", "!")]


def push(frame: Any, now: float, *, urgent: bool = False) -> Step:
    return lambda c: (c.push(frame, now, urgent=urgent), c.deadline, c.buffered)


COALESCER = Scenario(
    "Coalescer",
    lambda: Coalescer(max_bytes=400, max_delay=0.5, now=0.0, merge=llm.TextMerge("openai-chat")),
    [
        push(DELTAS[0], 0.125),
        push(DELTAS[1], 0.25),
        lambda c: c.pop(0.375),
        lambda c: c.pop(0.75),
        push(DELTAS[2], 0.875),
        push(b": kept\n", 1.0),
        push(DELTAS[3], 1.125, urgent=True),
        lambda c: c.pop(1.125),
        push(DELTAS[4], 1.25),
        lambda c: c.pop(0.5),
        lambda c: c.flush(),
    ],
)


def send(item: Any, now: float) -> Step:
    return lambda s: (s.send(item, now), s.deadline, s.buffered, s.state)


def resume_from_one_sent(s: ServerStream) -> object:
    ident = s.send(Event(data="resumed from"), 1.75)
    s.send(Event(data="replayed"), 1.75)
    assert ident is not None
    return s.resume(ident, 1.75), s.data_to_send(1.75)


SERVER_STREAM = Scenario(
    "ServerStream",
    lambda: ServerStream(
        now=0.0,
        keepalive=2.0,
        first_byte=1.0,
        padding=6,
        coalesce_bytes=64,
        coalesce_delay=0.25,
        window=ReplayWindow(max_events=3),
    ),
    [
        send(Event(data="a"), 0.125),
        lambda s: s.data_to_send(0.25),
        lambda s: s.data_to_send(0.5),
        lambda s: s.data_to_send(1.5),
        send(Event(data="b" * 40), 1.5),
        send(Event(data="c", retry=10), 1.625),
        lambda s: s.data_to_send(1.625),
        resume_from_one_sent,
        lambda s: s.data_to_send(5.0),
        lambda s: s.end(5.5),
        lambda s: (s.data_to_send(5.5), s.state, s.deadline),
    ],
)


# ------------------------------------------------------------------ the reconnection


def attempt(status: int, body: bytes, now: float) -> Step:
    def step(plan: ReconnectPlanner) -> object:
        how: ResponseError | None = None
        try:
            items = list(plan.events([body], status, {"content-type": "text/event-stream"}))
        except ResponseError as exc:
            items, how = [], exc
        decision = plan.ended(how, now=now)
        return items, decision, plan.last_event_id, plan.retry, plan.failures

    return step


PLANNER = Scenario(
    "ReconnectPlanner",
    lambda: ReconnectPlanner(random=random.Random(7), retry_statuses=(503,), max_attempts=3),
    [
        lambda p: p.start(0.0),
        attempt(200, b"id: 1\nretry: 500\ndata: a\n\n", 1.0),
        attempt(503, b"", 2.0),
        attempt(503, b"", 3.0),
        attempt(200, b"id: 2\ndata: b", 4.0),
        lambda p: p.headers(),
        attempt(503, b"", 5.0),
        attempt(503, b"", 6.0),
        attempt(503, b"", 7.0),
        lambda p: p.stopped,
    ],
)


def test_a_planner_refuses_pickle_and_copy_during_an_attempt() -> None:
    plan = ReconnectPlanner()
    plan.start(0.0)
    plan.connection()
    for refused in (lambda: pickle.dumps(plan), lambda: copy.copy(plan)):
        with pytest.raises(
            TypeError, match=r"^a ReconnectPlanner cannot be pickled or copied: it holds"
        ):
            refused()
    plan.close()  # stopped: it reads nothing more, and keeps no Connection
    back = pickle.loads(pickle.dumps(plan))
    assert (back.stopped, back.ended(now=1.0)) == (plan.stopped, plan.stopped)


# ------------------------------------------------------------------- the replay window


def resume_at(n: int) -> Step:
    return lambda w: w.resume(f"{w.store.read(None).token}-{n}")


def publish(item: Any, now: float) -> Step:
    return lambda h: (h.publish(item, now), [s.buffered for s in h.subscribers])


# A drop-oldest hub: the second subscriber never reads until 0.75, so its gap frame is
# at the head of its queue when later frames drop more (the count goes on across a
# pickle: the gap is found by identity, which one pickle keeps).
HUB = Scenario(
    "Hub",
    lambda: Hub(max_buffer=48, policy="drop-oldest", window=ReplayWindow(max_events=4), now=0.0),
    [
        lambda h: h.subscribe(0.0).state,
        lambda h: h.subscribe(0.0, keepalive=1.0).deadline,
        publish(Event(data="a" * 10), 0.25),
        lambda h: h.subscribers[0].data_to_send(0.5),
        publish(Event(data="b" * 10), 0.5),
        publish(Event(data="c" * 10), 0.5),
        publish(Event(data="d" * 10), 0.625),
        publish(Comment(text="e"), 0.75),
        lambda h: h.subscribers[1].data_to_send(0.75),
        publish(Event(data="f" * 10), 1.0),
        lambda h: h.subscribe(1.0, last_event_id="foreign").data_to_send(1.0),
        lambda h: [s.data_to_send(2.5) for s in h.subscribers],
        lambda h: (h.unsubscribe(h.subscribers[0]), len(h.subscribers)),
        lambda h: h.publish(b"data: x\n\n", 3.0),
    ],
)


REPLAY_WINDOW = Scenario(
    "ReplayWindow",
    lambda: ReplayWindow(max_events=2),
    [
        lambda w: w.append(Event(data="a")).id.endswith("-1"),
        lambda w: w.append(Event(type="b", data="b")).id.endswith("-2"),
        lambda w: w.append(Event(data="c", retry=20)).id.endswith("-3"),
        resume_at(0),
        resume_at(1),
        resume_at(3),
        lambda w: w.priming(retry=100, from_start=True).id.endswith("-1"),
        lambda w: w.close(cut=True),
        resume_at(2),
        lambda w: w.append(Event(data="late")),
    ],
)

MEMORY_STORE = Scenario(
    "MemoryStore",
    lambda: MemoryStore(max_events=2, max_bytes=64),
    [
        lambda m: m.append(Event(data="a"))[1],
        lambda m: m.read(0).events,
        lambda m: m.append(Event(data="b" * 40))[1],
        lambda m: m.append(Event(data="c"))[1],
        lambda m: m.read(1),
        lambda m: m.finish(cut=True),
        lambda m: m.read(None),
    ],
)


class AsyncMemory:
    """An asyncio store of our own over a MemoryStore: it pickles, as a store may."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store

    async def append(self, event: Event) -> tuple[str, int]:
        return self.store.append(event)

    async def read(self, after: int | None, *, wait: float | None = None) -> StoreSnapshot:
        return self.store.read(after)

    async def finish(self, *, cut: bool = False) -> None:
        self.store.finish(cut=cut)


def awaited(call: Callable[[AsyncReplayWindow], Any]) -> Step:
    return lambda w: asyncio.run(call(w))


async def resume_first(w: AsyncReplayWindow) -> object:
    snapshot = await w.store.read(None)
    return await w.resume(f"{snapshot.token}-1", wait=0.0)


ASYNC_REPLAY_WINDOW = Scenario(
    "AsyncReplayWindow",
    lambda: AsyncReplayWindow(AsyncMemory(MemoryStore(max_events=3))),
    [
        awaited(lambda w: w.append(Event(data="a"))),
        awaited(lambda w: w.append(Event(data="b"))),
        awaited(resume_first),
        awaited(lambda w: w.close()),
        awaited(lambda w: w.priming(from_start=True)),
        awaited(lambda w: w.append(Event(data="late"))),
    ],
)


# -------------------------------------------------------------------------------- llm


def items_of(name: str) -> list[Any]:
    return parse((LLM_DATA / name).read_bytes())


def tracking(dialect: str | Callable[[], llm.Dialect], items: list[Any]) -> Scenario:
    def build() -> llm.Tracker:
        return llm.Tracker(dialect if isinstance(dialect, str) else dialect())

    steps: list[Step] = [calling("feed", item) for item in items]
    return Scenario("Tracker", build, [*steps, lambda t: (t.outcome, t.answer)])


GENERIC_STREAM = parse(
    b'data: {"text": "Hel"}\n\ndata: {"text": "lo"}\n\nevent: done\ndata: {}\n\n'
)


def generic_dialect() -> llm.Dialect:
    return llm.generic("done", error="error", json=True)


def observe(event: Event) -> Step:
    return lambda d: d.observe(event, d.decode(event))


def observing(items: list[Any]) -> list[Step]:
    """A dialect's own steps (not API, but the rules a Tracker asks for)."""
    events = [item for item in items if isinstance(item, Event)]
    steps = [observe(event) for event in events]
    return [*steps, lambda d: (d.at_end(), d.usage(), d.answer_parts().snapshot(True))]


LLM_SCENARIOS = {
    "Tracker-openai-chat": tracking("openai-chat", items_of("openai-chat-tool-calls.sse")),
    "Tracker-auto-openai-chat": tracking("auto", items_of("openai-chat-tool-calls.sse")),
    "Tracker-auto-anthropic": tracking("auto", items_of("anthropic-tool-use.sse")),
    "Tracker-auto-anthropic-error": tracking("auto", items_of("anthropic-error.sse")),
    "Tracker-openai-responses": tracking(
        "openai-responses", items_of("openai-responses-function-call.sse")
    ),
    "Tracker-gemini": tracking("gemini", items_of("gemini-stop.sse")),
    "Tracker-ai-sdk-ui": tracking("ai-sdk-ui", parse(b"".join(llm_streams.AI_SDK_UI))),
    "Tracker-generic": tracking(generic_dialect, GENERIC_STREAM),
    "Tracker-payload-error": tracking(
        "openai-chat", parse(b'data: {"choices": []}\n\ndata: {not json\n\ndata: [DONE]\n\n')
    ),
    "Progress-auto": Scenario(
        "Progress",
        lambda: llm.Progress("auto"),
        [calling("of", item) for item in items_of("anthropic-tool-use.sse")],
    ),
    "Reframer-cut-inside": Scenario(
        "Reframer",
        lambda: llm.Reframer("anthropic"),
        [
            calling("feed", item)
            for item in parse((LLM_DATA / "anthropic-tool-use.sse").read_bytes()[:-9])
        ],
    ),
    "Translator": Scenario(
        "Translator",
        lambda: llm.Translator("anthropic", "openai-responses"),
        [
            *(calling("feed", item) for item in items_of("anthropic-tool-use.sse")),
            calling("end"),
            lambda t: t.outcome,
        ],
    ),
    "HoldBack": Scenario(
        "HoldBack",
        lambda: llm.HoldBack("anthropic", chars=4, seconds=1.0, now=0.0),
        [
            *(
                (lambda h, item=item, at=n * 0.25: h.push(item, at))
                for n, item in enumerate(items_of("anthropic-tool-use.sse"))
            ),
            lambda h: (h.held_text, h.deadline),
            calling("pop", 100.0),
            calling("veto", "no"),
        ],
    ),
    "StreamStats": Scenario(
        "StreamStats",
        lambda: llm.StreamStats("auto", now=0.0, stall=0.5),
        [
            calling("saw_bytes", 10, 0.25),
            *(
                (lambda s, item=item, at=n * 0.75: s.saw_item(item, at))
                for n, item in enumerate(items_of("anthropic-tool-use.sse"))
            ),
            lambda s: s.as_dict(),
            calling("end", 100.0),
            lambda s: s.as_dict(),
        ],
    ),
    "TextMerge": Scenario(
        "TextMerge",
        lambda: llm.TextMerge("openai-chat"),
        [calling("merge", a, b) for a, b in itertools.pairwise(DELTAS)],
    ),
    "UIMessageStreamWriter": Scenario(
        "UIMessageStreamWriter",
        llm.UIMessageStreamWriter,
        [
            lambda w: w.start("m1"),
            lambda w: w.text_delta("t1", "Hi"),
            lambda w: w.finish("stop"),
            lambda w: w.done(),
        ],
    ),
    "Dialect-generic": Scenario("Dialect", generic_dialect, observing(GENERIC_STREAM)),
}

# Issue 34: the async memory store (its waiters are not kept) and a process's mirror.
ASYNC_MEMORY_STORE = Scenario(
    "AsyncMemoryStore",
    lambda: AsyncMemoryStore(MemoryStore(max_events=2)),
    [
        lambda m: asyncio.run(m.append(Event(data="a")))[1],
        lambda m: asyncio.run(m.append_many([Event(data="b"), Event(data="c")]))[1],
        lambda m: asyncio.run(m.read(0)).events,
        lambda m: asyncio.run(m.finish(cut=True)),
        lambda m: asyncio.run(m.read(2, wait=0.0)),
    ],
)

MIRROR_STORE = Scenario(
    "MirrorStore",
    lambda: stores.MirrorStore("tok", max_events=2),
    [
        lambda m: m.append(Event(data="a", id="tok-1")),
        lambda m: m.append(Event(data="b", id="tok-4")),  # a hole
        lambda m: (m.resets, m.read(0)),
        lambda m: m.append(Event(data="c", id="tok-4")),  # refused: not after tok-4
        lambda m: m.append(Event(data="d", id="new-1")),  # a new token
        lambda m: (m.resets, m.read(0)),
    ],
)

SCENARIOS = {
    "AsyncMemoryStore": ASYNC_MEMORY_STORE,
    "MirrorStore": MIRROR_STORE,
    "Watchdog": WATCHDOG,
    "KeepalivePlanner": KEEPALIVE,
    "Coalescer": COALESCER,
    "ServerStream": SERVER_STREAM,
    "Hub": HUB,
    "ReconnectPlanner": PLANNER,
    "ReplayWindow": REPLAY_WINDOW,
    "MemoryStore": MEMORY_STORE,
    "AsyncReplayWindow": ASYNC_REPLAY_WINDOW,
    **LLM_SCENARIOS,
}


@pytest.mark.parametrize("scenario", SCENARIOS.values(), ids=SCENARIOS.keys())
def test_a_state_machine_pickled_between_any_two_steps_behaves_as_its_twin(
    scenario: Scenario,
) -> None:
    assert isinstance(scenario.build(), exported_classes()[scenario.cls])
    for cut in range(len(scenario.steps) + 1):
        twin = scenario.build()
        run(twin, scenario.steps[:cut])
        loaded = list(copies(twin))
        want = run(twin, scenario.steps[cut:])
        for how, back in loaded:
            assert run(back, scenario.steps[cut:]) == want, (cut, how)


def test_every_state_machine_has_a_scenario() -> None:
    assert {scenario.cls for scenario in SCENARIOS.values()} == STATE_MACHINES


def test_the_scenarios_see_state_that_a_lost_pickle_would_change() -> None:
    # The twin test above compares a copy with its twin: it could pass if a scenario's
    # results did not depend on the state at all.  These do, by hand.
    watchdog = WATCHDOG.build()
    run(watchdog, WATCHDOG.steps[:6])
    back = pickle.loads(pickle.dumps(watchdog))
    with pytest.raises(ValueError, match=r"now went backwards \(3\.0 after 7\.5\)"):
        back.check(3.0)
    tracker = llm.Tracker("auto")
    for item in items_of("anthropic-tool-use.sse")[:-1]:
        tracker.feed(item)
    back = pickle.loads(pickle.dumps(tracker))
    back.feed(EndOfStream())
    # The outcome tests/data/llm/expected.json holds for the stream, written by hand.
    expected = json.loads((LLM_DATA / "expected.json").read_text())["anthropic-tool-use.sse"]
    assert back.outcome is not None
    assert {key: getattr(back.outcome, key) for key in expected} == expected


def test_a_dialect_class_of_the_callers_own_is_named_by_its_own_path() -> None:
    back, names = load_recording(pickle.dumps(OwnDialect(), 2))
    assert (type(back), back.terminal) == (OwnDialect, "the end")
    assert ("tests.package.test_state_pickles", "OwnDialect") in names
    assert_public(names)


class OwnDialect(llm.Dialect):
    name = "own"
    terminal = "the end"


# --------------------------------------------------------------------------- handles


async def _chunks() -> AsyncIterator[bytes]:
    yield b"data: a\n\n"


CASSETTE = testing.Cassette(chunks=[(0.0, b"data: a\n\n")], end="clean", end_time=0.0)

HANDLE_CASES: dict[str, Callable[[], Any]] = {
    "Connection": sse_sansio.Connection,
    "Relay": lambda: sse_sansio.Relay(_chunks()),
    "Recorder": lambda: testing.record([b"data: a\n\n"]),
    "AsyncRecorder": lambda: testing.arecord(_chunks()),
    "CassetteServer": lambda: testing.serve_cassette(CASSETTE),
    "RedisStreamStore": lambda: stores.RedisStreamStore(object(), "k", max_events=3),  # type: ignore[arg-type]
    "AsyncRedisStreamStore": lambda: stores.AsyncRedisStreamStore(object(), "k", max_events=3),  # type: ignore[arg-type]
    "OpenTelemetryRecorder": llm.OpenTelemetryRecorder,  # the API's own no-op provider
}

#: What names the refusal: ours say "a <class> cannot be pickled or copied"; the
#: Connection's own message names it.
REFUSAL = {"Connection": "Connection"}


def handle_params() -> list[Any]:
    params = []
    for name in HANDLE_CASES:
        marks = [pytest.mark.slow] if name == "CassetteServer" else []  # a live server
        params.append(pytest.param(name, marks=marks, id=name))
    return params


@contextmanager
def made(name: str) -> Iterator[Any]:
    """A handle of the exported class ``name``, closed after use if it is a server."""
    handle = HANDLE_CASES[name]()
    assert type(handle) is exported_classes()[name]
    try:
        yield handle
    finally:
        if isinstance(handle, testing.CassetteServer):
            handle.close()


@pytest.mark.parametrize("name", handle_params())
def test_a_handle_refuses_pickle_at_every_protocol(name: str) -> None:
    expected = REFUSAL.get(name, f"^a {name} cannot be pickled or copied: ")
    with made(name) as handle:
        for protocol in PROTOCOLS:
            with pytest.raises(TypeError, match=expected):
                pickle.dumps(handle, protocol)


@pytest.mark.parametrize("name", handle_params())
def test_a_handle_refuses_copy_and_deepcopy(name: str) -> None:
    expected = REFUSAL.get(name, f"^a {name} cannot be pickled or copied: ")
    with made(name) as handle:
        for copier in (copy.copy, copy.deepcopy):
            with pytest.raises(TypeError, match=expected):
                copier(handle)


def test_every_handle_has_a_case() -> None:
    assert set(HANDLE_CASES) == HANDLES


def test_the_classes_without_instances_make_none() -> None:
    classes = exported_classes()
    for name in NO_INSTANCES - {"ProtocolError"}:
        assert getattr(classes[name], "_is_protocol", False), name  # a typing.Protocol
    with pytest.raises(TypeError, match="raise a subclass"):
        sse_sansio.ProtocolError("never raised itself")


# ------------------------------------------------------------------ the helpers' corners


class Slotted:
    __slots__ = ("kept", "unset")


class SlottedChild(Slotted):
    __slots__ = ("__dict__", "more")


def test_attributes_read_slots_and_dict_and_restore_writes_them_back() -> None:
    obj = SlottedChild()
    obj.kept, obj.more, obj.extra = 1, 2, 3  # type: ignore[attr-defined]
    state = attributes(obj)
    assert state == {"kept": 1, "more": 2, "extra": 3}  # "unset" was never set
    fresh = SlottedChild.__new__(SlottedChild)
    restore(fresh, state)
    assert (fresh.kept, fresh.more, fresh.extra) == (1, 2, 3)  # type: ignore[attr-defined]
