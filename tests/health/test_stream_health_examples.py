"""examples/httpx_watchdog.py against examples/server.py on loopback (short intervals)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.helpers.examples import load_example, serving

pytestmark = pytest.mark.slow  # the examples on live sockets


@pytest.fixture(scope="module")
def slow_server() -> Iterator[int]:
    """One event every 0.6 s, keepalive comments every 0.05 s in between."""
    server = load_example("server").SSEServer(
        ("127.0.0.1", 0), count=2, interval=0.6, keepalive=0.05
    )
    with serving(server) as port:
        yield port


def test_a_healthy_stream_is_read_whole(
    slow_server: int, capsys: pytest.CaptureFixture[str]
) -> None:
    watchdog = load_example("httpx_watchdog")
    assert watchdog.main([f"http://127.0.0.1:{slow_server}/", "--progress", "5"]) == 0
    assert capsys.readouterr().out.count("event 'tick'") == 2


def test_keepalives_without_events_are_stalled(
    slow_server: int, capsys: pytest.CaptureFixture[str]
) -> None:
    watchdog = load_example("httpx_watchdog")
    with pytest.raises(watchdog.Unhealthy) as caught:
        list(watchdog.events(f"http://127.0.0.1:{slow_server}/", idle=5, progress=0.2))
    assert caught.value.state == "stalled"
    assert watchdog.main([f"http://127.0.0.1:{slow_server}/", "--progress", "0.2"]) == 1
    assert "stalled" in capsys.readouterr().err
