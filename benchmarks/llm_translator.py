"""The Translator against its floor (issue 35, item 5): ratios in one run.

Run ``python benchmarks/llm_translator.py`` (``--events N``, ``--rounds N``, ``--quick``).

For every ordered pair of dialects (20), ``Translator(source, target).feed(event)`` for
every event of one streamed answer, then ``end()``, against the floor the issue names:
``json.loads`` of each event's data plus ``json.dumps`` of what it decoded (what any
code that reads one API's JSON and writes another's must at least do per event).
Target: at most 2x.  Parsing is in neither (the events are parsed beforehand, as a
gateway's Connection hands them over), and neither serializes the output events.

The answers: benchmarks/workloads.py's ``llm`` stream (OpenAI chunks of 200-300 bytes
of text; a chunk with finish_reason "stop" added before ``data: [DONE]``), and the
same answer in each other dialect, written by the Translator itself from it (so each
source stream has the shape its target writer gives: one delta per event, the API's
envelope around it).  Timing is layers.py's:
CPU time of this thread, the cases interleaved round-robin with the order rotating,
the median of the rounds per case; a ratio is two medians of the same run.  On a shared
machine expect 10-20 % noise between runs.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))

from benchmarks import workloads as wl  # noqa: E402
from sse_sansio import Event, serialize  # noqa: E402
from sse_sansio.llm import REFRAMER_DIALECTS, Translator  # noqa: E402
from sse_sansio.testing import parse  # noqa: E402

Case = Callable[[], int]  # one run over every event; returns how much it wrote
BASE = "openai-chat"  # the workload's own dialect


def streams(n_events: int) -> dict[str, list[Event]]:
    """The workload's answer as parsed events, in every dialect."""
    base = [item for item in parse(wl.llm(n_events).stream) if isinstance(item, Event)]
    # The workload's chunks never finish: the answer ends with finish_reason "stop".
    choice = {"index": 0, "delta": {}, "finish_reason": "stop"}
    last = {"id": "chatcmpl-B9x", "object": "chat.completion.chunk", "choices": [choice]}
    base.insert(-1, Event(data=json.dumps(last)))
    found = {BASE: base}
    for target in REFRAMER_DIALECTS:
        if target == BASE:
            continue
        translator = Translator(BASE, target)
        out = [frame for event in base for frame in translator.feed(event)]
        out += translator.end()
        data = b"".join(serialize(frame) for frame in out)
        found[target] = [item for item in parse(data) if isinstance(item, Event)]
    return found


def translating(source: str, target: str, events: list[Event]) -> Case:
    def run() -> int:
        translator = Translator(source, target)
        feed = translator.feed
        written = 0
        for event in events:
            written += len(feed(event))
        return written + len(translator.end())

    return run


def floor(events: list[Event]) -> Case:
    """json.loads of each event's JSON data, json.dumps of what it decoded."""
    texts = []
    for event in events:
        try:
            json.loads(event.data)
        except ValueError:
            continue  # data: [DONE] is no JSON: nothing to decode
        texts.append(event.data)
    loads, dumps = json.loads, json.dumps

    def run() -> int:
        size = 0
        for text in texts:
            size += len(dumps(loads(text), ensure_ascii=False))
        return size

    return run


def timed(cases: dict[str, Case], rounds: int) -> dict[str, float]:
    """The median CPU seconds of one run of each case, interleaved round-robin (as
    layers.py times)."""
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
    parser.add_argument("--events", type=int, default=5_000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="500 events, 3 rounds")
    args = parser.parse_args(argv)
    events, rounds = (500, 3) if args.quick else (args.events, args.rounds)
    answers = streams(events)
    cases: dict[str, Case] = {}
    for source, source_events in answers.items():
        cases[f"floor {source}"] = floor(source_events)
        for target in REFRAMER_DIALECTS:
            cases[f"{source} -> {target}"] = translating(source, target, source_events)
    medians = timed(cases, rounds)
    worst = 0.0
    print(
        f"{events} events per answer, {rounds} rounds; ratio = Translator / floor (target <= 2.0)"
    )
    print(f"{'pair':<36} {'us/event':>9} {'ratio':>6}")
    for source, source_events in answers.items():
        base = medians[f"floor {source}"]
        for target in REFRAMER_DIALECTS:
            took = medians[f"{source} -> {target}"]
            ratio = took / base
            worst = max(worst, ratio)
            per_event = took / len(source_events) * 1e6
            print(f"{source + ' -> ' + target:<36} {per_event:>9.2f} {ratio:>6.2f}")
    print(f"worst ratio: {worst:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
