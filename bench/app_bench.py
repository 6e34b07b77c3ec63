"""The application layer (mcpbind.app) against the generated handler
interface and the SDK's MCPServer: the in-process measures of ``python -m
bench --parts app`` (the stdio round trips are bench/roundtrip.py against
bench/servers/app_stdio.py).

* handler: one ``tools/call`` of ``echo`` answered in process, through the
  app's handler (argument Struct, the function, the result) and through the
  hand-written handler of bench/servers/ours_stdio.py; the difference is what
  the layer adds per call.
* schema: deriving the input schema of a 10-parameter function (``@app.tool()``
  against ``@MCPServer.tool()``), and validating one set of its arguments
  (``msgspec.convert`` into the derived Struct against the SDK's
  ``FuncMetadata.validate_arguments``).
* middleware: one ``tools/call`` of ``echo`` through the route the session
  resolves (``Server.wrapped``), with no middleware and with each shipped one
  alone (``Cache`` also on a ``tools/list`` it answers from memory): what each
  adds per call.
* cold start: spawn a stdio server (app_stdio.py, sdk_stdio.py) and time until
  the answer to its first ``tools/list`` (after initialize), raw JSON lines.

``python -m bench.app_bench --json`` prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
import timeit
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
from pydantic import Field  # the SDK's constraint syntax (pydantic comes with mcp)

SERVERS = Path(__file__).resolve().parent / "servers"

ARGUMENTS: dict[str, Any] = {
    "query": "milk",
    "limit": 20,
    "offset": 5,
    "tags": ["shop", "home"],
    "sort": "date",
    "descending": True,
    "since": "2026-01-01",
    "min_score": 0.5,
    "author": "ann",
    "include_archived": False,
}


def ten_parameters(
    query: str,
    limit: Annotated[int, msgspec.Meta(ge=1, le=100)] = 10,
    offset: int = 0,
    tags: list[str] = [],
    sort: Literal["date", "score", "title"] = "score",
    descending: bool = False,
    since: str | None = None,
    min_score: float = 0.0,
    author: str | None = None,
    include_archived: bool = False,
) -> str:
    """Search notes."""
    return query


def sdk_ten_parameters(
    query: str,
    limit: Annotated[int, Field(ge=1, le=100)] = 10,
    offset: int = 0,
    tags: list[str] = [],
    sort: Literal["date", "score", "title"] = "score",
    descending: bool = False,
    since: str | None = None,
    min_score: float = 0.0,
    author: str | None = None,
    include_archived: bool = False,
) -> str:
    """Search notes."""
    return query


def per_call(statement: Any, repeats: int, number: int) -> float:
    """The best of ``repeats`` averages over ``number`` calls, in seconds."""
    return min(timeit.repeat(statement, repeat=repeats, number=number)) / number


# ------------------------------------------------------------------ schema and validation


def schema_and_validation(repeats: int, number: int) -> dict[str, Any]:
    from mcp.server.mcpserver import MCPServer

    from mcpbind.app import App

    sdk_fn = sdk_ten_parameters
    # Warm (imports and first-use caches done), as in a server registering many tools.
    App("b").tool()(ten_parameters)
    MCPServer("b").tool()(sdk_fn)
    ours_derive = per_call(lambda: App("b").tool()(ten_parameters), repeats, max(5, number // 100))
    sdk_derive = per_call(lambda: MCPServer("b").tool()(sdk_fn), repeats, max(5, number // 100))

    app = App("b")
    app.tool()(ten_parameters)
    struct = app.registry.tools["ten_parameters"].signature.arguments
    server = MCPServer("b")
    server.tool()(sdk_fn)
    sdk_tool = server._tool_manager.get_tool(
        "sdk_ten_parameters"
    )  # the SDK's own validation entry point
    assert sdk_tool is not None
    metadata = sdk_tool.fn_metadata
    assert msgspec.structs.asdict(
        msgspec.convert(ARGUMENTS, struct)
    ) == metadata.validate_arguments(ARGUMENTS)
    ours_validate = per_call(
        lambda: msgspec.structs.asdict(msgspec.convert(ARGUMENTS, struct)), repeats, number
    )
    sdk_validate = per_call(lambda: metadata.validate_arguments(ARGUMENTS), repeats, number)
    return {
        "derive_s": {"ours": ours_derive, "sdk": sdk_derive},
        "validate_s": {"ours": ours_validate, "sdk": sdk_validate},
    }


# ------------------------------------------------------------------ per-call overhead in process


def handler_overhead(calls: int, repeats: int) -> dict[str, Any]:
    from bench.servers.app_stdio import app
    from bench.servers.ours_stdio import EchoServer
    from mcpbind._core.session import SessionContext as RequestContext
    from mcpbind._server.server import Server, ServerSession
    from mcpbind._transports.memory import memory_pair
    from mcpbind_protocol import v2025_11_25 as mcp

    layered: mcp.ServerHandlers = next(
        h
        for h in app.handlers()
        if isinstance(h, mcp.ServerHandlers) and type(h).__mro__[1] is mcp.ServerHandlers
    )
    plain = EchoServer()
    params = mcp.CallToolRequestParams(name="echo", arguments={"text": "hello"})

    async def measure() -> dict[str, float]:
        server_end, _ = memory_pair()
        ctx = RequestContext(
            ServerSession(Server(plain, name="b", version="1"), server_end), 1, None
        )
        results: dict[str, float] = {}
        pairs: tuple[tuple[str, mcp.ServerHandlers], ...] = (("generated", plain), ("app", layered))
        for label, handlers in pairs:
            call = handlers.call_tool
            first = (await call(params, ctx)).content[0]
            assert isinstance(first, mcp.TextContent) and first.text == "hello"
            best = float("inf")
            for _ in range(repeats):
                start = time.perf_counter()
                for _ in range(calls):
                    await call(params, ctx)
                best = min(best, (time.perf_counter() - start) / calls)
            results[label] = best
        return results

    return {"per_call_s": asyncio.run(measure())}


def middleware_costs(calls: int, repeats: int) -> dict[str, Any]:
    """Per-call time of a routed tools/call with no middleware and with each shipped one."""
    import logging

    from mcpbind._core import lifecycle
    from mcpbind._core.session import SessionContext as RequestContext
    from mcpbind._server.server import ServerSession
    from mcpbind._transports.memory import memory_pair
    from mcpbind.app import (
        App,
        Cache,
        ErrorMapping,
        Middleware,
        RateLimit,
        StructuredLogging,
        Timing,
    )
    from mcpbind_protocol import v2025_11_25 as mcp

    # StructuredLogging's records are made and handed to a handler that drops them.
    calls_logger = logging.getLogger("bench.calls")
    calls_logger.addHandler(logging.NullHandler())
    calls_logger.setLevel(logging.INFO)
    calls_logger.propagate = False
    configs: dict[str, list[Middleware]] = {
        "none": [],
        "Timing": [Timing()],
        "StructuredLogging": [StructuredLogging("bench.calls")],
        "ErrorMapping": [ErrorMapping({KeyError: -32602})],
        "RateLimit": [RateLimit(10**9, per=60.0)],
        "Cache": [Cache(ttl=60.0)],
    }
    methods = lifecycle.revision("2025-11-25").all_methods
    params = mcp.CallToolRequestParams(name="echo", arguments={"text": "hello"})
    listing = mcp.PaginatedRequestParams()

    async def timed(route: Any, argument: Any, ctx: Any) -> float:
        await route(argument, ctx)
        best = float("inf")
        for _ in range(repeats):
            start = time.perf_counter()
            for _ in range(calls):
                await route(argument, ctx)
            best = min(best, (time.perf_counter() - start) / calls)
        return best

    async def measure() -> dict[str, float]:
        results: dict[str, float] = {}
        for label, middleware in configs.items():
            app = App("bench", middleware=middleware)

            @app.tool()
            def echo(text: str) -> str:
                return text

            server = app.server()
            handlers = next(h for h in app.handlers() if isinstance(h, mcp.ServerHandlers))
            server_end, _ = memory_pair()
            ctx = RequestContext(ServerSession(server, server_end), 1, None)
            route = server.wrapped(methods["tools/call"], handlers.call_tool)
            results[label] = await timed(route, params, ctx)
            if label == "Cache":
                lister = server.wrapped(methods["tools/list"], handlers.list_tools)
                results["Cache (tools/list, kept)"] = await timed(lister, listing, ctx)
        return results

    return {"per_call_s": asyncio.run(measure())}


# ------------------------------------------------------------------ cold start


def cold_start(impl: str, trials: int) -> dict[str, Any]:
    """Spawn to the answer of the first tools/list (after initialize), in seconds."""
    initialize = {
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}},
    }  # fmt: skip
    lines = [
        initialize,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    samples = []
    for _ in range(trials):
        start = time.perf_counter()
        process = subprocess.Popen(
            [sys.executable, str(SERVERS / f"{impl}_stdio.py")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(b"".join(json.dumps(line).encode() + b"\n" for line in lines))
        process.stdin.flush()
        while True:
            answer = process.stdout.readline()
            if not answer:
                raise RuntimeError(f"{impl} server ended before answering tools/list")
            if json.loads(answer).get("id") == 2:
                break
        samples.append(time.perf_counter() - start)
        process.stdin.close()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return {"median_s": statistics.median(samples), "samples": samples}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--json", action="store_true", help="print JSON (the default prints it too)"
    )
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--number", type=int, default=2000, help="calls per repeat for validation timings"
    )
    parser.add_argument("--handler-calls", type=int, default=20000)
    parser.add_argument("--cold-trials", type=int, default=5)
    options = parser.parse_args()
    result = {
        "schema": schema_and_validation(options.repeats, options.number),
        "handler": handler_overhead(options.handler_calls, options.repeats),
        "middleware": middleware_costs(options.handler_calls, options.repeats),
        "cold_start": {impl: cold_start(impl, options.cold_trials) for impl in ("app", "sdk")},
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
