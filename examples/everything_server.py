"""The MCP conformance "everything" server, over Streamable HTTP.

It implements every fixture the server scenarios of the official conformance
suite (npm ``@modelcontextprotocol/conformance``) call: the ``test_*`` tools,
the ``test://`` resources and template, the ``test_*`` prompts, completion,
logging and resource subscriptions.

``python examples/everything_server.py [--port 3001]`` serves it at
http://127.0.0.1:3001/mcp; ``python tests/conformance.py`` runs the suite
against it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextvars
import json
import logging
from typing import Any

import uvicorn
from typing_extensions import override

from mcp_protocol import v2025_11_25 as mcp
from mcp_runtime.jsonrpc import ConnectionClosed, INVALID_PARAMS, McpError
from mcp_runtime.methods import Caller, RequestContext
from mcp_runtime.server import Server
from mcp_runtime.streamable_http import StreamableHTTPApp

logger = logging.getLogger("everything_server")

# A 1x1 PNG and a WAV file with one sample.
PNG_BASE64 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
WAV_BASE64 = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="

JSON_SCHEMA_2020_12 = "https://json-schema.org/draft/2020-12/schema"


# ---------------------------------------------------------------- tools


def _tool(name: str, description: str, properties: dict[str, dict[str, Any]] | None = None) -> mcp.Tool:
    schema = mcp.ToolInputSchema(properties=properties or {})
    if properties:
        schema["required"] = sorted(properties)
    return mcp.Tool(name=name, description=description, input_schema=schema)


TOOLS = [
    _tool("test_simple_text", "Returns a simple text response."),
    _tool("test_image_content", "Returns a PNG image."),
    _tool("test_audio_content", "Returns a WAV audio clip."),
    _tool("test_embedded_resource", "Returns an embedded text resource."),
    _tool("test_multiple_content_types", "Returns text, an image and an embedded resource."),
    _tool("test_tool_with_logging", "Sends three info log messages while it runs."),
    _tool("test_tool_with_progress", "Reports progress 0, 50 and 100 of 100."),
    _tool("test_error_handling", "Always fails, with a tool error result."),
    _tool(
        "test_sampling",
        "Asks the client's LLM to answer a prompt (sampling/createMessage).",
        {"prompt": {"type": "string", "description": "The prompt to send to the LLM"}},
    ),
    _tool(
        "test_elicitation",
        "Asks the user for a username and an email (elicitation/create).",
        {"message": {"type": "string", "description": "The message to show the user"}},
    ),
    _tool(
        "test_elicitation_sep1034_defaults",
        "Elicits a form whose fields of every primitive type have defaults (SEP-1034).",
    ),
    _tool("test_elicitation_sep1330_enums", "Elicits a form with the five enum schema variants (SEP-1330)."),
    _tool(
        "test_reconnection",
        "Closes the request's SSE stream mid-call; the result arrives after the client resumes (SEP-1699).",
    ),
    mcp.Tool(
        name="json_schema_2020_12_tool",
        description="Tool with JSON Schema 2020-12 features",
        input_schema=mcp.ToolInputSchema(
            schema=JSON_SCHEMA_2020_12,
            properties={"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
            additionalProperties=False,
        ),
    ),
]
# Keys that are not Python names go in as items of the open schema object.
TOOLS[-1].input_schema["$defs"] = {
    "address": {
        "type": "object",
        "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
    }
}


def _text(value: str) -> mcp.TextContent:
    return mcp.TextContent(text=value)


def _result(*content: mcp.ContentBlock, is_error: bool = False) -> mcp.CallToolResult:
    if is_error:
        return mcp.CallToolResult(content=list(content), is_error=True)
    return mcp.CallToolResult(content=list(content))


def _elicitation_text(prefix: str, result: mcp.ElicitResult) -> str:
    content = json.dumps(result.content if isinstance(result.content, dict) else {})
    return f"{prefix}: action={result.action}, content={content}"


SEP1034_SCHEMA = mcp.ElicitRequestFormParamsRequestedSchema(
    properties={
        "name": mcp.StringSchema(description="User name", default="John Doe"),
        "age": mcp.NumberSchema(type="integer", description="User age", default=30),
        "score": mcp.NumberSchema(type="number", description="User score", default=95.5),
        "status": mcp.UntitledSingleSelectEnumSchema(
            description="User status", enum=["active", "inactive", "pending"], default="active"
        ),
        "verified": mcp.BooleanSchema(description="Verification status", default=True),
    }
)

SEP1330_SCHEMA = mcp.ElicitRequestFormParamsRequestedSchema(
    properties={
        "untitledSingle": mcp.UntitledSingleSelectEnumSchema(
            description="Single choice without titles", enum=["option1", "option2", "option3"]
        ),
        "titledSingle": mcp.TitledSingleSelectEnumSchema(
            description="Single choice with titles",
            one_of=[
                mcp.TitledSingleSelectEnumSchemaOneOfItem(const="value1", title="First Option"),
                mcp.TitledSingleSelectEnumSchemaOneOfItem(const="value2", title="Second Option"),
                mcp.TitledSingleSelectEnumSchemaOneOfItem(const="value3", title="Third Option"),
            ],
        ),
        "legacyEnum": mcp.LegacyTitledEnumSchema(
            description="Single choice with enumNames (deprecated)",
            enum=["opt1", "opt2", "opt3"],
            enum_names=["Option One", "Option Two", "Option Three"],
        ),
        "untitledMulti": mcp.UntitledMultiSelectEnumSchema(
            description="Multiple choice without titles",
            items=mcp.UntitledMultiSelectEnumSchemaItems(enum=["option1", "option2", "option3"]),
        ),
        "titledMulti": mcp.TitledMultiSelectEnumSchema(
            description="Multiple choice with titles",
            items=mcp.TitledMultiSelectEnumSchemaItems(
                any_of=[
                    mcp.TitledMultiSelectEnumSchemaItemsAnyOfItem(const="value1", title="First Choice"),
                    mcp.TitledMultiSelectEnumSchemaItemsAnyOfItem(const="value2", title="Second Choice"),
                    mcp.TitledMultiSelectEnumSchemaItemsAnyOfItem(const="value3", title="Third Choice"),
                ]
            ),
        ),
    }
)


# ---------------------------------------------------------------- resources

STATIC_TEXT = "This is the content of the static text resource."
WATCHED_URI = "test://watched-resource"
TEMPLATE_URI = "test://template/{id}/data"
TEMPLATE_PREFIX, TEMPLATE_SUFFIX = "test://template/", "/data"


class WatchedResource:
    """``test://watched-resource``: its text changes every ``interval``
    seconds, and every session subscribed to it is told so with
    ``notifications/resources/updated``, sent from outside any handler."""

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self.revision = 0
        self.subscribers: dict[int, mcp.ServerStub] = {}
        self._ticker: asyncio.Task[None] | None = None

    @property
    def text(self) -> str:
        return f"Watched resource content (revision {self.revision})"

    def subscribe(self, peer: Caller) -> None:
        self.subscribers[id(peer)] = mcp.ServerStub(peer)
        if self._ticker is None and self.interval > 0:
            # A fresh context: what the ticker sends belongs to no request.
            self._ticker = asyncio.get_running_loop().create_task(self._tick(), context=contextvars.Context())

    def unsubscribe(self, peer: Caller) -> None:
        self.subscribers.pop(id(peer), None)

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            if not self.subscribers:
                continue
            self.revision += 1
            for key, stub in list(self.subscribers.items()):
                try:
                    await stub.notify_resource_updated(WATCHED_URI)
                except ConnectionClosed:
                    self.subscribers.pop(key, None)
                except McpError as error:
                    logger.warning("cannot notify a subscriber: %s", error.message)
                    self.subscribers.pop(key, None)


# ---------------------------------------------------------------- prompts

PROMPTS = [
    mcp.Prompt(name="test_simple_prompt", description="A simple prompt without arguments"),
    mcp.Prompt(
        name="test_prompt_with_arguments",
        description="A prompt with two required arguments",
        arguments=[
            mcp.PromptArgument(name="arg1", description="First test argument", required=True),
            mcp.PromptArgument(name="arg2", description="Second test argument", required=True),
        ],
    ),
    mcp.Prompt(
        name="test_prompt_with_embedded_resource",
        description="A prompt that embeds a resource",
        arguments=[mcp.PromptArgument(name="resourceUri", description="URI of the resource to embed", required=True)],
    ),
    mcp.Prompt(name="test_prompt_with_image", description="A prompt that includes an image"),
]

COMPLETIONS = {
    "arg1": ["paris", "park", "party", "test", "testing"],
    "arg2": ["world", "wide", "web"],
    "id": ["1", "2", "3", "123"],
    "resourceUri": ["test://static-text", "test://static-binary", WATCHED_URI],
}


# ---------------------------------------------------------------- handlers


class EverythingServer(mcp.ServerHandlers):
    def __init__(self, watched: WatchedResource) -> None:
        self.watched = watched

    # tools -----------------------------------------------------------

    @override
    async def list_tools(self, params: mcp.PaginatedRequestParams, ctx: RequestContext) -> mcp.ListToolsResult:
        return mcp.ListToolsResult(tools=TOOLS)

    @override
    async def call_tool(self, params: mcp.CallToolRequestParams, ctx: RequestContext) -> mcp.CallToolResult:
        arguments: dict[str, Any] = params.arguments if isinstance(params.arguments, dict) else {}
        name = params.name
        if name == "test_simple_text":
            return _result(_text("This is a simple text response for testing."))
        if name == "test_image_content":
            return _result(mcp.ImageContent(data=PNG_BASE64, mime_type="image/png"))
        if name == "test_audio_content":
            return _result(mcp.AudioContent(data=WAV_BASE64, mime_type="audio/wav"))
        if name == "test_embedded_resource":
            return _result(
                mcp.EmbeddedResource(
                    resource=mcp.TextResourceContents(
                        uri="test://embedded-resource",
                        mime_type="text/plain",
                        text="This is an embedded resource content.",
                    )
                )
            )
        if name == "test_multiple_content_types":
            return _result(
                _text("Multiple content types test:"),
                mcp.ImageContent(data=PNG_BASE64, mime_type="image/png"),
                mcp.EmbeddedResource(
                    resource=mcp.TextResourceContents(
                        uri="test://mixed-content-resource",
                        mime_type="application/json",
                        text='{"test":"data","value":123}',
                    )
                ),
            )
        if name == "test_tool_with_logging":
            await ctx.log("info", "Tool execution started")
            await asyncio.sleep(0.05)
            await ctx.log("info", "Tool processing data")
            await asyncio.sleep(0.05)
            await ctx.log("info", "Tool execution completed")
            return _result(_text("Tool with logging executed successfully"))
        if name == "test_tool_with_progress":
            for step, progress in enumerate((0, 50, 100)):
                if step:
                    await asyncio.sleep(0.05)
                await ctx.report_progress(progress, 100, f"Completed step {progress} of 100")
            return _result(_text("Tool with progress executed successfully"))
        if name == "test_error_handling":
            return _result(_text("This tool intentionally returns an error for testing"), is_error=True)
        if name == "test_sampling":
            return await self._sampling(str(arguments.get("prompt", "")), ctx)
        if name == "test_elicitation":
            return await self._elicitation(str(arguments.get("message", "")), ctx)
        if name == "test_elicitation_sep1034_defaults":
            result = await self._elicit(ctx, "Please review your user information", SEP1034_SCHEMA)
            return _result(_text(_elicitation_text("Elicitation completed", result)))
        if name == "test_elicitation_sep1330_enums":
            result = await self._elicit(ctx, "Please pick values for each kind of enum", SEP1330_SCHEMA)
            return _result(_text(_elicitation_text("Elicitation completed", result)))
        if name == "test_reconnection":
            await ctx.log("info", "Before disconnect")
            ctx.close_sse_stream()
            await asyncio.sleep(0.2)  # the client reconnects meanwhile
            await ctx.log("info", "After reconnect")
            return _result(_text("Reconnection test completed"))
        if name == "json_schema_2020_12_tool":
            return _result(_text(f"Received {json.dumps(arguments, sort_keys=True)}"))
        raise McpError(INVALID_PARAMS, f"Unknown tool: {name}", {"name": name})

    async def _sampling(self, prompt: str, ctx: RequestContext) -> mcp.CallToolResult:
        try:
            answer = await mcp.ServerStub(ctx.peer).create_message(
                max_tokens=100,
                messages=[mcp.SamplingMessage(role="user", content=_text(prompt))],
            )
        except McpError as error:
            return _result(_text(f"Sampling failed: {error.message}"), is_error=True)
        content = answer.content
        text = content.text if isinstance(content, mcp.TextContent) else f"<{type(content).__name__}>"
        return _result(_text(f"LLM response: {text}"))

    async def _elicitation(self, message: str, ctx: RequestContext) -> mcp.CallToolResult:
        schema = mcp.ElicitRequestFormParamsRequestedSchema(
            properties={
                "username": mcp.StringSchema(description="User's response"),
                "email": mcp.StringSchema(description="User's email address"),
            },
            required=["username", "email"],
        )
        try:
            result = await self._elicit(ctx, message, schema)
        except McpError as error:
            return _result(_text(f"Elicitation failed: {error.message}"), is_error=True)
        return _result(_text(_elicitation_text("User response", result)))

    async def _elicit(
        self, ctx: RequestContext, message: str, schema: mcp.ElicitRequestFormParamsRequestedSchema
    ) -> mcp.ElicitResult:
        return await mcp.ServerStub(ctx.peer).elicit(
            mcp.ElicitRequestFormParams(message=message, requested_schema=schema)
        )

    # resources -------------------------------------------------------

    @override
    async def list_resources(
        self, params: mcp.PaginatedRequestParams, ctx: RequestContext
    ) -> mcp.ListResourcesResult:
        return mcp.ListResourcesResult(
            resources=[
                mcp.Resource(
                    uri="test://static-text",
                    name="static-text",
                    description="A static text resource",
                    mime_type="text/plain",
                ),
                mcp.Resource(
                    uri="test://static-binary",
                    name="static-binary",
                    description="A static binary resource (a PNG image)",
                    mime_type="image/png",
                ),
                mcp.Resource(
                    uri=WATCHED_URI,
                    name="watched-resource",
                    description="A resource that changes; subscribe to hear about it",
                    mime_type="text/plain",
                ),
            ]
        )

    @override
    async def list_resource_templates(
        self, params: mcp.PaginatedRequestParams, ctx: RequestContext
    ) -> mcp.ListResourceTemplatesResult:
        return mcp.ListResourceTemplatesResult(
            resource_templates=[
                mcp.ResourceTemplate(
                    uri_template=TEMPLATE_URI,
                    name="template-data",
                    description="JSON data for any id",
                    mime_type="application/json",
                )
            ]
        )

    @override
    async def read_resource(
        self, params: mcp.ReadResourceRequestParams, ctx: RequestContext
    ) -> mcp.ReadResourceResult:
        uri = params.uri
        contents: list[mcp.TextResourceContents | mcp.BlobResourceContents]
        if uri == "test://static-text":
            contents = [mcp.TextResourceContents(uri=uri, mime_type="text/plain", text=STATIC_TEXT)]
        elif uri == "test://static-binary":
            contents = [mcp.BlobResourceContents(uri=uri, mime_type="image/png", blob=PNG_BASE64)]
        elif uri == WATCHED_URI:
            contents = [mcp.TextResourceContents(uri=uri, mime_type="text/plain", text=self.watched.text)]
        elif uri.startswith(TEMPLATE_PREFIX) and uri.endswith(TEMPLATE_SUFFIX):
            item = uri[len(TEMPLATE_PREFIX) : -len(TEMPLATE_SUFFIX)]
            if not item or "/" in item:
                raise McpError(-32002, f"Resource not found: {uri}", {"uri": uri})
            data = json.dumps({"id": item, "templateTest": True, "data": f"Data for ID: {item}"})
            contents = [mcp.TextResourceContents(uri=uri, mime_type="application/json", text=data)]
        else:
            raise McpError(-32002, f"Resource not found: {uri}", {"uri": uri})
        return mcp.ReadResourceResult(contents=contents)

    @override
    async def subscribe(self, params: mcp.SubscribeRequestParams, ctx: RequestContext) -> mcp.EmptyResult:
        if params.uri == WATCHED_URI:
            self.watched.subscribe(ctx.peer)
        return mcp.EmptyResult()

    @override
    async def unsubscribe(self, params: mcp.UnsubscribeRequestParams, ctx: RequestContext) -> mcp.EmptyResult:
        if params.uri == WATCHED_URI:
            self.watched.unsubscribe(ctx.peer)
        return mcp.EmptyResult()

    # prompts ---------------------------------------------------------

    @override
    async def list_prompts(self, params: mcp.PaginatedRequestParams, ctx: RequestContext) -> mcp.ListPromptsResult:
        return mcp.ListPromptsResult(prompts=PROMPTS)

    @override
    async def get_prompt(self, params: mcp.GetPromptRequestParams, ctx: RequestContext) -> mcp.GetPromptResult:
        arguments = params.arguments if isinstance(params.arguments, dict) else {}
        if params.name == "test_simple_prompt":
            messages = [mcp.PromptMessage(role="user", content=_text("This is a simple prompt for testing."))]
        elif params.name == "test_prompt_with_arguments":
            arg1, arg2 = arguments.get("arg1", ""), arguments.get("arg2", "")
            text = f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"
            messages = [mcp.PromptMessage(role="user", content=_text(text))]
        elif params.name == "test_prompt_with_embedded_resource":
            resource = mcp.TextResourceContents(
                uri=arguments.get("resourceUri", "test://example-resource"),
                mime_type="text/plain",
                text="Embedded resource content for testing.",
            )
            messages = [
                mcp.PromptMessage(role="user", content=mcp.EmbeddedResource(resource=resource)),
                mcp.PromptMessage(role="user", content=_text("Please process the embedded resource above.")),
            ]
        elif params.name == "test_prompt_with_image":
            messages = [
                mcp.PromptMessage(role="user", content=mcp.ImageContent(data=PNG_BASE64, mime_type="image/png")),
                mcp.PromptMessage(role="user", content=_text("Please analyze the image above.")),
            ]
        else:
            raise McpError(INVALID_PARAMS, f"Unknown prompt: {params.name}", {"name": params.name})
        return mcp.GetPromptResult(messages=messages)

    # completion ------------------------------------------------------

    @override
    async def complete(self, params: mcp.CompleteRequestParams, ctx: RequestContext) -> mcp.CompleteResult:
        prefix = params.argument.value
        candidates = COMPLETIONS.get(params.argument.name, [])
        values = [value for value in candidates if value.startswith(prefix)]
        return mcp.CompleteResult(
            completion=mcp.CompleteResultCompletion(values=values, total=len(values), has_more=False)
        )


def build_server(watch_interval: float = 5.0) -> Server:
    return Server(
        EverythingServer(WatchedResource(watch_interval)),
        name="mcp-codegen-everything-server",
        version="0.1.0",
        instructions="The MCP conformance test server of mcp-codegen.",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=3001)
    parser.add_argument(
        "--watch-interval",
        type=float,
        default=5.0,
        help="seconds between changes of test://watched-resource (0: never)",
    )
    parser.add_argument("--log-level", default="warning", help="uvicorn's log level")
    options = parser.parse_args()
    logging.basicConfig(level=options.log_level.upper(), format="%(levelname)s %(name)s: %(message)s")
    # Clients resume a dropped SSE stream after 100 ms (SEP-1699 polling).
    app = StreamableHTTPApp(build_server(options.watch_interval), retry_ms=100)
    # Open SSE streams (a client's GET stream) never end by themselves: on
    # SIGTERM or Ctrl+C give in-flight requests a moment, then cut them.
    uvicorn.run(
        app,
        host=options.host,
        port=options.port,
        log_level=options.log_level.lower(),
        timeout_graceful_shutdown=2,
    )


if __name__ == "__main__":
    main()
