"""What a pickle names, read back the way unpickling reads it (issue 32, item 4).

Shared by tests/package/test_identities.py (the values) and
tests/package/test_state_pickles.py (the state machines and the handles).

An Unpickler whose ``find_class`` records every ``(module, name)`` it is asked for
(GLOBAL, STACK_GLOBAL, INST and OBJ all go through it) sees every path a pickle names.
Every path under sse_sansio must be a face and a public name.  Outside the package,
pickle itself writes a few standard-library helpers at the old protocols
(``copyreg._reconstructor`` for a plain object and ``_codecs.encode`` for bytes at
protocols 0-2): they are the standard library's, not ours to move, and are the only
private paths allowed.

Every class the faces export falls in one of four groups: a value (built and pickled in
test_identities.py's VALUES), a state machine worth keeping (STATE_MACHINES), a handle
that refuses pickle and copy (HANDLES), or a class with no instances of its own
(NO_INSTANCES); test_identities.py checks that no exported class is in none.
"""

from __future__ import annotations

import io
import pickle
from types import FunctionType, ModuleType
from typing import Any

import sse_sansio
from sse_sansio import llm, stores, testing
from sse_sansio._public import is_private_path

FACES: tuple[ModuleType, ...] = (sse_sansio, llm, testing, stores)

PROTOCOLS = range(pickle.HIGHEST_PROTOCOL + 1)

#: The standard library's own helpers that pickle writes at protocols 0-2 (Python 2
#: spellings included): copyreg's reconstructor of plain objects, bytes as latin-1.
STDLIB_HELPERS = frozenset(
    {
        ("copyreg", "_reconstructor"),
        ("copy_reg", "_reconstructor"),
        ("_codecs", "encode"),
    }
)

#: Their pickle names public paths only and loads to one that behaves the same.
STATE_MACHINES = frozenset(
    {
        *("Watchdog", "KeepalivePlanner", "Coalescer", "ServerStream", "ReconnectPlanner"),
        "Hub",
        *("ReplayWindow", "MemoryStore", "AsyncReplayWindow"),
        *("AsyncMemoryStore", "MirrorStore"),
        *("Tracker", "Progress", "Reframer", "TextMerge", "UIMessageStreamWriter", "Dialect"),
        *("HoldBack", "StreamStats"),
        "Translator",
    }
)

#: Handles on what means nothing elsewhere: pickle and copy raise TypeError.
HANDLES = frozenset(
    {
        *("Connection", "Relay", "Recorder", "AsyncRecorder", "CassetteServer"),
        *("RedisStreamStore", "AsyncRedisStreamStore"),
        "OpenTelemetryRecorder",
    }
)

#: Protocols (typing) and the base class that refuses to be made.
NO_INSTANCES = frozenset({"ReplayStore", "AsyncReplayStore", "ProtocolError"})


def exported(face: ModuleType) -> list[tuple[str, Any]]:
    """The classes and functions of a face's ``__all__``."""
    objects = [(name, getattr(face, name)) for name in face.__all__]
    return [(n, o) for n, o in objects if isinstance(o, (type, FunctionType))]


def exported_classes() -> dict[str, type]:
    """Every class the faces export, by its exported name."""
    return {n: o for face in FACES for n, o in exported(face) if isinstance(o, type)}


class _Recorder(pickle.Unpickler):
    """An Unpickler that records every global a pickle asks for."""

    def __init__(self, data: bytes) -> None:
        super().__init__(io.BytesIO(data))
        self.names: list[tuple[str, str]] = []

    def find_class(self, module: str, name: str) -> Any:
        self.names.append((module, name))
        return super().find_class(module, name)


def load_recording(data: bytes) -> tuple[Any, list[tuple[str, str]]]:
    """The object a pickle holds, and every global it named."""
    recorder = _Recorder(data)
    return recorder.load(), recorder.names


def assert_public(names: list[tuple[str, str]]) -> None:
    """Every global under sse_sansio is a face's public name; elsewhere, no private path
    but the standard library's own helpers."""
    assert names  # every pickle here names at least its class
    for module, name in names:
        path = f"{module}.{name}"
        if module == "sse_sansio" or module.startswith("sse_sansio."):
            assert not is_private_path(path), path
            assert module in {face.__name__ for face in FACES}, path
        else:
            assert (module, name) in STDLIB_HELPERS or not is_private_path(path), path
