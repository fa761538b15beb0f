"""A guarded LLM gateway in FastAPI: translate, hold back, measure (issue 35).

What it shows: ``POST /v1/chat/completions`` is sent on to ``UPSTREAM_URL``, an API
that streams in ``UPSTREAM_DIALECT`` (Anthropic Messages by default); the client gets
the answer in ``CLIENT_DIALECT`` (OpenAI Chat Completions by default), and:

- ``sse_sansio.Relay`` parses the upstream, judges it, and watches it with first-byte,
  idle and progress clocks of ``WATCHDOG_S`` seconds (a stall behind pings included);
- ``llm.Translator`` rewrites each upstream event in the client's dialect, keeping how
  the answer ended (a cut stays a cut: the client's body ends without its last chunk);
- ``llm.HoldBack`` holds the text until ``HOLD_CHARS`` more characters followed it, so
  the guard sees each word whole before the client does; a word of ``BLOCKED`` vetoes
  the answer: the client gets the text before it, then its dialect's error event, and
  not one character of the held text;
- the three are one pipeline, ``hold.pipe(translator.pipe(relay))``: each stage passes
  a cut on after what it holds, ends the answer on a clean end, and closing it (the
  client left, a veto) closes the upstream;
- ``llm.StreamStats`` measures the upstream (time to first token, gaps, stalls behind
  keepalives, output tokens); one JSON line per request on stderr holds the figures.

The request body is passed on unchanged (translating requests is not this recipe's
subject).  Run it under any ASGI server::

    UPSTREAM_URL=https://api.anthropic.com/v1/messages \\
        python -m uvicorn --app-dir examples llm_guard_gateway:app --port 8000
"""

import json
import os
import sys
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import aclosing

import httpx
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from starlette.background import BackgroundTask

from sse_sansio import Comment, Event, Relay, Watchdog, llm
from sse_sansio.asgi import EventStreamResponse

UPSTREAM_URL = os.environ.get("UPSTREAM_URL", "http://127.0.0.1:8001/v1/messages")
UPSTREAM_DIALECT = os.environ.get("UPSTREAM_DIALECT", "anthropic")
CLIENT_DIALECT = os.environ.get("CLIENT_DIALECT", "openai-chat")
BLOCKED = tuple(os.environ.get("BLOCKED", "forbidden").split(","))
HOLD_CHARS = int(os.environ.get("HOLD_CHARS", "64"))  # at least the longest blocked word
KEEPALIVE_S = float(os.environ.get("KEEPALIVE_S", "15"))
WATCHDOG_S = float(os.environ.get("WATCHDOG_S", "30"))
PASSED_ON = ("authorization", "content-type", "x-api-key", "anthropic-version")

app = FastAPI()


def log(record: dict[str, object]) -> None:
    print(json.dumps(record), file=sys.stderr, flush=True)


async def counted(chunks: AsyncIterator[bytes], stats: llm.StreamStats) -> AsyncIterator[bytes]:
    """The upstream's body, each chunk told to the stats first."""
    async for chunk in chunks:
        stats.saw_bytes(len(chunk), time.monotonic())
        yield chunk


async def measured(relay: Relay, stats: llm.StreamStats) -> AsyncGenerator[Event | Comment, None]:
    """The upstream's items, each told to the stats first; closing this closes the relay."""
    async with aclosing(aiter(relay)) as items:  # a Relay iterates as an async generator
        async for item in items:
            stats.saw_item(item, time.monotonic())
            yield item


def counted_body(stats: llm.StreamStats) -> Callable[[httpx.Response], AsyncIterator[bytes]]:
    """What Relay.open reads of the response: its body decoded (aiter_bytes(): a gzip
    upstream's too, as the relay must parse it), each chunk counted."""
    return lambda upstream: counted(upstream.aiter_bytes(), stats)


class Guard:
    """One request's blocklist check, as HoldBack.pipe() calls it: each piece of text
    before any of it is sent, with the tail of the text before it (a blocked word may
    span two deltas)."""

    def __init__(self) -> None:
        self.seen = ""
        self.verdict = "passed"

    def check(self, text: str) -> str | None:
        self.seen = (self.seen + text)[-2 * HOLD_CHARS :]
        if any(word in self.seen for word in BLOCKED):
            self.verdict = "vetoed"
            return "the answer broke the content policy"  # the client's error message
        return None


async def finish(
    http: httpx.AsyncClient, relay: Relay, stats: llm.StreamStats, guard: Guard
) -> None:
    """After the stream (a cut or a veto included): close, measure, log."""
    await http.aclose()
    outcome = relay.outcome
    inside = outcome is not None and outcome.cut == "mid-event"
    stats.end(time.monotonic(), truncated=inside)
    log({"guard": guard.verdict, "outcome": outcome and outcome.outcome, "stats": stats.as_dict()})


@app.post("/v1/chat/completions")
async def chat_completions(request: Request) -> Response:
    s, started = WATCHDOG_S, time.monotonic()
    watchdog = Watchdog(first_byte=s, idle=s, progress=s, now=started)
    stats = llm.StreamStats(UPSTREAM_DIALECT, now=started)
    headers = {name: value for name, value in request.headers.items() if name in PASSED_ON}
    http = httpx.AsyncClient(timeout=httpx.Timeout(None, connect=s))
    asked = http.build_request("POST", UPSTREAM_URL, content=await request.body(), headers=headers)
    try:  # the relay waits for the upstream's head on the watchdog's first-byte clock
        sent, decoded = http.send(asked, stream=True), counted_body(stats)
        upstream, relay = await Relay.open(
            sent, decoded, dialect=UPSTREAM_DIALECT, watchdog=watchdog
        )
        if upstream is None:  # no head before the first-byte clock ran out
            raise TimeoutError("the upstream sent no response head in time")
    except (OSError, httpx.HTTPError) as exc:  # (TimeoutError is an OSError)
        await http.aclose()
        return JSONResponse({"error": {"message": repr(exc), "type": "upstream_error"}}, 502)
    kind = upstream.headers.get("content-type", "")
    if not kind.startswith("text/event-stream"):  # an error (a 429, a 502): passed on
        body = await upstream.aread()
        await http.aclose()
        return Response(body, upstream.status_code, media_type=kind or None)
    translator = llm.Translator(UPSTREAM_DIALECT, CLIENT_DIALECT)
    hold = llm.HoldBack(CLIENT_DIALECT, chars=HOLD_CHARS, now=time.monotonic())
    guard = Guard()
    # The whole pipeline: upstream items -> the client's dialect -> held for the check.
    answer = hold.pipe(translator.pipe(measured(relay, stats)), check=guard.check)
    response = EventStreamResponse(answer, keepalive=KEEPALIVE_S, headers=translator.headers)
    response.background = BackgroundTask(finish, http, relay, stats, guard)
    return response
