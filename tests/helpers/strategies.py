"""Hypothesis strategies for SSE-shaped byte streams and the ways to chunk them.

The streams are built from lines that look like event-stream lines, and from their near
misses, because uniformly random bytes almost never form a field name: real fields and
misspelt ones ("dat", "Data", "data "), values with colons, spaces, NUL and non-ASCII
text, ``retry`` with digits and non-digits, comments, blank lines, every line end, BOMs
at the start and elsewhere, invalid and truncated UTF-8, and long lines (past the
parser's 64 KiB piece size).
"""

from __future__ import annotations

import itertools

from hypothesis import strategies as st

LINE_ENDS = (b"\n", b"\r", b"\r\n")

FIELD_NAMES = (
    b"data",
    b"event",
    b"id",
    b"retry",
    # near misses, which the spec ignores as unknown fields
    b"dat",
    b"Data",
    b"DATA",
    b"data ",
    b" data",
    b"event ",
    b"Id",
    b"retr",
    b"retryy",
    b"\xef\xbb\xbfdata",  # a BOM that is not at the stream's start is a character
    b"d\xc3\xa1ta",
    b"",
)

SEPARATORS = (b":", b": ", b":  ", b"", b"::", b": :")

# Invalid or unusual UTF-8: lone continuation, overlong, surrogate, beyond U+10FFFF,
# bytes never valid, truncated sequences, a truncated BOM.
BAD_UTF8 = (
    b"\x80",
    b"\xbf",
    b"\xc0\x80",
    b"\xc1\xbf",
    b"\xe0\x80\x80",
    b"\xed\xa0\x80",
    b"\xf4\x90\x80\x80",
    b"\xf5\x80\x80\x80",
    b"\xff",
    b"\xfe",
    b"\xc3",
    b"\xe2\x82",
    b"\xf0\x9f\x98",
    b"\xef\xbb",
)

GOOD_UNUSUAL = (
    b"\x00",
    b"\xef\xbb\xbf",  # U+FEFF
    b"\xc2\x85",  # NEL: not a line end
    b"\xe2\x80\xa8",  # U+2028: not a line end
    b"\x0b",
    b"\x0c",
    b"\xc3\xa9",
    b"\xe4\xb8\xad",
    b"\xf0\x9f\x98\x80",
    b"\xef\xbf\xbd",  # a real U+FFFD
    b"\t",
    b" ",
    b":",
)

_value_piece = st.one_of(
    st.text(alphabet="ab :0123", max_size=6).map(str.encode),
    st.sampled_from(GOOD_UNUSUAL),
    st.sampled_from(BAD_UTF8),
    st.text(max_size=4).map(lambda s: s.encode("utf-8", "surrogatepass")),
)

values = st.lists(_value_piece, max_size=5).map(b"".join)

retry_values = st.one_of(
    st.integers(0, 10**12).map(lambda n: str(n).encode()),
    st.sampled_from(
        (
            b"",
            b"0",
            b"007",
            b"1.5",
            b"-1",
            b"+1",
            b" 12",
            b"12 ",
            b"1e3",
            b"\xef\xbc\x91\xef\xbc\x92",  # fullwidth digits
            b"\xd9\xa1\xd9\xa2",  # Arabic-Indic digits
            b"\xc2\xb2",  # superscript two
            b"9" * 4300,
            b"9" * 4301,
            b"0" * 4301,
        )
    ),
)


@st.composite
def field_lines(draw: st.DrawFn) -> bytes:
    """A field line without its line end: name, separator, value."""
    name = draw(st.sampled_from(FIELD_NAMES))
    sep = draw(st.sampled_from(SEPARATORS))
    value = draw(retry_values) if name == b"retry" and draw(st.booleans()) else draw(values)
    return name + sep + value


comment_lines = values.map(lambda v: b":" + v)

# A long line: past the parser's piece size (64 KiB) now and then.
long_lines = st.tuples(
    st.sampled_from((b"data: ", b": ", b"x", b"event:")),
    st.sampled_from((b"x", b"ab", b"\xc3\xa9", b"\r", b"\n")),
    st.integers(1, 70_000),
).map(lambda t: t[0] + t[1] * t[2])

lines = st.one_of(
    field_lines(),
    field_lines(),
    field_lines(),
    comment_lines,
    st.just(b""),
    st.just(b""),
)


@st.composite
def streams(draw: st.DrawFn, *, allow_long: bool = True) -> bytes:
    """An SSE-shaped byte stream: lines, line ends, stray bytes, maybe a BOM.

    With ``allow_long``, about one stream in twelve also holds a line past the parser's
    64 KiB piece size, or thousands of short lines (which cross piece boundaries).
    """
    out = [draw(st.sampled_from((b"", b"", b"\xef\xbb\xbf", b"\xef\xbb", b"\xef")))]
    n_lines = draw(st.integers(0, 12))
    for _ in range(n_lines):
        out.append(draw(lines))
        # Mostly a line end, sometimes none (the lines run together), sometimes junk.
        ending = draw(st.integers(0, 9))
        if ending <= 6:
            out.append(draw(st.sampled_from(LINE_ENDS)))
        elif ending == 7:
            out.append(draw(st.sampled_from(BAD_UTF8 + GOOD_UNUSUAL)))
    if allow_long:
        big = draw(st.integers(0, 23))
        if big <= 1:
            out.insert(draw(st.integers(1, len(out))), draw(long_lines))
        elif big == 2:
            bulk = draw(st.sampled_from((b"data: x\n", b"\n", b": p\r\n", b"data:\r\r")))
            out.insert(draw(st.integers(1, len(out))), bulk * 9000)
    if draw(st.booleans()):
        out.append(draw(st.sampled_from(LINE_ENDS)))
    return b"".join(out)


@st.composite
def chunked(draw: st.DrawFn, data: bytes) -> list[bytes]:
    """A way to cut ``data`` into non-empty chunks: whole, bytewise, fixed or random."""
    n = len(data)
    if n == 0:
        return []
    mode = draw(st.sampled_from(("whole", "bytewise", "fixed", "cuts", "cuts")))
    if mode == "whole":
        return [data]
    if mode == "bytewise" and n <= 3000:
        return [data[i : i + 1] for i in range(n)]
    if mode == "fixed" or mode == "bytewise":
        size = draw(st.integers(1, max(1, min(n, 64))))
        return [data[i : i + size] for i in range(0, n, size)]
    cuts = sorted(set(draw(st.lists(st.integers(1, max(1, n - 1)), max_size=40))))
    bounds = [0, *(c for c in cuts if 0 < c < n), n]
    return [data[a:b] for a, b in itertools.pairwise(bounds) if a < b]


max_event_sizes = st.one_of(st.none(), st.integers(1, 80), st.integers(1, 200_000))
