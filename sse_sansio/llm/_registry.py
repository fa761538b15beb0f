# The registry: the one table of the dialects this package knows, by name.
#
# A dialect is its reader (its Dialect subclass, _openai_chat.py is the model), its
# writer (its Writer subclass beside it, _openai_chat_writer.py) and one entry below
# (with their imports), plus its tests and its docs page (issue 42, item 7): the
# tracker, Progress, TextMerge, the Reframer, "auto", the Translator and the command
# line's --llm all read this table and ask the classes for their rules, so no other
# package file names a dialect (tests/llm/test_llm_registry.py reads them all).
#
# Invariants: the names are the classes' own (Dialect.name), in the order the docs and
# --llm list them; "auto" follows them (it is made from the table, not kept in it);
# every dialect here defines the reframing rules (standard_error, error_event), so
# each is one a Reframer writes, and has a writer whose ``dialect`` is its class.

from __future__ import annotations

from typing import Final

from ._ai_sdk_ui import AISDKUI
from ._ai_sdk_ui_writer import AISDKUIWriter
from ._anthropic import Anthropic
from ._anthropic_writer import AnthropicWriter
from ._auto import Auto
from ._dialect import Dialect
from ._gemini import Gemini
from ._gemini_writer import GeminiWriter
from ._openai_chat import OpenAIChat
from ._openai_chat_writer import OpenAIChatWriter
from ._openai_responses import OpenAIResponses
from ._openai_responses_writer import OpenAIResponsesWriter
from ._writing import Writer

__all__ = ["DIALECTS", "DIALECT_NAMES", "REFRAMER_DIALECTS", "WRITERS", "make_dialect"]

#: Each dialect: its reader and its writer.
_ENTRIES: Final[tuple[tuple[type[Dialect], type[Writer]], ...]] = (
    (OpenAIChat, OpenAIChatWriter),
    (OpenAIResponses, OpenAIResponsesWriter),
    (Anthropic, AnthropicWriter),
    (Gemini, GeminiWriter),
    (AISDKUI, AISDKUIWriter),
)
_KNOWN: Final = tuple(dialect for dialect, _ in _ENTRIES)

#: Each dialect's class, by its name.
DIALECTS: Final[dict[str, type[Dialect]]] = {dialect.name: dialect for dialect in _KNOWN}

#: Each dialect's writer class (the Translator's targets), by the dialect's name.
WRITERS: Final[dict[str, type[Writer]]] = {dialect.name: writer for dialect, writer in _ENTRIES}

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
