"""llm.OpenTelemetryRecorder (issue 35, item 3): StreamStats as OpenTelemetry metrics,
read back through the OpenTelemetry SDK's in-memory reader; and the import boundary:
``import sse_sansio`` and ``import sse_sansio.llm`` never load opentelemetry.
"""

from __future__ import annotations

import ast
import json
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

import sse_sansio
from sse_sansio import Comment, Event
from sse_sansio.llm import OpenTelemetryRecorder, StreamStats
from tests.helpers.examples import subprocess_env

LLM = Path(sse_sansio.__file__).resolve().parent / "llm"


def delta(text: str) -> Event:
    payload = {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "text_delta", "text": text},
    }
    return Event(type="content_block_delta", data=json.dumps(payload))


def usage_and_stop(output_tokens: int) -> list[Event]:
    message_delta = {
        "type": "message_delta",
        "delta": {"stop_reason": "end_turn"},
        "usage": {"output_tokens": output_tokens},
    }
    return [
        Event(type="message_delta", data=json.dumps(message_delta)),
        Event(type="message_stop", data='{"type": "message_stop"}'),
    ]


def points(reader: InMemoryMetricReader) -> dict[str, list[Any]]:
    """Each metric's data points, by name."""
    data = reader.get_metrics_data()
    assert data is not None
    out: dict[str, list[Any]] = {}
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            assert scope.scope.name == "sse_sansio"
            for metric in scope.metrics:
                out[metric.name] = list(metric.data.data_points)
    return out


def recorded(stats: StreamStats, attributes: dict[str, str] | None = None) -> dict[str, list[Any]]:
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    OpenTelemetryRecorder(provider).record(stats, attributes)
    return points(reader)


def test_a_finished_stream_under_the_genai_names() -> None:
    stats = StreamStats("anthropic", now=10.0, stall=2.0)
    stats.saw_bytes(100, 10.25)
    stats.saw_item(Event(type="ping", data='{"type": "ping"}'), 10.5)
    stats.saw_item(Comment(text=""), 11.5)
    # tokens at 13.0, 13.5, 14.5: gaps 0.5 and 1.0; the first after a 2.75 s stall
    for text, at in (("a", 13.0), ("b", 13.5), ("c", 14.5)):
        stats.saw_item(delta(text), at)
    for event in usage_and_stop(5):
        stats.saw_item(event, 15.0)
    stats.end(15.0)
    got = recorded(stats, {"gen_ai.provider.name": "anthropic"})
    ours = {"gen_ai.provider.name": "anthropic"}

    def one(name: str) -> Any:
        (point,) = got[name]
        return point

    for name, value in [
        ("gen_ai.client.operation.duration", 5.0),  # 15 - 10
        ("gen_ai.client.operation.time_to_first_chunk", 0.5),  # the ping at 10.5
        ("gen_ai.server.time_to_first_token", 3.0),  # 13 - 10
        ("gen_ai.server.time_per_output_token", 0.375),  # (14.5 - 13) / (5 - 1)
        ("sse_sansio.llm.stream.time_to_first_byte", 0.25),
    ]:
        point = one(name)
        assert (point.count, point.sum, dict(point.attributes)) == (1, value, ours), name
    chunks = one("gen_ai.client.operation.time_per_output_chunk")
    assert (chunks.count, chunks.sum, chunks.max) == (2, 1.5, 1.0)
    tokens = one("gen_ai.client.token.usage")
    assert (tokens.sum, dict(tokens.attributes)) == (5, {**ours, "gen_ai.token.type": "output"})
    assert one("sse_sansio.llm.stream.stalls").value == 1  # 10.25 to 13.0 behind a ping
    assert one("sse_sansio.llm.stream.keepalives").value == 2


def test_a_cut_stream_carries_error_type_and_no_unknown_figure() -> None:
    stats = StreamStats("anthropic", now=0.0)
    stats.saw_item(delta("a"), 1.0)
    stats.end(2.0, truncated=True)
    got = recorded(stats)
    assert {name for name, found in got.items() if found} == {
        "gen_ai.client.operation.duration",
        "gen_ai.client.operation.time_to_first_chunk",
        "gen_ai.server.time_to_first_token",
        "sse_sansio.llm.stream.stalls",
        "sse_sansio.llm.stream.keepalives",
    }
    (point,) = got["gen_ai.client.operation.duration"]
    assert dict(point.attributes) == {"error.type": "cut"}


def test_a_stream_never_ended_is_recorded_as_cut() -> None:
    stats = StreamStats("anthropic", now=0.0)
    got = recorded(stats)
    (point,) = got["sse_sansio.llm.stream.stalls"]
    assert dict(point.attributes) == {"error.type": "cut"}


def test_the_recorder_refuses_pickle() -> None:
    with pytest.raises(TypeError, match="cannot be pickled or copied"):
        pickle.dumps(OpenTelemetryRecorder(MeterProvider()))


def test_no_llm_module_imports_opentelemetry_at_its_top() -> None:
    for path in sorted(LLM.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:  # module level only: the recorder imports it when made
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            assert not any(name.startswith("opentelemetry") for name in names), path.name


@pytest.mark.slow
def test_importing_the_package_loads_no_opentelemetry() -> None:
    code = (
        "import sys, sse_sansio, sse_sansio.llm\n"
        "loaded = [m for m in sys.modules if m.split('.')[0] == 'opentelemetry']\n"
        "assert not loaded, loaded\n"
        "from sse_sansio.llm import OpenTelemetryRecorder\n"
        "OpenTelemetryRecorder()\n"
        "assert 'opentelemetry.metrics' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, env=subprocess_env(), timeout=60)
