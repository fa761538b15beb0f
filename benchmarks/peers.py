"""Adapters: drive each parser the way its own package drives it, chunks in, events out.

Each adapter is ``parse(chunks, sink)``: it feeds the chunks in order, ends the stream,
and calls ``sink(item)`` for every item the parser yields, in the parser's own type.
``to_items`` turns those native items into ``("event", type, data)`` /
``("comment", text, "")`` tuples for the correctness check that precedes every timing;
the timed run and the checked run are the same code.

Every peer is driven through its lowest-level parsing entry point *including the line
splitting and decoding its package does first*, since its users pay for that too (see the
docstring of each adapter for what exactly the package does and where).  HTTP transport
(sockets, content decoding) is left out for everyone.

Peer modules are imported lazily with importlib, so this file imports (and type-checks)
without any peer installed.
"""

from __future__ import annotations

import importlib
import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from sse_sansio import NEED_DATA, Comment, Connection, EndOfStream, Event

__all__ = ["FLOORS", "PEERS", "Peer", "Sink", "available", "drain_floor", "floor"]

Sink = Callable[[Any], None]
Item = tuple[str, str, str]


@dataclass(frozen=True)
class Peer:
    """One parser under test.

    Attributes:
        name: Short name for the tables.
        dist: The distribution name on PyPI (for its version), or "" for none.
        module: The module to import to find out whether the peer is available.
        make: Returns the adapter ``parse(chunks, sink)``; imports the peer.
        to_items: Native item -> expected-item tuple, or None for an item to ignore.
        comments: Whether the parser delivers comments as items.
        entry: What the adapter calls, for the README and the table.
    """

    name: str
    dist: str
    module: str
    make: Callable[[], Callable[[Iterable[bytes], Sink], None]]
    to_items: Callable[[Any], Item | None]
    comments: bool
    entry: str


# --------------------------------------------------------------------------- sse_sansio


def _sse_sansio(**options: Any) -> Callable[[Iterable[bytes], Sink], None]:
    def parse(chunks: Iterable[bytes], sink: Sink) -> None:
        # The drain loop from the README, written as a user writes it.
        conn = Connection(**options)
        for chunk in chunks:
            conn.receive_data(chunk)
            while True:
                item = conn.next_event()
                if item is NEED_DATA:
                    break
                sink(item)
        conn.receive_data(b"")
        while True:
            item = conn.next_event()
            if isinstance(item, EndOfStream):
                break
            sink(item)

    return parse


def _sse_sansio_item(item: Any) -> Item | None:
    if isinstance(item, Event):
        return ("event", item.type, item.data)
    if isinstance(item, Comment):
        return ("comment", item.text, "")
    # NEED_DATA and EndOfStream never reach the sink.
    raise TypeError(f"unexpected item {item!r}")


# --------------------------------------------------------------------------- floor


def floor(chunks: Iterable[bytes], sink: Sink) -> None:
    """The floor: split the chunks into lines and decode each line, nothing else.

    LF only (a CR before it stays in the decoded line): the least work any parser does.
    Linear in the input (a partial line waits as a list of pieces).  Calls ``sink`` once,
    at the end, with the number of lines.
    """
    pending: list[bytes] = []
    n = 0
    for chunk in chunks:
        if b"\n" not in chunk:
            pending.append(chunk)
            continue
        lines = chunk.split(b"\n")
        if pending:
            pending.append(lines[0])
            lines[0] = b"".join(pending)
            pending = []
        tail = lines.pop()
        if tail:
            pending.append(tail)
        for line in lines:
            line.decode()
        n += len(lines)
    sink(n)


def _floor() -> Callable[[Iterable[bytes], Sink], None]:
    return floor


class _Unparsed:
    """A Connection that parses nothing: what the drain loop alone costs.

    Its ``receive_data()`` only queues, as sse_sansio's does for a chunk of bytes, and
    its ``next_event()`` is a generator's ``__next__`` that drops what was queued and
    returns ``NEED_DATA``.  Any parser behind this API pays at least this per chunk.
    """

    def __init__(self) -> None:
        self._chunks: deque[bytes] = deque()
        self._plain = True
        self.next_event = self._drop().__next__

    def receive_data(self, data: bytes) -> None:
        if type(data) is bytes and data and self._plain:
            self._chunks.append(data)

    def _drop(self) -> Iterator[object]:
        chunks = self._chunks
        while True:
            chunks.clear()
            yield NEED_DATA


def drain_floor(chunks: Iterable[bytes], sink: Sink) -> None:
    """The drain loop from the README around a connection that parses nothing.

    Calls ``sink`` once, at the end, with the number of chunks.
    """
    conn = _Unparsed()
    n = 0
    for chunk in chunks:
        conn.receive_data(chunk)
        n += 1
        while True:
            item = conn.next_event()
            if item is NEED_DATA:
                break
            sink(item)  # never reached: nothing is parsed
    sink(n)


def _drain_floor() -> Callable[[Iterable[bytes], Sink], None]:
    return drain_floor


# --------------------------------------------------------------------------- httpx-sse


def _httpx_sse() -> Callable[[Iterable[bytes], Sink], None]:
    # EventSource.iter_sse(): _iter_sse_lines(response) feeds response.iter_text() (httpx's
    # TextDecoder, an incremental UTF-8 decoder with errors="replace", then TextChunker)
    # into SSELineDecoder.decode(), and each line into SSEDecoder.decode().
    decoders = importlib.import_module("httpx_sse._decoders")
    httpx_decoders = importlib.import_module("httpx._decoders")
    line_decoder_cls = decoders.SSELineDecoder
    sse_decoder_cls = decoders.SSEDecoder
    text_decoder_cls = httpx_decoders.TextDecoder
    text_chunker_cls = httpx_decoders.TextChunker

    def parse(chunks: Iterable[bytes], sink: Sink) -> None:
        text_decoder = text_decoder_cls(encoding="utf-8")
        chunker = text_chunker_cls(chunk_size=None)
        lines = line_decoder_cls()
        decoder = sse_decoder_cls()
        for chunk in chunks:
            for text in chunker.decode(text_decoder.decode(chunk)):
                for line in lines.decode(text):
                    sse = decoder.decode(line)
                    if sse is not None:
                        sink(sse)
        for text in chunker.decode(text_decoder.flush()):
            for line in lines.decode(text):  # only a split UTF-8 sequence
                sse = decoder.decode(line)
                if sse is not None:
                    sink(sse)
        for line in lines.flush():
            sse = decoder.decode(line)
            if sse is not None:
                sink(sse)

    return parse


def _httpx_sse_item(sse: Any) -> Item:
    return ("event", sse.event or "message", sse.data)


# --------------------------------------------------------------------------- SDKs


def _sdk(module: str) -> Callable[[], Callable[[Iterable[bytes], Sink], None]]:
    # Stream._iter_events(): client._make_sse_decoder() returns SSEDecoder(), whose
    # iter_bytes() takes response.iter_bytes() and does its own line splitting.
    def make() -> Callable[[Iterable[bytes], Sink], None]:
        decoder_cls = importlib.import_module(module).SSEDecoder

        def parse(chunks: Iterable[bytes], sink: Sink) -> None:
            for sse in decoder_cls().iter_bytes(iter(chunks)):
                sink(sse)

        return parse

    return make


def _sdk_item(sse: Any) -> Item:
    return ("event", sse.event or "message", sse.data)


# --------------------------------------------------------------------------- sseclient-py


def _sseclient() -> Callable[[Iterable[bytes], Sink], None]:
    # SSEClient(event_source).events(): event_source is iterated for byte chunks; _read()
    # stitches them into event blocks, events() splits and decodes each block.
    client_cls = importlib.import_module("sseclient").SSEClient

    def parse(chunks: Iterable[bytes], sink: Sink) -> None:
        for event in client_cls(chunks).events():
            sink(event)

    return parse


def _sseclient_item(event: Any) -> Item:
    return ("event", event.event, event.data)


# --------------------------------------------------------------------------- launchdarkly


def _launchdarkly() -> Callable[[Iterable[bytes], Sink], None]:
    # SSEClient.all: _SSEReader(_BufferedLineReader.lines_from(stream)).events_and_comments()
    # where stream is the connection's iterator of byte chunks.
    reader = importlib.import_module("ld_eventsource.reader")
    lines_from = reader._BufferedLineReader.lines_from
    reader_cls = reader._SSEReader

    def parse(chunks: Iterable[bytes], sink: Sink) -> None:
        for item in reader_cls(lines_from(chunks), None, None).events_and_comments():
            sink(item)

    return parse


def _launchdarkly_item(item: Any) -> Item | None:
    if type(item).__name__ == "Comment":
        # It keeps the space after the colon; compare the text as the spec reads it.
        text = item.comment
        return ("comment", text[1:] if text.startswith(" ") else text, "")
    return ("event", item.event, item.data)


# --------------------------------------------------------------------------- assel


def _assel() -> Callable[[Iterable[bytes], Sink], None]:
    # Parser.receive_bytes(chunk) -> list of events (parse() is this loop).
    parser_cls = importlib.import_module("assel").Parser

    def parse(chunks: Iterable[bytes], sink: Sink) -> None:
        parser = parser_cls()
        for chunk in chunks:
            for event in parser.receive_bytes(chunk):
                sink(event)

    return parse


def _assel_item(event: Any) -> Item:
    return ("event", event.event, event.data)


# --------------------------------------------------------------------------- axio-sse


def _axio() -> Callable[[Iterable[bytes], Sink], None]:
    # events(): Decoder().decode(chunk) per chunk, then decode(final=True).
    decoder_cls = importlib.import_module("axio_sse").Decoder

    def parse(chunks: Iterable[bytes], sink: Sink) -> None:
        decoder = decoder_cls()
        for chunk in chunks:
            for event in decoder.decode(chunk):
                sink(event)
        for event in decoder.decode(final=True):
            sink(event)

    return parse


def _axio_item(event: Any) -> Item:
    return ("event", event.event or "message", event.data)


#: sse_sansio with comments counted (Connection(count_comments=True)), not handed out:
#: what it does for a caller that wants only their sign of life, beside the peers that
#: drop them.  Timed on the keepalive workload only (elsewhere it is sse_sansio's row).
COUNTING = "sse_sansio (counting comments)"

#: Every parser, sse_sansio first and the floor last.
PEERS: tuple[Peer, ...] = (
    Peer(
        "sse_sansio",
        "sse_sansio",
        "sse_sansio",
        _sse_sansio,
        _sse_sansio_item,
        True,
        "Connection.receive_data() + next_event() until NEED_DATA",
    ),
    Peer(
        COUNTING,
        "sse_sansio",
        "sse_sansio",
        lambda: _sse_sansio(count_comments=True),
        _sse_sansio_item,
        False,
        "the same with Connection(count_comments=True)",
    ),
    Peer(
        "httpx-sse",
        "httpx-sse",
        "httpx_sse",
        _httpx_sse,
        _httpx_sse_item,
        False,
        "httpx TextDecoder + SSELineDecoder.decode + SSEDecoder.decode (as iter_sse)",
    ),
    Peer(
        "openai",
        "openai",
        "openai",
        _sdk("openai._streaming"),
        _sdk_item,
        False,
        "openai._streaming.SSEDecoder().iter_bytes(chunks) (as Stream)",
    ),
    Peer(
        "anthropic",
        "anthropic",
        "anthropic",
        _sdk("anthropic._streaming"),
        _sdk_item,
        False,
        "anthropic._streaming.SSEDecoder().iter_bytes(chunks) (as Stream)",
    ),
    Peer(
        "sseclient-py",
        "sseclient-py",
        "sseclient",
        _sseclient,
        _sseclient_item,
        False,
        "SSEClient(chunks).events()",
    ),
    Peer(
        "launchdarkly",
        "launchdarkly-eventsource",
        "ld_eventsource",
        _launchdarkly,
        _launchdarkly_item,
        True,
        "_SSEReader(_BufferedLineReader.lines_from(chunks)).events_and_comments()",
    ),
    Peer("assel", "assel", "assel", _assel, _assel_item, False, "Parser().receive_bytes(chunk)"),
    Peer(
        "axio-sse",
        "axio-sse",
        "axio_sse",
        _axio,
        _axio_item,
        False,
        "Decoder().decode(chunk), then decode(final=True)",
    ),
    Peer("floor", "", "", _floor, lambda n: None, False, "bytes.split(b'\\n') + decode"),
    Peer(
        "drain floor",
        "",
        "",
        _drain_floor,
        lambda n: None,
        False,
        "the drain loop around a Connection that parses nothing",
    ),
)

#: Rows that are not parsers: lower bounds, shown for scale, never the fastest peer.
FLOORS = frozenset({"floor", "drain floor"})

#: sse_sansio's rows: never the fastest peer either.
OURS = frozenset({"sse_sansio", COUNTING})


def available(peer: Peer) -> tuple[Callable[[Iterable[bytes], Sink], None] | None, str]:
    """Import a peer: (adapter, version) or (None, why it is unavailable)."""
    try:
        parse = peer.make()
    except Exception as exc:  # an ImportError, or a SyntaxError on an old Python
        return None, f"{type(exc).__name__}: {exc}".splitlines()[0]
    if not peer.dist:
        return parse, ""
    try:
        return parse, metadata.version(peer.dist)
    except metadata.PackageNotFoundError:
        return parse, "source checkout"


def python_version() -> str:
    """The running Python, e.g. ``CPython 3.12.1``."""
    return f"{sys.implementation.name} {sys.version.split()[0]}"
