"""benchmarks/durable.py runs (issue 44, item 8): its pairs check that path and floor
produce the same bytes before timing, and it prints one row per pair.  The figures
themselves are for the benchmark's own runs, not for the tests."""

from __future__ import annotations

from pathlib import Path

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


def test_the_callgrind_case_runs_alone(capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks import durable

    assert durable.main(["--callgrind-case", "append: in-process", "--messages", "3"]) == 0
    assert capsys.readouterr().out == ""  # the counts are valgrind's, not this process's


def test_callgrind_counts_need_valgrind(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from benchmarks import durable

    monkeypatch.setattr("shutil.which", lambda name: None)
    assert durable.callgrind_counts(3) is None
    assert "valgrind is not installed" in capsys.readouterr().out


@pytest.mark.parametrize("total", ["totals: 12000", "summary: 12000", "events: Ir"])
def test_callgrind_counts_are_read_from_valgrind_s_file(
    monkeypatch: pytest.MonkeyPatch, total: str
) -> None:
    from benchmarks import durable

    runs: list[list[str]] = []

    def valgrind(command: list[str], env: dict[str, str], **_: object) -> None:
        # The fixed heap threshold and hash seed are what make counts repeat.
        assert (env["MALLOC_MMAP_THRESHOLD_"], env["PYTHONHASHSEED"]) == ("131072", "0")
        runs.append(command)
        out = next(arg for arg in command if arg.startswith("--callgrind-out-file="))
        Path(out.partition("=")[2]).write_text(f"version: 1\n{total}\n")

    monkeypatch.setattr("shutil.which", lambda name: "/usr/bin/valgrind")
    monkeypatch.setattr("subprocess.run", valgrind)
    if total.startswith("events"):
        with pytest.raises(SystemExit, match="no instruction total"):
            durable.callgrind_counts(4)
        return
    counts = durable.callgrind_counts(4)
    assert counts == dict.fromkeys(durable.append_cases(1), 3000.0)
    assert [run[run.index("--callgrind-case") + 1] for run in runs] == list(counts)
    assert all("--toggle-collect=functools_reduce" in run for run in runs)
