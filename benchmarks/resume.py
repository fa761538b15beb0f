"""The resumption layer against its floors (issue 34, item 4): ratios in one run.

Run ``python benchmarks/resume.py`` (``--events N``, ``--rounds N``, ``--batch N``,
``--quick``, ``--no-redis``).

Each pair is a path the library offers and the least any code doing the same job could
cost, timed on the same events in the same process:

- **append**: ``ReplayWindow.append(event)`` (the in-memory window, unbounded and with
  ``max_events``) against its floor: the event with its ID made by the unchecked
  constructor (``tuple.__new__``, what the store does once the window checked the
  event) and a ``deque`` append.  Target: at most 2x.
- **resume**: ``ReplayWindow.resume(id)`` of the ID before the last ``k`` of ``--events``
  events (k = all, 1,000 and 10) against its floor: a slice of the deque that holds the
  events as sent (``tuple(islice(d, skip, None))``, or from the right end when that is
  nearer, as the store reads).  Target: at most 3x (the per-event
  cost; for ten events the constant part, parsing the ID and building the answer, is
  most of it, and its ratio is shown for what it is).
- **unknown**: ``resume()`` of a foreign, a malformed and a never-issued ID on windows of
  10 and of ``--events`` events: the same cost whatever the window holds (O(1)).
- **redis** (a ``redis-server`` of its own on a free loopback port): ``RedisStreamStore.
  append_many(batch)`` against a pipeline of as many raw ``XADD key MAXLEN = n 0-* ...``
  (no transaction), in events per second of wall time (the server's work counts);
  target at least 0.8x.  And ``append(event)`` against one raw ``XADD``.

Timing is benchmarks/layers.py's: CPU time of this thread (``time.thread_time()``) for
the in-process pairs, wall time for Redis; the cases interleaved round-robin with the
order rotating; the median of the rounds per case; a ratio is two medians of the same
run.  Each pair is first checked to give the same events, so a floor that skips work
the path must do cannot pass unnoticed.  On a shared machine expect 10-20 % noise.
"""

from __future__ import annotations

import argparse
import gc
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable
from functools import partial
from itertools import islice
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))

from sse_sansio import Event, ReplayWindow  # noqa: E402
from sse_sansio._events import new_event  # noqa: E402

Case = Callable[[], object]


def events(n: int) -> list[Event]:
    # LLM-sized deltas: 200-300 bytes of JSON each, as benchmarks/workloads.py's llm.
    return [Event(type="delta", data=f'{{"delta": "{(f"tok{i} " * 40)[:250]}"}}') for i in range(n)]


def timed(cases: dict[str, Case], rounds: int, clock: Callable[[], float]) -> dict[str, float]:
    """The median time of each case over ``rounds`` rounds, the order rotating."""
    names = list(cases)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for round_ in range(rounds):
        order = names[round_ % len(names) :] + names[: round_ % len(names)]
        for name in order:
            gc.collect()
            start = clock()
            cases[name]()
            samples[name].append(clock() - start)
    return {name: statistics.median(values) for name, values in samples.items()}


def append_cases(evs: list[Event]) -> dict[str, Case]:
    def window(max_events: int | None = None) -> Case:
        def run() -> object:
            w = ReplayWindow(max_events=max_events)
            append = w.append
            for event in evs:
                append(event)
            return w

        return run

    def floor() -> object:
        kept: deque[Event] = deque()
        keep = kept.append
        prefix = "0123456789abcdef01234567-"
        for number, e in enumerate(evs, 1):
            keep(new_event(Event, (e[0], e[1], f"{prefix}{number}", e[3], -1, -1, None)))
        return kept

    return {
        "append: window": window(),
        "append: window, max_events": window(max_events=len(evs)),
        "append: floor": floor,
    }


# Each resume case is run REPEAT times per sample, so that a sample is long enough to time.
REPEAT = 20


def repeat(call: Callable[[Any], object], argument: object) -> None:
    for _ in range(REPEAT):
        call(argument)


def resume_cases(evs: list[Event], tails: list[int]) -> dict[str, Case]:
    w = ReplayWindow()
    sent = [w.append(e) for e in evs]
    kept = deque(sent)

    def floor_slice(skip: int) -> tuple[Event, ...]:
        # The deque slice: what copying the missed events out of a deque costs, walking
        # from the nearer end as the store does (both ways give the same events).
        count = len(kept) - skip
        if count < skip:
            return tuple(islice(reversed(kept), count))[::-1]
        return tuple(islice(kept, skip, None))

    cases: dict[str, Case] = {}
    for k in tails:
        last_seen = sent[len(sent) - k - 1].id if k < len(sent) else f"{w.token}-0"
        skip = len(sent) - k
        resumed = w.resume(last_seen).events
        assert resumed == tuple(islice(kept, skip, None)) == floor_slice(skip)
        assert len(resumed) == k
        cases[f"resume {k}: window"] = partial(repeat, w.resume, last_seen)
        cases[f"resume {k}: floor"] = partial(repeat, floor_slice, skip)
    return cases


def unknown_cases(evs: list[Event], repeat: int) -> dict[str, Case]:
    cases: dict[str, Case] = {}
    for size in (10, len(evs)):
        w = ReplayWindow()
        for e in evs[:size]:
            w.append(e)
        ids = ["feedfacefeedfacefeedface-1", "not an id", f"{w.token}-{size + 5}"]
        assert all(w.resume(i).verdict == "unknown" for i in ids)

        def run(w: ReplayWindow = w, ids: list[str] = ids) -> None:
            for _ in range(repeat):
                for i in ids:
                    w.resume(i)

        cases[f"unknown, window of {size}"] = run
    return cases


# -- Redis ---------------------------------------------------------------------------


def start_redis() -> tuple[subprocess.Popen[bytes], int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    binary = shutil.which("redis-server")
    assert binary, "redis-server is not on PATH (or pass --no-redis)"
    args = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly"]
    process = subprocess.Popen([*args, "no"], stdout=subprocess.DEVNULL)
    import redis

    client = redis.Redis(port=port, retry_on_error=[redis.ConnectionError])
    client.ping()
    client.close()
    return process, port


def redis_cases(port: int, evs: list[Event], batch: int) -> dict[str, Case]:
    import redis

    from sse_sansio.stores import RedisStreamStore

    client = redis.Redis(port=port)
    counter = iter(range(10**9))
    limit = len(evs)
    batches = [evs[i : i + batch] for i in range(0, len(evs), batch)]

    def fields(e: Event) -> dict[Any, Any]:
        return {"type": e.type, "data": e.data, "retry": "" if e.retry is None else str(e.retry)}

    def many() -> object:
        store = RedisStreamStore(client, f"bench:{next(counter)}", max_events=limit)
        for chunk in batches:
            store.append_many(chunk)
        return store

    def pipelined() -> object:
        key = f"bench:{next(counter)}"
        for chunk in batches:
            pipe = client.pipeline(transaction=False)
            for e in chunk:
                pipe.xadd(key, fields(e), id="0-*", maxlen=limit, approximate=False)
            pipe.execute()
        return key

    singles = evs[: max(1, len(evs) // 10)]

    def one_by_one() -> object:
        store = RedisStreamStore(client, f"bench:{next(counter)}", max_events=limit)
        for e in singles:
            store.append(e)
        return store

    def raw_one_by_one() -> object:
        key = f"bench:{next(counter)}"
        for e in singles:
            client.xadd(key, fields(e), id="0-*", maxlen=limit, approximate=False)
        return key

    # Same events kept, in the same order.
    store = many()
    assert isinstance(store, RedisStreamStore)
    key = pipelined()
    kept = [e for _, e in store.read(0).events]
    raw: Any = client.xrange(str(key))
    assert [e.data for e in kept] == [f[b"data"].decode() for _, f in raw] == [e.data for e in evs]
    client.flushall()
    return {
        f"redis append_many({batch})": many,
        f"redis pipelined XADD x{batch}": pipelined,
        "redis append": one_by_one,
        "redis XADD": raw_one_by_one,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--quick", action="store_true", help="10,000 events, 5 rounds")
    parser.add_argument("--no-redis", action="store_true")
    options = parser.parse_args()
    n, rounds = (10_000, 5) if options.quick else (options.events, options.rounds)
    evs = events(n)
    cpu = time.thread_time
    results: dict[str, float] = {}
    results.update(timed(append_cases(evs), rounds, cpu))
    results.update(timed(resume_cases(evs, [n, 1000, 10]), rounds * 3, cpu))
    results.update(timed(unknown_cases(evs, 1000), rounds, cpu))
    redis_n = min(n, 20_000)
    process = None
    if not options.no_redis:
        process, port = start_redis()
        try:
            results.update(
                timed(redis_cases(port, evs[:redis_n], options.batch), rounds, time.perf_counter)
            )
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait()
    report(results, n, redis_n, options)


def line(name: str, value: str, ratio: float, floor: str) -> None:
    print(f"{name:34} {value:>16}  {ratio:5.2f}x {floor}")


def report(r: dict[str, float], n: int, redis_n: int, options: Any) -> None:
    print(f"Python {sys.version.split()[0]}, {n:,} events of ~260 bytes, medians")
    per = 1e9 / n
    floor = r["append: floor"]
    for case in ("append: window", "append: window, max_events"):
        line(case, f"{r[case] * per:.0f} ns/event", r[case] / floor, f"floor ({floor * per:.0f})")
    for k in (n, 1000, 10):
        w = r[f"resume {k}: window"] / REPEAT
        f = r[f"resume {k}: floor"] / REPEAT
        line(f"resume of {k:,} events", f"{w * 1e6:.1f} us", w / f, f"floor ({f * 1e6:.1f} us)")
    for size in (10, n):
        t = r[f"unknown, window of {size}"] / 3000
        print(f"{'unknown ID, window of ' + format(size, ','):34} {t * 1e9:>13.0f} ns")
    if not options.no_redis:
        b = options.batch
        many, pipe = r[f"redis append_many({b})"], r[f"redis pipelined XADD x{b}"]
        floor_rate = f"pipelined XADD's throughput ({redis_n / pipe:,.0f}/s)"
        line(f"redis append_many({b})", f"{redis_n / many:,.0f} ev/s", pipe / many, floor_rate)
        one, raw = r["redis append"], r["redis XADD"]
        singles = max(1, redis_n // 10)
        raw_time = f"raw XADD's time ({raw / singles * 1e6:.1f} us)"
        line("redis append", f"{one / singles * 1e6:.1f} us", one / raw, raw_time)


if __name__ == "__main__":
    main()
