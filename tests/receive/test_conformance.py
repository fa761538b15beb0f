"""The shared conformance vectors (tests/data/conformance_cases.json), every chunking.

Each case is fed whole, one byte at a time, split in two at every point and in seeded
random chunkings; every way must give the events the case expects.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from sse_sansio import Event, RemoteProtocolError
from tests.helpers import chunkings, feed

pytestmark = pytest.mark.usefixtures("conn_cls")  # both cores: tests/conftest.py

CASES: list[dict[str, Any]] = json.loads(
    (Path(__file__).parents[1] / "data" / "conformance_cases.json").read_text(encoding="utf-8")
)


def _events(items: list[Any]) -> list[dict[str, str]]:
    return [{"type": i.type, "data": i.data, "id": i.id} for i in items if isinstance(i, Event)]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_conformance_case(case: dict[str, Any]) -> None:
    data = base64.b64decode(case["input_b64"])
    options = case.get("options") or {}
    for label, chunks in chunkings(data):
        if case["expect_error"]:
            with pytest.raises(RemoteProtocolError) as info:
                feed(chunks, **options)
            got = _events(info.value.items)  # type: ignore[attr-defined]
            assert got == case["expect"][: len(got)], label
            continue
        items, conn = feed(chunks, **options)
        assert _events(items) == case["expect"], label
        if "expect_retry" in case:
            assert conn.retry == case["expect_retry"], label
        if "expect_last_event_id" in case:
            assert conn.last_event_id == case["expect_last_event_id"], label


def test_conformance_corpus_is_complete() -> None:
    # Guards against an accidentally truncated copy of the vectors.
    assert len(CASES) >= 71
    assert len({c["name"] for c in CASES}) == len(CASES)
