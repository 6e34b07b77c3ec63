"""Parts 2 and 3: tools/call round trips, over stdio and over Streamable HTTP.

One run of this module (``python -m bench.roundtrip IMPL TRANSPORT``) is one
trial: it starts the echo server of ``IMPL`` (bench/servers), connects that
library's own client to it, lists the tools once (the SDK client fetches the
list anyway to validate results), warms up, then measures

* latency: ``calls`` sequential ``tools/call echo`` requests, each timed alone
  (p50 and p99);
* throughput: for each in-flight count, that many workers each call in a loop
  for ``seconds``; requests completed / elapsed time.

It prints one JSON object. ``python -m bench`` runs trials of both libraries
alternately, each in a fresh process, and keeps medians.

Clients and servers: ours = ``mcpbind._client.client.Client`` with
``connect_stdio`` / ``mcpbind._transports.http.client.streamable.connect_streamable_http``
against bench/servers/ours_stdio.py; SDK = ``mcp.Client`` against
bench/servers/sdk_stdio.py (``MCPServer``). HTTP servers are uvicorn, one
worker, 127.0.0.1, access log off, SSE responses (both libraries' default).

``--wire`` picks the protocol revision both sides speak:

* ``2025-11-25`` (default): the initialize handshake. Ours:
  ``Client(..., protocol_version="2025-11-25")`` (no server/discover probe)
  against the server's 2025-11-25 handlers; SDK: ``mode="legacy"``.
* ``2026-07-28``: no handshake; server/discover once, then every request
  carries its ``_meta`` (protocol version, client capabilities and info) and
  every result the server's info. Ours: ``Client(...)`` (2026-07-28 is its
  default) against the server's 2026-07-28 handlers (``--modern``); SDK:
  ``mode="auto"``, which speaks 2026-07-28 to ``MCPServer``.

Each client checks the revision it ended up with, so a silent fallback to the
handshake fails the trial instead of measuring the wrong thing.
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
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcpbind._client.client import ClientSession

SERVERS = Path(__file__).resolve().parent / "servers"
Call = Callable[[str], Awaitable[str]]
HANDSHAKE = "2025-11-25"
MODERN = "2026-07-28"
WIRES = (HANDSHAKE, MODERN)


def server_command(impl: str, wire: str) -> list[str]:
    """The command line of ``impl``'s echo server (stdio; add ``http PORT`` for HTTP)."""
    command = [sys.executable, str(SERVERS / f"{impl}_stdio.py")]
    # The SDK's MCPServer speaks both revisions; ours serves the handlers of one.
    if impl == "ours" and wire == MODERN:
        command.append("--modern")
    return command


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_for_port(port: int, process: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with status {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"server did not listen on port {port} within {timeout} s")


@contextlib.contextmanager
def http_server(impl: str, wire: str = HANDSHAKE) -> Any:
    """Start ``impl``'s echo server over Streamable HTTP; yield (url, process)."""
    port = free_port()
    process = subprocess.Popen(
        [*server_command(impl, wire), "http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}/mcp", process
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# ------------------------------------------------------------------ clients


@contextlib.asynccontextmanager
async def ours_client(
    transport: str, url: str | None, server: str = "ours", wire: str = HANDSHAKE
) -> AsyncIterator[Call]:
    from mcpbind._client.client import Client, connect_stdio
    from mcpbind._transports.stdio import StdioServerParameters

    client = Client(name="bench", version="1.0.0", protocol_version=wire)
    if transport == "stdio":
        command = server_command(server, wire)
        params = StdioServerParameters(command[0], command[1:], stderr=asyncio.subprocess.DEVNULL)
        connection = connect_stdio(client, params)
    else:
        from mcpbind._transports.http.client.streamable import connect_streamable_http

        assert url is not None
        connection = connect_streamable_http(client, url)
    async with connection as session:
        if session.protocol_version != wire:
            raise RuntimeError(f"our client speaks {session.protocol_version}, not {wire}")
        yield await (_modern_echo(session) if wire == MODERN else _handshake_echo(session))


async def _handshake_echo(session: ClientSession) -> Call:
    from mcpbind_protocol import v2025_11_25 as v

    stub = v.ClientStub(session)
    await stub.list_tools()

    async def call(text: str) -> str:
        result = await stub.call_tool("echo", arguments={"text": text})
        block = result.content[0]
        assert isinstance(block, v.TextContent)
        return block.text

    return call


async def _modern_echo(session: ClientSession) -> Call:
    from mcpbind_protocol import v2026_07_28 as v

    stub = v.ClientStub(session)
    await stub.list_tools()

    async def call(text: str) -> str:
        result = await stub.call_tool("echo", arguments={"text": text})
        block = result.content[0]
        assert isinstance(block, v.TextContent)
        return block.text

    return call


@contextlib.asynccontextmanager
async def sdk_client(
    transport: str, url: str | None, server: str = "sdk", wire: str = HANDSHAKE
) -> AsyncIterator[Call]:
    import mcp.types as t
    from mcp import Client, StdioServerParameters

    target: Any
    if transport == "stdio":
        command = server_command(server, wire)
        target = StdioServerParameters(command=command[0], args=command[1:])
    else:
        target = url
    async with Client(target, mode="auto" if wire == MODERN else "legacy") as client:
        if client.protocol_version != wire:
            raise RuntimeError(f"the SDK client speaks {client.protocol_version}, not {wire}")
        await client.list_tools()

        async def call(text: str) -> str:
            result = await client.call_tool("echo", {"text": text})
            block = result.content[0]
            assert isinstance(block, t.TextContent)
            return block.text

        yield call


# ------------------------------------------------------------------ measuring

_TICK = os.sysconf("SC_CLK_TCK")


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process, from /proc/<pid>/stat."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def _children() -> list[int]:
    me, found = os.getpid(), []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    if int(stat.read().rpartition(")")[2].split()[1]) == me:
                        found.append(int(entry))
            except (OSError, ValueError, IndexError):
                pass
    return found


def cpu_snapshot() -> tuple[float, float]:
    """CPU seconds used so far by this process (the client) and its children (the server)."""
    server = 0.0
    for pid in _children():
        try:
            server += _cpu_seconds(pid)
        except OSError:
            pass
    return _cpu_seconds(os.getpid()), server


async def latency(call: Call, calls: int) -> dict[str, float]:
    samples: list[float] = []
    for i in range(calls):
        text = f"hello {i}"
        start = time.perf_counter()
        answer = await call(text)
        samples.append(time.perf_counter() - start)
        if answer != text:
            raise AssertionError(f"echo answered {answer!r} to {text!r}")
    samples.sort()
    return {
        "calls": calls,
        "p50_s": samples[len(samples) // 2],
        "p99_s": samples[min(len(samples) - 1, int(len(samples) * 0.99))],
        "mean_s": statistics.fmean(samples),
    }


async def throughput(call: Call, in_flight: int, seconds: float) -> dict[str, float]:
    done = 0
    deadline = time.perf_counter() + seconds

    async def worker(w: int) -> None:
        nonlocal done
        i = 0
        while time.perf_counter() < deadline:
            text = f"w{w} {i}"
            if await call(text) != text:
                raise AssertionError("echo answered something else")
            done += 1
            i += 1

    cpu_before = cpu_snapshot()
    start = time.perf_counter()
    await asyncio.gather(*(worker(w) for w in range(in_flight)))
    elapsed = time.perf_counter() - start
    cpu_after = cpu_snapshot()
    return {
        "in_flight": in_flight,
        "requests": done,
        "seconds": elapsed,
        "rps": done / elapsed,
        # CPU time per request, less sensitive than wall time to other work on the machine.
        "client_cpu_s": (cpu_after[0] - cpu_before[0]) / max(done, 1),
        "server_cpu_s": (cpu_after[1] - cpu_before[1]) / max(done, 1),
    }


async def trial(
    impl: str,
    server: str,
    transport: str,
    url: str | None,
    calls: int,
    in_flight: list[int],
    seconds: float,
    wire: str = HANDSHAKE,
) -> dict[str, Any]:
    opener = ours_client if impl == "ours" else sdk_client
    async with opener(transport, url, server, wire) as call:
        for i in range(min(200, calls)):  # warm-up
            await call(f"warm {i}")
        result: dict[str, Any] = {
            "impl": impl,
            "server": server,
            "transport": transport,
            "wire": wire,
            "latency": await latency(call, calls) if calls else None,
        }
        result["throughput"] = [await throughput(call, n, seconds) for n in in_flight]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("impl", choices=("ours", "sdk"), help="whose client")
    parser.add_argument("transport", choices=("stdio", "http"))
    parser.add_argument(
        "--server",
        choices=("ours", "sdk", "app"),
        help="whose server (default: the client's; app: ours on the application layer)",
    )
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--in-flight", default="1,16,256")
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument(
        "--wire", choices=WIRES, default=HANDSHAKE, help="protocol revision of both sides"
    )
    options = parser.parse_args()
    in_flight = [int(n) for n in options.in_flight.split(",") if n]
    server = options.server or options.impl
    wire = options.wire
    if options.transport == "stdio":
        result = asyncio.run(
            trial(
                options.impl, server, "stdio", None, options.calls, in_flight, options.seconds, wire
            )
        )
    else:
        with http_server(server, wire) as (url, _):
            result = asyncio.run(
                trial(
                    options.impl,
                    server,
                    "http",
                    url,
                    options.calls,
                    in_flight,
                    options.seconds,
                    wire,
                )
            )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
