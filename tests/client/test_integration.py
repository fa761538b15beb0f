"""The examples against a real SSE server written by others: sse-starlette under uvicorn.

The app (tests/helpers/sse_app.py) runs in a subprocess on 127.0.0.1 for the whole module.  It
sends CRLF line ends and ``: ping - <time>`` comments (every 50 ms here), Chinese text
one character per event, multi-line data, ids and retry, and a 2 MiB single-line event;
its /cut route dies in the middle of an event.  Each client example must see exactly the
events the app sent, directly and through the proxy in both modes; in verbatim mode the
client must receive byte for byte the body uvicorn sent, which a TCP tap between the
proxy and uvicorn records independently of the proxy.
"""

from __future__ import annotations

import contextlib
import select
import socket
import socketserver
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import h11
import pytest

from sse_sansio import (
    Comment,
    EndOfStream,
    Event,
    ReceivedItem,
    ReconnectPlanner,
    RemoteProtocolError,
    ResponseError,
    StopCause,
    TruncatedStreamError,
)
from tests.helpers.examples import (
    TIMEOUT,
    collect,
    collect_async,
    events_of,
    load_example,
    serving,
    subprocess_env,
)
from tests.helpers.sse_app import BIG, CUT_EVENTS, MULTILINE, STREAM, Sent

pytestmark = pytest.mark.slow  # a live server and clients in subprocesses

HERE = Path(__file__).resolve().parents[1] / "helpers"


def expected_events(sent: list[Sent], last_event_id: str = "") -> list[Event]:
    """The events a client must see for ``sent``: an event without an id field carries
    the last id seen before it (starting from the one it resumed from)."""
    events = []
    for item in sent:
        if item.id is not None:
            last_event_id = item.id
        event_type = item.event or "message"
        events.append(Event(type=event_type, data=item.data, id=last_event_id, retry=item.retry))
    return events


EXPECTED = expected_events(STREAM)


def test_the_stream_has_what_the_issue_asks_for() -> None:
    # A guard on the fixture itself, so that the tests below keep their meaning.
    assert sum(e.type == "delta" for e in EXPECTED) > 20
    assert any(e.retry is not None for e in EXPECTED)
    assert len(BIG.encode()) == 2 * 1024 * 1024
    assert "\n" in MULTILINE
    assert "\n" not in BIG


# ---- the app under uvicorn ------------------------------------------------------------------


@pytest.fixture(scope="module")
def app_port() -> Iterator[int]:
    """Start tests/helpers/sse_app.py under uvicorn in a subprocess; stop it afterwards."""
    command = [sys.executable, str(HERE / "sse_app.py")]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=subprocess_env(), text=True
    ) as app:
        try:
            assert app.stdout is not None
            ready, _, _ = select.select([app.stdout], [], [], 30)
            assert ready, "the app did not start within 30 s"
            line = app.stdout.readline()  # "port N", printed once the socket listens
            assert line.startswith("port "), line
            yield int(line.split()[1])
        finally:
            app.terminate()
            try:
                app.wait(5)
            except subprocess.TimeoutExpired:
                app.kill()
                app.wait(5)


def is_ping(item: ReceivedItem) -> bool:
    return isinstance(item, Comment) and item.text.startswith("ping - ")


# ---- each client, straight from uvicorn -----------------------------------------------------


def test_h11_client_receives_exactly_the_events_sent(app_port: int) -> None:
    client = load_example("h11_client")
    items, error = collect(client.events("127.0.0.1", app_port, "/stream", timeout=TIMEOUT))
    assert error is None
    assert events_of(items) == EXPECTED
    assert any(is_ping(item) for item in items)
    assert items[-1] == EndOfStream()


def test_socket_client_receives_exactly_the_events_sent(app_port: int) -> None:
    client = load_example("socket_client")
    items, error = collect(client.events("127.0.0.1", app_port, "/stream", timeout=TIMEOUT))
    assert error is None
    assert events_of(items) == EXPECTED
    assert any(is_ping(item) for item in items)
    assert items[-1] == EndOfStream()


def test_asyncio_client_receives_exactly_the_events_sent(app_port: int) -> None:
    client = load_example("asyncio_client")
    items, error = collect_async(
        client.events("127.0.0.1", app_port, "/stream", idle_timeout=TIMEOUT)
    )
    assert error is None
    assert events_of(items) == EXPECTED
    assert any(is_ping(item) for item in items)
    assert items[-1] == EndOfStream()


def test_h11_client_resumes_with_last_event_id(app_port: int) -> None:
    # Resume after the event just before the multi-line one, which has no id field: it
    # must carry the id the client resumed from (Connection(last_event_id=...)).
    index = next(i for i, sent in enumerate(STREAM) if sent.data == MULTILINE)
    resume_from = STREAM[index - 1].id
    assert resume_from is not None
    client = load_example("h11_client")
    items, error = collect(
        client.events("127.0.0.1", app_port, "/stream", last_event_id=resume_from, timeout=TIMEOUT)
    )
    assert error is None
    events = events_of(items)
    assert events == expected_events(STREAM[index:], resume_from)
    assert events[0] == Event(data=MULTILINE, id=resume_from)


def test_h11_client_runs_as_a_script(app_port: int) -> None:
    command = [sys.executable, str(HERE.parents[1] / "examples" / "h11_client.py")]
    command += ["--port", str(app_port), "--path", "/stream"]
    result = subprocess.run(
        command, capture_output=True, env=subprocess_env(), timeout=TIMEOUT, check=True
    )
    lines = [line for line in result.stdout.decode().splitlines() if "'ping - " not in line]
    assert lines[:3] == [
        "event 'meta' id='1': '开始'",
        "event 'delta' id='2': '服'",
        "event 'delta' id='3': '务'",
    ]
    assert lines[-3].startswith("event 'big' id='big': '块块块")
    assert lines[-3].endswith(f"... ({len(BIG)} chars)")
    assert lines[-2:] == [
        "event 'done' id='end': '{\"done\": true}'",
        "end of stream (truncated=False)",
    ]


# ---- a server that dies mid-event ---------------------------------------------------------

CUT_EXPECTED = expected_events(CUT_EVENTS)


def test_h11_client_reports_a_stream_cut_mid_event(app_port: int) -> None:
    client = load_example("h11_client")
    items, error = collect(client.events("127.0.0.1", app_port, "/cut", timeout=TIMEOUT))
    assert events_of(items) == CUT_EXPECTED
    assert isinstance(error, client.StreamCut)  # no last chunk: the HTTP body was cut
    assert error.end.truncated  # and the parser saw half an event
    assert error.end.partial_event
    assert error.end.partial_line == len("data: 成".encode())


def test_asyncio_client_reports_a_stream_cut_mid_event(app_port: int) -> None:
    client = load_example("asyncio_client")
    items, error = collect_async(client.events("127.0.0.1", app_port, "/cut", idle_timeout=TIMEOUT))
    assert events_of(items) == CUT_EXPECTED
    assert isinstance(error, client.StreamCut)
    assert error.end.partial_event


def test_socket_client_reports_a_stream_cut_mid_event(app_port: int) -> None:
    # HTTP/1.0: the body ends at close, so only the parser can tell it was cut.
    client = load_example("socket_client")
    items, error = collect(client.events("127.0.0.1", app_port, "/cut", timeout=TIMEOUT))
    assert error is None
    assert events_of(items) == CUT_EXPECTED
    end = items[-1]
    assert isinstance(end, EndOfStream)
    assert end.truncated
    assert end == EndOfStream(partial_line=len("data: 成".encode()), partial_event=True)


# ---- responses that are not event streams -------------------------------------------------


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/missing", ["404", "a JSON error: 'no such stream'", '{"error":"no such stream"']),
        ("/html", ["200", "got 'text/html", "an HTML page", "<h1>Please log in</h1>"]),
        ("/empty", ["204 No Content", "do not reconnect"]),
    ],
)
def test_h11_client_reports_a_response_that_is_not_a_stream(
    app_port: int, path: str, expected: list[str]
) -> None:
    client = load_example("h11_client")
    items, error = collect(client.events("127.0.0.1", app_port, path, timeout=TIMEOUT))
    assert items == []
    assert isinstance(error, client.NotAnEventStream)
    for text in expected:
        assert text in str(error)


@pytest.mark.parametrize("name", ["socket_client", "asyncio_client"])
def test_other_clients_report_a_json_error(app_port: int, name: str) -> None:
    client = load_example(name)
    if name == "asyncio_client":
        items, error = collect_async(client.events("127.0.0.1", app_port, "/missing"))
    else:
        items, error = collect(client.events("127.0.0.1", app_port, "/missing"))
    assert items == []
    assert isinstance(error, client.NotAnEventStream)
    assert "404" in str(error)
    assert '{"error":"no such stream","code":404}' in str(error)


def test_h11_client_main_shows_the_error_body(
    app_port: int, capsys: pytest.CaptureFixture[str]
) -> None:
    main = load_example("h11_client").main
    assert main(["--port", str(app_port), "--path", "/missing"]) == 1
    assert '{"error":"no such stream","code":404}' in capsys.readouterr().err


# ---- through the proxy ----------------------------------------------------------------------


class Tap(socketserver.ThreadingTCPServer):
    """A TCP relay that records what the upstream server sent on each connection."""

    daemon_threads = True

    def __init__(self, upstream_port: int) -> None:
        super().__init__(("127.0.0.1", 0), TapHandler)
        self.upstream_port = upstream_port
        self.captures: list[bytes] = []


class TapHandler(socketserver.BaseRequestHandler):
    server: Tap
    request: socket.socket

    def handle(self) -> None:
        received = bytearray()
        with socket.create_connection(("127.0.0.1", self.server.upstream_port), TIMEOUT) as up:
            peers = {self.request: up, up: self.request}
            done = False
            while not done:
                readable, _, _ = select.select(list(peers), [], [], TIMEOUT)
                assert readable, "the tap saw nothing for TIMEOUT seconds"
                for sock in readable:
                    try:
                        data = sock.recv(65536)
                    except ConnectionResetError:
                        data = b""
                    if not data:
                        done = True  # either side closed: so does the tap
                        break
                    peers[sock].sendall(data)
                    if sock is up:
                        received += data
        self.server.captures.append(bytes(received))


def http_body(raw: bytes) -> tuple[int, bytes, bool]:
    """Decode one HTTP/1.1 response to a GET: (status, body, whether the body was complete)."""
    http = h11.Connection(our_role=h11.CLIENT)
    http.send(h11.Request(method="GET", target="/", headers=[("Host", "x")]))
    http.send(h11.EndOfMessage())
    http.receive_data(raw)
    http.receive_data(b"")
    status, body = 0, b""
    while True:
        try:
            event = http.next_event()
        except h11.RemoteProtocolError:
            return status, body, False
        if isinstance(event, h11.Response):
            status = event.status_code
        elif isinstance(event, h11.Data):
            body += event.data
        elif isinstance(event, h11.EndOfMessage):
            return status, body, True


def fetch(port: int, path: str) -> bytes:
    """Everything a plain HTTP/1.1 GET of ``path`` receives until the server closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as sock:
        request = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        sock.sendall(request.encode())
        received = b""
        while data := sock.recv(65536):
            received += data
    return received


@pytest.fixture
def tapped_proxy(app_port: int) -> Iterator[Callable[..., tuple[int, Tap]]]:
    """``start(rules=None) -> (proxy port, tap)``: proxy -> tap -> uvicorn."""
    proxy = load_example("proxy")
    with contextlib.ExitStack() as stack:

        def start(rules: Any = None) -> tuple[int, Tap]:
            tap = Tap(app_port)
            tap_port = stack.enter_context(serving(tap))
            server = proxy.ProxyServer(("127.0.0.1", 0), ("127.0.0.1", tap_port), rules)
            return stack.enter_context(serving(server)), tap

        yield start


def wait_for_captures(tap: Tap, count: int) -> list[bytes]:
    deadline = time.monotonic() + TIMEOUT
    while len(tap.captures) < count and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(tap.captures) == count
    return tap.captures


def test_verbatim_proxy_is_byte_exact(tapped_proxy: Callable[..., tuple[int, Tap]]) -> None:
    port, tap = tapped_proxy()
    status, body, complete = http_body(fetch(port, "/stream"))
    (upstream_raw,) = wait_for_captures(tap, 1)
    upstream_status, upstream_body, upstream_complete = http_body(upstream_raw)
    assert (status, complete) == (200, True)
    assert (upstream_status, upstream_complete) == (200, True)
    assert len(body) > 2 * 1024 * 1024
    assert body == upstream_body
    assert b"\r\n: ping - " in body  # sse-starlette's own bytes: CRLF and its pings


@pytest.mark.parametrize("mode", ["verbatim", "transform"])
def test_clients_through_the_proxy_get_the_same_events(
    tapped_proxy: Callable[..., tuple[int, Tap]], mode: str
) -> None:
    rules = load_example("proxy").Rules(set(), {}, []) if mode == "transform" else None
    port, _ = tapped_proxy(rules)
    h11_client = load_example("h11_client")
    items, error = collect(h11_client.events("127.0.0.1", port, "/stream", timeout=TIMEOUT))
    assert error is None
    assert events_of(items) == EXPECTED
    assert any(is_ping(item) for item in items)  # comments are forwarded
    assert items[-1] == EndOfStream()
    # HTTP/1.0 on the client side: the proxy sends a close-delimited body.
    socket_client = load_example("socket_client")
    items, error = collect(socket_client.events("127.0.0.1", port, "/stream", timeout=TIMEOUT))
    assert error is None
    assert events_of(items) == EXPECTED


def test_transform_proxy_drops_renames_and_rewrites(
    tapped_proxy: Callable[..., tuple[int, Tap]],
) -> None:
    rules = load_example("proxy").Rules(
        drop={"delta"}, rename={"big": "huge"}, replace=[("行", "line")]
    )
    port, _ = tapped_proxy(rules)
    client = load_example("asyncio_client")
    items, error = collect_async(client.events("127.0.0.1", port, "/stream", idle_timeout=TIMEOUT))
    assert error is None
    expected = [
        Event(
            type="huge" if e.type == "big" else e.type,
            data=e.data.replace("行", "line"),
            id=e.id,
            retry=e.retry,
        )
        for e in EXPECTED
        if e.type != "delta"
    ]
    assert events_of(items) == expected
    assert expected[1].data == "第一line\n第二line\n\n第四line（上一line是空的）"


@pytest.mark.parametrize("mode", ["verbatim", "transform"])
def test_a_cut_upstream_is_a_cut_for_the_client(
    tapped_proxy: Callable[..., tuple[int, Tap]], mode: str
) -> None:
    rules = load_example("proxy").Rules(set(), {}, []) if mode == "transform" else None
    port, tap = tapped_proxy(rules)
    # HTTP/1.1: the proxy closes without the last chunk; the whole events still arrive.
    client = load_example("h11_client")
    items, error = collect(client.events("127.0.0.1", port, "/cut", timeout=TIMEOUT))
    assert events_of(items) == CUT_EXPECTED
    assert isinstance(error, client.StreamCut)
    assert not error.end.truncated  # the proxy forwards whole events only
    # HTTP/1.0: the body ends at close, so the proxy resets the connection instead.
    client = load_example("socket_client")
    items, error = collect(client.events("127.0.0.1", port, "/cut", timeout=TIMEOUT))
    assert events_of(items) == CUT_EXPECTED
    assert isinstance(error, client.StreamCut)
    # What the verbatim proxy sent before the cut is uvicorn's bytes up to the last
    # whole event.
    if mode == "verbatim":
        status, body, complete = http_body(fetch(port, "/cut"))
        _, upstream_body, upstream_complete = http_body(wait_for_captures(tap, 3)[2])
        assert (status, complete, upstream_complete) == (200, False, False)
        assert upstream_body.startswith(body)
        assert upstream_body[len(body) :].startswith(b"event: partial\r\n")


def test_proxy_reports_a_non_stream_upstream(tapped_proxy: Callable[..., tuple[int, Tap]]) -> None:
    port, _ = tapped_proxy()
    client = load_example("h11_client")
    items, error = collect(client.events("127.0.0.1", port, "/missing", timeout=TIMEOUT))
    assert items == []
    assert isinstance(error, client.NotAnEventStream)
    assert "502 Bad Gateway" in str(error)
    assert "upstream answered 404 application/json" in str(error)
    assert "no such stream" in str(error)


# ---- the client helpers' examples: httpx, httpx async, aiohttp, anyio on asyncio and trio ----

CLIENTS = [
    "httpx_client",
    "httpx_async_client",
    "aiohttp_client",
    "anyio_client:asyncio",
    "anyio_client:trio",
]


def consume(
    client: str,
    port: int,
    path: str,
    plan: ReconnectPlanner,
    on_item: Callable[[Event | Comment], bool] = lambda item: False,
    reports: list[str] | None = None,
) -> tuple[list[Event | Comment], BaseException | None]:
    """Run one of the examples' ``events()``; stop reading when ``on_item`` says so.

    Returns the items read and the exception that ended the iteration, if any.
    """
    name, _, backend = client.partition(":")
    module = load_example(name)
    url = f"http://127.0.0.1:{port}{path}"
    items: list[Event | Comment] = []
    report = reports.append if reports is not None else (lambda reason: None)
    if name == "httpx_client":
        generator = module.events(url, plan, read_timeout=TIMEOUT, report=report)
        try:
            for item in generator:
                items.append(item)
                if on_item(item):
                    break
        except Exception as exc:
            return items, exc
        finally:
            generator.close()
        return items, None

    async def drain() -> None:
        if name == "anyio_client":
            agen = module.events("127.0.0.1", port, path, plan, read_timeout=TIMEOUT, report=report)
        else:
            agen = module.events(url, plan, read_timeout=TIMEOUT, report=report)
        try:
            with anyio.fail_after(3 * TIMEOUT):
                async for item in agen:
                    items.append(item)
                    if on_item(item):
                        break
        finally:
            await agen.aclose()

    try:
        anyio.run(drain, backend=backend or "asyncio")
    except Exception as exc:
        return items, exc
    return items, None


def only_events(items: list[Event | Comment]) -> list[Event]:
    return [item for item in items if isinstance(item, Event)]


@pytest.mark.parametrize("client", CLIENTS)
def test_client_example_reads_the_whole_stream_once(app_port: int, client: str) -> None:
    plan = ReconnectPlanner(mode="single")
    items, error = consume(client, app_port, "/stream", plan)
    assert error is None
    assert only_events(items) == EXPECTED
    assert any(is_ping(item) for item in items)
    assert plan.stopped is not None
    assert plan.stopped.cause is StopCause.COMPLETED


@pytest.mark.parametrize("client", CLIENTS)
def test_client_example_reports_a_cut_and_does_not_replay_it(app_port: int, client: str) -> None:
    plan = ReconnectPlanner(mode="single")
    items, error = consume(client, app_port, "/cut", plan)
    assert only_events(items) == CUT_EXPECTED
    assert plan.stopped is not None
    assert plan.stopped.cause is StopCause.FAILED  # one request, never repeated
    assert error is plan.stopped.error
    # httpx and aiohttp see the HTTP body cut first; over HTTP/1.0 only the parser can.
    if client.startswith("anyio"):
        assert isinstance(error, TruncatedStreamError)
        assert error.end_of_stream.partial_event


@pytest.mark.parametrize("client", CLIENTS)
@pytest.mark.parametrize(
    ("path", "shown"),
    [
        ("/missing", "got 404 not found: check the URL; a JSON error: 'no such stream'"),
        ("/html", "got 'text/html; charset=utf-8'"),
    ],
)
def test_client_example_refuses_what_is_not_a_stream(
    app_port: int, client: str, path: str, shown: str
) -> None:
    plan = ReconnectPlanner()  # EventSource rules: a refused response is never retried
    items, error = consume(client, app_port, path, plan)
    assert items == []
    assert isinstance(error, ResponseError)
    assert shown in str(error)
    assert "the body starts: " in str(error)
    assert plan.stopped is not None
    assert plan.stopped.cause is StopCause.REFUSED


@pytest.mark.parametrize("client", CLIENTS)
def test_client_example_stops_quietly_on_204(app_port: int, client: str) -> None:
    plan = ReconnectPlanner()
    items, error = consume(client, app_port, "/empty", plan)
    assert (items, error) == ([], None)
    assert plan.stopped is not None
    assert plan.stopped.cause is StopCause.NO_CONTENT


@pytest.mark.parametrize("client", CLIENTS)
def test_client_example_retries_a_protocol_error_only_while_the_id_moves(
    app_port: int, client: str
) -> None:
    # /bad sends event b1, then invalid UTF-8.  The id moved from "" to "b1": worth one
    # more try, resuming after b1; that try gets the same bytes and the id stays put.
    plan = ReconnectPlanner(initial_delay=0.01)
    reports: list[str] = []
    items, error = consume(client, app_port, "/bad", plan, reports=reports)
    assert only_events(items) == [Event(data="好", id="b1")] * 2  # /bad ignores the id
    assert type(error) is RemoteProtocolError
    assert "invalid UTF-8" in str(error)
    assert plan.stopped is not None
    assert plan.stopped.cause is StopCause.PROTOCOL_ERROR
    assert len(reports) == 1
    assert reports[0].startswith("protocol error (RemoteProtocolError: invalid UTF-8")


class RestartableApp:
    """tests/helpers/sse_app.py in a subprocess that a test can kill and start again on its port."""

    def __init__(self) -> None:
        self.port = 0
        self.process: subprocess.Popen[str] | None = None

    def start(self) -> None:
        command = [sys.executable, str(HERE / "sse_app.py"), "--port", str(self.port)]
        self.process = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=subprocess_env(),
            text=True,
        )
        assert self.process.stdout is not None
        ready, _, _ = select.select([self.process.stdout], [], [], 30)
        assert ready, "the app did not start within 30 s"
        line = self.process.stdout.readline()
        assert line.startswith("port "), line
        self.port = int(line.split()[1])

    def kill(self) -> None:
        """SIGKILL: the server dies mid-stream, with no chance to end anything cleanly."""
        assert self.process is not None
        self.process.kill()
        self.process.wait(TIMEOUT)
        assert self.process.stdout is not None
        self.process.stdout.close()


@pytest.fixture
def restartable_app() -> Iterator[RestartableApp]:
    app = RestartableApp()
    app.start()
    try:
        yield app
    finally:
        app.kill()


@pytest.mark.parametrize("client", CLIENTS)
def test_client_example_resumes_after_the_server_was_killed_mid_stream(
    restartable_app: RestartableApp, client: str
) -> None:
    # A slow stream (50 ms between events); once event 4 arrives, the server is killed
    # and started again on the same port.  The client reconnects with Last-Event-ID,
    # the new server resumes after it, and the client sees every event exactly once:
    # a reconnect without the header would repeat events 1 to 4.
    killed = False

    def on_item(item: Event | Comment) -> bool:
        nonlocal killed
        if isinstance(item, Event) and item.id == "4" and not killed:
            restartable_app.kill()
            restartable_app.start()
            killed = True
        return isinstance(item, Event) and item.type == "done"

    plan = ReconnectPlanner(initial_delay=0.05, max_delay=0.5, max_attempts=20)
    resumed_from: list[str] = []

    class Reports(list[str]):
        # The example reports a reconnect before it makes it: what the planner will
        # send as Last-Event-ID then (plan.last_event_id is live: issue 36, item 2).
        def append(self, reason: str) -> None:
            resumed_from.append(plan.last_event_id)
            super().append(reason)

    reports = Reports()
    port = restartable_app.port
    items, error = consume(client, port, "/stream?pause=0.05", plan, on_item, reports)
    assert error is None
    assert killed
    assert only_events(items) == EXPECTED
    assert reports, "the client never reconnected"
    # What it resumed from: event 4, or one the old server sent just before it died;
    # and, read after the last event, the live ID is that event's.
    assert int(resumed_from[0]) >= 4
    assert plan.last_event_id == "end"


# ---- every example's main() reports the library's errors without a traceback ------------

MAINS: dict[str, Callable[[int, str], list[str]]] = {
    "socket_client": lambda port, path: ["--port", str(port), "--path", path],
    "h11_client": lambda port, path: ["--port", str(port), "--path", path],
    "asyncio_client": lambda port, path: ["--port", str(port), "--path", path],
    "anyio_client": lambda port, path: ["--port", str(port), "--path", path, "--mode", "single"],
    "httpx_client": lambda port, path: [f"http://127.0.0.1:{port}{path}", "--mode", "single"],
    "httpx_async_client": lambda port, path: [
        f"http://127.0.0.1:{port}{path}",
        "--mode",
        "single",
    ],
    "aiohttp_client": lambda port, path: [f"http://127.0.0.1:{port}{path}", "--mode", "single"],
}


@pytest.mark.parametrize("name", sorted(MAINS))
def test_example_main_reports_invalid_utf8_without_a_traceback(
    app_port: int, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # An invalid UTF-8 byte used to end the first three in a traceback.
    assert load_example(name).main(MAINS[name](app_port, "/bad")) == 1
    captured = capsys.readouterr()
    assert "event 'message' id='b1': '好'" in captured.out
    assert "Traceback" not in captured.err
    (error,) = [line for line in captured.err.splitlines() if line.startswith("error: ")]
    assert "invalid UTF-8" in error
    assert "at byte offset" in error


@pytest.mark.parametrize("name", sorted(MAINS))
def test_example_main_shows_a_json_error(
    app_port: int, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert load_example(name).main(MAINS[name](app_port, "/missing")) == 1
    err = capsys.readouterr().err
    assert "error: " in err
    assert "a JSON error: 'no such stream'" in err
