"""The Redis store's appends over a RESP connection of their own (issue 44, item 8:
sse_sansio/durable/_resp.py).

What the path must keep: the same answers as redis-py's (an append is still one
``EVALSHA``, atomic with the producer check), replies matched to their commands while
several are in flight, and every append it cannot deliver handed to redis-py: no
connection, a refused handshake, an error reply, a connection lost mid-command.  After a
restart of Redis (connections dropped, the script cache empty) appends work again.

The corners a real Redis never shows (a reply held back, garbage, a handshake refused)
are played by a small RESP server of the tests' own (:class:`Stub`); the rest runs on a
live ``redis-server`` (tests/helpers/redis_server.py).
"""

from __future__ import annotations

import asyncio
import hashlib
import shutil
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis
import redis.asyncio

from sse_sansio.durable import AppendOutcome, AppendPlan, RedisStore, StreamMeta, _resp
from sse_sansio.durable._resp import AppendLine, pack
from tests.helpers.redis_server import RedisServer, free_port, redis_servers

SCRIPT = "return ARGV[1]"
SHA = hashlib.sha1(SCRIPT.encode()).hexdigest()
GUARD = 10.0  # seconds: a hang fails the test; nothing here is timed


# ---- packing and reading RESP, no server ---------------------------------------------


def test_commands_are_arrays_of_bulk_strings() -> None:
    # RESP: "*<count>\r\n", then "$<length>\r\n<bytes>\r\n" each; text as UTF-8.
    assert pack(["SET", "k", b"\x00\r\n"]) == (b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$3\r\n\x00\r\n\r\n")
    assert pack(["é"]) == b"*1\r\n$2\r\n\xc3\xa9\r\n"
    assert pack([]) == b"*0\r\n"


class Wire:
    """A transport that keeps what it is given."""

    def __init__(self) -> None:
        self.written: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        self.written.append(data)

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True


def line_on(wire: Wire) -> _resp._Line:
    line = _resp._Line()
    line.connection_made(wire)  # type: ignore[arg-type]
    return line


def test_replies_in_pieces_answer_their_commands_in_order() -> None:
    replies = b"$5\r\nab\r\nc\r\n+OK\r\n:42\r\n-NOSCRIPT no script\r\n$-1\r\n$0\r\n\r\n"

    async def scenario() -> list[bytes | None]:
        wire = Wire()
        line = line_on(wire)
        futures = [line.request(b"c%d" % i) for i in range(6)]
        assert wire.written == [b"c0", b"c1", b"c2", b"c3", b"c4", b"c5"]
        for i in range(len(replies)):  # one byte at a time: every split
            line.data_received(replies[i : i + 1])
        assert not wire.closed
        return [future.result() for future in futures]

    # An error and a nil are "not delivered": None.
    assert asyncio.run(scenario()) == [b"ab\r\nc", b"OK", b"42", None, None, b""]


def test_a_cancelled_caller_s_reply_is_read_and_dropped() -> None:
    async def scenario() -> bytes | None:
        line = line_on(Wire())
        first, second = line.request(b"a"), line.request(b"b")
        first.cancel()
        line.data_received(b"$1\r\n1\r\n$1\r\n2\r\n")
        return second.result()

    assert asyncio.run(scenario()) == b"2"


@pytest.mark.parametrize(
    "garbage",
    [b"*1\r\n$1\r\nx\r\n", b"$x\r\n", b"+OK\r\n+OK\r\n"],
    ids=["an array", "a length that is no number", "a reply nobody asked for"],
)
def test_a_peer_breaking_resp_closes_the_line(garbage: bytes) -> None:
    async def scenario() -> tuple[str, bool, bytes | None]:
        wire = Wire()
        line = line_on(wire)
        future = line.request(b"a")
        line.data_received(garbage)
        late = line.request(b"b")  # the line is closed: at once None, nothing written
        assert wire.written == [b"a"]
        error = future.exception()
        first = repr(future.result()) if error is None else type(error).__name__
        return first, wire.closed, late.result() if late.done() else b"waits"

    # A command in flight when the peer broke RESP may have run: lost, never None
    # (None would send it again through redis-py).
    first = "AppendLost" if garbage != b"+OK\r\n+OK\r\n" else "b'OK'"
    assert asyncio.run(scenario()) == (first, True, None)


def test_a_lost_connection_fails_every_call_in_flight() -> None:
    async def scenario() -> list[str]:
        line = line_on(Wire())
        futures = [line.request(b"a"), line.request(b"b")]
        line.connection_lost(ConnectionResetError())
        assert not line.open
        return [str(future.exception()) for future in futures]

    assert (
        asyncio.run(scenario())
        == ["the connection to Redis was lost with a command in flight; it may have run"] * 2
    )


@pytest.mark.parametrize(
    ("url", "handshake"),
    [
        ("redis://h:1/0", []),
        ("redis://h/02", [("SELECT", "2")]),
        ("redis://:p%40ss@h:1", [("AUTH", "p@ss")]),
        ("redis://u:pw@h:1/3?db=4", [("AUTH", "u", "pw"), ("SELECT", "4")]),
        ("unix:///tmp/r.sock?db=5", [("SELECT", "5")]),
    ],
)
def test_urls_it_reads(url: str, handshake: list[tuple[str, ...]]) -> None:
    line = AppendLine.for_url(url, SCRIPT, SHA)
    assert line is not None
    assert line._handshake == [pack(command) for command in handshake]


@pytest.mark.parametrize(
    "url", ["rediss://h:1/0", "redis://h:1/0?socket_timeout=3", "valkey://h/0"]
)
def test_urls_it_leaves_to_redis_py(url: str) -> None:
    assert AppendLine.for_url(url, SCRIPT, SHA) is None
    if url.startswith("redis"):  # redis-py takes every append of such a store
        assert RedisStore.from_url(url)._line is None


# ---- a RESP server of the tests' own -------------------------------------------------


class Stub:
    """Answers each command (a list of its words) with ``answer(words)``: bytes to
    write, or None to close the connection.  Keeps every command it was sent."""

    def __init__(self, answer: Callable[[list[bytes]], bytes | None]) -> None:
        self.answer = answer
        self.commands: list[list[bytes]] = []
        self.connections = 0
        self._writers: list[asyncio.StreamWriter] = []

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self._writers.append(writer)
        try:
            while True:
                count = int((await reader.readline())[1:])
                words = []
                for _ in range(count):
                    size = int((await reader.readline())[1:])
                    words.append((await reader.readexactly(size + 2))[:-2])
                self.commands.append(words)
                reply = self.answer(words)
                if reply is None:
                    break
                writer.write(reply)
        except (ValueError, asyncio.IncompleteReadError):
            pass  # the client closed its end
        writer.close()

    async def stop(self, server: asyncio.Server) -> None:
        """Stop listening and close every connection (before the loop ends)."""
        server.close()
        for writer in self._writers:
            writer.close()
            await writer.wait_closed()


def greeter(
    evalsha: Callable[[list[bytes]], bytes | None],
) -> Callable[[list[bytes]], bytes | None]:
    """The handshake answered as Redis does, then ``evalsha`` for the rest."""

    def answer(words: list[bytes]) -> bytes | None:
        if words[0] in (b"AUTH", b"SELECT"):
            return b"+OK\r\n"
        if words[:2] == [b"SCRIPT", b"LOAD"]:
            return b"$40\r\n" + hashlib.sha1(words[2]).hexdigest().encode() + b"\r\n"
        return evalsha(words)

    return answer


def echo(words: list[bytes]) -> bytes:
    return b"$%d\r\n%b\r\n" % (len(words[3]), words[3])  # ARGV[1], as SCRIPT does


async def tcp_stub(stub: Stub) -> tuple[asyncio.Server, str]:
    server = await asyncio.start_server(stub.serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    return server, f"redis://u:pw@127.0.0.1:{port}/7"


@pytest.mark.slow  # a RESP server of the tests' own, on loopback
def test_one_held_connection_its_handshake_and_pipelined_calls() -> None:
    stub = Stub(greeter(echo))

    async def scenario() -> list[bytes | None]:
        server, url = await tcp_stub(stub)
        line = AppendLine.for_url(url, SCRIPT, SHA)
        assert line is not None
        try:
            # Two calls find no connection: one opening serves both.
            answers = await asyncio.gather(*[line.call([f"m{i}", b"x"]) for i in range(2)])
            answers += await asyncio.gather(*[line.call([f"n{i}"]) for i in range(20)])
        finally:
            line.close()
            await stub.stop(server)
        assert line.delivered == 22
        return answers

    answers = asyncio.run(asyncio.wait_for(scenario(), GUARD))
    assert answers == [b"m0", b"m1", *[f"n{i}".encode() for i in range(20)]]
    assert stub.connections == 1
    assert stub.commands[:3] == [
        [b"AUTH", b"u", b"pw"],
        [b"SELECT", b"7"],
        [b"SCRIPT", b"LOAD", SCRIPT.encode()],
    ]
    assert stub.commands[3] == [b"EVALSHA", SHA.encode(), b"0", b"m0", b"x"]


@pytest.mark.slow  # a RESP server of the tests' own, on loopback
def test_a_unix_socket() -> None:
    stub = Stub(greeter(echo))
    where = Path(f"/tmp/sse-sansio-{uuid.uuid4().hex[:12]}.sock")  # AF_UNIX: short paths

    async def scenario() -> bytes | None:
        server = await asyncio.start_unix_server(stub.serve, str(where))
        line = AppendLine.for_url(f"unix://{where}", SCRIPT, SHA)
        assert line is not None
        try:
            return await line.call(["hello"])
        finally:
            line.close()
            await stub.stop(server)

    try:
        assert asyncio.run(asyncio.wait_for(scenario(), GUARD)) == b"hello"
    finally:
        where.unlink(missing_ok=True)
    assert stub.commands[0] == [b"SCRIPT", b"LOAD", SCRIPT.encode()]  # db 0: no SELECT


@pytest.mark.parametrize(
    "answer",
    [
        lambda words: b"-WRONGPASS invalid password\r\n",  # the handshake refused
        lambda words: None,  # the connection closed at once
        greeter(lambda words: b"-NOSCRIPT No matching script\r\n"),  # an error reply
        lambda words: None if words[0] == b"SCRIPT" else b"+OK\r\n",  # lost greeting
    ],
    ids=["refused", "closed", "error reply", "lost in the handshake"],
)
@pytest.mark.slow  # a RESP server of the tests' own, on loopback
def test_what_it_cannot_deliver_is_none(answer: Callable[[list[bytes]], bytes | None]) -> None:
    stub = Stub(answer)

    async def scenario() -> tuple[bytes | None, int]:
        server, url = await tcp_stub(stub)
        line = AppendLine.for_url(url, SCRIPT, SHA)
        assert line is not None
        try:
            return await line.call(["x"]), line.delivered
        finally:
            line.close()
            await stub.stop(server)

    assert asyncio.run(asyncio.wait_for(scenario(), GUARD)) == (None, 0)


@pytest.mark.slow  # a RESP server of the tests' own, on loopback
def test_a_command_lost_in_flight_is_never_sent_again() -> None:
    # Redis may have run it: the call fails (the request with it), and the next call
    # connects again.
    answers = iter([None, b"$2\r\nok\r\n"])
    stub = Stub(greeter(lambda words: next(answers)))

    async def scenario() -> tuple[str, bytes | None, int]:
        server, url = await tcp_stub(stub)
        line = AppendLine.for_url(url, SCRIPT, SHA)
        assert line is not None
        try:
            with pytest.raises(_resp.AppendLost) as lost:
                await line.call(["x"])
            return str(lost.value), await line.call(["y"]), line.delivered
        finally:
            line.close()
            await stub.stop(server)

    why, again, delivered = asyncio.run(asyncio.wait_for(scenario(), GUARD))
    assert why.endswith("with a command in flight; it may have run")
    assert (again, delivered) == (b"ok", 1)
    sent = [words[3] for words in stub.commands if words[0] == b"EVALSHA"]
    assert sent == [b"x", b"y"]  # "x" once: not sent again


@pytest.mark.slow  # a RESP server of the tests' own, on loopback
def test_no_server_and_a_silent_one_are_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_resp, "CONNECT_TIMEOUT", 0.2)
    heard: list[bytes] = []

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        heard.append(await reader.read())  # never answers; reads until the client's end
        writer.close()

    async def scenario() -> tuple[bytes | None, bytes | None]:
        nobody = AppendLine.for_url(f"redis://127.0.0.1:{free_port()}", SCRIPT, SHA)
        server = await asyncio.start_server(silent, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        quiet = AppendLine.for_url(f"redis://127.0.0.1:{port}", SCRIPT, SHA)
        assert nobody is not None
        assert quiet is not None
        try:
            answers = await nobody.call(["x"]), await quiet.call(["x"])
            while not heard:  # the line closed the connection that timed out
                await asyncio.sleep(0.01)
            return answers
        finally:
            server.close()

    assert asyncio.run(asyncio.wait_for(scenario(), GUARD)) == (None, None)
    assert heard == [pack(("SCRIPT", "LOAD", SCRIPT))]


@pytest.mark.slow  # a RESP server of the tests' own, on loopback
def test_a_reply_held_back_while_its_caller_gave_up() -> None:
    """A caller cancelled mid-call: its reply still comes, is dropped, and the next
    caller gets its own."""
    asked: list[bytes] = []

    def evalsha(words: list[bytes]) -> bytes:
        asked.append(words[3])
        if words[3] == b"first":
            return b""  # held back: sent with the second's
        return echo([b"", b"", b"", b"first"]) + echo(words)

    stub = Stub(greeter(evalsha))

    async def scenario() -> bytes | None:
        server, url = await tcp_stub(stub)
        line = AppendLine.for_url(url, SCRIPT, SHA)
        assert line is not None
        try:
            first = asyncio.ensure_future(line.call(["first"]))
            while asked != [b"first"]:
                await asyncio.sleep(0.01)
            first.cancel()
            return await line.call(["second"])
        finally:
            line.close()
            await stub.stop(server)

    assert asyncio.run(asyncio.wait_for(scenario(), GUARD)) == b"second"


@pytest.mark.slow  # a RESP server of the tests' own, on loopback
def test_a_line_outlives_its_event_loop() -> None:
    """Each asyncio.run has a loop of its own: the line opens a connection on each,
    and forgets one whose loop is closed."""
    stub = Stub(greeter(echo))

    async def one(line: AppendLine, word: str) -> bytes | None:
        server, _ = await tcp_stub(stub)
        line._connect = lambda factory: asyncio.get_running_loop().create_connection(
            factory, "127.0.0.1", server.sockets[0].getsockname()[1]
        )
        try:
            return await line.call([word])
        finally:
            await stub.stop(server)

    line = AppendLine.for_url("redis://127.0.0.1:1", SCRIPT, SHA)
    assert line is not None
    assert asyncio.run(one(line, "a")) == b"a"
    assert asyncio.run(one(line, "b")) == b"b"
    line.close()  # its loop is closed: forgotten
    line.close()  # nothing held
    assert (stub.connections, line.delivered) == (2, 2)


# ---- on a live Redis ------------------------------------------------------------------


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    yield from redis_servers()


def meta(path: str) -> StreamMeta:
    return StreamMeta(path=path, sid="s1", content_type="text/plain", json=False)


def plan(data: bytes, producer: tuple[str, int, int] | None = None) -> AppendPlan:
    return AppendPlan([data], len(data), "text/plain", False, None, producer, 1.0e9)


def delivered(store: RedisStore) -> int:
    """How many appends the store's own connection delivered (redis-py the others)."""
    line = store._line
    assert line is not None
    return line.delivered


def new_path() -> str:
    return f"/v1/stream/r{uuid.uuid4().hex[:10]}"


@pytest.mark.slow  # a live redis-server
def test_the_same_answers_as_redis_py_and_in_order(redis_server: RedisServer) -> None:
    """The same appends through the own connection (from_url) and through redis-py's
    asyncio client (a store made with one only): the same outcomes."""
    prefix = f"q{uuid.uuid4().hex[:8]}:"
    fast = RedisStore.from_url(redis_server.url, prefix=prefix)
    slow = RedisStore(
        redis_server.client(),
        prefix=prefix,
        async_client=redis.asyncio.Redis.from_url(redis_server.url),
    )
    assert slow._line is None
    steps = [
        plan(b"ab", ("w", 0, 0)),
        plan(b"ab", ("w", 0, 0)),  # a duplicate
        plan(b"cd", ("w", 0, 5)),  # a gap
        plan(b"ef", ("w", 0, 1)),
    ]

    async def run(store: RedisStore) -> list[AppendOutcome]:
        p = new_path()
        await asyncio.to_thread(store.create, meta(p), [])
        try:
            return [
                *[await store.append_async(p, step) for step in steps],
                await store.append_async(new_path(), plan(b"x")),
            ]
        finally:
            await store.aclose()

    expected = [
        AppendOutcome("appended", 2, False, 0, 0),
        AppendOutcome("duplicate", 2, False, 0, 0),
        AppendOutcome("seq-gap", 2, False, 0, 1),  # the seq it expected next
        AppendOutcome("appended", 4, False, 0, 1),
        AppendOutcome("missing", 0, False, 0, 0),
    ]
    assert asyncio.run(asyncio.wait_for(run(slow), GUARD)) == expected
    assert asyncio.run(asyncio.wait_for(run(fast), GUARD)) == expected
    assert delivered(fast) == len(expected)


@pytest.mark.slow  # a live redis-server
def test_appends_in_flight_together_keep_their_order(redis_server: RedisServer) -> None:
    """30 producer seqs in flight at once on the one connection: written in the order
    they were made, so none is a gap."""
    store = RedisStore.from_url(redis_server.url, prefix=f"o{uuid.uuid4().hex[:8]}:")
    p = new_path()
    store.create(meta(p), [])

    async def scenario() -> list[AppendOutcome]:
        try:
            return await asyncio.gather(
                *[store.append_async(p, plan(b"%02d" % i, ("v", 0, i))) for i in range(30)]
            )
        finally:
            await store.aclose()

    answers = asyncio.run(asyncio.wait_for(scenario(), GUARD))
    assert [(a.verdict, a.tail, a.seq) for a in answers] == [
        ("appended", 2 * (i + 1), i) for i in range(30)
    ]
    assert store.read(p, 0, 60, 1000) == [b"".join(b"%02d" % i for i in range(30))]


@pytest.mark.slow  # a live redis-server
def test_a_flushed_script_cache_goes_to_redis_py_once(redis_server: RedisServer) -> None:
    prefix = f"f{uuid.uuid4().hex[:8]}:"
    store = RedisStore.from_url(redis_server.url, prefix=prefix)
    p = new_path()
    store.create(meta(p), [])
    client = redis_server.client()

    async def scenario() -> list[str]:
        try:
            first = await store.append_async(p, plan(b"a"))
            client.script_flush()  # NOSCRIPT next: redis-py's script loads it again
            second = await store.append_async(p, plan(b"b"))
            third = await store.append_async(p, plan(b"c"))
        finally:
            await store.aclose()
        return [first.verdict, second.verdict, third.verdict]

    assert asyncio.run(asyncio.wait_for(scenario(), GUARD)) == ["appended"] * 3
    assert delivered(store) == 2
    assert store.read(p, 0, 3, 100) == [b"abc"]


@pytest.mark.slow  # a live redis-server
def test_another_db(redis_server: RedisServer) -> None:
    prefix = f"d{uuid.uuid4().hex[:8]}:"
    store = RedisStore.from_url(f"redis://127.0.0.1:{redis_server.port}/3", prefix=prefix)
    p = new_path()
    store.create(meta(p), [])

    async def scenario() -> str:
        try:
            return (await store.append_async(p, plan(b"xyz"))).verdict
        finally:
            await store.aclose()

    assert asyncio.run(asyncio.wait_for(scenario(), GUARD)) == "appended"
    assert delivered(store) == 1
    db3 = redis.Redis(host="127.0.0.1", port=redis_server.port, db=3)
    assert db3.get(f"{prefix}d:{p}") == b"xyz"


class Restartable:
    """A Redis server on a fixed port that can be stopped and started again: the real
    one, or fakeredis's where there is none (as tests/helpers/redis_server.py)."""

    def __init__(self) -> None:
        self.port = free_port()
        self.binary = shutil.which("redis-server")
        self._stop: Callable[[], None] = lambda: None

    def start(self) -> None:
        if self.binary is not None:
            command = [self.binary, "--port", str(self.port), "--bind", "127.0.0.1"]
            process = subprocess.Popen(
                [*command, "--save", "", "--appendonly", "no"], stdout=subprocess.DEVNULL
            )

            def stop() -> None:
                process.terminate()
                process.wait()
        else:
            from fakeredis import TcpFakeServer

            TcpFakeServer.allow_reuse_address = True
            server = TcpFakeServer(("127.0.0.1", self.port), server_type="redis")
            thread = threading.Thread(target=server.serve_forever, daemon=True)
            thread.start()

            def stop() -> None:
                server.shutdown()
                server.server_close()
                thread.join()

        self._stop = stop
        client = redis.Redis(host="127.0.0.1", port=self.port)
        deadline = time.monotonic() + GUARD
        while True:
            try:
                client.ping()
                return
            except redis.ConnectionError:
                assert time.monotonic() < deadline, "Redis did not start"
                time.sleep(0.02)

    def stop(self) -> None:
        self._stop()
        self._stop = lambda: None


@pytest.mark.slow  # starts and stops a Redis server
def test_appends_come_back_after_a_restart_of_redis() -> None:
    server = Restartable()
    server.start()
    store = RedisStore.from_url(f"redis://127.0.0.1:{server.port}/0")
    p = new_path()

    async def scenario() -> list[str]:
        answers: list[str] = []
        try:
            await asyncio.to_thread(store.create, meta(p), [])
            answers.append((await store.append_async(p, plan(b"a"))).verdict)
            await asyncio.to_thread(server.stop)
            with pytest.raises(redis.ConnectionError):  # redis-py's own error
                await store.append_async(p, plan(b"b"))
            await asyncio.to_thread(server.start)  # empty: no streams, no scripts
            await asyncio.to_thread(store.create, meta(p), [])
            answers.append((await store.append_async(p, plan(b"c"))).verdict)
            answers.append((await store.append_async(p, plan(b"d"))).verdict)
        finally:
            await store.aclose()
        return answers

    try:
        assert asyncio.run(asyncio.wait_for(scenario(), 60)) == ["appended"] * 3
        assert store.read(p, 0, 2, 100) == [b"cd"]
        assert delivered(store) == 3
    finally:
        server.stop()
