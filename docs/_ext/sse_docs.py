"""The ``example`` directive: one line in examples.rst documents one file of examples/.

``.. example:: socket_client.py`` becomes a section titled ``examples/socket_client.py``
holding the first line of the file's module docstring, the commands the docstring gives
for running it (lines that start with ``python``), and the whole file through
``literalinclude``, so the page always shows the code as it is and cannot drift.  A file
that does not exist is an error (a warning, which the ``-W`` build turns into a failure).
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any, ClassVar

from docutils import nodes
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
    option_spec: ClassVar[dict[str, Any]] = {}

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
        lines += [
            "",
            f".. literalinclude:: /../examples/{name}",
            "   :language: python",
            "   :linenos:",
            "",
        ]
        holder = nodes.Element()
        nested_parse_with_titles(self.state, StringList(lines, source=title), holder)
        return list(holder.children)


def _escape(text: str) -> str:
    """Escape reStructuredText inline markup characters."""
    for char in "\\*`_|[]":
        text = text.replace(char, "\\" + char)
    return text


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("example", ExampleDirective)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
