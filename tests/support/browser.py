"""Headless Chromium driven by Playwright for Python, for the tests of ``mcpx ui``.

The browser is Debian's ``chromium`` (installed with apt-get where missing, as
root; see support.chromium), given to Playwright as ``executable_path``: no
browser is downloaded (``playwright install`` is never run). Playwright itself
comes with the ``test`` extra; where it is not importable it is installed with
pip, its driver shipping in its wheel. Playwright's driver is a Node program
(in the wheel), so the tests that use it are marked ``node`` as well as
``peers``.
"""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager as ContextManager
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from support.chromium import chromium_binary
from support.needs import needs

if TYPE_CHECKING:
    from playwright.sync_api import Browser

PLAYWRIGHT = "playwright>=1.49"
MCPX = Path(sys.executable).with_name("mcpx")
STARTUP_TIMEOUT = 120.0


def _import_playwright() -> None:
    try:
        importlib.import_module("playwright.sync_api")
    except ImportError:
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", PLAYWRIGHT],
            check=True,
            capture_output=True,
        )
        importlib.invalidate_caches()
        importlib.import_module("playwright.sync_api")


@contextmanager
def chromium() -> Iterator[Browser]:
    """One headless Chromium (Debian's), closed at the end."""
    needs("peers", "headless Chromium (Playwright)")
    needs("node", "Playwright's driver (Node)")
    _import_playwright()
    from playwright.sync_api import sync_playwright

    arguments = ["--no-sandbox"] if os.geteuid() == 0 else []  # no sandbox of its own as root
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_binary(), args=arguments)
        try:
            yield browser
        finally:
            browser.close()


def mcpx_ui(*server: str, env: dict[str, str] | None = None) -> ContextManager[str]:
    """``mcpx ui --port 0 -- SERVER...`` running; the URL of its page."""
    return mcpx_page("ui", "--port", "0", "--", *server, env=env)


@contextmanager
def mcpx_page(*arguments: str, env: dict[str, str] | None = None) -> Iterator[str]:
    """``mcpx ARGUMENTS...`` (ui, or dev --ui) running; the URL of its page."""
    process = subprocess.Popen(
        [str(MCPX), *arguments],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )
    try:
        line: list[str] = []
        assert process.stdout is not None
        reader = threading.Thread(target=lambda: line.append(process.stdout.readline()))  # type: ignore[union-attr]
        reader.start()
        reader.join(STARTUP_TIMEOUT)
        found = re.fullmatch(r"mcpx ui: (http://127\.0\.0\.1:\d+/)\n", line[0] if line else "")
        if found is None:
            process.kill()
            _, errors = process.communicate()
            raise AssertionError(f"mcpx ui did not start: {line!r} {errors}")
        yield found[1]
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()
