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
the SDK); :func:`figures` lists them all.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterator
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


def figures(results: dict[str, Any]) -> dict[str, str]:
    """Every figure a page can quote, by name, as the page writes it."""
    return dict(
        pair
        for source in (_codec, _round_trips, _footprint, _app, _stack, _servers, _gateway)
        for pair in source(results)
    )


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
