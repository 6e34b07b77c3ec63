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
        "scaleout.redis_1w.handshake.rps",
        "scaleout.redis_2w.handshake.rps",
        "measured.scaleout",
        "conformance.2025_11_25.server",
        "conformance.2026_07_28.server",
        "conformance.2026_07_28.client",
        "conformance.sdk.2026_07_28.client",
        "reliability.malformed_inputs",
        "reliability.stdio_seconds",
    },
    "docs/guides/performance.md": {
        "measured.server",
        "server.ours.c16.p99_over_p50.range",
        "asgi.modern_over_handshake",
        "server.uvicorn.modern.ours.c16.cpu",
        "server.uvicorn.modern.echo.c16.cpu",
        "asgi.modern.ours",
        "server.uvicorn.modern.ours.c16.rps",
        "server.uvicorn.modern.c16.ratio",
        "client.modern.ratio",
    },
    "docs/index.md": {
        "codec.decode_payload.range",
        "codec.decode_payload.resources_read_result_1_mib_blob.slower",
        "stdio.p50.ratio",
        "stdio.rps16.ratio",
        "imports.ratio",
        "memory.per_session.ratio",
    },
    "docs/guides/scaling.md": {
        "measured.scaleout",
        "scaleout.seconds",
        *(
            f"scaleout.{store}_{n}w.{wire}.{measure}"
            for store in ("memory", "redis")
            for n in (1, 2)
            for wire in ("modern", "handshake")
            for measure in ("rps", "p99")
            if (store, n, wire) != ("memory", 2, "handshake")
        ),
        "scaleout.memory_2w.handshake.refused",
        *(
            f"soak.{n}w.{measure}"
            for n in (2, 4)
            for measure in (
                "cause.requests_failed",
                "cause.tasks_failed",
                "redis_connections_peak",
                "http_connections.killed",
                "http_connections.others",
                "tracebacks",
                "failed_after_kill",
            )
        ),
        *(f"soak.mix.{kind}" for kind in ("session", "resume", "modern", "task", "listen")),
        "scaleout.memory.modern.scaling",
        "scaleout.redis.modern.scaling",
        "scaleout.redis.handshake.scaling",
        *(
            f"soak.{n}w.{measure}"
            for n in (2, 4)
            for measure in (
                "rps",
                "rps_first_99_percent",
                "p50",
                "p99",
                "answered",
                "jsonrpc_errors",
                "transport_errors",
                "neither_answered_nor_error",
                "hung",
                "duplicates",
                "commands",
                "round_trips",
                "steady.round_trips",
                "steady.commands",
                "steady_slow.round_trips",
                "steady_slow.commands",
            )
        ),
    },
    "docs/guides/benchmarks.md": {
        "stdio.p50.ratio",
        "stdio.rps16.ours",
        "stdio.rps16.ratio",
        "stdio_modern.rps16.ratio",
        "http.rps16.ratio",
        "http_modern.rps16.ratio",
        "imports.ratio",
        "memory.per_session.ratio",
        "codec.encode.range",
        "codec.decode_payload.floor.range",
        "codec.decode_payload.tools_list_result_100_tools.floor",
        "codec.decode_payload.tools_call_result_text.floor_vs_sdk",
        "client.modern.aiohttp",
        "target.stdio_16",
        "target.decode_vs_sdk",
        "target.bindings_over_untyped.margin",
        "http.cpu16.client.ours.range",
        "http.cpu16.server.sdk.range",
    },
    "docs/guides/servers.md": {
        "target.app_over_generated_16",
        "target.app_vs_sdk_16",
        "target.app_schema_vs_sdk",
    },
    "docs/guides/conformance.md": {
        "conformance.suite",
        "conformance.2025_11_25.server_required",
        "conformance.2026_07_28.client_checks",
        "conformance.sdk.2026_07_28.client_required_checks",
        "reliability.malformed_inputs",
    },
}


def test_every_quoted_figure_is_the_written_results() -> None:
    assert figures.disagreements() == []


@pytest.mark.parametrize("page", QUOTED)
def test_the_pages_quote_their_benchmark_figures_by_name(page: str) -> None:
    named = {marker["name"] for marker in figures.MARKER.finditer((ROOT / page).read_text())}
    assert QUOTED[page] <= named, sorted(QUOTED[page] - named)


def test_a_range_is_the_least_and_the_greatest_of_its_rows() -> None:
    """A range a page quotes ("1.7x to 11x faster") is computed from the rows it
    summarises, so a new run that moves one end moves the page."""

    def codec(operation: str, kind: str, ours_over_sdk: float, floor: float) -> dict[str, object]:
        ours = {"median_s": 1e-6}
        sdk = {"median_s": 1e-6 / ours_over_sdk}
        return {
            "operation": operation,
            "kind": kind,
            "ours": ours,
            "sdk": sdk,
            "floor": {"median_s": 1e-6 / floor},
            "ours_over_sdk": ours_over_sdk,
            "ours_over_floor": floor,
        }

    values = figures.figures(
        {
            "codec": [
                codec("decode payload", "initialize request", 1 / 8.04, 0.80),
                codec("decode payload", "tools/list result", 1 / 1.91, 1.35),
                codec("decode payload", "blob", 1.6, 1.04),
                codec("encode payload", "initialize request", 1 / 1.7, 1.0),
                codec("encode message", "progress notification", 1 / 11.2, 1.9),
            ]
        }
    )
    assert values["codec.decode_payload.range"] == "1.9x to 8.0x"
    assert values["codec.encode.range"] == "1.7x to 11x"
    assert values["codec.decode_payload.floor.range"] == "0.80x to 1.04x"


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
    import mcpbind.cli._entry  # noqa: F401  (registers the commands of every module)
    from mcpbind.cli._commands import main

    guide = (ROOT / "docs" / "guides" / "cli.md").read_text()
    missing = [name for name in main.commands if f"mcpx {name}" not in guide]
    assert not missing, missing
