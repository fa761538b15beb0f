"""A Server-Sent Events proxy: byte-exact pass-through, or events rewritten on the way.

``--mode verbatim`` parses with ``Connection(keep_raw=True)``, forwards ``item.raw`` for
every item and ``take_raw()`` whenever the parser needs data: the client gets the
upstream body byte for byte, whole events only (an event leaves once its blank line is
in).  ``--mode transform`` re-serializes each event with ``serialize()`` after
``--drop TYPE``, ``--rename OLD=NEW`` (event types), ``--replace OLD=NEW`` (in data).
Comments are forwarded in both modes.

Every request gets an answer: a malformed one (a NUL in a header, a ``Last-Event-ID``
that is not UTF-8) a 400, one whose upstream fails before streaming a 502 that says why.
The ``Last-Event-ID`` header is UTF-8 (a browser resuming after the event ``id: café``
sends it so): its bytes go upstream unchanged.  Upstream's response is judged by
``check_response()``: not 200 ``text/event-stream`` is a 502, and so is a compressed
body (``Content-Encoding: gzip``, ...), which the proxy would parse as garbage: it asks
for ``Accept-Encoding: identity``, and an upstream that compresses anyway is refused
with a 502 that says so, never passed through undecoded.

An upstream cut (its connection drops before the end of its body, or its body ends
mid-event) must not look like a clean end.  The client's body is chunked, so the proxy
closes the connection without the last zero-length chunk: HTTP/1.1 clients report an
incomplete body, and every whole event sent before still arrives (a reset could
overtake bytes still queued).  An HTTP/1.0 client's body ends at close, so closing
would look like a clean end: it gets a reset (``SO_LINGER`` 0), the one signal left.

A client gets ``--client-timeout`` seconds (30) for each read of its request and each
write of the stream: one that connects and sends nothing, or stops reading, is closed,
so idle sockets cannot hold the proxy's threads forever.  ``--rename OLD=NEW`` needs a
NEW that is a valid event type (not empty, no CR or LF).

Threads, blocking sockets, h11 for the HTTP framing on both sides.  Run::

    python examples/server.py --port 8000 --interval 0.2 &
    python examples/proxy.py --port 8001 --upstream 127.0.0.1:8000 --mode verbatim &
    python examples/h11_client.py --port 8001
"""

from __future__ import annotations

import argparse
import contextlib
import socket
import socketserver
import struct
import sys
from dataclasses import dataclass

import h11

from sse_sansio import (
    NEED_DATA,
    Comment,
    Connection,
    EndOfStream,
    Event,
    LocalProtocolError,
    check_response,
    serialize,
)

Address = tuple[str, int]

# Seconds a client may take for each read of its request and each write to it.
CLIENT_TIMEOUT = 30.0


@dataclass
class Rules:
    """Transform mode: event types to drop, types to rename, text to replace in data."""

    drop: set[str]
    rename: dict[str, str]
    replace: list[tuple[str, str]]


class ProxyServer(socketserver.ThreadingTCPServer):
    """Relays each client's GET to ``upstream``: verbatim, or transformed by ``rules``."""

    allow_reuse_address = daemon_threads = True

    def __init__(
        self,
        address: Address,
        upstream: Address,
        rules: Rules | None,
        client_timeout: float = CLIENT_TIMEOUT,
    ) -> None:
        super().__init__(address, ProxyHandler)
        self.upstream, self.rules, self.client_timeout = upstream, rules, client_timeout


def _next(http: h11.Connection, sock: socket.socket) -> h11.Event:
    """The next h11 event, reading from ``sock`` as needed."""
    while (event := http.next_event()) is h11.NEED_DATA:
        http.receive_data(sock.recv(65536))
    assert isinstance(event, h11.Event)  # not PAUSED: one request, one response
    return event


class ProxyHandler(socketserver.BaseRequestHandler):
    """One client connection: one request, one relayed stream."""

    server: ProxyServer
    request: socket.socket

    def handle(self) -> None:
        self.client = h11.Connection(our_role=h11.SERVER)
        # An idle client (connected, silent, or no longer reading) times out: OSError.
        self.request.settimeout(self.server.client_timeout)
        # ---- read the client's request: a bad one gets a 400 -------------------------------
        try:
            request = _next(self.client, self.request)
        except h11.RemoteProtocolError as exc:  # a NUL in a header, a broken request line
            self.reply(exc.error_status_hint, f"bad request: {exc}")
            return
        except OSError:
            return  # the client left, or stayed silent, before asking anything
        if not isinstance(request, h11.Request):
            return  # the client closed without a request
        # The spec sends the last event ID as UTF-8; h11 hands over the raw bytes (and has
        # refused NUL, CR and LF).  The same bytes go upstream; the parser starts from
        # the decoded text.
        raw_resume = dict(request.headers).get(b"last-event-id", b"")
        try:
            resume = raw_resume.decode()
        except UnicodeDecodeError as exc:
            self.reply(400, f"bad Last-Event-ID header {raw_resume!r}: {exc}")
            return
        # ---- ask upstream and relay: any failure is a 502, or a cut once streaming ---------
        try:
            host, port = self.server.upstream
            headers = [
                (b"Host", f"{host}:{port}".encode()),
                (b"Accept", b"text/event-stream"),
                (b"Accept-Encoding", b"identity"),  # the parser reads the bytes as sent
            ]
            headers += [(b"Last-Event-ID", raw_resume)] if raw_resume else []
            http = h11.Connection(our_role=h11.CLIENT)
            with socket.create_connection(self.server.upstream, timeout=60) as up:
                ask = h11.Request(method="GET", target=request.target, headers=headers)
                up.sendall((http.send(ask) or b"") + (http.send(h11.EndOfMessage()) or b""))
                self.relay(http, up, resume)
        except Exception as exc:
            # Upstream refused, cut, timed out or sent what is not HTTP, or the client
            # left; whatever it was, the client must still learn that it failed.
            print(f"proxy: {type(exc).__name__}: {exc}", file=sys.stderr)
            self.fail(f"upstream failed: {type(exc).__name__}: {exc}")

    def fail(self, text: str) -> None:
        """A 502 if no response has started, else a cut the client can see."""
        with contextlib.suppress(OSError):
            if self.client.our_state is h11.SEND_RESPONSE:
                self.reply(502, text)
            elif self.client.their_http_version == b"1.0":  # close-delimited body: reset
                self.request.setsockopt(
                    socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                )
        self.request.close()  # a chunked body now lacks its last chunk

    def relay(self, http: h11.Connection, up: socket.socket, resume: str) -> None:
        """Check upstream's response head, then stream its items to the client."""
        response = _next(http, up)
        if not isinstance(response, h11.Response):  # closed, or a 1xx we did not ask for
            raise ConnectionAbortedError(f"upstream sent no response: {response!r}")
        # Not 200 text/event-stream, or compressed (the parser reads raw bytes): a 502.
        check = check_response(response.status_code, response.headers)
        if not check.streams:
            body = b""  # at most 1 KiB of it, to say what went wrong
            while len(body) < 1024 and isinstance(event := _next(http, up), h11.Data):
                body += event.data
            got = f"{response.status_code} {check.content_type}"
            self.reply(502, f"upstream answered {got}: {check.error(body)}")
            return
        headers = [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache")]
        self.send(h11.Response(status_code=200, reason=b"OK", headers=headers))

        # ---- relay whole items, one batch per upstream read --------------------------------
        verbatim = self.server.rules is None
        # errors="replace": let through what a browser would accept.
        conn = Connection(keep_raw=verbatim, errors="replace", last_event_id=resume)
        out: list[bytes] = []
        while True:
            item = conn.next_event()
            if item is NEED_DATA:
                out.append(conn.take_raw() if verbatim else b"")
                self.send(h11.Data(data=b"".join(out)))
                out.clear()
                event = _next(http, up)  # raises on a cut: handle() passes it on
                conn.receive_data(event.data if isinstance(event, h11.Data) else b"")
            elif isinstance(item, EndOfStream):
                if item.truncated:  # a clean HTTP end, but in the middle of an event
                    raise ConnectionAbortedError(f"upstream stream truncated: {item!r}")
                self.send(h11.Data(data=b"".join(out) + (item.raw or b"")), h11.EndOfMessage())
                return
            else:
                out.append((item.raw or b"") if verbatim else self.rewrite(item))

    def rewrite(self, item: Event | Comment) -> bytes:
        """Transform mode: the bytes to send for one item (b"" drops it)."""
        rules = self.server.rules
        assert rules is not None
        if isinstance(item, Comment):
            return serialize(item)
        if item.type in rules.drop:
            return b""
        data = item.data
        for old, new in rules.replace:
            data = data.replace(old, new)
        event = Event(
            type=rules.rename.get(item.type, item.type), data=data, id=item.id, retry=item.retry
        )
        # Every event gets its id line, so the client's last event ID always matches
        # upstream's; serialize() leaves out an empty id, which takes a bare "id" line.
        return (b"" if event.id else b"id\n") + serialize(event)

    def send(self, *events: h11.Event) -> None:
        """Frame ``events`` for the client and send them; empty data is skipped."""
        wanted = [e for e in events if not isinstance(e, h11.Data) or e.data]
        self.request.sendall(b"".join(self.client.send(e) or b"" for e in wanted))

    def reply(self, status: int, text: str) -> None:
        """Answer with a plain-text error (400, 502) instead of a stream."""
        body = text.encode()
        headers = [
            ("Content-Type", "text/plain; charset=utf-8"),
            ("Content-Length", str(len(body))),
            ("Connection", "close"),
        ]
        reason = {400: b"Bad Request", 502: b"Bad Gateway"}.get(status, b"")
        head = h11.Response(status_code=status, reason=reason, headers=headers)
        with contextlib.suppress(OSError):  # the client may have left already
            self.send(head, h11.Data(data=body), h11.EndOfMessage())


def _pair(text: str) -> tuple[str, str]:
    old, sep, new = text.partition("=")
    if not sep or not old:
        raise argparse.ArgumentTypeError(f"expected OLD=NEW, not {text!r}")
    return old, new


def _rename(text: str) -> tuple[str, str]:
    old, new = _pair(text)
    try:
        Event(type=new)  # an empty type or one with CR or LF would fail every event
    except LocalProtocolError as exc:
        raise argparse.ArgumentTypeError(f"--rename {text!r}: {exc}") from None
    return old, new


def main(argv: list[str] | None = None) -> int:
    """Proxy until interrupted."""
    parser = argparse.ArgumentParser(description="Proxy an SSE stream, verbatim or rewritten.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8001, help="0 picks a free port")
    parser.add_argument("--upstream", default="127.0.0.1:8000", metavar="HOST:PORT")
    parser.add_argument("--mode", choices=("verbatim", "transform"), default="verbatim")
    parser.add_argument("--drop", action="append", default=[], metavar="TYPE")
    parser.add_argument("--rename", action="append", default=[], type=_rename, metavar="OLD=NEW")
    parser.add_argument("--replace", action="append", default=[], type=_pair, metavar="OLD=NEW")
    parser.add_argument(
        "--client-timeout",
        type=float,
        default=CLIENT_TIMEOUT,
        metavar="SECONDS",
        help="close a client that sends nothing, or stops reading, for this long",
    )
    args = parser.parse_args(argv)
    rules = None
    if args.mode == "transform":
        rules = Rules(set(args.drop), dict(args.rename), args.replace)
    elif args.drop or args.rename or args.replace:
        parser.error("--drop, --rename and --replace need --mode transform")
    host, _, port = args.upstream.rpartition(":")
    address, upstream = (args.host, args.port), (host, int(port))
    with ProxyServer(address, upstream, rules, args.client_timeout) as server:
        url = f"http://{args.host}:{server.socket.getsockname()[1]}/"
        print(f"proxying {url} -> {args.upstream} ({args.mode})", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
