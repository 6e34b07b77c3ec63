"""The documentation site reads in a real browser: every page, laid out by
headless Chromium at a desktop width (1280 px) and a phone's (390 px), scrolls
sideways only inside its code blocks and tables, every code block wider than
its box scrolls on its own rather than being cut, and every link inside the
site reaches a page and an anchor that exist.

The site is built as CI builds it (``mkdocs build --strict``) into a scratch
directory and served over loopback HTTP, since its links are directory URLs
(``guides/cli/``). A screenshot of the home page at each width is kept under
build/docs-site/ to look at.
"""

from __future__ import annotations

import asyncio
import functools
import http.server
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest
from support.chromium import Chromium
from support.everything_http import free_port

pytestmark = pytest.mark.peers

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "build" / "docs-site"
WIDTHS = {"desktop": (1280, 900, False), "phone": (390, 844, True)}

# What a page's layout and links are, measured after two animation frames (the
# theme's script has wrapped the tables by then). A code block is "cut" when its
# box sticks out of the window, or when its text is wider than its box and the
# element that overflows does not both scroll sideways and show it: overlay
# scroll bars (macOS, phones) stay hidden until one scrolls, so the block must
# carry the edge shadows of docs/stylesheets/extra.css (a gradient background
# that scrolls with the text).
SURVEY = """
new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done))).then(() => {
  const root = document.documentElement;
  const column = document.querySelector('.md-content__inner') || document.body;
  const inside = el => el.closest('pre, .md-typeset__scrollwrap, .md-search, .md-sidebar');
  const label = el => (el.textContent || '').trim().split('\\n')[0].slice(0, 60);
  const cut = [], scrolling = [];
  const shows = el => {
    const style = getComputedStyle(el);
    return ['auto', 'scroll'].includes(style.overflowX)
      && style.backgroundImage.includes('gradient') && style.backgroundAttachment.includes('local');
  };
  for (const pre of column.querySelectorAll('pre')) {
    const code = pre.querySelector('code') || pre;
    const wide = [pre, code].filter(el => el.scrollWidth > el.clientWidth + 1);
    if (wide.length) scrolling.push(label(pre));
    const box = pre.getBoundingClientRect();
    if (!wide.every(shows) || box.left < -1 || box.right > innerWidth + 1) cut.push(label(pre));
  }
  const sticking = [];
  if (root.scrollWidth > innerWidth) {
    for (const el of document.body.querySelectorAll('*')) {
      if (el.getBoundingClientRect().right > innerWidth + 1 && !inside(el)) {
        sticking.push(el.tagName.toLowerCase() + (el.className ? '.' + el.className : '')
                      + ': ' + label(el));
        if (sticking.length >= 5) break;
      }
    }
  }
  return {
    overflow: root.scrollWidth - innerWidth,
    sticking,
    cut,
    scrolling,
    escaped: [...column.querySelectorAll('td code, th code')]
      .filter(el => el.textContent.includes('\\\\|')).map(label),
    links: [...document.querySelectorAll('a[href]')].map(a => a.href),
    ids: [...document.querySelectorAll('[id], a[name]')].map(el => el.id || el.name),
  };
})
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    built = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(built)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    return built


@pytest.fixture(scope="module")
def served(site: Path) -> Iterator[str]:
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", free_port()), functools.partial(Quiet, directory=str(site))
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def pages(site: Path) -> list[str]:
    """The site's pages as paths below its root (``guides/cli/``), the 404 page aside."""
    found = []
    for page in sorted(site.rglob("index.html")):
        relative = page.parent.relative_to(site).as_posix()
        found.append("" if relative == "." else relative + "/")
    return found


async def survey(base: str, paths: list[str]) -> dict[tuple[str, str], dict[str, Any]]:
    # Each page is loaded once and laid out again at each width (the theme's layout
    # follows media queries), which halves the time of the survey.
    measured = {}
    async with Chromium() as browser:
        for path in paths:
            await browser.resize(*WIDTHS["desktop"])
            await browser.open(base + path)
            for width_name, (width, height, mobile) in WIDTHS.items():
                await browser.resize(width, height, mobile)
                measured[width_name, path] = await browser.evaluate(SURVEY)
                if path == "":
                    await browser.screenshot(SCREENSHOTS / f"home-{width_name}.png")
    return measured


@pytest.fixture(scope="module")
def measured(site: Path, served: str) -> dict[tuple[str, str], dict[str, Any]]:
    paths = pages(site)
    assert len(paths) > 20, paths
    return asyncio.run(survey(served, paths))


@pytest.mark.parametrize("width", WIDTHS)
def test_no_page_scrolls_sideways_outside_its_code_blocks(
    measured: dict[tuple[str, str], dict[str, Any]], width: str
) -> None:
    wide = {
        path or "/": f"{found['overflow']} px too wide: {found['sticking']}"
        for (name, path), found in measured.items()
        if name == width and found["overflow"] > 0
    }
    assert not wide, wide


@pytest.mark.parametrize("width", WIDTHS)
def test_every_code_block_wider_than_its_box_scrolls_on_its_own(
    measured: dict[tuple[str, str], dict[str, Any]], width: str
) -> None:
    cut = {
        path or "/": found["cut"]
        for (name, path), found in measured.items()
        if name == width and found["cut"]
    }
    assert not cut, cut


def test_no_table_shows_an_escaped_pipe_in_its_code(
    measured: dict[tuple[str, str], dict[str, Any]],
) -> None:
    """Python-Markdown keeps a pipe inside a table's code span, so a GitHub-style ``\\|``
    shows its backslash on the site."""
    escaped = {
        path or "/": found["escaped"]
        for (name, path), found in measured.items()
        if name == "desktop" and found["escaped"]
    }
    assert not escaped, escaped


def test_every_link_inside_the_site_reaches_a_page_and_anchor(
    measured: dict[tuple[str, str], dict[str, Any]], site: Path, served: str
) -> None:
    ids = {path: set(found["ids"]) for (name, path), found in measured.items() if name == "desktop"}
    broken = set()
    for (name, page), found in measured.items():
        if name != "desktop":
            continue
        for link in found["links"]:
            if not link.startswith(served):
                continue
            parts = urlsplit(link)
            path = unquote(parts.path).removeprefix("/")
            target = site / path / "index.html" if path == "" or path.endswith("/") else site / path
            if not target.is_file():
                broken.add(f"{page or '/'} -> {link}: no such page")
            elif parts.fragment and unquote(parts.fragment) not in ids.get(path, set()):
                if target.name == "index.html":
                    broken.add(f"{page or '/'} -> {link}: no such anchor")
    assert not broken, sorted(broken)


def test_the_quick_start_fits_its_box_at_desktop_width(
    measured: dict[tuple[str, str], dict[str, Any]],
) -> None:
    """The quick start (README.md, included in Getting started) is read at 1280 px
    without scrolling any of its code blocks sideways."""
    assert measured["desktop", "guides/getting-started/"]["scrolling"] == []
