"""``python -m bench``: this project against the official MCP Python SDK, side by side.

Run from the repository root. Measures, in one run:

1. decoding with validation and encoding per message kind (bench/codec_bench.py),
2. tools/call round trips over stdio (bench/roundtrip.py), with the initialize
   handshake (2025-11-25) and with the 2026-07-28 wire (server/discover, then
   a `_meta` envelope on every request),
3. the same over Streamable HTTP,
4. cold import time and server memory per idle HTTP session (bench/footprint.py),
5. the application layer (mcp_runtime.app) against the generated handler
   interface and MCPServer: stdio round trips at 16 in flight, schema
   derivation and argument validation of a 10-parameter tool, the per-call
   cost in process, and cold start (bench/app_bench.py),
6. the HTTP stack piece by piece (bench/http_stack.py): the app alone through
   ASGI in-process (``asgi``), the server alone under uvicorn (h11), uvicorn
   with httptools and uvloop, and granian, driven by wrk (``server``), and the
   client alone against one fast server (``client``), each beside the SDK and
   a floor (a bare ASGI JSON echo, raw HTTP clients),
7. scale-out: requests per second with 1 and 2 uvicorn workers, the
   in-process store against the Redis store, for 2026-07-28 requests and
   handshake sessions, and Redis commands per request (bench/scaleout_bench.py;
   needs redis-server),

prints a table of absolute figures and ratios (ours / SDK) and checks the
targets of the issue. With ``--write`` it also writes bench/results.json and
bench/results.md (the tracked figures); without it nothing is written. A run
shorter than the defaults (``--quick``, or fewer trials, seconds, calls or
repeats) is marked as such: its targets read "below (shortened run)" rather
than FAIL, since its figures are too noisy to judge them.

Parts: codec, stdio, stdio_modern, http, http_modern, imports, memory, app, asgi,
server, client, scaleout; the groups ``roundtrip`` (the four round-trip parts),
``modern`` (the two 2026-07-28 ones) and ``stack`` (asgi, server, client)
stand for their parts, e.g. ``--parts roundtrip``. A run of
some parts with ``--write`` keeps the other parts' figures from the
results.json already in the output directory (unless ``--no-keep``), and results.md says when and at which
commit each part was measured.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from . import http_stack

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

# glibc adapts its mmap threshold as large blocks come and go, which makes the
# cost of a 1 MiB string flip between two values from one run to the next;
# fixed thresholds keep the codec figures stable (both libraries run under them).
CODEC_ENV = {
    "MALLOC_MMAP_THRESHOLD_": str(64 * 1024 * 1024),
    "MALLOC_TRIM_THRESHOLD_": str(128 * 1024 * 1024),
}

PARTS = (
    "codec",
    "stdio",
    "stdio_modern",
    "http",
    "http_modern",
    "imports",
    "memory",
    "app",
    *http_stack.PARTS,
    "scaleout",
)
GROUPS = {
    "all": PARTS,
    "roundtrip": ("stdio", "stdio_modern", "http", "http_modern"),
    "modern": ("stdio_modern", "http_modern"),
    "stack": http_stack.PARTS,
}
# What each part measures, for the table of when parts were measured.
PART_ROWS = {
    "codec": "decode / encode",
    "stdio": "stdio (2025-11-25)",
    "stdio_modern": "stdio at 2026-07-28",
    "http": "Streamable HTTP (2025-11-25)",
    "http_modern": "Streamable HTTP at 2026-07-28",
    "imports": "cold import",
    "memory": "server RSS",
    "app": "application layer",
    **http_stack.PART_ROWS,
    "scaleout": "scale-out (workers, Redis store)",
}
# Round-trip parts: transport, protocol revision, label in the tables, in-flight counts.
ROUNDTRIPS = {
    "stdio": ("stdio", "2025-11-25", "stdio", [1, 16, 256]),
    "stdio_modern": ("stdio", "2026-07-28", "stdio at 2026-07-28", [1, 16, 256]),
    "http": ("http", "2025-11-25", "Streamable HTTP", [1, 16, 256]),
    "http_modern": ("http", "2026-07-28", "Streamable HTTP at 2026-07-28", [16]),
}

# Samples of a full run; a run with fewer is marked shortened.
CODEC_REPEATS, TRIALS, SECONDS, CALLS, IMPORT_SAMPLES = 9, 5, 2.0, 1000, 9

TARGETS = {
    "decode_vs_sdk": 4.0,  # SDK time / our time, every kind
    "decode_vs_floor": 1.1,  # our time / untyped msgspec time, every kind
    "stdio_16": 5.0,  # our requests/s / SDK requests/s, 16 in flight
    "http_16": 3.0,
    "import": 1 / 3,  # our import time / SDK import time
    "app_over_generated_16": 1.2,  # at most: generated-handler req/s / app req/s, stdio, 16 in flight
    "app_vs_sdk_16": 10.0,  # app req/s / SDK req/s
    "app_schema_vs_sdk": 5.0,  # SDK time / our time, derivation and validation of 10 parameters
}


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# ------------------------------------------------------------------ machine


def machine() -> dict[str, Any]:
    cpu = platform.processor() or "unknown"
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    versions: dict[str, str | None] = {}
    for dist in (
        "msgspec",
        "mcp",
        "pydantic",
        "pydantic-core",
        "httpx2",
        "httpcore2",
        "uvicorn",
        "starlette",
        "anyio",
        "sniffio",
    ):
        try:
            versions[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            versions[dist] = None
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = None
    return {
        "cpu_model": cpu,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "versions": versions,
        "commit": commit,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "load_average_at_start": os.getloadavg(),
    }


# ------------------------------------------------------------------ parts


def run_codec(repeats: int, batch_seconds: float) -> list[dict[str, Any]]:
    env = {**os.environ, **CODEC_ENV}
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.codec_bench",
            "--json",
            "--repeats",
            str(repeats),
            "--batch-seconds",
            str(batch_seconds),
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        check=True,
        text=True,
    )
    rows: list[dict[str, Any]] = json.loads(out.stdout)
    return rows


def _roundtrip(
    impl: str,
    server: str,
    transport: str,
    wire: str,
    calls: int,
    seconds: float,
    in_flight: list[int],
) -> dict[str, Any]:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.roundtrip",
            impl,
            transport,
            "--server",
            server,
            "--wire",
            wire,
            "--calls",
            str(calls),
            "--seconds",
            str(seconds),
            "--in-flight",
            ",".join(map(str, in_flight)),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        check=True,
        text=True,
        timeout=900,
    )
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def _summary(runs: list[dict[str, Any]], in_flight: list[int]) -> dict[str, Any]:
    summary: dict[str, Any] = {"trials": runs}
    if runs and runs[0]["latency"] is not None:
        summary["p50_s"] = statistics.median(t["latency"]["p50_s"] for t in runs)
        summary["p99_s"] = statistics.median(t["latency"]["p99_s"] for t in runs)
    for key in ("rps", "client_cpu_s", "server_cpu_s"):
        summary[key] = {
            str(n): statistics.median(t["throughput"][i][key] for t in runs)
            for i, n in enumerate(in_flight)
        }
    return summary


def run_roundtrips(
    transport: str,
    wire: str,
    repeats: int,
    calls: int,
    seconds: float,
    in_flight: list[int],
    cross: bool,
) -> dict[str, Any]:
    """Trials of each library's client against its own server (and, with
    ``cross``, against the other's, at 16 in flight), alternating; medians."""
    pairs = [("ours", "ours"), ("sdk", "sdk")]
    if cross:
        pairs += [("ours", "sdk"), ("sdk", "ours")]
    trials: dict[tuple[str, str], list[dict[str, Any]]] = {pair: [] for pair in pairs}
    for r in range(repeats):
        for impl, server in pairs if r % 2 == 0 else pairs[1::-1] + pairs[2:][::-1]:
            own = impl == server
            trial = _roundtrip(
                impl,
                server,
                transport,
                wire,
                calls if own else 0,
                seconds,
                in_flight if own else [16],
            )
            trials[(impl, server)].append(trial)
            rps = ", ".join(f"{t['in_flight']}: {t['rps']:.0f}/s" for t in trial["throughput"])
            latency = trial["latency"]
            lat = (
                f"p50 {latency['p50_s'] * 1e3:.3f} ms  p99 {latency['p99_s'] * 1e3:.3f} ms  "
                if latency
                else ""
            )
            log(
                f"  {transport} {wire} client {impl:4s} server {server:4s} trial {r + 1}/{repeats}: {lat}{rps}"
            )
    result: dict[str, Any] = {
        "wire": wire,
        "ours": _summary(trials[("ours", "ours")], in_flight),
        "sdk": _summary(trials[("sdk", "sdk")], in_flight),
    }
    if cross:
        result["ours_client_sdk_server"] = _summary(trials[("ours", "sdk")], [16])
        result["sdk_client_ours_server"] = _summary(trials[("sdk", "ours")], [16])
    return result


def run_app(repeats: int, calls: int, seconds: float, quick: bool) -> dict[str, Any]:
    """Part 5: stdio round trips of the app layer's echo server against the
    hand-written one and MCPServer (16 in flight, alternating), then the
    in-process measures of bench/app_bench.py."""
    pairs = [("ours", "app"), ("ours", "ours"), ("sdk", "sdk")]
    trials: dict[tuple[str, str], list[dict[str, Any]]] = {pair: [] for pair in pairs}
    for r in range(repeats):
        for impl, server in pairs if r % 2 == 0 else pairs[::-1]:
            trial = _roundtrip(impl, server, "stdio", "2025-11-25", calls, seconds, [16])
            trials[(impl, server)].append(trial)
            log(
                f"  app: client {impl:4s} server {server:4s} trial {r + 1}/{repeats}: {trial['throughput'][0]['rps']:.0f}/s"
            )
    counts = (
        ["--repeats", "2", "--number", "200", "--handler-calls", "2000", "--cold-trials", "2"]
        if quick
        else []
    )
    out = subprocess.run(
        [sys.executable, "-m", "bench.app_bench", "--json", *counts],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        check=True,
        text=True,
        timeout=900,
    )
    result: dict[str, Any] = json.loads(out.stdout)
    result["stdio"] = {
        f"{impl}_client_{server}_server": _summary(runs, [16])
        for (impl, server), runs in trials.items()
    }
    return result


def run_scaleout(seconds: float, quick: bool) -> dict[str, Any]:
    """Part 7: bench/scaleout_bench.py in a process of its own (it starts redis-server and uvicorn workers)."""
    counts = ["--seconds", str(seconds), "--connections", "4" if quick else "16"]
    out = subprocess.run(
        [sys.executable, "-m", "bench.scaleout_bench", "--json", *counts],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        check=True,
        text=True,
        timeout=900,
    )
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def scaleout_rows(part: dict[str, Any]) -> list[list[str]]:
    """Figure rows of the scale-out part (ours only: the SDK has no shared store)."""
    rows = []
    for key, label in (("memory_1w", "1 worker, in-process store"), ("memory_2w", "2 workers, in-process store"),
                       ("redis_1w", "1 worker, Redis store"), ("redis_2w", "2 workers, Redis store")):  # fmt: skip
        for wire, name in (("modern", "2026-07-28"), ("handshake", "one session")):
            figures = part[key][wire]
            if "not_applicable" in figures:
                rows.append(
                    [
                        f"scale-out {name}: {label}",
                        "not applicable",
                        "",
                        "",
                        "",
                        figures["not_applicable"],
                    ]
                )
                continue
            p99 = f", p99 {figures['p99_us'] / 1e3:.1f} ms" if "p99_us" in figures else ""
            rows.append([
                f"scale-out {name}: {label} (Redis commands/request: {figures['redis_commands_per_request']:.2f}{p99})",
                f"{figures['rps']:,.0f} req/s", "", "", "", "",
            ])  # fmt: skip
    return rows


def app_rows(part: dict[str, Any], shortened: bool) -> tuple[list[list[str]], list[list[str]]]:
    """Figure and target rows of the application layer part."""
    stdio = part["stdio"]
    app_rps = stdio["ours_client_app_server"]["rps"]["16"]
    generated_rps = stdio["ours_client_ours_server"]["rps"]["16"]
    sdk_rps = stdio["sdk_client_sdk_server"]["rps"]["16"]
    derive, validate = part["schema"]["derive_s"], part["schema"]["validate_s"]
    per_call = part["handler"]["per_call_s"]
    cold = part["cold_start"]
    rows = [
        [
            "app layer: stdio throughput, 16 in flight (vs MCPServer)",
            f"{app_rps:,.0f} req/s",
            f"{sdk_rps:,.0f} req/s",
            "",
            f"{app_rps / sdk_rps:.3f}",
            "",
        ],
        [
            "generated handlers: the same (vs MCPServer)",
            f"{generated_rps:,.0f} req/s",
            f"{sdk_rps:,.0f} req/s",
            "",
            f"{generated_rps / sdk_rps:.3f}",
            "",
        ],
        [
            "app layer: derive the schema of a 10-parameter tool",
            _us(derive["ours"]),
            _us(derive["sdk"]),
            "",
            f"{derive['ours'] / derive['sdk']:.3f}",
            "",
        ],
        [
            "app layer: validate its arguments",
            _us(validate["ours"]),
            _us(validate["sdk"]),
            "",
            f"{validate['ours'] / validate['sdk']:.3f}",
            "",
        ],
        [
            "tools/call in process: app layer / generated handler",
            _us(per_call["app"]),
            _us(per_call["generated"]),
            "",
            f"{per_call['app'] / per_call['generated']:.3f}",
            "",
        ],
        *(
            [
                f"tools/call in process through the route: middleware {label}",
                _us(cost),
                "",
                "",
                "",
                "",
            ]
            for label, cost in part.get("middleware", {}).get("per_call_s", {}).items()
        ),
        [
            "cold start, spawn to first tools/list answer",
            _ms(cold["app"]["median_s"]),
            _ms(cold["sdk"]["median_s"]),
            "",
            f"{cold['app']['median_s'] / cold['sdk']['median_s']:.3f}",
            "",
        ],
    ]
    over_generated = generated_rps / app_rps
    targets = [
        [
            "app layer tools/call: ≤1.2x the generated handlers' cost (stdio, 16 in flight)",
            f"{over_generated:.2f}x",
            _check(over_generated <= TARGETS["app_over_generated_16"], shortened),
            "",
            "",
        ],
        [
            "app layer tools/call: ≥10x MCPServer (stdio, 16 in flight)",
            f"{app_rps / sdk_rps:.2f}x",
            _check(app_rps / sdk_rps >= TARGETS["app_vs_sdk_16"], shortened),
            "",
            "",
        ],
    ]
    for label, pair in (("derive the schema", derive), ("validate the arguments", validate)):
        ratio = pair["sdk"] / pair["ours"]
        targets.append(
            [
                f"app layer: {label} of 10 parameters ≥5x faster than MCPServer",
                f"{ratio:.2f}x",
                _check(ratio >= TARGETS["app_schema_vs_sdk"], shortened),
                "",
                "",
            ]
        )
    return rows, targets


def http_client_available() -> bool:
    try:
        from mcp_runtime.http import client  # noqa: F401
    except ImportError:
        return False
    return True


# ------------------------------------------------------------------ report


def _us(seconds: float) -> str:
    micro = seconds * 1e6
    return f"{micro:,.0f} µs" if micro >= 100 else f"{micro:.2f} µs"


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms"


def _check(ok: bool, shortened: bool) -> str:
    if ok:
        return "pass"
    return "below (shortened run)" if shortened else "FAIL"


def shortened_parts(results: dict[str, Any]) -> list[str]:
    """The parts of ``results`` measured with fewer samples than the defaults."""
    stamps = results.get("measured", {})
    return [part for part in PARTS if part in stamps and stamps[part]["settings"].get("shortened")]


def roundtrip_rows(part: dict[str, Any], label: str, with_p99: bool) -> list[list[str]]:
    """Rows of one round-trip part: latency, throughput and CPU per request
    at each in-flight count measured, then the cross pairs."""
    ours, sdk = part["ours"], part["sdk"]
    rows: list[list[str]] = []
    latencies = [("p50", "p50_s")] + ([("p99", "p99_s")] if with_p99 else [])
    for name, key in latencies:
        rows.append(
            [
                f"{label}: latency {name} (sequential)",
                _ms(ours[key]),
                _ms(sdk[key]),
                "",
                f"{ours[key] / sdk[key]:.3f}",
                "",
            ]
        )
    for n, rps in ours["rps"].items():
        theirs = sdk["rps"][n]
        rows.append(
            [
                f"{label}: throughput, {n} in flight",
                f"{rps:,.0f} req/s",
                f"{theirs:,.0f} req/s",
                "",
                f"{rps / theirs:.2f}",
                "",
            ]
        )
    for n in ours["rps"]:
        ours_cpu = ours["client_cpu_s"][n] + ours["server_cpu_s"][n]
        sdk_cpu = sdk["client_cpu_s"][n] + sdk["server_cpu_s"][n]
        rows.append(
            [
                f"{label}: CPU per request, client + server, {n} in flight",
                f"{ours['client_cpu_s'][n] * 1e6:,.0f} + {ours['server_cpu_s'][n] * 1e6:,.0f} µs",
                f"{sdk['client_cpu_s'][n] * 1e6:,.0f} + {sdk['server_cpu_s'][n] * 1e6:,.0f} µs",
                "",
                f"{ours_cpu / sdk_cpu:.2f}",
                "",
            ]
        )
    for key, who in (
        ("ours_client_sdk_server", "our client → SDK server"),
        ("sdk_client_ours_server", "SDK client → our server"),
    ):
        if key in part:
            cross = part[key]
            cpu = f"CPU/request {cross['client_cpu_s']['16'] * 1e6:,.0f} + {cross['server_cpu_s']['16'] * 1e6:,.0f} µs"
            rows.append(
                [
                    f"{label}: throughput, 16 in flight, {who} ({cpu})",
                    f"{cross['rps']['16']:,.0f} req/s",
                    "",
                    "",
                    f"{cross['rps']['16'] / sdk['rps']['16']:.2f}",
                    "",
                ]
            )
    return rows


def build_tables(results: dict[str, Any]) -> tuple[list[str], list[list[str]], list[list[str]]]:
    """Header, figure rows and target rows (rows of cells)."""
    header = ["measure", "ours", "SDK", "untyped msgspec", "ours/SDK", "ours/msgspec"]
    rows: list[list[str]] = []
    targets: list[list[str]] = []
    shortened = set(shortened_parts(results))
    codec = results.get("codec")
    if codec:
        decode: dict[str, dict[str, tuple[float, float]]] = {}
        for row in codec:
            decode.setdefault(row["kind"], {})
            ours, sdk, floor = (row[name]["median_s"] for name in ("ours", "sdk", "floor"))
            # Ratios: medians of back-to-back runs (see bench/codec_bench.py).
            over_sdk, over_floor = row["ours_over_sdk"], row["ours_over_floor"]
            rows.append(
                [
                    f"{row['operation']}: {row['kind']}",
                    _us(ours),
                    _us(sdk),
                    _us(floor),
                    f"{over_sdk:.3f}",
                    f"{over_floor:.2f}",
                ]
            )
            if row["operation"].startswith("decode"):
                decode[row["kind"]][row["operation"]] = (1 / over_sdk, over_floor)
        for kind, ops in decode.items():
            (sdk_p, floor_p), (sdk_m, floor_m) = ops["decode payload"], ops["decode message"]
            targets.append(
                [
                    f"decode {kind}: ≥4x faster than the SDK",
                    f"{sdk_p:.2f}x",
                    _check(sdk_p >= TARGETS["decode_vs_sdk"], "codec" in shortened),
                    f"{sdk_m:.2f}x",
                    _check(sdk_m >= TARGETS["decode_vs_sdk"], "codec" in shortened),
                ]
            )
            targets.append(
                [
                    f"decode {kind}: within 1.1x of untyped msgspec",
                    f"{floor_p:.2f}x",
                    _check(floor_p <= TARGETS["decode_vs_floor"], "codec" in shortened),
                    f"{floor_m:.2f}x",
                    _check(floor_m <= TARGETS["decode_vs_floor"], "codec" in shortened),
                ]
            )
    for key in ("stdio", "stdio_modern", "http", "http_modern"):
        part = results.get(key)
        if part:
            rows += roundtrip_rows(part, ROUNDTRIPS[key][2], with_p99=key != "http_modern")
        if part and key in ("stdio", "http"):
            ours, sdk = part["ours"], part["sdk"]
            ratio = ours["rps"]["16"] / sdk["rps"]["16"]
            goal = TARGETS["stdio_16" if key == "stdio" else "http_16"]
            targets.append(
                [
                    f"{ROUNDTRIPS[key][2]} throughput at 16 in flight: ≥{goal:.0f}x the SDK's",
                    f"{ratio:.2f}x",
                    _check(ratio >= goal, key in shortened),
                    "",
                    "",
                ]
            )
    imports = results.get("imports")
    if imports:
        ours_t, sdk_t = imports["ours"]["median_s"], imports["sdk"]["median_s"]
        rows.append(
            [
                f"cold import ({imports['ours']['module']} vs {imports['sdk']['module']})",
                _ms(ours_t),
                _ms(sdk_t),
                "",
                f"{ours_t / sdk_t:.3f}",
                "",
            ]
        )
        targets.append(
            [
                "import time ≤ 1/3 of the SDK's",
                f"{ours_t / sdk_t:.3f}x",
                _check(ours_t / sdk_t <= TARGETS["import"], "imports" in shortened),
                "",
                "",
            ]
        )
    memory = results.get("memory")
    if memory:
        ours_m, sdk_m = memory["ours"], memory["sdk"]
        n = ours_m["sessions"]
        rows.append(
            [
                f"server RSS growth, {n} idle HTTP sessions",
                f"{(ours_m['rss_after_bytes'] - ours_m['rss_before_bytes']) / 2**20:.1f} MiB",
                f"{(sdk_m['rss_after_bytes'] - sdk_m['rss_before_bytes']) / 2**20:.1f} MiB",
                "",
                f"{ours_m['per_session_bytes'] / sdk_m['per_session_bytes']:.3f}",
                "",
            ]
        )
        rows.append(
            [
                "server RSS per idle HTTP session",
                f"{ours_m['per_session_bytes'] / 1024:.1f} KiB",
                f"{sdk_m['per_session_bytes'] / 1024:.1f} KiB",
                "",
                f"{ours_m['per_session_bytes'] / sdk_m['per_session_bytes']:.3f}",
                "",
            ]
        )
        rows.append(
            [
                f"server RSS with {n} idle HTTP sessions",
                f"{ours_m['rss_after_bytes'] / 2**20:.1f} MiB",
                f"{sdk_m['rss_after_bytes'] / 2**20:.1f} MiB",
                "",
                f"{ours_m['rss_after_bytes'] / sdk_m['rss_after_bytes']:.3f}",
                "",
            ]
        )
    app = results.get("app")
    if app:
        app_figures, app_targets = app_rows(app, "app" in shortened)
        rows += app_figures
        targets += app_targets
    scaleout = results.get("scaleout")
    if scaleout:
        rows += scaleout_rows(scaleout)
    return header, rows, targets


def text_table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(
            cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(r, widths))
        )
        for r in [header, *rows]
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def markdown_table(header: list[str], rows: list[list[str]], numeric: bool = True) -> str:
    """``numeric``: every column but the first aligned right."""
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join(["---"] + ["---:" if numeric else "---"] * (len(header) - 1)) + "|",
    ]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines)


NOTES = """\
What is measured (see the module docstrings in bench/ for details):

* Codec: the bytes of bench/corpus.py (MCP 2025-11-25 messages). "payload" =
  the bytes under params/result decoded straight into the params/result type:
  ours `mcp_runtime.codec.decoder(T).decode(bytes)` with the generated
  v2025_11_25 types, the SDK `T.model_validate_json(bytes)`, untyped msgspec
  `msgspec.json.decode(bytes)`. "message" = the whole JSON-RPC line decoded the
  way each library's session does it: ours decodes a response of 4 KiB or more
  to a typed call in one pass (its result bytes straight into the result type),
  and anything else as an envelope (params/result kept raw) then
  `decoder(T).decode(raw)`; the SDK runs `jsonrpc_message_adapter.validate_json`
  then `T.model_validate(...)`. Encoding: ours `codec.encode` (whole messages:
  `jsonrpc.result_bytes` etc.), the SDK `model_dump_json(by_alias=True,
  exclude_none=True)` (whole messages: `JSONRPCResponse(...)` around
  `model_dump(mode="json")`, as its dispatcher does). The decode targets are
  judged on the payload (the issue's `decoder(T).decode(bytes)` against untyped
  msgspec of the same bytes); whole messages are shown beside them.
  Median per call over interleaved repeats of timeit-style loops (GC off, as
  timeit), in a child process with fixed glibc malloc thresholds.
  The SDK validates less: `Tool.inputSchema` is `dict[str, Any]`, while ours
  checks the declared keys (`type`, `properties`, `required`, `$schema`) and
  keeps the others. The SDK's encoder adds 2026-07-28 defaults (`resultType`,
  `ttlMs`, `cacheScope`, `isError`); ours re-encodes the corpus byte for byte.
* Round trips: `tools/call` of an `echo` tool; each library's own client and
  server (ours: `Client` + `connect_stdio` / `connect_streamable_http`, server
  on `mcp_runtime`; SDK: `mcp.Client(mode="legacy")`, `MCPServer` with the
  tool an `async def`, its fastest equivalent of ours: a plain `def` costs a
  worker-thread hop per call), protocol 2025-11-25 for both. Latency: sequential calls, p50/p99. Throughput: N workers
  calling in a loop for a fixed time. CPU per request: user + system time of
  the client and of the server process over the throughput run, per request
  (less sensitive than wall time to other work on the machine). Each trial is
  a fresh client process and server process; ours and the SDK alternate;
  medians over trials. The "our client → SDK server" and "SDK client → our
  server" rows (16 in flight) separate what the clients and the servers cost.
  Client and server share the machine's cores (and, here, with other work).
  Our client is pinned to 2025-11-25 (`Client(..., protocol_version=
  "2025-11-25")`): it sends initialize straight away, without first asking
  server/discover.
* Round trips "at 2026-07-28": the same tool and measures, both sides speaking
  2026-07-28: no initialize; the client asks server/discover once, then every
  request carries `_meta` (protocol version, client capabilities, client info)
  and every result the server's info. Ours: `Client` (2026-07-28 is its
  default) against the same echo server with `mcp_protocol.v2026_07_28`
  handlers; the SDK: `mcp.Client(mode="auto")` against the same `MCPServer`,
  which answers server/discover. Each client checks the revision it ended up
  with. Over Streamable HTTP every 2026-07-28 request is a POST of its own, with
  no session (both servers run as for 2025-11-25); measured at 16 in flight.
* HTTP: uvicorn, one worker, 127.0.0.1, access log off, SSE answers (default of
  both), stateful sessions; uvicorn on uvloop with httptools for both (the http
  extra installs them: uvicorn.run picks them for the SDK's server, ours runs
  under mcp_runtime.serving.run_http, which also freezes the heap after
  start-up). Both clients are httpx2-based (ours moved from
  httpx, whose httpcore pool bookkeeping cost about twice the CPU per request).
* Import: `import` statement timed inside a fresh interpreter, bytecode caches
  warm, median of samples.
* Memory: server VmRSS before and after opening N sessions (initialize +
  notifications/initialized) with the same raw httpx2 client for both servers.
* When the parts were measured in different runs (the "Measured" table
  above), compare rows across parts with care: the load of the machine differs
  from run to run.
"""


def _stamp(machine_info: dict[str, Any], settings: dict[str, Any]) -> dict[str, Any]:
    """When, where and how a part was measured."""
    return {"machine": machine_info, "settings": settings}


def measured_table(results: dict[str, Any]) -> list[str]:
    """Markdown lines saying when each part was measured, if not all in this run."""
    stamps = results.get("measured", {})
    parts = [part for part in PARTS if part in stamps]
    if all(stamps[part]["machine"]["date"] == results["machine"]["date"] for part in parts):
        return []
    header = ["rows", "measured", "commit", "load average at start", "settings"]
    rows = []
    for part in parts:
        info, settings = stamps[part]["machine"], stamps[part]["settings"]
        rows.append(
            [
                PART_ROWS[part],
                info["date"],
                f"`{info['commit']}`",
                ", ".join(f"{x:.2f}" for x in info["load_average_at_start"]),
                "`" + " ".join(["python -m bench", *settings["argv"]]) + "`",
            ]
        )
    lines = [
        "**Measured:** not every part in this run; the others are kept from earlier runs"
        " on the same machine (the Machine and Versions lines are those of this run;"
        " results.json keeps each part's own under `measured`).",
        "",
        markdown_table(header, rows, numeric=False),
        "",
    ]
    return lines


def report(results: dict[str, Any]) -> tuple[str, str]:
    header, rows, targets = build_tables(results)
    stack_header, stack_rows, stack_targets = http_stack.tables(
        results, set(shortened_parts(results))
    )
    stack_text = (
        [
            "",
            text_table(stack_header, stack_rows),
            "",
            text_table(http_stack.TARGET_HEADER, stack_targets),
        ]
        if stack_rows
        else []
    )
    stack_markdown = (
        [
            "## The HTTP stack, piece by piece",
            "",
            markdown_table(stack_header, stack_rows),
            "",
            markdown_table(http_stack.TARGET_HEADER, stack_targets, numeric=False),
            "",
            http_stack.NOTES,
        ]
        if stack_rows
        else []
    )
    target_header = ["target", "payload / measured", "result", "whole message", "result"]
    info = results["machine"]
    machine_line = (
        f"{info['cpu_model']}, {info['cores']} cores, {info['implementation']} {info['python']}, {info['platform']}; "
        f"load average at start {', '.join(f'{x:.2f}' for x in info['load_average_at_start'])}"
    )
    versions = ", ".join(f"{k} {v or 'not installed'}" for k, v in info["versions"].items())
    shortened = shortened_parts(results)
    banner = (
        [
            f"SHORTENED RUN ({', '.join(PART_ROWS[p] for p in shortened)}): fewer samples than the"
            " defaults, a smoke test whose figures are noisy; targets below are not judged.",
            "",
        ]
        if shortened
        else []
    )
    text = "\n".join(
        [
            *banner,
            f"Machine: {machine_line}",
            f"Versions: {versions}; commit {info['commit']}",
            *(
                ["", text_table(header, rows), "", text_table(target_header, targets)]
                if rows
                else []
            ),
            *stack_text,
        ]
    )
    settings = results["settings"]
    measured = measured_table(results)
    markdown = "\n".join(
        [
            "# mcp-codegen vs the official MCP Python SDK",
            "",
            f"Generated by `python -m bench` on {info['date']} ({' '.join(settings['argv']) or 'default settings'}).",
            "",
            *(f"**{line}**" if line else line for line in banner),
            *measured,
            f"**Machine:** {machine_line}  ",
            f"**Versions:** {versions}; commit `{info['commit']}`",
            "",
            "Ratios are ours / SDK: below 1 is better for times and memory, above 1 for throughput.",
            "",
            markdown_table(header, rows),
            "",
            "## Targets",
            "",
            markdown_table(target_header, targets),
            "",
            "## Notes",
            "",
            NOTES,
            *stack_markdown,
        ]
    )
    return text, markdown


# ------------------------------------------------------------------ main


def parse_parts(text: str) -> list[str]:
    wanted: set[str] = set()
    for name in (p.strip() for p in text.split(",")):
        if name in GROUPS:
            wanted.update(GROUPS[name])
        elif name in PARTS:
            wanted.add(name)
        elif name:
            raise SystemExit(
                f"unknown part {name!r} (parts: {', '.join(PARTS)}; groups: {', '.join(GROUPS)})"
            )
    return [part for part in PARTS if part in wanted]


def kept_parts(path: Path, skip: list[str]) -> dict[str, Any]:
    """The parts of an earlier results.json not measured again, with their stamps."""
    try:
        earlier: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    # Files written before parts were stamped were measured in one run.
    stamps = earlier.get("measured") or {
        part: _stamp(earlier["machine"], earlier["settings"]) for part in PARTS if part in earlier
    }
    kept: dict[str, Any] = {"measured": {}}
    for part in PARTS:
        if part in earlier and part in stamps and part not in skip:
            kept[part] = earlier[part]
            kept["measured"][part] = stamps[part]
    return kept


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--parts",
        "--only",
        default="all",
        help=f"comma-separated parts or groups to run (parts: {', '.join(PARTS)}; groups: {', '.join(GROUPS)}; default all)",
    )
    parser.add_argument(
        "--write",
        action="store_true",
        help="write results.json and results.md into --output (default: print only)",
    )
    parser.add_argument(
        "--no-keep",
        dest="keep",
        action="store_false",
        help="with --write, do not carry the parts not run over from the earlier results.json",
    )
    parser.add_argument(
        "--quick", action="store_true", help="fewer repeats and shorter runs (a smoke test, noisy)"
    )
    parser.add_argument("--codec-repeats", type=int, default=None)
    parser.add_argument(
        "--trials", type=int, default=None, help="round-trip trials per library and transport"
    )
    parser.add_argument("--seconds", type=float, default=None, help="length of each throughput run")
    parser.add_argument("--calls", type=int, default=None, help="sequential calls per latency run")
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument(
        "--no-cross",
        dest="cross",
        action="store_false",
        help="skip our client against the SDK server and vice versa",
    )
    parser.add_argument("--import-samples", type=int, default=None)
    parser.add_argument(
        "--asgi-requests", type=int, default=None, help="requests per app and wire (asgi part)"
    )
    parser.add_argument(
        "--wrk-seconds", type=float, default=None, help="length of each wrk run (server part)"
    )
    parser.add_argument(
        "--client-requests",
        type=int,
        default=None,
        help="requests per client and wire (client part)",
    )
    parser.add_argument(
        "--stacks", default="uvicorn-h11,uvicorn,granian", help="server stacks of the server part"
    )
    parser.add_argument(
        "--wrk", default=None, help="path of wrk (default: on PATH, else apt-get as root)"
    )
    parser.add_argument(
        "--output", type=Path, default=HERE, help="directory for results.json and results.md"
    )
    options = parser.parse_args()
    quick = options.quick
    codec_repeats = options.codec_repeats or (3 if quick else CODEC_REPEATS)
    trials = options.trials or (1 if quick else TRIALS)
    seconds = options.seconds or (0.5 if quick else SECONDS)
    calls = options.calls or (200 if quick else CALLS)
    import_samples = options.import_samples or (5 if quick else IMPORT_SAMPLES)
    asgi_requests = options.asgi_requests or (
        http_stack.QUICK_ASGI_REQUESTS if quick else http_stack.ASGI_REQUESTS
    )
    wrk_seconds = options.wrk_seconds or (
        http_stack.QUICK_WRK_SECONDS if quick else http_stack.WRK_SECONDS
    )
    client_requests = options.client_requests or (
        http_stack.QUICK_CLIENT_REQUESTS if quick else http_stack.CLIENT_REQUESTS
    )
    parts = parse_parts(options.parts)
    shortened = (
        quick
        or codec_repeats < CODEC_REPEATS
        or trials < TRIALS
        or seconds < SECONDS
        or calls < CALLS
        or import_samples < IMPORT_SAMPLES
        or asgi_requests < http_stack.ASGI_REQUESTS
        or wrk_seconds < http_stack.WRK_SECONDS
        or client_requests < http_stack.CLIENT_REQUESTS
    )

    results: dict[str, Any] = {
        "machine": machine(),
        "settings": {
            "argv": sys.argv[1:],
            "parts": parts,
            "codec_repeats": codec_repeats,
            "trials": trials,
            "seconds": seconds,
            "calls": calls,
            "in_flight": {key: spec[3] for key, spec in ROUNDTRIPS.items()},
            "cross": options.cross,
            "sessions": options.sessions,
            "import_samples": import_samples,
            "asgi_requests": asgi_requests,
            "wrk_seconds": wrk_seconds,
            "client_requests": client_requests,
            "stacks": options.stacks,
            "codec_env": CODEC_ENV,
            "shortened": shortened,
        },
        "targets": TARGETS,
        "measured": {},
    }
    started = time.perf_counter()
    if "codec" in parts:
        log("1. decode / encode per message kind")
        results["codec"] = run_codec(codec_repeats, 0.02)
    for key, (transport, wire, label, in_flight) in ROUNDTRIPS.items():
        if key not in parts:
            continue
        log(f"{'2' if transport == 'stdio' else '3'}. tools/call round trips, {label} ({wire})")
        if transport == "http" and not http_client_available():
            log("   mcp_runtime.http.client is missing: skipped")
            results[f"{key}_skipped"] = "mcp_runtime.http.client is missing"
            continue
        results[key] = run_roundtrips(
            transport, wire, trials, calls, seconds, in_flight, options.cross
        )
    if "imports" in parts:
        log("4a. cold import time")
        from .footprint import import_times

        results["imports"] = import_times(import_samples)
    if "memory" in parts:
        log(f"4b. server memory with {options.sessions} idle HTTP sessions")
        from .footprint import session_memory

        results["memory"] = {
            impl: session_memory(impl, options.sessions) for impl in ("ours", "sdk")
        }
    if "app" in parts:
        log("5. the application layer against the generated handlers and MCPServer")
        results["app"] = run_app(trials, calls, seconds, quick)
    if "asgi" in parts:
        log(
            f"6a. the app alone, in-process through ASGI ({asgi_requests} requests per app and wire)"
        )
        results["asgi"] = http_stack.run_asgi(asgi_requests)
    if "server" in parts:
        log(f"6b. the server alone under {options.stacks}, driven by wrk ({wrk_seconds:g} s runs)")
        results["server"] = http_stack.run_server(wrk_seconds, options.stacks, options.wrk)
        if "skipped" in results["server"]:
            log(f"   not measured: {results['server']['skipped']}")
    if "client" in parts:
        log(
            f"6c. the client alone against one fast server ({client_requests} requests per client and wire)"
        )
        results["client"] = http_stack.run_client(client_requests)
    if "scaleout" in parts:
        log("7. scale-out: 1 and 2 workers, in-process and Redis stores")
        results["scaleout"] = run_scaleout(seconds, quick)
    results["machine"]["load_average_at_end"] = os.getloadavg()
    results["elapsed_s"] = time.perf_counter() - started
    stamp = _stamp(results["machine"], results["settings"])
    results["measured"] = {part: stamp for part in parts if part in results}
    if options.write and options.keep:
        kept = kept_parts(options.output / "results.json", parts)
        for part, stamp_of_part in kept.get("measured", {}).items():
            results[part] = kept[part]
            results["measured"][part] = stamp_of_part
        results["measured"] = {p: results["measured"][p] for p in PARTS if p in results["measured"]}

    text, markdown = report(results)
    print(text)
    if not options.write:
        log(
            f"not written ({results['elapsed_s']:.0f} s); --write saves results.json and results.md"
        )
        return
    options.output.mkdir(parents=True, exist_ok=True)
    (options.output / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    (options.output / "results.md").write_text(markdown + "\n")
    log(
        f"wrote {options.output / 'results.json'} and {options.output / 'results.md'} ({results['elapsed_s']:.0f} s)"
    )


if __name__ == "__main__":
    main()
