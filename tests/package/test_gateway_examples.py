"""examples/fastapi_gateway.py and examples/aiohttp_gateway.py live on loopback (issue 33,
item 5), against a fake OpenAI-compatible upstream written here byte by byte.

The upstream streams normally, waits before its head, waits before its first body byte,
stalls mid-answer while sending ``: ping``, ends its chunked body cleanly in the middle
of an event, resets the connection in the middle of an event, or answers a JSON 429.
The gateways run in this process (uvicorn as an asyncio task, aiohttp's runner), so
coverage sees them; the downstream clients are httpx with ``sse_sansio.aiter_events``
and the official ``openai`` SDK.  Short clocks (``WATCHDOG_S`` 0.5 s, ``KEEPALIVE_S``
0.1 s) against upstream waits of 3 s; nothing asserts how long anything took.
"""

from __future__ import annotations

import ast
import asyncio
import importlib.util
import io
import json
import socket
import struct
import sys
import tokenize
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from types import ModuleType
from typing import Any

import httpx
import openai
import pytest
import uvicorn
from aiohttp import web

from sse_sansio import Comment, Event, aiter_events
from tests.helpers.examples import EXAMPLES, load_example

GUARD = 30.0  # seconds: a failure guard only
PAUSE = 3.0  # the upstream's waits: six times the watchdog's clocks
GATEWAYS = ["fastapi", "aiohttp"]

# ---- the fake upstream -------------------------------------------------------------------


def sse(payload: Any) -> bytes:
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


def delta(text: str | None, finish: str | None = None) -> bytes:
    change = {} if text is None else {"content": text}
    choice = {"index": 0, "delta": change, "finish_reason": finish}
    return sse({"id": "c1", "object": "chat.completion.chunk", "model": "m", "choices": [choice]})


USAGE = sse(
    {
        "id": "c1",
        "object": "chat.completion.chunk",
        "model": "m",
        "choices": [],
        "usage": {"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9},
    }
)
WHOLE = [delta("Hel"), delta("lo"), delta(None, "stop"), USAGE, b"data: [DONE]\n\n"]
HALF_EVENT = b'data: {"id": "c1", "choi'
RATE_LIMITED = json.dumps({"error": {"message": "slow down", "type": "rate_limit_error"}})
# The answers that are no event stream: status line, content type, body.
NOT_STREAMS = {
    "rate-limited": ("429 Too Many Requests", "application/json", RATE_LIMITED),
    "html-502": ("502 Bad Gateway", "text/html; charset=utf-8", "<html><h1>502</h1></html>"),
}
SSE_HEAD = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
)


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


async def answer(scenario: str, writer: asyncio.StreamWriter, seen: asyncio.Event) -> None:
    """Write the upstream's answer for ``scenario`` (``seen``: the client has the first
    event, so a reset cannot destroy it on its way; a reset may drop unread bytes)."""
    if scenario in NOT_STREAMS:
        status, kind, text = NOT_STREAMS[scenario]
        body = text.encode()
        writer.write(
            b"HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s"
            % (status.encode(), kind.encode(), len(body), body)
        )
        return
    if scenario == "slow-head":
        await asyncio.sleep(PAUSE)
    writer.write(SSE_HEAD)
    if scenario == "slow-start":
        await writer.drain()
        await asyncio.sleep(PAUSE)
    if scenario in ("whole", "slow-head", "slow-start"):
        writer.write(b"".join(map(chunk, WHOLE)) + b"0\r\n\r\n")
        return
    writer.write(chunk(delta("Hel")))
    if scenario == "stall":
        for _ in range(int(PAUSE / 0.05)):
            writer.write(chunk(b": ping\n\n"))
            await writer.drain()
            await asyncio.sleep(0.05)
    elif scenario == "clean-cut":
        writer.write(chunk(HALF_EVENT) + b"0\r\n\r\n")
    else:  # "reset": the connection is reset in the middle of an event
        writer.write(chunk(HALF_EVENT[:10]))
        await writer.drain()
        await seen.wait()
        writer.write(chunk(HALF_EVENT[10:]))
        await writer.drain()
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.transport.abort()


@asynccontextmanager
async def fake_upstream(seen: asyncio.Event) -> AsyncIterator[int]:
    """A fake OpenAI-compatible upstream; the request's path names the scenario."""
    handlers: set[asyncio.Task[None]] = set()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        handlers.add(asyncio.current_task())  # type: ignore[arg-type]
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(
                int(line.split(b":")[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            )
            request = json.loads(await reader.readexactly(length))
            assert request["stream"] is True
            await answer(head.split(b" ")[1].decode().strip("/"), writer, seen)
            await writer.drain()
        except OSError:
            pass  # the gateway gave up on us
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        for task in handlers:
            task.cancel()
        server.close()


# ---- the gateways, served in process ------------------------------------------------------


def configure(module: ModuleType, monkeypatch: pytest.MonkeyPatch, upstream: str) -> None:
    monkeypatch.setattr(module, "UPSTREAM_URL", upstream)
    monkeypatch.setattr(module, "WATCHDOG_S", 0.5)
    monkeypatch.setattr(module, "KEEPALIVE_S", 0.1)


@asynccontextmanager
async def gateway(
    name: str, scenario: str, monkeypatch: pytest.MonkeyPatch, seen: asyncio.Event
) -> AsyncIterator[str]:
    """The gateway ``name`` on a free port, relaying to the upstream's ``scenario``;
    its base URL."""
    async with fake_upstream(seen) as port:
        upstream = f"http://127.0.0.1:{port}/{scenario}"
        if name == "fastapi":
            module = load_example("fastapi_gateway")
            configure(module, monkeypatch, upstream)
            config = uvicorn.Config(
                module.app, host="127.0.0.1", port=0, log_level="critical", lifespan="off"
            )
            server = uvicorn.Server(config)
            task = asyncio.ensure_future(server.serve())
            while not server.started:
                await asyncio.sleep(0.01)
            try:
                yield f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
            finally:
                server.should_exit = True
                await asyncio.wait_for(task, GUARD)
        else:
            module = load_example("aiohttp_gateway")
            configure(module, monkeypatch, upstream)
            runner = web.AppRunner(module.make_app())
            await runner.setup()
            await web.TCPSite(runner, "127.0.0.1", 0).start()
            try:
                yield f"http://127.0.0.1:{runner.addresses[0][1]}"
            finally:
                await runner.cleanup()


REQUEST = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}


async def with_httpx(
    base: str, seen: asyncio.Event
) -> tuple[httpx.Response, list[Event | Comment], Exception | None]:
    """POST the request; the response, the items it streamed, and what ended it (the
    first event sets ``seen``)."""
    items: list[Event | Comment] = []
    url = f"{base}/v1/chat/completions"
    async with (
        httpx.AsyncClient(timeout=GUARD) as http,
        http.stream("POST", url, json=REQUEST) as response,
    ):
        if not response.headers["content-type"].startswith("text/event-stream"):
            await response.aread()
            return response, items, None
        try:
            async for item in aiter_events(response.aiter_bytes()):
                items.append(item)
                if isinstance(item, Event):
                    seen.set()
        except Exception as exc:
            return response, items, exc
    return response, items, None


def text_of(items: list[Event | Comment]) -> str:
    out = ""
    for item in items:
        if isinstance(item, Event) and item.data != "[DONE]":
            for choice in json.loads(item.data).get("choices", []):
                out += choice["delta"].get("content", "")
    return out


def logged(capsys: pytest.CaptureFixture[str]) -> str:
    lines = [line for line in capsys.readouterr().err.splitlines() if "outcome=" in line]
    assert len(lines) == 1, lines  # one line per request
    return lines[0]


def run(main: Any) -> Any:
    return asyncio.run(asyncio.wait_for(main, GUARD))


# ---- httpx plus a parser ---------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("name", GATEWAYS)
def test_a_whole_answer_is_relayed_and_its_usage_logged(
    name: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    async def main() -> Any:
        seen = asyncio.Event()
        async with gateway(name, "whole", monkeypatch, seen) as base:
            return await with_httpx(base, seen)

    response, items, error = run(main())
    assert error is None
    assert response.status_code == 200
    assert text_of(items) == "Hello"
    assert items[-1] == Event(data="[DONE]")
    line = logged(capsys)
    assert "outcome=completed" in line
    assert "input_tokens=7" in line
    assert "output_tokens=2" in line


@pytest.mark.slow
@pytest.mark.parametrize("name", GATEWAYS)
@pytest.mark.parametrize(
    ("scenario", "state"), [("slow-start", "sent no first byte"), ("stall", "made no progress")]
)
def test_a_dead_or_stalled_upstream_ends_with_an_error_event(
    name: str,
    scenario: str,
    state: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    async def main() -> Any:
        seen = asyncio.Event()
        async with gateway(name, scenario, monkeypatch, seen) as base:
            return await with_httpx(base, seen)

    _, items, error = run(main())
    assert error is None  # our error event, then a clean end
    assert any(isinstance(item, Comment) for item in items)  # keepalives, or the pings
    last = items[-1]
    assert isinstance(last, Event)
    assert state in json.loads(last.data)["error"]["message"]
    if scenario == "stall":
        assert text_of(items[:-1]) == "Hel"
        assert Comment(text="ping") in items
    # The client got our error event; the gateway's own outcome is the truth: it gave up.
    assert "outcome=cut" in logged(capsys)


@pytest.mark.slow
@pytest.mark.parametrize("name", GATEWAYS)
def test_an_upstream_head_that_never_comes_is_a_bad_gateway(
    name: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    async def main() -> Any:
        seen = asyncio.Event()
        async with gateway(name, "slow-head", monkeypatch, seen) as base:
            return await with_httpx(base, seen)

    response, _, _ = run(main())
    assert response.status_code == 502
    assert response.json()["error"]["type"] == "upstream_error"
    assert "outcome=failed" in logged(capsys)


@pytest.mark.slow
@pytest.mark.parametrize("name", GATEWAYS)
@pytest.mark.parametrize("scenario", ["clean-cut", "reset"])
def test_an_upstream_cut_reaches_the_client_as_a_cut(
    name: str, scenario: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    async def main() -> Any:
        seen = asyncio.Event()
        async with gateway(name, scenario, monkeypatch, seen) as base:
            return await with_httpx(base, seen)

    _, items, error = run(main())
    assert isinstance(error, httpx.RemoteProtocolError)  # the body ended without its end
    assert text_of(items) == "Hel"  # every complete event came first
    assert "outcome=cut" in logged(capsys)


@pytest.mark.slow
@pytest.mark.parametrize("name", GATEWAYS)
@pytest.mark.parametrize("scenario", list(NOT_STREAMS))
def test_an_answer_that_is_no_stream_passes_through(
    name: str, scenario: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    async def main() -> Any:
        seen = asyncio.Event()
        async with gateway(name, scenario, monkeypatch, seen) as base:
            return await with_httpx(base, seen)

    response, _, _ = run(main())
    status, kind, text = NOT_STREAMS[scenario]
    assert response.status_code == int(status.split()[0])
    assert response.headers["content-type"] == kind
    assert response.text == text
    assert "outcome=failed" in logged(capsys)


# ---- the official openai SDK -----------------------------------------------------------------


async def with_openai(base: str, seen: asyncio.Event) -> tuple[str, str | None]:
    """The text and finish reason the SDK assembles from the stream (the first part
    sets ``seen``)."""
    client = openai.AsyncOpenAI(base_url=f"{base}/v1", api_key="sk-test", max_retries=0)
    text, finish = "", None
    async with client:
        stream = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}], stream=True
        )
        async for part in stream:
            seen.set()
            for choice in part.choices:
                text += choice.delta.content or ""
                finish = choice.finish_reason or finish
    return text, finish


@pytest.mark.slow
@pytest.mark.parametrize("name", GATEWAYS)
@pytest.mark.parametrize(
    ("scenario", "expected"),
    [
        ("whole", None),
        ("slow-start", openai.APIError),
        ("stall", openai.APIError),
        ("clean-cut", Exception),
        ("reset", Exception),
        ("rate-limited", openai.RateLimitError),
    ],
)
def test_the_openai_sdk_gets_an_answer_or_an_error_never_half_an_answer(
    name: str, scenario: str, expected: type[Exception] | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def main() -> Any:
        seen = asyncio.Event()
        async with gateway(name, scenario, monkeypatch, seen) as base:
            return await with_openai(base, seen)

    if expected is None:
        assert run(main()) == ("Hello", "stop")
    else:
        with pytest.raises(expected):
            run(main())


# ---- the size of the FastAPI gateway ---------------------------------------------------------


def code_lines(source: str) -> int:
    """Lines that hold code: not blank, not only a comment, not in a docstring."""
    layout = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT}
    layout |= {tokenize.DEDENT, tokenize.ENCODING, tokenize.ENDMARKER}
    lines: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in layout:
            lines.update(range(token.start[0], token.end[0] + 1))
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                assert first.end_lineno is not None
                lines -= set(range(first.lineno, first.end_lineno + 1))
    return len(lines)


def test_the_line_counter_leaves_out_blanks_comments_and_docstrings() -> None:
    source = (
        '"""Doc\nstring."""\n\nimport os  # why\n# note\n\n\n'
        'def f(\n    x: int,\n) -> int:\n    """Doc."""\n    return x\n'
    )
    assert code_lines(source) == 5  # import, the three lines of def, return


def test_the_fastapi_gateway_holds_in_45_lines() -> None:
    assert code_lines((EXAMPLES / "fastapi_gateway.py").read_text()) <= 45


def test_the_gateways_read_their_settings_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("fastapi_gateway", "aiohttp_gateway"):
        monkeypatch.delenv("KEEPALIVE_S", raising=False)
        monkeypatch.delenv("WATCHDOG_S", raising=False)
        monkeypatch.setenv("UPSTREAM_URL", "http://upstream.test/v1/chat/completions")
        fresh = fresh_import(name)
        assert (fresh.KEEPALIVE_S, fresh.WATCHDOG_S) == (15.0, 30.0)
        assert fresh.UPSTREAM_URL == "http://upstream.test/v1/chat/completions"
        monkeypatch.setenv("KEEPALIVE_S", "2.5")
        monkeypatch.setenv("WATCHDOG_S", "7")
        fresh = fresh_import(name)
        assert (fresh.KEEPALIVE_S, fresh.WATCHDOG_S) == (2.5, 7.0)


def fresh_import(name: str) -> ModuleType:
    """``examples/<name>.py`` imported anew (its settings read now)."""
    spec = importlib.util.spec_from_file_location(f"fresh_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules.pop(spec.name, None)
    return module
