"""A server on the generated 2025-11-25 handler interface (no application
layer), for the tests of the runtime: tools (one reporting progress, one slow
and cancellable, two that fail on purpose), resources and a resource template,
prompts, completion and logging. Other test servers subclass
:class:`LowLevelServer`.

``python tests/support/lowlevel_server.py`` serves it over stdio.
"""

from __future__ import annotations

import asyncio
import base64
import os
from typing import Any

from typing_extensions import override

from mcpbind._core.jsonrpc import INVALID_PARAMS, McpError
from mcpbind._server.server import Server
from mcpbind.methods import RequestContext
from mcpbind.serving import run_stdio
from mcpbind_protocol import v2025_11_25 as mcp

TOOLS = [
    mcp.Tool(
        name="echo",
        description="Return the text it is given.",
        input_schema=mcp.ToolInputSchema(
            type="object",
            properties={"text": {"type": "string"}},
            required=["text"],
            additionalProperties=False,
        ),
    ),
    mcp.Tool(
        name="add",
        description="Add two numbers.",
        input_schema=mcp.ToolInputSchema(
            type="object",
            properties={"a": {"type": "number"}, "b": {"type": "number"}},
            required=["a", "b"],
        ),
    ),
    mcp.Tool(
        name="count",
        description="Count to `steps`, reporting progress and logging each step.",
        input_schema=mcp.ToolInputSchema(
            type="object", properties={"steps": {"type": "integer", "minimum": 1}}
        ),
    ),
    mcp.Tool(
        name="sleep",
        description="Wait `seconds` before answering; cancel it to stop early.",
        input_schema=mcp.ToolInputSchema(type="object", properties={"seconds": {"type": "number"}}),
    ),
    mcp.Tool(
        name="reconnect",
        description="Over HTTP, close this call's SSE stream mid-way (the client resumes it), "
        "wait `pause` seconds and answer; reports progress and logs before, during and after.",
        input_schema=mcp.ToolInputSchema(type="object", properties={"pause": {"type": "number"}}),
    ),
    mcp.Tool(
        name="fail",
        description="Raise an exception: the client gets an internal error, the traceback stays on stderr.",
        input_schema=mcp.ToolInputSchema(type="object"),
    ),
    mcp.Tool(
        name="crash",
        description="End the server process at once with exit status 3, as a crash would.",
        input_schema=mcp.ToolInputSchema(type="object"),
    ),
]

RESOURCES = {
    "memo://readme": ("text/plain", "This server exists to show the runtime."),
    "memo://logo": ("image/png", base64.b64encode(b"\x89PNG\r\n\x1a\n").decode()),
}

LANGUAGES = ["python", "rust", "ruby", "go", "typescript"]


def _text(value: str) -> mcp.TextContent:
    return mcp.TextContent(text=value)


class LowLevelServer(mcp.ServerHandlers):
    @override
    async def list_tools(
        self, params: mcp.PaginatedRequestParams, ctx: RequestContext
    ) -> mcp.ListToolsResult:
        return mcp.ListToolsResult(tools=TOOLS)

    @override
    async def call_tool(
        self, params: mcp.CallToolRequestParams, ctx: RequestContext
    ) -> mcp.CallToolResult:
        arguments: dict[str, Any] = params.arguments if isinstance(params.arguments, dict) else {}
        if params.name == "echo":
            return mcp.CallToolResult(content=[_text(str(arguments.get("text", "")))])
        if params.name == "add":
            total = float(arguments.get("a", 0)) + float(arguments.get("b", 0))
            return mcp.CallToolResult(
                content=[_text(repr(total))], structured_content={"sum": total}
            )
        if params.name == "count":
            steps = int(arguments.get("steps", 3))
            for step in range(1, steps + 1):
                await ctx.report_progress(step, steps, f"step {step}/{steps}")
                await ctx.log("info", f"reached step {step}", logger="count")
                await asyncio.sleep(0)
            return mcp.CallToolResult(content=[_text(f"counted to {steps}")])
        if params.name == "sleep":
            await asyncio.sleep(float(arguments.get("seconds", 60)))
            return mcp.CallToolResult(content=[_text("awake")])
        if params.name == "reconnect":
            await ctx.report_progress(1, 3, "before the stream closes")
            await ctx.log("info", "closing the stream", logger="reconnect")
            ctx.close_sse_stream()
            await ctx.report_progress(2, 3, "while the client is away")
            await ctx.log("info", "sent while the client was away", logger="reconnect")
            await asyncio.sleep(float(arguments.get("pause", 0.2)))
            await ctx.report_progress(3, 3, "after the pause")
            return mcp.CallToolResult(content=[_text("resumed")])
        if params.name == "fail":
            raise RuntimeError("the fail tool failed (this text must not reach the client)")
        if params.name == "crash":
            os._exit(3)
        return mcp.CallToolResult(content=[_text(f"unknown tool {params.name!r}")], is_error=True)

    @override
    async def list_resources(
        self, params: mcp.PaginatedRequestParams, ctx: RequestContext
    ) -> mcp.ListResourcesResult:
        return mcp.ListResourcesResult(
            resources=[
                mcp.Resource(uri=uri, name=uri.removeprefix("memo://"), mime_type=mime)
                for uri, (mime, _) in RESOURCES.items()
            ]
        )

    @override
    async def list_resource_templates(
        self, params: mcp.PaginatedRequestParams, ctx: RequestContext
    ) -> mcp.ListResourceTemplatesResult:
        return mcp.ListResourceTemplatesResult(
            resource_templates=[
                mcp.ResourceTemplate(
                    uri_template="greeting://{name}", name="greeting", mime_type="text/plain"
                )
            ]
        )

    @override
    async def read_resource(
        self, params: mcp.ReadResourceRequestParams, ctx: RequestContext
    ) -> mcp.ReadResourceResult:
        if params.uri.startswith("greeting://"):
            name = params.uri.removeprefix("greeting://")
            return mcp.ReadResourceResult(
                contents=[
                    mcp.TextResourceContents(
                        uri=params.uri, text=f"Hello, {name}!", mime_type="text/plain"
                    )
                ]
            )
        if params.uri not in RESOURCES:
            raise McpError(INVALID_PARAMS, f"no resource {params.uri}", {"uri": params.uri})
        mime, body = RESOURCES[params.uri]
        if mime.startswith("text/"):
            contents: list[mcp.TextResourceContents | mcp.BlobResourceContents] = [
                mcp.TextResourceContents(uri=params.uri, text=body, mime_type=mime)
            ]
        else:
            contents = [mcp.BlobResourceContents(uri=params.uri, blob=body, mime_type=mime)]
        return mcp.ReadResourceResult(contents=contents)

    @override
    async def list_prompts(
        self, params: mcp.PaginatedRequestParams, ctx: RequestContext
    ) -> mcp.ListPromptsResult:
        return mcp.ListPromptsResult(
            prompts=[
                mcp.Prompt(
                    name="review",
                    description="Ask for a code review.",
                    arguments=[
                        mcp.PromptArgument(name="code", required=True),
                        mcp.PromptArgument(name="language"),
                    ],
                )
            ]
        )

    @override
    async def get_prompt(
        self, params: mcp.GetPromptRequestParams, ctx: RequestContext
    ) -> mcp.GetPromptResult:
        if params.name != "review":
            raise McpError(INVALID_PARAMS, f"no prompt {params.name!r}")
        arguments = params.arguments if isinstance(params.arguments, dict) else {}
        language = arguments.get("language", "code")
        return mcp.GetPromptResult(
            description="A code review request",
            messages=[
                mcp.PromptMessage(
                    role="user",
                    content=_text(f"Please review this {language}:\n{arguments.get('code', '')}"),
                )
            ],
        )

    @override
    async def complete(
        self, params: mcp.CompleteRequestParams, ctx: RequestContext
    ) -> mcp.CompleteResult:
        prefix = params.argument.value
        if params.argument.name == "language":
            values = [language for language in LANGUAGES if language.startswith(prefix)]
        elif params.argument.name == "name":
            values = [name for name in ("alice", "bob", "carol") if name.startswith(prefix)]
        else:
            values = []
        return mcp.CompleteResult(
            completion=mcp.CompleteResultCompletion(
                values=values, total=len(values), has_more=False
            )
        )


def main() -> None:
    server = Server(
        LowLevelServer(),
        name="mcp-codegen-example",
        version="0.1.0",
        instructions="An example server for the mcp-codegen runtime.",
        capabilities={"resources": {"listChanged": False}},
    )
    run_stdio(server)


if __name__ == "__main__":
    main()
