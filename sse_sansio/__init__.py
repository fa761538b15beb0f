"""sse_sansio: a sans-I/O parser for Server-Sent Events (``text/event-stream``).

Push bytes in with :meth:`Connection.receive_data`, pull typed items out with
:meth:`Connection.next_event`: :class:`Event`, :class:`Comment`, :class:`EndOfStream`,
or :data:`NEED_DATA`.  UTF-8 decoding, line splitting (CRLF, LF, CR) and event assembly
follow the WHATWG HTML standard and survive any split of the input; the caller owns
every socket and file.  Standard library only.
"""

from importlib import import_module
from typing import TYPE_CHECKING

from ._client._feeding import READ_SIZE, TruncatedStreamError, aiter_events, iter_events
from ._client._response import ResponseCheck, ResponseError, check_response
from ._errors import LocalProtocolError, ProtocolError, RemoteProtocolError, StreamCut
from ._events import (
    Comment,
    DataPiece,
    Diagnostic,
    EndOfStream,
    Event,
    PiecedEvent,
    ReceivedItem,
    SkippedEvent,
    Update,
)
from ._excerpt import describe_body
from ._public import publish as _publish
from ._receive._connection import DEFAULT_MAX_EVENT_SIZE, NEED_DATA, NeedData, OptInItem
from ._receive._implementation import IMPLEMENTATION, Connection
from ._resume._replay_store import (
    AsyncMemoryStore,
    AsyncReplayStore,
    MemoryStore,
    ReplayStore,
    StoreSnapshot,
)
from ._serializer import serialize
from ._version import __version__

if TYPE_CHECKING:  # loaded on first use at run time (_load_layers() below)
    from ._client._reconnect import AttemptEnd, Reconnect, ReconnectPlanner, Stop, StopCause
    from ._gateway._relay import Relay
    from ._health._coalescer import Coalescer
    from ._health._keepalive import KeepalivePlanner
    from ._health._watchdog import Verdict, Watchdog
    from ._resume._replay import AsyncReplayWindow, ReplayWindow, Resume, window_token
    from ._serve._hub import Hub
    from ._serve._server_stream import ServerStream

__all__ = [
    "DEFAULT_MAX_EVENT_SIZE",
    "IMPLEMENTATION",
    "NEED_DATA",
    "READ_SIZE",
    "AsyncMemoryStore",
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
    "Hub",
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
    "Relay",
    "RemoteProtocolError",
    "ReplayStore",
    "ReplayWindow",
    "ResponseCheck",
    "ResponseError",
    "Resume",
    "ServerStream",
    "SkippedEvent",
    "Stop",
    "StopCause",
    "StoreSnapshot",
    "StreamCut",
    "TruncatedStreamError",
    "Update",
    "Verdict",
    "Watchdog",
    "__version__",
    "aiter_events",
    "check_response",
    "describe_body",
    "iter_events",
    "serialize",
    "window_token",
]

# Loaded on first use, all at once (issue 36, item 10): the reconnection planner, stream
# health, the replay window and serving are a third of what ``import sse_sansio`` would
# cost, and a program that only parses needs none of them.  The first access to any of
# their names imports them all and publishes every one of their names here, so that a
# Verdict from a Watchdog or a Resume from a ReplayWindow is named by this face like the
# class that made it.  The checkers see the names imported above, under TYPE_CHECKING.
_LAYERS: dict[str, tuple[str, ...]] = {
    "._client._reconnect": ("AttemptEnd", "Reconnect", "ReconnectPlanner", "Stop", "StopCause"),
    "._health._coalescer": ("Coalescer",),
    "._health._keepalive": ("KeepalivePlanner",),
    "._health._watchdog": ("Verdict", "Watchdog"),
    "._resume._replay": ("AsyncReplayWindow", "ReplayWindow", "Resume", "window_token"),
    "._serve._hub": ("Hub",),
    "._gateway._relay": ("Relay",),
    "._serve._server_stream": ("ServerStream",),
}
_LAZY = frozenset(name for names in _LAYERS.values() for name in names)

# Every class and function of __all__ is named by this face, not by the private module
# that defines it: repr(), tracebacks and pickles show sse_sansio.Event, and a pickle
# made today survives any move inside the house (_public.py says why).  The compiled
# core's Connection, a heap type whose spec names sse_sansio._receive._core.Connection,
# is named here too (its type is mutable); it refuses pickle and copy anyway.
_publish(globals(), [name for name in __all__ if name not in _LAZY], __name__)

# The three subpackages with names of their own (each has its __all__) are attributes
# of this package too, loaded on first use: ``import sse_sansio`` then
# ``sse_sansio.llm.Tracker`` works as pasted, while ``import sse_sansio`` alone stays
# small (issue 36, items 6 and 10).  Once loaded, a subpackage is an ordinary attribute
# (the import system sets it), so __getattr__ runs once per subpackage at most.
_SUBPACKAGES = frozenset({"llm", "stores", "testing"})

if TYPE_CHECKING:  # what the checkers see: the attributes, typed as the modules
    from . import llm as llm
    from . import stores as stores
    from . import testing as testing
else:  # (hidden from the checkers, which would take any misspelt name for an attribute)

    def __getattr__(name: str) -> object:
        if name in _LAZY:
            _load_layers()
            return globals()[name]
        if name in _SUBPACKAGES:
            return import_module(f"{__name__}.{name}")
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _load_layers() -> None:
    """Import the layers loaded on first use, and name their names here."""
    namespace = globals()
    for module, names in _LAYERS.items():
        loaded = import_module(module, __name__)
        for name in names:
            namespace[name] = getattr(loaded, name)
    _publish(namespace, sorted(_LAZY), __name__)


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY, *_SUBPACKAGES})
