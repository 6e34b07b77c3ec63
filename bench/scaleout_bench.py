"""Scale-out: requests per second of our Streamable HTTP server run as 1 and
2 uvicorn workers, with everything in each worker (the default) and with the
Redis store, for stateless 2026-07-28 requests and for handshake sessions;
and the Redis commands each request costs (``INFO commandstats`` deltas).

The server is tests/support/scaleout_app.py (its ``pid`` tool); Redis is a
real ``redis-server`` on a free loopback port (Debian package), as in the
scale-out tests. Clients keep their connections open, so with the in-process
store a session stays on the worker that made it (as with sticky sessions);
with Redis it would not need to.

``python -m bench.scaleout_bench --json`` prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import sys
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
# The scale-out tests' Redis launcher and worker cluster, reused (imported by
# name: the tests are not a package of the distribution).
sys.path.insert(0, str(ROOT / "tests"))
_redis_server: Any = importlib.import_module("support.redis_server")
_scaleout: Any = importlib.import_module("support.scaleout")
RedisServer = _redis_server.RedisServer
Workers = _scaleout.Workers
HANDSHAKE: str = _scaleout.HANDSHAKE
modern_meta = _scaleout.modern_meta

HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


def redis_calls(redis: Any) -> int:
    """Commands Redis has run since it started (every command, from INFO commandstats)."""
    info = redis.command("INFO", "commandstats").decode()
    return sum(int(line.split("calls=")[1].split(",")[0]) for line in info.splitlines() if line.startswith("cmdstat_"))


async def _client(url: str, wire: str, seconds: float, counts: list[float]) -> None:
    async with httpx.AsyncClient(timeout=30) as client:
        headers = dict(HEADERS)
        if wire == "modern":
            headers |= {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "pid"}
            params: dict[str, Any] = {"name": "pid", "arguments": {}, "_meta": modern_meta()}
        else:
            init = {"protocolVersion": HANDSHAKE, "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}
            answer = await client.post(url, json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}, headers=headers)
            headers |= {"mcp-session-id": answer.headers["mcp-session-id"], "mcp-protocol-version": HANDSHAKE}
            await client.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
            params = {"name": "pid", "arguments": {}}
        n = 0
        started = time.perf_counter()  # after the session is set up: only tools/call is timed
        while time.perf_counter() - started < seconds:
            n += 1
            answer = await client.post(url, json={"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": params}, headers=headers)
            if answer.status_code != 200 or '"result"' not in answer.text:
                raise RuntimeError(f"request failed: {answer.status_code} {answer.text[:200]}")
        counts.append(n / (time.perf_counter() - started))


async def _load(url: str, wire: str, clients: int, seconds: float) -> tuple[int, float]:
    """Requests answered, and requests per second (summed over the clients)."""
    rates: list[float] = []
    await asyncio.gather(*(_client(url, wire, seconds, rates) for _ in range(clients)))
    return round(sum(rates) * seconds), sum(rates)


def measure(store: str, workers: int, clients: int, seconds: float) -> dict[str, Any]:
    redis = RedisServer()
    redis.start()
    cluster = Workers(redis if store == "redis" else None, workers, store=store)
    try:
        cluster.start()
        result: dict[str, Any] = {}
        for wire in ("modern", "handshake"):
            asyncio.run(_load(cluster.url, wire, clients, min(seconds, 0.2)))  # warm up
            before = redis_calls(redis)
            requests, rps = asyncio.run(_load(cluster.url, wire, clients, seconds))
            # Less the INFO itself; a handshake run includes each client's initialize.
            commands = redis_calls(redis) - before - 1
            result[wire] = {"requests": requests, "rps": rps, "redis_commands_per_request": commands / max(requests, 1)}
        return result
    finally:
        cluster.stop()
        redis.close()


def run(seconds: float, clients: int) -> dict[str, Any]:
    return {
        f"{store}_{workers}w": measure(store, workers, clients, seconds)
        for store in ("memory", "redis")
        for workers in (1, 2)
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.scaleout_bench", description=__doc__)
    parser.add_argument("--seconds", type=float, default=5.0, help="length of each load run")
    parser.add_argument("--clients", type=int, default=16, help="concurrent clients (each one connection)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    options = parser.parse_args()
    result = run(options.seconds, options.clients)
    if options.json:
        print(json.dumps(result))
        return
    for key, wires in result.items():
        for wire, figures in wires.items():
            print(f"{key:10s} {wire:9s} {figures['rps']:8.0f} req/s  {figures['redis_commands_per_request']:.2f} Redis commands per request")


if __name__ == "__main__":
    main()
