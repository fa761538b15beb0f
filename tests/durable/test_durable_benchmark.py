"""benchmarks/durable.py runs (issue 44, item 8): its pairs check that path and floor
produce the same bytes before timing, and it prints one row per pair.  The figures
themselves are for the benchmark's own runs, not for the tests."""

from __future__ import annotations

import pytest

from sse_sansio.durable import DurableStreams, Request, Response


def test_the_durable_benchmark_runs_and_checks_its_pairs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from benchmarks import durable

    assert durable.main(["--quick", "--no-servers"]) == 0
    rows = capsys.readouterr().out.splitlines()[1:]
    assert [row.split()[0] for row in rows] == ["append/in-process", "append", "append/api", "read"]
    cases = durable.append_cases(3, size=256)
    assert set(cases) == {
        "append: core",
        "append: in-process",
        "append: floor",
        "append: api floor",
    }
    assert cases["append: api floor"]() == bytes(range(256)) * 3
    written = cases["append: in-process"]()
    assert isinstance(written, DurableStreams)
    read = written.handle(Request("GET", durable.PATH), durable.NOW)
    assert isinstance(read, Response)
    assert read.body == bytes(range(256)) * 3
    assert durable.read_cases(1024, 1)["read: core"]() == bytes(range(256)) * 4
