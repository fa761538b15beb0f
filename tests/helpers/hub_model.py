"""An independent model of sse_sansio.Hub's delivery rules (issue 34, item 1).

Written from the rules in docs/fanout.rst, not from the code: each subscriber is a
list of pending frames (bytes, with their conflation key) and, for "drop-oldest", the
number of frames dropped since its last read; sizes are recomputed by summing.  Only
what a reader can observe is modelled: the bytes each read returns and which
subscribers the hub still has.  No keepalives, no coalescing, no window: the hub's
streams are made with none, so every queued frame is due at once.

The rules:
- every subscriber gets every frame published while it is subscribed, in order;
- a frame that would take a subscriber's non-empty queue past ``max_buffer`` bytes:
  - "disconnect": the subscriber is dropped, its queue discarded;
  - "drop-oldest": the oldest frames go until it fits (or none is left); the next read
    starts with the gap event counting every frame dropped since the last read, and
    the gap event's own bytes count toward the queue too (so a queue holding only the
    gap event is not empty);
  - "conflate": first the queued frame with the same key (if any) goes; then, if the
    frame still does not fit, the subscriber is dropped as with "disconnect".
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field

GAP = 'event: sse_sansio.gap\ndata: {{"dropped": {}}}\n\n'


def gap_frame(dropped: int | None) -> bytes:
    """The gap event's bytes, as docs/fanout.rst spells them."""
    return GAP.format("null" if dropped is None else dropped).encode()


@dataclass
class Reader:
    pending: list[tuple[bytes, Hashable | None]] = field(default_factory=list)
    dropped: int | None = None  # frames dropped since the last read (drop-oldest)

    def size(self) -> int:
        gap = 0 if self.dropped is None else len(gap_frame(self.dropped))
        return gap + sum(len(frame) for frame, _ in self.pending)

    def read(self) -> bytes:
        head = b"" if self.dropped is None else gap_frame(self.dropped)
        out = head + b"".join(frame for frame, _ in self.pending)
        self.pending.clear()
        self.dropped = None
        return out


@dataclass
class HubModel:
    max_buffer: int
    policy: str
    readers: dict[int, Reader] = field(default_factory=dict)
    next_id: int = 0

    def subscribe(self) -> int:
        self.next_id += 1
        self.readers[self.next_id] = Reader()
        return self.next_id

    def unsubscribe(self, reader: int) -> None:
        self.readers.pop(reader, None)

    def read(self, reader: int) -> bytes:
        return self.readers[reader].read()

    def publish(self, frame: bytes, key: Hashable | None) -> None:
        for name, reader in list(self.readers.items()):
            if not self._offer(reader, frame, key):
                del self.readers[name]

    def _offer(self, reader: Reader, frame: bytes, key: Hashable | None) -> bool:
        """Queue ``frame``; False when the reader is dropped."""
        if self.policy == "conflate" and key is not None:
            reader.pending = [(f, k) for f, k in reader.pending if k != key]
        if reader.size() and reader.size() + len(frame) > self.max_buffer:
            if self.policy != "drop-oldest":
                return False
            self._drop_oldest(reader, len(frame))
        reader.pending.append((frame, key))
        return True

    def _drop_oldest(self, reader: Reader, incoming: int) -> None:
        dropped = reader.dropped or 0
        while reader.pending and self._real(reader) + incoming > self.max_buffer:
            reader.pending.pop(0)
            dropped += 1
        reader.dropped = dropped

    @staticmethod
    def _real(reader: Reader) -> int:
        """The bytes of the frames pending, the gap event's aside."""
        return sum(len(frame) for frame, _ in reader.pending)
