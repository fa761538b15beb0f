"""Run the docs' code snippets: find every Python block of a reStructuredText or Markdown
page and execute them in order in one namespace (pycon blocks as doctests).

Shared by tests/package/test_docs.py and tests/llm/test_llm_docs.py.
"""

from __future__ import annotations

import doctest
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


DOCS = ROOT / "docs"


# The API reference: one page per layer under docs/api/, index.rst first.
API = DOCS / "api"


def api_pages() -> list[Path]:
    """The API reference's pages: its index, then the rest in name order."""
    return sorted(API.glob("*.rst"), key=lambda page: (page.name != "index.rst", page.name))


def api_reference() -> str:
    """The whole API reference as one text, its pages joined in api_pages() order."""
    return "\n".join(page.read_text(encoding="utf-8") for page in api_pages())


PYTHON = frozenset({"python", "python3", "py"})


DOCTEST = frozenset({"pycon"})


NOT_PYTHON = frozenset({"shell", "console", "bash", "sh", "text", "none", "json", "http"})


_RST_CODE = re.compile(r"^(?P<indent>\s*)\.\. (?:code-block|code|sourcecode)::\s*(?P<lang>\S*)")


_RST_INCLUDE = re.compile(r"^\s*\.\. (?:literalinclude|include)::\s*(?P<target>\S+)")


_RST_OTHER_CODE = re.compile(r"^\s*\.\. (?:doctest|testcode|testsetup|ipython|jupyter-execute)::")


_MD_FENCE = re.compile(r"^(?P<fence>```+|~~~+)\s*(?P<info>.*)$")


class SnippetError(ValueError):
    """A code block the extractor cannot run and may not skip."""


@dataclass(frozen=True)
class Snippet:
    path: Path
    lineno: int  # 1-based line of the first line of code
    language: str  # "python", "pycon", or "peer" (another library's code)
    code: str


def _check_include(target: str, where: str) -> None:
    # Example programs are tested by their own tests; Markdown includes (the benchmark
    # report) hold no Python that these tests would need to run.
    if target.endswith(".md"):
        return
    if "examples/" in target and target.endswith(".py"):
        return
    raise SnippetError(f"{where}: cannot check the included file {target!r}")


def _classify(language: str, where: str) -> str | None:
    language = language.lower()
    if language in PYTHON:
        return "python"
    if language in DOCTEST:
        return "pycon"
    if language in NOT_PYTHON:
        return None
    raise SnippetError(f"{where}: code block in unknown language {language!r}")


def extract_rst(text: str, path: Path) -> list[Snippet]:
    """The runnable snippets of a reStructuredText page, in order."""
    lines = text.splitlines()
    snippets = []
    i = 0
    while i < len(lines):
        line = lines[i]
        where = f"{path.name}:{i + 1}"
        match = _RST_CODE.match(line)
        if match:
            if not match["lang"]:
                raise SnippetError(f"{where}: code block without a language")
            kind = _classify(match["lang"], where)
            indent = len(match["indent"])
            i += 1
            # Skip the directive's options (":linenos:") and the blank line after them.
            while i < len(lines) and (
                lines[i].strip().startswith(":") and _indent(lines[i]) > indent
            ):
                if lines[i].strip().startswith(":caption: Before:") and kind == "python":
                    kind = "peer"  # the "before" half of a migration example
                i += 1
            body_start = i
            while i < len(lines) and (not lines[i].strip() or _indent(lines[i]) > indent):
                i += 1
            body = lines[body_start:i]
            while body and not body[-1].strip():
                body.pop()
            while body and not body[0].strip():
                body.pop(0)
                body_start += 1
            if not body:
                raise SnippetError(f"{where}: empty code block")
            if kind is not None:
                code_indent = min(_indent(b) for b in body if b.strip())
                code = "\n".join(b[code_indent:] for b in body) + "\n"
                snippets.append(Snippet(path, body_start + 1, kind, code))
            continue
        include = _RST_INCLUDE.match(line)
        if include:
            _check_include(include["target"], where)
        elif _RST_OTHER_CODE.match(line):
            raise SnippetError(f"{where}: unsupported code directive: {line.strip()}")
        elif line.rstrip().endswith("::") and not line.lstrip().startswith(".."):
            raise SnippetError(f"{where}: bare '::' literal block; use '.. code-block:: LANG'")
        i += 1
    return snippets


def extract_md(text: str, path: Path) -> list[Snippet]:
    """The runnable snippets of a MyST Markdown page, in order."""
    lines = text.splitlines()
    snippets = []
    i = 0
    while i < len(lines):
        match = _MD_FENCE.match(lines[i])
        where = f"{path.name}:{i + 1}"
        if not match:
            i += 1
            continue
        fence, info = match["fence"], match["info"].strip()
        end = i + 1
        while end < len(lines) and lines[end].strip() != fence:
            end += 1
        if end == len(lines):
            raise SnippetError(f"{where}: unclosed code fence")
        body = lines[i + 1 : end]
        directive = re.match(r"\{(?P<name>[\w-]+)\}\s*(?P<arg>.*)", info)
        if directive:
            name, arg = directive["name"], directive["arg"].strip()
            if name in ("include", "literalinclude"):
                _check_include(arg, where)
                language = None
            elif name in ("code-block", "code", "sourcecode"):
                language = arg or ""
                body = [b for b in body if not b.startswith(":")]
            elif name in ("toctree", "note", "warning", "seealso", "list-table"):
                language = None  # prose, no code
            else:
                raise SnippetError(f"{where}: unsupported directive {name!r}")
        else:
            language = info.split()[0] if info else ""
            if not language:
                raise SnippetError(f"{where}: code fence without a language")
        if language is not None:
            kind = _classify(language, where)
            if kind is not None:
                snippets.append(Snippet(path, i + 2, kind, "\n".join(body) + "\n"))
        i = end + 1
    return snippets


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def extract(path: Path) -> list[Snippet]:
    text = path.read_text(encoding="utf-8")
    return extract_md(text, path) if path.suffix == ".md" else extract_rst(text, path)


# The other libraries that the migration page's "before" snippets use.  They are not
# test dependencies of sse_sansio: where one is missing, its snippet is only compiled.
PEER_MODULES = frozenset({"httpx", "httpx_sse", "openai", "sseclient"})


def run_page(path: Path) -> dict[str, Any]:
    """Run a page's snippets in order in one namespace; return the namespace."""
    namespace: dict[str, Any] = {"__name__": f"docs_{path.stem.replace('-', '_')}"}
    parser = doctest.DocTestParser()
    for snippet in extract(path):
        name = f"{path.name}:{snippet.lineno}"
        if snippet.language in ("python", "peer"):
            # Pad so that tracebacks give the line number in the page.
            source = "\n" * (snippet.lineno - 1) + snippet.code
            code = compile(source, str(path), "exec")
            try:
                exec(code, namespace)
            except ModuleNotFoundError as exc:
                top = (exc.name or "").partition(".")[0]
                if snippet.language != "peer" or top not in PEER_MODULES:
                    raise
            continue
        test = parser.get_doctest(snippet.code, namespace, name, str(path), snippet.lineno - 1)
        if not test.examples:
            raise SnippetError(f"{name}: pycon block without '>>>' examples")
        runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
        report: list[str] = []
        runner.run(test, out=report.append, clear_globs=False)
        assert runner.failures == 0, "".join(report)
        namespace.update(test.globs)  # DocTest ran on a copy of the namespace
    return namespace
