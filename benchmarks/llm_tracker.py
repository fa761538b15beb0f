"""llm.Tracker, HoldBack and StreamStats against json.loads of the same events (issue 35,
item 5; issue 42, item 8): ratios in one run.

Run ``python benchmarks/llm_tracker.py`` (``--events N``, ``--rounds N``,
``--dialects a,b``); ``--callgrind`` counts instructions per event of each case's loop
instead (valgrind, as benchmarks/callgrind.py does: only the code inside a
``functools.reduce()`` call is counted, after one untimed warm-up pass; one process per
dialect, ``--dump-after=functools_reduce`` giving one count per case);
``--callgrind --translator`` counts benchmarks/llm_translator.py's pairs the same way
(Translator per event over ``json.loads`` + ``json.dumps``, target at most 2x).

For each dialect, one response of ``--events`` events in the shapes its API streams
(from the API references; the tests' streams in tests/data/llm have the same fields):
text deltas of one to three tokens, with the envelope each API sends around them, then
the usage and the terminal events.  The events are parsed once, beforehand (the parser
is measured elsewhere); the cases run on the same Event objects:

- **floor**: ``json.loads(event.data)`` for every event whose data is JSON (OpenAI's
  and the AI SDK's ``[DONE]`` is skipped): the least a program that reads the payloads
  does;
- **tracker**: ``Tracker(dialect)``, ``feed(event)`` for every event, ``end()``, then
  ``outcome.usage`` and ``answer`` (text, reasoning and tool calls joined): the
  outcome, usage and answer a gateway reports.  Target: at most 1.3x the floor;
- **holdback**: ``HoldBack(dialect, chars=200)``, ``push(event, now)`` for every event
  (one time per event, 10 ms apart), then ``approve()``.  Target: at most 1.5x;
- **stats**: ``StreamStats(dialect)``, ``saw_item(event, now)`` for every event, then
  ``end()`` and ``as_dict()``.  Target: at most 1.5x.

Each case is checked first (the tracker's outcome, usage and text; every event released
by the HoldBack; the stats' outcome and token count): a benchmark of a wrong answer is
void.  Timing is benchmarks/layers.py's: CPU time of this thread, the cases interleaved
round-robin, the median of the rounds per case; a ratio is two medians of one run.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import reduce
from pathlib import Path
from typing import Any, cast

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))

from sse_sansio import Event  # noqa: E402
from sse_sansio.llm import Answer, HoldBack, StreamStats, Tracker, Usage  # noqa: E402
from sse_sansio.testing import parse  # noqa: E402

#: The most each case may cost per event, in json.loads of the same events.
TARGETS = {"tracker": 1.3, "holdback": 1.5, "stats": 1.5}
WORDS = ("the", " model", " streams", " a", " token", ",", " then", " another", " one", ".")


def _tokens(rng: random.Random) -> str:
    return "".join(rng.choice(WORDS) for _ in range(rng.randint(1, 3)))


def _sse(payload: Any, event: str | None = None) -> bytes:
    head = b"" if event is None else f"event: {event}\n".encode()
    return head + b"data: " + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"


def openai_chat(n: int, rng: random.Random) -> bytes:
    base = {
        "id": "chatcmpl-B9xMqv7hN3",
        "object": "chat.completion.chunk",
        "created": 1_730_000_000,
        "model": "gpt-4o-mini-2024-07-18",
        "system_fingerprint": "fp_0ba0d124f1",
    }
    out = []
    for i in range(n - 3):
        delta = {"role": "assistant", "content": ""} if i == 0 else {"content": _tokens(rng)}
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": None}
        out.append(_sse({**base, "choices": [choice], "usage": None, "obfuscation": "kW3x"}))
    last = {"index": 0, "delta": {}, "logprobs": None, "finish_reason": "stop"}
    out.append(_sse({**base, "choices": [last], "usage": None}))
    usage = {
        "prompt_tokens": 19,
        "completion_tokens": n,
        "total_tokens": n + 19,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
    }
    out.append(_sse({**base, "choices": [], "usage": usage}))
    out.append(b"data: [DONE]\n\n")
    return b"".join(out)


def openai_responses(n: int, rng: random.Random) -> bytes:
    def named(payload: dict[str, Any]) -> bytes:
        return _sse(payload, payload["type"])

    response = {"id": "resp_67ccd2bed1ec8190", "object": "response", "model": "gpt-4o"}
    out = [
        named(
            {
                "type": "response.created",
                "sequence_number": 0,
                "response": {**response, "status": "in_progress", "output": [], "usage": None},
            }
        )
    ]
    for i in range(1, n - 1):
        delta = {
            "type": "response.output_text.delta",
            "sequence_number": i,
            "item_id": "msg_67ccd2bf17f0819081ff3bb2cf6508e6",
            "output_index": 0,
            "content_index": 0,
            "delta": _tokens(rng),
            "logprobs": [],
            "obfuscation": "Jd9P",
        }
        out.append(named(delta))
    usage = {
        "input_tokens": 36,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": n,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": n + 36,
    }
    done = {**response, "status": "completed", "usage": usage}
    out.append(named({"type": "response.completed", "sequence_number": n, "response": done}))
    return b"".join(out)


def anthropic(n: int, rng: random.Random) -> bytes:
    def named(payload: dict[str, Any]) -> bytes:
        return _sse(payload, payload["type"])

    message: dict[str, Any] = {
        "id": "msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY",
        "type": "message",
        "role": "assistant",
        "content": [],
        "model": "claude-sonnet-4-5",
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 25, "output_tokens": 1},
    }
    out = [
        named({"type": "message_start", "message": message}),
        named(
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            }
        ),
    ]
    for _ in range(n - 5):
        delta = {"type": "text_delta", "text": _tokens(rng)}
        out.append(named({"type": "content_block_delta", "index": 0, "delta": delta}))
    out.append(named({"type": "content_block_stop", "index": 0}))
    out.append(
        named(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": n},
            }
        )
    )
    out.append(named({"type": "message_stop"}))
    return b"".join(out)


def gemini(n: int, rng: random.Random) -> bytes:
    out = []
    for i in range(n):
        candidate: dict[str, Any] = {
            "content": {"parts": [{"text": _tokens(rng)}], "role": "model"},
            "index": 0,
        }
        if i == n - 1:
            candidate["finishReason"] = "STOP"
        usage = {"promptTokenCount": 8, "candidatesTokenCount": i + 1, "totalTokenCount": i + 9}
        payload = {
            "candidates": [candidate],
            "usageMetadata": usage,
            "modelVersion": "gemini-2.5-flash",
            "responseId": "Y3bLaO6fNqDXz7IPnM2J0Q8",
        }
        out.append(_sse(payload))
    return b"".join(out)


def ai_sdk_ui(n: int, rng: random.Random) -> bytes:
    out = [
        _sse({"type": "start", "messageId": "msg_Qd2tK1"}),
        _sse({"type": "start-step"}),
        _sse({"type": "text-start", "id": "txt-0"}),
    ]
    for _ in range(n - 7):
        out.append(_sse({"type": "text-delta", "id": "txt-0", "delta": _tokens(rng)}))
    out.append(_sse({"type": "text-end", "id": "txt-0"}))
    out.append(_sse({"type": "finish-step"}))
    usage = {"inputTokens": 12, "outputTokens": n, "totalTokens": n + 12}
    out.append(
        _sse({"type": "finish", "finishReason": "stop", "messageMetadata": {"usage": usage}})
    )
    out.append(b"data: [DONE]\n\n")
    return b"".join(out)


STREAMS: dict[str, Callable[[int, random.Random], bytes]] = {
    "openai-chat": openai_chat,
    "openai-responses": openai_responses,
    "anthropic": anthropic,
    "gemini": gemini,
    "ai-sdk-ui": ai_sdk_ui,
}


def events_of(dialect: str, n: int) -> list[Event]:
    stream = STREAMS[dialect](n, random.Random(7))
    return [item for item in parse(stream) if isinstance(item, Event)]


def floor(events: list[Event]) -> Callable[[], object]:
    datas = [event.data for event in events if event.data != "[DONE]"]
    loads = json.loads

    def run() -> object:
        last = None
        for data in datas:
            last = loads(data)
        return last

    return run


def tracker(dialect: str, events: list[Event]) -> Callable[[], object]:
    def run() -> object:
        t = Tracker(dialect)
        feed = t.feed
        for event in events:
            feed(event)
        outcome = t.end()
        return outcome.outcome, outcome.usage, t.answer

    return run


def holdback(dialect: str, events: list[Event]) -> Callable[[], object]:
    """HoldBack(chars=200): push every event at its time, then approve() the tail."""
    times = [0.01 * i for i in range(len(events))]

    def run() -> object:
        hold = HoldBack(dialect, chars=200, now=0.0)
        push = hold.push
        sent = 0
        for event, at in zip(events, times, strict=True):
            sent += len(push(event, at))
        return sent + len(hold.approve())

    return run


def stats(dialect: str, events: list[Event]) -> Callable[[], object]:
    """StreamStats: saw_item() for every event at its time, end(), as_dict()."""
    times = [0.01 * i for i in range(len(events))]
    last = times[-1] if times else 0.0

    def run() -> object:
        s = StreamStats(dialect, now=0.0)
        saw = s.saw_item
        for event, at in zip(events, times, strict=True):
            saw(event, at)
        s.end(last)
        return s.as_dict()

    return run


#: The cases measured beside the floor, by name.
CASES: dict[str, Callable[[str, list[Event]], Callable[[], object]]] = {
    "tracker": tracker,
    "holdback": holdback,
    "stats": stats,
}


def timed(cases: dict[str, Callable[[], object]], rounds: int) -> dict[str, float]:
    """The median CPU seconds of one run of each case, interleaved round-robin."""
    samples: dict[str, list[float]] = {name: [] for name in cases}
    names = list(cases)
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            gc.collect()
            start = time.thread_time()
            cases[name]()
            samples[name].append(time.thread_time() - start)
    return {name: statistics.median(s) for name, s in samples.items()}


def check(dialect: str, events: list[Event]) -> None:
    """Each case read the whole stream: a benchmark of a wrong answer is void."""
    result = tracker(dialect, events)()
    outcome, usage, answer = cast("tuple[str, Usage, Answer]", result)
    assert outcome == "completed", (dialect, outcome)
    assert usage.provenance == "reported", (dialect, usage)
    assert len(answer.text) > len(events), (dialect, len(answer.text))
    assert holdback(dialect, events)() == len(events), dialect  # every event released
    figures = cast("dict[str, Any]", stats(dialect, events)())
    assert figures["outcome"] == "completed", (dialect, figures)
    assert figures["token_events"] >= len(events) - 8, (dialect, figures)


# -- callgrind: instructions per event, deterministic -------------------------------------

_TOTAL = re.compile(r"^(?:summary|totals):\s*(\d+)", re.MULTILINE)


def _counted(dialect: str, n: int, cases: list[str]) -> None:
    """Run in the child process under valgrind: for each case in turn, a warm-up pass,
    then one counted pass inside reduce() (valgrind dumps the counts as it returns)."""
    events = events_of(dialect, n)
    _count([floor(events) if case == "floor" else CASES[case](dialect, events) for case in cases])


def _counted_pairs(source: str, n: int) -> None:
    """The same for llm_translator.py's cases of one source: its floor, then the
    Translator to each target in REFRAMER_DIALECTS' order."""
    from benchmarks import llm_translator as lt
    from sse_sansio.llm import REFRAMER_DIALECTS

    events = lt.streams(n)[source]
    targets = [lt.translating(source, target, events) for target in REFRAMER_DIALECTS]
    _count([lt.floor(events), *targets])


def _count(runs: list[Callable[[], object]]) -> None:
    for run in runs:
        run()
        reduce(lambda _, __: run(), [None, None], None)  # the counted pass: reduce calls it once


def _valgrind(call: str) -> list[int]:
    """The instructions of each counted pass of ``call`` (a _counted* call of this
    module), in one process under valgrind (``--dump-after=functools_reduce``: one
    dump per pass, in order)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        code = (
            f"import sys; sys.path.append({str(ROOT)!r}); "
            f"from benchmarks import llm_tracker as b; b.{call}"
        )
        subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                "--collect-atstart=no",
                "--toggle-collect=functools_reduce",
                "--dump-after=functools_reduce",
                f"--callgrind-out-file={out}",
                sys.executable,
                "-c",
                code,
            ],
            check=True,
            capture_output=True,
            env={**os.environ, "PYTHONHASHSEED": "0"},
        )
        dumps = sorted(Path(tmp).glob("callgrind.out.*"), key=lambda f: int(f.suffix[1:]))
        found = [_TOTAL.search(dump.read_text()) for dump in dumps]
        return [int(match[1]) for match in found if match is not None]


def counts(dialect: str, n: int, cases: list[str]) -> dict[str, float]:
    """Instructions per event of each case."""
    totals = _valgrind(f"_counted({dialect!r}, {n}, {cases!r})")
    assert len(totals) == len(cases), (dialect, len(totals), cases)
    events = len(events_of(dialect, n))
    return {case: total / events for case, total in zip(cases, totals, strict=True)}


def callgrind(dialects: list[str], n: int) -> int:
    names = list(CASES)
    print("instructions per event; ratio = case / json.loads")
    print("| dialect | json.loads | " + " | ".join(f"{c} | ratio" for c in names) + " |")
    print("|---|---:|" + "---:|---:|" * len(names))
    for dialect in dialects:
        found = counts(dialect, n, ["floor", *names])
        base = found["floor"]
        cells = " | ".join(f"{found[c]:,.0f} | {found[c] / base:.2f}x" for c in names)
        print(f"| {dialect} | {base:,.0f} | {cells} |", flush=True)
    return 0


def callgrind_pairs(sources: list[str], n: int) -> int:
    """llm_translator.py's pairs in instructions: Translator / (json.loads + json.dumps)."""
    from benchmarks import llm_translator as lt
    from sse_sansio.llm import REFRAMER_DIALECTS

    print("instructions per source event; ratio = Translator / (json.loads + json.dumps)")
    print("| source | loads+dumps | " + " | ".join(REFRAMER_DIALECTS) + " |")
    print("|---|---:|" + "---:|" * len(REFRAMER_DIALECTS))
    worst = (0.0, "")
    for source in sources:
        totals = _valgrind(f"_counted_pairs({source!r}, {n})")
        assert len(totals) == 1 + len(REFRAMER_DIALECTS), (source, totals)
        events = len(lt.streams(n)[source])
        base, *pairs = (total / events for total in totals)
        ratios = [pair / base for pair in pairs]
        for target, ratio in zip(REFRAMER_DIALECTS, ratios, strict=True):
            worst = max(worst, (ratio, f"{source} -> {target}"))
        cells = " | ".join(f"{ratio:.2f}x" for ratio in ratios)
        print(f"| {source} | {base:,.0f} | {cells} |", flush=True)
    print(f"worst pair: {worst[1]}, {worst[0]:.2f}x (target 2.0x)")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=31)
    parser.add_argument("--dialects", default=",".join(STREAMS))
    parser.add_argument("--callgrind", action="store_true")
    parser.add_argument(
        "--translator",
        action="store_true",
        help="with --callgrind: llm_translator.py's pairs (the --dialects as sources)",
    )
    args = parser.parse_args(argv)
    dialects = args.dialects.split(",")
    if args.callgrind and args.translator:
        return callgrind_pairs(dialects, args.events)
    if args.callgrind:
        return callgrind(dialects, args.events)
    cases: dict[str, Callable[[], object]] = {}
    counts = {}
    for dialect in dialects:
        events = events_of(dialect, args.events)
        check(dialect, events)
        counts[dialect] = len(events)
        cases[f"{dialect} floor"] = floor(events)
        for name, case in CASES.items():
            cases[f"{dialect} {name}"] = case(dialect, events)
    medians = timed(cases, args.rounds)
    print(
        f"Python {sys.version.split()[0]}, {args.events} events per response, {args.rounds} rounds"
    )
    print("ns per event; ratio = case / json.loads")
    print("| dialect | json.loads | " + " | ".join(f"{c} | ratio" for c in CASES) + " |")
    print("|---|---:|" + "---:|---:|" * len(CASES))
    worst = dict.fromkeys(CASES, 0.0)
    for dialect in dialects:
        f = medians[f"{dialect} floor"] / counts[dialect] * 1e9
        cells = []
        for name in CASES:
            t = medians[f"{dialect} {name}"] / counts[dialect] * 1e9
            worst[name] = max(worst[name], t / f)
            cells.append(f"{t:,.0f} | {t / f:.2f}x")
        print(f"| {dialect} | {f:,.0f} | " + " | ".join(cells) + " |")
    for name, ratio in worst.items():
        print(f"{name}: worst ratio {ratio:.2f}x (target {TARGETS[name]}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
