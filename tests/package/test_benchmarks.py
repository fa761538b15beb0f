"""Smoke test of the benchmark suite (benchmarks/): its inputs and its adapters are right.

The suite times parsers only after checking their output, so what matters here is that
the workloads are deterministic and shaped as the issue asks, and that every adapter
(sse_sansio's drain loop, the floor, each peer that is installed) turns a tiny workload
into the expected items under several chunkings.  No timing is asserted.
"""

from __future__ import annotations

import functools
import importlib.util
import json
from typing import Any

import pytest

from benchmarks import peers, workloads
from benchmarks.peers import PEERS, Peer

CHUNKINGS = (1, 7, 64, 0)  # 0 = the whole stream at once


def _run(peer: Peer, data: bytes, chunk: int) -> list[Any]:
    parse = peer.make()
    out: list[Any] = []
    parse(workloads.chunked(data, chunk), out.append)
    return out


@pytest.mark.parametrize("name", workloads.NAMES)
def test_workload_is_deterministic(name: str) -> None:
    first = workloads.build(name, tiny=True)
    second = workloads.build(name, tiny=True)
    assert first.stream == second.stream
    assert first.items == second.items
    assert first.items, "a workload with nothing in it measures nothing"


def test_llm_shape() -> None:
    work = workloads.llm(50)
    blocks = work.blocks
    assert len(blocks) == 50
    assert blocks[-1][0] == b"data: [DONE]\n\n"
    assert blocks[-1][1] == [("event", "message", "[DONE]")]
    for raw, items in blocks[:-1]:
        assert 200 <= len(raw) <= 300
        assert raw.startswith(b"data: {")
        assert raw.endswith(b"}\n\n")
        data = raw[len(b"data: ") : -2].decode()
        assert items == [("event", "message", data)]
        assert json.loads(data)["object"] == "chat.completion.chunk"
    # Some multi-byte UTF-8 (Chinese) text, so byte-wise chunking splits characters.
    assert any(ord(c) > 0x3000 for c in work.stream.decode())


def test_llm_typed_shape() -> None:
    work = workloads.llm_typed(30)
    for raw, items in work.blocks:
        ((_, etype, data),) = items
        assert raw == f"event: {etype}\ndata: {data}\n\n".encode()
        assert json.loads(data)["type"] == etype
    assert [i[1] for i in work.items].count("response.output_text.delta") == 28


def test_crlf_is_llm_with_crlf() -> None:
    llm = workloads.llm(30)
    crlf = workloads.crlf(30)
    assert crlf.stream.replace(b"\r\n", b"\n") == llm.stream
    assert crlf.stream.count(b"\n") == crlf.stream.count(b"\r\n")
    assert crlf.items == llm.items


def test_big_shape() -> None:
    size = 16 * workloads.KIB
    work = workloads.big(4, event_size=size)
    assert [len(raw) for raw, _ in work.blocks] == [size] * 4
    one_line, many_lines = work.blocks[0], work.blocks[1]
    assert one_line[0].count(b"\n") == 2  # the data line and the blank line
    assert one_line[1][0][2] == one_line[0][len(b"data: ") : -2].decode()
    lines = many_lines[0].split(b"\n")[:-2]
    assert all(len(line) + 1 == workloads.KIB for line in lines[:-1])
    assert many_lines[1][0][2] == "\n".join(line[len(b"data: ") :].decode() for line in lines)


def test_keepalive_shape() -> None:
    work = workloads.keepalive(100, every=25)
    kinds = [item[0] for item in work.items]
    assert kinds.count("comment") == 100
    assert kinds.count("event") == 4
    assert work.stream.count(b": ping\n\n") == 100


def test_chunked_and_prefix() -> None:
    data = bytes(range(100))
    for size in (1, 7, 64, 100, 0):
        pieces = workloads.chunked(data, size)
        assert b"".join(pieces) == data
        assert all(len(p) == (size or 100) for p in pieces[:-1])
    work = workloads.llm(40)
    prefix = work.prefix(2000)
    assert 2000 - 300 < len(prefix.stream) <= 2000
    assert work.stream.startswith(prefix.stream)
    assert prefix.items == work.items[: len(prefix.items)]


@pytest.mark.parametrize("name", workloads.NAMES)
def test_bytewise_workload_fits(name: str) -> None:
    work = workloads.build_for_bytewise(name, 40_000)
    assert 20_000 < len(work.stream) <= 40_000
    assert work.items


@pytest.mark.parametrize("chunk", CHUNKINGS)
@pytest.mark.parametrize("name", workloads.NAMES)
def test_sse_sansio_adapter(name: str, chunk: int) -> None:
    work = workloads.build(name, tiny=True)
    peer = PEERS[0]
    assert peer.name == "sse_sansio"
    got = [peer.to_items(item) for item in _run(peer, work.stream, chunk)]
    assert got == work.items  # comments included, in stream order


@pytest.mark.parametrize("chunk", CHUNKINGS)
@pytest.mark.parametrize("name", workloads.NAMES)
def test_floor_counts_lines(name: str, chunk: int) -> None:
    work = workloads.build(name, tiny=True)
    out: list[Any] = []
    peers.floor(workloads.chunked(work.stream, chunk), out.append)
    assert out == [work.stream.count(b"\n")]


@pytest.mark.parametrize("chunk", CHUNKINGS)
def test_drain_floor_counts_chunks(chunk: int) -> None:
    work = workloads.build("llm", tiny=True)
    chunks = workloads.chunked(work.stream, chunk)
    out: list[Any] = []
    peers.drain_floor(chunks, out.append)
    assert out == [len(chunks)]
    assert len(chunks) > 1 or chunk == 0


# The peers are benchmark dependencies (benchmarks/requirements.txt), and the benchmark
# itself checks every peer's output before timing it.  Here only the peers installed in
# the test environment are checked (the test extra has httpx-sse and sseclient-py):
# parametrizing over the importable ones keeps the suite free of skipped tests.
INSTALLED_PEERS = [
    p
    for p in PEERS
    if p.name != "sse_sansio"
    and p.name not in peers.FLOORS
    and importlib.util.find_spec(p.module) is not None
]


@pytest.mark.parametrize("peer", INSTALLED_PEERS, ids=lambda p: p.name)
def test_peer_adapter(peer: Peer) -> None:
    for name in workloads.NAMES:
        work = workloads.build(name, tiny=True)
        expected = work.items if peer.comments else work.events
        for chunk in CHUNKINGS:
            items = [peer.to_items(item) for item in _run(peer, work.stream, chunk)]
            assert [i for i in items if i is not None] == expected, (name, chunk)


@pytest.mark.parametrize("chunk", CHUNKINGS)
def test_callgrind_drain_counts_every_item(chunk: int) -> None:
    # benchmarks/callgrind.py divides the instructions by what drain() counts: it must
    # be every item the workload stands for, comments included, under any chunking.
    from benchmarks import callgrind

    work = workloads.keepalive(30, every=10)
    assert callgrind.drain(workloads.chunked(work.stream, chunk)) == len(work.items)


# --------------------------------------------------------------------------- the C floor
# benchmarks/floor.py: what each part must count and where the drain part hands items
# out come from the workload, checked here against the generator and a real connection.


@pytest.mark.parametrize("chunk", CHUNKINGS)
@pytest.mark.parametrize("name", workloads.NAMES)
def test_floor_plan_matches_the_workload(name: str, chunk: int) -> None:
    from benchmarks import floor

    work = workloads.build(name, tiny=True)
    chunks = workloads.chunked(work.stream, chunk)
    plan = floor.plan(work, chunks)
    assert plan.n_items == len(work.items) == floor.expected_count("decode", work)
    assert plan.n_lines == work.stream.count(b"\n") == floor.expected_count("scan", work)
    assert len(plan.per_chunk) == len(chunks)
    assert sum(plan.per_chunk) == len(work.items)
    texts = [text if kind == "comment" else data for kind, text, data in work.items]
    assert [p.decode() for p in plan.payloads] == texts


@pytest.mark.parametrize("chunk", CHUNKINGS)
@pytest.mark.parametrize("name", ["llm", "llm-typed", "big", "keepalive"])
def test_floor_hands_out_items_where_a_connection_does(name: str, chunk: int) -> None:
    # LF-only streams: an item is complete in the chunk holding its block's last byte.
    # (On crlf a chunk ending between the last CR and LF completes it one chunk early.)
    from benchmarks import floor
    from sse_sansio import NEED_DATA, Connection

    work = workloads.build(name, tiny=True)
    chunks = workloads.chunked(work.stream, chunk)
    conn = Connection()
    delivered = []
    for piece in chunks:
        conn.receive_data(piece)
        n = 0
        while conn.next_event() is not NEED_DATA:
            n += 1
        delivered.append(n)
    assert floor.items_per_chunk(work, chunks) == delivered


def test_floor_without_a_compiler(monkeypatch: pytest.MonkeyPatch) -> None:
    from benchmarks import floor

    monkeypatch.setattr("sysconfig.get_config_var", lambda name: "no-such-cc-here")
    assert floor.build() == "no C compiler (no-such-cc-here)"


@functools.cache
def _floor_module() -> Any:
    from benchmarks import floor

    return floor.build()  # compiled once for the tests below


@pytest.mark.parametrize("name", ["llm", "crlf", "keepalive"])
def test_floor_parts_count_right(name: str) -> None:
    # The C parts need a compiler: without one, build() must say so instead.
    import shutil
    import sysconfig

    from benchmarks import floor

    module = _floor_module()
    if shutil.which((sysconfig.get_config_var("CC") or "cc").split()[0]) is None:
        assert isinstance(module, str)
        return
    assert not isinstance(module, str), module
    work = workloads.build(name, tiny=True)
    want = {part: floor.expected_count(part, work) for part in floor.PARTS}
    for chunk in (7, 0):
        chunks = workloads.chunked(work.stream, chunk)
        runs = floor.parts(module, floor.plan(work, chunks))
        assert {part: run() for part, run in runs.items()} == want, chunk
        pairs = floor.as_parsers(module, work, chunks)
        assert [peer.name for peer, _ in pairs] == [f"floor: {part}" for part in floor.PARTS]
        out: list[Any] = []
        for _, parse in pairs:
            parse([], out.append)
        assert out == list(want.values())


# --------------------------------------------------------------------------- node


def test_node_cells_written(tmp_path: Any) -> None:
    from benchmarks import node_compare

    llm = workloads.build("llm", tiny=True)
    typed = workloads.build("llm-typed", tiny=True)
    spec = node_compare.write_cells(
        tmp_path, [("llm", 64, llm), ("llm", 0, llm), ("llm-typed", 64, typed)]
    )
    assert json.loads((tmp_path / "cells.json").read_text()) == spec
    assert spec[0]["file"] == spec[1]["file"] != spec[2]["file"]
    assert (tmp_path / str(spec[0]["file"])).read_bytes() == llm.stream
    # JavaScript counts UTF-16 code units: the Chinese text is one unit a character.
    data = [d for _, _, d in llm.events]
    assert spec[0]["events"] == len(data)
    assert spec[0]["units"] == sum(len(d) for d in data)
    types = [t for _, t, _ in typed.events]
    assert "message" not in types
    assert spec[2]["units"] == sum(len(d) + len(t) for _, t, d in typed.events)


def test_node_output_parsed() -> None:
    from benchmarks import node_compare

    lines = [
        json.dumps({"workload": "llm", "chunk": 64, "times": [0.3, 0.1, 0.2]}),
        json.dumps({"workload": "big", "chunk": 0, "error": "wrong output: 1 events"}),
        "",
    ]
    assert node_compare.parse_output("\n".join(lines)) == {
        ("llm", 64): 0.2,
        ("big", 0): "wrong output: 1 events",
    }


def test_node_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    from benchmarks import node_compare

    monkeypatch.setattr("shutil.which", lambda name: None)
    work = workloads.build("llm", tiny=True)
    logged: list[str] = []
    got = node_compare.run_cells([("llm", 64, work)], 1, 0.0, logged.append)
    assert got == {("llm", 64): "unavailable (node not found)"}
    assert node_compare.node_version() == ""
    assert logged


def test_node_parses_the_workloads() -> None:
    # Where node and eventsource-parser are installed, every cell is timed (its output
    # was right); elsewhere every cell says why not.
    import shutil

    from benchmarks import node_compare

    ready = (
        shutil.which("node") is not None
        and (node_compare.NODE_DIR / "node_modules" / node_compare.PACKAGE).exists()
    )
    cells = []
    for name in ("llm", "llm-typed", "keepalive"):
        work = workloads.build(name, tiny=True)
        cells += [(name, 7, work), (name, 0, work)]
    got = node_compare.run_cells(cells, 1, 0.0, lambda _: None, install=False)
    assert set(got) == {(name, chunk) for name, chunk, _ in cells}
    if ready:
        assert all(isinstance(t, float) for t in got.values()), got
        assert node_compare.node_version().startswith("v")
    else:
        assert all(isinstance(t, str) and "unavailable" in t for t in got.values()), got


# --------------------------------------------------------------------------- run.py rows


def test_reference_rows() -> None:
    from benchmarks import floor, run

    cell = run.Cell("llm", 64, n_bytes=1_000_000, n_items=1000, reps=1)
    cell.times["sse_sansio"] = [0.003]
    for i, name in enumerate(sorted(floor.PART_NAMES)):
        cell.times[name] = [0.0005 * (i + 1)]  # 0.0005 + 0.001 + 0.0015 + 0.002 = 0.005
    cell.node = 0.006
    rows = run.reference_rows([cell])
    assert rows[0] == "| **C floor** (sum of the parts) | 200.0 MB/s, 5000.0 ns/item |"
    assert rows[1] == "| sse_sansio / C floor (time) | **0.60x** the floor's time |"
    assert rows[2] == f"| {run.NODE_ROW} | 166.7 MB/s, 166.7k ev/s |"
    assert rows[3] == "| sse_sansio / node (speed) | **2.00x** |"
    # No part is ever the fastest peer.
    assert cell.fastest_peer() is None
    cell.node = "unavailable (node not found)"
    assert run.reference_rows([cell])[2] == f"| {run.NODE_ROW} | unavailable (node not found) |"


def test_the_layers_benchmark_runs_and_its_floors_write_what_the_paths_write(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # benchmarks/layers.py (issue 33, item 6) checks each path against its floor's bytes
    # before timing (SystemExit otherwise), then prints one ratio per pair.
    from benchmarks import layers
    from sse_sansio import Event

    assert layers.main(["--events", "50", "--rounds", "1"]) == 0
    rows = capsys.readouterr().out.splitlines()[2:]
    assert [row.split()[0] for row in rows] == [
        "send",
        "layers",
        "layers",  # keep_raw: the events carry the bytes they were read from
        "serialize",
        "serialize",
        "serialize",
    ]
    assert layers.main(["--events", "50", "--callgrind", "layers keep_raw"]) == 0
    assert "layers keep_raw: one run of 50 events" in capsys.readouterr().out
    built = [Event(data="x", id="7")]
    assert layers.send_path(built)() == b"data: x\nid: 7\n\n"
    assert layers.send_floor(built)() == b"data: x\n\n"  # the floor writes no id: told apart


def test_the_tracker_benchmark_runs_and_checks_each_answer(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # benchmarks/llm_tracker.py (issue 35, item 5): every dialect's response is judged
    # completed, with reported usage and its whole text, before anything is timed.
    from benchmarks import llm_tracker

    assert llm_tracker.main(["--events", "40", "--rounds", "1"]) == 0
    out = capsys.readouterr().out
    for dialect in llm_tracker.STREAMS:
        assert f"| {dialect} |" in out
    assert "worst ratio" in out
