"""The command line on input that is not an event stream, and --llm's usage and answer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sse_sansio._cli._main import main
from tests.helpers import llm_streams as s

NGINX_502 = (
    b"<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
    b"<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n"
    b"</body>\r\n</html>\r\n"
)
JSON_ERROR = (
    b'{\n  "error": {\n    "message": "Incorrect API key provided",\n'
    b'    "type": "invalid_request_error"\n  }\n}\n'
)
GZIP = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\xcbH\xcd\xc9\xc9\x07\x00"


def run(
    tmp_path: Path, body: bytes, capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[int, str, str]:
    path = tmp_path / "body"
    path.write_bytes(body)
    code = main([str(path), *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (NGINX_502, "an HTML page titled '502 Bad Gateway'"),
        (JSON_ERROR, "a JSON error: 'Incorrect API key provided'"),
        (GZIP, "the body is gzip-compressed"),
        (b"\xef\xbb\xbf[1, 2]", "a JSON body"),
    ],
)
@pytest.mark.parametrize("chunk_size", ["1", "65536"])
def test_not_an_event_stream_exits_6(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], body: bytes, said: str, chunk_size: str
) -> None:
    code, out, err = run(tmp_path, body, capsys, "--diagnostics", "--chunk-size", chunk_size)
    assert (code, out) == (6, "")
    assert err.startswith(f"sse-sansio: error: not an event stream: {said}")
    assert len(err.splitlines()) == 1  # no line per line of the body


def test_with_llm_it_is_a_failed_outcome(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(tmp_path, JSON_ERROR, capsys, "--llm", "openai-chat")
    assert (code, err) == (5, "")
    (line,) = out.splitlines()
    record = json.loads(line)
    assert (record["kind"], record["outcome"], record["error_message"]) == (
        "outcome",
        "failed",
        "Incorrect API key provided",
    )
    assert record["error_type"] == "not-an-event-stream"
    assert "is not an event stream" in record["reason"]
    code, out, _ = run(tmp_path, NGINX_502, capsys, "--llm", "auto")
    assert code == 5
    assert "502 Bad Gateway" in json.loads(out)["error_message"]


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"data: x\n\n",
        b"\xef\xbb\xbfdata: x\n\n",
        b": " + b"c" * 600 + b"\n\ndata: x\n\n",
        b"HTTP/1.1 200 OK\r\n\r\ndata: x\n\n",  # still parsed: the event is in it
        b"data: x",
    ],
)
def test_event_streams_still_parse(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], body: bytes
) -> None:
    for chunk_size in ("1", "7", "65536"):
        code, out, _ = run(tmp_path, body, capsys, "--chunk-size", chunk_size)
        assert code == (3 if body == b"data: x" else 0)
        records = [json.loads(line) for line in out.splitlines()]
        assert records[-1]["kind"] == "end"
        assert [r["data"] for r in records if r["kind"] == "event"] == (
            [] if body in (b"", b"data: x") else ["x"]
        )


def test_llm_prints_usage_and_the_answer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(tmp_path, b"".join(s.OPENAI_CHAT), capsys, "--llm", "openai-chat")
    assert code == 0
    last = json.loads(out.splitlines()[-1])
    assert last["usage"] == {
        "input_tokens": 9,
        "output_tokens": 12,
        "cached_tokens": 4,
        "reasoning_tokens": 2,
        "provenance": "reported",
    }
    assert last["answer"] == {
        "complete": True,
        "text_chars": 5,
        "text_start": "Hello",
        "reasoning_chars": 0,
        "tool_calls": [],
    }
    call = s.data(
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {"index": 0, "id": "c1", "function": {"name": "f", "arguments": "{"}}
                        ]
                    },
                }
            ]
        }
    )
    code, out, _ = run(tmp_path, call, capsys, "--llm", "openai-chat")
    assert code == 3
    last = json.loads(out.splitlines()[-1])
    assert last["answer"]["tool_calls"] == [
        {"name": "f", "id": "c1", "complete": False, "arguments_parse": False}
    ]
    assert last["usage"]["provenance"] == "unavailable"


def test_deeply_nested_json_is_a_protocol_error_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = b"data: " + b"[" * 100_000 + b"\n\n"
    code, _, err = run(tmp_path, body, capsys, "--llm", "openai-chat")
    assert code == 1
    assert "nested too deeply" in err
