# Errors, named after who is at fault (h11's scheme).
#
# RemoteProtocolError: the peer sent something we refuse.  Every byte sequence is a
# valid event stream under the WHATWG rules (unknown fields and bad ``retry`` values are
# ignored), so the only things we refuse are our own policies: an event over the size
# limit, and invalid UTF-8 in strict mode.  It is sticky: once raised, the connection
# raises it again on every later call.
#
# LocalProtocolError: the caller misused the API (data after end of stream) or asked
# us to build or serialize an invalid item.  Nothing else happened: the connection's
# state is unchanged.
#
# The base class ProtocolError exists to be caught, not raised, as in h11.
#
# StreamCut is the odd one out: nobody misbehaved in the bytes.  A producer raises it
# to say "this stream was cut, pass the cut on" (an upstream reset, a failed model
# call), and the serving adapters end the response without its proper end.  It is a
# ProtocolError, not a ConnectionError: ``except ProtocolError`` catches every error of
# sse_sansio, and servers treat an OSError raised while writing as their client
# going away, which would turn a cut into a silent, clean-looking disconnect.

from __future__ import annotations

import copyreg

__all__ = ["LocalProtocolError", "ProtocolError", "RemoteProtocolError", "StreamCut"]


class ProtocolError(Exception):
    """Base class of sse_sansio's errors; catch it, don't raise it."""

    def __init__(self, msg: str) -> None:
        if type(self) is ProtocolError:
            raise TypeError("tried to raise ProtocolError directly; raise a subclass")
        super().__init__(msg)

    def __reduce__(self) -> tuple[object, ...]:
        # Pickle and copy rebuild the error as it is, whatever its constructor asks
        # for (RemoteProtocolError's keyword-only offset, say): ``cls.__new__(cls,
        # *args)`` sets the message, then its attributes (offset, check, a note added
        # by add_note()...) come back from its __dict__.  BaseException's own reduce
        # calls ``cls(*args)``, which a subclass's constructor refuses.  A pickle names
        # the public class only (copyreg.__newobj__ is written as NEWOBJ from protocol
        # 2 on), never a helper of this private module.
        newobj = copyreg.__newobj__  # type: ignore[attr-defined]  # (not in typeshed)
        return (newobj, (type(self), *self.args), self.__dict__ or None)


class LocalProtocolError(ProtocolError):
    """The caller misused the API or asked for an invalid item; no state changed."""


class RemoteProtocolError(ProtocolError):
    """The peer sent something sse_sansio refuses.

    Attributes:
        offset: The byte offset in the stream (counted from the first byte received,
            BOM included) where the problem lies: the first invalid byte, or the first
            byte beyond the size limit.
    """

    def __init__(self, msg: str, *, offset: int) -> None:
        super().__init__(msg)
        self.offset = offset


class StreamCut(ProtocolError):
    """The stream was cut: end the response as a cut, not as a clean end.

    Raise it from the source of a served stream (:class:`~sse_sansio.ServerStream`'s
    adapters) to make the client see a cut, the body stopped without its proper end,
    so that it knows the answer is incomplete and may resume; the adapters log it in
    one line, without a traceback.
    """

    def __init__(self, msg: str = "the stream was cut") -> None:
        super().__init__(msg)
