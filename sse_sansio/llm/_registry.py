# The registry: the one table of the dialects this package knows, by name.
#
# Adding a dialect is one module (its Dialect subclass, _openai_chat.py is the model),
# one entry below (and its import), its tests and its docs page: the tracker, Progress,
# TextMerge, the Reframer, "auto" and the command line's --llm all read this table and
# ask the dialect class for its rules, so no other package file names a dialect.
#
# Invariants: the names are the classes' own (Dialect.name), in the order the docs and
# --llm list them; "auto" follows them (it is made from the table, not kept in it);
# every dialect here defines the reframing rules (standard_error, error_event), so
# each is one a Reframer writes.

from __future__ import annotations

from typing import Final

from ._ai_sdk_ui import AISDKUI
from ._anthropic import Anthropic
from ._auto import Auto
from ._dialect import Dialect
from ._gemini import Gemini
from ._openai_chat import OpenAIChat
from ._openai_responses import OpenAIResponses

__all__ = ["DIALECTS", "DIALECT_NAMES", "REFRAMER_DIALECTS", "make_dialect"]

_KNOWN: Final[tuple[type[Dialect], ...]] = (
    OpenAIChat,
    OpenAIResponses,
    Anthropic,
    Gemini,
    AISDKUI,
)

#: Each dialect's class, by its name.
DIALECTS: Final[dict[str, type[Dialect]]] = {dialect.name: dialect for dialect in _KNOWN}

#: The names --llm and Tracker() accept (besides a dialect object from generic()).
DIALECT_NAMES: Final[tuple[str, ...]] = (*DIALECTS, Auto.name)

#: The dialects a Reframer writes (it must know its target: no "auto").
REFRAMER_DIALECTS: Final[tuple[str, ...]] = tuple(DIALECTS)


def make_dialect(name: str) -> Dialect:
    """A fresh dialect object for one of DIALECT_NAMES."""
    if name == Auto.name:
        return Auto(_KNOWN)
    dialect = DIALECTS.get(name)
    if dialect is None:
        raise ValueError(
            f"unknown dialect {name!r}; expected one of {', '.join(DIALECT_NAMES)}, "
            "or a dialect from sse_sansio.llm.generic()"
        )
    return dialect()
