# The Translator (issue 35, item 1): one streamed LLM answer read in one API's dialect
# and written, as it arrives, in another's, keeping how it ended.
#
# Pipeline: source items -> the source's own Tracker (its dialect's reading fills the
# answer's Parts and judges the outcome) -> neutral steps (_writing.py: text,
# reasoning, a tool call's start, argument fragments and end; at the end finish, fail,
# or for a cut only what a writer held back) -> the target's writer -> target events.
#
# Reading by the Parts: after each source event, what the dialect's Parts gained since
# the last event (new text and reasoning fragments, new calls, new argument fragments, a
# call marked whole) is the event's contribution, so the Translator never learns a
# source API's shape: a fix to a dialect's reading reaches it at once.  A call starts in
# the target once its name is known (every API gives it in the call's first event) and
# ends when the source says it is whole; its final arguments (an API may resend them,
# or send them whole) are handed to the writer, after the part not yet streamed when the
# streamed text is a prefix of them.
#
# Ending: the target's finish or error frames are written as soon as the source's
# outcome is known: with the event that settles it (the API's terminal event, an error),
# or by end() (Gemini's only end marker is the end of the stream itself; a cut).  A cut
# writes no terminal frame: the target's Tracker then reads a cut too.  Usage travels
# with the finish, and only when the source's figures are its final ones ("reported");
# input tokens the caller knew up front (input_tokens=) go in the target's opening
# frame where it has usage (Anthropic's message_start) and fill the final usage's
# input figure where the upstream's left it out (issue 42, item 4).
# The outcome at the settling event is a copy of the tracker ended there: the event
# settled it, so the real end gives the same (the tracker itself takes later events).
#
# Invariants: the target's Tracker fed the output reports the source's outcome word,
# its stop kind (through the writers' tables: docs/llm-translation.rst), its answer and
# its usage where the target carries them; the state is plain data (pickles through
# sse_sansio.llm.Translator).

from __future__ import annotations

import copy
import json
from collections.abc import AsyncGenerator, AsyncIterable
from dataclasses import replace
from typing import Any

from sse_sansio._errors import StreamCut
from sse_sansio._events import Comment, EndOfStream, Event
from sse_sansio._pickling import public_reduce, restore

from ._answer import Parts
from ._outcome import Outcome
from ._pipe import close, next_item
from ._registry import DIALECTS, WRITERS, make_dialect
from ._tracker import Tracker
from ._usage import UNAVAILABLE, given
from ._writing import Writer

__all__ = ["WRITERS", "Translator"]

Output = list[Event | Comment]


class Translator:
    """Translate one streamed LLM response from one API's dialect into another's.

    Feed it every item of the upstream response (:class:`~sse_sansio.Event`,
    :class:`~sse_sansio.Comment`, the :class:`~sse_sansio.EndOfStream`) and send what
    :meth:`feed` returns; when the upstream ends, send what :meth:`end` returns.  The
    target API's own :class:`Tracker`, fed the output, reports the source's outcome
    (completed, stopped, failed, cut), its stop kind (mapped by the table in
    :doc:`/llm-translation`), its answer (text, reasoning, tool calls) and its usage,
    as far as the target can carry them.  A source that did not end never gets the
    target's terminal frame.  Comments (keepalives) pass through.

    Args:
        source: The upstream's dialect, one of :data:`REFRAMER_DIALECTS`.
        target: The dialect to write, one of :data:`REFRAMER_DIALECTS`.
        input_tokens: The prompt's tokens, when the gateway knows them before the
            upstream says (it counted them, or asked the API's token counter): they go
            into the target's opening frame where its format has one (Anthropic's
            ``message_start``, which cost trackers read), and into the final usage
            where the upstream's own figures leave them out.  The upstream's reported
            figures always win.  None: only what the upstream reports.

    Raises:
        ValueError: a dialect name not among them (``"auto"`` included), or
            ``input_tokens`` below 0.
        TypeError: ``input_tokens`` not an int.
    """

    def __init__(self, source: str, target: str, *, input_tokens: int | None = None) -> None:
        for role, name in (("source", source), ("target", target)):
            if name not in DIALECTS:
                raise ValueError(
                    f"Translator {role} must be one of {', '.join(DIALECTS)}; got {name!r}"
                )
        self.source = source
        self.target = target
        self.input_tokens = _tokens(input_tokens)
        self._dialect = make_dialect(source)
        self._tracker = Tracker(self._dialect)
        self._writer: Writer = WRITERS[target]()
        self._writer.input_tokens = self.input_tokens
        self._text = 0  # text fragments handed on
        self._reasoning = 0  # reasoning fragments handed on
        # Each call of the source's Parts, in order: [key, streamed text, started, ended].
        self._calls: list[list[Any]] = []
        self._ended = False  # the target's ending (or a cut's nothing) was written

    @property
    def headers(self) -> dict[str, str]:
        """The response headers the target's stream needs (a fresh dict)."""
        return dict(self._writer.headers)

    @property
    def outcome(self) -> Outcome:
        """The source's :class:`Outcome`, once :meth:`end` was called (or the
        ``EndOfStream`` fed).

        Its usage is the upstream's, with ``input_tokens`` filled from the
        translator's own where the upstream gave none; its
        :class:`Provenance` marks that figure ``"given"``.

        Raises:
            LocalProtocolError: the upstream has not ended yet.
        """
        outcome = self._tracker.outcome
        usage = given(outcome.usage, self.input_tokens)
        return outcome if usage is outcome.usage else replace(outcome, usage=usage)

    def feed(self, item: Event | Comment | EndOfStream) -> Output:
        """The target's items for the next upstream item (often none, or one).

        The event that settles the source's outcome (its API's terminal event, or an
        in-band error) also brings the target's ending (:meth:`end` then adds
        nothing); Gemini's only end marker is the end of the stream, so a Gemini
        source's ending comes from :meth:`end`.

        Raises:
            PayloadError: the event's data is not the JSON its dialect documents (as
                :meth:`Tracker.feed` raises it; sticky); for a Gemini target, a whole
                tool call whose arguments are not a JSON object (``functionCall.args``
                holds an object only; the other targets carry the text as it was).
            LocalProtocolError: an item after the end.
            TypeError: not an Event, Comment or EndOfStream.
        """
        if isinstance(item, EndOfStream):
            return self.end(truncated=item.truncated)
        tracker = self._tracker
        tracker.feed(item)
        if isinstance(item, Comment):
            return [Comment(text=item.text)]
        out = self._steps(self._dialect.answer_parts())
        if tracker.settled and not self._ended:
            # The outcome is decided: a copy told that the stream ends here gives it
            # (the tracker itself goes on taking the events that may follow).
            out += self._ending(copy.deepcopy(tracker).end())
        return out

    def end(self, *, truncated: bool = False, gave_up: str | None = None) -> Output:
        """The upstream ended (``truncated``: inside an event): the target's ending.

        Completed or stopped: the target's finish frames (its stop word, usage where
        the source's figures are final, its end marker); failed: its error event; cut:
        no terminal frame.  ``gave_up`` says why you stopped reading (a
        :class:`~sse_sansio.Watchdog` verdict), as :meth:`Tracker.end` takes it.  An
        ending already written by :meth:`feed` is not written again: ``[]``, as for a
        second call.
        """
        return self._ending(self._tracker.end(truncated=truncated, gave_up=gave_up))

    async def pipe(
        self, items: AsyncIterable[Event | Comment | EndOfStream]
    ) -> AsyncGenerator[Event | Comment, None]:
        """Translate a whole upstream: ``items`` (a :class:`~sse_sansio.Relay`, or any
        async iterable of received items) in, the target's items out, as they come.

        A clean end of ``items`` brings :meth:`end`'s frames.  A
        :class:`~sse_sansio.StreamCut` from ``items`` is raised again after every
        complete frame (and no terminal frame: the target's client reads a cut too).
        Comments pass through.  Closing the returned generator (``aclose()``) closes
        ``items``.  So a gateway serves
        ``EventStreamResponse(translator.pipe(relay), headers=translator.headers)``.
        """
        source = aiter(items)
        try:
            while True:
                try:
                    item = await next_item(source)
                except StreamCut:
                    for out in self.end(truncated=True):  # a cut writes no ending
                        yield out
                    raise
                for out in self.end() if item is None else self.feed(item):
                    yield out
                if item is None or isinstance(item, EndOfStream):
                    return
        finally:
            await close(source)

    def _ending(self, outcome: Outcome) -> Output:
        if self._ended:
            return []
        self._ended = True
        writer = self._writer
        if outcome.outcome == "failed":
            message = outcome.error_message or outcome.reason
            return [*writer.flush(), *writer.fail(message, outcome.error_type)]
        if outcome.outcome == "cut":
            return list(writer.flush())
        usage = outcome.usage if outcome.usage.provenance == "reported" else UNAVAILABLE
        if usage.provenance == "reported":
            usage = given(usage, self.input_tokens)  # the known figure, where none came
        return list(writer.finish(self._kind(outcome), usage))

    def _kind(self, outcome: Outcome) -> str:
        """The neutral stop kind of a completed or stopped outcome."""
        if outcome.outcome == "completed":
            return "tool_calls" if self._calls else "stop"
        return WRITERS[self.source].STOPS.get(outcome.stop_reason or "", "other")

    # -- what the source's Parts gained, as neutral steps ---------------------------------

    def _steps(self, parts: Parts) -> Output:
        out: Output = []
        writer = self._writer
        if len(parts.reasoning) > self._reasoning:
            fragment = "".join(parts.reasoning[self._reasoning :])
            self._reasoning = len(parts.reasoning)
            if fragment:
                out += writer.reasoning(fragment)
        if len(parts.text) > self._text:
            fragment = "".join(parts.text[self._text :])
            self._text = len(parts.text)
            if fragment:
                out += writer.text(fragment)
        if parts.calls:
            self._tool_steps(parts, out)
        return out

    def _tool_steps(self, parts: Parts, out: Output) -> None:
        calls = self._calls
        for position, (key, call) in enumerate(parts.calls.items()):
            if position == len(calls):
                calls.append([key, "", False, False])
            entry = calls[position]
            _, streamed, started, ended = entry
            if ended or not (started or call.name is not None or call.complete):
                continue
            if not started:
                entry[2] = True
                out += self._writer.tool_start(
                    position, call.id or f"call_{position}", call.name or ""
                )
            now = "".join(call.parts)
            if len(now) > len(streamed) and now.startswith(streamed):
                out += self._writer.tool_delta(position, now[len(streamed) :])
                entry[1] = streamed = now
            if call.complete:
                entry[3] = True
                final = _arguments(call.final, now, call.value)
                if len(final) > len(streamed) and final.startswith(streamed):
                    out += self._writer.tool_delta(position, final[len(streamed) :])
                out += self._writer.tool_end(position, final)

    # Pickling (issue 32, item 4): a translator mid-stream is worth keeping.  Its pickle
    # names public paths only: this class, the Tracker and the Dialect (which pickle
    # as themselves), and the writer as its plain attributes (made again by target).
    def __reduce__(self) -> tuple[object, ...]:
        return public_reduce(self, _writer=dict(vars(self._writer)))

    def __setstate__(self, state: dict[str, Any]) -> None:
        writer = WRITERS[state["target"]]()
        vars(writer).update(state["_writer"])
        restore(self, {**state, "_writer": writer})


def _tokens(count: int | None) -> int | None:
    if count is None:
        return None
    if not isinstance(count, int) or isinstance(count, bool):
        raise TypeError(f"Translator: input_tokens must be an int or None, not {count!r}")
    if count < 0:
        raise ValueError(f"Translator: input_tokens must be >= 0, not {count!r}")
    return count


def _arguments(final: str | None, streamed: str, value: Any) -> str:
    """A whole call's arguments: as resent, else as streamed, else the object given."""
    if final is not None:
        return final
    if streamed or value is None:
        return streamed
    return json.dumps(value, ensure_ascii=False)
