"""Every code snippet in docs/ runs, and the docs agree with the code they describe.

Python blocks (``.. code-block:: python`` in reStructuredText, ```` ```python ```` in
Markdown) are executed in order, one namespace per page, so a tutorial can build on its
earlier snippets; ``pycon`` blocks (``>>>`` sessions) are run as doctests in the same
namespace.  Shell, console and text blocks are skipped.  Anything else fails loudly: a
block in a language the extractor does not know, a bare ``::`` literal block (which
hides its language), or an include of a file that is neither an example program (whose
own tests cover it) nor Markdown.
"""

from __future__ import annotations

import ast
import http.server
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import sse_sansio
from tests.helpers.docs import (
    API,
    DOCS,
    ROOT,
    SnippetError,
    api_pages,
    api_reference,
    extract,
    run_page,
)

PAGES = sorted([*DOCS.glob("*.rst"), *DOCS.glob("*.md"), *API.glob("*.rst")])


def test_docs_pages_exist() -> None:
    names = {p.relative_to(DOCS).as_posix() for p in PAGES}
    for page in ("index.rst", "sans-io.rst", "basic-usage.rst", "api/index.rst", "examples.rst"):
        assert page in names


# redis-py's handshake and fakeredis compare and format bytes with str, which ``python
# -bb`` (as CI runs the suite) turns into an error inside those libraries, not ours.
_REDIS_BYTES_WARNINGS = pytest.mark.filterwarnings(r"ignore::BytesWarning:(redis|fakeredis)(\.|$)")
_PAGE_MARKS = {"resumption.rst": [_REDIS_BYTES_WARNINGS]}


@pytest.mark.parametrize(
    "page",
    [
        pytest.param(p, marks=_PAGE_MARKS.get(p.name, []), id=p.relative_to(DOCS).as_posix())
        for p in PAGES
    ],
)
def test_page_snippets_run(page: Path) -> None:
    run_page(page)


def test_extractor_finds_every_python_block() -> None:
    # Cross-check the extractor against a plain count of the markers it looks for.
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        markers = len(re.findall(r"^\s*\.\. code-block:: (?:python|pycon)\s*$", text, re.M))
        markers += len(re.findall(r"^```(?:python|pycon)\s*$", text, re.M))
        assert len(extract(page)) == markers, page.name
    total = sum(len(extract(page)) for page in PAGES)
    assert total >= 20


@pytest.mark.parametrize(
    ("suffix", "text", "message"),
    [
        (".rst", ".. code-block:: ruby\n\n   puts 1\n", "unknown language"),
        (".rst", ".. code-block::\n\n   x = 1\n", "without a language"),
        (".rst", "Like this::\n\n   x = 1\n", "bare '::'"),
        (".rst", ".. literalinclude:: ../sse_sansio/_cli/_main.py\n", "included file"),
        (".rst", ".. doctest::\n\n   >>> 1\n   1\n", "unsupported code directive"),
        (".md", "```js\nlet x = 1\n```\n", "unknown language"),
        (".md", "```\nx = 1\n```\n", "without a language"),
        (".md", "```python\nx = 1\n", "unclosed"),
        (".md", "```{eval-rst}\n.. code-block:: python\n```\n", "unsupported directive"),
    ],
)
def test_extractor_fails_loudly(suffix: str, text: str, message: str, tmp_path: Path) -> None:
    page = tmp_path / f"page{suffix}"
    page.write_text(text, encoding="utf-8")
    with pytest.raises(SnippetError, match=re.escape(message)):
        extract(page)


def test_extractor_reads_blocks_with_options(tmp_path: Path) -> None:
    page = tmp_path / "page.rst"
    page.write_text(
        "Text.\n\n.. code-block:: python\n   :linenos:\n\n   x = 1\n\n   y = x + 1\n\nAfter.\n",
        encoding="utf-8",
    )
    (snippet,) = extract(page)
    assert snippet.code == "x = 1\n\ny = x + 1\n"
    assert snippet.lineno == 6


def test_a_failing_doctest_fails(tmp_path: Path) -> None:
    page = tmp_path / "page.rst"
    page.write_text(".. code-block:: pycon\n\n   >>> 1 + 1\n   3\n", encoding="utf-8")
    with pytest.raises(AssertionError, match="Expected"):
        run_page(page)


def _readme_quick_start() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^```\n(.+?)\n```$", section, re.M | re.S)


def test_home_page_quick_start_matches_readme() -> None:
    commands = _readme_quick_start()
    assert len(commands) == 2
    index = (DOCS / "index.rst").read_text(encoding="utf-8")
    for command in commands:
        assert f".. code-block:: shell\n\n   {command}\n" in index


def test_api_reference_documents_every_public_name() -> None:
    api = api_reference()
    documented = set(
        re.findall(r"^\.\. (?:auto)?(?:class|function|exception|data)::\s+(\S+)", api, re.M)
    )
    assert documented >= set(sse_sansio.__all__), set(sse_sansio.__all__) - documented


def _documented_names(text: str) -> list[str]:
    """The full names the API page's object directives document: each directive's name
    in the module that ``module``, ``currentmodule`` and ``automodule`` made current."""
    current = ""
    names = []
    for line in text.splitlines():
        switch = re.match(r"^\.\. (?:module|currentmodule|automodule)::\s+(\S+)", line)
        if switch:
            current = switch[1]
            continue
        found = re.match(
            r"^\.\. (?:auto)?(?:class|function|exception|data|attribute)::\s+(\S+)", line
        )
        if found:
            name = found[1]
            names.append(name if name.startswith("sse_sansio") else f"{current}.{name}")
    return names


def test_api_reference_names_each_public_name_in_sse_sansio() -> None:
    # An automodule changes the current module: a name documented after it was once
    # filed as sse_sansio.testing.__version__.
    # Each page starts in no module: a page that forgot its currentmodule fails here.
    documented = set()
    for page in api_pages():
        documented |= set(_documented_names(page.read_text(encoding="utf-8")))
    for name in sse_sansio.__all__:
        assert f"sse_sansio.{name}" in documented, name
    assert "sse_sansio.__version__" in documented


def test_documented_names_follow_the_current_module() -> None:
    text = (
        ".. module:: sse_sansio\n.. data:: A\n.. automodule:: sse_sansio.testing\n"
        ".. data:: B\n.. currentmodule:: sse_sansio\n.. autoclass:: C\n"
    )
    assert _documented_names(text) == [
        "sse_sansio.A",
        "sse_sansio.testing.B",
        "sse_sansio.C",
    ]


def test_api_reference_documents_the_testing_helpers() -> None:
    import sse_sansio.testing

    api = api_reference()
    match = re.search(r"^\.\. automodule:: sse_sansio\.testing\n\s+:members: (.+)$", api, re.M)
    assert match is not None
    members = {name.strip() for name in match[1].split(",")}
    assert members == set(sse_sansio.testing.__all__)


_DOC_ROLE = re.compile(r":doc:`(?:[^`<]*<)?(?P<target>[^`>]+)>?`|\{doc\}`(?P<md>[^`]+)`")


def _doc_targets(text: str) -> list[str]:
    return [m["target"] or m["md"] for m in _DOC_ROLE.finditer(text)]


def test_api_pages_point_to_the_narrative_pages_by_absolute_names() -> None:
    # Inside docs/api/, :doc:`client` is docs/api/client.rst, not the client guide: a
    # narrative page is named from the root (:doc:`/client`), a sibling by its own name.
    siblings = {page.stem for page in api_pages()}
    for page in api_pages():
        for target in _doc_targets(page.read_text(encoding="utf-8")):
            assert target.startswith("/") or target in siblings, (page.name, target)


def test_docstrings_point_to_pages_by_absolute_names() -> None:
    # Docstrings are rendered on the pages of docs/api/, where a relative name would
    # point into docs/api/ (asgi.py said :doc:`serving`, meaning docs/serving.rst).
    package = ROOT / "sse_sansio"
    for module in package.rglob("*.py"):
        for target in _doc_targets(module.read_text(encoding="utf-8")):
            assert target.startswith("/"), (module.relative_to(ROOT).as_posix(), target)


def test_the_api_index_lists_every_page_of_the_reference() -> None:
    index = (API / "index.rst").read_text(encoding="utf-8")
    toctree = index.split(".. toctree::", 1)[1]
    options, _, entries = toctree.partition("\n\n")
    assert ":glob:" in options  # the pages added to docs/api/ are picked up unlisted
    listed = entries.split("\n\n", 1)[0].split()
    assert listed[-1] == "*"
    assert len(listed) == len(set(listed))
    assert {page.stem for page in api_pages()} - {"index"} - set(listed)  # the glob's share
    assert "api/index" in (DOCS / "index.rst").read_text(encoding="utf-8")


def test_examples_page_documents_every_example() -> None:
    page = (DOCS / "examples.rst").read_text(encoding="utf-8")
    listed = re.findall(r"^\.\. example:: (\S+)$", page, re.M)
    assert len(listed) == len(set(listed))
    on_disk = sorted(p.name for p in (ROOT / "examples").glob("*.py"))
    assert sorted(listed) == on_disk


class _EventStreamHandler(http.server.BaseHTTPRequestHandler):
    """Serves one short event stream with chunked transfer encoding."""

    protocol_version = "HTTP/1.1"
    # Pieces cut inside a character, inside a CRLF and inside an event.
    pieces = (b"id: 1\r\ndata: caf\xc3", b"\xa9\r", b"\n\r\n: ping\n", b"data: [DONE]\n\n")

    def do_GET(self) -> None:
        type(self).seen_last_event_id = self.headers.get("Last-Event-ID")
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()
        for piece in self.pieces:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep the test output clean

    seen_last_event_id: str | None = None


@pytest.fixture
def sse_server() -> Iterator[tuple[str, int]]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _EventStreamHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        host, port = server.server_address[:2]
        yield str(host), int(port)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def test_tutorial_client_works_against_a_local_server(sse_server: tuple[str, int]) -> None:
    # The tutorial's last snippet defines stream(); the page's snippets only define it,
    # so run it here against a real HTTP server on the loopback interface.
    namespace = run_page(DOCS / "basic-usage.rst")
    host, port = sse_server
    got = list(namespace["stream"](host, port, "/events", last_event_id="0"))
    assert got == [
        sse_sansio.Event(data="café", id="1"),
        sse_sansio.Comment(text="ping"),
        sse_sansio.Event(data="[DONE]", id="1"),
        sse_sansio.EndOfStream(),
    ]
    assert _EventStreamHandler.seen_last_event_id == "0"


# ---------------------------------------------------------------- the examples page


def _example_keys() -> dict[str, str]:
    page = (DOCS / "examples.rst").read_text(encoding="utf-8")
    return dict(re.findall(r"^\.\. example:: (\S+)\n   :key: (\S+)$", page, re.M))


def _defined(path: Path, key: str) -> ast.AST | None:
    body: list[ast.stmt] = ast.parse(path.read_text(encoding="utf-8")).body
    node: ast.AST | None = None
    for part in key.split("."):
        node = next(
            (
                n
                for n in body
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                and n.name == part
            ),
            None,
        )
        if node is None:
            return None
        body = node.body
    return node


def test_examples_page_shows_a_key_part_of_each_example_not_the_whole_file() -> None:
    keys = _example_keys()
    assert sorted(keys) == sorted(p.name for p in (ROOT / "examples").glob("*.py"))
    for name, key in keys.items():
        path = ROOT / "examples" / name
        node = _defined(path, key)
        assert node is not None, f"examples/{name} defines no {key}"
        length = node.end_lineno - node.lineno + 1  # type: ignore[attr-defined]
        total = len(path.read_text(encoding="utf-8").splitlines())
        assert length <= 80, (name, key, length)
        assert length < total / 2, (name, key, length, total)
    page = (DOCS / "examples.rst").read_text(encoding="utf-8")
    assert "literalinclude" not in page  # the directive includes only the key part


# ---------------------------------------------------------------- the comparison page


def _benchmark_report() -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "benchmark_report", DOCS / "_ext" / "benchmark_report.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


RESULTS = ROOT / "benchmarks" / "results.md"
# A commit or blob id: 7 to 40 hex digits with at least one letter and one digit.
_COMMIT_ID = re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b")


@pytest.mark.parametrize("results", [RESULTS, RESULTS.with_name("results-compiled.md")])
def test_the_comparison_page_shows_no_targets_and_no_commit(results: Path) -> None:
    shown = _benchmark_report().for_readers(results.read_text(encoding="utf-8"))
    page = (DOCS / "comparison.md").read_text(encoding="utf-8") + shown
    assert not re.search(r"(?i)\btargets?\b|\bmissed\b", page), re.findall(
        r"(?i).{30}(?:targets?|missed).{30}", page
    )
    assert not _COMMIT_ID.search(page)
    # Which version the figures belong to is still said.
    assert re.search(
        r"^- measured: sse_sansio \d+\.\d+\.\d+, as it stood on that date$", shown, re.M
    )
    assert re.search(r"^- date: \d{4}-\d\d-\d\d", shown, re.M)
    # Every figure table is still there: the filter drops rows, not tables.
    report = results.read_text(encoding="utf-8")
    for line in report.splitlines():
        if line.startswith("| sse_sansio |"):
            assert line in shown


def test_the_reader_filter_drops_what_it_should_and_keeps_the_rest() -> None:
    report = (
        "# Results\n\n- date: 2026-01-01\n"
        "- measured: sse_sansio 1.2.3, _connection.py as committed at abc1234 (blob 99ff00aa)\n\n"
        "## One\n\n| parser | 1 B |\n|---|---|\n| sse_sansio | 4.0 MB/s |\n"
        "| target | ≥ 1.0x: **MISSED** |\n| **target** | met |\n\n"
        "| **8 MiB / 1 MiB** (target ≤ 1.25) | **0.97** (met) | **1.5** (**MISSED**) |\n\n"
        "peak ≈ **2.00 x largest**; target ≤ 2 x largest + a constant: met.\n\n"
        "## Targets missed\n\n- llm: 0.7x\n\n### detail\n\nmore\n\n## Two\n\nkept\n"
    )
    assert _benchmark_report().for_readers(report) == (
        "# Results\n\n- date: 2026-01-01\n"
        "- measured: sse_sansio 1.2.3, as it stood on that date\n\n"
        "## One\n\n| parser | 1 B |\n|---|---|\n| sse_sansio | 4.0 MB/s |\n\n"
        "| **8 MiB / 1 MiB** | **0.97** | **1.5** |\n\n"
        "peak ≈ **2.00 x largest**.\n\n"
        "## Two\n\nkept\n"
    )


_NUMBERS = {4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine", 10: "ten"}


def test_the_comparison_page_counts_the_parsers_it_shows() -> None:
    page = (DOCS / "comparison.md").read_text(encoding="utf-8")
    # The rules table: one column per library, sse_sansio's first.
    header = next(line for line in page.splitlines() if line.startswith("| | sse_sansio |"))
    rule_peers = len(header.strip("|").split("|")) - 2
    # The speed report's parser table: sse_sansio, its peers, and the two floors.
    report = RESULTS.read_text(encoding="utf-8")
    parsers = report.split("## Parsers", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1].strip() for line in parsers.splitlines() if line.startswith("| ")]
    # Not peers: our own rows (counting comments), the floors and the C floor's parts.
    ours = ("sse_sansio", "floor", "drain floor")
    speed_peers = [
        r for r in rows[1:] if r not in ours and not r.startswith(("sse_sansio ", "floor: "))
    ]
    intro = page.split("## ", 1)[0]
    assert f"rules with {_NUMBERS[rule_peers]} of them" in intro
    assert f"memory with {_NUMBERS[len(speed_peers)]}" in intro


@pytest.mark.slow  # a fresh interpreter
def test_the_judge_snippet_runs_alone_in_a_fresh_interpreter() -> None:
    # Pasted alone, with nothing run before it (issue 36, item 6): it once failed with
    # "module 'sse_sansio' has no attribute 'llm'", as sse_sansio.llm was loaded only
    # when something imported it by name.
    (snippet,) = [s for s in extract(DOCS / "llm.rst") if "def judge(" in s.code]
    assert "import sse_sansio\n" in snippet.code
    assert snippet.code.count("judge(") > 1  # it is called, not only defined
    result = subprocess.run(
        [sys.executable, "-c", snippet.code],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"},
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
