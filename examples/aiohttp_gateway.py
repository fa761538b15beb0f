"""An OpenAI-compatible streaming gateway on aiohttp: examples/fastapi_gateway.py's
behaviour, with aiohttp on both sides.

What it shows: ``POST /v1/chat/completions`` is sent on to ``UPSTREAM_URL`` with
aiohttp's client, and a streamed answer is relayed by ``sse_sansio.Relay`` through
``sse_sansio.aiohttp.serve``: keepalives every ``KEEPALIVE_S`` seconds, first-byte,
idle and progress clocks of ``WATCHDOG_S`` seconds that end a dead or stalled answer
with OpenAI's error event, and an upstream cut passed on as a cut (the connection
closes before the body's last chunk).  Any other answer passes through with its status,
content type and body; each request logs ``outcome=`` and ``usage=`` on stderr.

Run it, with ``UPSTREAM_URL`` in the environment::

    python examples/aiohttp_gateway.py --port 8000
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time

import aiohttp
from aiohttp import web

from sse_sansio import Relay, Watchdog
from sse_sansio.aiohttp import serve

UPSTREAM_URL = os.environ.get("UPSTREAM_URL", "http://127.0.0.1:8001/v1/chat/completions")
KEEPALIVE_S = float(os.environ.get("KEEPALIVE_S", "15"))
WATCHDOG_S = float(os.environ.get("WATCHDOG_S", "30"))
PASSED_ON = ("authorization", "content-type", "openai-organization", "openai-project")


def log(status: int, outcome: object, usage: object = None) -> None:
    print(f"chat status={status} outcome={outcome} usage={usage}", file=sys.stderr, flush=True)


async def chat_completions(request: web.Request) -> web.StreamResponse:
    """Relay one chat completion request."""
    s = WATCHDOG_S  # the first-byte, idle and progress clocks
    watchdog = Watchdog(first_byte=s, idle=s, progress=s, now=time.monotonic())
    headers = {name: value for name, value in request.headers.items() if name.lower() in PASSED_ON}
    body = await request.read()
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(sock_connect=s)) as http:
        try:  # the wait for the upstream's head runs on the first-byte clock too
            upstream = await asyncio.wait_for(
                http.post(UPSTREAM_URL, data=body, headers=headers), s
            )
        except (OSError, aiohttp.ClientError, asyncio.TimeoutError) as exc:
            log(502, "failed")
            error = {"error": {"message": repr(exc), "type": "upstream_error"}}
            return web.json_response(error, status=502)
        async with upstream:
            kind = upstream.headers.get("Content-Type", "")
            if not kind.startswith("text/event-stream"):  # an error, or a JSON answer
                answer = await upstream.read()
                log(upstream.status, "failed" if upstream.status >= 400 else "completed")
                return web.Response(
                    body=answer,
                    status=upstream.status,
                    content_type=None,
                    headers={"Content-Type": kind} if kind else None,
                )
            relay = Relay(upstream.content.iter_any(), dialect="openai-chat", watchdog=watchdog)
            try:
                return await serve(
                    request, relay, keepalive=KEEPALIVE_S, status_code=upstream.status
                )
            finally:
                outcome = relay.outcome
                log(upstream.status, outcome and outcome.outcome, outcome and outcome.usage)


def make_app() -> web.Application:
    """The gateway's application."""
    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat_completions)
    return app


def main(argv: list[str] | None = None) -> int:
    """Serve the gateway until interrupted."""
    parser = argparse.ArgumentParser(description="An OpenAI-compatible streaming gateway.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args(argv)
    web.run_app(make_app(), host=args.host, port=args.port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
