"""The cost of telemetry: ``python -m bench --parts telemetry``, or alone
``python -m bench.telemetry_bench [--repeats 5] [--seconds 3]``.

Our echo server (bench/servers/ours_stdio.py) in three modes, in alternating trials:

* ``none``: the runtime without the telemetry code, the tree of the commit
  before it was merged (``--baseline REV``, default found by git: the first
  parent of the merge that added mcpbind/telemetry), exported with
  ``git archive`` to a scratch folder; or the runtime of another checkout
  (``--today CHECKOUT``);
* ``off``: this runtime without a ``Telemetry`` (the default);
* ``on`` (``BENCH_TELEMETRY=on``): the OpenTelemetry SDK recording a span and
  the metrics of every request, spans batched to an exporter that drops them,
  metrics aggregated for an in-memory reader (bench/servers/telemetry_on.py).

Rows:

* stdio: tools/call round trips at 16 in flight (bench/roundtrip.py, our client);
* the server alone over HTTP: uvicorn (h11), wrk at 16 connections, handshake
  session (bench/http_server_bench.py).

For each: requests per second (median of the trials) and the server's CPU time
per request; "off" is stated against "none" (the issue asks for within 2%),
"on" as the server CPU it adds per request. Without git (or ``--baseline
''``) there is no "none" and only off and on are compared. Prints one JSON
object and, on stderr, the rows.
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
from .http_server_bench import WrkMissing, find_wrk, load, lua_script, prepare
from .roundtrip import free_port, wait_for_port

ROOT = Path(__file__).resolve().parent.parent
MODES = ("off", "on")
NONE = "none"  # the runtime without the telemetry code (another tree: --baseline, --today)
TELEMETRY_PACKAGE = "runtime/mcpbind/telemetry/__init__.py"
today_tree: Path | None = None


# The runtime just before the telemetry code was merged: the first parent of that merge.
# Named by its commit rather than found by path, because the package has been renamed
# since; its own benchmark code (of that commit) runs it, under the names it had then.
BASELINE = "a1a6387428ead4401e729c4c187187a9b6d99f4d"


def baseline_commit() -> str | None:
    """The runtime as it was just before telemetry (None without git or without
    that history, as in a shallow clone)."""
    try:
        subprocess.run(
            ["git", "cat-file", "-e", f"{BASELINE}^{{commit}}"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    return BASELINE


def export_tree(revision: str, folder: Path) -> Path:
    """The runtime, generated types and generator of ``revision``, written
    under ``folder`` by ``git archive`` (the checkout is left as it is)."""
    archive = subprocess.run(
        ["git", "archive", "--format=tar", revision, "runtime", "generated", "codegen", "bench"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder


def _env(mode: str) -> dict[str, str]:
    env = {**os.environ, "BENCH_TELEMETRY": "off" if mode == NONE else mode}
    if mode == NONE:
        # The other tree's runtime, run by its own benchmark code (cwd: that tree).
        assert today_tree is not None
        ours = [str(today_tree / part) for part in ("runtime", "generated", "codegen")]
        env["PYTHONPATH"] = os.pathsep.join([*ours, env.get("PYTHONPATH", "")])
    return env


def _tree(mode: str) -> Path:
    """Where the benchmark code of ``mode`` runs from."""
    if mode == NONE:
        assert today_tree is not None
        return today_tree
    return ROOT


def stdio_trial(mode: str, seconds: float) -> dict[str, float]:
    out = processes.run_part(
        [sys.executable, "-m", "bench.roundtrip", "ours", "stdio", "--server", "ours"]
        + ["--calls", "0", "--seconds", str(seconds), "--in-flight", "16"],
        cwd=_tree(mode),
        timeout=600,
        env=_env(mode),
    )
    row = json.loads(out.stdout)["throughput"][0]
    return {"rps": row["rps"], "server_cpu_us": row["server_cpu_s"] * 1e6}


def http_trial(wrk: str, mode: str, seconds: float) -> dict[str, float]:
    port = free_port()
    previous = dict(os.environ)
    os.environ.update(_env(mode))  # inherited by the server process started below
    try:
        process = subprocess.Popen(
            [sys.executable, "bench/servers/asgi_serve.py", "ours", "handshake", "uvicorn-h11"]
            + [str(port)],
            cwd=_tree(mode),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
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
    if NONE in found:
        found["off_over_none_server_cpu"] = (
            found["off"]["server_cpu_us"] / found[NONE]["server_cpu_us"]
        )
        found["off_over_none_rps"] = found["off"]["rps"] / found[NONE]["rps"]
    return found


def rows(result: dict[str, Any]) -> list[str]:
    """One or two lines per measured row."""
    lines = []
    for part, label in (("stdio", "stdio, 16 in flight"), ("http", "server alone (uvicorn-h11)")):
        found = result.get(part)
        if not found or "skipped" in found:
            continue
        lines.append(
            f"telemetry {label}: off {found['off']['rps']:,.0f} req/s,"
            f" on {found['on']['rps']:,.0f} req/s ({found['on_over_off_rps']:.2f}x),"
            f" +{found['added_server_cpu_us']:.0f} µs server CPU per request"
        )
        if NONE in found:
            lines.append(
                f"telemetry {label}: off / none: {found['off_over_none_rps']:.3f} in req/s,"
                f" {found['off_over_none_server_cpu']:.3f} in server CPU per request"
            )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.telemetry_bench",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--parts", default="stdio,http")
    parser.add_argument(
        "--baseline",
        default=None,
        help="the commit whose runtime is 'none' (default: the one before telemetry was"
        " merged; '' for no 'none')",
    )
    parser.add_argument(
        "--today",
        type=Path,
        help="a checkout without telemetry (e.g. the main branch's) as 'none', instead of"
        " --baseline",
    )
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mcp-bench-none-") as scratch:
        global today_tree
        result: dict[str, Any] = {"repeats": options.repeats, "seconds": options.seconds}
        if options.today is not None:
            today_tree = options.today
            result["none"] = str(options.today)
        else:
            revision = baseline_commit() if options.baseline is None else options.baseline
            if revision:
                today_tree = export_tree(revision, Path(scratch))
                result["none"] = revision
        measure(options.parts.split(","), options.repeats, options.seconds, result)
    for line in rows(result):
        print(line, file=sys.stderr)
    print(json.dumps(result))


def measure(parts: list[str], repeats: int, seconds: float, result: dict[str, Any]) -> None:
    """Alternating trials of every mode, for each part, into ``result``."""
    modes = (NONE, *MODES) if today_tree is not None else MODES
    if "stdio" in parts:
        trials: dict[str, list[dict[str, float]]] = {mode: [] for mode in modes}
        for r in range(repeats):
            for mode in modes if r % 2 == 0 else modes[::-1]:
                trials[mode].append(stdio_trial(mode, seconds))
        result["stdio"] = summary(trials)
    if "http" in parts:
        try:
            wrk = find_wrk()
        except WrkMissing as error:
            result["http"] = {"skipped": str(error)}
        else:
            trials = {mode: [] for mode in modes}
            for r in range(repeats):
                for mode in modes if r % 2 == 0 else modes[::-1]:
                    trials[mode].append(http_trial(wrk, mode, seconds))
            result["http"] = summary(trials)


if __name__ == "__main__":
    main()
