"""Typed server bindings (``mcp-codegen server``) against the untyped call they
wrap: the measure of ``python -m bench --parts bindings``.

A server of ours (mcpbind.app) with one tool, ``forecast``, whose input
and output are objects, is served in process over the in-memory transport
(``App.test_client()``, protocol 2025-11-25). Its bindings are generated at
bench time from a snapshot of that server (its ``tools/list``), written to a
temporary directory and imported. Then, in the same session:

* typed: ``await Facade(session).forecast(city=..., days=...)``, which builds
  the input Struct, encodes it, and decodes ``structuredContent`` into the
  output Struct;
* untyped: ``await ClientStub(session).call_tool("forecast", arguments={...})``
  with a dict, keeping the raw ``CallToolResult``.

Both make the same round trip through the client session, the memory
transport and the app's server, so the difference is what the bindings add
per call. Batches of ``calls`` calls alternate (typed first in odd trials,
untyped first in even ones); each trial gives µs per call of each and their
ratio; the figures are medians over trials.

``python -m bench.bindings_bench --json`` prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

import msgspec

REVISION = "2025-11-25"
ARGUMENTS: dict[str, Any] = {"city": "Lyon", "days": 5}


class Forecast(msgspec.Struct, kw_only=True):
    """The tool's structured result: its outputSchema is derived from this."""

    city: str
    days: int
    units: Literal["metric", "imperial"]
    highs: list[float]
    summary: str


def make_app() -> Any:
    from mcpbind.app import App

    app = App("bench-forecast", "1.0.0")

    @app.tool()
    def forecast(
        city: str, days: int = 3, units: Literal["metric", "imperial"] = "metric"
    ) -> Forecast:
        """The forecast for a city."""
        return Forecast(
            city=city,
            days=days,
            units=units,
            highs=[20.5 + i for i in range(days)],
            summary=f"{days} days in {city}",
        )

    return app


async def snapshot_of(session: Any) -> Any:
    """The server's contract as ``mcp-codegen server`` saves it (one page of tools)."""
    from mcpbind import codec
    from mcpbind_codegen.servers import Snapshot
    from mcpbind_protocol import v2025_11_25 as mcp

    listed = json.loads(codec.encode(await mcp.ClientStub(session).list_tools()))
    info = json.loads(codec.encode(session.server_info))
    return Snapshot(
        {k: v for k, v in info.items() if k in ("name", "version")},
        session.protocol_version,
        listed["tools"],
    )


def import_generated(source: str, folder: Path) -> ModuleType:
    path = folder / "forecast_bindings.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("forecast_bindings", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


async def batch(call: Callable[[], Awaitable[Any]], calls: int) -> float:
    """Seconds per call over ``calls`` sequential calls."""
    start = time.perf_counter()
    for _ in range(calls):
        await call()
    return (time.perf_counter() - start) / calls


async def measure(calls: int, trials: int) -> dict[str, Any]:
    from mcpbind_codegen.servers import generate
    from mcpbind_protocol import v2025_11_25 as mcp

    app = make_app()
    async with app.test_client(protocol_version=REVISION) as session:
        with tempfile.TemporaryDirectory(prefix="bench-bindings-") as folder:
            bindings = import_generated(
                generate(await snapshot_of(session), "ForecastBindings"), Path(folder)
            )
        facade = bindings.ForecastBindings(session)
        stub = mcp.ClientStub(session)

        async def typed() -> Any:
            return await facade.forecast(city="Lyon", days=5)

        async def untyped() -> Any:
            return await stub.call_tool("forecast", arguments=ARGUMENTS)

        # Both paths answer the same thing before anything is timed (and warm up).
        got, raw = await typed(), await untyped()
        assert isinstance(got, bindings.ForecastOutput), type(got)
        assert msgspec.to_builtins(got) == raw.structured_content, (got, raw)
        await batch(typed, calls // 10 or 1)
        await batch(untyped, calls // 10 or 1)

        runs: dict[str, list[float]] = {"typed": [], "untyped": []}
        ratios = []
        for trial in range(trials):
            order = ("typed", "untyped") if trial % 2 == 0 else ("untyped", "typed")
            for label in order:
                runs[label].append(await batch(typed if label == "typed" else untyped, calls))
            ratios.append(runs["typed"][-1] / runs["untyped"][-1])
    return {
        "revision": REVISION,
        "calls": calls,
        "trials": trials,
        "typed_s": statistics.median(runs["typed"]),
        "untyped_s": statistics.median(runs["untyped"]),
        "ratio": statistics.median(ratios),
        "runs": runs,
        "ratios": ratios,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--json", action="store_true", help="print JSON (the default prints it too)"
    )
    parser.add_argument("--calls", type=int, default=2000, help="calls per batch")
    parser.add_argument("--trials", type=int, default=9, help="batches of each, alternating")
    options = parser.parse_args()
    print(json.dumps(asyncio.run(measure(options.calls, options.trials))))


if __name__ == "__main__":
    main()
