"""Public paths survive the house's moves (issue 32): every name the four public faces
exported before the package was split into layers still imports from the same face, and
the entry points (the ``sse-sansio`` script, ``python -m sse_sansio``, the ``pytest11``
plugin) still resolve.

The name lists below are the faces' ``__all__`` as released before the split (commit
87244ec), written out here as the contract: a face may export more, never less.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

BEFORE_THE_SPLIT: dict[str, frozenset[str]] = {
    "sse_sansio": frozenset(
        {
            "DEFAULT_MAX_EVENT_SIZE",
            "IMPLEMENTATION",
            "NEED_DATA",
            "READ_SIZE",
            "AsyncReplayStore",
            "AsyncReplayWindow",
            "AttemptEnd",
            "Coalescer",
            "Comment",
            "Connection",
            "DataPiece",
            "Diagnostic",
            "EndOfStream",
            "Event",
            "KeepalivePlanner",
            "LocalProtocolError",
            "MemoryStore",
            "NeedData",
            "OptInItem",
            "PiecedEvent",
            "ProtocolError",
            "ReceivedItem",
            "Reconnect",
            "ReconnectPlanner",
            "RemoteProtocolError",
            "ReplayStore",
            "ReplayWindow",
            "ResponseCheck",
            "ResponseError",
            "Resume",
            "SkippedEvent",
            "Stop",
            "StopCause",
            "StoreSnapshot",
            "TruncatedStreamError",
            "Verdict",
            "Watchdog",
            "__version__",
            "aiter_events",
            "check_response",
            "describe_body",
            "iter_events",
            "serialize",
        }
    ),
    "sse_sansio.llm": frozenset(
        {
            "DIALECT_NAMES",
            "EXIT_STATUS",
            "REFRAMER_DIALECTS",
            "UI_MESSAGE_STREAM_HEADERS",
            "Answer",
            "Dialect",
            "HoldBack",
            "OpenTelemetryRecorder",
            "Outcome",
            "PayloadError",
            "Progress",
            "Reframer",
            "StreamStats",
            "TextMerge",
            "ToolCall",
            "Tracker",
            "UIMessageStreamWriter",
            "Usage",
            "generic",
        }
    ),
    "sse_sansio.testing": frozenset(
        {
            "AsyncRecorder",
            "Cassette",
            "CassetteError",
            "CassetteServer",
            "Outcome",
            "RecordedError",
            "Recorder",
            "arecord",
            "assert_chunking_invariant",
            "chunkings",
            "parse",
            "record",
            "replay",
            "serve_cassette",
        }
    ),
    "sse_sansio.stores": frozenset({"AsyncRedisStreamStore", "RedisStreamStore"}),
}


@pytest.mark.parametrize("face", sorted(BEFORE_THE_SPLIT))
def test_every_name_exported_before_the_split_still_is(face: str) -> None:
    module = importlib.import_module(face)
    assert BEFORE_THE_SPLIT[face] - set(module.__all__) == set()
    for name in BEFORE_THE_SPLIT[face]:
        # ``from <face> import <name>`` is a getattr on the face.
        assert getattr(module, name, None) is not None, f"{face}.{name}"


def test_the_version_is_written_in_one_place() -> None:
    import sse_sansio
    from sse_sansio._version import __version__

    assert sse_sansio.__version__ is __version__
    literal = (ROOT / "sse_sansio" / "_version.py").read_text(encoding="utf-8")
    assert f'__version__ = "{__version__}"' in literal
    assert "__version__ =" not in (ROOT / "sse_sansio" / "__init__.py").read_text("utf-8")


def _entry_point(group: str, name: str) -> metadata.EntryPoint:
    found = [ep for ep in metadata.entry_points(group=group) if ep.name == name]
    assert len(found) == 1, (group, name, found)
    return found[0]


def test_the_script_entry_point_is_the_command_lines_main() -> None:
    from sse_sansio._cli._main import main

    assert _entry_point("console_scripts", "sse-sansio").load() is main


def test_the_pytest_plugin_entry_point_loads_the_plugin() -> None:
    plugin = _entry_point("pytest11", "sse_sansio").load()
    assert plugin.__name__ == "sse_sansio.pytest_plugin"
    assert callable(plugin.sse_cassette)


@pytest.mark.slow
def test_python_m_sse_sansio_runs() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "sse_sansio", "--version"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("sse-sansio ")


# Names added since the split, each with the issue that added it: a face keeps them too.
ADDED_SINCE: dict[str, frozenset[str]] = {
    # issue 36, item 4; issue 34, items 5 and 6; issue 34, item 1 (Hub)
    "sse_sansio": frozenset({"Update", "window_token", "AsyncMemoryStore", "Hub"}),
    "sse_sansio.llm": frozenset({"Translator"}),  # issue 35, item 1
    "sse_sansio.stores": frozenset({"MirrorStore"}),  # issue 34, item 2
}


@pytest.mark.parametrize("face", sorted(ADDED_SINCE))
def test_names_added_since_the_split_import_from_their_face(face: str) -> None:
    module = importlib.import_module(face)
    assert ADDED_SINCE[face] <= set(module.__all__)
    for name in ADDED_SINCE[face]:
        assert getattr(module, name, None) is not None, f"{face}.{name}"
