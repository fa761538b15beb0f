"""Interop both ways (issue 44, item 5), against the example server on a free port.

- The project's own client side reads a durable stream in SSE mode: ``iter_events``
  through a :class:`~sse_sansio.ReconnectPlanner`; the connection drops after the first
  answer, the planner resumes with the last control event's ID (the offset: the server
  takes ``Last-Event-ID`` as the offset to resume from), and every byte arrives once.
- The Python client ``durable-streams`` from PyPI (in the test extra: pure Python,
  httpx its only dependency) writes and reads the same server, in a subprocess of its
  own.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

import sse_sansio
from tests.helpers.redis_server import RedisServer, free_port, redis_servers

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 30.0

pytestmark = pytest.mark.slow  # a live server, a subprocess


@contextmanager
def example_server(redis_url: str | None = None) -> Iterator[str]:
    """examples/durable_streams_server.py under uvicorn on a free port; its base URL."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("DURABLE_REDIS_URL", None)
    if redis_url is not None:
        env["DURABLE_REDIS_URL"] = redis_url
    command = [sys.executable, "-m", "uvicorn", "--app-dir", str(ROOT / "examples")]
    command += ["durable_streams_server:app", "--port", str(port), "--log-level", "warning"]
    process = subprocess.Popen(command, env=env, cwd=ROOT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + TIMEOUT
    while True:
        assert process.poll() is None, "the server exited at start"
        try:
            httpx.get(f"{url}/v1/stream/none", timeout=1)
            break
        except httpx.TransportError:
            assert time.monotonic() < deadline, "the server did not answer"
            time.sleep(0.05)
    try:
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with example_server() as url:
        yield url


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    yield from redis_servers()


def test_two_processes_on_one_redis_share_streams_and_wake_readers(
    redis_server: RedisServer,
) -> None:
    """A second process serving the same Redis sees the same streams, offsets and
    closure, and an append made through one wakes a long-poll held by the other (the
    long-poll timeout is 30 s: only the change channel can answer it in time)."""
    text = {"Content-Type": "text/plain"}
    with example_server(redis_server.url) as first, example_server(redis_server.url) as second:
        path = f"/v1/stream/two-{os.getpid()}"
        with httpx.Client(timeout=TIMEOUT) as http:
            created = http.put(first + path, headers=text, content=b"from one")
            assert created.status_code == 201
            read = http.get(second + path)
            assert read.content == b"from one"
            assert read.headers["stream-next-offset"] == created.headers["stream-next-offset"]
            tail = read.headers["stream-next-offset"]
            with ThreadPoolExecutor(1) as pool:
                params = {"offset": tail, "live": "long-poll"}
                waiting = pool.submit(http.get, second + path, params=params)
                time.sleep(0.5)  # the long-poll is held by the second process
                assert not waiting.done()
                http.post(first + path, headers={**text, "Stream-Closed": "true"}, content=b"!")
                woken = waiting.result(timeout=TIMEOUT)
            assert (woken.status_code, woken.content) == (200, b"!")
            assert woken.headers["stream-closed"] == "true"
            assert http.head(second + path).headers["stream-closed"] == "true"


def test_own_client_resumes_by_offset(server: str) -> None:
    url = f"{server}/v1/stream/interop-own-{os.getpid()}"
    text = {"Content-Type": "text/plain"}
    with httpx.Client(timeout=TIMEOUT) as http:
        assert http.put(url, headers=text, content=b"one ").status_code == 201
        plan = sse_sansio.ReconnectPlanner(initial_delay=0.0, random=random.Random(0))
        step = plan.start(now=time.monotonic())
        assert isinstance(step, sse_sansio.Reconnect)
        received: list[str] = []
        closed = False
        for attempt in range(3):
            headers = {"Accept": "text/event-stream", **step.headers}
            with http.stream(
                "GET", url, params={"offset": "-1", "live": "sse"}, headers=headers
            ) as response:
                for event in plan.events(
                    response.iter_raw(), response.status_code, response.headers
                ):
                    if not isinstance(event, sse_sansio.Event):
                        continue  # a keepalive comment
                    if event.type == "data":
                        received.append(event.data)
                    elif json.loads(event.data).get("streamClosed"):
                        closed = True
                    elif attempt == 0:
                        break  # the connection drops after the first answer
            if closed:
                break
            if attempt == 0:  # while nobody reads: the rest of the answer, then its end
                http.post(url, headers=text, content=b"two ")
                http.post(url, headers={**text, "Stream-Closed": "true"}, content=b"three")
            step = plan.ended(None, now=time.monotonic())
            assert isinstance(step, sse_sansio.Reconnect)
            assert step.headers["Last-Event-ID"] == "0000000000000000_0000000000000004"
    assert closed
    assert "".join(received) == "one two three"  # every byte, once


CLIENT_SCRIPT = textwrap.dedent(
    """
    import json, sys
    from durable_streams import DurableStream, stream

    base = sys.argv[1]
    handle = DurableStream.create(base + "/json", content_type="application/json")
    handle.append({"n": 1})
    handle.append({"n": 2})
    with stream(base + "/json", live=False) as res:
        items = res.read_json()
    with stream(base + "/ours", live=False) as res:
        raw = b"".join(res)
    print(json.dumps({"items": items, "ours": raw.decode()}))
    """
)


def test_the_pypi_client_writes_and_reads(server: str) -> None:
    base = f"{server}/v1/stream/interop-pypi-{os.getpid()}"
    assert (
        httpx.put(f"{base}/ours", headers={"Content-Type": "text/plain"}, content=b"hi").status_code
        == 201
    )
    result = subprocess.run(
        [sys.executable, "-c", CLIENT_SCRIPT, base],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"items": [{"n": 1}, {"n": 2}], "ours": "hi"}
    # What the client wrote, read back by plain HTTP: the messages as the protocol stores them.
    assert httpx.get(f"{base}/json").json() == [{"n": 1}, {"n": 2}]
