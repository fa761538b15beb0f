"""sse_sansio.llm: tell a finished LLM answer from a cut, stopped or failed one.

The connection ending says nothing about the model's task: each streaming API has its
own end marker and its own words for why an answer ended, and a stream cut by a proxy
or a timeout looks, byte by byte, like one that finished.  A :class:`Tracker` reads the
items of one streamed response by its API's rules (the *dialect*) and reports an
:class:`Outcome`: ``completed``, ``stopped`` (a token limit, a content filter, a
refusal...), ``failed`` (an error inside the stream) or ``cut``, with the reason in
words.  Optional and standard library only; the parser does not depend on it::

    from sse_sansio import llm
    from sse_sansio.testing import parse

    tracker = llm.Tracker("openai-chat")
    for item in parse(b'data: {"choices": [{"index": 0, "finish_reason": "stop"}]}\\n\\n'):
        tracker.feed(item)
    assert tracker.outcome.outcome == "cut"   # no data: [DONE]

Dialects: ``"openai-chat"``, ``"openai-responses"``, ``"anthropic"``, ``"gemini"``,
``"ai-sdk-ui"`` (the Vercel AI SDK's UI message stream), ``"auto"``, and
:func:`generic` for a stream whose terminal event you name.  The outcome carries the
token :class:`Usage` with its provenance; :attr:`Tracker.answer` the assembled
:class:`Answer` (text, reasoning, :class:`ToolCall` items).  For proxies,
:class:`Reframer` repairs a stream into a dialect's own shape; for Python backends,
:class:`UIMessageStreamWriter` writes the AI SDK's stream.  For gateways,
:class:`HoldBack` holds text back for a guardrail, :class:`StreamStats` measures a
stream (time to first token, gaps, stalls) and :class:`OpenTelemetryRecorder` exports
the figures (the ``otel`` extra).
"""

from __future__ import annotations

from ._ai_sdk_ui import UI_MESSAGE_STREAM_HEADERS, UIMessageStreamWriter
from ._answer import Answer, ToolCall
from ._dialect import Dialect
from ._generic import Generic
from ._holdback import HoldBack
from ._merge import TextMerge
from ._otel import OpenTelemetryRecorder
from ._outcome import EXIT_STATUS, Outcome, PayloadError
from ._progress import Progress
from ._reframer import Reframer
from ._registry import DIALECT_NAMES, REFRAMER_DIALECTS
from ._stats import StreamStats
from ._tracker import Tracker
from ._translator import Translator
from ._usage import Provenance, Usage

__all__ = [
    "DIALECT_NAMES",
    "EXIT_STATUS",
    "REFRAMER_DIALECTS",
    "UI_MESSAGE_STREAM_HEADERS",
    "Answer",
    "Dialect",
    "HoldBack",
    "OpenTelemetryRecorder",
    "Outcome",
    "PayloadError",
    "Progress",
    "Provenance",
    "Reframer",
    "StreamStats",
    "TextMerge",
    "ToolCall",
    "Tracker",
    "Translator",
    "UIMessageStreamWriter",
    "Usage",
    "generic",
]


def generic(terminal: str, *, error: str | None = None, json: bool = False) -> Dialect:
    """A dialect for a stream whose terminal event (and error event) you name.

    The event of type ``terminal`` completes the answer; one of type ``error``, if
    given, fails it (its ``error`` object, or the payload itself, gives the type and
    message); the end of the stream before either is a cut.

    Args:
        terminal: The event type that ends a finished answer (``"done"``, say).
        error: The event type of an in-band error, if the stream has one.
        json: Decode every event's ``data`` as JSON (a :class:`PayloadError` when one
            is not); otherwise :meth:`Tracker.feed` returns the data as text.

    Returns:
        A fresh dialect for one :class:`Tracker` (it is used up with the stream).
    """
    return Generic(terminal, error, json)


# Every class and function of __all__ is named by this face (sse_sansio/_public.py).
from sse_sansio._public import publish as _publish  # noqa: E402 (appended: the face's last act)

_publish(globals(), __all__, __name__)
