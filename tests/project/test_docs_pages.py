"""The figures README.md and docs/ quote come from one source, the written
benchmark results (bench/results.json), through the markers bench/figures.py
fills; a page whose figure differs from the results fails here. And the pages
that tell a reader what to install list every extra the project declares, and
the mcpx guide every command mcpx has."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from bench import figures

ROOT = Path(__file__).resolve().parents[2]

# The figures the issue found quoted differently from page to page (the home
# page had 7x and 42x where the README and the Benchmarks page had 8.6x and
# 48.2x), and the others these pages quote: each page names them by marker.
QUOTED = {
    "README.md": {
        "stdio.p50.ratio",
        "stdio.rps16.ours",
        "stdio.rps16.ratio",
        "http.rps16.ratio",
        "http_modern.rps16.ratio",
        "imports.ratio",
        "memory.per_session.ratio",
        "app.rps16.ratio",
        "server.uvicorn.modern.c16.ratio",
        "server.uvicorn.handshake.c16.defaults_ratio",
    },
    "docs/guides/performance.md": {
        "asgi.modern.ours",
        "server.uvicorn.modern.ours.c16.rps",
        "server.uvicorn.modern.c16.ratio",
        "client.modern.ratio",
    },
    "docs/index.md": {"stdio.p50.ratio", "stdio.rps16.ratio", "imports.ratio"},
    "docs/guides/benchmarks.md": {
        "stdio.p50.ratio",
        "stdio.rps16.ours",
        "stdio.rps16.ratio",
        "stdio_modern.rps16.ratio",
        "http.rps16.ratio",
        "http_modern.rps16.ratio",
        "imports.ratio",
        "memory.per_session.ratio",
    },
}


def test_every_quoted_figure_is_the_written_results() -> None:
    assert figures.disagreements() == []


@pytest.mark.parametrize("page", QUOTED)
def test_the_pages_quote_their_benchmark_figures_by_name(page: str) -> None:
    named = {marker["name"] for marker in figures.MARKER.finditer((ROOT / page).read_text())}
    assert QUOTED[page] <= named, sorted(QUOTED[page] - named)


def test_a_page_that_disagrees_is_named_and_the_command_mends_it(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    shutil.copy(ROOT / "README.md", tmp_path / "README.md")
    page = tmp_path / "docs" / "index.md"
    page.write_text(
        "stdio round trips <!-- figure: stdio.p50.ratio -->7x<!-- /figure --> lower latency,\n"
        "<!-- figure: stdio.no_such_figure -->1x<!-- /figure -->\n"
    )
    found = figures.disagreements(tmp_path)
    assert len(found) == 2
    assert found[0].startswith("docs/index.md:1: stdio.p50.ratio says '7x', the results '")
    assert found[1] == "docs/index.md:2: unknown figure 'stdio.no_such_figure'"
    with pytest.raises(ValueError, match="stdio.no_such_figure"):
        figures.write(tmp_path)
    page.write_text("<!-- figure: stdio.p50.ratio -->7x<!-- /figure --> lower latency\n")
    assert figures.write(tmp_path) == [page]
    assert figures.disagreements(tmp_path) == []


def test_the_check_command_finds_nothing_to_mend_in_the_tree() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench.figures", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stdout) == (0, "")


def extras_listed(page: Path) -> set[str]:
    """The extras named in the first column of a page's table of extras."""
    names: set[str] = set()
    for line in page.read_text().splitlines():
        cells = line.split("|")
        if len(cells) > 2 and cells[1].strip().startswith("`"):
            names.update(re.findall(r"`([a-z]+)`", cells[1]))
    return names


@pytest.mark.parametrize("page", ["README.md", "docs/guides/getting-started.md"])
def test_the_install_sections_list_every_extra(page: str) -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = set(project["optional-dependencies"])
    assert declared <= extras_listed(ROOT / page), sorted(declared - extras_listed(ROOT / page))


def test_the_mcpx_guide_shows_every_command() -> None:
    import mcp_runtime.cli.entry  # noqa: F401  (registers the commands of every module)
    from mcp_runtime.cli.commands import main

    guide = (ROOT / "docs" / "guides" / "cli.md").read_text()
    missing = [name for name in main.commands if f"mcpx {name}" not in guide]
    assert not missing, missing
