"""Hand-written streams in the shapes of each API's documentation, for the usage and
answer tests: the figures in them are written here, so a test compares against what a
person wrote, not against what the code computed."""

from __future__ import annotations

import json
from typing import Any


def data(payload: Any, event: str | None = None) -> bytes:
    line = b"" if event is None else f"event: {event}\n".encode()
    return line + b"data: " + json.dumps(payload).encode() + b"\n\n"


def named(payload: dict[str, Any]) -> bytes:
    """An event named after its payload's type, as Anthropic and Responses send them."""
    return data(payload, event=payload["type"])


CHUNK = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "gpt-4o-mini"}

# OpenAI Chat Completions with stream_options.include_usage: every chunk has
# "usage": null, then one more chunk with empty choices carries the usage.
OPENAI_CHAT = [
    data(
        {
            **CHUNK,
            "choices": [
                {"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}
            ],
            "usage": None,
        }
    ),
    data(
        {
            **CHUNK,
            "choices": [{"index": 0, "delta": {"content": "Hello"}, "finish_reason": None}],
            "usage": None,
        }
    ),
    data({**CHUNK, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": None}),
    data(
        {
            **CHUNK,
            "choices": [],
            "usage": {
                "prompt_tokens": 9,
                "completion_tokens": 12,
                "total_tokens": 21,
                "prompt_tokens_details": {"cached_tokens": 4},
                "completion_tokens_details": {"reasoning_tokens": 2},
            },
        }
    ),
    b"data: [DONE]\n\n",
]

RESPONSE = {"id": "resp_1", "object": "response", "model": "gpt-4o-mini"}
OPENAI_RESPONSES = [
    named(
        {
            "type": "response.created",
            "sequence_number": 0,
            "response": {**RESPONSE, "status": "in_progress", "output": [], "usage": None},
        }
    ),
    named(
        {
            "type": "response.output_item.added",
            "sequence_number": 1,
            "output_index": 0,
            "item": {"id": "msg_1", "type": "message", "role": "assistant", "content": []},
        }
    ),
    named(
        {
            "type": "response.output_text.delta",
            "sequence_number": 2,
            "item_id": "msg_1",
            "output_index": 0,
            "content_index": 0,
            "delta": "Hi there",
        }
    ),
    named(
        {
            "type": "response.completed",
            "sequence_number": 3,
            "response": {
                **RESPONSE,
                "status": "completed",
                "usage": {
                    "input_tokens": 36,
                    "input_tokens_details": {"cached_tokens": 6},
                    "output_tokens": 87,
                    "output_tokens_details": {"reasoning_tokens": 64},
                    "total_tokens": 123,
                },
            },
        }
    ),
]

ANTHROPIC = [
    named(
        {
            "type": "message_start",
            "message": {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "content": [],
                "model": "claude-sonnet-4-5",
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {
                    "input_tokens": 25,
                    "cache_creation_input_tokens": 0,
                    "cache_read_input_tokens": 10,
                    "output_tokens": 1,
                },
            },
        }
    ),
    named(
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
    ),
    named({"type": "ping"}),
    named(
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": "Hello"},
        }
    ),
    named({"type": "content_block_stop", "index": 0}),
    named(
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": 15},
        }
    ),
    named({"type": "message_stop"}),
]

GEMINI = [
    data(
        {
            "candidates": [{"content": {"parts": [{"text": "Hel"}], "role": "model"}}],
            "usageMetadata": {
                "promptTokenCount": 8,
                "candidatesTokenCount": 1,
                "totalTokenCount": 9,
            },
        }
    ),
    data(
        {
            "candidates": [
                {"content": {"parts": [{"text": "lo"}], "role": "model"}, "finishReason": "STOP"}
            ],
            "usageMetadata": {
                "promptTokenCount": 8,
                "candidatesTokenCount": 2,
                "cachedContentTokenCount": 3,
                "thoughtsTokenCount": 5,
                "totalTokenCount": 15,
            },
        }
    ),
]

AI_SDK_UI = [
    data({"type": "start", "messageId": "msg-1"}),
    data({"type": "start-step"}),
    data({"type": "text-start", "id": "t1"}),
    data({"type": "text-delta", "id": "t1", "delta": "Hi"}),
    data({"type": "text-end", "id": "t1"}),
    data({"type": "finish-step"}),
    data(
        {
            "type": "message-metadata",
            "messageMetadata": {"usage": {"inputTokens": 3, "outputTokens": 1}},
        }
    ),
    data(
        {
            "type": "finish",
            "finishReason": "stop",
            "messageMetadata": {
                "totalUsage": {
                    "inputTokens": 3,
                    "outputTokens": 2,
                    "cachedInputTokens": 1,
                    "reasoningTokens": 0,
                }
            },
        }
    ),
    b"data: [DONE]\n\n",
]
