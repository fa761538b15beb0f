# The serving adapters' options, declared once (issue 40, item 9).
#
# Strategy: as _receive/_options.py does for the parser, each option is written once,
# here: its type for checkers (the TypedDicts, which every adapter's ``**options`` is
# typed by: EventStreamResponse, HubResponse, aiohttp.serve, aiohttp.serve_hub) and its
# default and check at run time (``Options``, made from those keywords by
# ``Options.of(...)``, so an unknown or misspelt option is a TypeError naming the
# adapter).  Adding an option is one line in a TypedDict, one field in Options, and its
# use in the pump.
#
# Invariants (tests/serve/test_serve_options.py): the TypedDicts' keys are exactly the
# fields of Options (but those an adapter takes positionally); every default passes
# the checks; an option out of range fails when the response is made, not halfway
# through it.

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Literal, TypedDict

from sse_sansio._clock import seconds
from sse_sansio._resume._replay import ReplayWindow

from ._server_stream import ServerStream

__all__ = ["HubOptions", "Options", "Policy", "SourceOptions"]

Policy = Literal["cancel", "detach"]


class HubOptions(TypedDict, total=False):
    """The options of a response that serves a hub's subscriber (and of every response)."""

    keepalive: float | None
    first_byte: float | None
    padding: int
    coalesce_bytes: int
    coalesce_delay: float
    query_cursor: str | None
    max_lifetime: float | None
    headers: Mapping[str, str] | None
    status_code: int


class SourceOptions(HubOptions, total=False):
    """The options of a response that serves one source (a hub has its own buffer
    bound and window)."""

    max_buffer: int
    window: ReplayWindow | None
    on_disconnect: Policy


@dataclass(frozen=True)
class Options:
    """Every serving option with its default, checked when the response is made."""

    keepalive: float | None = 15.0
    first_byte: float | None = None
    padding: int = 0
    coalesce_bytes: int = 0
    coalesce_delay: float = 0.0
    query_cursor: str | None = "last_event_id"
    max_lifetime: float | None = None
    headers: Mapping[str, str] | None = None
    status_code: int = 200
    max_buffer: int = 1048576
    window: ReplayWindow | None = None
    on_disconnect: Policy = "cancel"

    @classmethod
    def of(cls, who: str, options: Mapping[str, Any], *, hub: bool = False) -> Options:
        """The options ``who`` was given, checked (a hub's response takes no
        ``max_buffer``, ``window`` or ``on_disconnect``: the hub has them)."""
        allowed = HubOptions.__annotations__.keys() if hub else _ALL
        if not options:  # the defaults: one shared instance (it is frozen)
            return _DEFAULTS
        unknown = sorted(set(options) - set(allowed))
        if unknown:
            raise TypeError(f"{who}: unknown option(s) {', '.join(unknown)}")
        return cls(**options)

    def __post_init__(self) -> None:
        if self.on_disconnect not in ("cancel", "detach"):
            raise ValueError(
                f"on_disconnect must be 'cancel' or 'detach', not {self.on_disconnect!r}"
            )
        if self.query_cursor is not None and (
            type(self.query_cursor) is not str or not self.query_cursor
        ):
            raise TypeError(
                f"query_cursor must be a non-empty str or None, not {self.query_cursor!r}"
            )
        seconds("max_lifetime", self.max_lifetime, positive=True)
        # The stream's own options, checked by the stream.
        ServerStream(now=0.0, max_buffer=self.max_buffer, window=self.window, **self.stream())
        if type(self.status_code) is not int or not 100 <= self.status_code <= 599:
            raise ValueError(f"status_code must be an HTTP status, not {self.status_code!r}")

    def stream(self) -> dict[str, Any]:
        """The options every response's ServerStream takes (a hub's subscriber too)."""
        return {
            "keepalive": self.keepalive,
            "first_byte": self.first_byte,
            "padding": self.padding,
            "coalesce_bytes": self.coalesce_bytes,
            "coalesce_delay": self.coalesce_delay,
        }


_ALL = frozenset(f.name for f in fields(Options))
_DEFAULTS = Options()
