"""Translator.pipe and HoldBack.pipe (issue 42, item 2): one pipeline, no glue.

Each source is an async generator written here over items parsed from the recorded
streams of tests/data/llm (and a hand-written chat stream for the guard): what the
pipes yield is compared with what feed()/push() and end()/approve() give for the same
items, so the pipes add no rule of their own; a cut at every item boundary is raised
again after every complete frame and with no terminal frame; comments pass through;
closing a pipe closes its source; a veto closes the source and sends the dialect's
error event; and held text goes at its deadline while the source is silent.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterable
from contextlib import aclosing
from pathlib import Path
from typing import Any

import pytest

from sse_sansio import Comment, EndOfStream, Event, StreamCut, serialize
from sse_sansio.llm import HoldBack, Tracker, Translator
from sse_sansio.testing import parse
from tests.helpers.llm_streams import data

DATA = Path(__file__).resolve().parent.parent / "data" / "llm"
ANTHROPIC = (DATA / "anthropic-tool-use.sse").read_bytes()
GUARD = 30.0  # seconds: a failure guard only

Item = Event | Comment | EndOfStream


class Source:
    """An async generator over ``items``, then a clean end, or ``then`` raised (or
    "hang": wait until closed); it records how it ended."""

    def __init__(self, items: list[Any], then: object = None) -> None:
        self.items, self.then = items, then
        self.closed = False
        self.gate = asyncio.Event()  # "wait": held here until the test opens it

    async def __aiter__(self) -> AsyncGenerator[Any, None]:
        try:
            for item in self.items:
                if item == "wait":
                    await self.gate.wait()
                else:
                    yield item
            if isinstance(self.then, BaseException):
                raise self.then
            if self.then == "hang":
                await asyncio.Event().wait()
        finally:
            self.closed = True


async def collect(pipe: AsyncIterable[Any]) -> tuple[list[Any], BaseException | None]:
    out: list[Any] = []
    try:
        async for item in pipe:
            out.append(item)
    except StreamCut as exc:
        return out, exc
    return out, None


def run(pipe: AsyncIterable[Any]) -> tuple[list[Any], BaseException | None]:
    return asyncio.run(asyncio.wait_for(collect(pipe), GUARD))


def wire(items: list[Any]) -> bytes:
    return b"".join(serialize(item) for item in items)


def fed(translator: Translator, items: list[Any], *, cut: bool) -> list[Any]:
    out: list[Any] = []
    for item in items:
        out += translator.feed(item)
    return out + translator.end(truncated=cut)


# -- Translator.pipe --------------------------------------------------------------------


def test_a_clean_source_gets_the_whole_translation_with_its_ending() -> None:
    items = [item for item in parse(ANTHROPIC) if not isinstance(item, EndOfStream)]
    source = Source(items)
    translator = Translator("anthropic", "openai-chat")
    out, cut = run(translator.pipe(source))
    assert cut is None
    assert wire(out) == wire(fed(Translator("anthropic", "openai-chat"), items, cut=False))
    assert wire(out).endswith(b"data: [DONE]\n\n")
    assert translator.outcome.outcome == "completed"
    assert source.closed


def test_a_source_that_hands_on_its_end_of_stream_ends_the_pipe() -> None:
    items = parse(ANTHROPIC)  # the EndOfStream last
    out, cut = run(Translator("anthropic", "openai-responses").pipe(Source(items)))
    assert cut is None
    want = fed(Translator("anthropic", "openai-responses"), items, cut=False)
    assert wire(out) == wire(want)


@pytest.mark.parametrize("target", ["openai-chat", "openai-responses", "anthropic", "gemini"])
def test_a_cut_at_every_item_is_raised_after_every_complete_frame(target: str) -> None:
    items = [item for item in parse(ANTHROPIC) if not isinstance(item, EndOfStream)]
    for n in range(len(items) - 1):  # the last item is the terminal event
        source = Source(items[:n], then=StreamCut("the upstream's read failed"))
        out, cut = run(Translator("anthropic", target).pipe(source))
        assert isinstance(cut, StreamCut), n
        assert wire(out) == wire(fed(Translator("anthropic", target), items[:n], cut=True)), n
        tracker = Tracker(target)
        for item in parse(wire(out)):
            tracker.feed(item)
        assert tracker.outcome.outcome == "cut", n  # no terminal frame
        assert source.closed, n


def test_comments_pass_through_the_translator_pipe() -> None:
    items = [Comment(text="keepalive"), *parse(ANTHROPIC)[:2], Comment(text="k2")]
    out, _ = run(Translator("anthropic", "openai-chat").pipe(Source(items)))
    assert [item.text for item in out if isinstance(item, Comment)] == ["keepalive", "k2"]


def test_closing_the_pipe_closes_the_source() -> None:
    source = Source(parse(ANTHROPIC), then="hang")

    async def first_then_close() -> list[Any]:
        pipe = Translator("anthropic", "openai-chat").pipe(source)
        async with aclosing(pipe):  # an async generator: no cast needed
            return [await anext(pipe)]

    (first,) = asyncio.run(first_then_close())
    assert isinstance(first, Event)
    assert source.closed


def test_a_source_without_aclose_is_read_to_its_end() -> None:
    class Plain:
        def __init__(self, items: list[Any]) -> None:
            self.items = iter(items)

        def __aiter__(self) -> Plain:
            return self

        async def __anext__(self) -> Any:
            for item in self.items:
                return item
            raise StopAsyncIteration

    items = parse(ANTHROPIC)
    out, cut = run(Translator("anthropic", "gemini").pipe(Plain(items)))
    assert cut is None
    assert wire(out) == wire(fed(Translator("anthropic", "gemini"), items, cut=False))


# -- HoldBack.pipe ----------------------------------------------------------------------


def chat_stream(pieces: list[str]) -> list[Event]:
    chunk = {"id": "c1", "object": "chat.completion.chunk", "model": "m"}
    out = [data({**chunk, "choices": [{"index": 0, "delta": {"content": p}}]}) for p in pieces]
    last = {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    events = parse(b"".join([*out, data(last), b"data: [DONE]\n\n"]))
    return [item for item in events if isinstance(item, Event)]


PIECES = ["Hello ", "there, ", "this is ", "forbidden ", "text."]


def text_of(items: list[Any]) -> str:
    tracker = Tracker("openai-chat")
    for item in parse(wire(items)):
        tracker.feed(item)
    return tracker.answer.text


def test_a_clean_source_is_released_whole() -> None:
    source = Source(chat_stream(PIECES))
    out, cut = run(HoldBack("openai-chat", chars=20, now=0.0).pipe(source, now=lambda: 0.0))
    assert cut is None
    assert out == chat_stream(PIECES)
    assert source.closed


def test_a_veto_sends_the_error_event_instead_of_the_held_text_and_closes_the_source() -> None:
    source = Source(chat_stream(PIECES), then="hang")
    seen: list[str] = []

    def check(text: str) -> str | None:
        seen.append(text)
        return "the answer broke the content policy" if "forbidden" in text else None

    hold = HoldBack("openai-chat", chars=12, now=0.0)
    out, cut = run(hold.pipe(source, check=check, now=lambda: 0.0))
    assert cut is None
    assert hold.vetoed
    assert source.closed
    assert seen == PIECES[:4]  # every piece checked before any of it went
    *released, error, end = out
    # "Hello " had 15 characters after it when "this is " came (12 needed); "there, "
    # got its 12 only with "forbidden ", whose push the veto dropped with the rest.
    assert text_of(released) == "Hello "
    assert "the answer broke the content policy" in error.data
    assert end.data == "[DONE]"


def test_a_cut_is_raised_after_the_held_items() -> None:
    events = chat_stream(PIECES)[:3]
    source = Source([*events, Comment(text="k")], then=StreamCut("the upstream ended early"))
    out, cut = run(HoldBack("openai-chat", chars=1000, now=0.0).pipe(source, now=lambda: 0.0))
    assert isinstance(cut, StreamCut)
    assert out == [*events, Comment(text="k")]
    assert source.closed


def test_held_text_goes_at_its_deadline_while_the_source_is_silent() -> None:
    events = chat_stream(["Hi"])
    source = Source([events[0], "wait", *events[1:]])

    async def consume() -> list[Any]:
        out: list[Any] = []
        hold = HoldBack("openai-chat", seconds=0.01, now=asyncio.get_running_loop().time())
        async for item in hold.pipe(source, now=asyncio.get_running_loop().time):
            out.append(item)
            source.gate.set()  # the source goes on only once the text was released
        return out

    out = asyncio.run(asyncio.wait_for(consume(), GUARD))
    assert out == events


def test_closing_a_hold_pipe_mid_read_finishes_the_read_and_closes_the_source() -> None:
    source = Source(chat_stream(["Hi"])[:1], then="hang")

    async def first_then_close() -> list[Any]:
        loop = asyncio.get_running_loop()
        pipe = HoldBack("openai-chat", seconds=0.01, now=loop.time()).pipe(source, now=loop.time)
        async with aclosing(pipe):
            return [await anext(pipe)]  # released by time; a read is pending then

    assert asyncio.run(asyncio.wait_for(first_then_close(), GUARD)) == chat_stream(["Hi"])[:1]
    assert source.closed


def test_the_whole_pipeline_hold_over_translator() -> None:
    items = parse(ANTHROPIC)
    source = Source(items)
    translator = Translator("anthropic", "openai-chat")
    hold = HoldBack("openai-chat", chars=8, now=0.0)
    out, cut = run(hold.pipe(translator.pipe(source), now=lambda: 0.0))
    assert cut is None
    assert source.closed
    assert wire(out) == wire(fed(Translator("anthropic", "openai-chat"), items, cut=False))


def test_what_a_writer_held_back_goes_before_the_cut_is_raised() -> None:
    """Writer.flush()'s contract: content a writer holds back goes out before a cut
    (none of this package's writers holds any back today, so one is made to)."""
    translator = Translator("anthropic", "openai-chat")
    held = Event(data='{"held": true}')
    translator._writer.flush = lambda: [held]  # type: ignore[method-assign]
    items = parse(ANTHROPIC)[:3]
    out, cut = run(translator.pipe(Source(items, then=StreamCut("cut"))))
    assert isinstance(cut, StreamCut)
    assert out[-1] is held
