"""Where a cassette file goes: written whole or not at all, never over a special file.

Both writers of cassette files, :meth:`Cassette.save` (and the pytest plugin through it)
and the command line's ``--record``, open their path through :class:`CassetteTarget`
(issue 41, item 7).  What the path names decides how it is written:

- a symlink (or a chain of them) is written through: its target is what changes, the
  link stays a link (a dangling one gets its target made);
- a regular file, or nothing yet: the cassette is written to ``<target>.partial-<pid>``
  in the same folder, flushed to disk (``fsync``) and renamed over the target only once
  it is whole, so until then the old file is as it was, and a write that fails (a full
  disk) removes the partial file and leaves the old one whole (a truncated cassette
  would have to be deleted by hand before a re-recording);
- a FIFO or a character device (``/dev/null``, a terminal, a pipe another process
  reads) is written directly, as shell redirection and ``tee`` write to it: a rename
  would replace the node by a regular file (as root, ``--record /dev/full`` once
  replaced the device);
- anything else (a directory, a block device, a socket) is refused with a ValueError
  before anything is opened for writing: no cassette belongs there.

Invariant: a path is either left as it was or holds a whole cassette; the node a path
names is never replaced by one of another kind.  Only SIGKILL or a power cut leaves a
partial file behind.
"""

from __future__ import annotations

import contextlib
import os
import stat
from typing import IO

__all__ = ["CassetteTarget"]


def _kind(mode: int) -> str:
    """What a node that is neither a regular file, a FIFO nor a character device is."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISBLK(mode):
        return "a block device"
    return "a socket" if stat.S_ISSOCK(mode) else "not a file"


class CassetteTarget:
    """The file a cassette is written to: :meth:`open`, write, then :meth:`commit`
    (or :meth:`abandon` when writing failed).

    Raises:
        ValueError: ``path`` names a directory, a block device or a socket.
        OSError: ``path`` cannot be looked at (a symlink loop, no permission).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        # realpath follows every symlink; a dangling one resolves to the file it names.
        self.real = os.path.realpath(self.path)
        try:
            mode: int | None = os.stat(self.real).st_mode
        except FileNotFoundError:
            mode = None
        #: True for a FIFO or a character device: written in place, never renamed over.
        self.direct = mode is not None and (stat.S_ISFIFO(mode) or stat.S_ISCHR(mode))
        if mode is not None and not (stat.S_ISREG(mode) or self.direct):
            raise ValueError(
                f"{self.path} is {_kind(mode)}: a cassette is written to a regular "
                "file, a FIFO or a character device"
            )
        self.partial = None if self.direct else f"{self.real}.partial-{os.getpid()}"
        self._file: IO[str] | None = None

    def open(self) -> IO[str]:
        """The text file to write the cassette's lines to (UTF-8, LF)."""
        if self.partial is None:
            # "w" on a FIFO waits for a reader; on a device it truncates nothing.
            self._file = open(self.real, "w", encoding="utf-8", newline="\n")  # noqa: SIM115
        else:
            self._file = open(self.partial, "x", encoding="utf-8", newline="\n")  # noqa: SIM115
        return self._file

    def commit(self) -> None:
        """Close the written file and put it in place (a rename, for a regular file).

        On an OSError the partial file is removed and the old one left as it was.
        """
        assert self._file is not None, "open() first"
        try:
            self._file.flush()
            if self.partial is not None:
                os.fsync(self._file.fileno())
            self._file.close()
            if self.partial is not None:
                os.replace(self.partial, self.real)
        except OSError:
            self.abandon()
            raise

    def abandon(self) -> None:
        """Give the writing up: close the file and remove the partial one, if any."""
        assert self._file is not None, "open() first"
        with contextlib.suppress(OSError):  # the buffer that failed fails again here
            self._file.close()
        if self.partial is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.partial)
