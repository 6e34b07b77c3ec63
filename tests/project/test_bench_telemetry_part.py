"""``python -m bench --parts telemetry`` measures, in one run, our echo server
without the telemetry code, with telemetry off and with it on, over stdio and
alone over HTTP, and judges "off" against no telemetry code (issue 46). A
smoke test with the quick counts: the figures are not judged."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bench.telemetry_bench import baseline_commit

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.peers
def test_the_telemetry_part_compares_no_code_off_and_on() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--parts", "telemetry", "--quick"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    table = " ".join(done.stdout.split())
    scratch = re.search(r"details are in (\S+)results\.md", " ".join(done.stderr.split()))
    assert scratch is not None, done.stderr
    results = json.loads((Path(scratch[1]) / "results.json").read_text())["telemetry"]
    # Without the history (a shallow clone) there is no runtime without the code to run.
    modes = ("none", "off", "on") if baseline_commit() else ("off", "on")
    for row, label in (("stdio", "stdio, 16 in flight"), ("http", "server alone (uvicorn h11)")):
        if "skipped" in results[row]:  # no wrk on this machine: said so in the table
            assert f"telemetry, {label} not measured" in table
            continue
        for mode in modes:
            assert results[row][mode]["rps"] > 0 and results[row][mode]["server_cpu_us"] > 0
        assert f"telemetry, {label}: telemetry on (OpenTelemetry SDK)" in table
        assert f"telemetry, {label}: server CPU added per request by telemetry on" in table
        if "none" in modes:
            assert f"telemetry, {label}: without the telemetry code" in table
            assert f"telemetry off within 2% of no telemetry code, {label}" in table
