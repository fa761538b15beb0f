# Google Gemini `streamGenerateContent?alt=sse`: data-only events, each a
# GenerateContentResponse in JSON.
#
# Source: API reference, GenerateContentResponse (candidates[].finishReason,
# promptFeedback.blockReason "sent only in the first stream chunk"), the FinishReason
# and BlockReason enums; errors are Google API error objects {"error": {"code",
# "message", "status"}}.  docs/llm-gemini.rst is this module's page.
#
# Rules: there is no terminal event, so the stream's clean end is the only end marker:
# at the end, every candidate's finishReason decides (the worst one wins; a candidate
# seen but never finished makes a cut).  A blocked prompt stops the answer at once; an
# error object fails it.  Each chunk's usageMetadata gives the figures so far.
# Function calls arrive whole, one per part, except on Vertex AI with
# streamFunctionCallArguments: then a call's arguments stream as partialArgs (FunctionCall
# and PartialArg in the aiplatform v1 reference), assembled here into one call (_function()).

from __future__ import annotations

import itertools
import re
from typing import Any, Final

from sse_sansio._events import Event

from ._dialect import (
    NO_EVENT_TYPE,
    DeltaShape,
    Dialect,
    dumps,
    failed,
    finish_verdict,
    get,
    quoted,
    text,
)
from ._outcome import Verdict
from ._usage import UNAVAILABLE, Usage

__all__ = ["Gemini"]


class Gemini(Dialect):
    """Google Gemini: no terminal event; every candidate's finishReason decides."""

    name = "gemini"
    terminal = "every candidate had a finishReason"
    json_types = frozenset({NO_EVENT_TYPE})

    FINISH: Final[dict[str, tuple[bool, str]]] = {
        "STOP": (True, "the model reached a natural stop point or a stop sequence"),
        "MAX_TOKENS": (False, "the answer reached maxOutputTokens: raise it, or continue"),
        "SAFETY": (False, "the answer was flagged for safety reasons"),
        "RECITATION": (False, "the answer was flagged for recitation"),
        "LANGUAGE": (False, "the answer was flagged for using an unsupported language"),
        "OTHER": (False, "the model stopped for an unknown reason"),
        "BLOCKLIST": (False, "the answer contains forbidden terms"),
        "PROHIBITED_CONTENT": (False, "the answer may contain prohibited content"),
        "SPII": (False, "the answer may contain sensitive personally identifiable information"),
        "MALFORMED_FUNCTION_CALL": (False, "the model generated an invalid function call"),
        "IMAGE_SAFETY": (False, "a generated image was flagged for safety reasons"),
        "UNEXPECTED_TOOL_CALL": (False, "the model called a tool, but no tools are enabled"),
        "TOO_MANY_TOOL_CALLS": (False, "the model called too many tools in a row"),
        "FINISH_REASON_UNSPECIFIED": (False, "the API gave no finish reason"),
    }
    BLOCK: Final[dict[str, str]] = {
        "SAFETY": "the prompt was blocked for safety reasons (see promptFeedback.safetyRatings)",
        "BLOCKLIST": "the prompt contains terms from the terminology blocklist",
        "PROHIBITED_CONTENT": "the prompt was blocked for prohibited content",
        "IMAGE_SAFETY": "the prompt was blocked for unsafe image generation content",
        "OTHER": "the prompt was blocked for an unknown reason",
    }

    # A text delta: {"candidates": [{"content": {"parts": [{"text": TEXT}], "role"}}],
    # "usageMetadata", "modelVersion", "responseId"}; the usage grows chunk by chunk.
    text_delta = DeltaShape(
        NO_EVENT_TYPE, ("candidates", 0, "content", "parts", 0, "text"), latest=("usageMetadata",)
    )

    def __init__(self) -> None:
        super().__init__()
        self.finishes: dict[int, str] = {}
        self.seen: set[int] = set()
        self.last_finish_at: int | None = None
        self.calls = 0
        self.open: int | None = None  # the call whose arguments are streaming
        self.counts: _Counts = _NO_FIGURES  # the usage figures so far
        self.final = False  # the latest figures are the final ones

    # -- tracking ------------------------------------------------------------------

    def observe(self, event: Event, payload: Any) -> Verdict | None:
        # (dict.get after one type test, not get(): this runs for every chunk.)
        chunk = payload if type(payload) is dict else {}
        error = chunk.get("error")
        if error:
            return failed(error, "in the stream")
        feedback = chunk.get("promptFeedback")
        blocked = None if feedback is None else text(get(feedback, "blockReason"))
        if not blocked:
            self._candidates(event, chunk.get("candidates"))
        usage = chunk.get("usageMetadata")
        if type(usage) is dict:
            # Each chunk's usageMetadata gives the figures so far; the last chunk's,
            # the one whose candidates carry their finishReason, are the final ones.
            final = bool(blocked) or (bool(self.finishes) and self.seen <= self.finishes.keys())
            self._usage(usage, final)
        if blocked:
            explanation = self.BLOCK.get(blocked, "the prompt was blocked")
            return Verdict(
                "stopped", f"{explanation}: rephrase it (blockReason {quoted(blocked)})", blocked
            )
        return None

    def _usage(self, usage: dict[str, Any], final: bool) -> None:
        """Merge a chunk's figures into ``counts``, the four figures as a tuple: the
        Usage is made once, by usage(), not per chunk (issue 35, item 5)."""
        # (inline, no call per figure: this runs for every chunk)
        get = usage.get
        prompt, output = get("promptTokenCount"), get("candidatesTokenCount")
        cached, thoughts = get("cachedContentTokenCount"), get("thoughtsTokenCount")
        if type(prompt) is not int or prompt < 0:
            prompt = None
        if type(output) is not int or output < 0:
            output = None
        if type(cached) is not int or cached < 0:
            cached = None
        if type(thoughts) is not int or thoughts < 0:
            thoughts = None
        if prompt is None and output is None and cached is None and thoughts is None:
            return  # an empty usage object is no report
        old = self.counts
        self.counts = (
            old[0] if prompt is None else prompt,
            old[1] if output is None else output,
            old[2] if cached is None else cached,
            old[3] if thoughts is None else thoughts,
        )
        self.final = final

    def usage(self) -> Usage:
        if self.counts == _NO_FIGURES:
            return UNAVAILABLE
        prompt, output, cached, thoughts = self.counts
        return Usage(prompt, output, cached, thoughts, "reported" if self.final else "partial")

    def _candidates(self, event: Event, candidates: Any) -> None:
        for candidate in candidates if type(candidates) is list else ():
            if type(candidate) is not dict:
                continue
            # "index" is left out of the JSON for candidate 0 (proto3 default).
            index = candidate.get("index", 0)
            if not isinstance(index, int):
                continue
            self.seen.add(index)
            if index == 0:
                content = candidate.get("content")
                parts = content.get("parts") if type(content) is dict else None
                part = parts[0] if type(parts) is list and len(parts) == 1 else None
                if type(part) is dict and len(part) == 1 and type(part.get("text")) is str:
                    self.parts.text.append(part["text"])  # the hot path: one part, of text
                elif parts is not None:
                    self._content(parts)
            reason = candidate.get("finishReason")
            if isinstance(reason, str):
                self.finishes[index] = reason
                self.last_finish_at = event.start

    def _content(self, parts: Any) -> None:
        """Candidate 0's parts: text, thoughts (``"thought": true``), function calls,
        which Gemini sends whole, each in one part."""
        for part in parts if type(parts) is list else ():
            if type(part) is not dict:
                continue
            if len(part) == 1 and type(part.get("text")) is str:
                self.parts.text.append(part["text"])  # the hot path: a part of text only
                continue
            if part.get("thought") is True:
                self.parts.add_reasoning(part.get("text"))
            else:
                self.parts.add_text(part.get("text"))
            function = part.get("functionCall")
            if isinstance(function, dict):
                self._function(function)

    def _function(self, function: dict[str, Any]) -> None:
        """A functionCall part: whole (name and args), or one piece of a call whose
        arguments stream (Vertex's streamFunctionCallArguments): the first piece has
        the name and ``willContinue: true``, the next ones ``partialArgs``, and the
        piece without ``willContinue`` (often an empty ``{}``) ends the call."""
        partial = function.get("partialArgs")
        going = function.get("willContinue") is True
        if self.open is None and not (going or isinstance(partial, list)):
            if "name" in function:  # a whole call ({} alone ends nothing: skip it)
                self.calls += 1
                call = self.parts.call(self.calls, id=function.get("id"), name=function.get("name"))
                call.value = function.get("args", {})
                call.complete = True
            return
        if self.open is None:
            self.calls += 1
            self.open = self.calls
            self.parts.call(self.open).value = {}
        call = self.parts.call(self.open, id=function.get("id"), name=function.get("name"))
        for arg in partial if isinstance(partial, list) else ():
            _partial_arg(call.value, arg)
        if not going:
            call.complete = True
            self.open = None

    def at_end(self) -> Verdict:
        if not self.finishes:
            return super().at_end()
        unfinished = sorted(self.seen - self.finishes.keys())
        verdict = finish_verdict(
            self.finishes, unfinished, self.FINISH, "finishReason", "candidate", "the stream ended"
        )
        offset = (
            self.last_finish_at
            if self.last_finish_at is not None and self.last_finish_at >= 0
            else None
        )
        return verdict._replace(offset=offset)

    def stop_word(self) -> str | None:
        return min(self.finishes.items())[1] if self.finishes else None

    # -- progress: a candidate's content or finishReason, a block, an error -------------

    def moves(self, event: Event, payload: Any) -> bool:
        if get(payload, "error") or get(payload, "promptFeedback", "blockReason"):
            return True
        candidates = get(payload, "candidates")
        for candidate in candidates if isinstance(candidates, list) else ():
            if get(candidate, "finishReason") or get(candidate, "content", "parts"):
                return True
        return False

    # -- reframing: data-only, the error is {"error": {...}} in an unnamed event --------

    @staticmethod
    def standard_error(event: Event, payload: Any) -> bool:
        return event.type == NO_EVENT_TYPE and isinstance(get(payload, "error"), dict)

    @staticmethod
    def error_event(message: str, kind: str | None) -> Event:
        return Event(data=dumps({"error": {"message": message, "status": kind or "UNKNOWN"}}))

    # -- detection: "candidates" or "promptFeedback" are this API's fields ---------------

    @staticmethod
    def claims_payload(kind: str | None, payload: Any) -> bool:
        return get(payload, "candidates") is not None or get(payload, "promptFeedback") is not None


_Counts = tuple[int | None, int | None, int | None, int | None]
_NO_FIGURES: Final[_Counts] = (None, None, None, None)


# -- streamed function-call arguments (Vertex AI) -----------------------------------------
#
# A PartialArg is {"jsonPath": "$.a.b[0]", one of stringValue, numberValue, boolValue,
# nullValue, "willContinue"}: the value at that path (RFC 9535's normalized paths: member
# names and indexes).  A string streams in pieces, each appended to the one before; any
# other value is whole.  As Google's ADK aggregator does (streaming_utils.py).

_STEP: Final = re.compile(r"\.([^.\[]+)|\[(\d{1,9})\]|\[(['\"])(.*?)\3\]")
_VALUES: Final = ("stringValue", "numberValue", "boolValue", "nullValue")


def _partial_arg(args: Any, arg: Any) -> None:
    """Put one PartialArg's value into ``args`` (the call's arguments so far)."""
    path = get(arg, "jsonPath")
    found = [name for name in _VALUES if name in arg] if isinstance(arg, dict) else []
    if not isinstance(path, str) or not path.startswith("$") or not found:
        return
    steps: list[str | int] = []
    at = 1
    while at < len(path):
        match = _STEP.match(path, at)
        if match is None:
            return  # a path this version cannot read: the value is left out
        member, index, _, quoted_member = match.groups()
        steps.append(int(index) if index is not None else member or quoted_member)
        at = match.end()
    value = None if found[0] == "nullValue" else arg[found[0]]
    _put(args, steps, value)


def _put(node: Any, steps: list[str | int], value: Any) -> None:
    """Set ``value`` at ``steps`` under ``node`` (objects and arrays made on the way;
    a step that does not fit what is there drops the value); a string piece is
    appended to the string already there."""
    for step, after in itertools.pairwise(steps):
        child = _at(node, step)
        if child is None:
            child = _set(node, step, [] if isinstance(after, int) else {})
        node = child
    if not steps or not _fits(node, steps[-1]):
        return
    before = _at(node, steps[-1])
    _set(node, steps[-1], before + value if _both_str(before, value) else value)


def _fits(node: Any, step: str | int) -> bool:
    """A member name fits an object; an index an array, up to one past its end (an
    array streams in order: a farther index would invent elements)."""
    if isinstance(step, int):
        return isinstance(node, list) and step <= len(node)
    return isinstance(node, dict)


def _both_str(before: Any, value: Any) -> bool:
    return isinstance(before, str) and isinstance(value, str)


def _at(node: Any, step: str | int) -> Any:
    """What is at ``step`` under ``node`` (None: nothing, or it does not fit)."""
    if not _fits(node, step):
        return None
    if isinstance(node, list):
        return node[step] if step < len(node) else None  # type: ignore[index, operator]
    return node.get(step)


def _set(node: Any, step: str | int, value: Any) -> Any:
    """Put ``value`` at ``step`` under ``node`` and return it; None when the step
    does not fit ``node``."""
    if not _fits(node, step):
        return None
    if isinstance(node, list) and step == len(node):
        node.append(value)
    else:
        node[step] = value
    return value
