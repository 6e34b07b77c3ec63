"""examples/stdio_client.py runs to the end against any server, as the README
says: our example server and the official server-everything, whose tools,
prompts and resources differ."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from support.peers import everything_server

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "stdio_client.py"


def run_example(*command: str) -> str:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), *command],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    return done.stdout


def test_against_the_example_server() -> None:
    out = run_example()
    assert "echo -> ['hello']" in out
    assert "count -> ['counted to 3']" in out
    assert "sleep -> tools/call timed out" in out
    assert "complete review(language='p') -> ['python']" in out


@pytest.mark.node
def test_against_server_everything() -> None:
    server = everything_server()
    out = run_example(server.command, *server.args)
    assert "connected to mcp-servers/everything" in out
    assert "echo -> ['Echo: hello']" in out
    assert "prompt " in out
