"""The low-level 2026-07-28 server (lowlevel_modern_server.py) with tools the
interop tests need besides: input requests of every kind in one round, two
rounds in a row, changes of the lists and of a resource on demand.

``python modern_peer.py [modern|legacy] [--record FILE]`` serves stdio:
``modern`` (the default) with 2025-11-25 and 2026-07-28 handlers, ``legacy``
with the 2025-11-25 handlers only. ``--record`` appends every message the
server receives to FILE, one JSON line each.
"""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import IO, Any

from typing_extensions import override

from mcpbind._server.server import Server
from mcpbind.methods import RequestContext
from mcpbind_protocol import v2026_07_28 as mcp

SUPPORT = Path(__file__).resolve().parent
REPO = SUPPORT.parents[1]
EXAMPLE = SUPPORT / "lowlevel_modern_server.py"
PEER = Path(__file__).resolve()

if str(SUPPORT.parent) not in sys.path:  # run as a script: make `support` importable
    sys.path.insert(0, str(SUPPORT.parent))

_example: ModuleType | None = None


def example() -> ModuleType:
    """lowlevel_modern_server.py, imported once."""
    global _example
    if _example is None:
        spec = importlib.util.spec_from_file_location("lowlevel_modern_server", EXAMPLE)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _example = module
    return _example


def _text(value: str) -> mcp.TextContent:
    return mcp.TextContent(text=value)


def _elicit(message: str) -> mcp.ElicitRequest:
    schema = mcp.ElicitRequestFormParamsRequestedSchema(
        properties={"name": mcp.StringSchema()}, required=["name"]
    )
    return mcp.ElicitRequest(
        params=mcp.ElicitRequestFormParams(message=message, requested_schema=schema)
    )


def _sample(question: str) -> mcp.CreateMessageRequest:
    message = mcp.SamplingMessage(role="user", content=_text(question))
    return mcp.CreateMessageRequest(
        params=mcp.CreateMessageRequestParams(messages=[message], max_tokens=50)
    )


def _described(answer: Any) -> str:
    if isinstance(answer, mcp.ElicitResult):
        content = answer.content if isinstance(answer.content, dict) else {}
        return f"elicit:{answer.action}:{content.get('name')}"
    if isinstance(answer, mcp.CreateMessageResult):
        sampled = answer.content
        text = sampled.text if isinstance(sampled, mcp.TextContent) else "?"
        return f"sample:{answer.model}:{text}"
    if isinstance(answer, mcp.ListRootsResult):
        return "roots:" + ",".join(root.uri for root in answer.roots)
    return f"unknown:{type(answer).__name__}"


EXTRA_TOOLS = {
    "inputs": "Ask for an elicitation, a sampling and the roots in one round.",
    "rounds": "Ask for an elicitation, then (second round) a sampling; report the states seen.",
    "sample": "Ask for a sampling.",
    "change": "Announce that the list of `kind` (tools, prompts, resources) changed; tools gain `extra`.",
    "touch": "Announce that the resource `uri` was updated.",
}


class PeerHandlers(example().ModernHandlers):  # type: ignore[misc]
    def __init__(self) -> None:
        self.server: Server | None = None
        self.extra = False
        self.list_tools_calls = 0

    @override
    async def list_tools(
        self, params: mcp.PaginatedRequestParams, ctx: RequestContext
    ) -> mcp.ListToolsResult:
        self.list_tools_calls += 1
        result: mcp.ListToolsResult = await super().list_tools(params, ctx)
        names = list(EXTRA_TOOLS) + (["extra"] if self.extra else [])
        schema = mcp.ToolInputSchema(type="object")
        more = [
            mcp.Tool(
                name=name, description=EXTRA_TOOLS.get(name, "Appeared later."), input_schema=schema
            )
            for name in names
        ]
        return mcp.ListToolsResult(
            tools=[*result.tools, *more], ttl_ms=result.ttl_ms, cache_scope=result.cache_scope
        )

    @override
    async def call_tool(
        self, params: mcp.CallToolRequestParams, ctx: RequestContext
    ) -> mcp.CallToolResult | mcp.InputRequiredResult:
        arguments: dict[str, Any] = params.arguments if isinstance(params.arguments, dict) else {}
        responses: dict[str, Any] = (
            params.input_responses if isinstance(params.input_responses, dict) else {}
        )
        state = params.request_state if isinstance(params.request_state, str) else None
        if params.name == "inputs":
            if not {"who", "capital", "roots"} <= set(responses):
                return mcp.InputRequiredResult(
                    input_requests={
                        "who": _elicit("Who are you?"),
                        "capital": _sample("What is the capital of France?"),
                        "roots": mcp.ListRootsRequest(),
                    },
                    request_state="inputs:1",
                )
            seen = [f"{key}={_described(responses[key])}" for key in ("who", "capital", "roots")]
            return mcp.CallToolResult(content=[_text("; ".join(seen) + f"; state={state}")])
        if params.name == "rounds":
            if state is None:
                return mcp.InputRequiredResult(
                    input_requests={"first": _elicit("First question")}, request_state="round:1"
                )
            if state == "round:1":
                first = _described(responses.get("first"))
                return mcp.InputRequiredResult(
                    input_requests={"second": _sample("Second question")},
                    request_state=f"round:2|{first}",
                )
            return mcp.CallToolResult(
                content=[_text(f"{state}|{_described(responses.get('second'))}")]
            )
        if params.name == "sample":
            if "answer" not in responses:
                return mcp.InputRequiredResult(input_requests={"answer": _sample("Anything?")})
            return mcp.CallToolResult(content=[_text(_described(responses["answer"]))])
        if params.name == "change":
            kind = str(arguments.get("kind", "tools"))
            if kind == "tools":
                self.extra = True
            assert self.server is not None
            await self.server.notify_list_changed(kind)
            return mcp.CallToolResult(content=[_text(f"{kind} changed")])
        if params.name == "touch":
            assert self.server is not None
            await self.server.notify_resource_updated(str(arguments["uri"]))
            return mcp.CallToolResult(content=[_text("touched")])
        if params.name == "list_tools_calls":
            return mcp.CallToolResult(content=[_text(str(self.list_tools_calls))])
        result: mcp.CallToolResult | mcp.InputRequiredResult = await super().call_tool(params, ctx)
        return result


def make_server(kind: str = "modern") -> Server:
    """A fresh peer server: ``modern`` speaks 2025-11-25 and 2026-07-28, ``legacy`` 2025-11-25 only."""
    module = example()
    if kind == "legacy":
        return Server(
            module.LegacyHandlers(),
            name=module.NAME,
            version=module.VERSION,
            instructions=module.INSTRUCTIONS,
        )
    handlers = PeerHandlers()
    server = Server(
        [module.LegacyHandlers(), handlers],
        name=module.NAME,
        version=module.VERSION,
        instructions=module.INSTRUCTIONS,
    )
    handlers.server = server
    return server


async def _serve(kind: str, record: IO[str] | None) -> None:
    from mcpbind._transports.stdio import process_stdio
    from support.wire import WireTap

    transport: Any = await process_stdio()
    if record is not None:
        transport = WireTap(transport, log=record)
    await make_server(kind).serve(transport)


def main(argv: list[str]) -> None:
    from mcpbind._transports.stdio import configure_stdio_logging

    kind = argv[0] if argv and not argv[0].startswith("--") else "modern"
    record = None
    if "--record" in argv:
        record = open(argv[argv.index("--record") + 1], "a", encoding="utf-8")
    configure_stdio_logging()
    try:
        asyncio.run(_serve(kind, record))
    except KeyboardInterrupt:
        pass
    finally:
        if record is not None:
            record.close()


if __name__ == "__main__":
    main(sys.argv[1:])
