"""The cost of telemetry: ``python -m bench.telemetry_bench [--repeats 5] [--seconds 3]``.

Our echo server (bench/servers/ours_stdio.py) with telemetry off (no
``Telemetry``: the code path of a runtime without it) and on (``BENCH_TELEMETRY=on``:
the OpenTelemetry SDK recording a span and the metrics of every request,
bench/servers/telemetry_on.py), in alternating trials:

* stdio: tools/call round trips at 16 in flight (bench/roundtrip.py, our client);
* the server alone over HTTP: uvicorn (h11), wrk at 16 connections, handshake
  session (bench/http_server_bench.py).

For each: requests per second (median of the trials) and the server's CPU time
per request; "on" is stated as the added server CPU per request. With
``--today CHECKOUT`` (a tree without telemetry, e.g. the main branch's) "off"
is also measured against it. Prints one JSON object and, on stderr, the rows.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from . import processes
from .http_server_bench import WrkMissing, find_wrk, load, lua_script, prepare, serve
from .roundtrip import free_port, wait_for_port

ROOT = Path(__file__).resolve().parent.parent
MODES = ("off", "on")
TODAY = "today"  # telemetry off, on the runtime of another checkout (--today)
today_tree: Path | None = None


def _env(mode: str) -> dict[str, str]:
    env = {**os.environ, "BENCH_TELEMETRY": "off" if mode == TODAY else mode}
    if mode == TODAY:
        assert today_tree is not None
        ours = [str(today_tree / part) for part in ("runtime", "generated", "codegen")]
        env["PYTHONPATH"] = os.pathsep.join([*ours, env.get("PYTHONPATH", "")])
    return env


def stdio_trial(mode: str, seconds: float) -> dict[str, float]:
    out = processes.run_part(
        [sys.executable, "-m", "bench.roundtrip", "ours", "stdio", "--server", "ours"]
        + ["--calls", "0", "--seconds", str(seconds), "--in-flight", "16"],
        cwd=ROOT,
        timeout=600,
        env=_env(mode),
    )
    row = json.loads(out.stdout)["throughput"][0]
    return {"rps": row["rps"], "server_cpu_us": row["server_cpu_s"] * 1e6}


def http_trial(wrk: str, mode: str, seconds: float) -> dict[str, float]:
    port = free_port()
    previous = dict(os.environ)
    os.environ.update(_env(mode))  # inherited by the server process serve() starts
    try:
        process = serve("ours", "handshake", "uvicorn-h11", port)
    finally:
        os.environ.clear()
        os.environ.update(previous)
    try:
        wait_for_port(port, process)
        session_id = prepare(port, "ours", "handshake")
        with tempfile.TemporaryDirectory() as folder:
            script = Path(folder) / "post.lua"
            script.write_text(lua_script("handshake", session_id))
            load(wrk, port, script, 16, 1.0, process.pid)  # warm-up
            row = load(wrk, port, script, 16, seconds, process.pid)
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return {"rps": row["rps"], "server_cpu_us": row["server_cpu_us_per_request"]}


def summary(trials: dict[str, list[dict[str, float]]]) -> dict[str, Any]:
    found: dict[str, Any] = {"trials": trials}
    for mode in trials:
        found[mode] = {
            key: statistics.median(t[key] for t in trials[mode]) for key in ("rps", "server_cpu_us")
        }
    found["on_over_off_rps"] = found["on"]["rps"] / found["off"]["rps"]
    found["added_server_cpu_us"] = found["on"]["server_cpu_us"] - found["off"]["server_cpu_us"]
    if TODAY in found:
        found["off_over_today_server_cpu"] = (
            found["off"]["server_cpu_us"] / found[TODAY]["server_cpu_us"]
        )
        found["off_over_today_rps"] = found["off"]["rps"] / found[TODAY]["rps"]
    return found


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--parts", default="stdio,http")
    parser.add_argument(
        "--today",
        type=Path,
        help="a checkout without telemetry (e.g. the main branch's) to measure 'off' against",
    )
    options = parser.parse_args()
    parts = options.parts.split(",")
    global today_tree
    today_tree = options.today
    modes = (*MODES, TODAY) if today_tree is not None else MODES
    result: dict[str, Any] = {"repeats": options.repeats, "seconds": options.seconds}
    if "stdio" in parts:
        trials: dict[str, list[dict[str, float]]] = {mode: [] for mode in modes}
        for r in range(options.repeats):
            for mode in modes if r % 2 == 0 else modes[::-1]:
                trials[mode].append(stdio_trial(mode, options.seconds))
        result["stdio"] = summary(trials)
    if "http" in parts:
        try:
            wrk = find_wrk()
        except WrkMissing as error:
            result["http"] = {"skipped": str(error)}
        else:
            trials = {mode: [] for mode in modes}
            for r in range(options.repeats):
                for mode in modes if r % 2 == 0 else modes[::-1]:
                    trials[mode].append(http_trial(wrk, mode, options.seconds))
            result["http"] = summary(trials)
    for part, label in (("stdio", "stdio, 16 in flight"), ("http", "server alone (uvicorn-h11)")):
        found = result.get(part)
        if not found or "skipped" in found:
            continue
        print(
            f"telemetry {label}: off {found['off']['rps']:,.0f} req/s,"
            f" on {found['on']['rps']:,.0f} req/s ({found['on_over_off_rps']:.2f}x),"
            f" +{found['added_server_cpu_us']:.0f} µs server CPU per request",
            file=sys.stderr,
        )
        if TODAY in found:
            print(
                f"telemetry {label}: off / today: {found['off_over_today_rps']:.3f} in req/s,"
                f" {found['off_over_today_server_cpu']:.3f} in server CPU per request",
                file=sys.stderr,
            )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
