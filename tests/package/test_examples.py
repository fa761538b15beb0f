"""Run every example so that none of them can rot.

The examples are scripts, not a package: ``load_example()`` imports one from its file
so that tests can call its functions; a few tests also run them as ``python
examples/X.py`` in a subprocess, the way their docstrings say to.  Everything here
talks to the example server (stdlib + h11) on 127.0.0.1; the integration tests against
uvicorn and sse-starlette are in test_integration.py.
"""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from sse_sansio import Comment, EndOfStream, Event
from tests.helpers.examples import (
    EXAMPLES,
    TICKS,
    TIMEOUT,
    ServerFactory,
    collect,
    collect_async,
    events_of,
    example_server,
    load_example,
    serving,
    subprocess_env,
)

pytestmark = pytest.mark.slow  # the examples on live sockets and in subprocesses

__all__ = ["example_server"]  # a fixture, used by name

# ---- the example server -----------------------------------------------------------------


def test_server_to_h11_client_round_trips(example_server: ServerFactory) -> None:
    port = example_server()
    items, error = collect(
        load_example("h11_client").events("127.0.0.1", port, "/", timeout=TIMEOUT)
    )
    assert error is None
    assert events_of(items) == TICKS
    assert items[-1] == EndOfStream()
    assert Comment(text="keepalive") in items


def test_server_to_socket_client_round_trips(example_server: ServerFactory) -> None:
    port = example_server()
    items, error = collect(
        load_example("socket_client").events("127.0.0.1", port, "/", timeout=TIMEOUT)
    )
    assert error is None
    assert events_of(items) == TICKS
    assert items[-1] == EndOfStream()
    assert Comment(text="keepalive") in items


def test_server_to_asyncio_client_round_trips(example_server: ServerFactory) -> None:
    port = example_server()
    items, error = collect_async(
        load_example("asyncio_client").events("127.0.0.1", port, "/", idle_timeout=TIMEOUT)
    )
    assert error is None
    assert events_of(items) == TICKS
    assert items[-1] == EndOfStream()


def test_h11_client_resumes_after_last_event_id(example_server: ServerFactory) -> None:
    port = example_server()
    items, error = collect(
        load_example("h11_client").events(
            "127.0.0.1", port, "/", last_event_id="1", timeout=TIMEOUT
        )
    )
    assert error is None
    assert events_of(items) == TICKS[1:]


def test_asyncio_client_keepalive_comments_reset_the_idle_timeout(
    example_server: ServerFactory,
) -> None:
    # The event comes after 3 s, keepalives every 0.05 s, the idle timeout is 1.5 s: the
    # stream stays open only because the comments restart the timer.  The margins are
    # wide on purpose (a loaded machine may stall either side for over a second; it
    # failed under load at 0.8 s / 0.5 s): a stall only breaks the test if it outlasts
    # 30 keepalive intervals.
    port = example_server(count=1, interval=3.0, keepalive=0.05)
    client = load_example("asyncio_client")
    items, error = collect_async(client.events("127.0.0.1", port, "/", idle_timeout=1.5))
    assert error is None
    assert events_of(items) == TICKS[:1]
    assert Comment(text="keepalive") in items


def test_asyncio_client_gives_up_on_a_silent_stream(example_server: ServerFactory) -> None:
    port = example_server(count=1, interval=2.0, keepalive=2.0)  # nothing for 2 s
    client = load_example("asyncio_client")
    items, error = collect_async(client.events("127.0.0.1", port, "/", idle_timeout=0.2))
    assert isinstance(error, client.IdleTimeout)
    assert items == []


def test_client_mains_print_the_stream(
    example_server: ServerFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    port = example_server(count=1)
    for name in ("socket_client", "h11_client", "asyncio_client"):
        assert load_example(name).main(["--port", str(port)]) == 0, name
        lines = [
            line for line in capsys.readouterr().out.splitlines() if not line.startswith("comment")
        ]
        assert lines == [
            "event 'tick' id='1': '第 1 条消息\\n{\"n\": 1}'",
            "end of stream (truncated=False)",
        ], name


def test_client_mains_report_a_refused_connection(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as sock:  # a port that nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    for name in ("socket_client", "h11_client", "asyncio_client"):
        assert load_example(name).main(["--port", str(port)]) == 1, name
        assert capsys.readouterr().err.startswith("error: "), name


def http10_body(port: int, path: str = "/") -> bytes:
    """The body of a response to an HTTP/1.0 GET (close-delimited: everything after the head)."""
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as sock:
        sock.sendall(f"GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".encode())
        received = b""
        while data := sock.recv(65536):
            received += data
    head, _, body = received.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 "), head
    return body


def test_server_script_read_by_the_command_line() -> None:
    # Both ends as the user would run them: the server as a script, the body piped into
    # python -m sse_sansio.
    command = [sys.executable, str(EXAMPLES / "server.py"), "--port", "0", "--count", "3"]
    command += ["--interval", "0.02", "--keepalive", "0.01"]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, env=subprocess_env(), text=True
    ) as server:
        try:
            assert server.stdout is not None
            line = server.stdout.readline()  # "serving on http://127.0.0.1:PORT/"
            assert line.startswith("serving on http://127.0.0.1:"), line
            body = http10_body(int(line.rsplit(":", 1)[1].strip(" /\n")))
        finally:
            server.terminate()
            server.wait(TIMEOUT)
    cli = subprocess.run(
        [sys.executable, "-m", "sse_sansio", "-", "--chunk-size", "5"],
        input=body,
        capture_output=True,
        env=subprocess_env(),
        timeout=TIMEOUT,
        check=True,
    )
    records = [json.loads(line) for line in cli.stdout.decode().splitlines()]
    events = [r for r in records if r["kind"] == "event"]
    assert [(r["type"], r["data"], r["id"], r["retry"]) for r in events] == [
        (e.type, e.data, e.id, e.retry) for e in TICKS
    ]
    assert {r["text"] for r in records if r["kind"] == "comment"} == {"keepalive"}
    assert records[-1] == {
        "kind": "end",
        "truncated": False,
        "partial_line": 0,
        "partial_event": False,
    }
    # The spans the command line reports cut the events out of the body exactly.
    first = events[0]
    assert body[first["start"] : first["end"]] == (
        'event: tick\ndata: 第 1 条消息\ndata: {"n": 1}\nid: 1\nretry: 2000\n\n'.encode()
    )


# ---- the proxy, against the example server ------------------------------------------------


@pytest.fixture
def proxy_for() -> Iterator[Callable[..., int]]:
    """``start(upstream_port, rules=None) -> port``: examples/proxy.py's server in a thread."""
    proxy = load_example("proxy")
    with contextlib.ExitStack() as stack:

        def start(upstream_port: int, rules: Any = None) -> int:
            upstream = ("127.0.0.1", upstream_port)
            return stack.enter_context(
                serving(proxy.ProxyServer(("127.0.0.1", 0), upstream, rules))
            )

        yield start


@pytest.mark.parametrize("mode", ["verbatim", "transform"])
def test_proxy_passes_the_example_stream_through(
    example_server: ServerFactory, proxy_for: Callable[..., int], mode: str
) -> None:
    rules = load_example("proxy").Rules(set(), {}, []) if mode == "transform" else None
    port = proxy_for(example_server(), rules)
    items, error = collect(
        load_example("h11_client").events("127.0.0.1", port, "/", timeout=TIMEOUT)
    )
    assert error is None
    assert events_of(items) == TICKS
    assert Comment(text="keepalive") in items
    assert items[-1] == EndOfStream()


def test_proxy_transform_drops_renames_and_rewrites(
    example_server: ServerFactory, proxy_for: Callable[..., int]
) -> None:
    proxy = load_example("proxy")
    # The example server sends only "tick" events: rename and rewrite them first...
    rules = proxy.Rules(drop=set(), rename={"tick": "tock"}, replace=[("消息", "message")])
    port = proxy_for(example_server(count=2), rules)
    items, error = collect(
        load_example("h11_client").events("127.0.0.1", port, "/", timeout=TIMEOUT)
    )
    assert error is None
    assert events_of(items) == [
        Event(type="tock", data='第 1 条message\n{"n": 1}', id="1", retry=2000),
        Event(type="tock", data='第 2 条message\n{"n": 2}', id="2"),
    ]
    # ... then drop them all.
    rules = proxy.Rules(drop={"tick"}, rename={}, replace=[])
    port = proxy_for(example_server(count=2), rules)
    items, error = collect(
        load_example("h11_client").events("127.0.0.1", port, "/", timeout=TIMEOUT)
    )
    assert error is None
    assert events_of(items) == []
    assert Comment(text="keepalive") in items  # comments still go through


def test_proxy_command_line_checks_its_options() -> None:
    proxy = load_example("proxy")
    for argv in (["--drop", "x"], ["--mode", "transform", "--rename", "no-equals-sign"]):
        with pytest.raises(SystemExit) as exc_info:
            proxy.main(argv)
        assert exc_info.value.code == 2


# ---- the file replay ----------------------------------------------------------------------

DEMO_ITEMS = [
    Event(
        type="response.output_text.delta",
        data='{"type":"response.output_text.delta","delta":"你好"}',
    ),
    Event(data="第一行\n第二行"),
    EndOfStream(),
]


@pytest.mark.parametrize("chunk_size", [1, 2, 7, 64, 4096])
def test_file_replay_gives_the_same_items_whatever_the_chunk_size(chunk_size: int) -> None:
    items = list(load_example("file_replay").replay(str(EXAMPLES / "demo.sse"), chunk_size))
    assert items == DEMO_ITEMS


def test_file_replay_reports_a_capture_cut_mid_event(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "cut.sse"
    path.write_bytes((EXAMPLES / "demo.sse").read_bytes()[:-5])  # ends with "data: 第二"
    replay = load_example("file_replay")
    assert replay.main([str(path), "--chunk-size", "3"]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == "end of stream (truncated=True)"
    assert list(replay.replay(str(path), 3))[-1] == EndOfStream(partial_line=12, partial_event=True)


def test_file_replay_reports_invalid_utf8_and_missing_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    replay = load_example("file_replay")
    bad = tmp_path / "bad.sse"
    bad.write_bytes(b"data: ok\n\ndata: \xc3\x28\n\n")
    assert replay.main([str(bad)]) == 1
    captured = capsys.readouterr()
    assert captured.out == "event 'message' id='': 'ok'\n"
    assert "at byte offset 16" in captured.err
    assert replay.main([str(tmp_path / "missing.sse")]) == 1
    assert capsys.readouterr().err.startswith("error: ")


def test_file_replay_runs_as_a_script() -> None:
    result = subprocess.run(
        [
            sys.executable,
            str(EXAMPLES / "file_replay.py"),
            str(EXAMPLES / "demo.sse"),
            "--chunk-size",
            "1",
        ],
        capture_output=True,
        env=subprocess_env(),
        timeout=TIMEOUT,
        check=True,
    )
    assert result.stdout.decode().splitlines() == [
        "event 'response.output_text.delta' id='': "
        '\'{"type":"response.output_text.delta","delta":"你好"}\'',
        "event 'message' id='': '第一行\\n第二行'",
        "end of stream (truncated=False)",
    ]
