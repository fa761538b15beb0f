"""This process's resident memory, for the child processes of the memory tests.

The memory tests run each measurement in a fresh child process (``python -c WORKER``,
started in the checkout's root, so that ``tests.helpers.rss`` imports), which measures its
peak resident memory above a baseline taken just before the work:

- Linux: writing 5 to /proc/self/clear_refs resets the peak (VmHWM) to the current
  resident size (VmRSS), so an earlier transient peak cannot hide this run's.
- Elsewhere ru_maxrss is the best there is: it can only under-report the growth, never
  over-report it.
"""

from __future__ import annotations

import resource
import sys

__all__ = ["peak", "reset_peak"]


def _status(key: str) -> int | None:
    """A size in bytes from /proc/self/status ("VmRSS:", "VmHWM:"), or None."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(key):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def peak() -> int:
    """The peak resident size so far (since the last reset_peak(), on Linux)."""
    hwm = _status("VmHWM:")
    if hwm is not None:
        return hwm
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss if sys.platform == "darwin" else rss * 1024


def reset_peak() -> int:
    """Reset the peak where the system allows; return the baseline to measure from."""
    try:
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")
    except OSError:
        return peak()
    return _status("VmRSS:") or peak()
