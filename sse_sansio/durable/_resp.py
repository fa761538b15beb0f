"""The Redis store's appends over a RESP connection of its own: :class:`AppendLine`.

Why (issue 44, item 8): an append is one ``EVALSHA``, and redis-py's asyncio client
spent most of the app's CPU per append around it (the pool, the retry wrapper, command
packing, the reply parser): one call cost this process 175 to 190 us of CPU time, the
round trip included, on the machine the Speed section of docs/durable.rst was measured
on, where the same command written and read here costs 60 to 75 us.  Only that one
command takes this path; every other command, and every append this path cannot
deliver, goes through redis-py.

Strategy: one connection per event loop, opened on the first append and then held.
Its handshake is ``AUTH`` (with a password), ``SELECT`` (another db than 0) and
``SCRIPT LOAD`` of the append script, so after a restart of Redis, which empties its
script cache, the reconnection loads the script again.  A call writes its command at
once and waits on a future; several calls may be in flight (pipelined): RESP answers the
commands of one connection in the order they came, so the replies resolve the futures
first in, first out.  A caller that stopped waiting (cancelled) still has its reply
read and dropped, so the order holds.  Memory: the connection's buffers hold the
commands in flight and at most one reply being read; each command is its request's
body, already bounded by the app's ``max_body``.

The contract: :meth:`AppendLine.call` returns the script's reply, or None for "not
delivered here, ask redis-py", which is the case when

- no connection can be opened (redis-py tries in turn, and raises its own error);
- the reply is an error (``NOSCRIPT`` after a ``SCRIPT FLUSH``: redis-py's script
  object loads the script again; any other error redis-py raises as its own exception);
- the command could not be written: the connection was closed already.

A command lost in flight (the connection lost, or answering what RESP does not allow,
after the command was written) is not "not delivered": Redis may have run it.  Sending
it again could append the same bytes twice, so :meth:`AppendLine.call` raises
:class:`AppendLost` (a ``ConnectionError``) and the request fails; the client tries
again, and an idempotent producer's second try is answered as the duplicate it is.

After a loss the next call connects again.  Only what :meth:`AppendLine.for_url` can
read whole is served: ``redis://[[user]:password@]host[:port][/db]`` and
``unix://[[user]:password@]/path[?db=n]``; TLS and URLs with other options leave every
append to redis-py.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, cast
from urllib.parse import parse_qs, unquote, urlsplit

__all__ = ["AppendLine", "AppendLost", "pack"]

#: Seconds a connection (and its handshake) may take before the append goes to redis-py.
CONNECT_TIMEOUT = 5.0


def pack(args: Sequence[bytes | str]) -> bytes:
    """A command as RESP writes it: an array of bulk strings (``str`` as UTF-8, as
    redis-py encodes them)."""
    return b"".join(_bulks([b"*%d\r\n" % len(args)], args))


def _bulks(parts: list[bytes], args: Sequence[bytes | str]) -> list[bytes]:
    """``parts`` with each of ``args`` added as a bulk string, ``$<length>\r\n<bytes>\r\n``."""
    for arg in args:
        data = arg.encode() if isinstance(arg, str) else arg
        parts += (b"$%d\r\n" % len(data), data, b"\r\n")
    return parts


def _parse(buffer: bytearray) -> tuple[int, bytes | None]:
    """The first reply in ``buffer``: how many bytes it takes (0 while it is not whole)
    and its value, None for an error or a nil.  RESP2's one-line replies and bulk
    strings only: an append, ``AUTH``, ``SELECT`` and ``SCRIPT LOAD`` answer nothing else."""
    end = buffer.find(b"\r\n")
    if end < 0:
        return 0, None
    kind = buffer[0]
    if kind == 0x24:  # "$": a bulk string, "$<length>\r\n<bytes>\r\n"
        try:
            size = int(buffer[1:end])
        except ValueError:
            raise _Broken("a bulk string's length is not a number") from None
        if size < 0:  # "$-1": nil
            return end + 2, None
        stop = end + 2 + size
        if len(buffer) < stop + 2:
            return 0, None
        return stop + 2, bytes(buffer[end + 2 : stop])
    if kind in b"+:":  # a simple string or an integer: one line
        return end + 2, bytes(buffer[1:end])
    if kind == 0x2D:  # "-": an error; redis-py is asked again, and raises it
        return end + 2, None
    raise _Broken(f"a reply of type {chr(kind)!r}")  # arrays, RESP3: never asked for


class _Broken(Exception):
    """The peer answered what RESP does not allow here."""


class AppendLost(ConnectionError):
    """The connection to Redis was lost with the append in flight: Redis may or may not
    have run it, so it is not sent again (the module docstring says why)."""


class _Line(asyncio.Protocol):
    """One connection: commands out, replies read in order (RESP2: ``+`` simple
    strings, ``-`` errors, ``:`` integers, ``$`` bulk strings; errors and anything
    else answer None)."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self._waiting: deque[asyncio.Future[bytes | None]] = deque()
        self._buffer = bytearray()

    @property
    def open(self) -> bool:
        return self.transport is not None and not self.transport.is_closing()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's: no subclass

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        self._drop("the connection to Redis was lost")

    def request(self, command: bytes) -> asyncio.Future[bytes | None]:
        """Write ``command`` (packed) and return the future of its reply."""
        future: asyncio.Future[bytes | None] = asyncio.get_running_loop().create_future()
        if self.transport is None or self.transport.is_closing():
            future.set_result(None)
            return future
        self._waiting.append(future)
        self.transport.write(command)
        return future

    def data_received(self, data: bytes) -> None:
        buffer = self._buffer
        buffer += data
        try:
            while buffer:
                used, reply = _parse(buffer)
                if not used:  # the reply is not whole yet
                    return
                del buffer[:used]
                if not self._waiting:
                    raise _Broken("a reply nobody asked for")
                future = self._waiting.popleft()
                if not future.done():  # its caller was cancelled: the reply is dropped
                    future.set_result(reply)
        except _Broken as error:
            self.close(f"Redis answered what RESP does not allow ({error})")

    def close(self, why: str = "the connection to Redis was closed") -> None:
        """Close the connection; every call in flight raises :class:`AppendLost`."""
        if self.transport is not None:
            self.transport.close()
        self._drop(why)

    def _drop(self, why: str) -> None:
        while self._waiting:
            future = self._waiting.popleft()
            if not future.done():
                future.set_exception(AppendLost(f"{why} with a command in flight; it may have run"))


_Factory = Callable[[], _Line]
_Opening = Coroutine[Any, Any, tuple[asyncio.BaseTransport, _Line]]
_Connect = Callable[[_Factory], _Opening]


class AppendLine:
    """The append script over a held connection (the module docstring tells how).

    Args:
        connect: Opens a connection to Redis for a protocol factory, on the running
            loop (:meth:`for_url` makes it from a URL).
        handshake: The commands to send first, each answered ``OK`` (``AUTH``,
            ``SELECT``).
        script: The Lua script :meth:`call` runs (``SCRIPT LOAD``-ed on connecting).
        sha: Its SHA-1, in hex (what ``SCRIPT LOAD`` answers).
    """

    def __init__(
        self,
        connect: _Connect,
        handshake: Sequence[Sequence[str]],
        script: str,
        sha: str,
    ) -> None:
        self._connect = connect
        self._handshake = [pack(command) for command in handshake]
        self._load = pack(("SCRIPT", "LOAD", script))
        self._sha = sha.encode()
        self._head = _bulks([], ("EVALSHA", sha, "0"))
        self._line: _Line | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._opening: asyncio.Task[_Line | None] | None = None
        #: Replies this path delivered (the others went to redis-py).
        self.delivered = 0

    @classmethod
    def for_url(cls, url: str, script: str, sha: str) -> AppendLine | None:
        """The line to the Redis server at ``url``, or None for a URL it does not
        serve (the module docstring lists them)."""
        parts = urlsplit(url)
        query = parse_qs(parts.query)
        if set(query) - {"db"} or parts.scheme not in ("redis", "unix"):
            return None
        handshake: list[tuple[str, ...]] = []
        if parts.password:
            secret = unquote(parts.password)
            user = unquote(parts.username or "")
            handshake.append(("AUTH", user, secret) if user else ("AUTH", secret))
        db = query["db"][-1] if "db" in query else "0"
        if parts.scheme == "redis":
            host, port = parts.hostname or "localhost", parts.port or 6379
            if "db" not in query and parts.path.strip("/"):  # redis-py: ?db= first
                db = parts.path.strip("/")

            def connect(factory: _Factory) -> _Opening:
                return asyncio.get_running_loop().create_connection(factory, host, port)
        else:
            where = unquote(parts.path)

            def connect(factory: _Factory) -> _Opening:
                return asyncio.get_running_loop().create_unix_connection(factory, where)

        if int(db):  # a number: redis-py made its client from the same URL
            handshake.append(("SELECT", str(int(db))))
        return cls(connect, handshake, script, sha)

    async def call(self, args: Sequence[bytes | str]) -> bytes | None:
        """``EVALSHA`` of the script with ``args`` (no keys): its reply, or None when
        it was not delivered here (the caller then asks redis-py).

        Raises:
            AppendLost: the connection was lost with the command in flight.
        """
        line = self._line
        if line is None or not line.open or self._loop is not asyncio.get_running_loop():
            line = await self._reopen()
            if line is None:
                return None
        command = _bulks([b"*%d\r\n" % (len(args) + 3), *self._head], args)
        reply = await line.request(b"".join(command))
        if reply is not None:
            self.delivered += 1
        return reply

    async def _reopen(self) -> _Line | None:
        """The connection of the running loop: one opening shared by every call that
        finds none (a caller cancelled while it waits leaves the opening to the
        others)."""
        loop = asyncio.get_running_loop()
        opening = self._opening
        if opening is None or opening.done() or opening.get_loop() is not loop:
            opening = self._opening = loop.create_task(self._open(loop))
        return await asyncio.shield(opening)

    async def _open(self, loop: asyncio.AbstractEventLoop) -> _Line | None:
        try:
            line = await asyncio.wait_for(self._greeted(), CONNECT_TIMEOUT)
        except (OSError, asyncio.TimeoutError):
            return None
        if line is not None:
            self.close()
            self._line, self._loop = line, loop
        return line

    async def _greeted(self) -> _Line | None:
        """A new connection past its handshake, or None if Redis refused a step."""
        _, line = await self._connect(_Line)
        try:
            replies = await asyncio.gather(
                *[line.request(command) for command in (*self._handshake, self._load)]
            )
        except BaseException:  # cancelled: the connection took too long
            line.close()
            raise
        if replies != [b"OK"] * len(self._handshake) + [self._sha]:
            line.close()
            return None
        return line

    def close(self) -> None:
        """Close the held connection; the next call opens another.  A connection whose
        loop is closed already is only forgotten (its transport went with the loop)."""
        line, loop = self._line, self._loop
        self._line = self._loop = None
        if line is not None and loop is not None and not loop.is_closed():
            line.close()
