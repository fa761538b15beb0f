"""examples/resumable_server.py live: two server processes, one Redis, one client.

The client (a ReconnectPlanner) reads an answer from the first process; after a few
events the test kills that process, writes the rest of the answer while the client is
away, and the client resumes from the second process with ``Last-Event-ID``: every
event arrives exactly once, in order.  A client whose ID fell out of the window, or
belongs to another answer, gets the ``reset`` event.  Loopback only; every wait is
bounded (the servers' Redis waits, the client's socket timeout, the planner's
max_attempts).  Redis: see tests/helpers/redis_server.py (a real redis-server in CI).
While Redis does not answer, a response still gets its keepalive comments (issue 41,
item 9).
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest
import redis

from sse_sansio import Event, ReconnectPlanner
from tests.helpers.examples import EXAMPLES, TIMEOUT, load_example, subprocess_env
from tests.helpers.redis_server import RedisServer, real_redis_required, redis_servers

pytestmark = pytest.mark.slow  # two server processes and redis-server

example = load_example("resumable_server")
ANSWER = "one two three four five six seven eight nine ten"


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    yield from redis_servers()


class ServerProcess:
    """``python examples/resumable_server.py`` on a free port, until killed."""

    def __init__(self, redis_port: int, *options: str) -> None:
        script = str(EXAMPLES / "resumable_server.py")
        self.process = subprocess.Popen(
            [sys.executable, script, "--port", "0", "--redis-port", str(redis_port), *options],
            stdout=subprocess.PIPE,
            env=subprocess_env(),
            text=True,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()  # "listening on 127.0.0.1:PORT"
        assert line.startswith("listening on 127.0.0.1:"), line
        self.port = int(line.rsplit(":", 1)[1])

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(TIMEOUT)
        assert self.process.stdout is not None
        self.process.stdout.close()


@pytest.fixture(scope="module")
def client(redis_server: RedisServer) -> Iterator[redis.Redis]:
    with redis_server.client() as client:
        yield client


@pytest.fixture(scope="module")
def servers(redis_server: RedisServer) -> Iterator[tuple[ServerProcess, ServerProcess]]:
    first, second = ServerProcess(redis_server.port), ServerProcess(redis_server.port)
    try:
        yield first, second
    finally:
        for server in (first, second):
            server.kill()


def planner(last_event_id: str = "") -> ReconnectPlanner:
    return ReconnectPlanner(initial_delay=0.01, max_attempts=3, last_event_id=last_event_id)


def test_the_fixture_gives_a_real_redis_server_when_ci_requires_one(
    redis_server: RedisServer,
) -> None:
    if real_redis_required():
        assert redis_server.kind == "redis-server"
    with redis_server.client() as client:
        assert client.ping()


def test_a_client_cut_mid_answer_resumes_on_the_other_process_exactly_once(
    client: redis.Redis, servers: tuple[ServerProcess, ServerProcess]
) -> None:
    first, second = servers
    events = example.answer_events(ANSWER)
    window = example.producer(client, "cut")
    sent = [window.append(event) for event in events[:3]]

    def on_event(event: Event) -> None:
        if event.id == sent[1].id:  # mid-answer: kill the process serving the client
            first.kill()
            # The rest is written while the client is away.
            sent.extend(window.append(event) for event in events[3:])

    attempts: list[tuple[int, dict[str, str]]] = []
    received, end = example.read_answer(
        [first.port, second.port], "cut", planner(), on_event=on_event, attempts=attempts
    )
    assert end == "done"
    assert received == sent
    assert [json.loads(e.data).get("text") for e in received[:-1]] == ANSWER.split(" ")
    ports = [port for port, _ in attempts]
    assert ports[0] == first.port
    assert second.port in ports
    # The attempt that succeeded on the second process resumed after an event it was
    # sent (the kill may leave a later one in flight to the client).
    resumed = [headers for port, headers in attempts if port == second.port][-1]
    assert resumed["Last-Event-ID"] in {event.id for event in sent[1:3]}


def test_a_client_whose_id_fell_out_of_the_window_gets_the_reset(
    client: redis.Redis, servers: tuple[ServerProcess, ServerProcess]
) -> None:
    _, second = servers
    window = example.producer(client, "short", max_events=4)
    sent = [window.append(event) for event in example.answer_events(ANSWER)]
    # sent[1] was dropped long ago, sent[-6] is the newest one dropped: both are gaps.
    for old in (sent[1], sent[-6]):
        received, end = example.read_answer([second.port], "short", planner(old.id))
        assert (received, end) == ([], "reset")
    received, end = example.read_answer([second.port], "short", planner(sent[-5].id))
    assert (received, end) == (sent[-4:], "done")
    # A fresh client starts at the beginning, which is gone too.
    assert example.read_answer([second.port], "short", planner()) == ([], "reset")


def test_an_id_of_another_answer_is_not_replayed(
    client: redis.Redis, servers: tuple[ServerProcess, ServerProcess]
) -> None:
    _, second = servers
    mine = example.producer(client, "mine")
    theirs = example.producer(client, "theirs")
    secret = [theirs.append(event) for event in example.answer_events("private words")]
    mine.append(Event(type="delta", data='{"text": "x"}'))
    # Same numbers, other token: the other session's IDs mean nothing here.
    received, end = example.read_answer([second.port], "mine", planner(secret[0].id))
    assert (received, end) == ([], "reset")


def test_a_fresh_client_gets_the_priming_event_then_the_whole_answer(
    client: redis.Redis, servers: tuple[ServerProcess, ServerProcess]
) -> None:
    _, second = servers
    window = example.producer(client, "fresh")
    sent = [window.append(event) for event in example.answer_events("short answer")]
    received, end = example.read_answer([second.port], "fresh", planner())
    assert (received, end) == (sent, "done")


def test_the_command_line_produces_and_reads_an_answer(
    redis_server: RedisServer,
    servers: tuple[ServerProcess, ServerProcess],
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, second = servers
    redis_port = str(redis_server.port)
    assert example.main(["--redis-port", redis_port, "--produce", "cli", "--interval", "0"]) == 0
    ids = capsys.readouterr().out.split()
    assert len(ids) == len(example.answer_events(example.TEXT))
    assert example.main(["--client", "cli", "--ports", str(second.port)]) == 0
    assert capsys.readouterr().out == f"{example.TEXT} done\n"


def test_keepalives_flow_while_redis_does_not_answer() -> None:
    # A "Redis" that never answers: a listening socket nobody accepts on (the kernel
    # completes the handshake, redis-py sends its commands, no reply ever comes), as a
    # paused or failing-over Redis looks to redis-py while it waits and retries.
    with socket.create_server(("127.0.0.1", 0), backlog=16) as silent:
        server = ServerProcess(silent.getsockname()[1], "--keepalive", "0.2")
        try:
            with socket.create_connection(("127.0.0.1", server.port), timeout=TIMEOUT) as sock:
                sock.sendall(b"GET /answers/paused HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                received = b""
                while received.count(b": keepalive\n") < 3:
                    chunk = sock.recv(4096)  # before: nothing came, and this timed out
                    assert chunk, received
                    received += chunk
        finally:
            server.kill()
    head, _, body = received.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK")
    assert set(body.split(b"\n")) == {b": keepalive", b""}  # no event: Redis never answered
