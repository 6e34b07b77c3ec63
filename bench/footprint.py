"""Part 4: cold import time, and the memory a server needs per idle HTTP session.

Import time: a fresh interpreter per sample times ``import X`` with
``time.perf_counter`` around the statement (interpreter start-up, the same for
both, is left out). One unmeasured run first lets Python write any missing
bytecode caches, as an installed package would have them; samples run with
the caches warm.

Memory: the echo server of each library (bench/servers, uvicorn, one worker,
Streamable HTTP, sessions kept in memory) is started; its ``VmRSS`` is read
from ``/proc/<pid>/status`` after a warm-up session, then ``sessions``
sessions are opened (``initialize`` + ``notifications/initialized``, raw
httpx2, loopback, a bounded number in flight), left idle, and ``VmRSS`` is read
again. The same raw client drives both servers.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import time
from typing import Any

from .roundtrip import http_server

IMPORTS = {"ours": "mcpbind_protocol.v2025_11_25", "sdk": "mcp.types"}

_TIMER = (
    "import time, sys; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
)


def _env(bytecode: bool) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if not bytecode:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def import_time(module: str) -> float:
    out = subprocess.run(
        [sys.executable, "-c", _TIMER.format(module=module)],
        capture_output=True,
        text=True,
        check=True,
        env=_env(False),
    )
    return float(out.stdout.strip().splitlines()[-1])


def import_times(samples: int = 7) -> dict[str, Any]:
    for module in IMPORTS.values():  # write missing bytecode caches, unmeasured
        subprocess.run([sys.executable, "-c", f"import {module}"], check=True, env=_env(True))
    times: dict[str, list[float]] = {name: [] for name in IMPORTS}
    for _ in range(samples):  # alternate, so that load on the machine hits both alike
        for name, module in IMPORTS.items():
            times[name].append(import_time(module))
    return {
        name: {
            "module": IMPORTS[name],
            "median_s": statistics.median(ts),
            "min_s": min(ts),
            "samples_s": ts,
        }
        for name, ts in times.items()
    }


# ------------------------------------------------------------------ memory


def vm_rss(pid: int) -> int:
    """Resident set size of ``pid`` in bytes, from /proc/<pid>/status."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
_INITIALIZE = (
    b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
    b'"capabilities":{},"clientInfo":{"name":"bench","version":"1.0.0"}}}'
)
_INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'


async def open_sessions(url: str, count: int, in_flight: int = 8) -> list[str]:
    import httpx2

    ids: list[str] = []
    queue = iter(range(count))

    async def worker(http: httpx2.AsyncClient) -> None:
        for _ in queue:
            response = await http.post(url, content=_INITIALIZE, headers=_HEADERS)
            if response.status_code != 200 or b'"result"' not in response.content:
                raise RuntimeError(
                    f"initialize answered HTTP {response.status_code}: {response.text[:200]}"
                )
            session_id = response.headers["mcp-session-id"]
            headers = {
                **_HEADERS,
                "mcp-session-id": session_id,
                "mcp-protocol-version": "2025-11-25",
            }
            response = await http.post(url, content=_INITIALIZED, headers=headers)
            if response.status_code != 202:
                raise RuntimeError(
                    f"notifications/initialized answered HTTP {response.status_code}"
                )
            ids.append(session_id)

    async with httpx2.AsyncClient(timeout=30.0) as http:
        await asyncio.gather(*(worker(http) for _ in range(in_flight)))
    return ids


def session_memory(impl: str, sessions: int = 1000) -> dict[str, Any]:
    with http_server(impl) as (url, process):
        asyncio.run(open_sessions(url, 1))  # warm-up: imports and first-use caches
        time.sleep(0.5)
        before = vm_rss(process.pid)
        start = time.perf_counter()
        ids = asyncio.run(open_sessions(url, sessions))
        elapsed = time.perf_counter() - start
        time.sleep(1.0)
        after = vm_rss(process.pid)
        if len(set(ids)) != sessions:
            raise RuntimeError(f"expected {sessions} distinct sessions, got {len(set(ids))}")
    return {
        "sessions": sessions,
        "rss_before_bytes": before,
        "rss_after_bytes": after,
        "per_session_bytes": (after - before) / sessions,
        "open_seconds": elapsed,
    }


if __name__ == "__main__":
    print(import_times(5))
    for impl in ("ours", "sdk"):
        print(impl, session_memory(impl))
