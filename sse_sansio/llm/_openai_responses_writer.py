# Writing OpenAI Responses streaming events (issue 35, item 1): the Translator's
# target frames for this API.  docs/llm-translation.rst has the stop table.
#
# Source: API reference, "Responses streaming events": named events whose data is a
# JSON object with the same "type" and a growing "sequence_number":
# response.created (the Response, status in_progress); per output item
# response.output_item.added / .done (a "message", "reasoning" or "function_call"
# item, by output_index); for a message response.content_part.added,
# response.output_text.delta {item_id, output_index, content_index, delta, logprobs},
# response.output_text.done, response.content_part.done; for reasoning
# response.reasoning_summary_part.added, response.reasoning_summary_text.delta
# {item_id, output_index, summary_index, delta}, .done, response.reasoning_summary_part
# .done; for a call response.function_call_arguments.delta {item_id, output_index,
# delta} and .done {arguments}; and the end: response.completed, or
# response.incomplete with response.incomplete_details.reason max_output_tokens or
# content_filter, the Response's usage (input_tokens, output_tokens,
# input_tokens_details.cached_tokens, output_tokens_details.reasoning_tokens).
#
# Items: one item is open at a time for text and for reasoning (a change of kind closes
# it, as the API streams items one after another); a call's item stays open until the
# call is whole.  Stops: an incomplete response says max_output_tokens or
# content_filter: a refusal and a safety stop are content_filter, any other stop
# max_output_tokens.

from __future__ import annotations

from typing import Any, ClassVar, Final

from sse_sansio._events import Event

from ._openai_responses import OpenAIResponses
from ._usage import Usage
from ._writing import Writer, figures, frame

__all__ = ["OpenAIResponsesWriter"]

_USAGE: Final = (
    "input_tokens",
    "output_tokens",
    "input_tokens_details.cached_tokens",
    "output_tokens_details.reasoning_tokens",
)
_ID: Final = "resp_translated"


class OpenAIResponsesWriter(Writer):
    dialect = OpenAIResponses
    STOPS: ClassVar[dict[str, str]] = {"max_output_tokens": "length", "content_filter": "filter"}
    WORDS: ClassVar[dict[str, str]] = {
        "stop": "completed",
        "tool_calls": "completed",
        "length": "max_output_tokens",
        "filter": "content_filter",
        "refusal": "content_filter",
        "other": "max_output_tokens",
    }

    def __init__(self) -> None:
        self.sequence = 0
        self.started = False
        self.items = 0  # output items begun
        # The open text or reasoning item: [kind, index, item id, its text's fragments].
        self.open: list[Any] = []
        self.calls: dict[int, list[Any]] = {}  # call n -> [output index, item]

    def _event(self, type: str, **fields: Any) -> Event:
        body = {"type": type, "sequence_number": self.sequence, **fields}
        self.sequence += 1
        return frame(body, type)

    def _response(self, status: str, **fields: Any) -> dict[str, Any]:
        return {"id": _ID, "object": "response", "created_at": 0, "status": status, **fields}

    def _begin(self) -> list[Event]:
        if self.started:
            return []
        self.started = True
        response = self._response("in_progress", model="", output=[])
        return [self._event("response.created", response=response)]

    def _item(self, item: dict[str, Any]) -> tuple[int, list[Event]]:
        index = self.items
        self.items += 1
        return index, [self._event("response.output_item.added", output_index=index, item=item)]

    def _close(self) -> list[Event]:
        """Close the open text or reasoning item."""
        if not self.open:
            return []
        kind, index, item_id, fragments = self.open
        text = "".join(fragments)
        self.open = []
        where = {"item_id": item_id, "output_index": index}
        if kind == "message":
            part = {"type": "output_text", "text": text, "annotations": []}
            item = {"id": item_id, "type": "message", "status": "completed", "role": "assistant"}
            return [
                self._event("response.output_text.done", **where, content_index=0, text=text),
                self._event("response.content_part.done", **where, content_index=0, part=part),
                self._event(
                    "response.output_item.done",
                    output_index=index,
                    item={**item, "content": [part]},
                ),
            ]
        summary = {"type": "summary_text", "text": text}
        item = {"id": item_id, "type": "reasoning", "summary": [summary]}
        return [
            self._event(
                "response.reasoning_summary_text.done", **where, summary_index=0, text=text
            ),
            self._event(
                "response.reasoning_summary_part.done", **where, summary_index=0, part=summary
            ),
            self._event("response.output_item.done", output_index=index, item=item),
        ]

    def _delta(self, kind: str, fragment: str) -> list[Event]:
        open = self.open
        if open and open[0] == kind:  # the common case: one more delta of the open item
            out = []
        else:
            out = [*self._begin(), *self._close(), *self._added(kind)]
            open = self.open
        open[3].append(fragment)
        _, index, item_id, _ = open
        if kind == "message":
            delta = self._event(
                "response.output_text.delta",
                item_id=item_id,
                output_index=index,
                content_index=0,
                delta=fragment,
                logprobs=[],
            )
        else:
            delta = self._event(
                "response.reasoning_summary_text.delta",
                item_id=item_id,
                output_index=index,
                summary_index=0,
                delta=fragment,
            )
        out.append(delta)
        return out

    def _added(self, kind: str) -> list[Event]:
        """Open a message (text) or reasoning item: its item and its first part."""
        index = self.items
        item_id = f"{kind[:3]}_{index}"
        self.open = [kind, index, item_id, []]
        where = {"item_id": item_id, "output_index": index}
        if kind == "message":
            item = {"id": item_id, "type": "message", "status": "in_progress"}
            _, added = self._item({**item, "role": "assistant", "content": []})
            part = {"type": "output_text", "text": "", "annotations": []}
            added.append(
                self._event("response.content_part.added", **where, content_index=0, part=part)
            )
            return added
        _, added = self._item({"id": item_id, "type": "reasoning", "summary": []})
        part = {"type": "summary_text", "text": ""}
        event = "response.reasoning_summary_part.added"
        added.append(self._event(event, **where, summary_index=0, part=part))
        return added

    def text(self, fragment: str) -> list[Event]:
        return self._delta("message", fragment)

    def reasoning(self, fragment: str) -> list[Event]:
        return self._delta("reasoning", fragment)

    def tool_start(self, n: int, id: str, name: str) -> list[Event]:
        out = [*self._begin(), *self._close()]
        item = {
            "id": f"fc_{self.items}",
            "type": "function_call",
            "status": "in_progress",
            "call_id": id,
            "name": name,
            "arguments": "",
        }
        index, added = self._item(item)
        self.calls[n] = [index, item]
        return out + added

    def tool_delta(self, n: int, fragment: str) -> list[Event]:
        index, item = self.calls[n]
        return [
            self._event(
                "response.function_call_arguments.delta",
                item_id=item["id"],
                output_index=index,
                delta=fragment,
            )
        ]

    def tool_end(self, n: int, arguments: str) -> list[Event]:
        index, item = self.calls.pop(n)
        done = {**item, "status": "completed", "arguments": arguments}
        return [
            self._event(
                "response.function_call_arguments.done",
                item_id=item["id"],
                output_index=index,
                arguments=arguments,
            ),
            self._event("response.output_item.done", output_index=index, item=done),
        ]

    def finish(self, kind: str, usage: Usage) -> list[Event]:
        out = [*self._begin(), *self._close()]
        word = self.WORDS[kind]
        given = figures(usage, _USAGE)
        if usage.input_tokens is not None and usage.output_tokens is not None:
            given["total_tokens"] = usage.input_tokens + usage.output_tokens  # by definition
        given = given or None  # the Response's usage is null when nothing is known
        if word == "completed":
            response = self._response("completed", usage=given)
            return [*out, self._event("response.completed", response=response)]
        response = self._response("incomplete", incomplete_details={"reason": word}, usage=given)
        return [*out, self._event("response.incomplete", response=response)]
