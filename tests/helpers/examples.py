"""Drivers for the example programs: load one as a module, run one in a subprocess with
the checkout importable, serve one on a free loopback port.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import os
import sys
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from sse_sansio import Event, ReceivedItem

ROOT = Path(__file__).resolve().parents[2]


EXAMPLES = ROOT / "examples"


# Every socket operation in these tests gives up after this long (a hung test fails).
TIMEOUT = 10.0


def load_example(name: str) -> ModuleType:
    """Import ``examples/<name>.py`` (once) as the module ``example_<name>``."""
    module_name = f"example_{name}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, EXAMPLES / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # dataclasses look their module up while building
    spec.loader.exec_module(module)
    return module


def subprocess_env() -> dict[str, str]:
    """The environment for a subprocess that imports sse_sansio from this checkout."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["PYTHONIOENCODING"] = "utf-8"
    return env


@contextlib.contextmanager
def serving(server: Any) -> Iterator[int]:
    """Run a socketserver in a thread; give its port; stop and close it afterwards."""
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield server.socket.getsockname()[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(TIMEOUT)


# What examples/server.py sends, written out by hand: event n is "tick", two data lines,
# id n, and the first one sets retry 2000.
TICKS = [
    Event(type="tick", data='第 1 条消息\n{"n": 1}', id="1", retry=2000),
    Event(type="tick", data='第 2 条消息\n{"n": 2}', id="2"),
    Event(type="tick", data='第 3 条消息\n{"n": 3}', id="3"),
]


ServerFactory = Callable[..., int]


@pytest.fixture
def example_server() -> Iterator[ServerFactory]:
    """Start examples/server.py's server in a thread: ``start(count=, ...) -> port``."""
    server_module = load_example("server")
    with contextlib.ExitStack() as stack:

        def start(count: int = 3, interval: float = 0.05, keepalive: float = 0.01) -> int:
            server = server_module.SSEServer(
                ("127.0.0.1", 0), count=count, interval=interval, keepalive=keepalive
            )
            return stack.enter_context(serving(server))

        yield start


def collect(items: Iterable[ReceivedItem]) -> tuple[list[ReceivedItem], BaseException | None]:
    """All items of a client's stream, and the exception that ended it, if any."""
    out: list[ReceivedItem] = []
    try:
        out.extend(items)
    except Exception as exc:
        return out, exc
    return out, None


def collect_async(
    items: AsyncIterator[ReceivedItem],
) -> tuple[list[ReceivedItem], BaseException | None]:
    """``collect()`` for the asyncio client's async generator."""
    out: list[ReceivedItem] = []

    async def drain() -> None:
        async for item in items:
            out.append(item)

    try:
        asyncio.run(asyncio.wait_for(drain(), TIMEOUT))
    except Exception as exc:
        return out, exc
    return out, None


def events_of(items: list[ReceivedItem]) -> list[Event]:
    return [item for item in items if isinstance(item, Event)]
