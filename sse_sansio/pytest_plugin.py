"""The pytest plugin: an ``sse_cassette`` fixture that keeps streams as cassette files.

Registered by the ``pytest11`` entry point ``sse_sansio``, so installing sse_sansio makes
it available; it stays off unless a test asks for the fixture: it adds one option, one
ini setting and the fixture, and hooks nothing else.  ``-p no:sse_sansio`` turns it off
entirely.

The fixture is vcrpy's "once" mode for SSE: ``sse_cassette(name, source)`` loads
``<folder>/<name>.jsonl`` when it exists; when it does not, it fails the test, unless
pytest runs with ``--sse-record``, in which case ``source()`` is called for a live
iterable of chunks, or for a streamed HTTP response whose status and headers are kept
too (an object with ``status_code`` or ``status`` and ``headers``, read with
``iter_raw()`` when it has one, else iterated, then closed); the chunks are recorded
(an exception in them becomes the cassette's error end), saved and returned.  The save
is Cassette.save()'s: a partial file renamed into place, so a save that fails (a full
disk) leaves no file, and the next ``--sse-record`` run records it again.  A
cassette once saved is never recorded over: delete the file to record it again.  The
folder is ``cassettes`` beside the test module, or the
``sse_cassette_dir`` ini setting (relative to the rootdir).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .testing._cassette import Cassette

__all__ = ["CassetteFolder", "sse_cassette"]

# A cassette's name is one file name: no folders, no dots in front.
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")

Source = Callable[[], Any]  # -> Iterable[bytes] | Cassette | a streamed HTTP response


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("sse_sansio").addoption(
        "--sse-record",
        action="store_true",
        help="sse_cassette: record the cassettes that are missing (never over a saved one)",
    )
    parser.addini(
        "sse_cassette_dir",
        "sse_cassette: the cassettes' folder, relative to the rootdir "
        "(default: 'cassettes' beside each test module)",
        default="",
    )


class CassetteFolder:
    """What the ``sse_cassette`` fixture returns: call it with a cassette's name."""

    def __init__(self, folder: Path, *, recording: bool) -> None:
        self.folder = folder
        self.recording = recording

    def path(self, name: str) -> Path:
        """Where the cassette ``name`` is kept."""
        if not _NAME.fullmatch(name):
            raise ValueError(f"a cassette name is a plain file name, not {name!r}")
        return self.folder / f"{name}.jsonl"

    def __call__(
        self,
        name: str,
        source: Source | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        metadata: dict[str, Any] | None = None,
    ) -> Cassette:
        """The cassette ``name``: loaded, or recorded from ``source()`` with
        ``--sse-record``.  ``source()`` returns an iterable of chunks, a streamed HTTP
        response (its status and headers are kept, secrets removed: httpx's
        ``client.send(request, stream=True)``, ``urllib.request.urlopen()``) or a ready
        Cassette."""
        # Imported here: a pytest run that never asks for a cassette never loads them.
        from .testing._cassette import Cassette
        from .testing._recording import record

        path = self.path(name)
        if path.exists():
            return Cassette.load(path)
        if not self.recording:
            pytest.fail(f"no cassette {path}: run pytest with --sse-record to record it")
        if source is None:
            pytest.fail(f"cannot record the cassette {name!r}: no source was given")
        got = source()
        if isinstance(got, Cassette):
            cassette = got
        else:
            chunks, metadata = _body_and_metadata(got, metadata)
            recorder = record(chunks, clock=clock, metadata=metadata)
            try:
                for _ in recorder:
                    pass
            except Exception:
                pass  # kept as the cassette's error end
            finally:
                close = getattr(got, "close", None)
                if callable(close):
                    close()
            cassette = recorder.cassette
        path.parent.mkdir(parents=True, exist_ok=True)
        cassette.save(path)
        return cassette


def _body_and_metadata(
    got: Any, metadata: dict[str, Any] | None
) -> tuple[Iterable[bytes], dict[str, Any] | None]:
    """The chunks to record, and the metadata with the response's status and headers
    when ``got`` is a response (it has an int ``status_code`` or ``status``)."""
    status = getattr(got, "status_code", getattr(got, "status", None))
    if not isinstance(status, int) or isinstance(status, bool):
        return got, metadata  # plain chunks
    headers = got.headers
    multi_items = getattr(headers, "multi_items", None)  # httpx: repeated headers apart
    pairs = multi_items() if callable(multi_items) else list(headers.items())
    iter_raw = getattr(got, "iter_raw", None)  # httpx: the bytes as they came, undecoded
    chunks = iter_raw() if callable(iter_raw) else got
    return chunks, {**(metadata or {}), "status": status, "headers": pairs}


@pytest.fixture
def sse_cassette(request: pytest.FixtureRequest) -> CassetteFolder:
    """Load the named cassette, or record it with ``--sse-record`` (docs/cassettes.rst)."""
    configured = str(request.config.getini("sse_cassette_dir"))
    if configured:
        folder = Path(request.config.rootpath) / configured
    else:
        folder = Path(request.path).parent / "cassettes"
    return CassetteFolder(folder, recording=bool(request.config.getoption("--sse-record")))
