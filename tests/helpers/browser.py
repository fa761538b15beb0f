"""A headless Chromium for the tests that need a real browser (issue 33, item 8).

Decision: no Python browser package (playwright, selenium, pyppeteer): Debian's
``chromium`` binary, started on a URL, runs the page's JavaScript, and the page reports
what it saw by POSTing it back to the test's own server; the test then stops the
browser.  CI installs the package (.ci/run) and sets ``SSE_SANSIO_REQUIRE_BROWSER=1``:
there a missing browser fails the test.  Elsewhere it skips, saying why, as the
README's test command must pass on a machine with only Python and pip.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

NAMES = ("chromium", "chromium-browser")
# No first-run UI, no background traffic of its own, no GPU or sandbox (a container
# runs it as root), and HTTP/1.1 to the loopback server.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--mute-audio",
)


def browser_required() -> bool:
    """Whether the environment says a missing browser is a failure (CI)."""
    return os.environ.get("SSE_SANSIO_REQUIRE_BROWSER", "") not in ("", "0")


def chromium() -> str:
    """The Chromium binary; skips the test when there is none (fails when required)."""
    for name in NAMES:
        path = shutil.which(name)
        if path is not None:
            return path
    reason = "no chromium on PATH (apt-get install chromium; .ci/run does)"
    if browser_required():
        pytest.fail(f"SSE_SANSIO_REQUIRE_BROWSER is set but there is {reason}")
    pytest.skip(reason)


@contextlib.asynccontextmanager
async def browsing(url: str, profile: Path) -> AsyncIterator[Path]:
    """Chromium showing ``url`` until the block ends; yields the file of its stderr."""
    log = profile / "chromium.log"
    with log.open("wb") as stderr:
        process = await asyncio.create_subprocess_exec(
            chromium(),
            *FLAGS,
            f"--user-data-dir={profile / 'profile'}",
            url,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=stderr,
        )
        try:
            yield log
        finally:
            process.terminate()
            try:
                await asyncio.wait_for(process.wait(), 10)
            except asyncio.TimeoutError:  # it ignored SIGTERM
                process.kill()
                await process.wait()
