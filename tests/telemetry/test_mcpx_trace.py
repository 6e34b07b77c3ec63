"""``mcpx --trace`` prints the spans of a call as a tree with timings: its own
(the routed call, the client request), the gateway's it started and, through
it, the backend's, each server exporting its spans to mcpx over OTLP/HTTP."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

BACKEND = textwrap.dedent("""
    from mcpbind.app import App

    app = App("backend")

    @app.tool()
    def hello(name: str) -> str:
        "Greet."
        return f"hello {name}"

    app.run("stdio")
    """)


def test_mcpx_trace_prints_the_client_gateway_and_backend_spans_as_one_tree(
    tmp_path: Path,
) -> None:
    (tmp_path / "backend.py").write_text(BACKEND)
    gateway = tmp_path / "gateway.json"
    gateway.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "backend": {"command": sys.executable, "args": [str(tmp_path / "backend.py")]}
                }
            }
        )
    )
    config = tmp_path / "mcpx.json"
    serve = ["-m", "mcpbind.cli", "serve", str(gateway)]
    config.write_text(
        json.dumps({"mcpServers": {"gw": {"command": sys.executable, "args": serve}}})
    )
    done = subprocess.run(
        [sys.executable, "-m", "mcpbind.cli", "call", "backend_hello", "name=ann"]
        + [
            "--config",
            str(config),
            "--server",
            "gw",
            "--trace",
            "--protocol-version",
            "2025-11-25",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "OTEL_SERVICE_NAME": ""},
    )
    assert done.returncode == 0, done.stderr
    assert "hello ann" in done.stdout
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    tree = lines[lines.index(next(line for line in lines if line.startswith("trace "))) :]
    routed = next(i for i, line in enumerate(tree) if "gw: tools/call backend_hello" in line)
    sent = next(
        i
        for i, line in enumerate(tree)
        if "tools/call backend_hello" in line and " client " in line
    )
    front = next(
        i
        for i, line in enumerate(tree)
        if "tools/call backend_hello" in line and " server " in line
    )
    onward = next(
        i for i, line in enumerate(tree) if "tools/call hello" in line and " client " in line
    )
    served = next(
        i for i, line in enumerate(tree) if "tools/call hello" in line and " server " in line
    )
    assert routed < sent < front < onward < served, "\n".join(tree)
    assert " mcpx " in tree[sent] and " gateway " in tree[front] and " backend " in tree[served]
    timed = [line for line in tree if not line.startswith("trace ")]
    assert all(" ms" in line for line in timed), "\n".join(tree)
