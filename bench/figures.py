"""The figures README.md and docs/ quote, from one source: bench/results.json.

A page quotes a figure between markers that name it::

    stdio throughput <!-- figure: stdio.rps16.ratio -->48.2x<!-- /figure -->

(HTML comments: invisible on GitHub and on the documentation site).
``python -m bench.figures`` writes each figure's value from the written results
between its markers, in README.md and every page of docs/;
``python -m bench.figures --check`` changes nothing and lists, exit status 1,
every marker whose text differs from the results or whose name is unknown
(tests/project/test_docs_pages.py runs the check). ``python -m bench --write``
fills the pages after writing new results.

Names: ``<part>.<measure>.<ours|sdk|ratio>``, for instance ``stdio.p50.ours``
(0.07 ms), ``stdio_modern.rps16.ratio`` (ours / SDK, 40.1x),
``codec.decode_payload.initialize_request.ratio`` (how many times faster than
the SDK); :func:`figures` lists them all. A range a page quotes over several
rows (``codec.encode.range``: ``1.7x to 9.4x``) is the least and the greatest
of those rows, computed like any other figure.

Some figures are not benchmark results: the conformance suite's scenario and
check counts (its ``summary.json`` is written under build/, which is not
tracked) and the counts of the reliability tests. They are written by hand in
one place, :data:`FACTS`, and quoted through the same markers, so that a page
cannot disagree with another either.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results.json"
MARKER = re.compile(r"<!-- figure: (?P<name>[\w.]+) -->(?P<text>.*?)<!-- /figure -->")
ROUND_TRIP_PARTS = ("stdio", "stdio_modern", "http", "http_modern")


def pages(root: Path = ROOT) -> list[Path]:
    """The pages that may quote figures: README.md and every page of docs/."""
    return [root / "README.md", *sorted((root / "docs").rglob("*.md"))]


def times(value: float, digits: int | None = None) -> str:
    """A ratio as ``48.2x`` (``digits`` decimals) or, by default, to two
    significant digits: ``8.6x``, ``29x``."""
    if digits is None:
        digits = 0 if value >= 9.95 else 1
    return f"{value:.{digits}f}x"


def micro(seconds: float) -> str:
    """A duration in µs to three significant digits (``0.49``, ``15.3``, ``1,823``)."""
    us = seconds * 1e6
    if us >= 99.95:
        return f"{us:,.0f} µs"
    return f"{us:.1f} µs" if us >= 9.995 else f"{us:.2f} µs"


def milli(seconds: float, digits: int = 2) -> str:
    return f"{seconds * 1e3:,.{digits}f} ms"


def rate(requests_per_second: float) -> str:
    return f"{requests_per_second:,.0f} req/s"


def span(low: str, high: str) -> str:
    """A range of two figures in the same unit: ``1.7x to 9.4x``, ``51 to 56 µs``."""
    if low == high:
        return low
    for unit in (" µs", " req/s", " ms"):
        if low.endswith(unit) and high.endswith(unit):
            return f"{low.removesuffix(unit)} to {high}"
    return f"{low} to {high}"


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def _codec(results: dict[str, Any]) -> Iterator[tuple[str, str]]:
    for entry in results.get("codec", []):
        name = f"codec.{slug(entry['operation'])}.{slug(entry['kind'])}"
        ours, sdk = entry["ours"]["median_s"], entry["sdk"]["median_s"]
        yield f"{name}.ours", micro(ours)
        yield f"{name}.sdk", micro(sdk)
        # How many times faster than the SDK (below 1: slower), as results.md has it.
        ratio = entry["ours_over_sdk"]
        yield f"{name}.ratio", times(1 / ratio)
        yield f"{name}.slower", times(ratio)
        # How close to untyped msgspec decoding the same bytes (below 1: faster), and
        # how much faster untyped msgspec itself is than the SDK (the floor of the ratio).
        yield f"{name}.floor", times(entry["ours_over_floor"], 2)
        yield f"{name}.floor_vs_sdk", times(sdk / entry["floor"]["median_s"])
    yield from _codec_ranges(results.get("codec", []))


def _codec_ranges(entries: list[dict[str, Any]]) -> Iterator[tuple[str, str]]:
    """The ranges pages quote over several kinds: ``codec.decode_payload.range``
    (times faster than the SDK, every kind the SDK is slower at),
    ``codec.encode.range`` (payload and whole message, every kind) and
    ``codec.decode_payload.floor.range`` (ours / untyped msgspec, every kind but
    tools/list, whose open objects cost a hook each)."""
    decode = [e for e in entries if e["operation"] == "decode payload"]
    encode = [e for e in entries if e["operation"].startswith("encode")]
    faster = [1 / e["ours_over_sdk"] for e in decode if e["ours_over_sdk"] < 1]
    if faster:
        yield "codec.decode_payload.range", span(times(min(faster)), times(max(faster)))
    if encode:
        ratios = [1 / e["ours_over_sdk"] for e in encode]
        yield "codec.encode.range", span(times(min(ratios)), times(max(ratios)))
    floor = [e["ours_over_floor"] for e in decode if not e["kind"].startswith("tools/list")]
    if floor:
        yield "codec.decode_payload.floor.range", span(times(min(floor), 2), times(max(floor), 2))


def _round_trips(results: dict[str, Any]) -> Iterator[tuple[str, str]]:
    for part in ROUND_TRIP_PARTS:
        if part not in results:
            continue
        ours, sdk = results[part]["ours"], results[part]["sdk"]
        for key in ("p50", "p99"):
            if f"{key}_s" in ours:
                yield f"{part}.{key}.ours", milli(ours[f"{key}_s"])
                yield f"{part}.{key}.sdk", milli(sdk[f"{key}_s"])
                yield f"{part}.{key}.ratio", times(sdk[f"{key}_s"] / ours[f"{key}_s"])
        for n, rps in ours["rps"].items():
            yield f"{part}.rps{n}.ours", rate(rps)
            yield f"{part}.rps{n}.sdk", rate(sdk["rps"][n])
            yield f"{part}.rps{n}.ratio", times(rps / sdk["rps"][n], 1)
            ours_cpu = ours["client_cpu_s"][n] + ours["server_cpu_s"][n]
            sdk_cpu = sdk["client_cpu_s"][n] + sdk["server_cpu_s"][n]
            for side, figures in (("ours", ours), ("sdk", sdk)):
                client, server = figures["client_cpu_s"][n] * 1e6, figures["server_cpu_s"][n] * 1e6
                yield f"{part}.cpu{n}.{side}", f"{client:,.0f} + {server:,.0f} µs"
            yield f"{part}.cpu{n}.ratio", times(ours_cpu / sdk_cpu, 2)
    yield from _http_cpu_ranges(results)


def _http_cpu_ranges(results: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """``http.cpu16.<client|server>.<ours|sdk>.range``: CPU per request at 16 in
    flight, end to end, over both wires (the handshake session and 2026-07-28)."""
    parts = [results[part] for part in ("http", "http_modern") if part in results]
    for role in ("client", "server"):
        for side in ("ours", "sdk"):
            values = [part[side][f"{role}_cpu_s"]["16"] for part in parts]
            if values:
                yield f"http.cpu16.{role}.{side}.range", span(
                    micro(min(values)), micro(max(values))
                )


def _footprint(results: dict[str, Any]) -> Iterator[tuple[str, str]]:
    if "imports" in results:
        ours, sdk = results["imports"]["ours"]["median_s"], results["imports"]["sdk"]["median_s"]
        yield "imports.ours", milli(ours, 0)
        yield "imports.sdk", milli(sdk, 0)
        yield "imports.ratio", times(sdk / ours)
    if "memory" in results:
        ours, sdk = (results["memory"][side]["per_session_bytes"] for side in ("ours", "sdk"))
        yield "memory.per_session.ours", f"{ours / 1024:.1f} KiB"
        yield "memory.per_session.sdk", f"{sdk / 1024:.1f} KiB"
        yield "memory.per_session.ratio", times(sdk / ours)


def _app(results: dict[str, Any]) -> Iterator[tuple[str, str]]:
    if "app" not in results:
        return
    app = results["app"]
    stdio = app["stdio"]
    app_rps = stdio["ours_client_app_server"]["rps"]["16"]
    sdk_rps = stdio["sdk_client_sdk_server"]["rps"]["16"]
    yield "app.rps16.ours", rate(app_rps)
    yield "app.rps16.generated", f"{stdio['ours_client_ours_server']['rps']['16']:,.0f}"
    yield "app.rps16.sdk", rate(sdk_rps)
    yield "app.rps16.ratio", times(app_rps / sdk_rps)
    for key in ("derive", "validate"):
        ours, sdk = app["schema"][f"{key}_s"]["ours"], app["schema"][f"{key}_s"]["sdk"]
        yield f"app.{key}.ours", micro(ours)
        yield f"app.{key}.sdk", micro(sdk)
        yield f"app.{key}.ratio", times(sdk / ours)
    ours, sdk = (app["cold_start"][side]["median_s"] for side in ("app", "sdk"))
    yield "app.cold_start.ours", milli(ours, 0)
    yield "app.cold_start.sdk", milli(sdk, 0)
    yield "app.cold_start.ratio", times(sdk / ours)


def _stack(results: dict[str, Any]) -> Iterator[tuple[str, str]]:
    if "asgi" in results:
        # impl: ours, sdk, ours_sse and sdk_def (defaults), echo (the bare ASGI echo)
        rows = {(row["impl"], row["wire"]): row for row in results["asgi"]["rows"]}
        for (impl, wire), row in rows.items():
            yield f"asgi.{wire}.{impl}", micro(row["us_per_request"] / 1e6)
        for wire in ("modern", "handshake"):
            ours, sdk = rows["ours", wire]["us_per_request"], rows["sdk", wire]["us_per_request"]
            yield f"asgi.{wire}.ratio", times(sdk / ours)
        # What a 2026-07-28 request costs in process against a handshake session's.
        yield "asgi.modern_over_handshake", times(
            rows["ours", "modern"]["us_per_request"] / rows["ours", "handshake"]["us_per_request"],
            2,
        )
    if "client" in results:
        # client: ours, sdk, and the raw aiohttp and httpx2 floors
        rows = {(row["client"], row["wire"]): row for row in results["client"]["rows"]}
        for (client, wire), row in rows.items():
            yield f"client.{wire}.{client}", micro(row["cpu_us_per_request"] / 1e6)
        for wire in ("modern", "handshake"):
            ours = rows["ours", wire]["cpu_us_per_request"]
            sdk = rows["sdk", wire]["cpu_us_per_request"]
            yield f"client.{wire}.ratio", times(sdk / ours)


def _gateway(results: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """``gateway.<stdio|http>.<direct|gateway|added|cpu>``: a tools/call made directly
    to the backend, through mcpx serve, the difference, and the gateway's CPU per call."""
    for backend in ("stdio", "http"):
        part = results.get("gateway", {}).get(backend)
        if part is None:
            continue
        for name, key in (
            ("direct", "direct_s"),
            ("gateway", "gateway_s"),
            ("added", "added_s"),
            ("cpu", "gateway_cpu_s"),
        ):
            yield f"gateway.{backend}.{name}", micro(part[key])


def _telemetry(results: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """``telemetry.<stdio|http>.<none|off|on>.<rps|cpu>``: req/s and the server's
    CPU per request without the telemetry code, off and on;
    ``telemetry.<row>.added``: the CPU telemetry on adds per request;
    ``telemetry.<row>.off_over_none``: off / without the code, in CPU per request."""
    for row in ("stdio", "http"):
        part = results.get("telemetry", {}).get(row)
        if not part or "skipped" in part:
            continue
        for mode in ("none", "off", "on"):
            if mode in part:
                yield f"telemetry.{row}.{mode}.rps", rate(part[mode]["rps"])
                yield f"telemetry.{row}.{mode}.cpu", micro(part[mode]["server_cpu_us"] / 1e6)
        yield f"telemetry.{row}.added", micro(part["added_server_cpu_us"] / 1e6)
        if "off_over_none_server_cpu" in part:
            yield f"telemetry.{row}.off_over_none", f"{part['off_over_none_server_cpu']:.3f}"


def _servers(results: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """The server alone under each stack, driven by wrk: ``server.<stack>.<wire>.<impl>.c<n>``
    (impl ``ours``, ``sdk``, ``ours_sse`` and ``sdk_def``: each with its default settings,
    ``echo``: the bare ASGI echo) and the ratios ``server.<stack>.<wire>.c<n>.ratio``
    (like with like), ``.defaults_ratio`` and ``.defaults_p99_ratio``."""
    if "server" not in results:
        return
    rows = {
        (slug(row["stack"]), row["wire"], row["impl"], row["connections"]): row
        for row in results["server"]["rows"]
    }
    for (stack, wire, impl, n), row in rows.items():
        name = f"server.{stack}.{wire}.{impl}.c{n}"
        yield f"{name}.rps", rate(row["rps"])
        yield f"{name}.p99", milli(row["p99_us"] / 1e6)
        if "server_cpu_us_per_request" in row:
            yield f"{name}.cpu", micro(row["server_cpu_us_per_request"] / 1e6)
        echo = rows.get((stack, "modern", "echo", n))
        if echo is not None:
            yield f"{name}.share", f"{row['rps'] / echo['rps']:.0%}"
    for (stack, wire, impl, n), row in rows.items():
        if impl != "ours":
            continue
        name = f"server.{stack}.{wire}.c{n}"
        yield f"{name}.ratio", times(row["rps"] / rows[stack, wire, "sdk", n]["rps"])
        # By default our server answers a handshake session's request on an SSE stream.
        ours = rows[stack, wire, "ours_sse" if wire == "handshake" else "ours", n]
        theirs = rows[stack, wire, "sdk_def", n]
        yield f"{name}.defaults_ratio", times(ours["rps"] / theirs["rps"])
        yield f"{name}.defaults_p99_ratio", times(theirs["p99_us"] / ours["p99_us"])
    # p99 over p50 of our server at 16 connections, every stack and wire (the target: ≤3x).
    tails = [
        row["p99_us"] / row["p50_us"]
        for (stack, wire, impl, n), row in rows.items()
        if impl == "ours" and n == 16
    ]
    if tails:
        yield "server.ours.c16.p99_over_p50.range", span(times(min(tails)), times(max(tails)))


def _scaleout(results: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """The scale-out part: ``scaleout.<memory|redis>_<n>w.<modern|handshake>.<rps|p99|
    commands>`` (wrk on one host, n uvicorn workers), ``scaleout.<store>.<wire>.scaling``
    (two workers over one), and its soak run, ``soak.<n>w.<measure>``."""
    part = results.get("scaleout")
    if part is None:
        return
    for run, wires in part.items():
        if not (run.startswith(("memory_", "redis_")) and isinstance(wires, dict)):
            continue
        for wire, row in wires.items():
            name = f"scaleout.{run}.{wire}"
            yield f"{name}.rps", rate(row["rps"])
            yield f"{name}.p99", milli(row["p99_us"] / 1e6, 1)
            yield f"{name}.commands", f"{row['redis_commands_per_request']:.1f}"
            yield f"{name}.refused", f"{row['refused_share']:.0%}"
    if "settings" in part:
        yield "scaleout.seconds", f"{part['settings']['seconds']:g} s"
    # The soak's mix of requests, by kind (a share of the requests).
    for kind, share in part.get("soak", {}).get("settings", {}).get("mix", {}).items():
        yield f"soak.mix.{kind}", f"{share}%"
    for store in ("memory", "redis"):
        for wire in ("modern", "handshake"):
            one, two = part.get(f"{store}_1w", {}).get(wire), part.get(f"{store}_2w", {}).get(wire)
            if one and two:
                yield f"scaleout.{store}.{wire}.scaling", times(two["rps"] / one["rps"], 1)
    for run, soak in part.get("soak", {}).items():
        if run == "settings":
            continue
        name = f"soak.{run}"
        yield f"{name}.rps", f"{soak['rps']:,.0f}"
        yield f"{name}.rps_first_99_percent", f"{soak['rps_first_99_percent']:,.0f}"
        yield f"{name}.p50", f"{soak['p50_ms']:,.0f} ms"
        p99 = soak["p99_ms"]
        yield f"{name}.p99", f"{p99 / 1e3:.1f} s" if p99 >= 1000 else f"{p99:,.0f} ms"
        yield f"{name}.answered", f"{soak['answered']:,}"
        for key in ("jsonrpc_errors", "transport_errors", "hung", "neither_answered_nor_error"):
            yield f"{name}.{key}", f"{soak[key]:,}"
        yield f"{name}.duplicates", f"{len(soak['duplicates']):,}"
        yield f"{name}.commands", f"{soak['redis_commands_per_request']:.1f}"
        yield f"{name}.round_trips", f"{soak['redis_round_trips_per_request']:.1f}"
        yield from _soak_causes(name, soak)
        steady = soak.get("steady_state")
        if steady:
            # answered at once, and answered after its priming event ("slow")
            for prefix, label in (("", "steady"), ("slow_", "steady_slow")):
                commands = steady[f"{prefix}redis_commands_per_request"]
                round_trips = steady[f"{prefix}redis_round_trips_per_request"]
                yield f"{name}.{label}.commands", f"{commands:.1f}"
                yield f"{name}.{label}.round_trips", f"{round_trips:.2f}"


def _soak_causes(name: str, soak: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """A soak run's errors by cause (``soak.<n>w.cause.<cause>``), its connections
    (the killed worker's and the others'), its tracebacks, and when the survivors
    failed the killed worker's requests (seconds after the kill)."""
    errors: dict[str, int] = soak["errors"]

    def count(test: Callable[[str], bool]) -> str:
        return f"{sum(n for cause, n in errors.items() if test(cause)):,}"

    yield f"{name}.cause.requests_failed", count(lambda c: c.startswith("JSON-RPC error -32603:"))
    yield f"{name}.cause.tasks_failed", count(lambda c: c.startswith("JSON-RPC error -32603 (the"))
    yield f"{name}.cause.http502", count(lambda c: "HTTP 502" in c)
    yield f"{name}.cause.http502_requests", count(lambda c: c.startswith("HTTP 502"))
    yield f"{name}.cause.http502_tasks_get", count(lambda c: c.startswith("tasks/get: HTTP 502"))
    yield f"{name}.cause.cut_before_first_event", count(lambda c: c.startswith("cut before any"))
    yield f"{name}.cause.cut_not_resumable", count(lambda c: "not resumable" in c)
    yield f"{name}.cause.cut_listen", count(lambda c: "before acknowledging" in c)
    tracebacks = sum(n for line, n in soak["worker_logs"].items() if line.startswith("traceback"))
    yield f"{name}.tracebacks", f"{tracebacks:,}"
    peaks = soak["redis_connections_peak"].values()
    yield f"{name}.redis_connections_peak", span(f"{min(peaks)}", f"{max(peaks)}")
    killed = {
        event.split("worker ", 1)[1].split()[0]: float(event.split(" s:", 1)[0])
        for event in soak["events"]
        if event.endswith("SIGKILLed")
    }
    most = {worker: stats["smax"] for worker, stats in soak["http_connections"].items()}
    others = [n for worker, n in most.items() if worker not in killed]
    for worker in killed:
        yield f"{name}.http_connections.killed", f"{most[worker]:,}"
    if others:
        yield f"{name}.http_connections.others", span(f"{min(others):,}", f"{max(others):,}")
    windows = [
        window
        for cause, window in soak["error_windows_s"].items()
        if cause.startswith("JSON-RPC error -32603")
    ]
    if killed and windows:
        at = min(killed.values())
        yield f"{name}.failed_after_kill", span(
            f"{min(w[0] for w in windows) - at:.0f}", f"{max(w[1] for w in windows) - at:.0f} s"
        )


def _bindings(results: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """``bindings.<typed|untyped|ratio>``, once a run has written the part."""
    part = results.get("bindings")
    if part is None:
        return
    yield "bindings.typed", f"{part['typed_s'] * 1e6:.2f} µs"
    yield "bindings.untyped", f"{part['untyped_s'] * 1e6:.2f} µs"
    yield "bindings.ratio", times(part["ratio"], 3)


def _targets(results: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """``target.<name>``: the targets the run judged (bench/__main__.py's TARGETS,
    as the results record them), ``4x``, ``1.1x``; ``target.<name>.margin``: a target
    of at most ``1.1`` as ``10%``."""
    for name, value in results.get("targets", {}).items():
        yield f"target.{name}", f"{value:g}x" if value == round(value, 1) else times(value)
        if 1 < value < 2:
            yield f"target.{name}.margin", f"{value - 1:.0%}"


def _measured(results: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """``measured.<part>``: when and at which commit a part was last measured,
    ``2026-11-26 at `277c1e8```, for the sentences that date a page's figures."""
    for part, stamp in results.get("measured", {}).items():
        machine = stamp["machine"]
        yield f"measured.{part}", f"{machine['date'][:10]} at `{machine['commit']}`"


# Figures that are not benchmark results, written here by hand and nowhere else
# (pages quote them through markers). Conformance: tests/conformance.py's last
# full run (its summary.json goes to build/conformance/, not tracked); the
# Conformance page's table has the details. Reliability: what the tests under
# tests/reliability/ and tests/stores/ use as their loads and bounds.
FACTS = {
    "conformance.suite": "0.2.0-alpha.12",
    "conformance.measured": "2026-11-22",
    "conformance.2025_11_25.server": "33/33",
    "conformance.2025_11_25.server_required": "30/30",
    "conformance.2025_11_25.server_required_checks": "70/70",
    "conformance.2025_11_25.server_not_scored": "3/3",
    "conformance.2025_11_25.server_not_scored_checks": "14/14",
    "conformance.2025_11_25.client_checks": "68/68",
    "conformance.2025_11_25.client": "18/18",
    "conformance.2025_11_25.client_not_scored": "7/7",
    "conformance.2026_07_28.server": "50/50",
    "conformance.2026_07_28.server_required": "37/37",
    "conformance.2026_07_28.server_required_checks": "120/120",
    "conformance.2026_07_28.server_not_scored": "13/13",
    "conformance.2026_07_28.server_not_scored_checks": "76/76",
    "conformance.2026_07_28.client_checks": "66/66",
    "conformance.2026_07_28.client": "32/32",
    "conformance.2026_07_28.client_not_scored": "7/7",
    "conformance.sdk.2025_11_25.client": "18/18",
    "conformance.sdk.2026_07_28.client": "31/32",
    "conformance.sdk.client_not_scored": "4/7",
    "conformance.sdk.measured": "2026-11-24",
    "conformance.2025_11_25.client_required_checks": "256/256",
    "conformance.2026_07_28.client_required_checks": "420/420",
    "conformance.sdk.2025_11_25.client_required_checks": "238/238",
    "conformance.sdk.2026_07_28.client_required_checks": "396/396",
    "reliability.malformed_inputs": "3,953",
    "reliability.stdio_calls": "10,000",
    "reliability.stdio_in_flight": "512",
    "reliability.stdio_seconds": "0.59 s",
    "reliability.killed_server_fails_within": "0.6 s",
    "reliability.idle_sessions": "1,000",
    "reliability.listen_streams": "1,024",
    "reliability.honest_client_served_in": "about 1 ms",
    "reliability.client_answer_survived": "256 MiB",
    "reliability.oauth_answer_limit": "1 MiB",
}


def figures(results: dict[str, Any]) -> dict[str, str]:
    """Every figure a page can quote, by name, as the page writes it."""
    sources = (
        _codec,
        _round_trips,
        _footprint,
        _app,
        _stack,
        _servers,
        _gateway,
        _telemetry,
        _scaleout,
        _bindings,
        _targets,
        _measured,
    )
    return {**FACTS, **dict(pair for source in sources for pair in source(results))}


def load(path: Path = RESULTS) -> dict[str, str]:
    results: dict[str, Any] = json.loads(path.read_text())
    return figures(results)


def fill(text: str, values: dict[str, str]) -> tuple[str, list[str]]:
    """``text`` with each marker's figure written from ``values``; and the
    unknown names, whose markers are left as they are."""
    unknown: list[str] = []

    def replace(marker: re.Match[str]) -> str:
        name = marker["name"]
        if name not in values:
            unknown.append(name)
            return marker[0]
        return f"<!-- figure: {name} -->{values[name]}<!-- /figure -->"

    return MARKER.sub(replace, text), unknown


def disagreements(root: Path = ROOT, results: Path = RESULTS) -> list[str]:
    """One line per marker of the pages that the results do not back."""
    values = load(results)
    found = []
    for page in pages(root):
        for number, line in enumerate(page.read_text().splitlines(), start=1):
            for marker in MARKER.finditer(line):
                name, text = marker["name"], marker["text"]
                where = f"{page.relative_to(root)}:{number}"
                if name not in values:
                    found.append(f"{where}: unknown figure {name!r}")
                elif text != values[name]:
                    found.append(f"{where}: {name} says {text!r}, the results {values[name]!r}")
    return found


def write(root: Path = ROOT, results: Path = RESULTS) -> list[Path]:
    """Fill every page's markers; the pages changed. Unknown names raise ValueError."""
    values = load(results)
    changed = []
    for page in pages(root):
        text = page.read_text()
        filled, unknown = fill(text, values)
        if unknown:
            raise ValueError(f"{page.relative_to(root)}: unknown figures {', '.join(unknown)}")
        if filled != text:
            page.write_text(filled)
            changed.append(page)
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.figures",
        description="Write the figures of bench/results.json into README.md and docs/.",
    )
    parser.add_argument(
        "--check", action="store_true", help="change nothing; list the figures that differ"
    )
    parser.add_argument("--list", action="store_true", help="print every figure's name and value")
    arguments = parser.parse_args(argv)
    if arguments.list:
        for name, value in load().items():
            print(f"{name} = {value}")
        return 0
    if arguments.check:
        found = disagreements()
        for line in found:
            print(line)
        return 1 if found else 0
    try:
        changed = write()
    except ValueError as error:
        print(error, file=sys.stderr)
        return 1
    for page in changed:
        print(f"filled {page.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
