# The OpenTelemetry recorder of StreamStats (issue 35, item 3): one finished stream's
# figures as metrics, under the GenAI semantic conventions' names where they have one.
#
# Optional: OpenTelemetry is the ``sse_sansio[otel]`` extra (opentelemetry-api; the
# caller brings an SDK and exporter).  This module is imported with sse_sansio.llm,
# so it imports opentelemetry only inside OpenTelemetryRecorder(): ``import
# sse_sansio.llm`` never loads it (tests/llm/test_llm_otel.py checks both).
#
# The names (semantic-conventions, docs/gen-ai/gen-ai-metrics.md, status
# "Development"), all histograms in seconds unless said:
# - gen_ai.client.operation.duration: the request sent to the stream's end;
# - gen_ai.client.operation.time_to_first_chunk: to the first event;
# - gen_ai.client.operation.time_per_output_chunk: each gap between token events;
# - gen_ai.server.time_to_first_token: to the first token (a text, reasoning or tool
#   delta, never a control frame);
# - gen_ai.server.time_per_output_token: first token to last over the output tokens
#   after the first, where the usage gave more than one;
# - gen_ai.client.token.usage ({token}): the output tokens, gen_ai.token.type "output".
# And what the conventions have no name for, under sse_sansio.llm.stream.*:
# time_to_first_byte (s), stalls (a counter, {stall}), keepalives ({keepalive}).
# error.type is set to the outcome ("cut", "failed") on every measurement of a stream
# that did not end in an answer, as the conventions ask for the operation's duration.

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NoReturn

from sse_sansio._pickling import refuse
from sse_sansio._version import __version__

from ._stats import StreamStats

__all__ = ["OpenTelemetryRecorder"]

_HISTOGRAMS = {
    "duration": ("gen_ai.client.operation.duration", "s", "GenAI operation duration"),
    "first_chunk": (
        "gen_ai.client.operation.time_to_first_chunk",
        "s",
        "Time to receive the first chunk (event) of the response stream",
    ),
    "per_chunk": (
        "gen_ai.client.operation.time_per_output_chunk",
        "s",
        "Time between consecutive output chunks (token events)",
    ),
    "first_token": (
        "gen_ai.server.time_to_first_token",
        "s",
        "Time to the first output token (a text, reasoning or tool delta)",
    ),
    "per_token": (
        "gen_ai.server.time_per_output_token",
        "s",
        "Time per output token generated after the first token",
    ),
    "tokens": ("gen_ai.client.token.usage", "{token}", "Number of output tokens used"),
    "first_byte": (
        "sse_sansio.llm.stream.time_to_first_byte",
        "s",
        "Time to the first byte of the response body",
    ),
}
_COUNTERS = {
    "stalls": (
        "sse_sansio.llm.stream.stalls",
        "{stall}",
        "Gaps without progress while keepalives flowed",
    ),
    "keepalives": ("sse_sansio.llm.stream.keepalives", "{keepalive}", "Life-only items"),
}


class OpenTelemetryRecorder:
    """Record finished streams' :class:`StreamStats` as OpenTelemetry metrics.

    Needs the ``otel`` extra (``pip install 'sse_sansio[otel]'``) and, to export
    anything, an OpenTelemetry SDK set up by the caller.  The instruments are made
    once; :meth:`record` measures one stream::

        recorder = llm.OpenTelemetryRecorder()      # the global meter provider
        ...
        stats.end(time.monotonic())
        recorder.record(stats, {"gen_ai.provider.name": "openai"})

    Metric names follow the GenAI semantic conventions where they have one
    (``gen_ai.server.time_to_first_token``, ``gen_ai.client.token.usage``...);
    :doc:`/llm-gateway` lists them all.

    Args:
        meter_provider: The MeterProvider to use (None: the global one).

    Raises:
        ImportError: opentelemetry-api is not installed.
    """

    def __init__(self, meter_provider: Any = None) -> None:
        from opentelemetry import metrics  # the otel extra: only when asked for

        meter = metrics.get_meter("sse_sansio", __version__, meter_provider)
        self._histograms = {
            key: meter.create_histogram(name, unit=unit, description=text)
            for key, (name, unit, text) in _HISTOGRAMS.items()
        }
        self._counters = {
            key: meter.create_counter(name, unit=unit, description=text)
            for key, (name, unit, text) in _COUNTERS.items()
        }

    def __reduce__(self) -> NoReturn:
        # A handle, not a value: its instruments belong to the caller's meter provider.
        refuse(self, "its instruments belong to a live meter provider; make one per process")

    def record(
        self, stats: StreamStats, attributes: Mapping[str, str | bool | int | float] | None = None
    ) -> None:
        """Measure one stream (after :meth:`StreamStats.end`), with ``attributes`` on
        every measurement (the provider, the model...)."""
        figures = stats.as_dict()
        tags = dict(attributes or {})
        if figures["outcome"] not in ("completed", "stopped"):
            tags["error.type"] = str(figures["outcome"] or "cut")
        gaps = stats.token_gaps()
        measured = {
            "duration": [figures["duration"]],
            "first_chunk": [figures["time_to_first_event"]],
            "per_chunk": gaps,
            "first_token": [figures["time_to_first_token"]],
            "per_token": [_per_token(sum(gaps), figures["output_tokens"])],
            "tokens": [figures["output_tokens"]],
            "first_byte": [figures["time_to_first_byte"]],
        }
        for key, values in measured.items():
            extra = {"gen_ai.token.type": "output"} if key == "tokens" else {}
            for value in values:
                if value is not None:
                    self._histograms[key].record(value, {**tags, **extra})
        self._counters["stalls"].add(figures["stalls"]["count"], tags)
        self._counters["keepalives"].add(figures["keepalives"], tags)


def _per_token(span: float, tokens: int | None) -> float | None:
    """The time per output token after the first, when the usage says how many."""
    if tokens is None or tokens < 2:
        return None
    return span / (tokens - 1)
