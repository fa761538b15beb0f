"""tests/fuzz/oss-fuzz/connection_fuzzer.py, the OSS-Fuzz target, runs here (issue 36).

Its home is OSS-Fuzz (build.sh beside it); here its TestOneInput meets a few hundred
inputs with the installed build: the conformance vectors under every option byte's
modes, and mutations of them, all of which the two cores must agree on.  That it runs
under atheris, instrumented, is ``nox -s sanitize``'s part.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import random
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.helpers.cores import CORE, ROOT, needs_core

pytestmark = needs_core


def load_target() -> ModuleType:
    path = ROOT / "tests" / "fuzz" / "oss-fuzz" / "connection_fuzzer.py"
    spec = importlib.util.spec_from_file_location("connection_fuzzer", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TARGET = load_target()


def inputs(count: int) -> list[bytes]:
    cases = json.loads(Path(ROOT / "tests/data/conformance_cases.json").read_text("utf-8"))
    bodies = [base64.b64decode(case["input_b64"])[:512] for case in cases]
    rng = random.Random(36)
    made = []
    for i in range(count):
        body = bytearray(rng.choice(bodies))
        for _ in range(rng.randint(0, 3)):
            at = rng.randint(0, len(body))
            body[at:at] = rng.choice([b"\r", b"\n", b"data:", b"\xff", b"id: 1\n", b"\x00"])
        made.append(bytes([i % 256, rng.randint(0, 20)]) + bytes(body))
    return made


def test_the_target_runs_and_the_cores_agree() -> None:
    assert TARGET.CConnection is CORE.Connection  # type: ignore[union-attr]
    for data in inputs(300):
        TARGET.TestOneInput(data)
    TARGET.TestOneInput(b"")  # too short: nothing to do


def test_the_first_byte_reaches_every_mode() -> None:
    options = [TARGET.options_of(flags) for flags in range(256)]
    assert {o["errors"] for o in options} == {"strict", "replace"}
    assert {o["keep_raw"] for o in options} == {False, True}
    assert {o["max_event_size"] for o in options} == set(TARGET.LIMITS)
    assert {o.get("piece_size") for o in options} == {None, 1, 3, 5}
    assert {o.get("diagnostics", False) for o in options} == {False, True}


def test_its_seeds_are_the_conformance_vectors_and_pass(tmp_path: Path) -> None:
    count = TARGET.write_seeds(tmp_path / "seeds")
    seeds = sorted((tmp_path / "seeds").iterdir())
    cases = json.loads(Path(ROOT / "tests/data/conformance_cases.json").read_text("utf-8"))
    assert count == len(seeds) == 4 * len(cases)
    for seed in seeds[::7]:  # every header, a seventh of the vectors
        TARGET.TestOneInput(seed.read_bytes())


def test_the_second_byte_cuts_the_stream() -> None:
    assert TARGET.chunks_of(0, b"abcde") == [b"abcde"]
    assert TARGET.chunks_of(0, b"") == []
    assert TARGET.chunks_of(1, b"abcde") == [b"ab", b"cd", b"e"]


def test_a_difference_between_the_cores_fails_the_input(monkeypatch: pytest.MonkeyPatch) -> None:
    class Lying:
        """The compiled Connection, but every retry it reports is off by one."""

        def __init__(self, **options: Any) -> None:
            self.inner = CORE.Connection(**options)  # type: ignore[union-attr]

        def __getattr__(self, name: str) -> Any:
            return getattr(self.inner, name)

        @property
        def retry(self) -> int | None:
            retry = self.inner.retry
            return None if retry is None else retry + 1

    monkeypatch.setattr(TARGET, "CConnection", Lying)
    TARGET.TestOneInput(b"\x00\x00data: x\n\n")  # no retry: nothing to tell apart
    with pytest.raises(AssertionError, match="the cores differ"):
        TARGET.TestOneInput(b"\x00\x00retry: 5\ndata: x\n\n")
