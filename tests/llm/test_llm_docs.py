"""The httpx clients on the LLM dialect pages work, whole and cut, over a mock transport.

The pages only define the clients (test_docs runs the pages); here each one is called
with an ``httpx.MockTransport`` that serves a recorded stream from tests/data/llm/ in
small chunks, so the code a reader copies is the code that was run.  The feeding
helpers come from issue 11; until they are merged, a stand-in with the same documented
contract (shared decisions: items in order, a clean end stops, a cut raises
TruncatedStreamError carrying the EndOfStream) takes their place.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import sse_sansio
from sse_sansio import NEED_DATA, Comment, Connection, EndOfStream, Event, RemoteProtocolError
from tests.helpers.docs import DOCS, run_page

DATA = Path(__file__).parents[1] / "data" / "llm"
EXPECTED = json.loads((DATA / "expected.json").read_text(encoding="utf-8"))


class _TruncatedStreamError(RemoteProtocolError):
    def __init__(self, msg: str, *, offset: int, end_of_stream: EndOfStream) -> None:
        super().__init__(msg, offset=offset)
        self.end_of_stream = end_of_stream


def _iter_events(chunks: Iterable[bytes], **options: Any) -> Iterator[Event | Comment]:
    """The feeding helper's documented contract, for as long as it is not merged."""
    conn = Connection(**options)
    last_end = 0
    for chunk in [*chunks, b""]:
        conn.receive_data(chunk)
        while (item := conn.next_event()) is not NEED_DATA:
            if isinstance(item, EndOfStream):
                if item.truncated:
                    raise _TruncatedStreamError(
                        "the stream was cut", offset=last_end, end_of_stream=item
                    )
                return
            last_end = item.end
            yield item


@pytest.fixture(autouse=True)
def feeding_helpers(monkeypatch: pytest.MonkeyPatch) -> None:
    if not hasattr(sse_sansio, "iter_events"):
        monkeypatch.setattr(sse_sansio, "iter_events", _iter_events, raising=False)
        monkeypatch.setattr(
            sse_sansio, "TruncatedStreamError", _TruncatedStreamError, raising=False
        )


def serving(body: bytes, seen: list[httpx.Request]) -> httpx.Client:
    """A client whose every request is answered 200 with ``body``, 7 bytes at a time."""

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        pieces = [body[i : i + 7] for i in range(0, len(body), 7)]
        return httpx.Response(
            200, headers={"content-type": "text/event-stream"}, content=iter(pieces)
        )

    return httpx.Client(transport=httpx.MockTransport(handler))


PAGES = [
    ("llm-openai-chat.rst", "openai-chat-stop.sse", "Hello there!"),
    ("llm-openai-chat.rst", "openai-chat-tool-calls.sse", ""),
    ("llm-openai-responses.rst", "openai-responses-completed.sse", "Hello there!"),
    ("llm-openai-responses.rst", "openai-responses-incomplete.sse", "Once upon a"),
    ("llm-anthropic.rst", "anthropic-end-turn.sse", "Hello!"),
    ("llm-anthropic.rst", "anthropic-error.sse", ""),
    ("llm-gemini.rst", "gemini-stop.sse", "Hello there!"),
    ("llm-gemini.rst", "gemini-prompt-blocked.sse", ""),
]


@pytest.mark.slow
@pytest.mark.parametrize(("page", "name", "text"), PAGES)
def test_the_page_client_reads_a_whole_stream(page: str, name: str, text: str) -> None:
    ask: Callable[[httpx.Client, str], tuple[str, Any]] = run_page(DOCS / page)["ask"]
    seen: list[httpx.Request] = []
    with serving((DATA / name).read_bytes(), seen) as client:
        answer, outcome = ask(client, "Say hello.")
    assert answer == text
    want = EXPECTED[name]
    assert {key: getattr(outcome, key) for key in want} == want
    assert seen[0].method == "POST"
    assert b"Say hello." in seen[0].content


@pytest.mark.slow
@pytest.mark.parametrize(("page", "name", "text"), PAGES)
def test_the_page_client_reports_a_cut_stream(page: str, name: str, text: str) -> None:
    ask = run_page(DOCS / page)["ask"]
    body = (DATA / name).read_bytes()
    with serving(body[:-5], []) as client:
        _, outcome = ask(client, "Say hello.")
    assert (outcome.outcome, outcome.cut) == ("cut", "mid-event")


@pytest.mark.slow
def test_the_generic_page_client() -> None:
    follow = run_page(DOCS / "llm-generic.rst")["follow"]
    body = b"event: progress\ndata: 50%\n\nevent: progress\ndata: 100%\n\nevent: done\ndata: ok\n\n"
    with serving(body, []) as client:
        lines, outcome = follow(client, "http://127.0.0.1/job/1")
    assert (lines, outcome.outcome) == (["50%", "100%"], "completed")
    with serving(body[:30], []) as client:
        lines, outcome = follow(client, "http://127.0.0.1/job/1")
    assert (lines, outcome.outcome, outcome.cut) == (["50%"], "cut", "mid-event")


@pytest.mark.parametrize("page", sorted({page for page, _, _ in PAGES}))
def test_the_page_client_names_an_error_body(page: str) -> None:
    # check_response(), not raise_for_status(): the API's JSON message is in the error.
    ask = run_page(DOCS / page)["ask"]

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(401, json={"error": {"message": "Incorrect API key provided"}})

    client = httpx.Client(transport=httpx.MockTransport(handler))
    with client, pytest.raises(sse_sansio.ResponseError, match="'Incorrect API key provided'"):
        ask(client, "Say hello.")
