"""The README's code runs: its drain loop, fed a fake socket with awkward reads."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

README = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")


def _python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README, flags=re.DOTALL)


class FakeSocket:
    """recv() hands out the stream in the given pieces, then b""."""

    def __init__(self, pieces: list[bytes]) -> None:
        self.pieces = list(pieces)

    def recv(self, size: int) -> bytes:
        return self.pieces.pop(0) if self.pieces else b""


def _read_stream() -> Any:
    (block,) = [block for block in _python_blocks() if "def read_stream" in block]
    namespace: dict[str, Any] = {}
    exec(compile(block, "README.md", "exec"), namespace)
    return namespace["read_stream"]


def test_readme_drain_loop_survives_split_characters_and_events() -> None:
    stream = 'data: {"text":"你好"}\n\ndata: {"n":1}\n\ndata: [DONE]\n\n'.encode()
    cut = stream.index("你".encode()) + 1  # in the middle of a character
    read_stream = _read_stream()
    pieces = [stream[:cut], stream[cut:]]
    assert list(read_stream(FakeSocket(pieces))) == [{"text": "你好"}, {"n": 1}]


def test_readme_drain_loop_reports_a_cut_stream() -> None:
    read_stream = _read_stream()
    with pytest.raises(ConnectionError, match="cut off"):
        list(read_stream(FakeSocket([b'data: {"n":1}\n\ndata: {"n"'])))


# ---------------------------------------------------------------- the command line


ROOT = Path(__file__).parents[2]


def _section(title: str) -> str:
    return README.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def _cli(args: list[str], stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    env = dict(os.environ, PYTHONIOENCODING="utf-8")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-m", "sse_sansio", *args],
        input=stdin,
        capture_output=True,
        cwd=ROOT,
        env=env,
        timeout=60,
        check=False,
    )


VENV = "python3 -m venv .venv && "
VENV_PYTHON = ".venv/bin/python"


def _quick_start() -> list[str]:
    commands = re.findall(r"^```\n(.+?)\n```$", _section("Quick start"), re.M | re.S)
    assert len(commands) == 2
    assert all("\n" not in command for command in commands)
    return commands


def test_quick_start_installs_into_a_virtual_environment() -> None:
    # A system Python that refuses global installs (externally-managed-environment,
    # PEP 668, as on Debian) must run it: nothing is installed outside .venv.
    for command in _quick_start():
        assert command.startswith(VENV)
        for step in command.removeprefix(VENV).split(" && "):
            assert step.startswith(f"{VENV_PYTHON} -m "), step


def test_ci_runs_the_readmes_test_command() -> None:
    test_command = _quick_start()[1]
    steps = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert test_command in steps


def test_the_test_command_is_the_fast_subset_with_the_other_runs_named_under_it() -> None:
    # Issue 43, item 4: a newcomer runs what is not slow; the whole suite and the slow
    # tests are named in the paragraph right under the commands.
    test_command = _quick_start()[1]
    assert test_command.endswith(f'&& {VENV_PYTHON} -m pytest -m "not slow"')
    under = _section("Quick start").split(test_command + "\n```\n", 1)[1]
    paragraph = under.strip().split("\n\n", 1)[0]
    assert f"`{VENV_PYTHON} -m pytest`" in paragraph
    assert f"`{VENV_PYTHON} -m pytest -m slow`" in paragraph
    markers = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    declared = markers["tool"]["pytest"]["ini_options"]["markers"]
    assert [m.split(":")[0] for m in declared] == ["slow"]


def test_the_supported_pythons_are_the_same_everywhere() -> None:
    # Issue 43, item 1: CPython 3.11 to 3.15, said by the README, the metadata and CI.
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["requires-python"] == ">=3.11"
    prefix = "Programming Language :: Python :: 3."
    minors = [int(c.removeprefix(prefix)) for c in project["classifiers"] if c.startswith(prefix)]
    assert minors == list(range(11, 16))
    assert "Standard library only; CPython 3.11 to 3.15." in README
    nox = (ROOT / "noxfile.py").read_text(encoding="utf-8")
    assert 'PYTHONS = ["3.11", "3.12", "3.13", "3.14", "3.15"]' in nox
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert ".ci/unstable test 3.14" in ci
    assert ".ci/unstable test 3.15" in ci


@pytest.mark.slow
def test_quick_start_is_two_one_line_commands_and_the_replay_works() -> None:
    replay = _quick_start()[0].rsplit(" && ", 1)[1].split()
    assert replay[:3] == [VENV_PYTHON, "-m", "sse_sansio"]
    done = _cli(replay[3:])
    assert done.returncode == 0  # the first command "works": a clean end
    records = [json.loads(line) for line in done.stdout.decode().splitlines()]
    # What the text under the commands promises, read from examples/tour.sse by hand.
    assert [r["kind"] for r in records] == ["comment", "event", "event", "end"]
    comment, first, second, end = records
    assert comment["text"] == "自己接 AI 流式接口，先把 SSE 事件拼完整"
    assert (first["id"], first["retry"]) == ("1", 3000)
    assert json.loads(first["data"])["delta"] == "你好"
    assert (second["data"], second["id"], second["retry"]) == ("第一行\n第二行", "1", None)
    assert end["truncated"] is False


@pytest.mark.slow
def test_the_documented_cut_stream_exits_3() -> None:
    (line,) = [x for x in _section("Command line").splitlines() if x.startswith("printf")]
    printed = line.split("'")[1].encode().decode("unicode_escape").encode()
    assert printed == b"data: one\n\ndata: tw"
    done = _cli(["-"], stdin=printed)
    assert done.returncode == 3
    end = json.loads(done.stdout.splitlines()[-1])
    assert end == {"kind": "end", "truncated": True, "partial_line": 8, "partial_event": False}


@pytest.mark.slow
def test_the_exit_status_table_is_the_command_lines() -> None:
    from sse_sansio._cli._run import EXIT_STATUSES
    from sse_sansio.llm import EXIT_STATUS

    table = re.findall(r"^\| (\d+) \| (.+) \|$", _section("Command line"), re.M)
    # Every status the command line exits with, --llm's outcomes included, once.
    listed = {status for status, _ in EXIT_STATUSES} | set(EXIT_STATUS.values())
    assert [int(status) for status, _ in table] == sorted(listed)
    help_text = _cli(["--help"]).stdout.decode()
    for status, _ in EXIT_STATUSES:
        assert re.search(rf"^  {status} ", help_text, re.M), status


def test_the_command_lines_options_are_in_the_readme() -> None:
    from sse_sansio._cli._main import _parser

    usage = _section("Command line")
    options = [o for action in _parser()._actions for o in action.option_strings]
    for option in options:
        if option.startswith("--") and option not in ("--help", "--version"):
            assert f"[{option}" in usage, option
    assert "sse_sansio.llm" in README
    assert "--on-oversize skip" in usage
    assert "--diagnostics" in usage


# Issue 36, item 5: the names a new user looks for, by job; the README and the docs'
# front page once named none of the first eight.
JOB_NAMES = (
    "Watchdog",
    "KeepalivePlanner",
    "Coalescer",
    "ReplayWindow",
    "RedisStreamStore",
    "sse_cassette",
    "--sse-record",
    "Reframer",
    "Connection",
    "ReconnectPlanner",
    "ServerStream",
    "Relay",
    "Tracker",
    "Hub",
    "Update",
    "Translator",
    "HoldBack",
    "StreamStats",
    "append_many",
)
JOBS = "Jobs, and the names that do them"


def _front_page_jobs() -> str:
    index = (ROOT / "docs" / "index.rst").read_text(encoding="utf-8")
    return index.split(f"\n{JOBS}\n", 1)[1].split("\n-----", 1)[0]


def test_the_readme_and_the_front_page_name_every_job() -> None:
    readme, front = _section(JOBS), _front_page_jobs()
    for name in JOB_NAMES:
        assert re.search(rf"`(\w+\.)?{re.escape(name)}`", readme), name
        assert name in front, name


def _named(token: str) -> object:
    """The object a backticked name of the README's jobs table stands for."""
    import importlib

    import sse_sansio

    special: dict[str, Callable[[], object]] = {  # a method, a fixture, a property
        "append_many": lambda: sse_sansio.stores.RedisStreamStore.append_many,
        "sse_cassette": lambda: importlib.import_module("sse_sansio.pytest_plugin").sse_cassette,
        "retry": lambda: sse_sansio.Connection.retry,
    }
    if token in special:
        return special[token]()
    head, _, name = token.rpartition(".")
    if head.startswith("sse_sansio."):
        return getattr(importlib.import_module(head), name)
    return getattr(getattr(sse_sansio, head) if head else sse_sansio, name)


def test_every_name_in_the_jobs_table_exists() -> None:
    rows = [line for line in _section(JOBS).splitlines() if line.startswith("| ")][1:]
    assert len(rows) == 7  # read, serve, gateway, resume, fan out, cassettes, LLM outcomes
    for row in rows:
        _, names, guides = row.strip("| ").split(" | ")
        tokens = re.findall(r"`([^`]+)`", names)
        for token in tokens:
            if re.fullmatch(r"[A-Za-z_][\w.]*", token):
                assert _named(token) is not None, token
        for guide in re.findall(r"`([^`]+)`", guides):
            assert (ROOT / "docs" / guide).exists(), guide
