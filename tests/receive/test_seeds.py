"""The scenarios of the two seed articles, one named test each.

``sse_lab`` is the 16-group offline lab of a data-only parser ("Python SSE 增量解析的 16
组验证"); ``replay_kit`` is the replay kit with ``demo.sse`` and 12 unit tests ("先把
SSE 事件拼完整").  Adapted to this library: items are Event/Comment/EndOfStream objects
(comments are returned, not dropped), errors are RemoteProtocolError with a byte offset,
and the seeds' limits in characters become ``max_event_size`` in bytes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from sse_sansio import (
    NEED_DATA,
    Comment,
    Connection,
    EndOfStream,
    Event,
    ReceivedItem,
    RemoteProtocolError,
)
from tests.helpers import chunkings, feed, remote_error

pytestmark = pytest.mark.usefixtures("conn_cls")  # both cores: tests/conftest.py

ROOT = Path(__file__).resolve().parents[2]
END = EndOfStream()


def events(chunks: Iterable[bytes], **options: Any) -> list[Event]:
    """Only the events (what the seeds' parsers return)."""
    items, _ = feed(chunks, **options)
    return [item for item in items if isinstance(item, Event)]


# ---------------------------------------------------------------- sse_lab.py, 16 groups

# BOM, a comment, a CRLF event holding JSON with Chinese text, then an LF event.
LAB_WIRE = '\ufeff: keepalive\r\ndata: {"text":"你好"}\r\n\r\ndata: [DONE]\n\n'.encode()
LAB_ITEMS: list[ReceivedItem] = [
    Comment(text="keepalive"),
    Event(data='{"text":"你好"}'),
    Event(data="[DONE]"),
    END,
]


def test_sse_lab_wire_is_57_bytes() -> None:
    # The article splits it at every point: 58 ways.
    assert len(LAB_WIRE) == 57


def test_sse_lab_all_two_part_splits() -> None:
    for split in range(len(LAB_WIRE) + 1):
        items, _ = feed([LAB_WIRE[:split], LAB_WIRE[split:]])
        assert items == LAB_ITEMS, split


def test_sse_lab_one_byte_chunks() -> None:
    items, _ = feed([bytes([byte]) for byte in LAB_WIRE])
    assert items == LAB_ITEMS


def test_sse_lab_single_chunk() -> None:
    items, _ = feed([LAB_WIRE])
    assert items == LAB_ITEMS


def test_sse_lab_multiline() -> None:
    assert events([b"data: a\ndata: b\n\n"]) == [Event(data="a\nb")]


def test_sse_lab_bare_cr() -> None:
    assert events([b"data: a\r\r"]) == [Event(data="a")]


def test_sse_lab_empty_data() -> None:
    assert events([b"data\n\n"]) == [Event(data="")]


def test_sse_lab_one_space_only() -> None:
    assert events([b"data:  x\n\n"]) == [Event(data=" x")]


def test_sse_lab_case_sensitive() -> None:
    assert events([b"Data: x\n\n"]) == []


def test_sse_lab_unfinished_event() -> None:
    items, _ = feed([b"data: x\n"])
    assert items == [EndOfStream(partial_event=True)]


def test_sse_lab_unfinished_line() -> None:
    items, _ = feed([b"data: x"])
    assert items == [EndOfStream(partial_line=7)]


def test_sse_lab_empty_blocks_comments() -> None:
    items, _ = feed([b": ping\n\n\n"])
    assert items == [Comment(text="ping"), END]


def test_sse_lab_json_after_event() -> None:
    (first, _) = events([LAB_WIRE])
    assert json.loads(first.data) == {"text": "你好"}


def test_sse_lab_invalid_utf8() -> None:
    assert remote_error([b"data: \xff\n\n"]) == (6, [])


def test_sse_lab_incomplete_utf8() -> None:
    # Only an error once the stream has ended: the rest could still have arrived.
    conn = Connection()
    conn.receive_data(b"data: \xe4")
    assert conn.next_event() is NEED_DATA
    assert remote_error([b"data: \xe4"]) == (6, [])


def test_sse_lab_line_limit() -> None:
    # max_chars=8 on a 13-character line; here 8 bytes, refused at the 9th byte.
    assert remote_error([b"data: toolong\n\n"], max_event_size=8) == (8, [])
    # A line too long is refused before its end arrives.
    conn = Connection(max_event_size=8)
    conn.receive_data(b"data: too")
    with pytest.raises(RemoteProtocolError):
        conn.next_event()


def test_sse_lab_event_limit() -> None:
    # Every line fits the limit, the event does not: 5 lines of 8 bytes plus the blank.
    data = b"data: a\ndata: b\ndata: c\ndata: d\ndata: e\n\n"
    assert len(data) == 41
    assert remote_error([data], max_event_size=20) == (20, [])
    assert events([data], max_event_size=41) == [Event(data="a\nb\nc\nd\ne")]


# ---------------------------------------------------------------- the replay kit

DEMO = ROOT / "examples" / "demo.sse"
DEMO_EVENTS = [
    Event(
        type="response.output_text.delta",
        data='{"type":"response.output_text.delta","delta":"你好"}',
    ),
    Event(data="第一行\n第二行"),
]


def test_replay_kit_demo_every_split() -> None:
    data = DEMO.read_bytes()
    for label, chunks in chunkings(data):
        items, _ = feed(chunks)
        assert items == [*DEMO_EVENTS, END], label


def test_replay_kit_demo_one_byte_chunks_chinese() -> None:
    data = DEMO.read_bytes()
    assert events(data[i : i + 1] for i in range(len(data))) == DEMO_EVENTS


def test_replay_kit_demo_json_delta_only_for_its_event_type() -> None:
    # The article's snippet: parse JSON only for the event type agreed to carry it.
    data = DEMO.read_bytes()
    deltas = [
        json.loads(event.data)["delta"]
        for event in events(data[i : i + 1] for i in range(len(data)))
        if event.type == "response.output_text.delta"
    ]
    assert deltas == ["你好"]


def test_replay_kit_complete_event_need_not_be_json() -> None:
    # "即使 SSE 事件已经完整，对它调用 json.loads 仍会报错"
    second = events([DEMO.read_bytes()])[1]
    with pytest.raises(json.JSONDecodeError):
        json.loads(second.data)


@pytest.mark.parametrize("eol", [b"\n", b"\r", b"\r\n"], ids=["LF", "CR", "CRLF"])
def test_replay_kit_line_ends(eol: bytes) -> None:
    data = DEMO.read_bytes().replace(b"\n", eol)
    for label, chunks in chunkings(data):
        assert events(chunks) == DEMO_EVENTS, label


def test_replay_kit_several_data_lines() -> None:
    assert events([b"data: 1\ndata: 2\ndata: 3\n\n"]) == [Event(data="1\n2\n3")]


def test_replay_kit_empty_data_event_is_not_dropped() -> None:
    # "data:\n\n 得到一个空字符串事件 | 合法，不能因为内容为空就漏掉它"
    assert events([b"data:\n\n"]) == [Event(data="")]


def test_replay_kit_bom() -> None:
    data = b"\xef\xbb\xbf" + DEMO.read_bytes()
    for label, chunks in chunkings(data):
        assert events(chunks) == DEMO_EVENTS, label


def test_replay_kit_truncated_event_is_not_emitted() -> None:
    # "文件只有 data: hello\n，没有结束空行 | 不输出这条残留事件；EOF 不能帮它补齐"
    items, _ = feed([b"data: hello\n"])
    assert items == [EndOfStream(partial_event=True)]
    assert items[0].truncated  # type: ignore[union-attr]


def test_replay_kit_truncated_demo_keeps_the_complete_first_event() -> None:
    data = DEMO.read_bytes()[:-1]  # the blank line that ends the second event is gone
    items, _ = feed([data])
    assert items == [DEMO_EVENTS[0], EndOfStream(partial_event=True)]


def test_replay_kit_done_is_ordinary_data() -> None:
    # "读到 [DONE] | 本脚本当普通 data；通用 SSE 没有规定这个终止标记"
    assert events([b"data: [DONE]\n\ndata: after\n\n"]) == [
        Event(data="[DONE]"),
        Event(data="after"),
    ]


def test_replay_kit_invalid_utf8() -> None:
    # "UnicodeDecodeError | 原始 UTF-8 损坏或末尾字节残缺；合法中文仅仅跨块不会触发它"
    data = DEMO.read_bytes()
    broken = data.replace("你".encode(), b"\xe4\xbd\x28", 1)
    offset = data.index("你".encode())
    assert remote_error([broken]) == (offset, [])
    assert remote_error([broken[i : i + 1] for i in range(len(broken))]) == (offset, [])


def test_replay_kit_incomplete_utf8_at_end() -> None:
    data = DEMO.read_bytes() + b"data: \xe7\xac"
    assert remote_error([data]) == (len(data) - 2, DEMO_EVENTS)


def test_replay_kit_limits() -> None:
    # The demo's events are 96 and 33 bytes long; the limit leaves out the final LF.
    data = DEMO.read_bytes()
    assert events([data], max_event_size=95) == DEMO_EVENTS
    assert remote_error([data], max_event_size=94) == (94, [])
    assert remote_error([data], max_event_size=31) == (31, [])


@pytest.mark.slow
def test_replay_kit_command_line_chunk_size_1() -> None:
    # python -m sse_sansio examples/demo.sse --chunk-size 1
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["PYTHONIOENCODING"] = "utf-8"
    done = subprocess.run(
        [sys.executable, "-m", "sse_sansio", "examples/demo.sse", "--chunk-size", "1"],
        capture_output=True,
        cwd=ROOT,
        env=env,
        timeout=60,
        check=True,
    )
    objects = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert [obj["kind"] for obj in objects] == ["event", "event", "end"]
    first, second, end = objects
    assert first["type"] == "response.output_text.delta"
    assert json.loads(first["data"]) == {"type": "response.output_text.delta", "delta": "你好"}
    assert second["type"] == "message"
    assert second["data"] == "第一行\n第二行"
    assert end["truncated"] is False
