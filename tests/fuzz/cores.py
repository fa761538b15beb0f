"""Differential fuzzing: the compiled core (sse_sansio/_receive/_core.c) against the pure one.

Usage::

    python tests/fuzz/cores.py [--seconds N] [--engine atheris|random]

The time budget is ``--seconds``, else the ``FUZZ_SECONDS`` environment variable, else
60.  atheris (libFuzzer) is used when installed, guided by the coverage of the pure
core, which walks the same rooms as the compiled one; else random mutations of the seed
inputs.  ``nox -s sanitize`` runs this against a build of the extension with
AddressSanitizer and UndefinedBehaviorSanitizer, where a memory error or undefined
behaviour aborts the run.  The last line printed says
``fuzz: cores: <engine>: <N> executions in <S> s``; exit status 0 means the cores
agreed on every input.

The invariant: for the options the first input byte selects (decoding mode, a size
limit, keep_raw and, in bits 5-6, the opt-in modes: on_oversize="skip", piece_size,
diagnostics), under four chunkings of the rest (whole, byte by byte, two random splits),
both cores give the same items with their spans and raw bytes, the same error with its
message and offset, and the same last_event_id, retry and take_raw() after every chunk
(``observe`` in tests/helpers/cores.py, which also states the rules at the start of a
stream that the two cores do not share yet).
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))  # after PYTHONPATH: the sanitizer build comes first

if sys.argv[1:2] == ["--child"]:
    # libFuzzer's coverage: of the pure core, instrumented as it is first imported.
    import atheris  # type: ignore[import-untyped,import-not-found,unused-ignore]

    with atheris.instrument_imports(include=["sse_sansio"]):
        import sse_sansio  # noqa: F401

from tests.fuzz.run import seed_inputs  # noqa: E402
from tests.helpers.cores import CORE, PURE, observe  # noqa: E402

LIMITS = (None, 1, 7, 64, 1000)
# What random mutations insert: the bytes that steer the parser.
TOKENS = (
    b"data:", b"data: ", b"event:", b"id:", b"retry:", b":", b" ", b"\n", b"\r", b"\r\n",
    b"\n\n", b"\xef\xbb\xbf", b"\xef", b"\xc3", b"\xa9", b"\xff", b"\xed\xa0\x80",
    b"\xf0\x9f\x98\x80", b"\x00", b"7", b"x" * 70,
)  # fmt: skip


# The opt-in modes bits 5-6 select, which the compiled core runs itself.
MODES: tuple[dict[str, Any], ...] = (
    {},
    {"on_oversize": "skip"},
    {"piece_size": 5},
    {"diagnostics": True, "on_oversize": "skip", "piece_size": 3},
)


def options_of(flags: int) -> dict[str, Any]:
    limit = LIMITS[((flags >> 2) & 7) % len(LIMITS)]
    mode = dict(MODES[(flags >> 5) & 3])
    if "piece_size" in mode and limit is not None:
        mode["piece_size"] = min(mode["piece_size"], limit)
    return {
        "errors": "replace" if flags & 1 else "strict",
        "keep_raw": bool(flags & 2),
        "max_event_size": limit,
        "last_event_id": "é" if flags & 0x80 else "",
        **mode,
    }


def chunkings(stream: bytes, seed: int) -> list[list[bytes]]:
    rng = random.Random(seed)
    ways = [[stream], [stream[i : i + 1] for i in range(len(stream))]]
    for _ in range(2):
        chunks, i = [], 0
        while i < len(stream):
            n = rng.randint(1, 12)
            chunks.append(stream[i : i + n])
            i += n
        ways.append(chunks)
    return ways


def one_input(data: bytes) -> None:
    if not data:
        return
    options = options_of(data[0])
    stream = data[1:]
    for chunks in chunkings(stream, data[0]):
        chunks = [c for c in chunks if c]
        ours = observe(CORE.Connection, chunks, **options)  # type: ignore[union-attr]
        reference = observe(PURE, chunks, **options)
        if ours != reference:
            raise AssertionError(f"cores differ: {chunks!r} {options}\n{ours}\n{reference}")


def mutate(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 6)):
        at = rng.randint(0, len(out))
        op = rng.random()
        if op < 0.5:
            out[at:at] = rng.choice(TOKENS)
        elif op < 0.7 and out:
            del out[at : at + rng.randint(1, 8)]
        elif op < 0.85 and out:
            out[at:at] = out[at : at + rng.randint(1, 40)] * rng.randint(1, 4)
        else:
            out[at:at] = bytes([rng.randint(0, 255)])
    return bytes(out[:4000]) or b"\x00"


def run_random(seconds: float) -> int:
    rng = random.Random(int(os.environ.get("FUZZ_SEED", "0")))
    seeds = seed_inputs()
    start = time.monotonic()
    runs = 0
    while time.monotonic() - start < seconds:
        data = mutate(rng, rng.choice(seeds))
        try:
            one_input(data)
        except AssertionError:
            print(f"fuzz: cores: failing input (hex): {data.hex()}")
            raise
        runs += 1
    print(f"fuzz: cores: random: {runs} executions in {time.monotonic() - start:.1f} s")
    return 0


def run_atheris(seconds: int) -> int:
    """libFuzzer exits without returning to Python: run it in a child process."""
    with tempfile.TemporaryDirectory(prefix="sse_sansio_cores_") as tmp:
        corpus = Path(tmp) / "corpus"
        corpus.mkdir()
        for i, seed in enumerate(seed_inputs()):
            (corpus / f"seed{i:04}").write_bytes(seed)
        args = [
            sys.executable, __file__, "--child", f"-max_total_time={seconds}",
            "-max_len=4000", "-timeout=30", f"-artifact_prefix={tmp}{os.sep}",
            "-print_final_stats=1", str(corpus),
        ]  # fmt: skip
        start = time.monotonic()
        proc = subprocess.Popen(args, stderr=subprocess.PIPE, text=True, errors="replace")
        assert proc.stderr is not None
        runs = 0
        for line in proc.stderr:
            sys.stderr.write(line)
            if line.startswith("stat::number_of_executed_units:"):
                runs = int(line.split(":")[-1])
        code = proc.wait()
        for crash in Path(tmp).glob("crash-*"):
            print(f"fuzz: cores: failing input (hex): {crash.read_bytes().hex()}")
    elapsed = time.monotonic() - start
    print(f"fuzz: cores: atheris: {runs} executions in {elapsed:.1f} s (exit status {code})")
    return code


def child() -> None:
    # This process imported sse_sansio first, before anything above touched sys.path:
    # say which build it fuzzes (nox -s sanitize puts its instrumented copy on PYTHONPATH).
    print(f"fuzz: cores: the child fuzzes {CORE.__file__}", file=sys.stderr)  # type: ignore[union-attr]
    atheris.Setup([sys.argv[0], *sys.argv[2:]], one_input)
    atheris.Fuzz()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=int(os.environ.get("FUZZ_SECONDS", "60")))
    parser.add_argument("--engine", choices=("atheris", "random"), default=None)
    args = parser.parse_args(argv)
    if CORE is None:
        print("fuzz: cores: the compiled core is not built", file=sys.stderr)
        return 1
    print(f"fuzz: cores: compiled core from {CORE.__file__}")
    engine = args.engine
    if engine is None:
        try:
            import atheris  # type: ignore[import-untyped,import-not-found,unused-ignore]  # noqa: F401
        except ImportError:
            engine = "random"
        else:
            engine = "atheris"
    if engine == "atheris":
        return run_atheris(args.seconds)
    return run_random(args.seconds)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child()
    else:
        sys.exit(main())
