# Cutting the received bytes into lines: the BOM, windows, runs of one kind of line end,
# the line still arriving, and the end-of-stream check of what is left of it.
#
# Spec: WHATWG HTML 9.2.6: "Lines must be separated by either a U+000D CARRIAGE RETURN
# U+000A LINE FEED (CRLF) character pair, a single U+000A LINE FEED (LF) character, or a
# single U+000D CARRIAGE RETURN (CR) character."  CR and LF never occur inside a UTF-8
# multibyte sequence, so lines are cut on bytes and decoded whole (in _interpret.py).
#
# Strategy.  The parser takes the queued chunks in order, in windows of at most WINDOW
# bytes, and splits each window with one C-level bytes.split() (or splitlines()).
# Everything here runs once per stream, once per window or once per rare event (a big
# line, the end of the stream), never once per line: a Python call per line would cost
# about 42 ns, more than some lines take to parse.  The per-line and per-chunk work is
# inline in _interpret.py's generator, which calls these.
#
# Invariants:
# - Each byte is searched and split a bounded number of times: once in its window, once
#   more in the join of a cut line, once in the rare window that mixes kinds of line end
#   (where _uniform_runs() finds the runs with forward searches that never go back).
# - A window never ends between the CR and the LF of a CRLF that one chunk holds: only
#   the caller's chunks can split a CRLF, which is what the span rule is about.
# - The line still arriving is one bytearray that grows in place (a line trickling in by
#   tiny chunks would otherwise cost a bytes header per chunk), and every SPILL bytes of
#   it move to an exact-size bytes object (spill()), so the bytearray's growth slack
#   stays a constant: a big line is held once as it arrives and twice when it ends.
#   In keep_raw mode those bytes are dropped instead (count_spill()): keep_raw's buffer
#   already holds them.

from __future__ import annotations

import codecs
import re
from collections.abc import Generator, Sequence
from typing import TYPE_CHECKING, Final, NoReturn

from sse_sansio._errors import RemoteProtocolError
from sse_sansio._need_data import NEED_DATA, NeedData

if TYPE_CHECKING:
    from ._stream import ChunkQueue

__all__ = [
    "SPILL",
    "WINDOW",
    "check_cut_line",
    "check_utf8",
    "count_spill",
    "exceeds",
    "fail",
    "sniff_head",
    "spill",
    "split_window",
    "take_bom",
]

# The most bytes split into lines at once, by default.  Big enough that the per-window
# costs (a few C-level searches, one split) vanish against the per-line ones, small
# enough that the list of lines waiting in a window stays a constant-size allocation.
# (The parsers take the size as a parameter, _interpret.Tuning: tests pass a few bytes,
# so that the code at window edges runs on every input.)
WINDOW: Final = 64 * 1024

# A line still arriving moves to an exact-size bytes object every this many bytes.
SPILL: Final = 256 * 1024

_BOM: Final = b"\xef\xbb\xbf"
_LINE_END: Final = re.compile(rb"[\r\n]")
# A line end that is not part of a CRLF: a CR not followed by LF, an LF not after CR.
_LONE_LINE_END: Final = re.compile(rb"\r(?!\n)|(?<!\r)\n")
# A stretch of line-end bytes long enough to hold three line ends or more (see
# _as_one_kind).  A plain character class scans about three times as fast as an
# alternation of the three line ends; split_window() still only looks where a lone CR
# or LF sits beside another line end.
_LINE_END_STRETCH: Final = re.compile(rb"[\r\n]{5,}")
_utf8_decoder: Final = codecs.getincrementaldecoder("utf-8")

Runs = list[tuple[list[bytes], int]] | tuple[tuple[list[bytes], int], ...]


def fail(message: str, offset: int) -> NoReturn:
    """The peer broke the protocol at stream ``offset``."""
    raise RemoteProtocolError(f"{message} at byte offset {offset}", offset=offset)


def exceeds(limit: int, offset: int) -> NoReturn:
    """The block passed ``max_event_size``: its byte at ``offset`` is one too many."""
    fail(f"event exceeds max_event_size={limit} bytes", offset)


def take_bom(queue: ChunkQueue) -> Generator[NeedData, None, tuple[int, bytes]]:
    """Wait for the stream's first bytes; drop a leading BOM.  Once per stream.

    Spec (Encoding, "UTF-8 decode"): a leading BOM is dropped, only at the very start
    of the stream, also when it arrives over several chunks.  It is looked for only
    while the bytes so far are a prefix of it: the first byte that is not ends the
    look-ahead, so that no item waits for bytes that may never come.  Returns the
    BOM's length (0 or 3) and, when the stream ended inside what may have been a BOM,
    those bytes: the start of the line still arriving, which is not a line yet (no
    limit applies; strict mode refuses it as a cut sequence).  Other bytes go back to
    the front of the queue.
    """
    head = b""
    while len(head) < 3 and _BOM.startswith(head):
        while (chunk := queue.take()) is None:
            if queue.ended:
                return 0, head  # the stream ended inside what may have been a BOM
            yield NEED_DATA
        head += chunk
    if head.startswith(_BOM):
        head = head[3:]
        skipped = 3
    else:
        skipped = 0
    if head:
        queue.put_back(head)
    return skipped, b""


def sniff_head(queue: ChunkQueue, head: bytes, most: int) -> Generator[NeedData, None, bytes]:
    """Diagnostics: the stream's first line, to tell what the stream looks like.  Once.

    Waits for the first line end (or ``most`` bytes, or the end of the stream): no item
    can come before it anyway.  ``head`` is what take_bom() returned (the start of a
    BOM that the stream's end cut, else b"").  Returns the bytes up to and with that
    line end (a CRLF whole, unless a chunk ended at its CR: the span rule), at most
    ``most``; the bytes taken from the queue go back to its front, joined.
    """
    taken = head
    while _LINE_END.search(taken) is None and len(taken) < most:
        while (chunk := queue.take()) is None and not queue.ended:
            yield NEED_DATA
        if chunk is None:
            break
        taken += chunk
    if taken and not head:
        queue.put_back(taken)
    found = _LINE_END.search(taken, 0, most)
    cut = most if found is None else found.end()
    if taken[cut - 1 : cut + 1] == b"\r\n":
        cut += 1
    return taken[:cut]


def split_window(window: bytes) -> Runs:
    """A window's lines, as runs that each end their lines one way.

    Each run is ``(lines, length of its line end)``; ``lines`` ends with what follows
    the run's last line end (a line still arriving, or b"").  A stream almost always
    uses one kind of line end throughout: the window is then one run.  The caller
    handles the commonest window (LF only) inline and calls this for windows that
    hold a CR.
    """
    if 10 not in window:
        return [(window.split(b"\r"), 1)]
    # bytes.splitlines() cuts at CR, LF and CRLF alike (only these, for bytes) in one
    # pass, faster than split(b"\r\n"); the window is all CRLF when every cut took two
    # bytes.  Like split(), the list then ends with what follows the last line end.
    # (A CR at the end may be half a CRLF: the mixed case below.)
    lines = window.splitlines()
    last = window[-1]
    if last == 10:
        lines.append(b"")
    if last != 13 and sum(map(len, lines)) + 2 * len(lines) - 2 == len(window):
        return [(lines, 2)]
    if b"\r\r" in window or b"\n\n" in window:
        # A lone CR or LF beside another line end (a CRLF-only window has neither):
        # where stretches of blank lines may change kind at every line.
        window = _LINE_END_STRETCH.sub(_as_one_kind, window)
    return [(run.split(sep), len(sep)) for run, sep in _uniform_runs(window)]


def _as_one_kind(stretch: re.Match[bytes]) -> bytes:
    """A stretch of line ends, from its third line end on written as one-byte ones.

    Speed.  A stream of blank lines written ``\r\n\r\r\n\r...`` changes its kind of
    line end at every line, so each of its lines would be a run of its own (about eight
    times the cost of an all-LF blank-line stream).  Yet the blank lines after the one
    that dispatches change nothing but the offset: no item starts or ends there, the
    next block starts after the last of them, and keep_raw cuts from the original bytes
    by offset.  So only the first two line ends are exact (the one that ends the line
    before, the blank line that dispatches); the rest become as many one-byte line ends
    as they had bytes, which ends them at the same offset.  They take the kind of the
    second one's last byte: after a lone CR an LF would make a CRLF of it.  (The match
    never starts with the LF of a CRLF: the byte before it is not a line end.)
    """
    run = stretch[0]
    exact = 2 if run[:2] == b"\r\n" else 1  # the first line end
    exact += 2 if run[exact : exact + 2] == b"\r\n" else 1  # the second
    return run[:exact] + run[exact - 1 : exact] * (len(run) - exact)


def _uniform_runs(window: bytes) -> list[tuple[bytes, bytes]]:
    """Cut a window that mixes kinds of line end into runs that each use one kind.

    Returns (run, line end) pairs; every run but the last ends with its line end.
    Each search starts where the last one stopped, so the cost is linear.
    """
    runs = []
    start = 0
    # Every run found in the loop ends before the window's last line end, so the loop
    # ends at the "one kind left" or "no lone line end" breaks.
    while True:
        cr = window.find(b"\r", start)
        lf = window.find(b"\n", start)
        if cr < 0 or lf < 0:
            # One kind left (or none: a partial line).
            runs.append((window[start:], b"\n" if cr < 0 else b"\r"))
            break
        if lf < cr:  # LF lines up to the last LF before the first CR
            end = window.rfind(b"\n", start, cr) + 1
            sep = b"\n"
        elif lf > cr + 1:  # lone CR lines up to the last CR before the first LF,
            # leaving out a CR right before that LF (it belongs to a CRLF)
            end = window.rfind(b"\r", start, lf - 1) + 1
            sep = b"\r"
        else:  # CRLF lines up to the last CRLF before the first lone CR or LF
            lone = _LONE_LINE_END.search(window, start)
            if lone is None:
                runs.append((window[start:], b"\r\n"))
                break
            end = window.rfind(b"\r\n", start, lone.start()) + 2
            sep = b"\r\n"
        runs.append((window[start:end], sep))
        start = end
    return runs


def spill(
    partial: bytearray, spilled: list[bytes], spilled_len: int, room: int, limit: int, end: int
) -> int:
    """The line still arriving grew past the block's room or SPILL bytes.

    Past the room, the event is too big (the block may not reach past ``end``).
    Otherwise its bytes so far move to ``spilled`` as one exact-size copy and
    ``partial`` starts afresh.  Returns the new length of ``spilled``.
    """
    if spilled_len + len(partial) > room:
        exceeds(limit, end)
    spilled.append(bytes(partial))
    partial.clear()  # in place: the caller's name for it stays valid
    return spilled_len + len(spilled[-1])


def count_spill(
    partial: bytearray, spilled: list[bytes], spilled_len: int, room: int, limit: int, end: int
) -> int:
    """spill() in keep_raw mode: the same limit check, but the bytes are only counted.

    Memory: keep_raw's buffer holds every byte not handed out, this line's too, so a
    second copy here would hold a big line twice as it arrives; the parser reads the
    line from that buffer at its end (``spilled`` stays empty).
    """
    if spilled_len + len(partial) > room:
        exceeds(limit, end)
    length = len(partial)
    partial.clear()
    return spilled_len + length


def check_cut_line(line: list[bytes | bytearray], offset: int, window: int = WINDOW) -> None:
    """Strict mode: refuse invalid UTF-8 in the line the end of the stream cut off.

    ``line`` is that line in pieces, starting at stream ``offset``.
    """
    check_utf8(line, offset, "invalid UTF-8 at end of stream", window)


def check_utf8(
    pieces: Sequence[bytes | bytearray | memoryview], offset: int, what: str, window: int = WINDOW
) -> None:
    """Strict mode: refuse invalid UTF-8 in ``pieces``, which start at stream ``offset``.

    They are checked ``window`` bytes at a time, never copied whole: a huge line would
    otherwise be held twice over.  The error (``what`` and the reason) is the one a
    decode of their whole, at the same offset.
    """
    length = sum(map(len, pieces))
    decoder = _utf8_decoder()
    done = 0  # bytes checked so far
    for part in pieces:
        with memoryview(part) as view:
            for start in range(0, len(view), window):
                # Each view is released as soon as it is done: one left to the garbage
                # collector would keep keep_raw's bytearray from growing (BufferError).
                with view[start : start + window] as piece:
                    pending = decoder.getstate()[0]  # an unfinished sequence
                    try:
                        decoder.decode(piece, final=done + len(piece) == length)
                    except UnicodeDecodeError:
                        try:
                            (pending + piece.tobytes()).decode()
                        except UnicodeDecodeError as exc:
                            at = offset + done - len(pending) + exc.start
                            fail(f"{what} ({exc.reason})", at)
                    done += len(piece)
