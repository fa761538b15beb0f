"""Cassettes against hostile input and lost responses (issue 36, items 8, 12 and 14;
issue 41, items 7 and 9).

- Item 8: a cassette keeps the response's status and headers (``Cassette.status``,
  ``Cassette.headers``), and the server helper and the pytest fixture replay them: a
  recorded 429 is a 429 again, not a 200 event stream.
- Item 12: secrets leave the metadata whatever their shape: header names and values as
  bytes (h11, raw sockets), ``x-goog-api-key``, key-like query parameters and a
  password in a recorded URL.
- Item 14: a redact() function cannot inject a field with a CR; a file with JSON nested
  past the parser's depth or a time of 400 digits is a CassetteError, not a crash.
"""

from __future__ import annotations

import errno
import io
import json
import os
import stat
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest

from sse_sansio import Event
from sse_sansio.pytest_plugin import CassetteFolder
from sse_sansio.testing import (
    Cassette,
    CassetteError,
    _cassette,
    _cassette_file,
    parse,
    serve_cassette,
)

# ---- item 8: the response is kept --------------------------------------------------------

RATE_LIMITED = Cassette.from_chunks(
    [(0.0, b'{"error": "slow down"}')],
    metadata={
        "status": 429,
        "headers": [["Content-Type", "application/json"], ["Retry-After", "7"]],
    },
)


def test_status_and_headers_are_read_from_the_metadata() -> None:
    assert RATE_LIMITED.status == 429
    assert RATE_LIMITED.headers == [("Content-Type", "application/json"), ("Retry-After", "7")]
    bare = Cassette.from_chunks([(0.0, b"data: a\n\n")])
    assert (bare.status, bare.headers) == (None, [])


def test_status_and_headers_survive_a_file(tmp_path: Path) -> None:
    RATE_LIMITED.save(tmp_path / "x.jsonl")
    loaded = Cassette.load(tmp_path / "x.jsonl")
    assert (loaded.status, loaded.headers) == (429, RATE_LIMITED.headers)


@pytest.mark.parametrize(
    ("metadata", "message"),
    [
        ({"status": "429"}, "status"),
        ({"status": True}, "status"),
        ({"status": 42}, "status"),
        ({"status": 1000}, "status"),
        ({"headers": "Content-Type: text/plain"}, "headers"),
        ({"headers": [["a"]]}, "headers"),
        ({"headers": [["a", 1]]}, "headers"),
        ({"headers": [["X-A", "1\r\nSet-Cookie: x"]]}, "CR, LF or NUL"),
        ({"headers": [["X-A\n", "1"]]}, "CR, LF or NUL"),
    ],
)
def test_a_status_or_headers_that_cannot_be_replayed_are_refused(
    metadata: dict[str, Any], message: str
) -> None:
    with pytest.raises(CassetteError, match=message):
        Cassette([(0.0, b"x")], metadata=metadata)


@pytest.mark.slow  # a loopback server
def test_the_server_replays_a_recorded_429_with_its_headers() -> None:
    with serve_cassette(RATE_LIMITED, time_scale=0) as server:
        response = httpx.get(server.url, timeout=10)
    assert response.status_code == 429
    assert response.headers["content-type"] == "application/json"
    assert response.headers["retry-after"] == "7"
    assert response.json() == {"error": "slow down"}


class _Response:
    """A streamed HTTP response as httpx hands it out: status_code, headers, iter_raw()."""

    def __init__(self, status: int, headers: list[tuple[str, str]], chunks: list[bytes]) -> None:
        self.status_code = status
        self.headers = httpx.Headers(headers)
        self._chunks = chunks
        self.closed = False

    def iter_raw(self) -> Any:
        yield from self._chunks

    def close(self) -> None:
        self.closed = True


class _UrllibResponse:
    """As http.client.HTTPResponse: ``status``, headers with items(), iterable."""

    def __init__(self, status: int, chunks: list[bytes]) -> None:
        self.status = status
        self.headers = {"Content-Type": "text/event-stream", "Authorization": "Bearer x"}
        self._chunks = chunks

    def __iter__(self) -> Any:
        return iter(self._chunks)


def test_the_fixture_records_a_response_with_its_status_and_headers(tmp_path: Path) -> None:
    folder = CassetteFolder(tmp_path, recording=True)
    response = _Response(
        429,
        [("Content-Type", "application/json"), ("Set-Cookie", "s=1"), ("X-Request-Id", "r")],
        [b'{"error":', b' "slow down"}'],
    )
    cassette = folder("limited", lambda: response)
    assert cassette.data == b'{"error": "slow down"}'
    assert cassette.status == 429
    assert cassette.headers == [("content-type", "application/json"), ("x-request-id", "r")]
    assert response.closed
    assert CassetteFolder(tmp_path, recording=False)("limited") == cassette
    plain = folder("plain", lambda: _UrllibResponse(200, [b"data: a\n", b"\n"]))
    assert (plain.status, plain.headers) == (200, [("Content-Type", "text/event-stream")])
    assert plain.data == b"data: a\n\n"


def test_the_fixture_keeps_its_metadata_beside_the_response(tmp_path: Path) -> None:
    folder = CassetteFolder(tmp_path, recording=True)
    response = _Response(200, [("Content-Type", "text/event-stream")], [b"data: a\n\n"])
    cassette = folder("m", lambda: response, metadata={"url": "http://h/?key=k", "n": 1})
    assert cassette.metadata["n"] == 1
    assert cassette.metadata["url"] == "http://h/?key=REDACTED"
    assert cassette.status == 200


# ---- item 12: secrets in any shape -------------------------------------------------------


def test_header_names_and_values_as_bytes_are_redacted_and_decoded() -> None:
    cassette = Cassette.from_chunks(
        [],
        metadata={
            "headers": [
                (b"Authorization", b"Bearer sk-1"),
                (b"content-type", b"text/event-stream"),
                (b"X-Goog-Api-Key", b"AIza"),
                (b"X-Note", b"caf\xe9"),
            ]
        },
    )
    assert cassette.headers == [("content-type", "text/event-stream"), ("X-Note", "café")]


@pytest.mark.parametrize("name", ["Authorization ", " authorization", "\tCookie\t", b"X-API-KEY "])
def test_a_secret_header_name_with_white_space_around_it_is_redacted(name: str | bytes) -> None:
    # Issue 41, item 9: "Authorization " with its space was kept, secret and all.
    pairs = [(name, "Bearer sk-1"), ("Accept", "text/event-stream")]
    cassette = Cassette.from_chunks([], metadata={"headers": pairs})
    assert cassette.headers == [("Accept", "text/event-stream")]
    assert "sk-1" not in json.dumps(cassette.metadata)


@pytest.mark.parametrize("shape", [dict, list])
def test_x_goog_api_key_is_a_secret_header(shape: Any) -> None:
    pairs = [("x-goog-api-key", "AIza"), ("Accept", "text/event-stream")]
    cassette = Cassette.from_chunks([], metadata={"headers": shape(pairs)})
    assert cassette.headers == [("Accept", "text/event-stream")]


@pytest.mark.parametrize(
    ("url", "kept"),
    [
        (
            "https://generativelanguage.googleapis.com/v1/m:stream?alt=sse&key=AIza123",
            "https://generativelanguage.googleapis.com/v1/m:stream?alt=sse&key=REDACTED",
        ),
        ("http://h/s?api_key=1&token=2&n=3", "http://h/s?api_key=REDACTED&token=REDACTED&n=3"),
        ("http://h/s?ACCESS_TOKEN=a%20b#frag", "http://h/s?ACCESS_TOKEN=REDACTED#frag"),
        ("http://h/s?access%5Ftoken=x&keys=1", "http://h/s?access%5Ftoken=REDACTED&keys=1"),
        ("http://h/s?key&token=", "http://h/s?key=REDACTED&token=REDACTED"),
        ("http://me:pw@h:80/s?q=1", "http://me:REDACTED@h:80/s?q=1"),
        ("http://h/s?monkey=1&q=key%3D2", "http://h/s?monkey=1&q=key%3D2"),
    ],
)
def test_key_like_query_parameters_in_the_url_are_redacted(url: str, kept: str) -> None:
    cassette = Cassette.from_chunks([], metadata={"url": url})
    assert cassette.metadata["url"] == kept


def test_keep_secrets_keeps_the_url_and_the_headers() -> None:
    metadata = {"url": "http://h/?key=k", "headers": [(b"Authorization", b"x")]}
    cassette = Cassette.from_chunks([], metadata=metadata, keep_secrets=True)
    assert cassette.metadata["url"] == "http://h/?key=k"
    assert cassette.headers == [("Authorization", "x")]


def test_a_url_that_is_not_a_string_is_left_alone() -> None:
    assert Cassette.from_chunks([], metadata={"url": 5}).metadata["url"] == 5


# ---- item 14: redact() cannot inject, a hostile file cannot crash -------------------------

SECRET = Cassette.from_chunks([(0.0, b"id: 1\ndata: token sk-9\n\n")])


@pytest.mark.parametrize("injected", ["x\rid: 666", "x\r\nevent: admin", "x\r"])
def test_a_redaction_returning_cr_is_refused(injected: str) -> None:
    with pytest.raises(ValueError, match="CR"):
        SECRET.redact(lambda data: injected)


def test_a_redaction_returning_lf_makes_data_lines_never_a_field() -> None:
    redacted = SECRET.redact(lambda data: "x\nid: 666\n\nevent: admin")
    assert parse(redacted.data)[:-1] == [Event(data="x\nid: 666\n\nevent: admin", id="1")]


def test_a_redaction_returning_a_non_string_is_refused() -> None:
    with pytest.raises(TypeError, match="str"):
        SECRET.redact(lambda data: b"x")  # type: ignore[arg-type,return-value]


HEADER = b'{"format": "sse-sansio-cassette", "version": 1, "metadata": {}}\n'


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            HEADER + b'{"t": 1' + b"0" * 400 + b', "text": "x"}\n{"end": "clean", "t": 0}\n',
            "finite",
        ),
        (HEADER + b'{"end": "clean", "t": -1' + b"0" * 400 + b"}\n", "finite"),
        (
            HEADER + b'{"t": 0, "text": "x", "n": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n",
            "deep",
        ),
        (
            b'{"format": "sse-sansio-cassette", "metadata": '
            + b"[" * 100_000
            + b"]" * 100_000
            + b"}\n",
            "deep",
        ),
        (b"[" * 100_000 + b"\n", "deep"),
    ],
)
def test_a_hostile_file_is_a_cassette_error(body: bytes, message: str) -> None:
    with pytest.raises(CassetteError, match=message):
        list(_cassette_file.read_records(io.BytesIO(body)))


def test_a_deeply_nested_first_line_is_no_header() -> None:
    assert not _cassette_file.is_header(b"[" * 100_000)


def test_a_400_digit_time_or_deep_metadata_given_in_python_is_a_cassette_error() -> None:
    with pytest.raises(CassetteError, match="finite"):
        Cassette.from_chunks([(10**400, b"x")])
    deep: list[Any] = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(CassetteError, match="deep"):
        Cassette.from_chunks([], metadata={"n": deep})


# ---- issue 41, item 7: a save is whole or not at all, and never over a special file -----

NEW = Cassette.from_chunks([(0.1, b"data: new\n\n"), (0.2, b"data: more\n\n")])


def fail_after_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """A full disk: the second line's write raises ENOSPC."""
    real = _cassette_file.to_line
    lines = iter(range(2))

    def to_line(record: dict[str, Any]) -> str:
        if next(lines, None) is None:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(record)

    monkeypatch.setattr(_cassette, "to_line", to_line)


def test_a_save_that_fails_leaves_the_old_cassette_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "kept.jsonl"
    RATE_LIMITED.save(path)
    before = path.read_bytes()
    fail_after_one_line(monkeypatch)
    with pytest.raises(OSError, match="No space left"):
        NEW.save(path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["kept.jsonl"]  # no partial file
    monkeypatch.undo()
    NEW.save(path)
    assert Cassette.load(path) == NEW


def test_a_save_writes_through_a_symlink_and_into_a_fifo(tmp_path: Path) -> None:
    real = tmp_path / "real.jsonl"
    link = tmp_path / "link.jsonl"
    link.symlink_to(real)
    NEW.save(link)
    assert link.is_symlink()
    assert Cassette.load(real) == NEW
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    read: list[bytes] = []
    reader = threading.Thread(target=lambda: read.append(fifo.read_bytes()), daemon=True)
    reader.start()
    NEW.save(fifo)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    reader.join(timeout=30)
    assert read == [real.read_bytes()]
    with pytest.raises(ValueError, match="is a directory"):
        NEW.save(tmp_path)


def test_a_recording_whose_save_fails_leaves_no_file_and_records_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: a truncated file, which the fixture then loaded (and refused) on every run.
    recording = CassetteFolder(tmp_path, recording=True)
    fail_after_one_line(monkeypatch)
    with pytest.raises(OSError, match="No space left"):
        recording("live", lambda: [b"data: a\n\n"])
    assert list(tmp_path.iterdir()) == []
    monkeypatch.undo()
    assert recording("live", lambda: [b"data: a\n\n"]).data == b"data: a\n\n"
    assert Cassette.load(recording.path("live")).data == b"data: a\n\n"
