"""The examples of docs/huge-input.rst: image_pieces.py and skip_oversize.py.

Each runs on streams built here, under several chunkings, with the expected files,
events and log lines worked out from the stream (its offsets counted by hand).
"""

from __future__ import annotations

import base64
import runpy
from pathlib import Path
from typing import Any

import pytest

from sse_sansio import Event, TruncatedStreamError

pytestmark = pytest.mark.slow  # two examples run as programs

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def load(name: str) -> dict[str, Any]:
    """The example's namespace, freshly run (not as __main__)."""
    return runpy.run_path(str(EXAMPLES / f"{name}.py"), run_name=f"example_{name}")


def chunked(stream: bytes, size: int) -> list[bytes]:
    return [stream[i : i + size] for i in range(0, len(stream), size)]


IMAGE = bytes(range(256)) * 40  # 10 KiB that is not text
ENCODED = base64.b64encode(IMAGE)  # 13656 characters


# --------------------------------------------------------------------------- image_pieces


@pytest.mark.parametrize("chunk_size", [1, 7, 1000, len(ENCODED) * 2])
def test_a_huge_event_is_saved_in_pieces_whatever_the_chunking(
    tmp_path: Path, chunk_size: int, capsys: pytest.CaptureFixture[str]
) -> None:
    example = load("image_pieces")
    stream = b"event: image\nid: img-1\ndata: " + ENCODED + b"\n\ndata: small\n\n"
    saved = example["save_pieced_events"](chunked(stream, chunk_size), tmp_path, piece_size=100)
    assert saved == [("image", "img-1", tmp_path / "event-1.bin")]
    assert (tmp_path / "event-1.bin").read_bytes() == IMAGE
    assert capsys.readouterr().out == "a small event 'message': 5 characters\n"


def test_multi_line_base64_is_joined_before_decoding(tmp_path: Path) -> None:
    example = load("image_pieces")
    lines = [ENCODED[i : i + 76] for i in range(0, len(ENCODED), 76)]  # MIME's line length
    stream = b"".join(b"data: " + line + b"\n" for line in lines) + b"\n"
    saved = example["save_pieced_events"](chunked(stream, 333), tmp_path, piece_size=64)
    assert [path for _, _, path in saved] == [tmp_path / "event-1.bin"]
    assert saved[0][:2] == ("message", "")
    assert (tmp_path / "event-1.bin").read_bytes() == IMAGE


def test_two_huge_events_get_two_files(tmp_path: Path) -> None:
    example = load("image_pieces")
    other = base64.b64encode(b"\x89PNG" * 500)
    stream = b"data: " + ENCODED + b"\nid: a\n\ndata: " + other + b"\n\n"
    saved = example["save_pieced_events"]([stream], tmp_path, piece_size=1000)
    assert saved == [
        ("message", "a", tmp_path / "event-1.bin"),
        ("message", "a", tmp_path / "event-2.bin"),
    ]
    assert (tmp_path / "event-2.bin").read_bytes() == b"\x89PNG" * 500


def test_a_cut_stream_leaves_no_partial_file(tmp_path: Path) -> None:
    example = load("image_pieces")
    stream = b"data: " + ENCODED[:5000]  # the stream ends inside the event
    with pytest.raises(TruncatedStreamError):
        example["save_pieced_events"](chunked(stream, 512), tmp_path, piece_size=100)
    assert list(tmp_path.iterdir()) == []


def test_the_image_script(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    example = load("image_pieces")
    capture = tmp_path / "capture.sse"
    capture.write_bytes(b"id: 9\ndata: " + ENCODED + b"\n\n")
    out = tmp_path / "out"
    assert example["main"]([str(capture), str(out), "--piece-size", "4096"]) == 0
    assert (out / "event-1.bin").read_bytes() == IMAGE
    path = out / "event-1.bin"
    assert capsys.readouterr().out == f"{path}: {len(IMAGE)} bytes (event 'message', id '9')\n"
    capture.write_bytes(b"data: " + b"@" * 9000 + b"\n\n")  # not base64
    assert example["main"]([str(capture), str(out), "--piece-size", "4096"]) == 1
    assert capsys.readouterr().err.startswith("error: ")


# --------------------------------------------------------------------------- skip_oversize

HUGE_BLOCK = b"event: huge\nid: 2\ndata: " + b"x" * 1000 + b"\n"  # before its blank line
SKIPPING = b"id: 1\ndata: a\n\n" + HUGE_BLOCK + b"\n" + b"data: b\n\n"


@pytest.mark.parametrize("chunk_size", [1, 5, 64, len(SKIPPING)])
def test_an_oversized_event_is_logged_and_the_stream_goes_on(chunk_size: int) -> None:
    example = load("skip_oversize")
    conn = example["skipping"](100)
    logged: list[str] = []
    events = list(example["events_within"](chunked(SKIPPING, chunk_size), conn, log=logged.append))
    assert events == [Event(data="a", id="1"), Event(data="b", id="2")]
    # The block starts after "id: 1\n" (6 bytes), "data: a\n" (8) and a blank line (1).
    assert logged == [
        f"skipped a 'huge' event of {len(HUGE_BLOCK)} bytes at byte 15 (id '2'): "
        "over the size limit"
    ]
    assert conn.last_event_id == "2"


def test_the_skipping_script(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    example = load("skip_oversize")
    capture = tmp_path / "capture.sse"
    capture.write_bytes(SKIPPING)
    assert example["main"]([str(capture), "--max-event-size", "100"]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines() == [
        "event 'message' id='1': 1 characters",
        "event 'message' id='2': 1 characters",
        "reconnect with Last-Event-ID: '2'",
    ]
    assert captured.err.startswith("skipped a 'huge' event of 1025 bytes at byte 15")
    capture.write_bytes(HUGE_BLOCK)  # cut inside the skipped block
    assert example["main"]([str(capture), "--max-event-size", "100"]) == 1
    assert capsys.readouterr().err.startswith("error: ")
