"""Scale-out: requests per second of our Streamable HTTP server run as 1 and
2 uvicorn workers, with everything in each worker (the default) and with the
Redis store, for stateless 2026-07-28 requests and for one handshake session;
and the Redis commands each request costs (``INFO commandstats`` deltas).

The server is tests/support/scaleout_app.py (its ``pid`` tool) under
``uvicorn --workers N`` (uvloop, httptools); Redis is a real
``redis-server`` on a free loopback port (Debian package), as in the
scale-out tests. The load is ``wrk`` (bench/http_server_bench.py finds or
installs it): ``connections`` connections, one wrk thread, POSTs of
``tools/call pid`` with fresh ids, either 2026-07-28 requests on their own or
all in one handshake session opened beforehand. The kernel hands each
connection to either worker, so with two workers a session's requests land
on both: with the in-process store the worker that did not make the session
answers 404 (the row counts those answers and is marked not applicable);
with Redis both serve it. wrk, the workers and Redis share this machine's
cores.

The Redis round trips of a stateless request: one worker (bench/soak.py's, which counts
every command or pipeline it sends, heartbeats included) with the default options, then
with ``app_wide_request_counts=True``, 200 sequential 2026-07-28 ``tools/call pid``.

Then the soak run (bench/soak.py): 2 and 4 workers behind HAProxy on one
Redis, ``soak_requests`` mixed requests at ``soak_in_flight`` at once, one
worker SIGKILLed and restarted and Redis restarted during the run.

``python -m bench.scaleout_bench --json`` prints one JSON object.
"""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import msgspec

from . import processes, soak
from .http_server_bench import LUA, find_wrk

ROOT = Path(__file__).resolve().parent.parent
# The scale-out tests' Redis launcher and worker cluster, reused (imported by
# name: the tests are not a package of the distribution).
sys.path.insert(0, str(ROOT / "tests"))
_redis_server: Any = importlib.import_module("support.redis_server")
_scaleout: Any = importlib.import_module("support.scaleout")
RedisServer = _redis_server.RedisServer
Workers = _scaleout.Workers
HANDSHAKE: str = _scaleout.HANDSHAKE
MODERN: str = _scaleout.MODERN
modern_meta = _scaleout.modern_meta
initialize = _scaleout.initialize

HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
_ID = 999_999_999  # replaced by wrk's request counter


def redis_calls(redis: Any) -> int:
    """Commands Redis has run since it started (every command, from INFO commandstats)."""
    info = redis.command("INFO", "commandstats").decode()
    return sum(
        int(line.split("calls=")[1].split(",")[0])
        for line in info.splitlines()
        if line.startswith("cmdstat_")
    )


def request_of(wire: str, session: str | None) -> tuple[dict[str, str], bytes]:
    """The headers and body (with the id placeholder) of one ``tools/call pid``."""
    params: dict[str, Any] = {"name": "pid", "arguments": {}}
    headers = dict(HEADERS)
    if wire == "modern":
        headers |= {"mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": "pid"}
        params["_meta"] = modern_meta()
    else:
        assert session is not None
        headers |= {"mcp-session-id": session, "mcp-protocol-version": HANDSHAKE}
    body = msgspec.json.encode(
        {"jsonrpc": "2.0", "id": _ID, "method": "tools/call", "params": params}
    )
    return headers, body


def open_session(url: str) -> str:
    """A handshake session; with the in-process store on two workers, tried
    until initialize and its notification land on the same worker."""
    for _ in range(40):
        try:
            return str(initialize(url))
        except AssertionError:
            continue
    raise RuntimeError(
        "no initialize and notifications/initialized landed on one worker in 40 tries"
    )


def lua_script(headers: dict[str, str], body: bytes) -> str:
    lines = "\n".join(f'  wrk.headers["{name}"] = "{value}"' for name, value in headers.items())
    text = body.decode().replace("%", "%%").replace(str(_ID), "%d")
    return LUA.format(headers=lines, body=text)


def wrk_load(wrk: str, url: str, script: Path, connections: int, seconds: float) -> dict[str, Any]:
    done = subprocess.run(
        [
            wrk,
            "-t1",
            f"-c{connections}",
            f"-d{max(1, round(seconds))}s",
            "--latency",
            "-s",
            str(script),
            url,
        ],
        capture_output=True,
        text=True,
        timeout=seconds + 60,
    )
    line = next((x for x in done.stdout.splitlines() if x.startswith("RESULT ")), None)
    if done.returncode != 0 or line is None:
        raise RuntimeError(
            f"wrk failed ({done.returncode}): {done.stderr.strip()[-300:] or done.stdout[-300:]}"
        )
    result: dict[str, Any] = json.loads(line[len("RESULT ") :])
    result["rps"] = result["requests"] / (result["duration_us"] / 1e6)
    return result


def measure(wrk: str, store: str, workers: int, connections: int, seconds: float) -> dict[str, Any]:
    redis = RedisServer()
    redis.start()
    cluster = Workers(redis if store == "redis" else None, workers, store=store)
    try:
        cluster.start()
        result: dict[str, Any] = {}
        with tempfile.TemporaryDirectory() as folder:
            for wire in ("modern", "handshake"):
                session = open_session(cluster.url) if wire == "handshake" else None
                script = Path(folder) / f"{wire}.lua"
                script.write_text(lua_script(*request_of(wire, session)))
                wrk_load(wrk, cluster.url, script, connections, min(seconds, 1.0))  # warm-up
                before = redis_calls(redis)
                row = wrk_load(wrk, cluster.url, script, connections, seconds)
                commands = redis_calls(redis) - before - 1  # less the INFO itself
                refused = row["errors"]["status"]
                row["redis_commands_per_request"] = commands / max(row["requests"], 1)
                row["refused_share"] = refused / max(row["requests"], 1)
                if wire == "handshake" and store == "memory" and workers > 1:
                    row["not_applicable"] = (
                        "the in-process store keeps a session in the worker that made it: "
                        f"{row['refused_share']:.0%} of the requests landed on the other worker and got 404"
                    )
                result[wire] = row
        return result
    finally:
        cluster.stop()
        redis.close()


def stateless_round_trips(calls: int = 200) -> dict[str, Any]:
    """Redis round trips per stateless 2026-07-28 request of one worker, with the default
    per-client quotas (``default``) and with ``app_wide_request_counts=True``
    (``app_wide``)."""
    found: dict[str, Any] = {"calls": calls}
    redis = RedisServer()
    redis.start()
    try:
        with tempfile.TemporaryDirectory() as folder:
            for key, quotas in (("default", "default"), ("app_wide", "default,app-wide")):
                backend = soak.Backend(0, redis.url, Path(folder) / f"{key}.log", quotas)
                backend.start()
                try:
                    url = f"http://127.0.0.1:{backend.port}/mcp"
                    headers, body = request_of("modern", None)
                    with httpx.Client(timeout=30) as client:
                        for n in range(20):  # warm-up: connections made, scripts loaded
                            send(client, url, headers, body, n)
                        before = backend.trips()
                        for n in range(calls):
                            send(client, url, headers, body, 100 + n)
                        after = backend.trips()
                        # Reading the count is a stateless request too: what it costs
                        # (between two readings) is taken off.
                        reading = backend.trips() - after
                    found[key] = (after - before - reading) / calls
                finally:
                    backend.stop()
    finally:
        redis.close()
    return found


def send(client: httpx.Client, url: str, headers: dict[str, str], body: bytes, n: int) -> None:
    answer = client.post(
        url, headers=headers, content=body.replace(str(_ID).encode(), str(n).encode())
    )
    assert answer.status_code == 200 and b'"result"' in answer.content, answer.text


def run(
    seconds: float,
    connections: int,
    wrk: str | None = None,
    soak_requests: int = 10_000,
    soak_in_flight: int = 512,
    worker_counts: tuple[int, ...] = (1, 2),
) -> dict[str, Any]:
    found = find_wrk(wrk)
    started = time.time()
    result: dict[str, Any] = {
        f"{store}_{workers}w": measure(found, store, workers, connections, seconds)
        for store in ("memory", "redis")
        for workers in worker_counts
    }
    result["stateless_round_trips"] = stateless_round_trips()
    if soak_requests:
        try:
            result["soak"] = soak.run(soak_requests, soak_in_flight)
        except soak.HaproxyMissing as missing:
            result["soak"] = {"skipped": str(missing)}
    result["settings"] = {
        "seconds": seconds,
        "connections": connections,
        "load": "wrk, 1 thread",
        "took_s": time.time() - started,
    }
    return result


def main() -> None:
    with processes.owned():
        _main()


def _main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.scaleout_bench", description=__doc__)
    parser.add_argument("--seconds", type=float, default=5.0, help="length of each wrk run")
    parser.add_argument("--connections", type=int, default=16, help="wrk connections")
    parser.add_argument(
        "--wrk", help="the wrk executable (default: on PATH, else installed with apt-get)"
    )
    parser.add_argument(
        "--soak-requests", type=int, default=10_000, help="requests of the soak run (0: none)"
    )
    parser.add_argument(
        "--soak-in-flight", type=int, default=512, help="soak requests in flight at once"
    )
    parser.add_argument("--workers", default="1,2", help="worker counts, comma-separated")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    options = parser.parse_args()
    result = run(
        options.seconds,
        options.connections,
        options.wrk,
        options.soak_requests,
        options.soak_in_flight,
        tuple(int(n) for n in options.workers.split(",")),
    )
    if options.json:
        print(json.dumps(result))
        return
    for key, wires in result.items():
        if key in ("settings", "soak", "stateless_round_trips"):
            continue
        for wire, row in wires.items():
            note = f"  (not applicable: {row['not_applicable']})" if "not_applicable" in row else ""
            print(
                f"{key:10s} {wire:9s} {row['rps']:8.0f} req/s  p99 {row['p99_us'] / 1e3:6.2f} ms"
                f"  {row['redis_commands_per_request']:.2f} Redis commands per request{note}"
            )
    trips = result["stateless_round_trips"]
    print(
        f"Redis round trips per stateless request: {trips['default']:.2f} (default options),"
        f" {trips['app_wide']:.2f} (app_wide_request_counts=True)"
    )
    print(json.dumps(result.get("soak"), indent=2))


if __name__ == "__main__":
    main()
