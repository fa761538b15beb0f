"""The README's httpx section runs: against a local server that cuts, resumes and refuses.

The snippet is taken from the README as it is and run unchanged; the server in a thread
plays each request from a script, and records the Last-Event-ID header each one sent.
"""

from __future__ import annotations

import http.server
import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from sse_sansio import Event, RemoteProtocolError, ResponseError

README = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
SECTION = README.split("## Reading a stream over HTTP (httpx)\n", 1)[1].split("\n## ", 1)[0]

# One response per request, in order: (status, content type, body).
Script = list[tuple[int, str, bytes]]


def _snippet() -> str:
    (block,) = re.findall(r"```python\n(.*?)```", SECTION, flags=re.DOTALL)
    return str(block)


def test_the_section_comes_right_after_the_quick_start() -> None:
    # Between them only the map of jobs (issue 36, item 5): a table, no code.
    headings = re.findall(r"^## (.+)$", README, flags=re.M)
    assert headings[:3] == [
        "Quick start",
        "Jobs, and the names that do them",
        "Reading a stream over HTTP (httpx)",
    ]


def test_the_snippet_is_no_longer_than_httpx_sse_reconnection_recipe() -> None:
    # httpx-sse's README recipe ("Handling reconnections", with stamina) is 34 lines,
    # and checks neither the status nor a cut stream.
    assert len(_snippet().splitlines()) <= 25


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # the body ends when the connection closes
    script: ClassVar[Script] = []
    seen: ClassVar[list[str | None]] = []

    def do_GET(self) -> None:
        type(self).seen.append(self.headers.get("Last-Event-ID"))
        status, content_type, body = type(self).script.pop(0)
        self.send_response(status)
        if content_type:
            self.send_header("Content-Type", content_type)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def serve() -> Iterator[Callable[[Script], tuple[str, list[str | None]]]]:
    servers: list[http.server.ThreadingHTTPServer] = []

    def start(script: Script) -> tuple[str, list[str | None]]:
        seen: list[str | None] = []
        handler = type("Handler", (_Handler,), {"script": list(script), "seen": seen})
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/", seen

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def _events() -> Callable[[str], Iterator[Event]]:
    namespace: dict[str, Any] = {}
    exec(compile(_snippet(), "README.md", "exec"), namespace)
    return namespace["events"]  # type: ignore[no-any-return]


SSE = "text/event-stream"


def test_it_reconnects_with_last_event_id_after_a_cut_and_stops_on_204(
    serve: Callable[[Script], tuple[str, list[str | None]]], capsys: pytest.CaptureFixture[str]
) -> None:
    url, seen = serve(
        [
            # retry: 10 ms, so the reconnections are quick; cut in the middle of event 2.
            # Keepalive comments, as sse-starlette sends them: events() yields no Comment.
            (200, SSE, b": ping\n\nretry: 10\nid: 1\ndata: one\n\n: ping\nid: 2\ndata: tw"),
            (200, SSE, b"id: 2\ndata: two\n\n: ping\n\n"),  # a clean end: it reconnects
            (204, "", b""),  # the server says: stop
        ]
    )
    events = list(_events()(url))
    assert events == [Event(data="one", id="1", retry=10), Event(data="two", id="2")]
    assert seen == [None, "1", "2"]
    report = capsys.readouterr().err.splitlines()
    assert report[0].startswith("cut (TruncatedStreamError: the stream was cut in the middle")
    assert report[0].endswith("connecting in 0.01 s (attempt 2)")
    assert report[1].startswith("clean end; connecting in 0.01 s")
    assert report[2].startswith("204 No Content")


def test_it_raises_a_json_error_with_its_message(
    serve: Callable[[Script], tuple[str, list[str | None]]],
) -> None:
    url, _ = serve([(401, "application/json", b'{"error": {"message": "Invalid API key"}}')])
    with pytest.raises(ResponseError, match=r"401 unauthorized.*a JSON error: 'Invalid API key'"):
        list(_events()(url))


def test_it_raises_on_invalid_utf8_after_the_good_events(
    serve: Callable[[Script], tuple[str, list[str | None]]],
) -> None:
    url, seen = serve([(200, SSE, b"data: ok\n\ndata: caf\xe9\n\n")])
    received: list[Event] = []
    with pytest.raises(RemoteProtocolError, match="invalid UTF-8"):
        received.extend(_events()(url))
    assert received == [Event(data="ok")]
    assert seen == [None]  # no id moved: reconnecting would only repeat the bad bytes
