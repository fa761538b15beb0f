"""Read a Server-Sent Events stream over a plain socket: the smallest complete adapter.

What it shows: sse_sansio needs only bytes.  A hand-written GET goes out, the response
head is split off by hand, and from then on every ``recv()`` result goes straight into
``Connection.receive_data()``; ``recv()`` returning ``b""`` (the server closed) is the
end of the stream, passed on as ``receive_data(b"")``.

Why the request says HTTP/1.0: real servers (uvicorn, for one) send an HTTP/1.1
response with ``Transfer-Encoding: chunked``, whose framing would have to be decoded
before the bytes are SSE.  A server may not use chunked coding in answer to an HTTP/1.0
request, so it delimits the body by closing the connection instead: every byte after
the head is the event stream, and no HTTP framing code is needed at all.  The price is
that a connection closed too early looks like a clean end at the HTTP level; only
``EndOfStream.truncated`` (an event cut in the middle) or a connection reset tells.  See
``h11_client.py`` for a client that speaks HTTP/1.1 and sees every cut.

Run it against the example server (or any SSE endpoint on localhost)::

    python examples/server.py --port 8000 &
    python examples/socket_client.py --port 8000 --path /
"""

from __future__ import annotations

import argparse
import socket
import sys
from collections.abc import Iterator

import sse_sansio
from sse_sansio import (
    NEED_DATA,
    Comment,
    Connection,
    EndOfStream,
    Event,
    ReceivedItem,
    check_response,
)


class NotAnEventStream(Exception):
    """The server answered, but not with ``200`` and ``text/event-stream``."""


class StreamCut(ConnectionError):
    """The connection was reset before the stream ended; ``end`` is what the parser saw."""

    def __init__(self, end: EndOfStream) -> None:
        super().__init__(f"the connection was reset before the end of the stream ({end!r})")
        self.end = end


def events(
    host: str, port: int, path: str = "/", *, timeout: float = 60.0
) -> Iterator[ReceivedItem]:
    """Yield every Event and Comment of the stream at ``path``, then its EndOfStream.

    Raises:
        NotAnEventStream: the response is not a ``200 text/event-stream``.
        StreamCut: the connection was reset (a proxy signalling a cut).
    """
    with socket.create_connection((host, port), timeout=timeout) as sock:
        # ---- send the request ------------------------------------------------------
        request = f"GET {path} HTTP/1.0\r\nHost: {host}:{port}\r\nAccept: text/event-stream\r\n\r\n"
        sock.sendall(request.encode("ascii"))

        # ---- read the response head -------------------------------------------------
        received = b""
        while b"\r\n\r\n" not in received:
            data = sock.recv(65536)
            if not data:
                raise NotAnEventStream(f"connection closed before the response head: {received!r}")
            received += data
        head, _, body = received.partition(b"\r\n\r\n")
        status_line, *header_lines = head.decode("latin-1").split("\r\n")
        headers = [line.partition(":")[::2] for line in header_lines]
        check = check_response(int(status_line.split()[1]), headers)
        if not check.streams:
            # Show what the server said instead (an error page, a JSON error): at most
            # 4 KiB of it, since the body of a wrong response may never end.
            while len(body) < 4096 and (data := sock.recv(4096)):
                body += data
            raise NotAnEventStream(f"{status_line}: {check.error(body)}")

        # ---- stream: every recv() result goes to the parser unchanged ---------------
        conn = Connection()
        if body:  # the bytes that came with the head; never b"", which would end the stream
            conn.receive_data(body)
        reset = False
        while True:
            item = conn.next_event()
            if item is NEED_DATA:
                try:
                    conn.receive_data(sock.recv(65536))  # b"" once the server closes
                except ConnectionResetError:
                    reset = True
                    conn.receive_data(b"")
                continue
            if isinstance(item, EndOfStream) and reset:
                raise StreamCut(item)
            yield item
            if isinstance(item, EndOfStream):
                return


def describe(item: ReceivedItem) -> str:
    """One line for an item; long data is shortened."""
    if isinstance(item, Event):
        more = f"... ({len(item.data)} chars)" if len(item.data) > 60 else ""
        return f"event {item.type!r} id={item.id!r}: {item.data[:60]!r}{more}"
    if isinstance(item, Comment):
        return f"comment {item.text!r}"
    return f"end of stream (truncated={item.truncated})"


def main(argv: list[str] | None = None) -> int:
    """Print every item of the stream; exit 1 if it was cut short or is not a stream."""
    parser = argparse.ArgumentParser(description="Read an SSE stream over a plain socket.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--path", default="/")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per recv()")
    args = parser.parse_args(argv)
    try:
        for item in events(**vars(args)):
            print(describe(item), flush=True)
            if isinstance(item, EndOfStream) and item.truncated:
                return 1
    except (NotAnEventStream, OSError, sse_sansio.ProtocolError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
