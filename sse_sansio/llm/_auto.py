# The "auto" dialect: detects the API from the first event that only one of them
# would send, then reads the stream by that dialect's rules.
#
# Strategy: it is handed the registered dialect classes (the registry makes it; this
# module names none of them) and asks them, in the registry's order, for their signs:
# first claims_event() on the event before its data is decoded (OpenAI's [DONE], an
# event name only one API uses), then claims_payload() on the decoded payload, the
# dialects whose sign is a "type" no other API sends (detect_first) before those that
# go by a payload's shape.  Until one claims the stream, an error payload fails it and
# every other event says nothing; once one does, every question goes to it.
#
# Invariant: the detected dialect is made once and never changes; the event that
# revealed it was decoded by its rules (strictly) when its name did, leniently when
# its payload did (every known API sends JSON, so data that is not JSON is some
# unknown event's).

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sse_sansio._events import Event

from ._answer import Parts
from ._dialect import Dialect, dialect_class, failed, get, loads_lenient
from ._outcome import Verdict
from ._usage import Usage

__all__ = ["Auto"]


class Auto(Dialect):
    """Detects the dialect from the first event that only one API would send."""

    name = "auto"

    def __init__(self, candidates: Iterable[type[Dialect]]) -> None:
        super().__init__()
        self.candidates = tuple(candidates)
        self.inner: Dialect | None = None

    def decode(self, event: Event) -> Any:
        if self.inner is not None:
            return self.inner.decode(event)
        for dialect in self.candidates:
            if dialect.claims_event(event):
                self.inner = dialect()
                return self.inner.decode(event)
        payload = loads_lenient(event)
        self.inner = self._detect(payload)
        return payload

    def _detect(self, payload: Any) -> Dialect | None:
        """The dialect a payload's "type" or shape belongs to, or None."""
        kind = get(payload, "type")
        if not isinstance(kind, str):
            kind = None  # a type that is no string names no dialect (and may be unhashable)
        first = [dialect for dialect in self.candidates if dialect.detect_first]
        then = [dialect for dialect in self.candidates if not dialect.detect_first]
        for dialect in first + then:
            if dialect.claims_payload(kind, payload):
                return dialect()
        return None

    def observe(self, event: Event, payload: Any) -> Verdict | None:
        if self.inner is not None:
            return self.inner.observe(event, payload)
        error = get(payload, "error")
        if event.type == "error" or error:
            return failed(error or payload, "before any event showed which API this is")
        return None

    def current(self) -> Dialect:
        return self if self.inner is None else self.inner

    def at_end(self) -> Verdict:
        return super().at_end() if self.inner is None else self.inner.at_end()

    def missing(self) -> str:
        if self.inner is not None:
            return self.inner.missing()
        return (
            "any event of a known API arrived: nothing says the answer finished; retry "
            "the request, or name the dialect"
        )

    def stop_word(self) -> str | None:
        return None if self.inner is None else self.inner.stop_word()

    def usage(self) -> Usage:
        return self.figures if self.inner is None else self.inner.usage()

    def answer_parts(self) -> Parts:
        return self.parts if self.inner is None else self.inner.answer_parts()

    # Pickling (_dialect.py): the candidates are classes, named by their names; the
    # inner dialect, once detected, pickles itself.
    def plain_state(self) -> dict[str, Any]:
        names = tuple(dialect.name for dialect in self.candidates)
        return {**super().plain_state(), "candidates": names}

    def load_state(self, attributes: dict[str, Any]) -> None:
        super().load_state(attributes)
        self.candidates = tuple(dialect_class(name) for name in attributes["candidates"])
