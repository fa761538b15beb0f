"""mypy and pyright see an editable install of the checkout (issue 36, item 11).

``pip install -e .`` used to install an import hook (setuptools' choice for a package at
the root of a checkout): Python found sse_sansio through it, the type checkers, which
run no hook, did not, and reported "cannot find module" for every import of it.  With
``package-dir`` said in pyproject.toml the install is a ``.pth`` line, which both read.

Once per session (the venv and the install are shared by the two checkers): a new venv
without pip, the checkout's build inputs copied to a temporary folder (so the build
writes nothing into the checkout) and installed editable into it by this interpreter's
pip (``pip --python``, pip 22.3 or later) with the usual build isolation, the C core
not compiled (the checkers read the Python sources; SSE_SANSIO_NO_EXTENSIONS=1 at build
time).  Each checker then checks a small typed user file from a folder outside the
checkout, told to use the new venv's interpreter and nothing else: the file uses the
public API (the subpackages as attributes included) and holds one deliberate type
error, which each checker must report, and no other.  Without the install's path, the
checkers report a missing module instead (and the test fails); were the package seen as
``Any``, the deliberate error would pass unseen (and the test fails).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # a venv, a pip install, mypy and pyright

ROOT = Path(__file__).resolve().parents[2]

#: What the build reads: pyproject.toml names the readme and the license, setup.py
#: builds, MANIFEST.in lists the sdist (the package itself is copied whole).
BUILD_INPUTS = ("pyproject.toml", "setup.py", "README.md", "LICENSE", "MANIFEST.in")

USER = '''\
"""A user's module, checked with the package installed editable."""

import sse_sansio
from sse_sansio.testing import parse


def first_data(body: bytes) -> str:
    conn = sse_sansio.Connection()
    conn.receive_data(body)
    conn.receive_data(b"")
    item = conn.next_event()
    return item.data if isinstance(item, sse_sansio.Event) else ""


def outcome(body: bytes) -> str:
    tracker = sse_sansio.llm.Tracker("openai-chat")
    for item in parse(body):
        tracker.feed(item)
    return tracker.end().outcome


size: int = first_data(b"data: a\\n\\n")
'''
#: The deliberate error: first_data() returns a str, assigned to an int.
BAD_LINE = USER.splitlines().index('size: int = first_data(b"data: a\\n\\n")') + 1


def _run(command: list[str], cwd: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    # No PYTHONPATH: the checkers must find the package through the install only.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | extra
    return subprocess.run(
        command, capture_output=True, text=True, check=False, cwd=cwd, env=env, timeout=600
    )


@pytest.fixture(scope="session")
def editable(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The interpreter of a new venv holding the checkout installed editable."""
    base = tmp_path_factory.mktemp("editable")
    source = base / "checkout"
    shutil.copytree(ROOT / "sse_sansio", source / "sse_sansio", ignore=_built)
    for name in BUILD_INPUTS:
        shutil.copy2(ROOT / name, source / name)
    venv = base / "venv"
    made = _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], base)
    assert made.returncode == 0, made.stderr
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps"]
    done = _run([*pip, "-e", str(source)], base, SSE_SANSIO_NO_EXTENSIONS="1")
    assert done.returncode == 0, done.stdout + done.stderr
    return python


def _built(folder: str, names: list[str]) -> set[str]:
    """Leave out what a build or a run left in the package folder."""
    return {n for n in names if n == "__pycache__" or n.endswith((".so", ".pyd"))}


def test_the_install_is_a_path_the_checkers_can_read(editable: Path) -> None:
    # A .pth line naming the copy, not an import hook: the fix itself.
    found = _run(
        [str(editable), "-c", "import sse_sansio, sys; print(sse_sansio.__file__)"],
        editable.parent,
    )
    assert found.returncode == 0, found.stderr
    assert Path(found.stdout.strip()).parent.parent.name == "checkout"
    site = _run([str(editable), "-c", "import site; print(site.getsitepackages()[0])"], ROOT)
    pth = list(Path(site.stdout.strip()).glob("__editable__*.pth"))
    assert len(pth) == 1
    assert "import " not in pth[0].read_text(encoding="utf-8")


def test_mypy_sees_the_editable_install(editable: Path, tmp_path: Path) -> None:
    (tmp_path / "user.py").write_text(USER, encoding="utf-8")
    checked = _run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-incremental",
            "--python-version=3.11",
            "--python-executable",
            str(editable),
            "user.py",
        ],
        tmp_path,
    )
    errors = [line for line in checked.stdout.splitlines() if ": error:" in line]
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert len(errors) == 1, errors
    assert errors[0].startswith(f"user.py:{BAD_LINE}: error: Incompatible types in assignment")


def test_pyright_sees_the_editable_install(editable: Path, tmp_path: Path) -> None:
    (tmp_path / "user.py").write_text(USER, encoding="utf-8")
    checked = _run(
        [
            sys.executable,
            "-m",
            "pyright",
            "--pythonpath",
            str(editable),
            "--pythonversion",
            "3.11",
            "user.py",
        ],
        tmp_path,
    )
    errors = [line for line in checked.stdout.splitlines() if " - error: " in line]
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert len(errors) == 1, errors
    assert f"user.py:{BAD_LINE}:" in errors[0]
    assert 'Type "str" is not assignable to declared type "int"' in errors[0]
