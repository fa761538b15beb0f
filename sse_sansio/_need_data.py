# The NEED_DATA sentinel, apart so that every module of the parser can name it.

from __future__ import annotations

import enum
from typing import Final

__all__ = ["NEED_DATA", "NeedData"]


class NeedData(enum.Enum):
    """The type of the ``NEED_DATA`` sentinel (an enum, so type checkers narrow on it)."""

    NEED_DATA = "NEED_DATA"

    def __repr__(self) -> str:
        return "NEED_DATA"


#: Returned by ``next_event()`` when no complete item is buffered: call
#: ``receive_data()`` with more bytes (or ``b""`` at end of stream).
NEED_DATA: Final = NeedData.NEED_DATA
