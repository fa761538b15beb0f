"""Write the seed corpus of the C-level fuzz target (core_fuzzer.c) into a directory.

Strategy: every conformance vector in ``tests/data/conformance_cases.json`` (and in any
further case files named on the command line) becomes the body of a few inputs, one per
header below, so that the fuzzer starts with each option reached: keep_raw with and
without take_raw(), both decoding modes, no limit and a small one, whole and cut into
chunks, ended or not, repeated into a longer stream.  The header layout is the one
documented at the top of core_fuzzer.c.  The inputs in ``tests/fuzz/regressions/`` (each
one a crash the fuzzer once found, named after it) are copied in as they are, so that
every run tries them first.  Nothing is written into the repository: the
caller names the directory (the nox session uses a temporary one).

    python tests/fuzz/core_seeds.py OUT_DIR [CASES.json ...]
"""

from __future__ import annotations

import base64
import hashlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "tests" / "data" / "conformance_cases.json"
REGRESSIONS = Path(__file__).resolve().parent / "regressions"

KEEP_RAW, REPLACE, NO_LIMIT, SMALL_LIMIT = 1, 2, 4, 8
DRAIN_EACH, TAKE_RAW, WRAP, END = 16, 32, 64, 128
REPEAT_8 = 0x30  # in the layout byte: the body is repeated eight times
# In the layout byte too: the opt-in modes (on_oversize="skip"; piece_size; both with
# diagnostics=True).
SKIP, PIECES, ALL_MODES = 0x40, 0x80, 0xC0
# (option byte, limit parameter, layout bits, chunk sizes): sizes are stored minus one.
HEADERS: list[tuple[int, int, int, bytes]] = [
    (END, 0, 0, b""),
    (END | DRAIN_EACH, 0, 0, b"\x00"),
    (END | KEEP_RAW | TAKE_RAW | DRAIN_EACH, 0, 0, b"\x02\x00\x06"),
    (END | KEEP_RAW | DRAIN_EACH | WRAP, 0, 0, b"\x04"),
    (END | NO_LIMIT | DRAIN_EACH, 0, 0, b"\x01\x00"),
    (END | SMALL_LIMIT | DRAIN_EACH, 7, 0, b"\x03"),
    (KEEP_RAW | TAKE_RAW | DRAIN_EACH, 0, 0, b"\x00\x02"),
    (END | KEEP_RAW | TAKE_RAW | DRAIN_EACH, 0, REPEAT_8, b"\x06"),
    (END | KEEP_RAW | TAKE_RAW | SMALL_LIMIT | DRAIN_EACH, 7, SKIP, b"\x03"),
    (END | DRAIN_EACH, 2, PIECES, b"\x04"),
    (END | REPLACE | KEEP_RAW | TAKE_RAW | SMALL_LIMIT, 3, ALL_MODES, b""),
]


def bodies(paths: list[Path]) -> list[bytes]:
    """The distinct inputs of the case files, in order (the errors mode is the header's)."""
    seen: dict[bytes, None] = {}
    for path in paths:
        for case in json.loads(path.read_text("utf-8")):
            seen.setdefault(base64.b64decode(case["input_b64"]), None)
    return list(seen)


def seed(options: int, param: int, layout: int, sizes: bytes, body: bytes) -> bytes:
    """One fuzz input: the three header bytes, the chunk sizes, then the stream."""
    return bytes([options, param, layout | len(sizes)]) + sizes + body


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    written = 0
    for body in bodies([CASES, *map(Path, argv[1:])]):
        for options, param, layout, sizes in HEADERS:
            for errors in (0, REPLACE):
                data = seed(options | errors, param, layout, sizes, body)
                (out / hashlib.sha1(data).hexdigest()).write_bytes(data)
                written += 1
    for found in sorted(REGRESSIONS.iterdir()):
        (out / found.name).write_bytes(found.read_bytes())
        written += 1
    print(f"core_seeds: {written} seeds in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
