"""Developer sessions: ``nox`` runs tests (every supported Python), lint, typecheck, docs.

``nox -s fast`` runs the fast subset (``pytest -m "not slow"``, the README's test
command) and ``nox -s slow`` the rest, each on every supported Python found, without
coverage: CI (.ci/run) runs the whole suite with coverage on one Python and these on the
others.  Python 3.14 and 3.15 are tested by .ci/unstable, in a Debian chroot.

``nox -s bench`` runs the benchmark suite and ``nox -s fuzz`` a long fuzzing run; neither
is a default session.  Nor are ``nox -s fallback`` (an install without a C compiler
gives the pure package) and ``nox -s sanitize`` (the compiled core built with
AddressSanitizer and UndefinedBehaviorSanitizer, fuzzed against the pure core, guided by
the coverage of both).
With ``CI=true`` nox fails on any interpreter it cannot find instead of skipping it, so
CI proves every supported version.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import nox

nox.options.sessions = ["tests", "lint", "typecheck", "docs"]
nox.options.error_on_missing_interpreters = os.environ.get("CI", "").lower() == "true"
nox.options.reuse_existing_virtualenvs = True

# 3.14 and 3.15 too, where found (pyenv here stops at 3.13; .ci/unstable tests them).
PYTHONS = ["3.11", "3.12", "3.13", "3.14", "3.15"]
NO_EXTENSIONS = "SSE_SANSIO_NO_EXTENSIONS"
# What a copy of the checkout leaves out: builds, environments, caches.
COPY_IGNORE = shutil.ignore_patterns(
    ".git", ".nox", ".venv", "build", "*.so", "__pycache__", "*.egg-info", ".hypothesis"
)
# Pinned so that a new release's rules or formatting cannot turn CI red on its own.
RUFF = "ruff==0.17.6"
MYPY = "mypy==2.4.1"
# The C sources' layout is .clang-format's (PEP 7); the wheel from PyPI needs no compiler.
CLANG_FORMAT = "clang-format==19.1.7"
C_SOURCES = (
    "sse_sansio/_receive/_core.c",
    "sse_sansio/_receive/_core_buffer.h",
    "sse_sansio/_receive/_core_utf8.h",
    "sse_sansio/_receive/_core_scan.h",
    "sse_sansio/_receive/_core_decode.h",
    "sse_sansio/_receive/_core_fields.h",
    "sse_sansio/_receive/_core_modes.h",
    "tests/fuzz/core_fuzzer.c",
)


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


# ruff and mypy (which checks for 3.11 whatever runs it) work on every supported Python;
# the pinned Sphinx needs 3.12 or later.
ANY_PYTHON = _interpreter("3.12", "3.13", "3.11")
DOCS_PYTHON = _interpreter("3.12", "3.13")


def _install(session: nox.Session, *extras: str, packages: tuple[str, ...] = ()) -> None:
    """Install the project (with extras) and any further packages into the session."""
    target = f".[{','.join(extras)}]" if extras else "."
    session.install(target, *packages)


@nox.session(python=PYTHONS)
def tests(session: nox.Session) -> None:
    """The whole suite under ``python -bb``, both cores in one run, 100% branch coverage.

    Every test that depends on the core runs on both, ids ``c`` and ``py`` (the
    ``conn_cls`` fixture of tests/conftest.py); the rest run once.  The compiled core is
    built by the install (``SSE_SANSIO_REQUIRE_EXTENSIONS=1`` makes a failed build an
    error and the suite check that it is in use); the pure core's code is measured where
    it runs, by the ``py`` cases and the pure-only tests of the same run.
    """
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
        # A data file of the session's own: .ci/run runs two of these sessions at once.
        env={NO_EXTENSIONS: "", "COVERAGE_FILE": _coverage_file(session)},
    )


@nox.session(python=PYTHONS)
def fast(session: nox.Session) -> None:
    """The fast subset, ``pytest -m "not slow"`` (the README's test command), both cores."""
    _install(session, "test")
    session.run("python", "-bb", "-m", "pytest", "-m", "not slow", *session.posargs, env=_PLAIN)


@nox.session(python=PYTHONS)
def slow(session: nox.Session) -> None:
    """The slow tests only, ``pytest -m slow``: servers, subprocesses, type checkers."""
    _install(session, "test")
    session.run("python", "-bb", "-m", "pytest", "-m", "slow", *session.posargs, env=_PLAIN)


# Both cores are tested: the compiled one is not switched off from outside.
_PLAIN = {NO_EXTENSIONS: ""}


def _coverage_file(session: nox.Session) -> str:
    """Where the session's coverage data goes: its own environment's directory."""
    return os.path.join(session.virtualenv.location, ".coverage")


@nox.session(python=ANY_PYTHON)
def lint(session: nox.Session) -> None:
    """ruff check and ruff format --check; clang-format --dry-run for the C sources."""
    session.install(RUFF, CLANG_FORMAT)
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    session.run("clang-format", "--dry-run", "--Werror", *C_SOURCES)


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


def _copy_checkout(session: nox.Session, name: str) -> Path:
    """A fresh copy of the checkout, without builds, in the session's tmp directory."""
    target = Path(session.create_tmp()).resolve() / name
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(Path(__file__).parent, target, ignore=COPY_IGNORE)
    return target


@nox.session(python="3.12")
def fallback(session: nox.Session) -> None:
    """``pip install .`` where the C compiler fails: the pure package, and it says so."""
    source = _copy_checkout(session, "fallback")
    env = {"CC": "false", "SSE_SANSIO_REQUIRE_EXTENSIONS": "", NO_EXTENSIONS: ""}
    session.install("--force-reinstall", "--no-deps", str(source), env=env)
    session.chdir(source.parent)  # import the installed package, not a checkout
    session.run("python", "-c", "import sse_sansio; assert sse_sansio.IMPLEMENTATION == 'python'")
    version = session.run("python", "-m", "sse_sansio", "--version", silent=True)
    assert isinstance(version, str), version
    assert "(python core)" in version, version
    demo = str(source / "examples" / "demo.sse")
    session.run("python", "-m", "sse_sansio", demo, "--chunk-size", "1", silent=True)
    # Its wheel holds no extension, so it is tagged pure, not for this platform.
    wheels = source.parent / "fallback-wheels"
    session.run(
        "python", "-m", "pip", "wheel", "--no-deps", "-w", str(wheels), str(source), env=env
    )
    names = [wheel.name for wheel in wheels.glob("*.whl")]
    assert len(names) == 1, names
    assert names[0].endswith("-py3-none-any.whl"), names


@nox.session(python="3.12")
def sanitize(session: nox.Session) -> None:
    """The compiled core built with ASan and UBSan, fuzzed against the pure core, guided
    by the coverage of both (not a default session).

    The extension is built by clang with ``-fsanitize=fuzzer-no-link``, so that its every
    branch is counted, and atheris's own libFuzzer and ASan runtime are preloaded, so
    that libFuzzer sees those counters (and atheris's of the pure core's Python): the
    corpus grows.  tests/fuzz/cores.py runs for FUZZ_SECONDS (default 60), then the
    OSS-Fuzz target (tests/fuzz/oss-fuzz/connection_fuzzer.py) for 1,000 inputs.
    The extension is built in a copy of the checkout, so that no other session ever
    loads the instrumented build.  ``nox -s cfuzz`` is the fast C-only fuzzer.
    """
    _install(session, "test", packages=("-r", "tests/fuzz/requirements.txt", "setuptools>=77"))
    clang = _clang(session)
    source = _copy_checkout(session, "sanitize")
    # -fno-sanitize=function: atheris's runtime (an older LLVM's) has no handler for
    # the check clang 17+ adds to C; a call through a mistyped function pointer is the
    # only thing it would catch, and CPython's method tables make such calls by design.
    sanitizers = (
        "-fsanitize=address,undefined,fuzzer-no-link -fno-sanitize=function"
        " -fno-sanitize-recover=all"
    )
    # STR_AFTER=64 (see _core_buffer.h): the fuzzer's short streams cross it often.
    # SSE_SANSIO_NO_SIMD (see _core_scan.h): the plain byte loops, which CPUs without
    # SSE2 run, are tested here; every other build and cfuzz run the SSE2 ones.
    defines = "-DSTR_AFTER=64 -DSSE_SANSIO_NO_SIMD"
    session.chdir(source)
    session.run(
        "python",
        "setup.py",
        "--quiet",
        "build_ext",
        "--inplace",
        "--force",
        env={
            "CC": clang,
            "LDSHARED": f"{clang} -shared",
            "CFLAGS": f"{sanitizers} -fno-omit-frame-pointer -g -O1 {defines}",
            "LDFLAGS": sanitizers,
            "SSE_SANSIO_REQUIRE_EXTENSIONS": "1",
            NO_EXTENSIONS: "",
        },
    )
    built = list((source / "sse_sansio" / "_receive").glob("_core.*.so"))
    if len(built) != 1 or b"__sanitizer_cov_8bit_counters_init" not in built[0].read_bytes():
        session.error(f"the extension is not instrumented for coverage: {built}")
    # The interpreter is not instrumented: the runtime, with libFuzzer, is loaded first.
    # gcc's libasan would do for ASan, but its coverage hooks would shadow libFuzzer's
    # and leave the fuzzer blind (issue 36, item 18: its corpus stayed at one input).
    found = session.run("python", "-c", "import atheris; print(atheris.path())", silent=True)
    assert isinstance(found, str), found
    sanitized = {
        # The copy first, before the package nox installed (whose core is a plain build).
        "PYTHONPATH": str(source),
        "LD_PRELOAD": str(Path(found.strip()) / "asan_with_fuzzer.so"),
        "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1",
        "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1",
        NO_EXTENSIONS: "",
    }
    where = "import sse_sansio._receive._core as c; print(c.__file__)"
    loaded = session.run("python", "-c", where, env=sanitized, silent=True)
    if not isinstance(loaded, str) or not loaded.startswith(str(source)):
        session.error(f"the instrumented build is not the one imported: {loaded}")
    session.run("python", "tests/fuzz/cores.py", *session.posargs, env=sanitized)
    # The OSS-Fuzz target, briefly: that it builds and runs here (its home is elsewhere).
    target = "tests/fuzz/oss-fuzz/connection_fuzzer.py"
    seeds = str(Path(session.create_tmp()).resolve() / "oss-fuzz-seeds")
    shutil.rmtree(seeds, ignore_errors=True)
    session.run("python", target, "--seeds", seeds, env=sanitized)
    session.run("python", target, "-runs=1000", "-max_len=512", seeds, env=sanitized)
    # Calls re-entering next_event() (finalizers, a second thread): no fuzzer finds them.
    # The decoder's values past its one-pass limit and of every width: the fuzzers'
    # short inputs seldom make those.
    session.run(
        "python",
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "tests/receive/test_reentrancy.py",
        "tests/receive/test_decode.py",
        env={**sanitized, "SSE_SANSIO_REQUIRE_EXTENSIONS": "1"},
    )


# The C-level fuzz target: libFuzzer from Debian's clang (bookworm has 14 and 19; 19 is
# preferred for its newer libFuzzer and sanitizers, either works).
CFUZZ_CLANGS = ("clang-19", "clang-14", "clang")
CFUZZ_PACKAGES = ("clang-19", "libclang-rt-19-dev")
CFUZZ_FLAGS = ("-g", "-O2", "-fno-omit-frame-pointer", "-fno-sanitize-recover=all")


def _clang(session: nox.Session) -> str:
    """A clang that can link libFuzzer; installed with apt-get (as root) if none is."""
    for name in CFUZZ_CLANGS:
        found = shutil.which(name)
        if found and subprocess.run(
            [found, "-print-file-name=libclang_rt.fuzzer-x86_64.a"],
            capture_output=True,
            text=True,
        ).stdout.startswith("/"):
            return found
    if not hasattr(os, "geteuid") or os.geteuid() != 0 or not shutil.which("apt-get"):
        session.error(f"no clang with libFuzzer: apt-get install {' '.join(CFUZZ_PACKAGES)}")
    env = {"DEBIAN_FRONTEND": "noninteractive"}
    session.run("apt-get", "update", "-qq", external=True, env=env)
    session.run("apt-get", "install", "-y", "-qq", *CFUZZ_PACKAGES, external=True, env=env)
    return "clang-19"


@nox.session(python=ANY_PYTHON)
def cfuzz(session: nox.Session) -> None:
    """libFuzzer on the compiled core, with ASan and UBSan (not a default session).

    tests/fuzz/core_fuzzer.c embeds this session's CPython and has _core.c compiled in,
    instrumented for coverage.  FUZZ_SECONDS sets the budget (default 60); arguments
    after ``--`` go to libFuzzer (``-- -runs=10000000``).  The binary, the seeds and the
    corpus it grows live in the session's tmp directory.
    """
    clang = _clang(session)
    build = Path(session.create_tmp()).resolve() / "cfuzz"
    shutil.rmtree(build, ignore_errors=True)
    (build / "corpus").mkdir(parents=True)
    root = Path(__file__).parent.resolve()
    query = (
        "import sys, sysconfig as s; print(s.get_config_var('INCLUDEPY'), "
        "s.get_config_var('LIBDIR'), s.get_config_var('LDVERSION'), sys.base_prefix)"
    )
    found = session.run("python", "-c", query, silent=True)
    assert isinstance(found, str), found
    include, libdir, version, home = found.split()
    instrument = ("-fsanitize=fuzzer-no-link,address,undefined", *CFUZZ_FLAGS, f"-I{include}")
    objects = []
    for source, defines in (
        # STR_AFTER=64: the buffers move into and out of strs on short inputs too.
        ("sse_sansio/_receive/_core.c", ("-DSTR_AFTER=64",)),
        (
            "tests/fuzz/core_fuzzer.c",
            (f'-DSSE_SANSIO_ROOT="{root}"', f'-DSSE_SANSIO_PYTHONHOME="{home}"'),
        ),
    ):
        target = str(build / (Path(source).stem + ".o"))
        session.run(
            clang, *instrument, *defines, "-c", str(root / source), "-o", target, external=True
        )
        objects.append(target)
    binary = str(build / "core_fuzzer")
    link = (f"-L{libdir}", f"-lpython{version}", f"-Wl,-rpath,{libdir}")
    session.run(
        clang, "-fsanitize=fuzzer,address,undefined", *objects, *link, "-o", binary, external=True
    )
    seeds = str(build / "seeds")
    session.run("python", str(root / "tests" / "fuzz" / "core_seeds.py"), seeds)
    seconds = os.environ.get("FUZZ_SECONDS", "60")
    session.run(
        binary,
        f"-max_total_time={seconds}",
        "-max_len=256",
        "-print_final_stats=1",
        f"-artifact_prefix={build}/",
        *session.posargs,
        str(build / "corpus"),
        seeds,
        external=True,
        env={
            "ASAN_OPTIONS": "malloc_context_size=4",
            "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1",
        },
    )
