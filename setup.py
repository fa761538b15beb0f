"""Build the optional compiled core, sse_sansio/_receive/_core.c, or else the pure package.

``pip install .`` compiles the extension where a C compiler and the Python headers
exist.  If the compile fails, the build goes on without it and says so in a banner: the
package then runs its pure-Python core, and ``sse-sansio --version`` says "python".

Environment variables, read at build time:

- ``SSE_SANSIO_NO_EXTENSIONS=1``: do not build the extension (a pure ``py3-none-any``
  wheel: ``SSE_SANSIO_NO_EXTENSIONS=1 python -m pip wheel --no-deps .``).
- ``SSE_SANSIO_REQUIRE_EXTENSIONS=1``: a failed compile fails the build (CI sets it, so a
  broken build cannot pass on the fallback).

A wheel is tagged by what it holds: a platform wheel with the extension, a pure
``py3-none-any`` one when the compile failed and the build fell back (a wheel tagged
``cp311-linux_x86_64`` without any ``.so`` in it would be refused on other platforms for
no reason).

A successful build also copies the extension next to its source, as an editable install
would: the test suite imports the package from the checkout, so that ``pip install
".[test]" && pytest`` (the README's command) tests the compiled core.  Everything else
about the package is in pyproject.toml.
"""

from __future__ import annotations

import os
import platform
import shutil
import sys
from typing import Any

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import CCompilerError, ExecError, PlatformError

try:
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:  # pragma: no cover - setuptools < 70.1, which builds no wheel itself
    # pyproject.toml requires setuptools >= 77 for every pip build; an older one only
    # runs ``setup.py build_ext --inplace`` here, which needs no wheel command.
    bdist_wheel = None

BUILD_ERRORS = (CCompilerError, ExecError, PlatformError, OSError)


def _flag(name: str) -> bool:
    return os.environ.get(name, "") not in ("", "0")


class OptionalBuildExt(build_ext):
    """build_ext that falls back to the pure package when the compile fails."""

    def run(self) -> None:
        try:
            super().run()
        except BUILD_ERRORS as exc:
            self._fallback(exc)

    def build_extension(self, ext: Any) -> None:
        try:
            super().build_extension(ext)
        except BUILD_ERRORS as exc:
            self._fallback(exc)
            return
        if not self.inplace:
            built = self.get_ext_fullpath(ext.name)
            self.inplace = True
            try:
                beside_source = self.get_ext_fullpath(ext.name)
            finally:
                self.inplace = False
            if os.path.isdir(os.path.dirname(beside_source)):
                shutil.copyfile(built, beside_source)

    def _fallback(self, exc: BaseException) -> None:
        if _flag("SSE_SANSIO_REQUIRE_EXTENSIONS"):
            raise exc
        banner = "=" * 74
        print(
            f"{banner}\nWARNING: sse_sansio's compiled core could not be built ({exc}).\n"
            "Installing the pure-Python core instead: it is correct, only slower.\n"
            "sse_sansio.IMPLEMENTATION and `sse-sansio --version` say which core runs.\n"
            f"{banner}",
            file=sys.stderr,
        )


def _extensions() -> list[Extension]:
    if _flag("SSE_SANSIO_NO_EXTENSIONS") or platform.python_implementation() != "CPython":
        return []
    headers = [
        "_core_buffer.h",
        "_core_utf8.h",
        "_core_scan.h",
        "_core_decode.h",
        "_core_fields.h",
        "_core_modes.h",
    ]
    depends = [f"sse_sansio/_receive/{name}" for name in headers]
    return [
        Extension("sse_sansio._receive._core", ["sse_sansio/_receive/_core.c"], depends=depends)
    ]


def _commands() -> dict[str, Any]:
    commands: dict[str, Any] = {"build_ext": OptionalBuildExt}
    if bdist_wheel is not None:

        class TaggedByContents(bdist_wheel):  # type: ignore[misc]
            """bdist_wheel that tags a wheel pure when no extension was built into it."""

            def get_tag(self) -> tuple[str, str, str]:
                # Asked after the build (for the file name and the WHEEL file): only
                # then is it known whether the compile fell back.
                build_ext = self.get_finalized_command("build_ext")
                built = [build_ext.get_ext_fullpath(e.name) for e in build_ext.extensions]
                if not any(os.path.exists(path) for path in built):
                    self.root_is_pure = True
                tag: tuple[str, str, str] = super().get_tag()
                return tag

        commands["bdist_wheel"] = TaggedByContents
    return commands


setup(ext_modules=_extensions(), cmdclass=_commands())
