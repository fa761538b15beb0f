"""The judge (issue 44, item 4): the protocol's own conformance suite, against us and
against the Node reference server, in the same run on the same machine.

``@durable-streams/server-conformance-tests`` (with vitest and the reference server
``@durable-streams/server``) is installed by npm, at pinned versions, into a cache
directory outside the checkout (``$XDG_CACHE_HOME/sse_sansio/...``, keyed by the
versions), once per machine.  Its CLI's file filter skips files under
``node_modules``, so a small vitest file of ours calls ``runConformanceTests``.  Each
server gets the same short long-poll timeout (0.5 s, the suite waits less than its
own test timeout).  The verdict: every test that the reference server passes, ours
passes too, with the memory store and with Redis; the tests each failed are printed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.redis_server import RedisServer, free_port, redis_servers

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {
    "@durable-streams/server-conformance-tests": "0.3.6",
    "@durable-streams/server": "0.3.7",
    "vitest": "4.1.12",
}
LONG_POLL = "0.5"  # seconds, for both servers
TIMEOUT = 300.0  # for one suite run: a hang fails

SUITE = """\
import { runConformanceTests } from "@durable-streams/server-conformance-tests"
runConformanceTests({ baseUrl: process.env.DS_BASE_URL })
"""
REFERENCE = f"""\
import {{ DurableStreamTestServer }} from "@durable-streams/server"
const server = new DurableStreamTestServer({{
  port: Number(process.env.PORT), host: "127.0.0.1", longPollTimeout: {float(LONG_POLL) * 1000},
}})
console.log(await server.start())
"""

pytestmark = pytest.mark.slow  # npm, node and three servers


def _cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    key = "-".join(version for version in PACKAGES.values())
    return Path(base) / "sse_sansio" / f"durable-conformance-{key}"


@pytest.fixture(scope="module")
def suite() -> Path:
    """The directory with the suite installed and our two small files written."""
    npm = shutil.which("npm")
    assert npm is not None, "the conformance judge needs node and npm on PATH"
    folder = _cache()
    folder.mkdir(parents=True, exist_ok=True)
    if not (folder / "node_modules" / "@durable-streams" / "server").is_dir():
        (folder / "package.json").write_text('{"name": "ds-judge", "private": true}\n')
        wanted = [f"{name}@{version}" for name, version in PACKAGES.items()]
        subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--silent", *wanted],
            cwd=folder,
            check=True,
            timeout=TIMEOUT,
        )
    (folder / "judge").mkdir(exist_ok=True)
    (folder / "judge" / "conformance.test.mjs").write_text(SUITE)
    (folder / "reference.mjs").write_text(REFERENCE)
    return folder


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    yield from redis_servers()


def _wait_for_port(port: int, process: subprocess.Popen[bytes]) -> None:
    import socket

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert process.poll() is None, "the server exited at start"
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise AssertionError(f"nothing listens on {port}")


def _ours(redis_url: str | None) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {**os.environ, "DURABLE_LONG_POLL_TIMEOUT": LONG_POLL, "PYTHONPATH": str(ROOT)}
    env.pop("DURABLE_REDIS_URL", None)
    if redis_url is not None:
        env["DURABLE_REDIS_URL"] = redis_url
    command = [sys.executable, "-m", "uvicorn", "--app-dir", str(ROOT / "examples")]
    command += ["durable_streams_server:app", "--host", "127.0.0.1", "--port", str(port)]
    command += ["--log-level", "warning"]
    process = subprocess.Popen(command, env=env, cwd=ROOT)
    _wait_for_port(port, process)
    return process, f"http://127.0.0.1:{port}"


def _reference(folder: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {**os.environ, "PORT": str(port)}
    node = shutil.which("node")
    assert node is not None
    process = subprocess.Popen([node, "reference.mjs"], cwd=folder, env=env)
    _wait_for_port(port, process)
    return process, f"http://127.0.0.1:{port}"


def _run(folder: Path, base_url: str, name: str) -> dict[str, str]:
    """Each test's full name -> its status ("passed", "failed", "skipped", ...)."""
    report = folder / f"report-{name}-{os.getpid()}.json"
    npx = shutil.which("npx")
    assert npx is not None
    command = [npx, "vitest", "run", "--root", ".", "--dir", "judge", "--reporter=json"]
    command += [f"--outputFile={report}", "--testTimeout=30000"]
    subprocess.run(
        command,
        cwd=folder,
        env={**os.environ, "DS_BASE_URL": base_url, "CI": "true"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,  # failing tests exit non-zero: the report is what counts
        timeout=TIMEOUT,
    )
    data = json.loads(report.read_text())
    report.unlink()
    return {
        result["fullName"]: result["status"]
        for file in data["testResults"]
        for result in file["assertionResults"]
    }


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:  # pragma: no cover - a server that hangs on exit
        process.kill()
        process.wait()


@pytest.fixture(scope="module")
def reference(suite: Path) -> dict[str, str]:
    """The reference server's results, run once for both stores' verdicts."""
    process, url = _reference(suite)
    try:
        return _run(suite, url, "reference")
    finally:
        _stop(process)


def _judge(folder: Path, theirs: dict[str, str], redis_url: str | None) -> None:
    started = time.monotonic()
    server, url = _ours(redis_url)
    try:
        ours = _run(folder, url, "ours")
    finally:
        _stop(server)
    store = "redis" if redis_url else "memory"
    passed_theirs = {name for name, status in theirs.items() if status == "passed"}
    passed_ours = {name for name, status in ours.items() if status == "passed"}
    print(  # the figures the report quotes (pytest -s shows them)
        f"\nconformance ({store}): ours {len(passed_ours)}/{len(ours)} passed, "
        f"reference {len(passed_theirs)}/{len(theirs)}; our run {time.monotonic() - started:.0f} s"
    )
    for name in sorted(set(theirs) - passed_theirs):
        print(f"  reference {theirs[name]}: {name}")
    for name in sorted(set(ours) - passed_ours):
        print(f"  ours {ours[name]}: {name}")
    assert len(theirs) > 300, "the suite ran too few tests to judge anything"
    assert set(ours) == set(theirs)
    assert passed_theirs - passed_ours == set(), sorted(passed_theirs - passed_ours)


def test_conformance_memory_store(suite: Path, reference: dict[str, str]) -> None:
    _judge(suite, reference, None)


def test_conformance_redis_store(
    suite: Path, reference: dict[str, str], redis_server: RedisServer
) -> None:
    _judge(suite, reference, redis_server.url)
