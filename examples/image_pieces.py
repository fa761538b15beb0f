"""Save each huge event of a stream to a file as it arrives, in pieces, never whole.

What it shows: ``piece_size``.  LLM APIs stream images as base64 in one ``data:`` line
of several megabytes.  With ``Connection(piece_size=N)`` an event whose data grows past
N bytes comes as ``DataPiece`` items while it arrives, then a ``PiecedEvent`` with its
type and id; the data here is base64, decoded piece by piece (four characters at a
time, so a piece may end anywhere) and written out.  What the program holds is one
piece, however large the image: the size limit no longer bounds the event, only what
the parser holds for it.  Events that stay under N bytes come whole, as usual.  A stream
cut inside a pieced event leaves a file that is not an image: it is removed.

Run it on a stream whose events carry base64 data::

    python examples/image_pieces.py capture.sse out/ --piece-size 65536
"""

from __future__ import annotations

import argparse
import base64
import binascii
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO

# issue 15's item classes (the ignore is for a checkout that predates them).
from sse_sansio import (
    DataPiece,
    Event,
    PiecedEvent,
    RemoteProtocolError,
    iter_events,
)

PIECE_SIZE = 1 << 16


class Base64File:
    """Decodes base64 text given in pieces of any length into a file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: BinaryIO = path.open("wb")
        self._rest = ""  # at most 3 characters: the start of the next 4-character group

    def write(self, text: str) -> None:
        # A "\n" joins the data lines of a multi-line event: it is no base64.
        text = self._rest + text.replace("\n", "")
        whole = len(text) - len(text) % 4
        self._file.write(base64.b64decode(text[:whole], validate=True))
        self._rest = text[whole:]

    def close(self) -> None:
        self._file.close()
        if self._rest:
            raise binascii.Error(f"{self.path}: the base64 data ends in a partial group")

    def discard(self) -> None:
        self._file.close()
        self.path.unlink()


def save_pieced_events(
    chunks: Iterable[bytes], directory: Path, *, piece_size: int = PIECE_SIZE
) -> list[tuple[str, str, Path]]:
    """Write each event that comes in pieces to its own file in ``directory``.

    Returns ``(type, id, path)`` for each saved event.  A stream cut inside a pieced
    event raises TruncatedStreamError, and data that is not base64 binascii.Error,
    after removing that event's file.
    """
    saved: list[tuple[str, str, Path]] = []
    current: Base64File | None = None
    try:
        for item in iter_events(chunks, piece_size=piece_size):
            if isinstance(item, DataPiece):
                if current is None:  # the first piece of an event
                    current = Base64File(directory / f"event-{len(saved) + 1}.bin")
                current.write(item.text)
            elif isinstance(item, PiecedEvent) and current is not None:
                current.close()  # the event is complete: its pieces are all written
                saved.append((item.type, item.id, current.path))
                current = None
            elif isinstance(item, Event):
                print(f"a small event {item.type!r}: {len(item.data)} characters")
    except (binascii.Error, RemoteProtocolError):  # RemoteProtocolError: also a cut
        if current is not None:
            current.discard()  # its pieces belong to an event that never completed
        raise
    return saved


def main(argv: list[str] | None = None) -> int:
    """Save the pieced events of a captured stream; exit 1 if it was cut or invalid."""
    parser = argparse.ArgumentParser(description="Save huge base64 events as files.")
    parser.add_argument("path", help="a captured text/event-stream body")
    parser.add_argument("directory", help="where the files go (created if missing)")
    parser.add_argument("--piece-size", type=int, default=PIECE_SIZE, metavar="N")
    args = parser.parse_args(argv)
    directory = Path(args.directory)
    directory.mkdir(parents=True, exist_ok=True)
    try:
        with open(args.path, "rb") as stream:
            chunks = iter(lambda: stream.read(PIECE_SIZE), b"")
            saved = save_pieced_events(chunks, directory, piece_size=args.piece_size)
    except (OSError, RemoteProtocolError, binascii.Error) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for event_type, event_id, path in saved:
        print(f"{path}: {path.stat().st_size} bytes (event {event_type!r}, id {event_id!r})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
