# keep_raw's bookkeeping: the received bytes not yet handed out, and where it is safe
# to cut them.
#
# Strategy.  With Connection(keep_raw=True) every chunk is also appended to one
# bytearray, which starts at stream offset ``start``.  An item's ``raw`` is the bytes
# from ``start`` up to the item's ``end``, handed out (copied once) and deleted from
# the front; ``take_raw()`` hands out up to ``safe_end``, the end of the last stretch
# that belongs to no item (a blank line, an ``id:``-only block, the LF of a split
# CRLF).  The parser moves ``safe_end`` as it walks; nothing here runs per line.
#
# Invariants:
# - start <= safe_end <= the offset of the next byte the parser will walk, so no byte
#   is handed out twice, none is lost, and a comment inside an unfinished event (raw
#   b"") leaves its bytes to that event.
# - Bytes waiting for take_raw() never exceed max_event_size when a chunk arrives:
#   receive() refuses the chunk instead (the caller must take_raw() at NEED_DATA).
# - Once everything is handed out the bytearray is replaced by an empty one, so an
#   idle connection does not keep the allocation of the last big event.  Deleting
#   from the front keeps no big allocation either: CPython's bytearray (3.4 on) moves
#   its start, but moves what stays to a fresh allocation once that is under half of
#   the old one, at most the bytes just handed out (linear; tests check it).
# - A big line's bytes are held here only: the parser drops its own copy as the line
#   arrives (count_spill() in _lines.py) and reads the line from here at its end.  A
#   data line's value stays here, as its stream offsets, until the event is handed
#   out, and is decoded from the handed-out bytes: the event then peaks at its two
#   copies (data and raw), the least an item holding both can, plus this bytearray's
#   growth slack (CPython over-allocates by up to an eighth as it grows: 0.06 times
#   the size measured on an 8 MiB line in 64 KiB chunks, 0.12 on a 32 MiB one).
# - A chunk fed while a read holds a memoryview of the bytearray (receive_data() from a
#   finalizer the garbage collector runs there, or from another thread: CPython 3.14's
#   incremental collector runs finalizers at any bytecode, inside these methods too)
#   cannot be appended (a bytearray with an export refuses to grow: BufferError).  It
#   waits in ``waiting``, and so does every chunk after it, keeping stream order; every
#   read folds them in first, when nothing holds a view.  ``waiting`` is None otherwise,
#   so the common path pays one ``is None`` test per call.

from __future__ import annotations

from sse_sansio._errors import LocalProtocolError

from ._lines import WINDOW, check_utf8

__all__ = ["RawBytes"]


class RawBytes:
    """The received bytes a keep_raw connection has not handed out yet."""

    __slots__ = ("buf", "limit", "safe_end", "start", "waiting")

    def __init__(self, limit: int) -> None:
        self.buf = bytearray()
        self.limit = limit  # max_event_size
        self.start = 0  # the stream offset of buf[0]
        self.safe_end = 0  # bytes before this offset belong to no item still to come
        self.waiting: list[bytes] | None = None  # chunks not yet in buf (see above)

    def receive(self, data: bytes) -> None:
        """Keep a chunk; refuse it while more than ``limit`` bytes wait for take()."""
        limit = self.limit
        if self.safe_end - self.start > limit:
            # The caller keeps feeding without taking what is safe to forward.
            raise LocalProtocolError(
                f"{self.safe_end - self.start} bytes are waiting for take_raw(), "
                f"more than max_event_size={limit}: call take_raw() at every NEED_DATA"
            )
        if self.waiting is None:
            try:
                self.buf += data
                return
            except BufferError:  # a read in progress holds a view of buf
                self.waiting = []
        self.waiting.append(data)

    def _fold(self) -> None:
        """Append the waiting chunks to buf, in order (a read calls it first)."""
        waiting = self.waiting
        assert waiting is not None
        while waiting:
            self.buf += waiting[0]
            # Removed only once in buf: a chunk fed meanwhile queues behind it.
            del waiting[0]
        self.waiting = None

    def hand_out(self, end: int) -> bytes:
        """The bytes up to stream offset ``end``, no longer kept."""
        if self.waiting is not None:
            self._fold()
        cut = end - self.start
        buf = self.buf
        if cut == len(buf):
            out = bytes(buf)
            self.buf = bytearray()  # frees the allocation, unlike del buf[:]
        else:
            with memoryview(buf) as view:
                out = view[:cut].tobytes()  # one copy (bytes(buf[:cut]) makes two)
            del buf[:cut]
        self.start = self.safe_end = end
        return out

    def take(self) -> bytes:
        """The bytes that are safe to forward now (take_raw())."""
        return self.hand_out(self.safe_end)

    def drop(self, upto: int) -> None:
        """Forget the bytes from ``safe_end`` up to stream offset ``upto`` (a skipped
        block's, on_oversize="skip"), if any.

        The bytes before ``safe_end`` still wait for take(); the dropped ones are cut
        out of the buffer, and ``start`` moves on by as many, so that the buffer's
        offsets stay right for everything after the cut.
        """
        if upto <= self.safe_end:
            return
        if self.waiting is not None:
            self._fold()
        keep = self.safe_end - self.start
        del self.buf[keep : upto - self.start]
        self.start += upto - self.safe_end
        self.safe_end = upto

    def copy(self, start: int, end: int) -> bytes:
        """The kept bytes from stream offset ``start`` to ``end``, still kept."""
        if self.waiting is not None:
            self._fold()
        with memoryview(self.buf) as view:
            return view[start - self.start : end - self.start].tobytes()

    def check_utf8(self, start: int, end: int, window: int = WINDOW) -> None:
        """Strict mode: refuse invalid UTF-8 in the kept bytes from ``start`` to ``end``.

        The error is the one decoding them at once gives, at the same stream offset
        (checked ``window`` bytes at a time, the parser's window).
        """
        if self.waiting is not None:
            self._fold()
        with memoryview(self.buf) as view, view[start - self.start : end - self.start] as kept:
            check_utf8([kept], start, "invalid UTF-8", window)

    def tail(self, offset: int) -> bytes | bytearray:
        """The kept bytes from stream offset ``offset`` on (the stream's last line)."""
        if self.waiting is not None:
            self._fold()
        return self.buf[offset - self.start :]
