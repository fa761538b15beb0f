"""An OpenAI-compatible streaming gateway in FastAPI: keepalives, a watchdog, usage
logging and cuts passed on, in one Relay and one EventStreamResponse.

What it shows: ``POST /v1/chat/completions`` is sent on to ``UPSTREAM_URL`` (the full
URL).  A streamed answer is relayed with ``sse_sansio.Relay``: parsed, judged by the
``openai-chat`` rules, watched by first-byte, idle and progress clocks of
``WATCHDOG_S`` seconds (a stall behind ``: ping`` comments included), which end it
with OpenAI's own error event; the client gets a keepalive after ``KEEPALIVE_S``
seconds of silence.  An upstream cut (a reset, a body ended inside an event or before
``data: [DONE]``) reaches the client as a cut: its body ends without its last chunk.
Any other answer (a JSON 429, an HTML 502) passes through with its status, content
type and body; ``Relay.open`` sends the request, so the first-byte clock covers the
wait for the response head too (no head in time: a 502).  One line per request on
stderr says ``outcome=`` and ``usage=``.

Run it under any ASGI server, with ``UPSTREAM_URL`` in the environment::

    python -m uvicorn --app-dir examples fastapi_gateway:app --port 8000
"""

import os
import sys
import time

import httpx
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from starlette.background import BackgroundTask

from sse_sansio import Relay, Watchdog
from sse_sansio.asgi import EventStreamResponse

UPSTREAM_URL = os.environ.get("UPSTREAM_URL", "http://127.0.0.1:8001/v1/chat/completions")
KEEPALIVE_S = float(os.environ.get("KEEPALIVE_S", "15"))
WATCHDOG_S = float(os.environ.get("WATCHDOG_S", "30"))
PASSED_ON = ("authorization", "content-type", "openai-organization", "openai-project")

app = FastAPI()


def log(status: int, outcome: object, usage: object = None) -> None:
    print(f"chat status={status} outcome={outcome} usage={usage}", file=sys.stderr, flush=True)


async def finish(relay: Relay, http: httpx.AsyncClient, status: int) -> None:
    """After the stream (a cut included): close the upstream, log the outcome."""
    await http.aclose()
    outcome = relay.outcome
    log(status, outcome and outcome.outcome, outcome and outcome.usage)


@app.post("/v1/chat/completions")
async def chat_completions(request: Request) -> Response:
    s = WATCHDOG_S  # the first-byte, idle and progress clocks
    watchdog = Watchdog(first_byte=s, idle=s, progress=s, now=time.monotonic())
    headers = {name: value for name, value in request.headers.items() if name in PASSED_ON}
    http = httpx.AsyncClient(timeout=httpx.Timeout(None, connect=s))
    asked = http.build_request("POST", UPSTREAM_URL, content=await request.body(), headers=headers)
    try:  # the relay waits for the upstream's head on the watchdog's first-byte clock
        sent, decoded = http.send(asked, stream=True), lambda up: up.aiter_bytes()
        upstream, relay = await Relay.open(sent, decoded, dialect="openai-chat", watchdog=watchdog)
        if upstream is None:  # no head before the first-byte clock ran out
            raise TimeoutError("the upstream sent no response head in time")
    except (OSError, httpx.HTTPError) as exc:  # (TimeoutError is an OSError)
        await http.aclose()
        log(502, "failed")
        return JSONResponse({"error": {"message": repr(exc), "type": "upstream_error"}}, 502)
    kind, status = upstream.headers.get("content-type", ""), upstream.status_code
    if not kind.startswith("text/event-stream"):  # an error (a 429, a 502) or a JSON answer
        body = await upstream.aread()
        await http.aclose()
        log(status, "failed" if upstream.is_error else "completed")
        return Response(body, status, media_type=kind or None)
    response = EventStreamResponse(relay, keepalive=KEEPALIVE_S, status_code=status)
    response.background = BackgroundTask(finish, relay, http, status)
    return response
