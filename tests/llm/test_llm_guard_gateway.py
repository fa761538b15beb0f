"""examples/llm_guard_gateway.py live on loopback (issue 35, item 6): an Anthropic
upstream written here byte by byte, the gateway under uvicorn in this process, httpx
with ``aiter_events`` as the client, and the client's own ``openai-chat`` Tracker
judging what it got.

A whole answer arrives translated, with its ending; a blocked word split across two
deltas never reaches the client (the text before it does, then OpenAI's error event);
an upstream cut reaches the client as a cut, after the held text; each request logs
one record whose figures (tokens, output tokens) are those the upstream sent.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
import uvicorn

from sse_sansio import Event, aiter_events, llm
from tests.helpers.examples import load_example

pytestmark = pytest.mark.slow  # a live server

GUARD = 30.0  # seconds: a failure guard only
INTRO = "Intro sentence that is long. "  # 29 characters: released once 16 follow


def named(payload: dict[str, Any]) -> bytes:
    return f"event: {payload['type']}\ndata: {json.dumps(payload)}\n\n".encode()


def text(piece: str) -> bytes:
    delta = {"type": "text_delta", "text": piece}
    return named({"type": "content_block_delta", "index": 0, "delta": delta})


START = [
    named({"type": "message_start", "message": {"id": "m1", "usage": {"input_tokens": 4}}}),
    named({"type": "content_block_start", "index": 0, "content_block": {"type": "text"}}),
]
END = [
    named({"type": "content_block_stop", "index": 0}),
    named(
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 3},
        }
    ),
    named({"type": "message_stop"}),
]
BODIES = {
    "whole": [*START, text("Hello"), text(" there"), *END],
    "blocked": [*START, text(INTRO), text("All fine. The forb"), text("idden word"), *END],
    "cut": [*START, text("Hel"), b'event: content_block_delta\ndata: {"ty'],
}


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


@asynccontextmanager
async def upstream() -> AsyncIterator[int]:
    """A fake Anthropic upstream; the request's path names the body."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        await reader.readexactly(length)
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
        )
        for block in BODIES[head.split(b" ")[1].decode().strip("/")]:
            writer.write(chunk(block))
            await writer.drain()
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()


async def ask(scenario: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, list[Event]]:
    """The gateway's answer for ``scenario``: the client's tracker and the events."""
    module = load_example("llm_guard_gateway")
    async with upstream() as port:
        monkeypatch.setattr(module, "UPSTREAM_URL", f"http://127.0.0.1:{port}/{scenario}")
        monkeypatch.setattr(module, "HOLD_CHARS", 16)
        config = uvicorn.Config(
            module.app, host="127.0.0.1", port=0, log_level="critical", lifespan="off"
        )
        server = uvicorn.Server(config)
        task = asyncio.ensure_future(server.serve())
        while not server.started:
            await asyncio.sleep(0.01)
        base = f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
        tracker = llm.Tracker("openai-chat")
        events: list[Event] = []
        try:
            async with (
                httpx.AsyncClient(timeout=GUARD) as http,
                http.stream("POST", f"{base}/v1/chat/completions", json={"stream": True}) as got,
            ):
                try:
                    async for item in aiter_events(got.aiter_bytes()):
                        tracker.feed(item)
                        if isinstance(item, Event):
                            events.append(item)
                    tracker.end()
                except httpx.RemoteProtocolError:
                    tracker.end(truncated=True)  # the body ended without its end
        finally:
            server.should_exit = True
            await asyncio.wait_for(task, GUARD)
    return tracker, events


def record(scenario: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, list[Event], Any]:
    records: list[dict[str, Any]] = []
    module = load_example("llm_guard_gateway")
    monkeypatch.setattr(module, "log", records.append)
    tracker, events = asyncio.run(asyncio.wait_for(ask(scenario, monkeypatch), GUARD))
    (logged,) = records  # one record per request
    return tracker, events, logged


def test_a_whole_answer_arrives_translated_and_measured(monkeypatch: pytest.MonkeyPatch) -> None:
    tracker, events, logged = record("whole", monkeypatch)
    assert (tracker.outcome.outcome, tracker.answer.text) == ("completed", "Hello there")
    assert events[-1].data == "[DONE]"
    assert (logged["guard"], logged["outcome"]) == ("passed", "completed")
    stats = logged["stats"]
    assert (stats["token_events"], stats["output_tokens"]) == (2, 3)  # two deltas; usage 3
    assert stats["time_to_first_token"] is not None
    assert stats["events"] == 7  # the seven events the upstream sent


def test_a_blocked_word_never_reaches_the_client(monkeypatch: pytest.MonkeyPatch) -> None:
    tracker, _, logged = record("blocked", monkeypatch)
    outcome = tracker.outcome
    assert outcome.outcome == "failed"
    assert outcome.error_message == "the answer broke the content policy"
    # The intro had 18 characters after it when the second delta came: released.  The
    # second delta was held when the third completed the word: dropped with it.
    assert tracker.answer.text == INTRO
    # The gateway left the upstream at the veto: before its terminal event, a cut.
    assert (logged["guard"], logged["outcome"]) == ("vetoed", "cut")


def test_an_upstream_cut_is_a_cut_for_the_client(monkeypatch: pytest.MonkeyPatch) -> None:
    tracker, _, logged = record("cut", monkeypatch)
    assert (tracker.outcome.outcome, tracker.answer.text) == ("cut", "Hel")
    assert logged["outcome"] == "cut"
    assert logged["stats"]["outcome"] == "cut"
