"""sse_sansio.durable.asgi_app, driven in process by ASGI messages (no server).

What the adapter adds to the core: routing under the prefix, whole bodies with a bound,
long-poll and SSE readers woken by appends (not by a timer: the long-poll timeouts here
are far beyond the tests' guard), SSE written by ServerStream with a deletion passed on
as a cut, a blocking store called in a thread, and a store's change hook.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, MutableMapping
from typing import Any

import pytest

from sse_sansio.durable import AppendOutcome, AppendPlan, DurableApp, MemoryStore, asgi_app

GUARD = 10.0  # seconds: a hang fails the test; nothing here is timed


class Client:
    """Sends one request to the app and collects what it writes."""

    def __init__(self, app: DurableApp) -> None:
        self.app = app

    async def request(
        self,
        method: str,
        path: str = "/v1/stream/s",
        *,
        body: bytes = b"",
        headers: dict[str, str] | None = None,
        query: str = "",
        chunks: list[bytes] | None = None,
        disconnect: asyncio.Event | None = None,
        host: bool = True,
    ) -> dict[str, Any]:
        pieces = list(chunks) if chunks is not None else [body]
        raw = [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
        if host:
            raw.append((b"host", b"example:80"))
        scope = {
            "type": "http",
            "method": method,
            "path": path,
            "query_string": query.encode(),
            "headers": raw,
            "scheme": "http",
        }
        sent: list[MutableMapping[str, Any]] = []
        gone = disconnect or asyncio.Event()

        async def receive() -> dict[str, Any]:
            if pieces:
                piece = pieces.pop(0)
                return {"type": "http.request", "body": piece, "more_body": bool(pieces)}
            await gone.wait()
            return {"type": "http.disconnect"}

        async def send(message: MutableMapping[str, Any]) -> None:
            sent.append(message)

        await asyncio.wait_for(self.app(scope, receive, send), GUARD)
        start = sent[0]
        body_parts = [m.get("body", b"") for m in sent[1:]]
        return {
            "status": start["status"],
            "headers": {k.decode(): v.decode() for k, v in start["headers"]},
            "body": b"".join(body_parts),
            "finished": sent[-1].get("more_body") is False,
        }


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


def test_routes_under_the_prefix_only() -> None:
    client = Client(asgi_app(prefix="/v1/stream/"))

    async def scenario() -> None:
        assert (await client.request("GET", "/elsewhere"))["status"] == 404
        assert (await client.request("GET", "/v1/stream/"))["status"] == 404
        created = await client.request("PUT", headers={"Content-Type": "text/plain"})
        assert created["status"] == 201
        assert created["headers"]["location"] == "http://example:80/v1/stream/s"
        no_host = await client.request("PUT", "/v1/stream/t", host=False)
        assert no_host["headers"]["location"] == "/v1/stream/t"

    run(scenario())


def test_bodies_are_read_whole_and_bounded() -> None:
    client = Client(asgi_app(max_body=10))

    async def scenario() -> None:
        await client.request("PUT", headers={"Content-Type": "text/plain"})
        posted = await client.request(
            "POST", chunks=[b"hello ", b"you"], headers={"Content-Type": "text/plain"}
        )
        assert posted["status"] == 204
        too_big = await client.request(
            "POST", chunks=[b"0123456789", b"!"], headers={"Content-Type": "text/plain"}
        )
        assert too_big["status"] == 413
        read = await client.request("GET")
        assert (read["body"], read["headers"]["content-length"]) == (b"hello you", "9")
        head = await client.request("HEAD")
        assert (head["status"], head["body"]) == (200, b"")

    run(scenario())


def test_a_client_gone_before_its_body_came() -> None:
    client = Client(asgi_app())

    async def scenario() -> None:
        gone = asyncio.Event()
        gone.set()
        answer = await client.request("PUT", chunks=[], disconnect=gone)
        assert answer["status"] == 201  # an empty body, as far as it came

    run(scenario())


def test_long_poll_wakes_on_append() -> None:
    client = Client(asgi_app(long_poll_timeout=60))

    async def scenario() -> None:
        await client.request("PUT", headers={"Content-Type": "text/plain"}, body=b"ab")
        polls = [
            asyncio.create_task(client.request("GET", query="offset=now&live=long-poll"))
            for _ in range(2)
        ]
        await asyncio.sleep(0.05)  # both are waiting (the append must wake them)
        assert not any(poll.done() for poll in polls)
        await client.request("POST", body=b"cd", headers={"Content-Type": "text/plain"})
        for poll in polls:
            answer = await poll
            assert (answer["status"], answer["body"]) == (200, b"cd")

    run(scenario())


class Unhooked(MemoryStore):
    """A store without a change hook (a third engine may have none)."""

    subscribe = None  # type: ignore[assignment]


def test_a_store_without_a_change_hook_still_wakes_on_appends_made_here() -> None:
    client = Client(asgi_app(Unhooked(), long_poll_timeout=60))

    async def scenario() -> None:
        await client.request("PUT", headers={"Content-Type": "text/plain"})
        poll = asyncio.create_task(client.request("GET", query="offset=now&live=long-poll"))
        await asyncio.sleep(0.05)
        assert not poll.done()
        await client.request("POST", body=b"here", headers={"Content-Type": "text/plain"})
        answer = await poll
        assert (answer["status"], answer["body"]) == (200, b"here")

    run(scenario())


def test_long_poll_times_out_with_204() -> None:
    client = Client(asgi_app(long_poll_timeout=0.05))

    async def scenario() -> None:
        await client.request("PUT", headers={"Content-Type": "text/plain"})
        answer = await client.request("GET", query="offset=now&live=long-poll")
        assert (answer["status"], answer["headers"]["stream-up-to-date"]) == (204, "true")

    run(scenario())


def events(body: bytes) -> list[tuple[str, str]]:
    out = []
    for block in body.decode().split("\n\n"):
        lines = [line for line in block.split("\n") if line and not line.startswith(":")]
        kind = next((line[7:] for line in lines if line.startswith("event: ")), "")
        data = "\n".join(line[5:] for line in lines if line.startswith("data:"))
        if kind:
            out.append((kind, data))
    return out


def test_sse_streams_appends_until_the_close() -> None:
    client = Client(asgi_app(keepalive=60))

    async def scenario() -> None:
        await client.request("PUT", headers={"Content-Type": "text/plain"}, body=b"one")
        reading = asyncio.create_task(client.request("GET", query="offset=-1&live=sse"))
        await asyncio.sleep(0.05)
        await client.request("POST", body=b"two", headers={"Content-Type": "text/plain"})
        await asyncio.sleep(0.05)
        await client.request("POST", headers={"Stream-Closed": "true"})
        answer = await reading
        assert answer["headers"]["content-type"] == "text/event-stream"
        assert answer["finished"]  # a clean end after the closed signal
        got = events(answer["body"])
        assert [data for kind, data in got if kind == "data"] == ["one", "two"]
        assert json.loads(got[-1][1])["streamClosed"] is True, answer["body"]

    run(scenario())


def test_sse_hands_a_long_stream_out_event_by_event() -> None:
    client = Client(asgi_app(max_read_bytes=4))

    async def scenario() -> None:
        headers = {"Content-Type": "text/plain", "Stream-Closed": "true"}
        await client.request("PUT", headers=headers, body=b"0123456789")
        answer = await client.request("GET", query="offset=-1&live=sse")
        assert answer["finished"]
        got = events(answer["body"])
        assert [data for kind, data in got if kind == "data"] == ["0123", "4567", "89"]
        assert json.loads(got[-1][1])["streamClosed"] is True

    run(scenario())


def test_sse_deleted_under_its_reader_is_a_cut() -> None:
    client = Client(asgi_app())

    async def scenario() -> None:
        await client.request("PUT", headers={"Content-Type": "text/plain"}, body=b"x")
        reading = asyncio.create_task(client.request("GET", query="offset=-1&live=sse"))
        await asyncio.sleep(0.05)
        await client.request("DELETE")
        answer = await reading
        assert not answer["finished"]  # no proper end: the client knows it was cut
        assert [kind for kind, _ in events(answer["body"])] == ["data", "control"]

    run(scenario())


def test_sse_ends_cleanly_at_its_lifetime() -> None:
    client = Client(asgi_app(sse_lifetime=0.05))

    async def scenario() -> None:
        await client.request("PUT", headers={"Content-Type": "text/plain"})
        answer = await client.request("GET", query="offset=-1&live=sse")
        assert answer["finished"]
        assert json.loads(events(answer["body"])[0][1])["upToDate"] is True

    run(scenario())


class HookedStore(MemoryStore):
    """A blocking store (called in a thread) with a change hook, like the Redis one."""

    blocking = True

    def __init__(self) -> None:
        super().__init__()
        self.callbacks: list[Callable[[str], None]] = []
        self.threads: set[int] = set()

    def subscribe(self, callback: Callable[[str], None]) -> None:
        self.callbacks.append(callback)

    def meta(self, path: str) -> Any:
        self.threads.add(threading.get_ident())
        return super().meta(path)


def test_a_blocking_store_and_another_process_s_change() -> None:
    store = HookedStore()
    client = Client(asgi_app(store, long_poll_timeout=60))

    async def scenario() -> None:
        await client.request("PUT", headers={"Content-Type": "text/plain"})
        assert threading.get_ident() not in store.threads  # never on the loop's thread
        assert store.callbacks == []  # no live read yet: nothing to hear
        poll = asyncio.create_task(client.request("GET", query="offset=now&live=long-poll"))
        await asyncio.sleep(0.05)
        assert len(store.callbacks) == 1  # the first live read subscribed
        # "Another process" appends straight into the store, then its change is heard.
        from sse_sansio.durable import AppendPlan

        plan = AppendPlan([b"far"], 3, "text/plain", False, None, None, 0.0)
        MemoryStore.append(store, "/v1/stream/s", plan)
        threading.Thread(target=store.callbacks[0], args=("/v1/stream/s",)).start()
        answer = await poll
        assert (answer["status"], answer["body"]) == (200, b"far")
        await client.request("POST", headers={"Stream-Closed": "true"})
        assert (await client.request("GET", query="offset=-1&live=sse"))["finished"]
        assert len(store.callbacks) == 1  # subscribed once

    run(scenario())


def test_a_change_heard_wakes_only_a_path_read_here() -> None:
    store = HookedStore()
    client = Client(asgi_app(store, long_poll_timeout=60))

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        woken: list[tuple[Any, ...]] = []
        schedule = loop.call_soon_threadsafe

        def counting(callback: Callable[..., object], *args: Any) -> Any:
            if args and isinstance(args[0], str):  # a wake, not a worker thread's result
                woken.append(args)
            return schedule(callback, *args)

        loop.call_soon_threadsafe = counting  # type: ignore[method-assign,assignment]
        await client.request("PUT", headers={"Content-Type": "text/plain"})
        await client.request("PUT", "/v1/stream/other", headers={"Content-Type": "text/plain"})
        poll = asyncio.create_task(client.request("GET", query="offset=now&live=long-poll"))
        await asyncio.sleep(0.05)

        def hear(path: str) -> None:
            thread = threading.Thread(target=store.callbacks[0], args=(path,))
            thread.start()
            thread.join()

        hear("/v1/stream/other")  # nobody reads it here: nothing to wake
        assert woken == []
        from sse_sansio.durable import AppendPlan

        MemoryStore.append(
            store, "/v1/stream/s", AppendPlan([b"x"], 1, "text/plain", False, None, None, 0.0)
        )
        hear("/v1/stream/s")
        assert (await poll)["body"] == b"x"
        assert woken == [("/v1/stream/s",)]

    run(scenario())


class AwaitedStore(MemoryStore):
    """A store whose appends the app awaits (append_async), like the Redis one."""

    def __init__(self) -> None:
        super().__init__()
        self.awaited: list[str] = []

    async def append_async(self, path: str, plan: AppendPlan) -> AppendOutcome:
        outcome = self.append(path, plan)
        self.awaited.append(outcome.verdict)
        return outcome


def test_appends_through_a_store_s_awaited_step() -> None:
    store = AwaitedStore()
    clock = [1_800_000_000.0]
    client = Client(asgi_app(store, long_poll_timeout=60, clock=lambda: clock[0]))
    text = {"Content-Type": "text/plain"}

    async def scenario() -> None:
        await client.request("PUT", headers={**text, "Stream-TTL": "10"})
        poll = asyncio.create_task(client.request("GET", query="offset=now&live=long-poll"))
        await asyncio.sleep(0.05)
        assert (await client.request("POST", body=b"ab", headers=text))["status"] == 204
        assert (await poll)["body"] == b"ab"  # the awaited append woke the reader
        assert (await client.request("POST", body=b"cd"))["status"] == 400  # no type
        assert store.awaited == ["appended"]  # refused on its own: the core answered
        clock[0] += 10
        assert (await client.request("POST", body=b"ef", headers=text))["status"] == 404
        assert store.awaited == ["appended", "expired"]  # then the core removed it
        assert store.meta("/v1/stream/s") is None

    run(scenario())


def test_lifespan_and_other_scopes() -> None:
    app = asgi_app()

    async def scenario() -> None:
        messages = [{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}]
        sent: list[MutableMapping[str, Any]] = []

        async def receive() -> dict[str, Any]:
            return messages.pop(0)

        async def send(message: MutableMapping[str, Any]) -> None:
            sent.append(message)

        await app({"type": "lifespan"}, receive, send)
        assert [m["type"] for m in sent] == [
            "lifespan.startup.complete",
            "lifespan.shutdown.complete",
        ]
        await app({"type": "websocket"}, receive, send)
        assert len(sent) == 2  # not ours: nothing said

    run(scenario())


@pytest.mark.parametrize("delay", [0.0, -1.0])
def test_a_wait_past_its_deadline_returns_at_once(delay: float) -> None:
    from sse_sansio.durable._asgi import _Wakeup

    async def scenario() -> None:
        wakeup = _Wakeup()
        event = wakeup.event("/p")
        await asyncio.wait_for(wakeup.wait("/p", event, delay), GUARD)
        wakeup.release("/p", event)  # already forgotten: nothing happens
        wakeup.notify("/p")  # nobody waits: nothing happens
        # Two readers share one event; one leaving keeps it for the other.
        first, second = wakeup.event("/q"), wakeup.event("/q")
        assert first is second
        wakeup.release("/q", first)
        wakeup.notify("/q")
        assert second.is_set()

    run(scenario())
