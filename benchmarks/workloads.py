"""Deterministic benchmark workloads: the stream bytes and the items a parser must produce.

Every workload is built from a fixed seed, so two runs (and two machines) parse the same
bytes.  A workload is a list of *blocks*: the bytes of one event (or one comment) and the
item that those bytes stand for.  The expected items come from the generator, which knows
what it serialized; no parser is consulted.  That is what lets the runner check every
peer's output before timing it.

The workloads (see benchmarks/README.md for why each exists):

- ``llm``: OpenAI-style ``chat.completion.chunk`` JSON events of 200-300 bytes, with some
  Chinese text (multi-byte UTF-8), ending in ``data: [DONE]``.
- ``llm-typed``: Responses-API style, an ``event:`` line before every ``data:`` line.
- ``crlf``: the ``llm`` stream with CRLF line ends.
- ``big``: events of 1 MiB, alternately one ``data:`` line and 1 KiB ``data:`` lines.
- ``keepalive``: ``: ping`` comments, with a few events between them.
"""

from __future__ import annotations

import base64
import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = [
    "NAMES",
    "Item",
    "Workload",
    "big",
    "build",
    "build_for_bytewise",
    "chunked",
    "crlf",
    "keepalive",
    "llm",
    "llm_typed",
    "single_event",
]

#: One expected item: ("event", type, data) or ("comment", text, "").
Item = tuple[str, str, str]

KIB = 1024
MIB = 1024 * 1024

# Word lists for the generated "model output".  Chinese text matters: it puts 3-byte
# UTF-8 sequences in the stream, which chunking then cuts in the middle.
_WORDS = [
    "the",
    "model",
    "streams",
    "tokens",
    "as",
    "small",
    "JSON",
    "deltas",
    "while",
    "the",
    "client",
    "parses",
    "each",
    "event",
    "and",
    "renders",
    "the",
    "text",
    "incrementally",
    "so",
    "latency",
    "stays",
    "low",
    "for",
    "every",
    "user",
    "request",
]
_CHINESE = "你好世界服务器发送事件解析器流式输出模型回答问题数据测试中文字符编码"


@dataclass
class Workload:
    """A stream to parse and what parsing it must produce.

    Attributes:
        name: The workload's name (``llm``, ``big``...).
        blocks: The stream as (bytes, items) pairs, in order; the stream is their
            concatenation.  A block holds whole lines and ends at an item boundary.
        note: A short human description for the results table.
    """

    name: str
    blocks: list[tuple[bytes, list[Item]]]
    note: str = ""
    _stream: bytes | None = field(default=None, repr=False)

    @property
    def stream(self) -> bytes:
        """The whole stream (built once)."""
        if self._stream is None:
            self._stream = b"".join(b for b, _ in self.blocks)
        return self._stream

    @property
    def items(self) -> list[Item]:
        """Every expected item, events and comments, in stream order."""
        return [item for _, items in self.blocks for item in items]

    @property
    def events(self) -> list[Item]:
        """The expected events only (what a parser that drops comments yields)."""
        return [item for item in self.items if item[0] == "event"]

    @property
    def n_lines(self) -> int:
        """How many lines the stream has (what the floor must split off)."""
        return self.stream.count(b"\n")

    @property
    def largest_block(self) -> int:
        """The size in bytes of the largest block (the largest event in the stream)."""
        return max(len(b) for b, _ in self.blocks)

    def prefix(self, max_bytes: int) -> Workload:
        """The longest run of leading blocks that fits in ``max_bytes`` (at least one)."""
        kept: list[tuple[bytes, list[Item]]] = []
        size = 0
        for block in self.blocks:
            if kept and size + len(block[0]) > max_bytes:
                break
            kept.append(block)
            size += len(block[0])
        return Workload(self.name, kept, self.note)


def chunked(data: bytes, size: int) -> list[bytes]:
    """Cut ``data`` into chunks of ``size`` bytes (the last may be shorter); 0 = whole."""
    if size <= 0 or size >= len(data):
        return [data]
    return [data[i : i + size] for i in range(0, len(data), size)]


def _text(rng: random.Random, n_bytes: int) -> str:
    """Mixed English and Chinese "model output" of at most ``n_bytes`` UTF-8 bytes."""
    parts: list[str] = []
    size = 0
    while True:
        if rng.random() < 0.3:
            piece = "".join(rng.choice(_CHINESE) for _ in range(rng.randint(1, 4)))
        else:
            piece = " " + rng.choice(_WORDS)
        piece_size = len(piece.encode())
        if size + piece_size > n_bytes:
            return "".join(parts)
        parts.append(piece)
        size += piece_size


def _fill(make: Callable[[str], str], rng: random.Random, size: int) -> str:
    """The JSON text ``make(content)``, its content filling it to at most ``size`` bytes.

    The words are at most 12 bytes, so the result is within 12 bytes of ``size``.  Neither
    the words nor the Chinese characters need JSON escapes, so content bytes add up.
    """
    room = size - len(make("").encode())
    return make(_text(rng, room))


def _dumps(obj: object) -> str:
    # ensure_ascii=False: the providers send CJK text as raw UTF-8, not \u escapes.
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def llm(n_events: int = 20_000, *, seed: int = 1) -> Workload:
    """OpenAI ``chat.completion.chunk`` events of 200-300 bytes, then ``data: [DONE]``."""
    rng = random.Random(seed)
    blocks: list[tuple[bytes, list[Item]]] = []
    created = 1_730_000_000
    for i in range(n_events - 1):
        target = rng.randint(212, 300) - len("data: \n\n")

        def make(content: str, i: int = i) -> str:
            return _dumps(
                {
                    "id": "chatcmpl-B9x",
                    "object": "chat.completion.chunk",
                    "created": created + i // 50,
                    "model": "gpt-4o",
                    "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": None}],
                }
            )

        data = _fill(make, rng, target)
        blocks.append((f"data: {data}\n\n".encode(), [("event", "message", data)]))
    blocks.append((b"data: [DONE]\n\n", [("event", "message", "[DONE]")]))
    return Workload("llm", blocks, f"{n_events} chat.completion.chunk events, 200-300 B")


def llm_typed(n_events: int = 20_000, *, seed: int = 2) -> Workload:
    """Responses-API style stream: ``event: <type>`` then ``data: <json>`` per event."""
    rng = random.Random(seed)
    blocks: list[tuple[bytes, list[Item]]] = []

    def block(etype: str, data: str) -> tuple[bytes, list[Item]]:
        return (f"event: {etype}\ndata: {data}\n\n".encode(), [("event", etype, data)])

    blocks.append(
        block(
            "response.created",
            _dumps(
                {
                    "type": "response.created",
                    "sequence_number": 0,
                    "response": {"id": "resp_67c9fdcecf", "status": "in_progress"},
                }
            ),
        )
    )
    etype = "response.output_text.delta"
    for seq in range(1, n_events - 1):
        target = rng.randint(212, 300) - len(f"event: {etype}\ndata: \n\n")

        def make(delta: str, seq: int = seq) -> str:
            return _dumps(
                {
                    "type": etype,
                    "sequence_number": seq,
                    "item_id": "msg_67c9",
                    "output_index": 0,
                    "content_index": 0,
                    "delta": delta,
                }
            )

        blocks.append(block(etype, _fill(make, rng, target)))
    blocks.append(
        block(
            "response.completed",
            _dumps(
                {
                    "type": "response.completed",
                    "sequence_number": n_events - 1,
                    "response": {"id": "resp_67c9fdcecf", "status": "completed"},
                }
            ),
        )
    )
    return Workload("llm-typed", blocks, f"{n_events} Responses-API events, 200-300 B")


def crlf(n_events: int = 20_000, *, seed: int = 1) -> Workload:
    """The ``llm`` stream with every line ended by CRLF."""
    base = llm(n_events, seed=seed)
    # JSON escapes raw newlines, so every LF in the stream is a line end.
    blocks = [(b.replace(b"\n", b"\r\n"), items) for b, items in base.blocks]
    return Workload("crlf", blocks, f"the llm stream ({n_events} events) with CRLF line ends")


def _payload(rng: random.Random, n_chars: int) -> str:
    """``n_chars`` of base64 text, like a streamed partial image."""
    raw = rng.randbytes(n_chars * 3 // 4 + 3)
    return base64.b64encode(raw).decode()[:n_chars]


def single_event(size: int, *, lines_of: int = 0, seed: int = 3) -> tuple[bytes, list[Item]]:
    """One ``data``-only event whose block is ``size`` bytes.

    Args:
        size: The block's size in bytes, field names and line ends included.
        lines_of: 0 for one ``data:`` line; else ``data:`` lines of this many bytes each
            (line end included), the last one possibly shorter.
        seed: The random seed of the payload.
    """
    rng = random.Random(seed)
    if lines_of <= 0:
        value = _payload(rng, size - len("data: \n\n"))
        return (f"data: {value}\n\n".encode(), [("event", "message", value)])
    per_line = lines_of - len("data: \n")
    n_lines, rest = divmod(size - 1, lines_of)  # the final blank line is 1 byte
    values = [_payload(rng, per_line) for _ in range(n_lines)]
    if rest > len("data: \n"):
        values.append(_payload(rng, rest - len("data: \n")))
    body = "".join(f"data: {v}\n" for v in values) + "\n"
    return (body.encode(), [("event", "message", "\n".join(values))])


def big(n_events: int = 16, *, event_size: int = MIB, seed: int = 4) -> Workload:
    """Events of ``event_size`` bytes: even ones one ``data:`` line, odd ones 1 KiB lines."""
    blocks = [
        single_event(event_size, lines_of=0 if i % 2 == 0 else KIB, seed=seed + i)
        for i in range(n_events)
    ]
    size = f"{event_size // MIB} MiB" if event_size >= MIB else f"{event_size // KIB} KiB"
    return Workload("big", blocks, f"{n_events} events of {size}, one line / 1 KiB lines")


def keepalive(n_pings: int = 100_000, *, every: int = 10_000, seed: int = 5) -> Workload:
    """``: ping`` comments (each its own block), with one small event after every ``every``."""
    rng = random.Random(seed)
    ping: tuple[bytes, list[Item]] = (b": ping\n\n", [("comment", "ping", "")])
    blocks: list[tuple[bytes, list[Item]]] = []
    for i in range(1, n_pings + 1):
        blocks.append(ping)
        if i % every == 0:
            data = _dumps({"status": "working", "progress": i, "note": _text(rng, 40)})
            blocks.append((f"data: {data}\n\n".encode(), [("event", "message", data)]))
    n_events = n_pings // every
    return Workload("keepalive", blocks, f"{n_pings} `: ping` comments, {n_events} events")


#: The workload names, in table order.
NAMES = ("llm", "llm-typed", "crlf", "big", "keepalive")


def build(name: str, *, quick: bool = False, tiny: bool = False) -> Workload:
    """The named workload at full size, ``quick`` size (about a tenth) or ``tiny`` (tests)."""
    scale = 2 if tiny else (10 if quick else 1)
    if name == "llm":
        return llm(20 if tiny else 20_000 // scale)
    if name == "llm-typed":
        return llm_typed(20 if tiny else 20_000 // scale)
    if name == "crlf":
        return crlf(20 if tiny else 20_000 // scale)
    if name == "big":
        if tiny:
            return big(4, event_size=4 * KIB)
        return big(4 if quick else 16)
    if name == "keepalive":
        if tiny:
            return keepalive(50, every=10)
        return keepalive(100_000 // scale, every=10_000 // scale)
    raise ValueError(f"unknown workload {name!r}; choose from {', '.join(NAMES)}")


def build_for_bytewise(name: str, max_bytes: int) -> Workload:
    """The workload used with 1-byte chunks: a prefix of at most ``max_bytes``.

    The prefix of the full-size workload, built only as far as needed (the generators are
    sequential, so the first blocks do not depend on the count).  ``big``'s 1 MiB events
    cannot fit, so its byte-wise cell uses the same generator with 64 KiB events (smaller
    if ``max_bytes`` is), as many as fit, keeping the one-line / 1 KiB-lines mix.
    """
    if name == "big":
        event_size = min(64 * KIB, max_bytes // 2 // KIB * KIB)
        return big(max_bytes // event_size, event_size=event_size)
    if name == "keepalive":
        return keepalive(max_bytes // 8).prefix(max_bytes)
    # Every block of these is at least 100 bytes.
    n_events = max_bytes // 100 + 2
    if name == "llm":
        return llm(n_events).prefix(max_bytes)
    if name == "llm-typed":
        return llm_typed(n_events).prefix(max_bytes)
    if name == "crlf":
        return crlf(n_events).prefix(max_bytes)
    raise ValueError(f"unknown workload {name!r}; choose from {', '.join(NAMES)}")
