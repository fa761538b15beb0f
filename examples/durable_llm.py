"""An LLM answer that survives a reload: relay an upstream stream into a durable stream.

The producer (:func:`relay`) asks an OpenAI-compatible upstream for a streamed chat
completion, reads it through :class:`sse_sansio.Relay` (parsed, judged by the
``openai-chat`` dialect), and appends each text delta to a Durable Stream from this
process, the one serving the streams: :meth:`DurableStreams.append
<sse_sansio.durable.DurableStreams.append>` on the app's core, a POST's rules without a
request per delta (the app's readers hear of it through the memory store's
subscription), closing the stream when the answer is complete.  The reader
(:func:`read`) follows the stream in SSE mode and keeps the last
``streamNextOffset``; when its connection drops (a page reload, a flaky network) it
reconnects from that offset and gets the rest: every byte once, whether the answer
was still being written or long finished.  An upstream that ends
without its terminal event leaves the stream open (not closed: the answer is not
whole); its readers see everything that did arrive.

Run it against any OpenAI-compatible server::

    python examples/durable_llm.py --upstream http://127.0.0.1:8000/v1/chat/completions

It serves the streams on ``--port`` (4437), relays one answer into
``/v1/stream/answer``, reads it with one dropped connection on the way, and prints it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import AsyncIterator

import httpx

import sse_sansio
from sse_sansio.durable import DurableApp, Request, Response, asgi_app

#: The app serving the durable streams (memory store; its clock is ``time.time``).
app: DurableApp = asgi_app()
TEXT = "text/plain; charset=utf-8"


def delta_text(event: sse_sansio.Event) -> str:
    """The text an OpenAI chat-completion chunk adds (empty for the others)."""
    try:
        chunk = json.loads(event.data)
        return str(chunk["choices"][0]["delta"].get("content") or "")
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        return ""  # [DONE], the usage chunk, anything else


async def relay(
    client: httpx.AsyncClient,
    path: str,
    upstream_url: str,
    *,
    prompt: str = "Say hello.",
    pace: float = 0.0,
) -> str:
    """Create the stream at ``path`` (``/v1/stream/...``) on :data:`app` and relay the
    upstream's answer into it; return the text relayed.  ``pace``: seconds to wait
    after each append (a demo's slow model)."""
    streams = app.protocol
    created = streams.handle(Request("PUT", path, [("Content-Type", TEXT)]), time.time())
    assert isinstance(created, Response)
    if created.status not in (200, 201):
        raise RuntimeError(f"cannot create {path}: {created.status} {created.body!r}")
    body = {"model": "any", "stream": True, "messages": [{"role": "user", "content": prompt}]}
    relayed: list[str] = []
    async with client.stream("POST", upstream_url, json=body) as upstream:
        source = sse_sansio.Relay(upstream.aiter_bytes(), dialect="openai-chat")
        try:
            async for item in source:
                text = delta_text(item) if isinstance(item, sse_sansio.Event) else ""
                if not text:
                    continue
                streams.append(path, text.encode(), time.time(), TEXT)  # wakes the readers
                relayed.append(text)
                await asyncio.sleep(pace)
        except sse_sansio.StreamCut:
            pass  # the upstream was cut: what arrived is in the stream, which stays open
    outcome = source.outcome
    if outcome is not None and outcome.outcome == "completed":
        streams.append(path, b"", time.time(), close=True)
    return "".join(relayed)


async def read(
    client: httpx.AsyncClient, stream_url: str, *, drop_after: int | None = None
) -> tuple[str, int]:
    """Read the stream in SSE mode to its close; return the text and how many
    connections it took.  ``drop_after``: drop the first connection after that many
    data events (and resume by offset)."""
    offset, texts, connections = "-1", [], 0
    while True:
        connections += 1
        closed = False
        async for kind, data in _events(client, stream_url, offset):
            if kind == "data":
                texts.append(data)
                continue
            control = json.loads(data)
            offset = control["streamNextOffset"]  # where a reconnection starts
            closed = bool(control.get("streamClosed"))
            if connections == 1 and drop_after is not None and len(texts) >= drop_after:
                break  # the connection drops here
        if closed:
            return "".join(texts), connections


async def _events(
    client: httpx.AsyncClient, url: str, offset: str
) -> AsyncIterator[tuple[str, str]]:
    params = {"offset": offset, "live": "sse"}
    async with client.stream("GET", url, params=params) as response:
        response.raise_for_status()
        async for item in sse_sansio.aiter_events(response.aiter_raw()):
            if isinstance(item, sse_sansio.Event):
                yield item.type, item.data


async def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--upstream", required=True, help="an OpenAI-compatible chat URL")
    parser.add_argument("--port", type=int, default=4437)
    parser.add_argument("--prompt", default="Say hello.")
    options = parser.parse_args(argv)
    import uvicorn

    config = uvicorn.Config(app, host="127.0.0.1", port=options.port, log_level="warning")
    server = uvicorn.Server(config)
    serving = asyncio.ensure_future(server.serve())
    while not server.started:
        await asyncio.sleep(0.01)
    path = "/v1/stream/answer"
    url = f"http://127.0.0.1:{options.port}{path}"
    try:
        async with httpx.AsyncClient(timeout=60) as client:
            producing = asyncio.ensure_future(
                relay(client, path, options.upstream, prompt=options.prompt)
            )
            while not (await client.head(url)).is_success:
                await asyncio.sleep(0.01)
            text, _ = await read(client, url, drop_after=1)
            await producing
    finally:
        server.should_exit = True
        await serving
    print(text)
    return text


if __name__ == "__main__":
    asyncio.run(main())
