"""The compiled core (sse_sansio/_receive/_core.c) against the pure one, and what only it does.

The pure core, _connection.py, is the reference: for random streams, every chunking,
both decoding modes, random size limits, keep_raw on and off, the compiled core must
give the same items (values, spans, raw bytes), the same error (type, message, offset),
the same last_event_id, retry and take_raw() after every chunk.

Both cores follow the same three rules at the edges: the BOM look-ahead ends at the
first byte that rules a BOM out, spans obey the span rule from the very start of a
stream, and any exception fails the connection for good.  The differential tests
compare every chunking, the first bytes included; the rules are also tested against
the compiled core directly, with expected values worked out by hand.

The compiled-only tests need the extension: without it (no compiler where the package
was built) they skip, unless SSE_SANSIO_REQUIRE_EXTENSIONS=1 asks for it (CI), in
which case they fail.
"""

from __future__ import annotations

import gc
import os
import pickle
import subprocess
import sys
import tracemalloc
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import sse_sansio
from sse_sansio import (
    NEED_DATA,
    Comment,
    EndOfStream,
    Event,
    RemoteProtocolError,
)
from sse_sansio._receive import _implementation
from tests.helpers import parser_config
from tests.helpers.cores import (
    CORE,
    PURE,
    REQUIRED,
    compiled,
    needs_core,
    observe,
)
from tests.helpers.strategies import chunked, max_event_sizes, streams

# --------------------------------------------------------------------------- selection


def test_implementation_is_the_selected_core() -> None:
    assert sse_sansio.IMPLEMENTATION in ("compiled", "python")
    if sse_sansio.IMPLEMENTATION == "python":
        assert sse_sansio.Connection is PURE
    else:
        assert CORE is not None
        assert sse_sansio.Connection is CORE.Connection


def test_the_compiled_core_is_in_use_when_required() -> None:
    # CI sets SSE_SANSIO_REQUIRE_EXTENSIONS=1: a broken build cannot pass on the
    # fallback.  SSE_SANSIO_NO_EXTENSIONS=1 (the pure run) still selects the pure core.
    no_extensions = os.environ.get("SSE_SANSIO_NO_EXTENSIONS", "") not in ("", "0")
    if no_extensions:
        assert sse_sansio.IMPLEMENTATION == "python"
    elif REQUIRED:
        assert sse_sansio.IMPLEMENTATION == "compiled"
    else:
        assert ("python" if CORE is None else "compiled") == sse_sansio.IMPLEMENTATION


class _FakeCore(ModuleType):
    Connection = object


def _fake_import(name: str) -> ModuleType:
    assert name == "sse_sansio._receive._core"
    return _FakeCore(name)


def _no_extension(name: str) -> ModuleType:
    raise ImportError(f"No module named {name!r}")


@pytest.mark.parametrize(
    ("environ", "implementation", "import_module", "expected"),
    [
        ({}, "cpython", _fake_import, "compiled"),
        ({"SSE_SANSIO_NO_EXTENSIONS": "0"}, "cpython", _fake_import, "compiled"),
        ({"SSE_SANSIO_NO_EXTENSIONS": ""}, "cpython", _fake_import, "compiled"),
        ({"SSE_SANSIO_NO_EXTENSIONS": "1"}, "cpython", _fake_import, "python"),
        ({"SSE_SANSIO_NO_EXTENSIONS": "yes"}, "cpython", _fake_import, "python"),
        ({}, "pypy", _fake_import, "python"),
        ({}, "cpython", _no_extension, "python"),
    ],
)
def test_select(
    environ: dict[str, str], implementation: str, import_module: Any, expected: str
) -> None:
    cls, name = _implementation.select(environ, implementation, import_module)
    assert name == expected
    assert cls is (object if expected == "compiled" else PURE)


@pytest.mark.slow
def test_the_environment_variable_selects_the_pure_core() -> None:
    # The chosen class is named sse_sansio.Connection either way (sse_sansio/_public.py),
    # so it is told apart by identity.
    code = (
        "import sse_sansio, sse_sansio._receive._connection as pure;"
        " print(sse_sansio.IMPLEMENTATION, sse_sansio.Connection is pure.PyConnection)"
    )
    env = {**os.environ, "SSE_SANSIO_NO_EXTENSIONS": "1"}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["python", "True"]


# --------------------------------------------------------------------------- differential


def assert_same(chunks: list[bytes], **options: Any) -> None:
    chunks = [c for c in chunks if c]
    assert observe(compiled, chunks, **options) == observe(PURE, chunks, **options), chunks


def _fit_piece_size(options: dict[str, Any]) -> dict[str, Any]:
    """piece_size may not exceed max_event_size: cap it there."""
    size, limit = options.get("piece_size"), options["max_event_size"]
    if size is not None and limit is not None and size > limit:
        options["piece_size"] = limit
    return options


# The opt-in modes too: the compiled core runs them itself (the "opt-in modes" of
# _core.c), against the pure core's (_interpret.py with _modes.py).
OPTIONS = st.fixed_dictionaries(
    {
        "errors": st.sampled_from(["strict", "replace"]),
        "max_event_size": max_event_sizes,
        "keep_raw": st.booleans(),
        "last_event_id": st.sampled_from(["", "7", "é"]),
    },
    optional={
        "on_oversize": st.sampled_from(["error", "skip"]),
        "piece_size": st.one_of(st.none(), st.integers(1, 12), st.integers(1, 5000)),
        "diagnostics": st.booleans(),
        "updates": st.booleans(),
    },
).map(_fit_piece_size)


@needs_core
@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data(), stream=streams(), options=OPTIONS)
@example(data=None, stream=b"\xef\xbb\xbfdata: a\r\n\r\n", options={})
def test_cores_agree_on_random_chunkings(
    data: st.DataObject | None, stream: bytes, options: dict[str, Any]
) -> None:
    chunks = [stream] if data is None else data.draw(chunked(stream))
    assert_same(chunks, **options)


@needs_core
@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(stream=streams(allow_long=False), options=OPTIONS)
def test_cores_agree_on_every_split(stream: bytes, options: dict[str, Any]) -> None:
    assert_same([stream], **options)
    assert_same([stream[i : i + 1] for i in range(len(stream))], **options)
    for cut in range(len(stream) + 1):
        assert_same([stream[:cut], stream[cut:]], **options)


CORPUS = [
    b"data: a\n\n" * 300,
    b"event: delta\ndata: \xe4\xb8\xad\n\n" * 50,
    b": ping\r\n\r\n" * 40 + b"data: x",
    b"id: 1\nretry: 10\ndata: x\ndata: y\n\nid: \x00\nretry: 1a\n\n",
    b"data: " + b"x" * 70000 + b"\r\n\r\ndata: " + b"\xff" * 3 + b"\n\n",
    b"retry: " + b"9" * 5000 + b"\ndata: big retry\n\n",
    b"data: \xf0\x9f\x98\n\n",
    b"data: ok\n\n\xed\xa0\x80\n",
    b"\xef\xbb",
    b"\xef\xbb\xbf",
    b"data: cut \xe4\xb8",
]


@needs_core
@pytest.mark.parametrize("stream", CORPUS)
@pytest.mark.parametrize("errors", ["strict", "replace"])
@pytest.mark.parametrize("limit", [None, 5, 64, 80000])
@pytest.mark.parametrize("keep_raw", [False, True])
def test_cores_agree_on_the_corpus(
    stream: bytes, errors: str, limit: int | None, keep_raw: bool
) -> None:
    options = {"errors": errors, "max_event_size": limit, "keep_raw": keep_raw}
    cuts = [0, 1, 2, 3, 4, 7, len(stream) // 2, len(stream) - 1, len(stream)]
    for cut in cuts:
        assert_same([stream[:cut], stream[cut:]], **options)
    step = max(1, len(stream) // 500)
    assert_same([stream[i : i + step] for i in range(0, len(stream), step)], **options)


MODES = [
    {"on_oversize": "skip"},
    {"piece_size": 7},
    {"diagnostics": True},
    {"on_oversize": "skip", "piece_size": 3, "diagnostics": True},
    {"updates": True, "diagnostics": True, "on_oversize": "skip"},
]


@needs_core
@pytest.mark.parametrize("stream", CORPUS)
@pytest.mark.parametrize("errors", ["strict", "replace"])
@pytest.mark.parametrize("limit", [None, 5, 64, 80000])
@pytest.mark.parametrize("mode", MODES)
def test_cores_agree_on_the_corpus_in_the_opt_in_modes(
    stream: bytes, errors: str, limit: int | None, mode: dict[str, Any]
) -> None:
    for keep_raw in (False, True):
        options = _fit_piece_size(
            {"errors": errors, "max_event_size": limit, "keep_raw": keep_raw, **mode}
        )
        for cut in (0, 3, len(stream) // 2, len(stream) - 1):
            assert_same([stream[:cut], stream[cut:]], **options)
        step = max(1, len(stream) // 200)
        assert_same([stream[i : i + step] for i in range(0, len(stream), step)], **options)


@needs_core
@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), stream=streams(), options=OPTIONS, window=st.integers(1, 9))
def test_cores_agree_in_the_opt_in_modes_at_tiny_windows(
    data: st.DataObject, stream: bytes, options: dict[str, Any], window: int
) -> None:
    # The opt-in modes walk a line a window (PyConnection._tuning.window) at a time:
    # pieces, dropped lines and the limit happen at window edges, which the compiled core
    # reads when a connection is made.
    chunks = data.draw(chunked(stream))
    with parser_config(window=window):
        assert_same(chunks, **{**options, "on_oversize": "skip"})
        pieces = _fit_piece_size({**options, "piece_size": options.get("piece_size") or 2})
        assert_same(chunks, **pieces)
        assert_same(chunks, **{**options, "diagnostics": True})


@pytest.mark.slow  # an exhaustive search: every split of big inputs
@needs_core
def test_utf8_errors_match_cpython_for_every_short_sequence() -> None:
    # Every sequence of up to 3 bytes after a data prefix, plus 4-byte lead bytes with
    # their continuations: the compiled check must agree with CPython's decoder on
    # where the first bad sequence starts and why (the message carries the reason).
    leads = [*range(0x80, 0x100)]
    tails = [0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xFF]
    for a in leads:
        for b in tails:
            for c in [*tails, None]:
                raw = bytes([a, b] if c is None else [a, b, c])
                for tail in (b"", b"\x80", b"\xbf\xbf"):
                    stream = b"data: " + raw + tail + b"\n\n"
                    assert_same([stream])


# --------------------------------------------------------------------------- new rules


def _items(conn: Any) -> list[Any]:
    out = []
    while (item := conn.next_event()) is not NEED_DATA:
        out.append(item)
        if isinstance(item, EndOfStream):
            break
    return out


@needs_core
def test_bom_look_ahead_ends_at_the_first_byte_that_rules_it_out() -> None:
    conn = compiled()
    conn.receive_data(b":\n")
    [comment] = _items(conn)
    assert comment == Comment(text="")
    assert comment.span == (0, 2)


@needs_core
def test_bom_over_three_chunks_then_a_comment() -> None:
    conn = compiled(keep_raw=True)
    for byte in (b"\xef", b"\xbb"):
        conn.receive_data(byte)
        assert conn.next_event() is NEED_DATA
        assert conn.take_raw() == b""
    conn.receive_data(b"\xbf")
    assert conn.next_event() is NEED_DATA
    assert conn.take_raw() == b"\xef\xbb\xbf"  # the BOM alone is safe to forward
    conn.receive_data(b": hi\n")
    [comment] = _items(conn)
    assert (comment, comment.span, comment.raw) == (Comment(text="hi"), (3, 8), b": hi\n")


@needs_core
def test_a_bom_prefix_then_other_bytes_starts_the_first_line() -> None:
    conn = compiled(errors="replace")
    conn.receive_data(b"\xef\xbb")
    assert conn.next_event() is NEED_DATA
    conn.receive_data(b"x\n")
    # No BOM: the two bytes start a line "\xef\xbbx", an unknown field (no colon),
    # which starts the block: its event spans all 10 bytes.
    assert conn.next_event() is NEED_DATA
    conn.receive_data(b"data\n\n")
    [event] = _items(conn)
    assert (event, event.span) == (Event(data=""), (0, 10))
    strict = compiled()
    strict.receive_data(b"\xef")
    assert strict.next_event() is NEED_DATA
    strict.receive_data(b":\n")
    with pytest.raises(RemoteProtocolError) as info:
        strict.next_event()
    assert (str(info.value), info.value.offset) == (
        "invalid UTF-8 (invalid continuation byte) at byte offset 0",
        0,
    )


@needs_core
@pytest.mark.parametrize("head", [b"\xef", b"\xef\xbb"])
def test_a_stream_ending_inside_a_bom_is_a_cut_line(head: bytes) -> None:
    conn = compiled(errors="replace", max_event_size=1)
    conn.receive_data(head)
    conn.receive_data(b"")
    assert _items(conn) == [EndOfStream(partial_line=len(head))]
    strict = compiled(max_event_size=1)
    strict.receive_data(head)
    strict.receive_data(b"")
    with pytest.raises(RemoteProtocolError, match=r"end of stream \(unexpected end of data\)"):
        strict.next_event()


@needs_core
def test_the_span_rule_at_the_start_of_a_stream() -> None:
    # The CR ends the first chunk: the comment ends after it, the LF belongs to no item
    # and keep_raw's take_raw() hands it out on its own.
    conn = compiled(keep_raw=True)
    conn.receive_data(b":\r")
    [comment] = _items(conn)
    assert (comment.span, comment.raw) == ((0, 2), b":\r")
    conn.receive_data(b"\n")
    assert conn.next_event() is NEED_DATA
    assert conn.take_raw() == b"\n"
    conn.receive_data(b"data: x\r")
    conn.receive_data(b"\n\r")
    [event] = _items(conn)
    assert (event.span, event.raw) == ((3, 13), b"data: x\r\n\r")


@needs_core
def test_a_split_crlf_after_a_blank_line_moves_the_block_start() -> None:
    # The LF after a blank line's CR starts no block: the limit counts from after it,
    # so the next block (from offset 10 up to its blank line at 19) fits in 9 bytes.
    stream = [b"data: a\n\r", b"\ndata: 12\n\n"]
    conn = compiled(max_event_size=9)
    for chunk in stream:
        conn.receive_data(chunk)
    assert [(e, e.span) for e in _items(conn)] == [
        (Event(data="a"), (0, 9)),
        (Event(data="12"), (10, 20)),
    ]


def _run_isolated(code: str) -> str:
    """Run code in a fresh interpreter (memory hooks must not touch this process)."""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    return out.stdout


@pytest.mark.slow
@needs_core
def test_any_exception_fails_the_connection_for_good() -> None:
    # A MemoryError (the only exception the compiled parser itself can meet) is made to
    # happen with CPython's allocation hooks; every later call then refuses to go on.
    code = r"""
import _testcapi
from sse_sansio._receive._core import Connection
from sse_sansio import LocalProtocolError
conn = Connection()
conn.receive_data(b"data: " + b"x" * 5000 + b"\n\n")
nxt = conn.next_event
_testcapi.set_nomemory(0)
try:
    conn.next_event()
except MemoryError:
    _testcapi.remove_mem_hooks()
    first = "MemoryError"
else:
    _testcapi.remove_mem_hooks()
    first = "nothing"
print(first)
for call in (nxt, lambda: conn.receive_data(b"data: y\n\n"), conn.next_event):
    try:
        call()
    except LocalProtocolError as exc:
        print(str(exc), "|", type(exc.__cause__).__name__)
"""
    lines = _run_isolated(code).splitlines()
    assert lines == [
        "MemoryError",
        *["the connection failed earlier: MemoryError:  | MemoryError"] * 3,
    ]


# --------------------------------------------------------------------------- the API


@needs_core
def test_the_compiled_class_carries_the_pure_docstrings() -> None:
    assert CORE is not None
    for name in ("next_event", "receive_data", "take_raw", "last_event_id", "retry"):
        ours = getattr(CORE.Connection, name).__doc__
        assert ours == getattr(PURE, name).__doc__, name
    assert CORE.Connection.__doc__ == PURE.__doc__


@needs_core
def test_receive_data_by_keyword_and_bad_calls() -> None:
    conn = compiled()
    conn.receive_data(data=b"data: k\n\n")
    assert _items(conn) == [Event(data="k")]
    for args, kwargs in [((), {}), ((b"a", b"b"), {}), ((), {"chunk": b"a"})]:
        with pytest.raises(TypeError):
            conn.receive_data(*args, **kwargs)
    with pytest.raises(TypeError):
        compiled(nonsense=1)
    with pytest.raises(TypeError):
        CORE.Connection("strict")  # type: ignore[union-attr]


@needs_core
def test_init_again_starts_afresh() -> None:
    conn = compiled()
    conn.receive_data(b"id: 1\ndata: a\n\ndata: b")
    assert _items(conn) == [Event(data="a", id="1")]
    conn.__init__(last_event_id="9", errors="replace")
    conn.receive_data(b"data: \xff\n\n")
    assert _items(conn) == [Event(data="\ufffd", id="9")]


@needs_core
def test_a_subclass_without_init_is_a_default_connection() -> None:
    assert CORE is not None
    base: type[Any] = CORE.Connection

    class Quiet(base):  # type: ignore[misc]
        def __init__(self) -> None:
            pass

    conn = Quiet()
    conn.receive_data(b"data: " + b"x" * 20 + b"\n\n")
    assert _items(conn) == [Event(data="x" * 20)]
    assert conn.last_event_id == ""


@needs_core
def test_items_are_the_public_classes() -> None:
    conn = compiled(keep_raw=True)
    conn.receive_data(b"event: t\nid: 3\nretry: 7\ndata: a\n\n: c\n")
    conn.receive_data(b"")
    event, comment, end = _items(conn)
    for item, made in [
        (event, Event(type="t", data="a", id="3", retry=7)),
        (comment, Comment(text="c")),
        (end, EndOfStream()),
    ]:
        assert type(item) is type(made)
        assert item == made
        assert hash(item) == hash(made)
        assert repr(item) == repr(made)
        again = pickle.loads(pickle.dumps(item))
        assert again == item
        assert tuple(again) == tuple(item)  # metadata too


# --------------------------------------------------------------------------- memory


def _block(n: int) -> bytes:
    return b"id: %d\nretry: 5\nevent: t\ndata: a\ndata: \xc3\xa9\n\n: c\n" % n


@needs_core
@pytest.mark.parametrize("keep_raw", [False, True])
def test_a_million_items_leave_memory_flat(keep_raw: bool) -> None:
    # Three items a block; blocks fed 1000 at a time.  A leak of one object per item
    # would add a million allocated blocks.
    conn = compiled(keep_raw=keep_raw)
    chunk = b"".join(_block(n) for n in range(1000))

    def run(chunks: int) -> None:
        for _ in range(chunks):
            conn.receive_data(chunk)
            while conn.next_event() is not NEED_DATA:
                pass
            if keep_raw:
                conn.take_raw()

    run(10)
    gc.collect()
    before = sys.getallocatedblocks()
    run(334)  # 1002000 items
    gc.collect()
    assert sys.getallocatedblocks() - before < 1000


@needs_core
def test_a_failed_connection_leaks_nothing() -> None:
    conn = compiled(max_event_size=4)
    conn.receive_data(b"data: too big\n\n")
    for _ in range(10):
        with pytest.raises(RemoteProtocolError):
            conn.next_event()
    gc.collect()
    before = sys.getallocatedblocks()
    for _ in range(100000):
        with pytest.raises(RemoteProtocolError):
            conn.next_event()
    gc.collect()
    assert sys.getallocatedblocks() - before < 1000


def _held_memory(holder: list[Any]) -> int:
    """Bytes freed when the one connection in ``holder`` goes (traced by tracemalloc)."""
    gc.collect()
    held = tracemalloc.get_traced_memory()[0]
    holder.pop()
    gc.collect()
    return held - tracemalloc.get_traced_memory()[0]


@needs_core
@pytest.mark.parametrize("keep_raw", [False, True])
def test_an_idle_connection_holds_at_most_1_kib(keep_raw: bool) -> None:
    tracemalloc.start()
    try:
        holder = [compiled(keep_raw=keep_raw)]
        conn = holder[0]
        big = b"data: " + b"x" * 300000 + b"\n" + b"data: y\n" * 5000 + b"\n"
        comment = b": " + b"c" * 100000 + b"\n"
        typed = b"event: " + b"t" * 5000 + b"\nid: 12\ndata: z\n\n"
        stream = (big + comment + typed) * 2
        for start in range(0, len(stream), 1000):  # lines cut by chunk ends
            conn.receive_data(stream[start : start + 1000])
            while (item := conn.next_event()) is not NEED_DATA:
                del item
            if keep_raw:
                conn.take_raw()
        assert conn.last_event_id == "12"
        del conn
        held = _held_memory(holder)
    finally:
        tracemalloc.stop()
    assert held <= 1024, held


@pytest.mark.slow
def test_version_says_which_core_runs() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "sse_sansio", "--version"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout == f"sse-sansio {sse_sansio.__version__} ({sse_sansio.IMPLEMENTATION} core)\n"
