"""``python -m bench`` measures the HTTP stack piece by piece: the app alone
in-process, the server alone under wrk, the client alone; each part runs on
its own (``--parts``) with tiny counts here (a smoke test: figures are not
judged), and a machine without wrk is told so plainly."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def bench(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bench", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_without_wrk_the_server_part_says_why(tmp_path: Path) -> None:
    missing = tmp_path / "wrk"
    done = bench("--parts", "server", "--wrk", str(missing), "--wrk-seconds", "1")
    assert done.returncode == 0, done.stderr
    reason = f"wrk: {missing} is not an executable file"
    # A long label is wrapped to fit 100 columns.
    assert f"server alone: not measured: {reason}" in " ".join(done.stdout.split())
    assert f"not measured: {reason}" in " ".join(done.stderr.split())


@pytest.mark.peers
def test_each_part_runs_with_tiny_counts(tmp_path: Path) -> None:
    # wrk on PATH, or installed with apt-get (CI runs as root); else the reason.
    found = subprocess.run(
        [sys.executable, "-c", "from bench.http_server_bench import find_wrk; print(find_wrk())"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert found.returncode == 0, found.stderr
    done = bench(
        "--parts", "asgi,server,client",
        "--asgi-requests", "60",
        "--wrk-seconds", "1",
        "--client-requests", "40",
        "--stacks", "granian",
        "--output", str(tmp_path),
        "--write",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    out = " ".join(done.stdout.split())  # long labels are wrapped to fit 100 columns
    assert out.startswith(
        "SHORTENED RUN (app alone (in-process ASGI), server alone (wrk), client alone)"
    )
    for row in (
        "app alone in-process (uvloop), 2026-07-28: time per request, 16 in flight",
        "app alone in-process (uvloop), handshake session: objects left in cycles per request",
        "server alone, granian, 2026-07-28, 16 connections: throughput",
        "server alone, granian, handshake session, 64 connections: latency p50 / p99",
        "client alone, 2026-07-28, 16 in flight",
        "app alone: a 2026-07-28 request costs no more than a handshake-session request",
        "≥4x the SDK client's requests per CPU second",
    ):
        assert row in out, row
    assert "FAIL" not in out
    results = json.loads((tmp_path / "results.json").read_text())
    asgi = {(r["impl"], r["wire"]): r for r in results["asgi"]["rows"]}
    # Ours leaves nothing to the cyclic collector, in either wire.
    assert asgi[("ours", "modern")]["cycles_per_request"] == 0
    assert asgi[("ours", "handshake")]["cycles_per_request"] == 0
    server = results["server"]["rows"]
    assert {(r["impl"], r["connections"]) for r in server} >= {
        ("ours", 16),
        ("sdk", 64),
        ("echo", 16),
    }
    assert all(r["requests"] > 0 and r["errors"]["status"] == 0 for r in server)
    clients = {r["client"] for r in results["client"]["rows"]}
    assert clients == {"ours", "sdk", "httpx2", "aiohttp"}
    assert "## The HTTP stack, piece by piece" in (tmp_path / "results.md").read_text()
