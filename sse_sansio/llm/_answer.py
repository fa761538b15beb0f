# The answer itself: the text, the reasoning and the tool calls of one streamed
# response, put back together from the fragments the API streams, and marked whole or
# cut.
#
# Strategy: a dialect appends what each event carries to a Parts object (text and
# reasoning as lists of fragments, tool calls by the key the API streams them under: a
# choice's tool-call index, an output index, a content block index, a tool call id) and
# marks a tool call complete where its API says it is (its block or item ended, its
# choice finished, it arrived whole).  Nothing is joined or parsed until Tracker.answer
# asks: appending stays O(1) per fragment.
#
# Invariants: a tool call's arguments are exactly the fragments joined, unless the API
# sent the whole arguments again at the end (OpenAI Responses' .done events, the AI SDK's
# tool-input-available), which then win; arguments_json is the parsed arguments only
# when they parse (a cut leaves half an object, which is None, never a guess).

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

__all__ = ["Answer", "Parts", "ToolCall"]


@dataclass(frozen=True)
class ToolCall:
    """One tool (function) call the model made, as far as it arrived.

    Attributes:
        id: The API's id for the call (what the tool result must name), when given.
        name: The tool's name, when given.
        arguments: The arguments as the API streamed them: the fragments joined, a
            JSON text when whole.
        arguments_json: ``arguments`` decoded, when it parses as JSON; else ``None``
            (also for a cut call, whose text ends half-way).
        complete: The API said this call is whole (its block or item ended, its
            choice finished with ``tool_calls``, or it arrived in one piece).
    """

    id: str | None
    name: str | None
    arguments: str
    arguments_json: Any
    complete: bool


@dataclass(frozen=True)
class Answer:
    """The assembled answer of one streamed response (for OpenAI Chat and Gemini, the
    first choice or candidate).

    Attributes:
        text: The answer's text, every fragment joined.
        reasoning: The model's reasoning (thinking, or its summary), where the API
            streams it; ``""`` where it does not.
        tool_calls: The tool calls, in the order they began.
        complete: The API said the answer ended (the outcome is ``"completed"`` or
            ``"stopped"``): the text is all the API sent.  False while the stream runs,
            and after a cut or a failure.
    """

    text: str
    reasoning: str
    tool_calls: tuple[ToolCall, ...]
    complete: bool


class _Call:
    __slots__ = ("complete", "final", "id", "name", "parts", "value")

    def __init__(self) -> None:
        self.id: str | None = None
        self.name: str | None = None
        self.parts: list[str] = []
        self.final: str | None = None  # the whole arguments, when the API resent them
        self.value: Any = None  # the arguments as an object, when they came as one
        self.complete = False


#: Parts as plain data: the text and reasoning fragments, and each call's key and fields.
PlainParts = tuple[list[str], list[str], list[tuple[object, dict[str, Any]]]]


class Parts:
    """What the events of one response carried so far; a dialect fills it."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.calls: dict[object, _Call] = {}

    def add_text(self, fragment: Any) -> None:
        if isinstance(fragment, str):
            self.text.append(fragment)

    def add_reasoning(self, fragment: Any) -> None:
        if isinstance(fragment, str):
            self.reasoning.append(fragment)

    def call(self, key: object, *, id: Any = None, name: Any = None) -> _Call:
        """The call streamed under ``key`` (made on first sight); fills id and name.
        An empty id is no id (Qwen sends ``"id": ""`` on a call's later fragments)."""
        call = self.calls.get(key)
        if call is None:
            call = self.calls[key] = _Call()
        if isinstance(id, str) and id and call.id is None:
            call.id = id
        if isinstance(name, str) and call.name is None:
            call.name = name
        return call

    def add_arguments(self, key: object, fragment: Any) -> None:
        if isinstance(fragment, str):
            self.call(key).parts.append(fragment)

    def known(self, key: object) -> bool:
        return key in self.calls

    def snapshot(self, complete: bool) -> Answer:
        return Answer(
            text="".join(self.text),
            reasoning="".join(self.reasoning),
            tool_calls=tuple(_tool_call(call) for call in self.calls.values()),
            complete=complete,
        )

    # Pickling (a dialect's state, _dialect.py): the parts as lists and dicts, each
    # call's fields by name, so that no pickle names the private _Call.
    def plain(self) -> PlainParts:
        """The parts as plain data."""
        calls = [(key, _fields(call)) for key, call in self.calls.items()]
        return (list(self.text), list(self.reasoning), calls)

    @classmethod
    def from_plain(cls, data: PlainParts) -> Parts:
        """The parts that plain() gave ``data`` for."""
        parts = cls()
        text, reasoning, calls = data
        parts.text, parts.reasoning = list(text), list(reasoning)
        for key, fields in calls:
            call = parts.calls[key] = _Call()
            for name, value in fields.items():
                setattr(call, name, value)
        return parts


def _fields(call: _Call) -> dict[str, Any]:
    return {name: getattr(call, name) for name in _Call.__slots__}


def _tool_call(call: _Call) -> ToolCall:
    streamed = "".join(call.parts)
    if call.final is not None:
        arguments = call.final
    elif call.value is None or not call.complete or streamed.strip():
        # An object given at the start (Anthropic's "input": {}) is only a
        # placeholder until the call is whole: the input may still be streaming.
        arguments = streamed
    else:
        # Whole, and nothing (or only empty fragments: Anthropic's one empty
        # input_json_delta for a tool without arguments) was streamed: the object
        # the API gave is the arguments.
        arguments = _dumps(call.value)
    value = _parsed(arguments)
    return ToolCall(call.id, call.name, arguments, value, call.complete)


def _dumps(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (ValueError, TypeError, RecursionError):  # pragma: no cover - value came from json.loads
        return ""


def _parsed(arguments: str) -> Any:
    try:
        return json.loads(arguments)
    except (ValueError, RecursionError):
        return None
