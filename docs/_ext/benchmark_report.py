"""The benchmark report as the comparison page shows it: the figures, not the targets.

``benchmarks/results.md`` is written by ``benchmarks/run.py`` for the people optimising
the parser: beside the figures it grades each cell against the project's own speed
targets ("target ≥ 1.5x: MISSED"), lists the targets missed, and names the commit that
was measured.  A reader comparing parsers wants the figures and the method; the
version the figures belong to is kept (``measured: sse_sansio X.Y.Z``), the commit id
is not.  The docs build applies :func:`for_readers` to the report as the comparison
page includes it (Sphinx's ``include-read`` event), so the page always shows the
report as committed, and the report itself stays as its tool writes it.

No Sphinx import here: tests/package/test_docs.py checks the function on its own.
"""

from __future__ import annotations

import re

# "| target | ≥ 1.0x: **MISSED** | ..." rows, in any table.
_TARGET_ROW = re.compile(r"^\|\s*(?:\*\*)?target\b", re.IGNORECASE)
# " (target ≤ 1.25)", " (met)", " (**MISSED**)" after a figure.
_GRADE = re.compile(r"\s*\((?:target\b[^)]*|met|\*\*MISSED\*\*|MISSED)\)", re.IGNORECASE)
# "; target ≤ 2 x largest + a constant: met" at the end of a sentence.
_TARGET_CLAUSE = re.compile(r";\s*target\b[^.|]*", re.IGNORECASE)
_MEASURED = re.compile(r"^- measured: sse_sansio (\S+?),? .*$")
_HEADING = re.compile(r"^(#+) (.*)$")


def for_readers(report: str) -> str:
    """``report`` without target rows, grades, the "Targets missed" section, or the
    commit that was measured."""
    out: list[str] = []
    skip_level = 0  # inside a dropped section: the level of its heading
    for line in report.splitlines():
        heading = _HEADING.match(line)
        if heading:
            level = len(heading[1])
            if skip_level and level > skip_level:
                continue
            skip_level = level if heading[2].strip().lower().startswith("targets") else 0
            if skip_level:
                continue
        elif skip_level or _TARGET_ROW.match(line):
            continue
        measured = _MEASURED.match(line)
        if measured:
            line = f"- measured: sse_sansio {measured[1]}, as it stood on that date"
        out.append(_TARGET_CLAUSE.sub("", _GRADE.sub("", line)))
    while out and not out[-1].strip():
        out.pop()
    return "\n".join(out) + "\n"
