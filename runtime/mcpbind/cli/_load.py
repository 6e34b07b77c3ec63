"""``mcpx call TOOL ... --load``: one tool called again and again, several calls
in flight at once, on the session mcpx opened; then how many calls, how fast,
the latency percentiles and the errors by kind.

Calls are started until ``--requests N`` have been, or ``--duration S`` has
passed (10 s when neither is given); the calls in flight then finish. A
latency is the time from sending ``tools/call`` to its answer; percentiles are
nearest-rank over the calls that were answered (with a result, an error
result or a JSON-RPC error alike).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from .._core.jsonrpc import ConnectionClosed, McpError

DEFAULT_DURATION = 10.0
TOOL_ERROR = "tool error (isError)"
PERCENTILES = (50, 90, 99)


@dataclass
class LoadReport:
    tool: str
    concurrency: int
    elapsed: float = 0.0
    latencies: list[float] = field(default_factory=list)  # seconds, of answered calls
    errors: Counter[str] = field(default_factory=Counter)

    @property
    def calls(self) -> int:
        return len(self.latencies) + self.errors["timeout"] + self.errors["connection lost"]

    @property
    def failed(self) -> int:
        return sum(self.errors.values())

    def percentile(self, p: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)] if ordered else 0.0

    def as_json(self) -> dict[str, Any]:
        ms = self._milliseconds()
        return {
            "tool": self.tool,
            "calls": self.calls,
            "ok": self.calls - self.failed,
            "failed": self.failed,
            "concurrency": self.concurrency,
            "elapsedSeconds": round(self.elapsed, 3),
            "callsPerSecond": round(self.calls / self.elapsed, 1) if self.elapsed else 0.0,
            "latencyMs": ms,
            "errors": dict(self.errors.most_common()),
        }

    def table(self) -> str:
        """The report as text no wider than 100 columns."""
        ms = self._milliseconds()
        rate = self.calls / self.elapsed if self.elapsed else 0.0
        lines = [
            f"load of {self.tool}: {self.calls} calls in {self.elapsed:.2f} s "
            f"({rate:.1f} calls/s), {self.concurrency} at a time",
            "",
            f"{'calls':>7} {'ok':>7} {'failed':>7} │ {'min':>8} {'p50':>8} {'p90':>8} "
            f"{'p99':>8} {'max':>8} {'mean':>8}  ms",
            f"{self.calls:>7} {self.calls - self.failed:>7} {self.failed:>7} │ "
            + " ".join(f"{ms[key]:>8.2f}" for key in ("min", "p50", "p90", "p99", "max", "mean")),
        ]
        if self.errors:
            lines += ["", "errors by kind:"]
            for kind, count in self.errors.most_common():
                text = kind if len(kind) <= 88 else kind[:87] + "…"
                lines.append(f"{count:>8}  {text}")
        return "\n".join(lines)

    def _milliseconds(self) -> dict[str, float]:
        if not self.latencies:
            return {key: 0.0 for key in ("min", "p50", "p90", "p99", "max", "mean")}
        values = {
            "min": min(self.latencies),
            **{f"p{p}": self.percentile(p) for p in PERCENTILES},
            "max": max(self.latencies),
            "mean": sum(self.latencies) / len(self.latencies),
        }
        return {key: round(value * 1000, 3) for key, value in values.items()}


async def run_load(
    call: Callable[[], Awaitable[Any]],
    tool: str,
    *,
    concurrency: int,
    requests: int | None,
    duration: float | None,
    timeout: float | None,
) -> LoadReport:
    """Call ``call`` from ``concurrency`` workers until ``requests`` calls have
    started or ``duration`` seconds have passed; each call bounded by ``timeout``."""
    if requests is None and duration is None:
        duration = DEFAULT_DURATION
    report = LoadReport(tool, concurrency)
    started = time.perf_counter()
    deadline = started + duration if duration is not None else math.inf
    issued = 0

    def next_call() -> bool:
        nonlocal issued
        if (requests is not None and issued >= requests) or time.perf_counter() >= deadline:
            return False
        issued += 1
        return True

    async def worker() -> None:
        while next_call():
            sent = time.perf_counter()
            try:
                async with asyncio.timeout(timeout):
                    result = await call()
            except TimeoutError:
                report.errors["timeout"] += 1
                continue
            except ConnectionClosed:
                report.errors["connection lost"] += 1
                return  # nothing more will be answered on this session
            except McpError as error:
                report.errors[f"{error.code} {error.message}"] += 1
            else:
                if result.is_error is True:
                    report.errors[TOOL_ERROR] += 1
            report.latencies.append(time.perf_counter() - sent)

    workers = [asyncio.create_task(worker()) for _ in range(concurrency)]
    try:
        await asyncio.gather(*workers)
    finally:
        for each in workers:
            each.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(*workers, return_exceptions=True)
    report.elapsed = time.perf_counter() - started
    return report
