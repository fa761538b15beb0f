# What the spec tells a parser to ignore, made visible: the classifiers behind
# Connection(diagnostics=True).
#
# A minimal stand-in on this branch, so that the line-by-line parser and its tests run;
# issue 15's other half writes the real classifiers (their rules and wording) in this
# module, with this interface.

from __future__ import annotations

from typing import Final

__all__ = ["SNIFF_BYTES", "discarded_block", "field_diagnostic", "sniff_start"]

SNIFF_BYTES: Final = 512

_FIELDS: Final = ("event", "data", "id", "retry")


def sniff_start(head: bytes) -> tuple[str, str] | None:
    """(code, message) if the stream's first bytes look like something other than an
    event stream.  head: the bytes after any BOM, up to and including the first line
    end, at most SNIFF_BYTES (fewer at end of stream)."""
    if head.startswith(b"HTTP/"):
        return "http-status-line", "the stream starts with an HTTP status line"
    if head.startswith(b"\x1f\x8b"):
        return "gzip", "the stream starts with gzip's magic bytes"
    return None


def field_diagnostic(field: str, value: str) -> tuple[str, str] | None:
    """For a field line that is not data (field != "data"): "unknown-field",
    "invalid-retry" or "id-with-nul"; None for a field the spec accepts."""
    if field not in _FIELDS:
        return "unknown-field", f"unknown field {field[:80]!r} ignored"
    if field == "retry" and not (value.isascii() and value.isdigit()):
        return "invalid-retry", f"retry value {value[:80]!r} ignored"
    if field == "id" and "\0" in value:
        return "id-with-nul", "an id holding NUL ignored"
    return None


def discarded_block(id_seen: bool, retry_seen: bool) -> tuple[str, str]:
    """The "discarded-block" diagnostic for a data-less block."""
    kept = [name for name, seen in (("id", id_seen), ("retry", retry_seen)) if seen]
    took = f" ({' and '.join(kept)} took effect)" if kept else ""
    return "discarded-block", f"a block without data was discarded{took}"
