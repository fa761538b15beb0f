"""Smoke test of the benchmark suite (benchmarks/): its inputs and its adapters are right.

The suite times parsers only after checking their output, so what matters here is that
the workloads are deterministic and shaped as the issue asks, and that every adapter
(sse_sansio's drain loop, the floor, each peer that is installed) turns a tiny workload
into the expected items under several chunkings.  No timing is asserted.
"""

from __future__ import annotations

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
