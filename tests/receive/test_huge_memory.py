"""The issue's memory checks for the opt-in modes, each in a fresh subprocess.

- A 200 MB event skipped under a 1 MiB limit (on_oversize="skip").
- A 200 MB single-line event streamed in pieces (piece_size), with and without keep_raw
  (a verbatim proxy forwarding an event still arriving).

Each worker feeds its stream in 64 KiB chunks generated as they go (never held whole),
drops every item once seen, and reports its peak resident memory above a baseline
taken before the first chunk (VmHWM, reset through /proc/self/clear_refs where Linux
allows, else ru_maxrss).  The growth must stay under 40 MB: the 200 MB never sits in
memory.  ``-s`` shows the figures.  Set ``SSE_SANSIO_HUGE_MB`` to change the size.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.slow,  # memory measured in subprocesses
    pytest.mark.skipif(
        sys.platform == "win32", reason="ru_maxrss (the resource module) is POSIX only"
    ),
]

MB = 1_000_000
ROOT = Path(__file__).resolve().parents[2]
SIZE = int(os.environ.get("SSE_SANSIO_HUGE_MB", "200")) * MB
CEILING = 40 * MB

WORKER = r"""
import json, sys
from sse_sansio import NEED_DATA
from sse_sansio._receive._connection import Connection
from tests.helpers.rss import peak, reset_peak

mode, total = sys.argv[1], int(sys.argv[2])
CHUNK = 64 * 1024


options = {
    "skip": {"max_event_size": 1024 * 1024, "on_oversize": "skip"},
    "pieces": {"piece_size": 256 * 1024},
    "pieces-keep-raw": {"piece_size": 256 * 1024, "keep_raw": True},
}[mode]
conn = Connection(**options)
body = b"x" * CHUNK
base = reset_peak()
counts = {}
data_seen = forwarded = 0


def drain():
    global data_seen, forwarded
    while (item := conn.next_event()) is not NEED_DATA:
        name = type(item).__name__
        counts[name] = counts.get(name, 0) + 1
        data_seen += len(getattr(item, "text", ""))
        forwarded += len(getattr(item, "raw", None) or b"")
        if name == "EndOfStream":
            return
    if options.get("keep_raw"):
        forwarded += len(conn.take_raw())


conn.receive_data(b"event: big\nid: 9\ndata: ")
drain()
fed = 0
while fed < total:
    conn.receive_data(memoryview(body).tobytes())  # a fresh chunk, as from a socket
    fed += CHUNK
    drain()
conn.receive_data(b"\n\ndata: after\n\n")
drain()
conn.receive_data(b"")
drain()
print(json.dumps({
    "growth": peak() - base, "fed": fed, "items": counts, "data": data_seen,
    "forwarded": forwarded, "last_event_id": conn.last_event_id,
}))
"""


def measure(mode: str) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", WORKER, mode, str(SIZE)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        timeout=600,
    )
    result: dict[str, object] = json.loads(proc.stdout)
    print(mode, result)
    return result


def test_a_huge_event_is_skipped_in_bounded_memory() -> None:
    result = measure("skip")
    assert result["items"] == {"SkippedEvent": 1, "Event": 1, "EndOfStream": 1}
    assert result["last_event_id"] == "9"
    assert isinstance(result["growth"], int)
    assert result["growth"] < CEILING


@pytest.mark.parametrize("mode", ["pieces", "pieces-keep-raw"])
def test_a_huge_line_is_streamed_in_pieces_in_bounded_memory(mode: str) -> None:
    result = measure(mode)
    fed = result["fed"]
    assert isinstance(fed, int)
    assert result["data"] == fed  # the pieces; "after" comes as a plain Event
    items = result["items"]
    assert isinstance(items, dict)
    assert items["PiecedEvent"] == 1
    assert items["DataPiece"] >= fed // (256 * 1024 + 64 * 1024)  # at chunk granularity
    if mode == "pieces-keep-raw":
        # Everything forwarded: the stream byte for byte.
        assert result["forwarded"] == fed + len(b"event: big\nid: 9\ndata: \n\ndata: after\n\n")
    assert isinstance(result["growth"], int)
    assert result["growth"] < CEILING
