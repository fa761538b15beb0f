"""The serving pump and the hub against their floors (issue 40, item 8): ratios in one run.

Run ``python benchmarks/serving.py`` (``--events N``, ``--rounds N``, ``--quick``,
``--no-live``).  It needs uvicorn with httptools and uvloop, and sse-starlette, for the
live part (benchmarks/requirements.txt).

In-process (CPU time of this thread, medians of interleaved rounds, as resume.py):

- **fan-out**: ``Hub.publish`` of one ~100-byte event to 1,000 subscribers of one
  channel, against a loop appending the same bytes object to 1,000 deques.  Target: at
  most 2x.  Beside it (no target), the same publish followed by each subscriber's
  ``data_to_send()``, against those appends and a popleft from each deque.
- **nobody reads**: ``Hub.publish`` to a channel nobody reads while 10,000 subscribers
  read other channels, against a dict look-up plus one append to a list (the log).
  Target: at most 3x.  With a window the append is the window's (ReplayWindow.append),
  against a dict look-up plus that same append.

Live (uvicorn in a subprocess on a free loopback port, one client in this process
reading raw bytes; the measure is the *server process's* CPU time per event, from
/proc, so the client's work does not count):

- **raw**: the floor, a plain ASGI app that ``send()``s one pre-encoded ~100-byte frame
  per event;
- **EventStreamResponse**: an async source of the same events as :class:`Event` (one
  Event object, as the floor sends one bytes object and the hub publishes one event:
  making an Event, about 1 us, is the app's work, whatever serves it);
- **HubResponse**: a hub per request, a task publishing the same events to it, then
  closing it;
- **sse-starlette**: its ``EventSourceResponse`` over the same events as dicts.

Each producer lets the loop run after every event (``await asyncio.sleep(0)``), as a
live producer hands events one at a time: so every event is its own write on every
side (a burst would let ours write many events at once, which the floor cannot).

Each under uvicorn with httptools and uvloop, and with h11 and asyncio.  Targets (issue
40): ours at most 1.5x raw with httptools/uvloop, 1.3x with h11.  And the memory of an
idle response: the growth of the server's resident set from 300 to 1,200 idle
connections open, per connection (the slope: a count from none moved by 1 KB a
connection from run to run, with the heap's layout at start), for raw (an app that
sends the head and awaits the disconnect), ours and sse-starlette, whose idle sources
await a bare future (an ``asyncio.Event`` would add its own 0.7 KB, the app's, not the
server's).  The hub's idle response makes a Hub per request (as its live one does).
Target: at most 4 KB over raw.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import statistics
import subprocess
import sys
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))

from benchmarks.resume import timed  # noqa: E402
from sse_sansio import Event, Hub, ReplayWindow, serialize  # noqa: E402

Case = Callable[[], object]
DATA = '{"delta": "' + "x" * 80 + '"}'  # a ~100-byte frame: "data: {...}\n\n"
FRAME = serialize(Event(data=DATA))
KINDS = ("raw", "ours-source", "ours-hub", "sse-starlette")
IDLE_KINDS = ("raw", "ours-source", "ours-hub", "sse-starlette")


# --- in-process: the hub's publish ----------------------------------------------------


def fanout_cases(readers: int, count: int) -> dict[str, Case]:
    # The hub and the deques are made once, outside the cases: each case times its
    # ``count`` publishes only (the readers never read, and max_buffer is never reached).
    event = Event(data=DATA)
    hub = Hub(max_buffer=1 << 40, now=0.0)
    streams = [hub.subscribe(0.0, channels=["room"]) for _ in range(readers)]
    queues: list[deque[bytes]] = [deque() for _ in range(readers)]
    calls = {"hub": 0, "floor": 0}

    def hub_publish() -> None:
        for _ in range(count):
            hub.publish(event, 1.0, channel="room")
        calls["hub"] += 1
        assert streams[-1].buffered == calls["hub"] * count * len(FRAME)

    def floor() -> None:
        for _ in range(count):
            frame = serialize(event)
            for queue in queues:
                queue.append(frame)
        calls["floor"] += 1
        assert len(queues[-1]) == calls["floor"] * count

    # And each reader reading after each publish, as a writer does (the work a shared log
    # leaves to each reader's data_to_send()), against deque appends and poplefts.
    readers_hub = Hub(max_buffer=1 << 20, now=0.0)
    reading = [readers_hub.subscribe(0.0, channels=["room"]) for _ in range(readers)]

    def hub_read() -> None:
        for _ in range(count):
            readers_hub.publish(event, 1.0, channel="room")
            for stream in reading:
                stream.data_to_send(1.0)
        assert reading[-1].buffered == 0

    def read_floor() -> None:
        for _ in range(count):
            frame = serialize(event)
            for queue in queues:
                queue.append(frame)
            for queue in queues:
                queue.popleft()

    return {
        "fan-out: hub": hub_publish,
        "fan-out: floor": floor,
        "fan-out, read: hub": hub_read,
        "fan-out, read: floor": read_floor,
    }


def nobody_cases(readers: int, count: int) -> dict[str, Case]:
    event = Event(data=DATA)
    hub = Hub(max_buffer=1 << 20, now=0.0)
    for number in range(readers):
        hub.subscribe(0.0, channels=[f"user/{number}"])
    windowed = Hub(max_buffer=1 << 20, window=ReplayWindow(max_events=count), now=0.0)
    for number in range(readers):
        windowed.subscribe(0.0, channels=[f"user/{number}"])
    index: dict[str, dict[object, None]] = {f"user/{number}": {} for number in range(readers)}
    window = ReplayWindow(max_events=count)

    def plain() -> None:
        for _ in range(count):
            hub.publish(event, 1.0, channel="nobody")

    def floor() -> None:
        log: list[Event] = []
        for _ in range(count):
            index.get("nobody")
            log.append(event)

    def with_window() -> None:
        for _ in range(count):
            windowed.publish(event, 1.0, channel="nobody")

    def window_floor() -> None:
        for _ in range(count):
            index.get("nobody")
            window.append(event)

    return {
        "nobody: hub": plain,
        "nobody: floor": floor,
        "nobody: hub, window": with_window,
        "nobody: floor, window": window_floor,
    }


# --- live: the server's CPU per event ----------------------------------------------------


def app_for(kind: str, count: int) -> Any:
    """The ASGI app of one kind, streaming ``count`` events per request (0: idle)."""
    from sse_sansio.asgi import EventStreamResponse, HubResponse

    async def source() -> AsyncIterator[Event]:
        if not count:
            await asyncio.get_running_loop().create_future()  # idle: the least a source holds
        event = Event(data=DATA)  # made once, as the floor's frame and the hub's event
        for _ in range(count):
            yield event
            await asyncio.sleep(0)  # an event at a time, as a live producer hands them

    async def raw(scope: Any, receive: Any, send: Any) -> None:
        headers = [(b"content-type", b"text/event-stream; charset=utf-8")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        if not count:
            while (await receive())["type"] != "http.disconnect":
                pass
            return
        for _ in range(count):
            await send({"type": "http.response.body", "body": FRAME, "more_body": True})
            await asyncio.sleep(0)
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def hub_app(scope: Any, receive: Any, send: Any) -> None:
        hub = Hub(max_buffer=1 << 20, now=time.monotonic())

        async def publish() -> None:
            while not hub.subscribers:
                await asyncio.sleep(0)
            event = Event(data=DATA)
            for _ in range(count):
                hub.publish(event, time.monotonic())
                await asyncio.sleep(0)
            hub.close(time.monotonic())

        task = asyncio.ensure_future(publish()) if count else None
        await HubResponse(hub)(scope, receive, send)
        if task is not None:
            await task

    async def peer(scope: Any, receive: Any, send: Any) -> None:
        from sse_starlette.sse import EventSourceResponse

        async def dicts() -> AsyncIterator[dict[str, str]]:
            if not count:
                await asyncio.get_running_loop().create_future()  # idle: the least a source holds
            for _ in range(count):
                yield {"data": DATA}
                await asyncio.sleep(0)

        await EventSourceResponse(dicts(), ping=15)(scope, receive, send)

    if kind == "ours-source":

        async def ours(scope: Any, receive: Any, send: Any) -> None:
            await EventStreamResponse(source())(scope, receive, send)

        return ours
    return {"raw": raw, "ours-hub": hub_app, "sse-starlette": peer}[kind]


def serve(kind: str, count: int, http: str, loop: str, port: int) -> None:
    import uvicorn

    streaming = app_for(kind, count)

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        if scope["path"] == "/cpu":  # the process's CPU seconds, to the nanosecond
            body = repr(time.process_time()).encode()
            length = [(b"content-length", str(len(body)).encode())]
            await send({"type": "http.response.start", "status": 200, "headers": length})
            await send({"type": "http.response.body", "body": body})
            return
        await streaming(scope, receive, send)

    uvicorn.run(app, host="127.0.0.1", port=port, http=http, loop=loop, log_level="error")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(
    kind: str, count: int, http: str, loop: str
) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    command = [sys.executable, __file__, "--serve", kind, "--events", str(count)]
    command += ["--http", http, "--loop", loop, "--port", str(port)]
    process = subprocess.Popen(command)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return process, port
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise RuntimeError(f"the {kind} server did not start")


def cpu_of(port: int) -> float:
    """The server's own CPU seconds (time.process_time(), asked over HTTP)."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b"GET /cpu HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n")
        reply = b""
        while chunk := sock.recv(4096):
            reply += chunk
    return float(reply.rsplit(b"\r\n\r\n", 1)[1])


def rss_of(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def read_stream(port: int) -> int:
    """GET / and read the whole body; the bytes read."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n")
        total = 0
        while chunk := sock.recv(1 << 16):
            total += len(chunk)
        return total


def live_cpu(count: int, rounds: int, http: str, loop: str) -> dict[str, float]:
    """Server CPU seconds per event of each kind (median of ``rounds`` requests)."""
    servers = {kind: start_server(kind, count, http, loop) for kind in KINDS}
    samples: dict[str, list[float]] = {kind: [] for kind in KINDS}
    try:
        for _, port in servers.values():  # warm up: imports, first request
            read_stream(port)
        for round_ in range(rounds):
            order = KINDS[round_ % len(KINDS) :] + KINDS[: round_ % len(KINDS)]
            for kind in order:
                port = servers[kind][1]
                before = cpu_of(port)
                got = read_stream(port)
                assert got >= count * len(FRAME), (kind, got)
                samples[kind].append((cpu_of(port) - before) / count)
    finally:
        for process, _ in servers.values():
            process.terminate()
            process.wait()
    return {kind: statistics.median(values) for kind, values in samples.items()}


def idle_memory(first: int, then: int, http: str, loop: str) -> dict[str, float]:
    """Bytes of server RSS per idle open response, for each kind: the growth from
    ``first`` to ``then`` open responses, per response."""
    per: dict[str, float] = {}
    for kind in IDLE_KINDS:
        process, port = start_server(kind, 0, http, loop)
        socks: list[socket.socket] = []
        try:
            rss: list[int] = []
            for count in (first, then):
                opened = [
                    socket.create_connection(("127.0.0.1", port)) for _ in range(count - len(socks))
                ]
                for sock in opened:
                    sock.sendall(b"GET / HTTP/1.1\r\nHost: bench\r\n\r\n")
                for sock in opened:
                    sock.recv(1024)  # the head: the response is open
                socks += opened
                time.sleep(0.5)
                rss.append(rss_of(process.pid))
            per[kind] = (rss[1] - rss[0]) / (then - first)
        finally:
            for sock in socks:
                sock.close()
            process.terminate()
            process.wait()
    return per


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="5,000 events, 3 rounds")
    parser.add_argument("--no-live", action="store_true")
    parser.add_argument("--serve", choices=KINDS, help=argparse.SUPPRESS)
    parser.add_argument("--http", default="httptools", help=argparse.SUPPRESS)
    parser.add_argument("--loop", default="uvloop", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.serve:
        serve(options.serve, options.events, options.http, options.loop, options.port)
        return
    count, rounds = (5_000, 3) if options.quick else (options.events, options.rounds)
    print(f"Python {sys.version.split()[0]}, medians of {rounds} rounds")
    fan = timed(fanout_cases(1000, 100), rounds, time.thread_time)
    print(
        f"publish to 1,000 readers: {fan['fan-out: hub'] / 100 * 1e6:8.1f} us/event "
        f"{fan['fan-out: hub'] / fan['fan-out: floor']:5.2f}x 1,000 deque appends "
        f"({fan['fan-out: floor'] / 100 * 1e6:.1f} us)"
    )
    print(
        f"publish and 1,000 reads: {fan['fan-out, read: hub'] / 100 * 1e6:8.1f} us/event "
        f"{fan['fan-out, read: hub'] / fan['fan-out, read: floor']:5.2f}x 1,000 deque "
        f"appends and poplefts ({fan['fan-out, read: floor'] / 100 * 1e6:.1f} us)"
    )
    nobody = timed(nobody_cases(10_000, 10_000), rounds, time.thread_time)
    for label, hub, floor in (
        ("", "nobody: hub", "nobody: floor"),
        (", window", "nobody: hub, window", "nobody: floor, window"),
    ):
        print(
            f"publish, nobody reads{label:8}: {nobody[hub] / 10_000 * 1e9:8.0f} ns/event "
            f"{nobody[hub] / nobody[floor]:5.2f}x a dict look-up and an append "
            f"({nobody[floor] / 10_000 * 1e9:.0f} ns)"
        )
    if options.no_live:
        return
    for http, loop in (("httptools", "uvloop"), ("h11", "asyncio")):
        cpu = live_cpu(count, rounds, http, loop)
        print(f"uvicorn, {http} and {loop}: server CPU per event, {count:,} events a request")
        for kind in KINDS:
            print(f"  {kind:14} {cpu[kind] * 1e6:7.2f} us  {cpu[kind] / cpu['raw']:5.2f}x raw")
    memory = idle_memory(300, 1_200, "httptools", "uvloop")
    print("idle response, server RSS per connection, 300 to 1,200 open (httptools, uvloop)")
    for kind in IDLE_KINDS:
        print(f"  {kind:14} {memory[kind]:9,.0f}  {memory[kind] - memory['raw']:+9,.0f} over raw")


if __name__ == "__main__":
    main()
