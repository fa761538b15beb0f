"""Coverage-guided fuzzing of sse_sansio: the parser, and the serializer round trip.

Usage::

    python tests/fuzz/run.py [--seconds N] [--engine atheris|hypothesis] [--max-len N]

The time budget is ``--seconds``, else the ``FUZZ_SECONDS`` environment variable, else
60.  The engine is atheris (libFuzzer, coverage-guided) when it is installed, else
Hypothesis with a large example budget.  Exit status 0 means no invariant was violated;
anything else is a failure, reported with the input that caused it.  The last line
printed says ``fuzz: <engine>: <N> executions in <S> s``.

Invariants, checked on every input:

1. Parsing raises nothing but RemoteProtocolError, in both decoding modes and with or
   without a size limit.
2. Every chunking (whole, one byte at a time, two random splits) gives the same items
   values, the same error, last_event_id and retry, and spans by the span rule (a
   chunk that ends with the CR of a CRLF ends the item there); and all of them agree
   with the reference model in tests/helpers/model.py, given where the chunks end.
3. serialize() then parse gives back every valid parsed Event and Comment.
4. Hostile strings for an Event's type, data, id and retry and a Comment's text (CR, LF,
   NUL, lone surrogates, anything) are refused by the constructor or serialize() with
   LocalProtocolError, or round-trip exactly: never an extra or a changed line.
5. keep_raw=True changes no item, span or error; a verbatim proxy (forwarding every
   item's ``raw`` and ``take_raw()`` at each NEED_DATA) forwards a prefix of the stream,
   the same under every chunking, that parses to the same events and last event ID.
6. The modes of issue 15, against the default mode under the same chunking:
   ``diagnostics=True`` gives the same items, error and state once its Diagnostic items
   are left out, each with a known code; with ``piece_size``, each run of DataPiece
   items and its PiecedEvent joined is the Event a connection without a limit gives
   (a refusal of the limit, which bounds only what is held, ends a prefix of them);
   ``on_oversize="skip"`` gives what the default gives up to the event the limit
   refuses, and that event is the one skipped: its block starts max_event_size bytes
   before the offset of the default's error.

The first input byte chooses the options (see ``Options``); the rest is the stream, or
the strings for invariant 4.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from base64 import b64decode
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

_STATS = {"executions": 0}


class Options(NamedTuple):
    """What the first input byte selects."""

    errors: str  # bit 0
    max_event_size: int | None  # bits 1-2: none, 16, 200, 16 MiB (the default)
    target: str  # bit 3: "parse" or "serialize"
    seed: int  # bits 4-7: the random chunkings' seed


def options_of(flags: int) -> Options:
    return Options(
        errors="replace" if flags & 1 else "strict",
        max_event_size=(None, 16, 200, 16 * 1024 * 1024)[(flags >> 1) & 3],
        target="serialize" if flags & 8 else "parse",
        seed=flags >> 4,
    )


# --------------------------------------------------------------------------- the checks


def one_input(data: bytes) -> None:
    """Check every invariant on one fuzzer input; raise AssertionError on a violation."""
    _STATS["executions"] += 1
    if not data:
        return
    options = options_of(data[0])
    if options.target == "serialize":
        check_hostile_strings(data[1:])
    else:
        check_parse(data[1:], options)


def _outcome(chunks: list[bytes], **options: Any) -> tuple[list[Any], Any, str, int | None]:
    """Feed chunks and the end of stream; anything but RemoteProtocolError propagates."""
    from sse_sansio import NEED_DATA, Connection, EndOfStream, RemoteProtocolError

    conn = Connection(**options)
    items: list[Any] = []
    error = None
    try:
        for chunk in [*chunks, b""]:
            conn.receive_data(chunk)
            while True:
                item = conn.next_event()
                if item is NEED_DATA:
                    break
                items.append(item)
                if isinstance(item, EndOfStream):
                    break
    except RemoteProtocolError as exc:
        message, error = str(exc), ("size" if "max_event_size" in str(exc) else "utf8", exc.offset)
    else:
        message = ""
    assert error is None or message.endswith(f" at byte offset {error[1]}"), message
    return items, error, conn.last_event_id, conn.retry


def _forwarded(chunks: list[bytes], **options: Any) -> tuple[list[Any], Any, bytes]:
    """Run a keep_raw connection as a verbatim proxy: what would it forward?"""
    from sse_sansio import NEED_DATA, Connection, EndOfStream, RemoteProtocolError

    conn = Connection(keep_raw=True, **options)
    items: list[Any] = []
    out: list[bytes] = []
    error = None
    try:
        for chunk in [*chunks, b""]:
            conn.receive_data(chunk)
            while True:
                item = conn.next_event()
                if item is NEED_DATA:
                    out.append(conn.take_raw())
                    break
                items.append(item)
                assert item.raw is not None, item
                out.append(item.raw)
                if isinstance(item, EndOfStream):
                    break
    except RemoteProtocolError as exc:
        error = ("size" if "max_event_size" in str(exc) else "utf8", exc.offset)
    return items, error, b"".join(out)


def check_keep_raw(stream: bytes, ways: list[list[bytes]], options: Options) -> None:
    """Invariant 5: keep_raw changes no item, and forwards the same safe prefix."""
    from sse_sansio import Event

    forwarded = set()
    for chunks in ways:
        plain_items, plain_error, plain_last_id, _ = _outcome(
            chunks, errors=options.errors, max_event_size=options.max_event_size
        )
        items, error, out = _forwarded(
            chunks, errors=options.errors, max_event_size=options.max_event_size
        )
        assert (items, error) == (plain_items, plain_error), (chunks, items, plain_items)
        spans = [getattr(item, "span", None) for item in items]
        assert spans == [getattr(item, "span", None) for item in plain_items], chunks
        if error is not None:
            continue
        assert stream.startswith(out), (chunks, out)
        forwarded.add(out)
        again, error, last_id, _ = _outcome([out], errors=options.errors, max_event_size=None)
        assert error is None, (out, error)
        assert last_id == plain_last_id, (out, last_id, plain_last_id)
        events = [item for item in items if isinstance(item, Event)]
        assert [item for item in again if isinstance(item, Event)] == events, (out, again)
    assert len(forwarded) <= 1, forwarded


def _joined(items: list[Any]) -> list[Any]:
    """Each run of DataPiece items and its PiecedEvent as the one Event they make; the
    pieces of an event that never completed (the stream ended inside it) left out."""
    from sse_sansio import (
        DataPiece,
        Event,
        PiecedEvent,
    )

    out: list[Any] = []
    texts: list[str] = []
    for item in items:
        if isinstance(item, DataPiece):
            texts.append(item.text)
        elif isinstance(item, PiecedEvent):
            assert texts, item  # an event is pieced only once its data passed piece_size
            data = "".join(texts)
            out.append(Event(type=item.type, data=data, id=item.id, retry=item.retry))
            texts = []
        else:
            out.append(item)
    return out


def check_huge_modes(ways: list[list[bytes]], options: Options) -> None:
    """Invariant 6: the three modes against the default one, chunking by chunking."""
    from sse_sansio import (
        Diagnostic,
        EndOfStream,
        SkippedEvent,
    )
    from sse_sansio._receive._diagnostics import CODES

    errors, limit = options.errors, options.max_event_size
    for chunks in ways:
        plain = _outcome(chunks, errors=errors, max_event_size=limit)
        plain_spans = [getattr(item, "span", None) for item in plain[0]]

        seen = _outcome(chunks, errors=errors, max_event_size=limit, diagnostics=True)
        notes = [item for item in seen[0] if isinstance(item, Diagnostic)]
        assert {note.code for note in notes} <= set(CODES), notes
        rest = [item for item in seen[0] if not isinstance(item, Diagnostic)]
        assert (rest, *seen[1:]) == plain, (chunks, seen, plain)
        assert [getattr(item, "span", None) for item in rest] == plain_spans, chunks

        size = 1 + options.seed % 8 if limit is None else min(1 + options.seed % 8, limit)
        pieced = _outcome(chunks, errors=errors, max_event_size=limit, piece_size=size)
        whole = _outcome(chunks, errors=errors, max_event_size=None)
        joined = [item for item in _joined(pieced[0]) if not isinstance(item, EndOfStream)]
        events = [item for item in whole[0] if not isinstance(item, EndOfStream)]
        if pieced[1] is not None and pieced[1][0] == "size":
            assert events[: len(joined)] == joined, (chunks, joined, events)
        else:
            assert joined == events, (chunks, joined, events)
            assert pieced[1:] == whole[1:], (chunks, pieced, whole)

        if limit is None:
            continue
        skipping = _outcome(chunks, errors=errors, max_event_size=limit, on_oversize="skip")
        assert skipping[1] is None or skipping[1][0] == "utf8", (chunks, skipping)
        if plain[1] is None or plain[1][0] != "size":
            assert skipping == plain, (chunks, skipping, plain)
            continue
        # Up to the refused event, the same; then that event, skipped (or the end).
        done = len(plain[0])
        assert skipping[0][:done] == plain[0], (chunks, skipping, plain)
        following = skipping[0][done : done + 1]
        if following and isinstance(following[0], SkippedEvent):
            assert following[0].start + limit == plain[1][1], (chunks, following, plain)
            assert following[0].size > limit, (chunks, following)
        elif following:
            assert isinstance(following[0], EndOfStream), (chunks, following)
            assert following[0].partial_event, (chunks, following)


def _as_model(items: list[Any]) -> list[Any]:
    from sse_sansio import Comment, Event
    from tests.helpers.model import MComment, MEnd, MEvent

    out: list[Any] = []
    for item in items:
        if isinstance(item, Event):
            out.append(MEvent(item.type, item.data, item.id, item.retry, item.start, item.end))
        elif isinstance(item, Comment):
            out.append(MComment(item.text, item.start, item.end))
        else:
            out.append(MEnd(item.partial_line, item.partial_event))
    return out


def _model(
    stream: bytes, errors: str, limit: int | None, cuts: list[int]
) -> tuple[Any, Any, Any, Any]:
    from tests.helpers.model import interpret

    result = interpret(stream, errors=errors, max_event_size=limit, cuts=cuts)
    error = None if result.error is None else (result.error.kind, result.error.offset)
    return result.items, error, result.last_event_id, result.retry


def _chunkings(stream: bytes, seed: int) -> list[list[bytes]]:
    rng = random.Random(seed * 7919 + len(stream))
    ways = [[stream] if stream else []]
    if len(stream) <= 4096:
        ways.append([stream[i : i + 1] for i in range(len(stream))])
    for _ in range(2):
        cuts = sorted({rng.randint(1, max(1, len(stream) - 1)) for _ in range(rng.randint(1, 9))})
        bounds = [0, *(c for c in cuts if c < len(stream)), len(stream)]
        ways.append([stream[a:b] for a, b in itertools.pairwise(bounds) if a < b])
    return ways


def check_parse(stream: bytes, options: Options) -> None:
    """Invariants 1-3 on one stream."""
    from sse_sansio import Comment, EndOfStream, Event, serialize

    limit = options.max_event_size
    whole = None
    for chunks in _chunkings(stream, options.seed):
        items, error, last_id, retry = _outcome(chunks, errors=options.errors, max_event_size=limit)
        want = _model(stream, options.errors, limit, [*itertools.accumulate(map(len, chunks))])
        got = (_as_model(items), error, last_id, retry)
        assert got == want, f"chunks {chunks!r}:\n  library {got!r}\n  model   {want!r}"
        if whole is None:
            whole = items

    check_keep_raw(stream, _chunkings(stream, options.seed)[:2], options)
    ways = _chunkings(stream, options.seed)
    check_huge_modes([ways[0], ways[-1]], options)

    # Round trip of every item the whole input produced.
    for item in whole or []:
        if isinstance(item, EndOfStream):
            continue
        assert isinstance(item, (Event, Comment))
        again, error, last_id, _ = _outcome([serialize(item)])
        assert error is None, (item, error)
        assert again == [item, EndOfStream()], (item, again)
        if isinstance(item, Event):
            assert last_id == item.id, (item, last_id)


def _strings(data: bytes) -> list[str]:
    """Cut the input into strings that hold anything: CR, LF, NUL, lone surrogates."""
    parts = data.split(b"\xfe")
    out = []
    for part in parts[:5]:
        if part[:1] == b"\xfd":
            # Code units: reaches every code point, lone surrogates included.
            out.append(
                part[1 : len(part) - (len(part) - 1) % 2].decode("utf-16-le", "surrogatepass")
            )
        else:
            out.append(part.decode("utf-8", "replace"))
    return out + [""] * (5 - len(out))


def check_hostile_strings(data: bytes) -> None:
    """Invariant 4: refused with LocalProtocolError, or round-trips exactly."""
    from sse_sansio import Comment, EndOfStream, Event, LocalProtocolError, serialize

    type_, text, id_, retry_text, comment = _strings(data)
    retry = int(retry_text) if retry_text.isascii() and retry_text.isdigit() else None
    for build in (
        lambda: Event(type=type_ or "message", data=text, id=id_, retry=retry),
        lambda: Comment(text=comment),
    ):
        try:
            item = build()
            raw = serialize(item)
        except LocalProtocolError:
            continue
        items, error, last_id, _ = _outcome([raw])
        assert error is None, (item, raw, error)
        if isinstance(item, Event):
            # CR and CRLF in data come back as LF: all three end a data line.
            expected: Any = Event(
                type=item.type,
                data=item.data.replace("\r\n", "\n").replace("\r", "\n"),
                id=item.id,
                retry=item.retry,
            )
            assert last_id == item.id, (item, raw, last_id)
        else:
            expected = item
        assert items == [expected, EndOfStream()], (item, raw, items)


# --------------------------------------------------------------------------- seeds


def seed_inputs() -> list[bytes]:
    """Conformance vectors and hand-picked streams, each with a few option bytes."""
    cases = json.loads((ROOT / "tests" / "data" / "conformance_cases.json").read_text("utf-8"))
    streams = [b64decode(case["input_b64"]) for case in cases]
    streams = [s for s in streams if len(s) <= 4000]
    streams += [
        b"\xef\xbb\xbfdata: a\r\n\r\n: c\rretry: 10\nid: 1\n\n",
        b"event: x\ndata\ndata:\n\ndata: \xff\xc3\n\n",
        b"data: 1\r\r\r\ndata: 2\n\n" * 3,
        # Runs of one block shape, for the fast path in sse_sansio/_receive/_uniform.py.
        b"data: {}\n\n" * 20,
        b"event: e\ndata: \xe4\xb8\xad\n\n" * 12 + b"event:\ndata: x\n\n",
        b": ping\r\n\r\n" * 20 + b"data: x\r\n\r\n",
        b"data:a\rdata: b\r\r" * 10 + b"id: 1\r\r",
    ]
    seeds = []
    for i, stream in enumerate(streams):
        seeds.append(bytes([(i * 2) & 0xF7]) + stream)
    seeds += [
        b"\x08event: t\xfedata\r\nline\xfe7\xfe12\xfe comment",
        b"\x08\xfd\x0a\x00\xfe\xfd\x00\xd8\xfe\xfe\xfe:",
    ]
    return seeds


# --------------------------------------------------------------------------- engines


def run_atheris(seconds: int, max_len: int, extra: list[str]) -> int:
    """Fuzz in a child process (libFuzzer exits without returning to Python)."""
    with tempfile.TemporaryDirectory(prefix="sse_sansio_fuzz_") as tmp:
        corpus = Path(tmp) / "corpus"
        corpus.mkdir()
        for i, seed in enumerate(seed_inputs()):
            (corpus / f"seed{i:04}").write_bytes(seed)
        artifacts = Path(os.environ.get("FUZZ_ARTIFACTS", tmp))
        args = [
            sys.executable,
            __file__,
            "--child",
            f"-max_total_time={seconds}",
            f"-max_len={max_len}",
            "-timeout=20",
            f"-artifact_prefix={artifacts}{os.sep}",
            "-print_final_stats=1",
            *extra,
            str(corpus),
        ]
        start = time.monotonic()
        proc = subprocess.Popen(args, stderr=subprocess.PIPE, text=True, errors="replace")
        assert proc.stderr is not None
        runs = 0
        for line in proc.stderr:
            sys.stderr.write(line)
            if line.startswith("stat::number_of_executed_units:"):
                runs = int(line.split(":")[-1])
        code = proc.wait()
        if code != 0 and artifacts == Path(tmp):
            for crash in Path(tmp).glob("crash-*"):
                print(f"fuzz: crashing input (hex): {crash.read_bytes().hex()}")
        elapsed = time.monotonic() - start
    print(f"fuzz: atheris: {runs} executions in {elapsed:.1f} s (exit status {code})")
    return code


def child() -> None:
    import atheris  # type: ignore[import-untyped,import-not-found,unused-ignore]

    with atheris.instrument_imports(include=["sse_sansio"]):
        import sse_sansio  # noqa: F401

    atheris.Setup([sys.argv[0], *sys.argv[2:]], one_input)
    atheris.Fuzz()


def run_hypothesis(seconds: int, max_len: int) -> int:
    """No atheris: Hypothesis, SSE-shaped and raw inputs, until the time is up."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from tests.helpers.strategies import streams

    start = time.monotonic()
    for seed in seed_inputs():
        one_input(seed)
    inputs = st.tuples(
        st.integers(0, 255), st.one_of(streams(allow_long=False), st.binary(max_size=max_len))
    ).map(lambda t: bytes([t[0]]) + t[1])

    # Batches of examples, each batch with fresh randomness, until the budget is spent
    # (a batch that finds a violation shrinks it and raises).
    @settings(
        max_examples=500,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(inputs)
    def fuzz(data: bytes) -> None:
        one_input(data)

    try:
        while time.monotonic() - start < seconds:
            fuzz()
    except Exception:
        print(f"fuzz: hypothesis: invariant violated after {_STATS['executions']} executions")
        raise
    elapsed = time.monotonic() - start
    print(f"fuzz: hypothesis: {_STATS['executions']} executions in {elapsed:.1f} s")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=int, default=int(os.environ.get("FUZZ_SECONDS", 60)))
    parser.add_argument("--engine", choices=("atheris", "hypothesis"), default=None)
    parser.add_argument("--max-len", type=int, default=4096)
    args, extra = parser.parse_known_args(argv)
    engine = args.engine
    if engine is None:
        try:
            import atheris  # type: ignore[import-untyped,import-not-found,unused-ignore]  # noqa: F401

            engine = "atheris"
        except ImportError:
            engine = "hypothesis"
    if engine == "atheris":
        return run_atheris(args.seconds, args.max_len, extra)
    return run_hypothesis(args.seconds, args.max_len)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child()
    sys.exit(main())
