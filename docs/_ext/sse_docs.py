"""The ``example`` directive: a few lines in examples.rst document one file of examples/.

.. code-block:: rst

   .. example:: socket_client.py
      :key: events

becomes a section titled ``examples/socket_client.py`` holding the first line of the
file's module docstring (what the example is for), the commands the docstring gives for
running it (lines that start with ``python``), its key part (the function or method
named by ``:key:``, through ``literalinclude``'s ``:pyobject:``, with the file's own line
numbers) and a link to download the whole file.  The page shows the code as it is and
cannot drift: a file that does not exist, or a ``:key:`` the file does not define, is an
error (a warning, which the ``-W`` build turns into a failure).
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any, ClassVar

from benchmark_report import for_readers
from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run_commands(docstring: str, name: str) -> list[str]:
    """The ``python ...`` command lines that the example's docstring gives, in order."""
    commands = []
    for line in docstring.splitlines():
        text = line.strip().removeprefix("$ ")
        if text.startswith(("python ", "python3 ")):
            commands.append(text)
    return commands or [f"python3 examples/{name}"]


class ExampleDirective(SphinxDirective):
    """Document one file of examples/ from the file itself."""

    required_arguments = 1
    has_content = False
    option_spec: ClassVar[dict[str, Any]] = {"key": directives.unchanged_required}

    def run(self) -> list[nodes.Node]:
        name = self.arguments[0]
        path = EXAMPLES / name
        if not path.is_file():
            raise self.error(f"example: no such file examples/{name}")
        self.env.note_dependency(str(path))
        docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        summary = docstring.strip().splitlines()[0] if docstring.strip() else ""
        title = f"examples/{name}"
        lines = [title, "-" * len(title), ""]
        if summary:
            # Shown as literal text: a docstring is not reStructuredText we control.
            lines += [".. line-block::", "", f"    {_escape(summary)}", ""]
        lines += ["Run it from the repository root:", "", ".. code-block:: console", ""]
        lines += [f"    $ {cmd}" for cmd in run_commands(docstring, name)]
        lines.append("")
        key = self.options.get("key")
        if key:
            if not _defines(path, key):
                raise self.error(f"example: examples/{name} defines no {key!r}")
            lines += [
                f"The key part, ``{key}``:",
                "",
                f".. literalinclude:: /../examples/{name}",
                "   :language: python",
                f"   :pyobject: {key}",
                "   :lineno-match:",
                "",
            ]
        count = len(path.read_text(encoding="utf-8").splitlines())
        lines += [
            f"The whole file: :download:`examples/{name} </../examples/{name}>` ({count} lines).",
            "",
        ]
        holder = nodes.Element()
        nested_parse_with_titles(self.state, StringList(lines, source=title), holder)
        return list(holder.children)


def _defines(path: Path, key: str) -> bool:
    """Whether the module at ``path`` defines ``key`` (``name`` or ``Class.method``)."""
    body: list[ast.stmt] = ast.parse(path.read_text(encoding="utf-8")).body
    for part in key.split("."):
        found = [
            node
            for node in body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and node.name == part
        ]
        if not found:
            return False
        body = found[0].body
    return True


def _escape(text: str) -> str:
    """Escape reStructuredText inline markup characters."""
    for char in "\\*`_|[]":
        text = text.replace(char, "\\" + char)
    return text


def _include_read(app: Sphinx, path: Path, docname: str, content: list[str]) -> None:
    """The comparison page includes the benchmark report as readers want it."""
    if Path(path).as_posix().endswith(("benchmarks/results.md", "benchmarks/results-compiled.md")):
        content[0] = for_readers(content[0])


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("example", ExampleDirective)
    app.connect("include-read", _include_read)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
