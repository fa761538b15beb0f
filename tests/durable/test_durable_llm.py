"""examples/durable_llm.py live (issue 44, item 6): an LLM answer relayed into a durable
stream survives its reader's dropped connection.

The upstream is the gateway tests' fake OpenAI-compatible server (its "whole" answer,
"Hel" + "lo"; "clean-cut", which ends inside an event); the durable streams app runs in
this process under uvicorn.  The producer waits after each append, so the reader drops
in the middle of the answer and resumes by offset while it is still being written.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import pytest
import uvicorn

from tests.helpers.examples import load_example
from tests.package.test_gateway_examples import WHOLE, fake_upstream

GUARD = 30.0  # seconds: a failure guard only

pytestmark = pytest.mark.slow  # live servers on loopback


def expected_answer() -> str:
    """The text of the fake upstream's whole answer, read from its bytes."""
    text = ""
    for frame in WHOLE:
        payload = frame.decode().removeprefix("data: ").strip()
        if payload != "[DONE]":
            for choice in json.loads(payload)["choices"]:
                text += choice["delta"].get("content") or ""
    return text


@asynccontextmanager
async def served(app: object) -> AsyncIterator[str]:
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="critical")  # type: ignore[arg-type]
    server = uvicorn.Server(config)
    task = asyncio.ensure_future(server.serve())
    while not server.started:
        await asyncio.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, GUARD)


async def scenario(name: str, stream: str) -> tuple[str, str, int, httpx.Response]:
    module = load_example("durable_llm")
    async with fake_upstream(asyncio.Event()) as port, served(module.app) as base:
        url = f"{base}/v1/stream/{stream}"
        async with httpx.AsyncClient(timeout=GUARD) as client:
            producing = asyncio.ensure_future(
                module.relay(
                    client, f"/v1/stream/{stream}", f"http://127.0.0.1:{port}/{name}", pace=0.2
                )
            )
            while not (await client.head(url)).is_success:
                await asyncio.sleep(0.01)
            if name == "whole":
                text, connections = await asyncio.wait_for(
                    module.read(client, url, drop_after=1), GUARD
                )
            else:
                text, connections = "", 0
            relayed = await asyncio.wait_for(producing, GUARD)
            head = await client.head(url)
    return relayed, text, connections, head


def test_the_answer_survives_a_dropped_reader() -> None:
    relayed, text, connections, head = asyncio.run(scenario("whole", "answer"))
    assert relayed == expected_answer() == "Hello"
    assert text == relayed  # every byte, once
    assert connections == 2  # it did drop, and resume
    assert head.headers["stream-closed"] == "true"


def test_a_cut_upstream_leaves_the_stream_open() -> None:
    relayed, _, _, head = asyncio.run(scenario("clean-cut", "cut"))
    assert relayed == "Hel"  # what arrived before the cut
    assert "stream-closed" not in head.headers
    assert head.headers["stream-next-offset"].endswith("3")


def test_delta_text_ignores_what_is_not_a_delta() -> None:
    from sse_sansio import Event

    module = load_example("durable_llm")
    assert module.delta_text(Event(data="[DONE]")) == ""
    assert module.delta_text(Event(data='{"choices": []}')) == ""
    assert module.delta_text(Event(data='{"choices": [{"delta": {"content": "x"}}]}')) == "x"
