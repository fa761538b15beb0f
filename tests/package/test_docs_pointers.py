"""The docs say what is true and point where a reader can go (issue 26, item 21)."""

from __future__ import annotations

import re
from pathlib import Path

import sse_sansio

ROOT = Path(__file__).parents[2]
DOCS = ROOT / "docs"


def _page(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def _section(page: str, title: str) -> str:
    return page.split(f"\n{title}\n", 1)[1].split("\n-----", 1)[0]


def test_the_first_page_names_the_client_helpers_and_the_llm_module() -> None:
    index = _page("index.rst")
    for name in ("iter_events", "check_response", "ReconnectPlanner", "sse_sansio.llm"):
        assert name in index, name
    assert ":doc:`client`" in index
    assert ":doc:`llm`" in index


def test_the_first_page_does_not_deny_reconnecting() -> None:
    # ReconnectPlanner decides reconnections: the library does not *do* them, but it
    # does not leave them out either.
    does_not = _section(_page("index.rst"), "What it does not do")
    assert "reconnect or time out" not in does_not
    assert "ReconnectPlanner" in does_not


def test_the_site_does_not_point_to_the_readme() -> None:
    # The README is not on the site: a page that sends readers there is a dead end.
    for page in ("client.rst", "index.rst", "huge-input.rst"):
        assert "the readme" not in _page(page).lower(), page


def test_huge_input_names_no_private_module() -> None:
    assert re.search(r"sse_sansio/_\w+\.py", _page("huge-input.rst")) is None


def test_the_skip_cost_is_the_same_number_everywhere() -> None:
    def skip_cost(text: str) -> str:
        found = re.search(
            r"costs what the default path costs on blocks short of the limit,"
            r"\s+within (\d+)%",
            text,
        )
        assert found is not None, text[:200]
        return found[1]

    docstring = " ".join((sse_sansio._receive._connection.Connection.__doc__ or "").split())
    page = " ".join(_page("huge-input.rst").split())
    assert skip_cost(docstring) == skip_cost(page)


def test_read_size_and_implementation_are_documented_targets() -> None:
    api = _page("api/receive.rst") + _page("api/client.rst")
    assert ".. data:: READ_SIZE" in api
    assert sse_sansio.READ_SIZE == 64 * 1024
    members = re.search(r"autoclass:: Connection\n   :members: (.+)", api)
    assert members is not None
    assert "implementation" in members[1].split(", ")
