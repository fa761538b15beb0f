# The public face of the parser: Connection's API, its options and its sticky errors.
#
# The pure core's class is PyConnection.  sse_sansio.Connection is the class the
# process chose (_implementation.py, the only module that chooses): the compiled one
# when it was built, else this one.  Every entry point of the package (iter_events,
# aiter_events, the planner, sse_sansio.testing, the command line) builds that one;
# pass PyConnection (or one of its instances, as connection=) to get the pure core
# whatever the process chose.
#
# Spec: WHATWG HTML, "Server-sent events", section 9.2.6 "Interpreting an event stream"
# https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation
#
# The rooms of the parser, each with its own header:
# - _connection.py (here): receive_data() queues the chunks it is given; next_event()
#   resumes the parser; the options are checked once; a failure is recorded once and
#   raised again on every later call.
# - _stream.py: the doors the parser is given instead of the connection: the chunk
#   queue and the stream state (last event ID, retry, end of stream, failure).
# - _fields.py: the spec's field rules (event, id, retry), shared by every Python path.
# - _lines.py: bytes into lines (the BOM, windows, runs of one kind of line end, the
#   line still arriving and its spill policy, the end-of-stream UTF-8 check).
# - _interpret.py: the parser generator, interpreting lines in the spec's order, with
#   the size limit reasoned about in one place; with diagnostics=True it also hands
#   out the Diagnostic items (worded by _diagnostics.py).
# - _uniform.py: the fast path for runs of same-shaped blocks.
# - _raw.py: keep_raw's bookkeeping.
# - _modes.py: on_oversize="skip" and piece_size, for a block that the parser hands
#   over as it grows near the limit or piece_size (the rest of its lines go there).
# - _options.py: the options as type checkers see them, declared once for Connection,
#   the feeding helpers and the planner, and which of them opt into more item types.
#
# Invariants kept here:
# - receive_data() only queues (a copy of a bytearray or memoryview) in the connection's
#   ChunkQueue; the parser takes the chunks in order, never more than once, and writes
#   what outlives an item in the StreamState (_stream.py says how both work).  The
#   parser sees those two and the RawBytes of keep_raw, never the connection.
# - Once anything escapes the parser, the connection is failed for good: the state's
#   error holds what failed it, the parser never resumes, and every later next_event() and
#   receive_data() raises (the class docstring says what).
# - next_event() as an instance attribute is a C-level call into the parser generator
#   (no Python frame per item), yet help() shows its contract and it stays sticky
#   when saved in a local before a failure.
# - Threads (issue 43, item 2; the class docstring's "Threads"): calls on one connection
#   are serialized, as the compiled core's critical section serializes them.  With the
#   GIL the parser's steps that share state with receive_data() run without a switch
#   point between a test and its store (_stream.py), and a second next_event() meets
#   the running generator (ValueError).  On a free-threaded CPython there is no such
#   switch point to rely on: serialize() gives the class a per-connection RLock (taken
#   by __init__, receive_data(), next_event() and take_raw(); re-entrant, so a finalizer
#   on the same thread still gets the nested-call rules).  It costs a Python frame per
#   call, so it is applied only there.

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterator
from itertools import chain
from typing import TYPE_CHECKING, ClassVar, Generic, Literal, NoReturn, overload

from sse_sansio._errors import LocalProtocolError, RemoteProtocolError
from sse_sansio._events import AnyItem, Comment, EndOfStream, Event
from sse_sansio._need_data import NEED_DATA, NeedData

from ._comment_count import CommentCounter
from ._contract import (
    DEFAULT_MAX_EVENT_SIZE,
    NOT_COPYABLE,
    check_count_comments,
    check_options,
)
from ._interpret import DEFAULT_TUNING, Tuning, parse
from ._options import OptInItem
from ._raw import RawBytes
from ._stream import ChunkQueue, StreamState

__all__ = [
    "DEFAULT_MAX_EVENT_SIZE",
    "NEED_DATA",
    "Connection",
    "NeedData",
    "OptInItem",
    "PyConnection",
]

# DEFAULT_MAX_EVENT_SIZE, the option checks and their messages: _contract.py.

# Typing: what a connection returns besides the classic items is its type parameter.
# Connection() (no opt-in option) is Connection[Never]: next_event() returns Event,
# Comment, EndOfStream or NEED_DATA, and nothing else.  A connection made with
# on_oversize, piece_size, diagnostics or updates is Connection[OptInItem]: it may also
# return those items, so a type checker checks the branches that handle them instead of
# calling them unreachable.  __init__'s two overloads pick the parameter from the
# options, typed once in _options.py (which says how); a bare ``Connection`` in an
# annotation means Connection[Never] (the TypeVar's default).  The type parameter
# exists for checkers only: the compiled class is not generic, so write
# ``Connection[...]`` in annotations (under ``from __future__ import annotations``),
# not in code that runs.
if TYPE_CHECKING:
    from contextlib import AbstractContextManager
    from typing import Any, Never, Unpack

    from typing_extensions import TypeVar  # its default= is 3.13's

    from ._options import ClassicOptions, OptInOptions

    _Extra = TypeVar("_Extra", bound=OptInItem, covariant=True, default=Never)
else:
    from typing import TypeVar

    _Extra = TypeVar("_Extra", bound=OptInItem, covariant=True)


class PyConnection(Generic[_Extra]):
    """The receiving side of one ``text/event-stream``, as a sans-I/O state machine.

    Feed it bytes with :meth:`receive_data` and pull items with :meth:`next_event`::

        conn = Connection()
        while True:
            chunk = sock.recv(65536)        # b"" at end of stream
            conn.receive_data(chunk)
            while True:
                item = conn.next_event()
                if item is NEED_DATA:
                    break                   # read more
                if isinstance(item, EndOfStream):
                    return                  # item.truncated says if it was cut off
                handle(item)                # an Event or a Comment

    Args:
        errors: ``"strict"`` (the default) raises :class:`RemoteProtocolError` on
            invalid UTF-8 anywhere in the stream, comments included, and on a sequence
            left unfinished at end of stream.  ``"replace"`` decodes as browsers do,
            putting U+FFFD in place of each invalid sequence (WHATWG Encoding).
        last_event_id: The initial last event ID string, as after a reconnect that sent
            ``Last-Event-ID``.  Events carry it in ``id`` until the stream sets another.
        max_event_size: The most bytes one event may take in the stream: from the
            first byte of its block (its first field line: comments before it are
            handed out at once and do not count; those among its fields do) up to its
            dispatching blank line, leaving out only that blank line's own line end; a
            line still arriving counts with the bytes it has so far.  A peer that exceeds it gets
            a :class:`RemoteProtocolError`.  ``None`` means no limit.  Default:
            :data:`DEFAULT_MAX_EVENT_SIZE` (16 MiB).  In keep_raw mode, bytes waiting
            for :meth:`take_raw` may not exceed it either (LocalProtocolError).
        keep_raw: When true, each item carries in ``raw`` the exact bytes a verbatim
            proxy should forward for it, and :meth:`take_raw` hands out the bytes that
            belong to no item (blank lines, ``id:``-only blocks).  Forwarding all of
            them reproduces the stream byte for byte, never half an event.
        on_oversize: ``"error"`` (the default) raises :class:`RemoteProtocolError` for
            an event over ``max_event_size``.  ``"skip"`` drops it instead, at the same
            byte, buffering nothing more of it, and returns a :class:`SkippedEvent` at
            its blank line; its ``event``, ``id`` and ``retry`` lines still count (a
            line longer than max_event_size is dropped whole).  In keep_raw mode its
            bytes are not forwarded.
        piece_size: ``None`` (the default) or an int from 1 to ``max_event_size``: an
            event whose data grows past that many bytes is handed out as it arrives, in
            :class:`DataPiece` items of at least that many bytes (but the last), then a
            :class:`PiecedEvent`.  ``max_event_size`` then bounds what the connection
            holds: the block's bytes since the last piece.  (With on_oversize="skip"
            too, a pieced event that then outgrows it, by a huge ``id`` line say, ends
            in a SkippedEvent: its pieces belong to an event never dispatched.)
        diagnostics: When true, :class:`Diagnostic` items say what the spec tells a
            parser to ignore (unknown fields, an invalid ``retry``, an ``id`` holding
            NUL, a block without data) and whether the stream starts like something
            else (HTTP headers, chunked-encoding sizes, HTML, JSON, gzip).
        count_comments: When true, comments are counted in :attr:`comment_count`
            instead of being handed out as :class:`Comment` items: for a caller that
            wants only the sign of life of keep-alive comments, at no item's cost
            (strict mode still checks their UTF-8).  Not with ``keep_raw=True``
            (ValueError: the comments' bytes would be lost).
        updates: When true, a block that dispatches no event but sets the last event
            ID or ``retry`` (an ``id:``-only block, MCP's priming event ``id: 5`` /
            ``retry: 2000``) is handed out as an :class:`Update` at its blank line
            (:class:`Update` gives the exact rule).  Without it such a block changes
            :attr:`last_event_id` and :attr:`retry` only.  The compiled core runs a
            connection with updates on its opt-in walker.

    Every option runs on this connection's own core (:attr:`implementation` says which;
    the compiled core runs the opt-in modes itself, at 1.05 to 1.11 times its default
    path's instructions per item).  On the pure core every option runs on its one
    parser: ``on_oversize="skip"`` and ``piece_size`` read a block line by line only
    once it grows near ``max_event_size`` or ``piece_size`` (a skip connection costs what
    the default path costs on blocks short of the limit, within 1%, as
    docs/huge-input.rst measures); ``diagnostics`` turns off the same-shape fast path.

    Failure is final.  Once :meth:`next_event` has raised, whatever it raised, the
    connection is *failed*: it never parses again, and every later
    :meth:`next_event` and :meth:`receive_data` (also through a saved
    ``nxt = conn.next_event``) raises at once.  After a :class:`RemoteProtocolError`
    that is the same error again (same message and ``offset``).  After any other
    exception (a :class:`KeyboardInterrupt`, a :class:`MemoryError`, an exception from
    a signal handler, a bug) it is a :class:`LocalProtocolError` saying "the connection
    failed earlier: <type>: <message>", with the original exception as ``__cause__``:
    the parser may have stopped half-way through a step, so its state is not trusted.
    The items returned before stand; :attr:`last_event_id` and :attr:`retry` stay
    readable, for a reconnect.

    Threads.  Connections share nothing: run any number, in any threads.  Calls on
    one connection from several threads are serialized (on a free-threaded CPython the
    compiled core locks the connection for each call and the pure core takes a lock;
    with the GIL the GIL does it), so they cannot corrupt it or lose an item; a stream
    still has one order, so feed it from one place.  One call at a time: a call to
    :meth:`next_event` made while it is running on the same connection (from a
    finalizer the garbage collector runs inside it, or from another thread let in
    there) raises :class:`ValueError` and changes nothing: the running call goes on,
    and the connection is not failed.  A nested :meth:`receive_data` only queues, and is
    accepted; the compiled core also refuses a nested :meth:`take_raw` or
    ``__init__`` with :class:`ValueError` (the pure core's are memory-safe anyway).
    """

    # The parser's test switches (_interpret.Tuning): where a block goes to the opt-in
    # modes' rules, the same-shape fast path, the window size.  Tests set them on a
    # subclass or for a while (tests/helpers.py's parser_config); every connection made
    # meanwhile passes them to its parser.
    _tuning: ClassVar[Tuning] = DEFAULT_TUNING

    @overload
    def __init__(self: PyConnection[Never], **options: Unpack[ClassicOptions]) -> None: ...
    @overload
    def __init__(self: PyConnection[OptInItem], **options: Unpack[OptInOptions]) -> None: ...
    def __init__(
        self,
        *,
        errors: Literal["strict", "replace"] = "strict",
        last_event_id: str = "",
        max_event_size: int | None = DEFAULT_MAX_EVENT_SIZE,
        keep_raw: bool = False,
        on_oversize: Literal["error", "skip"] = "error",
        piece_size: int | None = None,
        diagnostics: bool = False,
        count_comments: bool = False,
        updates: bool = False,
    ) -> None:
        # (The parser keeps errors and the limit in its own locals: each attribute less
        # keeps the instance's dict in a smaller size class.)
        strict, limit = check_options(
            errors, last_event_id, max_event_size, on_oversize, piece_size
        )

        # The doors the parser is given (_stream.py): the chunks received, and what
        # outlives an item.  (Attributes of the connection, read by receive_data() and
        # the properties; the parser keeps errors and the limit in its own locals.)
        self._queue = queue = ChunkQueue(plain=not keep_raw)
        self._state = state = StreamState(queue, str.__str__(last_event_id))
        # keep_raw mode: the received bytes not yet handed out (None without it).
        self._raw = raw = RawBytes(limit) if keep_raw else None

        # The parser generator, then, once an exception has ended it, an iterator that
        # raises the sticky error on every call: chain() moves to it when the finished
        # generator gives nothing more, so even a saved conn.next_event goes on raising.
        parser: Iterator[AnyItem | NeedData]
        parser = parse(
            queue, state, raw, last_event_id, strict, limit, self._tuning,
            diagnostics=bool(diagnostics), skip=on_oversize == "skip", piece_size=piece_size,
            updates=bool(updates),
        )  # fmt: skip
        if count_comments:
            check_count_comments(keep_raw)
            # (An attribute only then: the default connection's dict stays as small.)
            self._counter = parser = CommentCounter(parser)
        items = chain(parser, iter(self._raise_error, None))
        # Speed: the instance's next_event calls that chain from C (no Python frame, as
        # the method below has), through a partial that carries the method's docstring.
        # (A bound method of one shared partial would take 128 bytes less, but it is a
        # second C-level call: +1% instructions per item, counted by callgrind.)
        self.next_event = _NextEvent(next, items)  # type: ignore[method-assign]

    # ------------------------------------------------------------------ public state

    @property
    def last_event_id(self) -> str:
        """The spec's last event ID string after all input processed so far.

        Set from the ``id`` field at every blank line, including one that ends a block
        without data, so an ``id:``-only block is never lost; never at end of stream.
        Send it as ``Last-Event-ID`` when reconnecting.
        """
        return self._state.last_event_id

    @property
    def comment_count(self) -> int:
        """How many comments the stream has had so far, with ``count_comments=True``
        (they are counted, not handed out); 0 without it."""
        counter: CommentCounter[object] | None = self.__dict__.get("_counter")
        return 0 if counter is None else counter.count

    @property
    def implementation(self) -> Literal["compiled", "python"]:
        """Which core parses for this connection: ``"python"`` here (the compiled core
        says ``"compiled"``, whatever the options)."""
        return "python"

    @property
    def retry(self) -> int | None:
        """The reconnection time in milliseconds (the latest valid ``retry`` field), or
        ``None`` if the stream never set one.  It takes effect as soon as its line is
        complete, even when its block never dispatches an event."""
        return self._state.retry

    # ------------------------------------------------------------------ receiving

    def receive_data(self, data: bytes | bytearray | memoryview) -> None:
        """Add bytes received from the peer; ``b""`` means the stream ended.

        This only buffers: call :meth:`next_event` to get what the bytes complete.
        Ending the stream more than once is harmless.

        Raises:
            LocalProtocolError: non-empty data after the end of stream, or the
                connection failed earlier on an exception other than a protocol error.
            RemoteProtocolError: the connection already failed (the same error again).
            TypeError: data is not bytes, bytearray or memoryview.
        """
        queue = self._queue
        if type(data) is bytes and data and queue.plain and queue.chunk is None:
            queue.chunk = data  # the common case, kept short
            return
        if self._state.error is not None:
            self._raise_error()
        if type(data) is not bytes:
            if not isinstance(data, (bytearray, memoryview)):
                raise TypeError(f"receive_data() takes bytes, not {type(data).__name__}")
            data = bytes(data)  # a copy: the caller may reuse its buffer
        if not data:
            queue.end()
            return
        if queue.ended:
            raise LocalProtocolError("receive_data() called with data after end of stream")
        if self._raw is not None:
            self._raw.receive(data)
        queue.put(data)

    def next_event(self) -> Event | Comment | EndOfStream | _Extra | NeedData:
        """Return the next complete item, or ``NEED_DATA``.

        Items come in stream order: an :class:`Event` when a blank line dispatches one,
        a :class:`Comment` for each comment line, and, once the stream has ended and
        every complete item has been returned, an :class:`EndOfStream`, again on every
        later call.  Call it until it returns ``NEED_DATA`` (feed more bytes) or an
        ``EndOfStream`` (stop): it parses only as far as the item it returns (or, in a run
        of same-shaped blocks, at most 128 items ahead; the connection's state and any
        error still come in stream order).

        Raises:
            RemoteProtocolError: the peer sent invalid UTF-8 (strict mode) or an event
                over ``max_event_size``.  Every item completed before the bad byte has
                already been returned.  The error is sticky: every later call raises
                it again.
            LocalProtocolError: an earlier call failed on another exception (see the
                class docstring); the parser never resumes after one.
        """
        # (The instance attribute of the same name does the work, from C.)
        return self.next_event()

    # ------------------------------------------------------------------ keep_raw

    def take_raw(self) -> bytes:
        """Hand out the received bytes that no item carried and that are safe to forward.

        Only with ``keep_raw=True``.  These are bytes that belong to no item: blank
        lines, ``id:``/``retry:``-only blocks, unknown fields, the LF of a CRLF split
        across chunks.  A verbatim proxy forwards ``item.raw`` for every item and
        ``take_raw()`` whenever ``next_event()`` returns ``NEED_DATA``; what it sends is
        then exactly what it received, up to the tail discarded at a cut.  Bytes not
        taken stay held until the next item's ``raw`` carries them; ``receive_data()``
        refuses more data (LocalProtocolError) once they exceed ``max_event_size``.

        Raises:
            LocalProtocolError: the connection was made without ``keep_raw=True``.
        """
        if self._raw is None:
            raise LocalProtocolError("take_raw() needs Connection(keep_raw=True)")
        return self._raw.take()

    def __copy__(self) -> NoReturn:
        raise TypeError(NOT_COPYABLE)  # (a copy would share the parser and lose input)

    def __deepcopy__(self, memo: object) -> NoReturn:
        raise TypeError(NOT_COPYABLE)

    def __reduce_ex__(self, protocol: object) -> NoReturn:
        # Refused here, before pickle walks the parser's state: on 3.12+ it met an
        # itertools object first and warned (DeprecationWarning) before failing.
        raise TypeError(NOT_COPYABLE)

    # ------------------------------------------------------------------ failure

    def _raise_error(self) -> NoReturn:
        """Raise again what failed the connection (see the class docstring)."""
        error = self._state.error
        if isinstance(error, RemoteProtocolError):
            raise RemoteProtocolError(str(error), offset=error.offset)
        raise LocalProtocolError(
            f"the connection failed earlier: {type(error).__name__}: {error}"
        ) from error


class _ContractDoc:
    """``__doc__`` of _NextEvent: next_event()'s contract on an instance, a line on the class.

    pydoc (``help(conn.next_event)``) shows an object's own docstring only where it
    differs from its type's: on 3.14, where a partial is a method descriptor, a plain
    class attribute ``__doc__`` left help() showing the partial's repr.  Read through
    this descriptor the two differ, on every version.
    """

    def __get__(self, instance: object, owner: type | None = None) -> str | None:
        if instance is None:
            return "A pure-core Connection's next_event (see PyConnection.next_event)."
        return PyConnection.next_event.__doc__


class _NextEvent(functools.partial):  # type: ignore[type-arg]
    __doc__ = _ContractDoc()
    __slots__ = ()


class _Locked:
    """next_event() of a serialized connection: the parser's call under its lock."""

    __slots__ = ("call", "lock")
    __doc__ = _ContractDoc()

    def __init__(self, lock: AbstractContextManager[object], call: Callable[[], object]) -> None:
        self.lock = lock
        self.call = call

    def __call__(self) -> object:
        with self.lock:
            return self.call()


def serialize(cls: type[PyConnection[Any]], when: bool = True) -> None:
    """Give ``cls`` a per-connection lock around every call (free-threaded CPython).

    See the module header.  ``when`` false leaves the class alone (the GIL serializes).
    """
    if not when:
        return
    from threading import RLock

    init, receive, take = cls.__init__, cls.receive_data, cls.take_raw

    @functools.wraps(init)
    def __init__(self: PyConnection[Any], **options: Any) -> None:
        lock = self.__dict__.get("_lock") or RLock()
        with lock:
            init(self, **options)
            self._lock = lock  # type: ignore[attr-defined]
            self.next_event = _Locked(lock, self.next_event)  # type: ignore[method-assign]

    @functools.wraps(receive)
    def receive_data(self: PyConnection[Any], data: bytes | bytearray | memoryview) -> None:
        with self._lock:  # type: ignore[attr-defined]
            receive(self, data)

    @functools.wraps(take)
    def take_raw(self: PyConnection[Any]) -> bytes:
        with self._lock:  # type: ignore[attr-defined]
            return take(self)

    cls.__init__ = __init__  # type: ignore[method-assign]
    cls.receive_data = receive_data  # type: ignore[method-assign]
    cls.take_raw = take_raw  # type: ignore[method-assign]


# A free-threaded CPython (3.13t and later) with its GIL off: lock (see above).
serialize(PyConnection, when=not getattr(sys, "_is_gil_enabled", lambda: True)())


# The name this class had before the pure core got one of its own.  Nothing in the
# package uses it (tests/package/test_entry_points.py checks): use PyConnection, or
# sse_sansio.Connection for the process's choice.
Connection = PyConnection
