"""A server on the generated 2026-07-28 and 2025-11-25 handler interfaces (no
application layer), for the interop tests (support/modern_peer.py extends it).

Tools: echo, add, progress (reports progress), ask (asks the user for a name:
an elicitation the client answers before retrying the call) and log (logs at
three levels: a 2026-07-28 client gets the messages only when its request asks
for a log level). Resources and the tool list carry caching hints (ttlMs,
cacheScope). One prompt.

``python tests/support/lowlevel_modern_server.py`` serves stdio; ``--http
--port 8000`` serves Streamable HTTP at http://127.0.0.1:8000/mcp.
"""

from __future__ import annotations

import argparse
from typing import Any

from typing_extensions import override

from mcpbind._core.jsonrpc import INVALID_PARAMS, McpError
from mcpbind._server.server import Server
from mcpbind.methods import RequestContext
from mcpbind.serving import run_stdio
from mcpbind_protocol import v2025_11_25 as legacy
from mcpbind_protocol import v2026_07_28 as mcp

NAME = "mcp-codegen-stateless-example"
VERSION = "0.1.0"
INSTRUCTIONS = "An example server for the 2026-07-28 runtime."

# How long clients may keep the lists and resources before asking again.
LIST_TTL_MS = 60_000
RESOURCE_TTL_MS = 300_000

README = "This server speaks MCP 2026-07-28 and 2025-11-25."

OBJECT: dict[str, Any] = {"type": "object"}
TOOL_SCHEMAS: dict[str, tuple[str, dict[str, Any]]] = {
    "echo": (
        "Return the text it is given.",
        {"properties": {"text": {"type": "string"}}, "required": ["text"]},
    ),
    "add": (
        "Add two numbers.",
        {"properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]},
    ),
    "progress": (
        "Count to `steps`, reporting progress at each.",
        {"properties": {"steps": {"type": "integer"}}},
    ),
    "ask": ("Ask the user for their name, then greet them.", {}),
    "log": (
        "Log a message at debug, info and warning level.",
        {"properties": {"message": {"type": "string"}}},
    ),
}

NAME_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string", "description": "Your name"}},
    "required": ["name"],
}


def _arguments(arguments: Any) -> dict[str, Any]:
    return arguments if isinstance(arguments, dict) else {}


def _review_text(arguments: Any) -> str:
    arguments = _arguments(arguments)
    return f"Please review this {arguments.get('language', 'code')}:\n{arguments.get('code', '')}"


class ModernHandlers(mcp.ServerHandlers):
    """What 2026-07-28 clients get."""

    @override
    async def list_tools(
        self, params: mcp.PaginatedRequestParams, ctx: RequestContext
    ) -> mcp.ListToolsResult:
        tools = [
            mcp.Tool(
                name=name, description=text, input_schema=mcp.ToolInputSchema(**OBJECT, **schema)
            )
            for name, (text, schema) in TOOL_SCHEMAS.items()
        ]
        return mcp.ListToolsResult(tools=tools, ttl_ms=LIST_TTL_MS, cache_scope="public")

    @override
    async def call_tool(
        self, params: mcp.CallToolRequestParams, ctx: RequestContext
    ) -> mcp.CallToolResult | mcp.InputRequiredResult:
        arguments = _arguments(params.arguments)
        if params.name == "echo":
            return mcp.CallToolResult(
                content=[mcp.TextContent(text=str(arguments.get("text", "")))]
            )
        if params.name == "add":
            total = float(arguments.get("a", 0)) + float(arguments.get("b", 0))
            return mcp.CallToolResult(
                content=[mcp.TextContent(text=repr(total))], structured_content={"sum": total}
            )
        if params.name == "progress":
            steps = int(arguments.get("steps", 3))
            for step in range(1, steps + 1):
                await ctx.report_progress(step, steps, f"step {step}/{steps}")
            return mcp.CallToolResult(content=[mcp.TextContent(text=f"done {steps} steps")])
        if params.name == "ask":
            return self.ask(params)
        if params.name == "log":
            message = str(arguments.get("message", "hello"))
            for level in ("debug", "info", "warning"):
                await ctx.log(level, f"{level}: {message}", logger="log")
            return mcp.CallToolResult(content=[mcp.TextContent(text="logged")])
        return mcp.CallToolResult(
            content=[mcp.TextContent(text=f"unknown tool {params.name!r}")], is_error=True
        )

    def ask(
        self, params: mcp.CallToolRequestParams
    ) -> mcp.CallToolResult | mcp.InputRequiredResult:
        # The first round asks; the retry carries the answer. Nothing is kept
        # here between the two: the runtime seals requestState for the client
        # to hand back, and refuses it if altered.
        answer = (
            params.input_responses.get("name") if isinstance(params.input_responses, dict) else None
        )
        if not isinstance(answer, mcp.ElicitResult):
            request = mcp.ElicitRequest(
                params=mcp.ElicitRequestFormParams(
                    message="What is your name?",
                    requested_schema=mcp.ElicitRequestFormParamsRequestedSchema(
                        properties={"name": mcp.StringSchema(description="Your name")},
                        required=["name"],
                    ),
                )
            )
            return mcp.InputRequiredResult(
                input_requests={"name": request}, request_state="asked:name"
            )
        if answer.action != "accept" or not isinstance(answer.content, dict):
            return mcp.CallToolResult(content=[mcp.TextContent(text=f"no name ({answer.action})")])
        return mcp.CallToolResult(
            content=[mcp.TextContent(text=f"Hello, {answer.content.get('name')}!")]
        )

    @override
    async def list_resources(
        self, params: mcp.PaginatedRequestParams, ctx: RequestContext
    ) -> mcp.ListResourcesResult:
        readme = mcp.Resource(uri="memo://readme", name="readme", mime_type="text/plain")
        return mcp.ListResourcesResult(resources=[readme], ttl_ms=LIST_TTL_MS, cache_scope="public")

    @override
    async def read_resource(
        self, params: mcp.ReadResourceRequestParams, ctx: RequestContext
    ) -> mcp.ReadResourceResult | mcp.InputRequiredResult:
        if params.uri != "memo://readme":
            raise McpError(INVALID_PARAMS, f"no resource {params.uri}", {"uri": params.uri})
        contents: list[mcp.TextResourceContents | mcp.BlobResourceContents] = [
            mcp.TextResourceContents(uri=params.uri, text=README, mime_type="text/plain")
        ]
        return mcp.ReadResourceResult(
            contents=contents, ttl_ms=RESOURCE_TTL_MS, cache_scope="public"
        )

    @override
    async def list_prompts(
        self, params: mcp.PaginatedRequestParams, ctx: RequestContext
    ) -> mcp.ListPromptsResult:
        arguments = [
            mcp.PromptArgument(name="code", required=True),
            mcp.PromptArgument(name="language"),
        ]
        prompt = mcp.Prompt(
            name="review", description="Ask for a code review.", arguments=arguments
        )
        return mcp.ListPromptsResult(prompts=[prompt], ttl_ms=LIST_TTL_MS, cache_scope="public")

    @override
    async def get_prompt(
        self, params: mcp.GetPromptRequestParams, ctx: RequestContext
    ) -> mcp.GetPromptResult | mcp.InputRequiredResult:
        if params.name != "review":
            raise McpError(INVALID_PARAMS, f"no prompt {params.name!r}")
        message = mcp.PromptMessage(
            role="user", content=mcp.TextContent(text=_review_text(params.arguments))
        )
        return mcp.GetPromptResult(description="A code review request", messages=[message])


class LegacyHandlers(legacy.ServerHandlers):
    """What 2025-11-25 clients get: the same tools, resources and prompt."""

    @override
    async def list_tools(
        self, params: legacy.PaginatedRequestParams, ctx: RequestContext
    ) -> legacy.ListToolsResult:
        tools = [
            legacy.Tool(
                name=name, description=text, input_schema=legacy.ToolInputSchema(**OBJECT, **schema)
            )
            for name, (text, schema) in TOOL_SCHEMAS.items()
        ]
        return legacy.ListToolsResult(tools=tools)

    @override
    async def call_tool(
        self, params: legacy.CallToolRequestParams, ctx: RequestContext
    ) -> legacy.CallToolResult:
        arguments = _arguments(params.arguments)
        if params.name == "echo":
            return legacy.CallToolResult(
                content=[legacy.TextContent(text=str(arguments.get("text", "")))]
            )
        if params.name == "add":
            total = float(arguments.get("a", 0)) + float(arguments.get("b", 0))
            return legacy.CallToolResult(
                content=[legacy.TextContent(text=repr(total))], structured_content={"sum": total}
            )
        if params.name == "progress":
            steps = int(arguments.get("steps", 3))
            for step in range(1, steps + 1):
                await ctx.report_progress(step, steps, f"step {step}/{steps}")
            return legacy.CallToolResult(content=[legacy.TextContent(text=f"done {steps} steps")])
        if params.name == "ask":
            # Before 2026-07-28 the server asks the client directly, mid-call.
            answer = await legacy.ServerStub(ctx.peer).elicit(
                legacy.ElicitRequestFormParams(
                    message="What is your name?",
                    requested_schema=legacy.ElicitRequestFormParamsRequestedSchema(
                        properties={"name": legacy.StringSchema(description="Your name")},
                        required=["name"],
                    ),
                )
            )
            if answer.action != "accept" or not isinstance(answer.content, dict):
                return legacy.CallToolResult(
                    content=[legacy.TextContent(text=f"no name ({answer.action})")]
                )
            return legacy.CallToolResult(
                content=[legacy.TextContent(text=f"Hello, {answer.content.get('name')}!")]
            )
        if params.name == "log":
            message = str(arguments.get("message", "hello"))
            for level in ("debug", "info", "warning"):
                await ctx.log(level, f"{level}: {message}", logger="log")
            return legacy.CallToolResult(content=[legacy.TextContent(text="logged")])
        return legacy.CallToolResult(
            content=[legacy.TextContent(text=f"unknown tool {params.name!r}")], is_error=True
        )

    @override
    async def list_resources(
        self, params: legacy.PaginatedRequestParams, ctx: RequestContext
    ) -> legacy.ListResourcesResult:
        readme = legacy.Resource(uri="memo://readme", name="readme", mime_type="text/plain")
        return legacy.ListResourcesResult(resources=[readme])

    @override
    async def read_resource(
        self, params: legacy.ReadResourceRequestParams, ctx: RequestContext
    ) -> legacy.ReadResourceResult:
        if params.uri != "memo://readme":
            raise McpError(INVALID_PARAMS, f"no resource {params.uri}", {"uri": params.uri})
        contents: list[legacy.TextResourceContents | legacy.BlobResourceContents] = [
            legacy.TextResourceContents(uri=params.uri, text=README, mime_type="text/plain")
        ]
        return legacy.ReadResourceResult(contents=contents)

    @override
    async def list_prompts(
        self, params: legacy.PaginatedRequestParams, ctx: RequestContext
    ) -> legacy.ListPromptsResult:
        arguments = [
            legacy.PromptArgument(name="code", required=True),
            legacy.PromptArgument(name="language"),
        ]
        prompt = legacy.Prompt(
            name="review", description="Ask for a code review.", arguments=arguments
        )
        return legacy.ListPromptsResult(prompts=[prompt])

    @override
    async def get_prompt(
        self, params: legacy.GetPromptRequestParams, ctx: RequestContext
    ) -> legacy.GetPromptResult:
        if params.name != "review":
            raise McpError(INVALID_PARAMS, f"no prompt {params.name!r}")
        content = legacy.TextContent(text=_review_text(params.arguments))
        return legacy.GetPromptResult(
            description="A code review request",
            messages=[legacy.PromptMessage(role="user", content=content)],
        )


def make_server(state_key: bytes | None = None) -> Server:
    """The example server; workers sharing a ``state_key`` accept each other's requestState."""
    return Server(
        [LegacyHandlers(), ModernHandlers()],
        name=NAME,
        version=VERSION,
        instructions=INSTRUCTIONS,
        state_key=state_key,
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--http", action="store_true", help="serve Streamable HTTP instead of stdio"
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    options = parser.parse_args()
    server = make_server()
    if not options.http:
        run_stdio(server)
        return
    import uvicorn

    from mcpbind.http import http_app

    uvicorn.run(
        http_app(server),
        host=options.host,
        port=options.port,
        log_level="warning",
        timeout_graceful_shutdown=2,
    )


if __name__ == "__main__":
    main()
