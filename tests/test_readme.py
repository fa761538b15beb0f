"""The README's code runs: its drain loop, fed a fake socket with awkward reads."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

README = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")


def _python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README, flags=re.DOTALL)


class FakeSocket:
    """recv() hands out the stream in the given pieces, then b""."""

    def __init__(self, pieces: list[bytes]) -> None:
        self.pieces = list(pieces)

    def recv(self, size: int) -> bytes:
        return self.pieces.pop(0) if self.pieces else b""


def _read_stream() -> Any:
    (block,) = [block for block in _python_blocks() if "def read_stream" in block]
    namespace: dict[str, Any] = {}
    exec(compile(block, "README.md", "exec"), namespace)
    return namespace["read_stream"]


def test_readme_drain_loop_survives_split_characters_and_events() -> None:
    stream = 'data: {"text":"你好"}\n\ndata: {"n":1}\n\ndata: [DONE]\n\n'.encode()
    cut = stream.index("你".encode()) + 1  # in the middle of a character
    read_stream = _read_stream()
    pieces = [stream[:cut], stream[cut:]]
    assert list(read_stream(FakeSocket(pieces))) == [{"text": "你好"}, {"n": 1}]


def test_readme_drain_loop_reports_a_cut_stream() -> None:
    read_stream = _read_stream()
    with pytest.raises(ConnectionError, match="cut off"):
        list(read_stream(FakeSocket([b'data: {"n":1}\n\ndata: {"n"'])))
