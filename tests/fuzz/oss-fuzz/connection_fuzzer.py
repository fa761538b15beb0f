"""OSS-Fuzz's target for sse_sansio: the compiled Connection, against the pure one.

The shape OSS-Fuzz takes for a Python package with a C extension (issue 36, item 18):
``build.sh`` (beside this file) installs the package with OSS-Fuzz's compiler flags,
so that ``sse_sansio._receive._core`` is built with ``-fsanitize=fuzzer-no-link`` and
a sanitizer, and packs this script; atheris runs it, libFuzzer guided by the
coverage of the C core (and, through ``atheris.instrument_imports``, of the pure core's
Python).  It runs anywhere atheris is installed::

    python connection_fuzzer.py [libFuzzer flags] [corpus directories]
    python connection_fuzzer.py --seeds DIR     # write the seed corpus into DIR

``nox -s sanitize`` runs it for a few hundred inputs against its own instrumented build,
and tests/receive/test_oss_fuzz_target.py calls :func:`TestOneInput` on a few hundred
inputs with whatever build is installed.

What one input is: the first byte chooses the options (bit 0 ``errors="replace"``,
bit 1 ``keep_raw``, bits 2-4 a size limit, bits 5-6 an opt-in mode), the second how
the rest is cut into chunks (0: whole; else chunks of 1 to 16 bytes).  What is checked,
besides the sanitizers' own checks: the compiled Connection raises nothing but
``ProtocolError``, and it gives exactly what the pure one gives, chunk by chunk: every
item with all of its fields (spans and raw bytes included), every ``NEED_DATA``, the
error with its message, ``last_event_id``, ``retry`` and, with keep_raw, ``take_raw()``.
"""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path
from typing import Any

if __name__ == "__main__":
    import atheris  # type: ignore[import-untyped,import-not-found,unused-ignore]

    with atheris.instrument_imports(include=["sse_sansio"]):
        import sse_sansio  # noqa: F401

from sse_sansio import NEED_DATA, EndOfStream, ProtocolError
from sse_sansio._receive._connection import PyConnection

try:
    from sse_sansio._receive._core import (  # type: ignore[import-not-found,unused-ignore]
        Connection as CConnection,
    )
except ImportError:  # an install whose compiler failed: nothing to fuzz here
    CConnection = None

LIMITS = (None, 1, 7, 64, 1000)
MODES: tuple[dict[str, Any], ...] = (
    {},
    {"on_oversize": "skip"},
    {"piece_size": 5},
    {"diagnostics": True, "on_oversize": "skip", "piece_size": 3},
)


def options_of(flags: int) -> dict[str, Any]:
    """The Connection's options that the first byte of an input chooses."""
    limit = LIMITS[((flags >> 2) & 7) % len(LIMITS)]
    mode = dict(MODES[(flags >> 5) & 3])
    if "piece_size" in mode and limit is not None:
        mode["piece_size"] = min(mode["piece_size"], limit)  # a piece fits the limit
    return {
        "errors": "replace" if flags & 1 else "strict",
        "keep_raw": bool(flags & 2),
        "max_event_size": limit,
        **mode,
    }


def chunks_of(cut: int, stream: bytes) -> list[bytes]:
    if cut == 0:
        return [stream] if stream else []
    size = cut % 16 + 1
    return [stream[i : i + size] for i in range(0, len(stream), size)]


def observe(cls: Any, chunks: list[bytes], options: dict[str, Any]) -> list[Any]:
    """Everything a caller can see of one Connection fed ``chunks`` then the end."""
    connection = cls(**options)
    seen: list[Any] = []
    try:
        for chunk in [*chunks, b""]:
            connection.receive_data(chunk)
            while (item := connection.next_event()) is not NEED_DATA:
                seen.append((type(item).__name__, tuple(item)))
                if type(item) is EndOfStream:
                    return seen
            seen.append(("NEED_DATA", connection.last_event_id, connection.retry))
            if options["keep_raw"]:
                seen.append(("take_raw", connection.take_raw()))
    except ProtocolError as error:
        seen.append((type(error).__name__, str(error)))
    return seen


def TestOneInput(data: bytes) -> None:  # the name atheris.Setup is given, by custom
    if len(data) < 2:
        return
    options = options_of(data[0])
    chunks = chunks_of(data[1], data[2:])
    compiled = observe(CConnection, chunks, options)
    pure = observe(PyConnection, chunks, options)
    if compiled != pure:
        raise AssertionError(f"the cores differ on {chunks!r} {options}:\n{compiled}\n{pure}")


# The seeds: every conformance vector of the checkout under a few headers (options,
# chunking): whole and strict; keep_raw, replace, whole; keep_raw, cut in sixes; the
# opt-in modes with a one-byte limit, cut in twos.
CASES = Path(__file__).resolve().parents[2] / "data" / "conformance_cases.json"
HEADERS = (b"\x00\x00", b"\x03\x00", b"\x02\x05", b"\x61\x01")


def write_seeds(directory: Path) -> int:
    """Write the seed corpus into ``directory``; return how many inputs."""
    directory.mkdir(parents=True, exist_ok=True)
    cases = json.loads(CASES.read_text("utf-8"))
    for i, case in enumerate(cases):
        body = base64.b64decode(case["input_b64"])[:4000]
        for header in HEADERS:
            (directory / f"{i:04}-{header.hex()}").write_bytes(header + body)
    return len(cases) * len(HEADERS)


def main() -> None:
    if sys.argv[1:2] == ["--seeds"]:
        print(f"connection_fuzzer: {write_seeds(Path(sys.argv[2]))} seeds")
        return
    if CConnection is None:
        raise SystemExit("connection_fuzzer: sse_sansio's compiled core is not built")
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
