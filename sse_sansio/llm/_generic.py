# The generic dialect: a stream whose terminal event (and error event) the caller
# names, for an API this package has no module for (llm.generic() makes one).
#
# Rules: the named terminal event completes the answer, the named error event fails
# it (its "error" object, or the payload itself, gives the type and message), and the
# end of the stream before either is a cut.  It has no merge or reframe rules and is
# not in the registry (it has no name of its own to be asked for by); its progress is
# the base rule: every event but a ping.

from __future__ import annotations

from typing import Any

from sse_sansio._events import Event

from ._dialect import Dialect, failed, get, loads
from ._outcome import Verdict

__all__ = ["Generic"]


class Generic(Dialect):
    """A stream whose terminal event (and error event) the caller names."""

    name = "generic"

    def __init__(self, terminal: str, error: str | None, json_data: bool) -> None:
        super().__init__()
        self.terminal_type = terminal
        self.error_type = error
        self.terminal = f"the {terminal!r} event"
        self.json_data = json_data

    def decode(self, event: Event) -> Any:
        return loads(event) if self.json_data else event.data

    def observe(self, event: Event, payload: Any) -> Verdict | None:
        if event.type == self.terminal_type:
            return Verdict("completed", f"the stream ended with {self.terminal}")
        if event.type == self.error_type:
            error = get(payload, "error")
            return failed(error if error else payload, f"(the {event.type!r} event)")
        return None
