"""Developer sessions: ``nox`` runs tests (every supported Python), lint, typecheck, docs.

``nox -s bench`` runs the benchmark suite and ``nox -s fuzz`` a long fuzzing run; neither
is a default session.  With ``CI=true`` nox fails on any interpreter it cannot find
instead of skipping it, so CI proves every supported version.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import nox

nox.options.sessions = ["tests", "lint", "typecheck", "docs"]
nox.options.error_on_missing_interpreters = os.environ.get("CI", "").lower() == "true"
nox.options.reuse_existing_virtualenvs = True

PYTHONS = ["3.10", "3.11", "3.12", "3.13"]
# Pinned so that a new release's rules or formatting cannot turn CI red on its own.
RUFF = "ruff==0.17.6"
MYPY = "mypy==2.4.1"


def _interpreter(*versions: str) -> str | None:
    """The first of ``versions`` found on PATH, else None: nox's own interpreter.

    For the sessions that need one Python, not each: where the preferred one is
    missing they run on another supported one instead of being skipped ("Session
    docs skipped" once looked like a pass), and fail if the one left cannot do it.
    """
    for version in versions:
        found = shutil.which(f"python{version}")
        # A pyenv shim is on PATH even where its version is not selected: try it.
        if found and subprocess.run([found, "-c", ""], capture_output=True).returncode == 0:
            return version
    return None


# ruff and mypy (which checks for 3.10 whatever runs it) work on every supported Python;
# the pinned Sphinx needs 3.12 or later.
ANY_PYTHON = _interpreter("3.12", "3.13", "3.11", "3.10")
DOCS_PYTHON = _interpreter("3.12", "3.13")


def _install(session: nox.Session, *extras: str, packages: tuple[str, ...] = ()) -> None:
    """Install the project (with extras) and any further packages into the session."""
    target = f".[{','.join(extras)}]" if extras else "."
    session.install(target, *packages)


@nox.session(python=PYTHONS)
def tests(session: nox.Session) -> None:
    """The whole suite under ``python -bb``, with 100% branch coverage of sse_sansio."""
    _install(session, "test")
    session.run(
        "python",
        "-bb",
        "-m",
        "pytest",
        "--cov=sse_sansio",
        "--cov-branch",
        "--cov-report=term-missing",
        "--cov-fail-under=100",
        *session.posargs,
    )


@nox.session(python=ANY_PYTHON)
def lint(session: nox.Session) -> None:
    """ruff check and ruff format --check."""
    session.install(RUFF)
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session(python=ANY_PYTHON)
def typecheck(session: nox.Session) -> None:
    """mypy --strict over the package, the tests, the examples and this file."""
    _install(session, "test", packages=(MYPY, "nox"))
    session.run("mypy")


@nox.session(python=DOCS_PYTHON)
def docs(session: nox.Session) -> None:
    """Build the docs with warnings as errors (Python 3.12 or later, for Sphinx)."""
    if DOCS_PYTHON is None and sys.version_info < (3, 12):
        session.error("the docs need Python 3.12 or later: none is on PATH")
    _install(session, packages=("-r", "docs/requirements.txt"))
    session.run("sphinx-build", "-W", "--keep-going", "-b", "html", "docs", "docs/_build/html")


@nox.session(python="3.12")
def bench(session: nox.Session) -> None:
    """The benchmark suite against other Python SSE parsers (not a default session)."""
    _install(session, packages=("-r", "benchmarks/requirements.txt"))
    session.run("python", "benchmarks/run.py", *session.posargs)


@nox.session(python="3.12")
def fuzz(session: nox.Session) -> None:
    """A long fuzzing run (not a default session); FUZZ_SECONDS sets the budget."""
    _install(session, "test", packages=("-r", "tests/fuzz/requirements.txt"))
    session.run("python", "tests/fuzz/run.py", *session.posargs)
