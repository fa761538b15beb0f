"""Sphinx configuration for the sse_sansio documentation.

Built by ``nox -s docs`` as ``sphinx-build -W --keep-going -b html docs docs/_build/html``
from the repository root: every warning is an error, and nothing is fetched from the
network (no intersphinx mapping).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
# The package is documented from this checkout, installed or not; _ext holds the
# directive that includes the example programs.
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(DOCS / "_ext"))


def _read_version() -> str:
    """The version as the source writes it, installed package or not."""
    # sse_sansio/_version.py holds the literal (pyproject.toml reads it from there);
    # older checkouts wrote it in pyproject.toml.
    for path, pattern in (
        (ROOT / "sse_sansio" / "_version.py", r'^__version__ = "([^"]+)"$'),
        (ROOT / "pyproject.toml", r'^version = "([^"]+)"$'),
    ):
        found = re.search(pattern, path.read_text(encoding="utf-8"), re.MULTILINE)
        if found:
            return found.group(1)
    raise RuntimeError("no version found in sse_sansio/_version.py or pyproject.toml")


project = "sse_sansio"
author = "The sse_sansio developers"
copyright = "The sse_sansio developers"
release = _read_version()
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "myst_parser",
    "sse_docs",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "requirements.txt"]

# --- autodoc / napoleon ----------------------------------------------------------
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_preserve_defaults = True
# Google-style "Attributes:" sections become attribute entries of the class, real
# targets for :attr: (Event.end, Outcome.stop_reason); a class documents a property
# either there or in :members:, never in both, or it would be a duplicate object.
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_ivar = False

# --- MyST (Markdown: benchmarks/results.md is included into the comparison page) ----
myst_heading_anchors = 3
# The included benchmark report is written by another tool and may start at any
# heading level; its headings are shifted under ours, which can skip a level.
suppress_warnings = ["myst.header"]

# --- HTML --------------------------------------------------------------------------
html_theme = "furo"
html_title = f"sse_sansio {release}"
html_static_path = ["_static"]
html_css_files = ["custom.css"]
