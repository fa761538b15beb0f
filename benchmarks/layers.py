"""The layers above the parser against their floors (issue 33, item 6): ratios in one run.

Run ``python benchmarks/layers.py`` (``--events N``, ``--rounds N``, ``--quick``).

``--callgrind CASE`` runs one case (``"layers keep_raw"``, ``parse``...) twice untimed,
then once inside ``functools.reduce()``, for callgrind to count that run alone::

    valgrind --tool=callgrind --collect-atstart=no --toggle-collect=functools_reduce \
        python3.12 benchmarks/layers.py --events 3000 --callgrind "layers keep_raw"

(instructions per event: the total over ``--events``).

Three pairs, each a path the library offers and the least any code doing the same job
could cost, timed on the same events in the same process:

- **send**: ``ServerStream.send(event, now)`` then ``data_to_send(now)``, per one-line
  event built by ``Event(data=...)`` (keepalive 15 s, no coalescing: each event is due at
  once), against its floor: an f-string serialization (``f"data: {data}\\n\\n"``,
  encoded), a ``deque`` append and a ``popleft``.  Target: at most 2x.
- **layers**: what a gateway does per parsed event: ``Watchdog.saw_item``,
  ``Coalescer.push`` then ``pop`` (max_delay 0: due at once) and
  ``KeepalivePlanner.sent`` for the bytes popped, against the parse of that event by
  the core Python imports (``Connection.receive_data`` of 16 KiB chunks and the drain
  loop, per event).  Target: at most 3x.
- **serialize**: ``serialize(event)`` for an event built by its constructor, against
  the f-string that writes the same lines (encoded): a one-line ``message`` event, and
  a typed event with an ID, and a one-line event of a short token (``" token17"``: the
  serializer's own cost, next to nothing to copy or encode).  Target: at most 3x.

The events are benchmarks/workloads.py's ``llm`` stream (OpenAI chunks of 200-300
bytes) and, for the typed case, ``llm-typed``'s.  Timing is run.py's: CPU time of this
thread (``time.thread_time()``), each case run over every event in one sample, the
cases interleaved round-robin with the order rotating, the median of the rounds per
case; a ratio is two medians of the same run.  On a shared machine expect 10-20 % noise
between runs: read the ratios, and run it more than once.  Each pair is first checked to
produce the same bytes (the floor writes what the path writes), so a floor that skips
work the path must do cannot pass unnoticed.
"""

from __future__ import annotations

import argparse
import functools
import gc
import statistics
import sys
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))

from benchmarks import workloads as wl  # noqa: E402
from sse_sansio import (  # noqa: E402
    NEED_DATA,
    Coalescer,
    Connection,
    Event,
    KeepalivePlanner,
    ServerStream,
    Watchdog,
    serialize,
)
from sse_sansio._receive._implementation import IMPLEMENTATION  # noqa: E402

Case = Callable[[], bytes]


def send_path(events: list[Event]) -> Case:
    """ServerStream.send + data_to_send per event; returns every byte handed out."""

    def run() -> bytes:
        stream = ServerStream(now=0.0, keepalive=15.0)
        send, data_to_send = stream.send, stream.data_to_send
        out = []
        now = 1.0
        for event in events:
            send(event, now)
            out.append(data_to_send(now))
        return b"".join(out)

    return run


def send_floor(events: list[Event]) -> Case:
    """An f-string serialization, a deque append and a popleft per event."""

    def run() -> bytes:
        queue: deque[bytes] = deque()
        out = []
        for event in events:
            queue.append(f"data: {event.data}\n\n".encode())
            out.append(queue.popleft())
        return b"".join(out)

    return run


def layers_path(events: list[Event]) -> Case:
    """Watchdog.saw_item, Coalescer.push and pop, KeepalivePlanner.sent per event."""

    def run() -> bytes:
        watchdog = Watchdog(first_byte=30.0, idle=30.0, progress=30.0, now=0.0)
        coalescer = Coalescer(max_bytes=16384, max_delay=0.0, now=0.0)
        planner = KeepalivePlanner(interval=15.0, now=0.0)
        out = []
        now = 1.0
        for event in events:
            watchdog.saw_item(event, now)
            coalescer.push(event, now)
            data = coalescer.pop(now)
            if data:
                planner.sent(now)
                out.append(data)
        return b"".join(out)

    return run


def parse(chunks: list[bytes], *, keep_raw: bool = False) -> Case:
    """The parse of the same events: receive_data per chunk, then the drain loop."""

    def run() -> bytes:
        connection = Connection(keep_raw=keep_raw)
        count = 0
        for chunk in chunks:
            connection.receive_data(chunk)
            while connection.next_event() is not NEED_DATA:
                count += 1
        connection.receive_data(b"")
        connection.next_event()  # EndOfStream (returned from then on)
        return b"%d" % count

    return run


def serialize_path(events: list[Event]) -> Case:
    def run() -> bytes:
        return b"".join([serialize(event) for event in events])

    return run


def message_floor(events: list[Event]) -> Case:
    def run() -> bytes:
        return b"".join([f"data: {event.data}\n\n".encode() for event in events])

    return run


def typed_floor(events: list[Event]) -> Case:
    def run() -> bytes:
        return b"".join(
            [f"event: {e.type}\ndata: {e.data}\nid: {e.id}\n\n".encode() for e in events]
        )

    return run


def timed(cases: dict[str, Case], rounds: int) -> dict[str, float]:
    """The median CPU seconds of one run of each case, interleaved round-robin."""
    samples: dict[str, list[float]] = {name: [] for name in cases}
    names = list(cases)
    for r in range(rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order:
            gc.collect()
            start = time.thread_time()
            cases[name]()
            samples[name].append(time.thread_time() - start)
    return {name: statistics.median(s) for name, s in samples.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=20_000, help="events per sample")
    parser.add_argument("--rounds", type=int, default=15, help="interleaved rounds")
    parser.add_argument("--quick", action="store_true", help="2,000 events, 5 rounds")
    parser.add_argument("--callgrind", metavar="CASE", help="run CASE once, for callgrind")
    args = parser.parse_args(argv)
    n_events, rounds = (2_000, 5) if args.quick else (args.events, args.rounds)

    llm = wl.llm(n_events)
    built = [Event(data=data) for _, _, data in llm.events]
    chunks = wl.chunked(llm.stream, 16384)
    parsed = [e for e in _items(chunks) if isinstance(e, Event)]
    kept = [e for e in _items(chunks, keep_raw=True) if isinstance(e, Event)]
    typed = [
        Event(type="response.output_text.delta", data=data, id=str(i))
        for i, (_, _, data) in enumerate(llm.events)
    ]
    # A token as a chat UI shows it, the shortest real event: the serializer's own
    # cost with next to no text to copy or encode.
    tokens = [Event(data=f" token{i % 1000}") for i in range(n_events)]
    cases = {
        "send": send_path(built),
        "send floor": send_floor(built),
        "layers": layers_path(parsed),
        "parse": parse(chunks),
        "layers keep_raw": layers_path(kept),
        "parse keep_raw": parse(chunks, keep_raw=True),
        "serialize": serialize_path(built),
        "f-string": message_floor(built),
        "serialize token": serialize_path(tokens),
        "f-string token": message_floor(tokens),
        "serialize typed": serialize_path(typed),
        "f-string typed": typed_floor(typed),
    }
    pairs = [
        ("send", "send floor", 2.0),
        ("layers", "parse", 3.0),
        ("layers keep_raw", "parse keep_raw", 3.0),
        ("serialize", "f-string", 3.0),
        ("serialize token", "f-string token", 3.0),
        ("serialize typed", "f-string typed", 3.0),
    ]
    if args.callgrind is not None:
        case = cases[args.callgrind]
        case()
        case()  # the interpreter's specialisation settled, every import done
        functools.reduce(lambda _, run: run(), [case], b"")
        print(f"{args.callgrind}: one run of {n_events} events inside functools.reduce()")
        return 0
    for path, floor, _ in pairs:
        if not floor.startswith("parse") and cases[path]() != cases[floor]():
            raise SystemExit(f"{path} and {floor} write different bytes")
    if cases["layers keep_raw"]() != cases["layers"]():
        raise SystemExit("the layers write other bytes for events parsed with keep_raw")
    medians = timed(cases, rounds)
    version = ".".join(map(str, sys.version_info[:3]))
    print(f"Python {version}, {IMPLEMENTATION} core, {n_events} events, {rounds} rounds")
    print(f"{'case':<16} {'ns/event':>9}    {'floor':<15} {'ns/event':>9} {'ratio':>6} target")
    for path, floor, target in pairs:
        ns, floor_ns = (medians[name] / n_events * 1e9 for name in (path, floor))
        ratio = ns / floor_ns
        print(f"{path:<16} {ns:>9.0f}    {floor:<15} {floor_ns:>9.0f} {ratio:>5.2f}x <= {target}x")
    return 0


def _items(chunks: list[bytes], *, keep_raw: bool = False) -> list[object]:
    connection = Connection(keep_raw=keep_raw)
    items: list[object] = []
    for chunk in chunks:
        connection.receive_data(chunk)
        while (item := connection.next_event()) is not NEED_DATA:
            items.append(item)
    return items


if __name__ == "__main__":
    raise SystemExit(main())
