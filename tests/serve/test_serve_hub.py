"""The hub served by the adapters, and the serving pump's fourth-contact fixes (issue 40,
items 3-6; issue 41, items 1-3 and 5), driven as ASGI apps by hand (a ``receive`` and a
``send`` of the test's own, so each path is forced deterministically) and, for aiohttp,
under its test server on loopback.

Wall-clock-free: every wait is for a fact, under a generous guard.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any, cast

import httpx
import pytest
from aiohttp import web

from sse_sansio import Comment, Event, Hub, ReplayWindow, StreamCut
from sse_sansio._serve import _pump
from sse_sansio._serve._options import Options
from sse_sansio.aiohttp import serve, serve_hub
from sse_sansio.asgi import EventStreamResponse, HubResponse, IncompleteResponseFilter
from tests.serve.test_asgi import GUARD, Client, Message, Watched, events

pytestmark = pytest.mark.filterwarnings("error")


def query(text: str) -> Client:
    client = Client()
    scope: dict[str, Any] = client.scope
    scope["query_string"] = text.encode()
    return client


async def until(check: Any) -> None:
    async def wait() -> None:
        while not check():
            await asyncio.sleep(0.001)

    await asyncio.wait_for(wait(), GUARD)


# --- HubResponse --------------------------------------------------------------------------


def test_a_hub_response_writes_what_is_published_to_its_channels_and_ends_on_close() -> None:
    async def main() -> Client:
        hub = Hub(max_buffer=10_000, now=time.monotonic())
        client = Client()
        task = asyncio.ensure_future(client.run(HubResponse(hub, channels=["a"], keepalive=None)))
        await until(lambda: len(hub.subscribers) == 1)
        hub.publish(Event(data="1"), time.monotonic(), channel="a")
        hub.publish(Event(data="other"), time.monotonic(), channel="b")
        await until(lambda: client.body())
        hub.publish(Event(data="2"), time.monotonic(), channel="a")
        hub.close(time.monotonic())
        await task
        assert hub.subscribers == ()
        return client

    client = asyncio.run(main())
    assert client.messages[0]["status"] == 200
    assert client.body() == b"data: 1\n\ndata: 2\n\n"
    assert client.completed()


def test_a_hub_response_resumes_from_the_query_parameter_and_the_header_wins() -> None:
    async def main() -> tuple[Client, Client]:
        window = ReplayWindow()
        hub = Hub(max_buffer=10_000, window=window, now=time.monotonic())
        first = hub.publish(Event(data="1"), time.monotonic(), channel="a")
        hub.publish(Event(data="2"), time.monotonic(), channel="a")
        second = hub.publish(Event(data="3"), time.monotonic(), channel="b")
        hub.close(time.monotonic())
        by_query = query(f"x=1&last_event_id={first}")
        await by_query.run(HubResponse(hub, channels=["a", "b"]))
        both = query(f"last_event_id={first}")
        both.scope["headers"] = [(b"last-event-id", str(second).encode())]
        await both.run(HubResponse(hub))
        return by_query, both

    by_query, both = asyncio.run(main())
    assert b"data: 2\n" in by_query.body()
    assert b"data: 3\n" in by_query.body()
    assert b"data: 1\n" not in by_query.body()
    assert by_query.completed()
    assert both.messages[0]["status"] == 204  # the header: nothing after "3", finished
    assert both.body() == b""


def test_a_finished_hub_answers_204_and_a_cut_one_too() -> None:
    async def main(cut: bool) -> Client:
        hub = Hub(max_buffer=100, window=ReplayWindow(), now=0.0)
        ident = hub.publish(Event(data="1"), 0.0)
        hub.close(0.0, cut=cut)
        client = Client([(b"last-event-id", str(ident).encode())])
        await client.run(HubResponse(hub))
        return client

    for cut in (False, True):
        client = asyncio.run(main(cut))
        assert client.messages[0]["status"] == 204
        assert client.completed()


def test_a_subscriber_that_never_reads_is_dropped_and_cut(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def main() -> Client:
        hub = Hub(max_buffer=100, now=time.monotonic())
        client = Client()
        client.stuck = True
        task = asyncio.ensure_future(client.run(HubResponse(hub, keepalive=None)))
        await until(lambda: len(hub.subscribers) == 1)
        hub.publish(Event(data="x" * 60), time.monotonic())
        await until(lambda: client.wrote.is_set())
        for _ in range(3):
            hub.publish(Event(data="y" * 60), time.monotonic())
        await task
        assert hub.subscribers == ()
        return client

    with caplog.at_level(logging.WARNING, logger="sse_sansio.serve"):
        client = asyncio.run(main())
    assert not client.completed()
    assert caplog.text.count("fell more than max_buffer bytes behind") == 1


def test_a_disconnect_unsubscribes() -> None:
    async def main() -> None:
        hub = Hub(max_buffer=100, now=time.monotonic())
        client = Client()
        task = asyncio.ensure_future(client.run(HubResponse(hub)))
        await until(lambda: len(hub.subscribers) == 1)
        client.gone.set()
        await task
        assert hub.subscribers == ()
        assert not client.completed()

    asyncio.run(main())


def test_publishing_from_another_thread_through_the_loop_works() -> None:
    async def main() -> Client:
        hub = Hub(max_buffer=10_000, now=time.monotonic())
        client = Client()
        task = asyncio.ensure_future(client.run(HubResponse(hub, keepalive=None)))
        await until(lambda: len(hub.subscribers) == 1)
        loop = asyncio.get_running_loop()

        def publish(data: str) -> None:
            hub.publish(Event(data=data), time.monotonic())

        def producer() -> None:  # the documented way: hand the call to the loop
            for number in range(3):
                loop.call_soon_threadsafe(publish, str(number))
            loop.call_soon_threadsafe(lambda: hub.close(time.monotonic()))

        thread = threading.Thread(target=producer)
        thread.start()
        await task
        thread.join()
        return client

    client = asyncio.run(main())
    assert client.body() == b"data: 0\n\ndata: 1\n\ndata: 2\n\n"
    assert client.completed()


def test_hub_response_options() -> None:
    with pytest.raises(TypeError, match=r"HubResponse: unknown option\(s\) max_buffer"):
        HubResponse(Hub(max_buffer=1, now=time.monotonic()), max_buffer=10)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="hub must be a Hub"):
        HubResponse(object())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="query_cursor"):
        HubResponse(Hub(max_buffer=1, now=time.monotonic()), query_cursor="")
    with pytest.raises(ValueError, match="max_lifetime"):
        EventStreamResponse([], max_lifetime=0)
    with pytest.raises(ValueError, match="status_code"):
        EventStreamResponse([], status_code=99)


def test_query_cursor_none_reads_the_header_only() -> None:
    async def main() -> Client:
        window = ReplayWindow()
        first = window.append(Event(data="1")).id
        window.append(Event(data="2"))

        async def nothing() -> AsyncIterator[Event]:
            return
            yield

        client = query(f"last_event_id={first}")
        await client.run(EventStreamResponse(nothing(), window=window, query_cursor=None))
        return client

    assert asyncio.run(main()).body() == b""


# --- EventStreamResponse: the cursor, 204, the unknown ID ---------------------------------


class Tracked:
    """An async source that says whether it was started and closed."""

    def __init__(self, *texts: str) -> None:
        self.texts = texts
        self.started = False
        self.closed = False

    async def gen(self) -> AsyncIterator[Event]:
        self.started = True
        try:
            for text in self.texts:
                yield Event(data=text)
        finally:
            self.closed = True


def test_a_finished_window_is_answered_from_the_window_alone() -> None:
    async def main() -> tuple[Client, Client, Tracked, Tracked]:
        window = ReplayWindow()
        first = window.append(Event(data="1")).id
        last = window.append(Event(data="2")).id
        window.close()
        rest, none = Tracked("new"), Tracked("new")
        with_rest = query(f"last_event_id={first}")
        await with_rest.run(EventStreamResponse(rest.gen(), window=window))
        nothing_left = Client([(b"last-event-id", last.encode())])
        await nothing_left.run(EventStreamResponse(none.gen(), window=window))
        await asyncio.sleep(0)
        return with_rest, nothing_left, rest, none

    with_rest, nothing_left, rest, none = asyncio.run(main())
    assert with_rest.messages[0]["status"] == 200
    assert b"data: 2\n" in with_rest.body()
    assert with_rest.completed()
    assert nothing_left.messages[0]["status"] == 204
    assert not rest.started
    assert not none.started


def test_a_finished_window_closes_a_sync_source_unread_and_takes_any_iterable() -> None:
    closed: list[bool] = []

    def items() -> Iterator[Event]:
        try:
            yield Event(data="never")
        finally:
            closed.append(True)

    async def main() -> list[int]:
        window = ReplayWindow()
        window.close()
        statuses = []
        for source in (items(), [Event(data="x")]):
            gen = source
            if isinstance(gen, Iterator):
                next(iter([None]))
            client = Client()
            await client.run(EventStreamResponse(gen, window=window))
            statuses.append(client.messages[0]["status"])
        return statuses

    assert asyncio.run(main()) == [204, 204]


def test_an_unknown_cursor_starts_with_the_gap_event() -> None:
    async def main() -> Client:
        window = ReplayWindow()
        window.append(Event(data="old"))
        client = Client([(b"last-event-id", b"someone-elses-7")])
        await client.run(EventStreamResponse(Tracked("live").gen(), window=window))
        return client

    body = asyncio.run(main()).body()
    assert body.startswith(b'event: sse_sansio.gap\ndata: {"dropped": null}\n\n')
    assert b"data: live\n" in body


# --- issue 41, items 1-3: what a source does ----------------------------------------------


def test_a_source_that_raises_cancelled_error_unasked_is_a_prompt_cut(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def source() -> AsyncIterator[Event]:
        yield Event(data="1")
        raise asyncio.CancelledError

    client = Client()
    with caplog.at_level(logging.WARNING, logger="sse_sansio.serve"):
        asyncio.run(client.run(EventStreamResponse(source(), keepalive=0.01)))
    # (on a busy machine a keepalive may come before the first event)
    assert client.body().replace(b":\n", b"") == b"data: 1\n\n"
    assert not client.completed()
    assert "CancelledError" in caplog.text


def test_a_base_exception_from_the_source_cuts_promptly() -> None:
    class Stop(BaseException):
        pass

    async def source() -> AsyncIterator[Event]:
        yield Event(data="1")
        raise Stop

    client = Client()
    asyncio.run(client.run(EventStreamResponse(source(), keepalive=0.01)))
    assert client.body() == b"data: 1\n\n"
    assert not client.completed()


def test_a_keyboard_interrupt_in_the_source_goes_through() -> None:
    async def source() -> AsyncIterator[Event]:
        yield Event(data="1")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        asyncio.run(Client().run(EventStreamResponse(source(), keepalive=0.01)))


def test_a_burst_larger_than_max_buffer_reaches_a_fast_reader_whole() -> None:
    async def burst() -> AsyncIterator[Event | Comment | bytes]:
        for number in range(1030):  # never awaits: the writer gets no turn by itself
            yield Event(data=f"{number:04}" + "x" * 1020)
            yield Comment(text="c" * 100)
            yield b": raw\n\n"

    client = Client()
    asyncio.run(client.run(EventStreamResponse(burst(), max_buffer=64 * 1024)))
    assert client.completed()
    assert client.body().count(b"data: ") == 1030


def test_sync_sources_run_on_the_adapters_own_threads() -> None:
    names: list[str] = []

    def source() -> Iterator[Event]:
        names.append(threading.current_thread().name)
        yield Event(data="1")

    client = Client()
    asyncio.run(client.run(EventStreamResponse(source())))
    assert client.body() == b"data: 1\n\n"
    assert names[0].startswith("sse_sansio-source")
    assert _pump.SYNC_SOURCE_THREADS >= 1


# --- issue 40, item 6: a connection is not the stream ------------------------------------


def test_max_lifetime_ends_the_connection_as_a_cut_and_the_stream_goes_on() -> None:
    async def main() -> tuple[Client, ReplayWindow]:
        window = ReplayWindow()
        gate = asyncio.Event()

        async def source() -> AsyncIterator[Event]:
            yield Event(data="1")
            await gate.wait()
            yield Event(data="2")

        client = Client()
        app = EventStreamResponse(
            source(), window=window, max_lifetime=0.05, on_disconnect="detach"
        )
        await client.run(app)
        gate.set()
        await until(lambda: window.resume(window.priming(from_start=True).id).finished)
        return client, window

    client, window = asyncio.run(main())
    assert client.body().count(b"data: ") == 1
    assert not client.completed()
    replay = window.resume(window.priming(from_start=True).id)
    assert [e.data for e in replay.events] == ["1", "2"]


def test_stop_all_stops_every_open_response_after_its_frames() -> None:
    async def main() -> tuple[Client, Client, int]:
        hub = Hub(max_buffer=10_000, now=time.monotonic())
        clients = [Client(), Client()]
        tasks = [asyncio.ensure_future(c.run(HubResponse(hub))) for c in clients]
        await until(lambda: len(hub.subscribers) == 2)
        hub.publish(Event(data="last"), time.monotonic())
        stopped = _pump.stop_all()
        assert _pump.stop_all() == 2  # a second stop before they ended changes nothing
        await asyncio.gather(*tasks)
        return clients[0], clients[1], stopped

    first, second, stopped = asyncio.run(main())
    assert stopped == 2
    for client in (first, second):
        assert client.body() == b"data: last\n\n"
        assert not client.completed()


def test_the_shutdown_handler_stops_responses_then_calls_the_servers_own() -> None:
    calls: list[int] = []
    previous = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, lambda signum, frame: calls.append(signum))
    try:
        _pump.watch_shutdown()
        _pump.watch_shutdown()  # once: not wrapped twice
        handler = signal.getsignal(signal.SIGTERM)
        assert isinstance(handler, _pump._Chained)
        assert not isinstance(handler.previous, _pump._Chained)
        handler(signal.SIGTERM, None)  # no loop runs: stop_all() at once
        assert calls == [signal.SIGTERM]

        async def in_loop() -> None:
            handler(signal.SIGTERM, None)
            await asyncio.sleep(0)

        asyncio.run(in_loop())
        assert calls == [signal.SIGTERM, signal.SIGTERM]
    finally:
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, signal.default_int_handler)


def test_a_default_disposition_is_restored_and_the_signal_raised_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    raised: list[int] = []
    set_to: list[object] = []
    monkeypatch.setattr(signal, "raise_signal", raised.append)
    monkeypatch.setattr(signal, "signal", lambda signum, handler: set_to.append(handler))
    _pump._Chained(signal.SIG_DFL)(signal.SIGUSR1, None)
    _pump._Chained(signal.SIG_IGN)(signal.SIGUSR1, None)
    assert raised == [signal.SIGUSR1]
    assert set_to == [signal.SIG_DFL]


def test_watching_shutdown_from_another_thread_does_nothing() -> None:
    before = signal.getsignal(signal.SIGTERM)
    thread = threading.Thread(target=_pump.watch_shutdown)
    thread.start()
    thread.join()
    assert signal.getsignal(signal.SIGTERM) is before


# --- aiohttp: serve_hub, the cursor, 204 --------------------------------------------------


@pytest.mark.slow  # a live server
def test_aiohttp_serves_a_hub_resumes_from_the_query_and_answers_204() -> None:
    async def main() -> None:
        window = ReplayWindow()
        hub = Hub(max_buffer=10_000, window=window, now=time.monotonic())

        async def handler(request: web.Request) -> web.StreamResponse:
            return await serve_hub(request, hub, channels=["a"], keepalive=None)

        async def finished(request: web.Request) -> web.StreamResponse:
            return await serve(request, Tracked("x").gen(), window=window)

        app = web.Application()
        app.router.add_get("/", handler)
        app.router.add_get("/once", finished)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        url = f"http://127.0.0.1:{port}"
        try:
            first = hub.publish(Event(data="1"), time.monotonic(), channel="a")
            async with httpx.AsyncClient(timeout=GUARD) as http:
                async with http.stream("GET", f"{url}/?last_event_id={first}") as response:
                    await until(lambda: len(hub.subscribers) == 1)
                    hub.publish(Event(data="2"), time.monotonic(), channel="a")
                    hub.publish(Comment(text="b"), time.monotonic(), channel="b")
                    hub.close(time.monotonic())
                    body = await response.aread()
                assert b"data: 2\n" in body
                assert b"data: 1\n" not in body
                ended = await http.get(url, headers={"Last-Event-ID": str(hub_last(window))})
                assert ended.status_code == 204
                done = await http.get(f"{url}/once")
                assert done.status_code == 204
        finally:
            await runner.cleanup()

    asyncio.run(main())


def hub_last(window: ReplayWindow) -> str:
    return window.priming().id


def test_a_stop_sends_the_frames_held_for_coalescing_first() -> None:
    async def main() -> Client:
        hub = Hub(max_buffer=10_000, now=time.monotonic())
        client = Client()
        app = HubResponse(hub, keepalive=None, coalesce_delay=GUARD)
        task = asyncio.ensure_future(client.run(app))
        await until(lambda: len(hub.subscribers) == 1)
        hub.publish(Event(data="held"), time.monotonic())
        await asyncio.sleep(0)
        assert client.body() == b""
        _pump.stop_all()
        await task
        return client

    client = asyncio.run(main())
    assert client.body() == b"data: held\n\n"
    assert not client.completed()


def test_serve_hub_takes_a_hub_only() -> None:
    async def main() -> None:
        with pytest.raises(TypeError, match="serve_hub: hub must be a Hub"):
            await serve_hub(None, object())  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=r"serve_hub: unknown option\(s\) window"):
            await serve_hub(None, Hub(max_buffer=1, now=0.0), window=None)  # type: ignore[arg-type,call-arg]

    asyncio.run(main())


def test_held_frames_due_before_the_keepalive_wake_the_writer_in_time() -> None:
    async def main() -> Client:
        hub = Hub(max_buffer=10_000, now=time.monotonic())
        client = Client()
        app = HubResponse(hub, keepalive=GUARD, coalesce_delay=0.01)
        task = asyncio.ensure_future(client.run(app))
        await until(lambda: len(hub.subscribers) == 1)
        await asyncio.sleep(0.01)  # the writer sleeps on its keepalive timer
        hub.publish(Event(data="a"), time.monotonic())
        hub.publish(Event(data="b"), time.monotonic())
        await until(lambda: client.body())
        hub.close(time.monotonic())
        await task
        return client

    client = asyncio.run(main())
    assert client.body() == b"data: a\n\ndata: b\n\n"
    assert client.completed()


@pytest.mark.slow  # a live server
def test_the_filter_drops_uvicorns_line_for_our_cuts_only(
    caplog: pytest.LogCaptureFixture,
) -> None:
    import uvicorn

    async def cut_source() -> AsyncIterator[Event]:
        yield Event(data="1")
        raise StreamCut("the upstream went away")

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        if scope["path"] == "/ours":
            await EventStreamResponse(cut_source())(scope, receive, send)
            return
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"x", "more_body": True})

    async def main() -> None:
        config = uvicorn.Config(  # (an earlier test may have set its loggers' level higher)
            app, host="127.0.0.1", port=0, lifespan="off", log_config=None, log_level="warning"
        )
        server = uvicorn.Server(config)
        task = asyncio.ensure_future(server.serve())
        while not server.started:
            await asyncio.sleep(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]
        try:
            async with httpx.AsyncClient(timeout=GUARD) as http:
                for path in ("/ours", "/theirs", "/ours"):
                    with pytest.raises(httpx.RemoteProtocolError):
                        await http.get(f"http://127.0.0.1:{port}{path}")
        finally:
            server.should_exit = True
            await asyncio.wait_for(task, GUARD)

    # The server's lines are read by a handler on its own logger: an earlier test's
    # uvicorn may have configured that logger not to propagate to the root's.
    server_log = logging.getLogger("uvicorn.error")
    seen: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record)

    handler = Keep(logging.WARNING)
    quiet = IncompleteResponseFilter()
    server_log.addFilter(quiet)
    server_log.addHandler(handler)
    try:
        with caplog.at_level(logging.WARNING):
            asyncio.run(main())
    finally:
        server_log.removeFilter(quiet)
        server_log.removeHandler(handler)
    lines = [r.getMessage() for r in seen]
    assert lines == ["ASGI callable returned without completing response."]  # theirs
    ours = [r for r in caplog.records if r.name == "sse_sansio.serve"]
    assert [r.levelname for r in ours] == ["WARNING", "WARNING"]  # one line per cut


def test_a_hub_burst_is_written_as_it_is_published_and_past_a_stuck_write_drops_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Issue 40, item 8: a publish writes to an idle subscriber at once (no turn on the
    # loop needed), so a burst that never lets the loop run, three times max_buffer,
    # reaches a reading client whole; the same burst behind a write the client never
    # takes fills the queue past max_buffer and drops it.
    async def main(stuck: bool) -> tuple[Client, Hub]:
        hub = Hub(max_buffer=100, now=time.monotonic())
        client = Client()
        client.stuck = stuck
        task = asyncio.ensure_future(client.run(HubResponse(hub, keepalive=None)))
        await until(lambda: len(hub.subscribers) == 1)
        for number in range(5):
            hub.publish(Event(data=f"{number}" * 60), time.monotonic())
        if not stuck:
            assert len(hub.subscribers) == 1
            hub.close(time.monotonic())
        await task
        return client, hub

    with caplog.at_level(logging.WARNING, logger="sse_sansio.serve"):
        reading, _ = asyncio.run(main(stuck=False))
    assert reading.body() == b"".join(b"data: " + str(n).encode() * 60 + b"\n\n" for n in range(5))
    assert reading.completed()
    assert "fell more than max_buffer" not in caplog.text
    with caplog.at_level(logging.WARNING, logger="sse_sansio.serve"):
        stuck, hub = asyncio.run(main(stuck=True))
    assert stuck.body() == b"data: " + b"0" * 60 + b"\n\n"  # the write that never returned
    assert not stuck.completed()
    assert hub.subscribers == ()
    assert caplog.text.count("fell more than max_buffer bytes behind") == 1


# --- writes that wait (issue 40, item 8: an event is written by whoever queued it) ------


class Gated(Client):
    """A client whose body writes wait on ``gates``, one per write in turn (None: the
    write returns at once), before they are taken."""

    def __init__(self, gates: list[asyncio.Event | None]) -> None:
        super().__init__()
        self.gates = gates

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.body" and self.gates:
            gate = self.gates.pop(0)
            if gate is not None:
                await gate.wait()
        await super().send(message)


def test_a_write_that_waits_is_finished_in_order_while_the_source_goes_on() -> None:
    # The first write waits (a full transport): it is handed over, the source is read
    # on meanwhile, and what it queued follows the write once it is done.
    async def main() -> Client:
        gate = asyncio.Event()
        client = Gated([gate])
        read: list[str] = []

        async def source() -> AsyncIterator[Event]:
            for text in ("a", "b", "c"):
                read.append(text)
                yield Event(data=text)

        task = asyncio.ensure_future(client.run(EventStreamResponse(source(), keepalive=0.001)))
        await until(lambda: read == ["a", "b", "c"])  # while "a" waits
        assert client.body() == b""
        await asyncio.sleep(0.02)  # the keepalive timer rings: the writer sleeps on
        gate.set()
        await task
        return client

    client = asyncio.run(main())
    assert client.body() == b"data: a\n\ndata: b\n\ndata: c\n\n"
    assert client.completed()


def test_a_writers_own_write_that_never_returns_is_interrupted_by_a_slow_stream(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def main() -> Client:
        gate = asyncio.Event()
        client = Gated([gate, asyncio.Event()])  # the second write never returns
        hub = Hub(max_buffer=100, now=time.monotonic())
        task = asyncio.ensure_future(client.run(HubResponse(hub, keepalive=None)))
        await until(lambda: len(hub.subscribers) == 1)
        hub.publish(Event(data="1" * 60), time.monotonic())  # handed over, waits
        hub.publish(Event(data="2" * 60), time.monotonic())  # queued behind it
        gate.set()
        await until(lambda: not client.gates)  # the writer writes "2" itself: stuck
        hub.publish(Event(data="3" * 60), time.monotonic())
        hub.publish(Event(data="4" * 60), time.monotonic())  # past max_buffer: slow
        await task
        assert hub.subscribers == ()
        return client

    with caplog.at_level(logging.WARNING, logger="sse_sansio.serve"):
        client = asyncio.run(main())
    assert client.body() == b"data: " + b"1" * 60 + b"\n\n"
    assert not client.completed()
    assert caplog.text.count("fell more than max_buffer bytes behind") == 1


def test_a_stop_lets_a_waiting_write_unwind_then_sends_the_whole_frames() -> None:
    async def main() -> Client:
        client = Gated([asyncio.Event()])  # the first write never returns
        hub = Hub(max_buffer=10_000, now=time.monotonic())
        task = asyncio.ensure_future(client.run(HubResponse(hub, keepalive=None)))
        await until(lambda: len(hub.subscribers) == 1)
        hub.publish(Event(data="1"), time.monotonic())
        hub.publish(Event(data="2"), time.monotonic())
        assert _pump.stop_all() == 1
        await task
        return client

    client = asyncio.run(main())
    assert client.body() == b"data: 2\n\n"  # "1" never went: its write was cancelled
    assert not client.completed()


class Yielding(Client):
    """A client whose body writes first let the loop run (as a middleware's
    checkpoint), then fail with ``failure`` if set."""

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.body":
            await asyncio.sleep(0)
        await super().send(message)


def test_a_write_that_yields_to_the_loop_is_finished_by_its_own_task() -> None:
    client = Yielding()
    asyncio.run(client.run(EventStreamResponse(events("a", "b", "c"))))
    assert client.body() == b"data: a\n\ndata: b\n\ndata: c\n\n"
    assert client.completed()


def test_a_waiting_write_that_fails_ends_the_response_as_its_own_write_would() -> None:
    gone = Yielding()
    gone.failure = ConnectionResetError("gone")  # an OSError: the client is gone
    asyncio.run(gone.run(EventStreamResponse(events("a", "b"))))
    assert not gone.completed()
    broken = Yielding()
    broken.failure = RuntimeError("the server's own bug")
    with pytest.raises(RuntimeError, match="the server's own bug"):
        asyncio.run(broken.run(EventStreamResponse(events("a", "b"))))


def test_a_send_that_returns_a_future_is_awaited() -> None:
    # ASGI asks for an awaitable, not a coroutine.
    client = Client()

    def send(message: Any) -> asyncio.Future[None]:
        client.messages.append(message)
        done = asyncio.get_running_loop().create_future()
        done.set_result(None)
        return done

    async def main() -> None:
        app = EventStreamResponse(events("a", "b"))
        await asyncio.wait_for(app(client.scope, client.receive, send), GUARD)

    asyncio.run(main())
    assert client.body() == b"data: a\n\ndata: b\n\n"
    assert client.completed()


def test_frames_held_for_coalescing_go_before_an_item_that_would_pass_max_buffer() -> None:
    # The queue holds a frame (coalescing) when an item comes that could take it past
    # max_buffer: the feeder waits for the writer to hand it out (a burst is not slow).
    async def source() -> AsyncIterator[Event | Comment | bytes]:
        yield Event(data="x" * 60)
        yield Comment(text="c" * 60)
        yield b": " + b"r" * 57 + b"\n"
        yield Event(data="y" * 60)

    client = Client()
    app = EventStreamResponse(source(), coalesce_delay=0.01, max_buffer=100, keepalive=None)
    asyncio.run(client.run(app))
    x, c, r, y = b"x" * 60, b"c" * 60, b"r" * 57, b"y" * 60
    assert client.body() == b"data: " + x + b"\n\n: " + c + b"\n: " + r + b"\ndata: " + y + b"\n\n"
    assert client.completed()


def test_a_publish_from_inside_a_write_goes_after_it() -> None:
    # A write runs in whoever published (issue 40, item 8); a send() that publishes
    # again (a middleware's own notice) must not start a second write inside the first.
    async def main() -> Client:
        hub = Hub(max_buffer=10_000, now=time.monotonic())
        client = Client()
        sent = client.send

        async def send(message: Message) -> None:
            await sent(message)
            if message.get("body") == b"data: 1\n\n":
                hub.publish(Event(data="nested"), time.monotonic())
                assert client.body() == b"data: 1\n\n"  # not written inside the write

        client.send = send  # type: ignore[method-assign]
        task = asyncio.ensure_future(client.run(HubResponse(hub, keepalive=None)))
        await until(lambda: len(hub.subscribers) == 1)
        hub.publish(Event(data="1"), time.monotonic())
        await until(lambda: b"nested" in client.body())
        hub.close(time.monotonic())
        await task
        return client

    client = asyncio.run(main())
    assert client.body() == b"data: 1\n\ndata: nested\n\n"
    assert client.completed()


# --- an idle response holds no task of its own (issue 40, item 8) ------------------------


def started(app: Any, client: Client) -> asyncio.Task[None]:
    """The app's task, as a server starts it (no task of the test's between)."""
    return asyncio.ensure_future(app(client.scope, client.receive, client.send))


def test_an_idle_response_awaits_the_disconnect_in_the_apps_own_task() -> None:
    # The app's task awaits receive() itself: while idle, a hub response runs no task
    # beside it, and a source's response only its feeder.  The disconnect still ends
    # both at once.
    async def main() -> None:
        hub = Hub(max_buffer=10_000, now=time.monotonic())
        hub_client, source_client, source = Client(), Client(), Watched()
        before = asyncio.all_tasks()
        served = started(HubResponse(hub), hub_client)
        fed = started(EventStreamResponse(source), source_client)
        await until(lambda: len(hub.subscribers) == 1 and source_client.body())
        extra = asyncio.all_tasks() - before - {served, fed}
        assert [cast(Any, task.get_coro()).__qualname__ for task in extra] == ["Pump._feed"]
        hub_client.gone.set()
        source_client.gone.set()
        await asyncio.wait_for(asyncio.gather(served, fed), GUARD)
        assert hub.subscribers == ()
        assert source.cancelled

    asyncio.run(main())


def test_a_receive_that_raises_ends_the_response_and_the_server_sees_the_error() -> None:
    class Broken(Client):
        async def receive(self) -> Message:
            if not self.requested:
                return await super().receive()
            await asyncio.sleep(0)
            raise RuntimeError("the server's receive broke")

    async def main() -> None:
        client, source = Broken(), Watched()
        with pytest.raises(RuntimeError, match="receive broke"):
            await client.run(EventStreamResponse(source))
        assert source.cancelled

    asyncio.run(main())


def test_a_cancellation_from_outside_goes_through_even_as_the_response_ends() -> None:
    # The server cancels the app's task in the same turn as the stream ends (which
    # interrupts that task too): the server's cancellation is not taken back.
    async def main() -> None:
        hub = Hub(max_buffer=10_000, now=time.monotonic())
        client = Client()
        task = started(HubResponse(hub), client)
        await until(lambda: len(hub.subscribers) == 1)
        hub.close(time.monotonic())  # the response is over: the app's task is told
        task.cancel()  # and the server cancels it
        with pytest.raises(asyncio.CancelledError):
            await task
        assert hub.subscribers == ()
        assert not client.completed()

    asyncio.run(main())


def test_without_keepalives_each_event_is_written_as_it_comes() -> None:
    # No timer is armed (no keepalive, no lifetime): each write looks again itself.
    client = Client()
    asyncio.run(client.run(EventStreamResponse(events("a", "b", "c"), keepalive=None)))
    assert client.body() == b"data: a\n\ndata: b\n\ndata: c\n\n"
    assert client.completed()


def test_the_lifetime_ends_an_idle_response_without_any_write() -> None:
    # No keepalive: the only deadline is the lifetime's, on the response's one timer.
    async def main() -> Client:
        client = Client()
        hub = Hub(max_buffer=10_000, now=time.monotonic())
        await client.run(HubResponse(hub, keepalive=None, max_lifetime=0.01))
        assert hub.subscribers == ()
        return client

    client = asyncio.run(main())
    assert client.body() == b""
    assert not client.completed()


# --- the loop's one heap of deadlines (issue 40, item 8) -----------------------------------


class Rung(_pump.Pump):
    """A pump that records its ring (and may run ``then`` at it)."""

    def __init__(self, name: str, log: list[str]) -> None:
        super().__init__(None, Options(), source=None)
        self.name = name
        self.log = log
        self.then: Any = None

    def _ring(self) -> None:
        self.log.append(self.name)
        if self.then is not None:
            self.then()


def test_the_deadlines_ring_in_order_and_a_cancelled_one_never() -> None:
    async def main() -> list[str]:
        timers = _pump._timers_of(asyncio.get_running_loop())
        log: list[str] = []
        now = time.monotonic()
        timers.add(now + 0.02, Rung("second", log))
        dropped = timers.add(now + 0.01, Rung("dropped", log))
        timers.add(now + 0.03, Rung("third", log))
        timers.add(now + 0.015, Rung("first", log))
        timers.cancel(dropped)
        await until(lambda: len(log) == 3)
        await asyncio.sleep(0.02)
        assert timers.heap == []
        assert timers.stale == 0  # the cancelled entry was taken out when it came due
        return log

    assert asyncio.run(main()) == ["first", "second", "third"]


def test_a_heap_mostly_cancelled_is_rebuilt_of_its_live_entries() -> None:
    async def main() -> None:
        timers = _pump._timers_of(asyncio.get_running_loop())
        later = time.monotonic() + 3600
        entries = [timers.add(later + n, Rung(f"{n}", [])) for n in range(200)]
        for entry in entries[:150]:
            timers.cancel(entry)
        assert len(timers.heap) < 200  # rebuilt
        live = [entry for entry in timers.heap if entry.pump is not None]
        assert sorted(live, key=lambda e: e.when) == entries[150:]
        assert len(timers.heap) - timers.stale == 50
        for entry in entries[150:]:
            timers.cancel(entry)

    asyncio.run(main())


def test_an_entry_cancelled_by_an_earlier_ring_of_the_same_turn_does_not_ring() -> None:
    # Two deadlines due at one ring; the first to ring re-arms the other (cancels its
    # entry, as a pump arming an earlier deadline does): the other does not ring.
    async def main() -> list[str]:
        timers = _pump._timers_of(asyncio.get_running_loop())
        log: list[str] = []
        one, two = Rung("one", log), Rung("two", log)
        when = time.monotonic() + 0.01
        entries = {one: timers.add(when, one), two: timers.add(when, two)}
        one.then = lambda: timers.cancel(entries[two])
        two.then = lambda: timers.cancel(entries[one])
        await until(lambda: log)
        await asyncio.sleep(0.02)
        return log

    assert len(asyncio.run(main())) == 1


def test_a_receive_that_swallows_the_interruption_still_lets_the_response_end() -> None:
    # A server's receive() that catches CancelledError and returns a message: the
    # response, once over, ends all the same (and the app's task is not left cancelled).
    class Swallowing(Client):
        async def receive(self) -> Message:
            if not self.requested:
                return await super().receive()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.Event().wait()
            return {"type": "http.request", "body": b"", "more_body": False}

    async def main() -> Client:
        client = Swallowing()
        app = started(EventStreamResponse(events("a", "b")), client)
        await asyncio.wait_for(asyncio.shield(app), GUARD)
        assert not app.cancelling()  # (taken back)
        return client

    client = asyncio.run(main())
    assert client.body() == b"data: a\n\ndata: b\n\n"
    assert client.completed()
