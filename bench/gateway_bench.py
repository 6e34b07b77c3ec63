"""The gateway (``mcpx serve CONFIG``) against the backend it serves: the
measure of ``python -m bench --parts gateway``.

The backend is bench/servers/app_stdio.py (an ``echo`` tool on the
application layer), reached two ways: as a stdio child, and over Streamable
HTTP (uvicorn, its own process). For each, in the same run:

* direct: our client connected to the backend itself (stdio: the backend as
  its child; HTTP: its URL), ``tools/call echo``;
* through the gateway: our client connected over stdio to ``python -m
  mcpbind.cli serve CONFIG`` whose one entry is that backend,
  ``tools/call backend_echo``: one more process hop each way, and the
  gateway's work (decode, look up, re-encode for the backend, rebuild the
  answer as the front revision's types).

The client speaks 2025-11-25 on both paths; the gateway's own client
negotiates the newest revision the backend speaks. One call in flight;
batches of ``calls`` alternate (direct first in odd trials); µs per call are
medians over trials. The gateway's CPU per proxied call is the CPU time
(user + system, from /proc) its process spent over the gateway batches,
divided by their calls.

``python -m bench.gateway_bench --json`` prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
BACKEND = HERE / "servers" / "app_stdio.py"
REVISION = "2025-11-25"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def children() -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        with contextlib.suppress(OSError):
            found |= {int(pid) for pid in (task / "children").read_text().split()}
    return found


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextlib.contextmanager
def http_backend() -> Iterator[str]:
    """The backend under uvicorn in its own process; its URL."""
    port = free_port()
    process = subprocess.Popen([sys.executable, str(BACKEND), "http", str(port)])
    try:
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                break
            if time.monotonic() > deadline or process.poll() is not None:
                raise RuntimeError("the HTTP backend did not start")
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(10)


def stdio_parameters(command: list[str]) -> Any:
    from mcpbind._transports.stdio import StdioServerParameters

    return StdioServerParameters(
        command[0], command[1:], env=dict(os.environ), stderr=asyncio.subprocess.DEVNULL
    )


@contextlib.asynccontextmanager
async def connected(target: str | list[str]) -> AsyncIterator[Any]:
    """A client session to a URL, or to a command over stdio."""
    from mcpbind._client.client import Client, connect_stdio
    from mcpbind._transports.http.client.streamable import connect_http

    client = Client(name="bench", version="0", protocol_version=REVISION)
    if isinstance(target, str):
        async with connect_http(client, target) as session:
            yield session
    else:
        async with connect_stdio(client, stdio_parameters(target)) as session:
            yield session


async def batch(call: Callable[[], Awaitable[Any]], calls: int) -> float:
    """Seconds per call over ``calls`` sequential calls."""
    start = time.perf_counter()
    for _ in range(calls):
        await call()
    return (time.perf_counter() - start) / calls


async def compare(
    direct_target: str | list[str], entry: dict[str, Any], calls: int, trials: int
) -> dict[str, Any]:
    from mcpbind_protocol import v2025_11_25 as mcp

    with tempfile.TemporaryDirectory(prefix="bench-gateway-") as folder:
        config = Path(folder) / "gateway.json"
        config.write_text(json.dumps({"mcpServers": {"backend": entry}}))
        async with contextlib.AsyncExitStack() as stack:
            direct_session = await stack.enter_async_context(connected(direct_target))
            before = children()
            front = await stack.enter_async_context(
                connected([sys.executable, "-m", "mcpbind.cli", "serve", str(config)])
            )
            (gateway,) = children() - before
            direct_stub, gateway_stub = mcp.ClientStub(direct_session), mcp.ClientStub(front)
            arguments = {"text": "hello"}

            async def direct() -> Any:
                return await direct_stub.call_tool("echo", arguments=arguments)

            async def through() -> Any:
                return await gateway_stub.call_tool("backend_echo", arguments=arguments)

            # Both paths answer the same thing before anything is timed (and warm up).
            assert (await direct()).content == (await through()).content
            await batch(direct, calls // 10 or 1)
            await batch(through, calls // 10 or 1)
            runs: dict[str, list[float]] = {"direct": [], "gateway": []}
            cpu = 0.0
            for trial in range(trials):
                order = ("direct", "gateway") if trial % 2 == 0 else ("gateway", "direct")
                for label in order:
                    if label == "direct":
                        runs["direct"].append(await batch(direct, calls))
                        continue
                    used = cpu_seconds(gateway)
                    runs["gateway"].append(await batch(through, calls))
                    cpu += cpu_seconds(gateway) - used
    direct_s, gateway_s = statistics.median(runs["direct"]), statistics.median(runs["gateway"])
    return {
        "direct_s": direct_s,
        "gateway_s": gateway_s,
        "added_s": gateway_s - direct_s,
        "gateway_cpu_s": cpu / (calls * trials),
        "runs": runs,
    }


async def measure(calls: int, trials: int) -> dict[str, Any]:
    backend = [sys.executable, str(BACKEND)]
    results: dict[str, Any] = {"revision": REVISION, "calls": calls, "trials": trials}
    results["stdio"] = await compare(
        backend, {"command": backend[0], "args": backend[1:]}, calls, trials
    )
    with http_backend() as url:
        results["http"] = await compare(url, {"url": url}, calls, trials)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--json", action="store_true", help="print JSON (the default prints it too)"
    )
    parser.add_argument("--calls", type=int, default=1000, help="calls per batch")
    parser.add_argument("--trials", type=int, default=5, help="batches of each, alternating")
    options = parser.parse_args()
    print(json.dumps(asyncio.run(measure(options.calls, options.trials))))


if __name__ == "__main__":
    main()
