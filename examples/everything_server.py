"""The MCP conformance "everything" server, over Streamable HTTP.

It implements every fixture the server scenarios of the official conformance
suite (npm ``@modelcontextprotocol/conformance``) call, for both wires the
suite tests:

- 2025-11-25 (initialize handshake, sessions): the ``test_*`` tools, the
  ``test://`` resources and template, the ``test_*`` prompts, completion,
  logging and resource subscriptions. Sampling and elicitation are requests
  to the client in the middle of a call.
- 2026-07-28 (stateless, ``_meta`` on every request): the same fixtures with
  caching hints, where a tool or prompt that needs the client's input answers
  with an ``InputRequiredResult`` and finishes when the client retries with
  the answers; plus the fixtures of the multi-round-trip scenarios
  (``test_input_required_result_*``), the diagnostic tools of the stateless
  scenario (``test_missing_capability``, ``test_streaming_elicitation``,
  ``test_logging_tool``, ``test_trigger_tool_change``,
  ``test_trigger_prompt_change``) and the tools of the tasks extension.

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
from typing import Any, TypeVar

import msgspec
import uvicorn
from typing_extensions import override

from mcp_protocol import v2025_11_25 as mcp
from mcp_protocol import v2026_07_28 as modern
from mcp_runtime import codec
from mcp_runtime.jsonrpc import ConnectionClosed, INTERNAL_ERROR, INVALID_PARAMS, McpError
from mcp_runtime.lifecycle import has_capability
from mcp_runtime.methods import Caller, RequestContext
from mcp_runtime.http import UVICORN_OPTIONS
from mcp_runtime.server import Server
from mcp_runtime.streamable_http import StreamableHTTPApp
from mcp_runtime.tasks import TaskContext, Tasks, TaskSupport

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
            properties={
                "name": {"type": "string"},
                "address": {"$ref": "#/$defs/address"},
                "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                "phone": {"type": "string"},
                "email": {"type": "string"},
            },
            additionalProperties=False,
        ),
    ),
]
# Keys that are not Python names go in as items of the open schema object:
# an $anchor in $defs, composition and conditional keywords (SEP-2106).
TOOLS[-1].input_schema.update(
    {
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
            }
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
    }
)


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
    seconds. Every handshake session subscribed to it is told so with
    ``notifications/resources/updated``, sent from outside any handler, and so
    is every 2026-07-28 ``subscriptions/listen`` stream that asked for it."""

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self.revision = 0
        self.subscribers: dict[int, mcp.ServerStub] = {}
        self.server: Server | None = None
        self._ticker: asyncio.Task[None] | None = None

    @property
    def text(self) -> str:
        return f"Watched resource content (revision {self.revision})"

    def start(self) -> None:
        if self._ticker is None and self.interval > 0:
            # A fresh context: what the ticker sends belongs to no request.
            self._ticker = asyncio.get_running_loop().create_task(self._tick(), context=contextvars.Context())

    def subscribe(self, peer: Caller) -> None:
        self.subscribers[id(peer)] = mcp.ServerStub(peer)
        self.start()

    def unsubscribe(self, peer: Caller) -> None:
        self.subscribers.pop(id(peer), None)

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            self.revision += 1
            for key, stub in list(self.subscribers.items()):
                try:
                    await stub.notify_resource_updated(WATCHED_URI)
                except ConnectionClosed:
                    self.subscribers.pop(key, None)
                except McpError as error:
                    logger.warning("cannot notify a subscriber: %s", error.message)
                    self.subscribers.pop(key, None)
            if self.server is not None:
                await self.server.notify_resource_updated(WATCHED_URI)


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
    """What 2025-11-25 (and older) clients get."""

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



# ---------------------------------------------------------------- 2026-07-28

F = TypeVar("F")

# How long clients may keep what they listed or read (caching hints). Nothing
# here depends on who asks, so any cache may share it.
LIST_TTL_MS = 60_000
RESOURCE_TTL_MS = 300_000


def _modern(fixture: Any, type_: type[F]) -> F:
    """A 2025-11-25 fixture as the 2026-07-28 type of the same shape."""
    return codec.convert(msgspec.to_builtins(fixture), type_)


def _modern_tool(
    name: str, description: str, properties: dict[str, dict[str, Any]] | None = None, *, optional: bool = False
) -> modern.Tool:
    schema = modern.ToolInputSchema(properties=properties or {})
    if properties and not optional:
        schema["required"] = sorted(properties)
    return modern.Tool(name=name, description=description, input_schema=schema)


def _form(message: str, properties: dict[str, modern.PrimitiveSchemaDefinition]) -> modern.ElicitRequest:
    schema = modern.ElicitRequestFormParamsRequestedSchema(properties=properties, required=sorted(properties))
    return modern.ElicitRequest(params=modern.ElicitRequestFormParams(message=message, requested_schema=schema))


def _ask_llm(text: str, max_tokens: int = 100) -> modern.CreateMessageRequest:
    message = modern.SamplingMessage(role="user", content=modern.TextContent(text=text))
    params = modern.CreateMessageRequestParams(messages=[message], max_tokens=max_tokens)
    return modern.CreateMessageRequest(params=params)


LIST_ROOTS = modern.ListRootsRequest(params=modern.ListRootsRequestParams())

# The handshake fixtures that ask the client mid-call (sampling, elicitation)
# ask with an InputRequiredResult instead; the SSE reconnection one has no
# stateless counterpart.
MODERN_FIXTURE_TOOLS = [_modern(tool, modern.Tool) for tool in TOOLS if tool.name != "test_reconnection"]

# The fixtures of the tasks extension. How each may run as a task: "required"
# ones are refused (-32021) to a client without the extension, before their
# handler runs; "optional" ones answer such a client synchronously.
TASK_SUPPORT: dict[str, TaskSupport] = {
    "slow_compute": "optional",
    "failing_job": "required",
    "protocol_error_job": "optional",
    "confirm_delete": "optional",
    "multi_input": "optional",
    "test_tool_with_task": "required",
}
TASK_TOOLS = [
    _modern_tool("greet", "Says hello (never a task).", {"name": {"type": "string"}}, optional=True),
    _modern_tool(
        "slow_compute",
        "Sleeps `seconds` seconds, then answers; a task when the client supports tasks.",
        {"seconds": {"type": "number"}, "label": {"type": "string"}},
        optional=True,
    ),
    _modern_tool("failing_job", "A task (required) that ends with a tool error after about a second."),
    _modern_tool("protocol_error_job", "A task that fails with a JSON-RPC error."),
    _modern_tool(
        "confirm_delete",
        "A task that asks the user to confirm, then answers.",
        {"filename": {"type": "string"}},
        optional=True,
    ),
    _modern_tool("multi_input", "A task that asks the user two questions at once."),
    _modern_tool("test_tool_with_task", "Asks for a name (input-required round), then greets it from a task."),
]

MODERN_TOOLS = [
    *MODERN_FIXTURE_TOOLS,
    _modern_tool("test_missing_capability", "Asks the client's LLM; needs the sampling capability."),
    _modern_tool("test_streaming_elicitation", "Asks the user to confirm, on the call's response stream."),
    _modern_tool("test_logging_tool", "Logs at every level; only a request asking for a log level gets them."),
    _modern_tool("test_trigger_tool_change", "Adds or removes test_dynamic_tool and says the tool list changed."),
    _modern_tool("test_trigger_prompt_change", "Adds or removes test_dynamic_prompt and says the prompt list changed."),
    _modern_tool("test_input_required_result_elicitation", "Asks the user's name, then greets them."),
    _modern_tool("test_input_required_result_sampling", "Asks the client's LLM the capital of France."),
    _modern_tool("test_input_required_result_list_roots", "Asks for the client's roots, then lists them."),
    _modern_tool("test_input_required_result_request_state", "Asks for a confirmation, keeping state in requestState."),
    _modern_tool("test_input_required_result_multiple_inputs", "Asks a name, a greeting and the roots at once."),
    _modern_tool("test_input_required_result_multi_round", "Asks a name, then a colour, in two rounds."),
    _modern_tool("test_input_required_result_tampered_state", "Asks for a confirmation; refuses altered requestState."),
    _modern_tool("test_input_required_result_capabilities", "Asks only for what the client declared it can answer."),
    _modern_tool(
        "test_header_param",
        "Echoes its region, which clients also send as the Mcp-Param-Region header.",
        {"region": {"type": "string", "description": "A region name", "x-mcp-header": "Region"}},
    ),
    *TASK_TOOLS,
]

DYNAMIC_TOOL = _modern_tool("test_dynamic_tool", "Listed after every other call of test_trigger_tool_change.")

MODERN_PROMPTS = [
    *(_modern(prompt, modern.Prompt) for prompt in PROMPTS),
    modern.Prompt(name="test_input_required_result_prompt", description="Asks the user for a context first"),
]
DYNAMIC_PROMPT = modern.Prompt(
    name="test_dynamic_prompt", description="Listed after every other call of test_trigger_prompt_change."
)


def _answers(params: modern.CallToolRequestParams | modern.GetPromptRequestParams) -> dict[str, Any]:
    responses = params.input_responses
    return responses if isinstance(responses, dict) else {}


def _elicited(answer: Any, field: str) -> str | None:
    """The ``field`` of an accepted elicitation, None if it is not one."""
    if isinstance(answer, modern.ElicitResult) and answer.action == "accept" and isinstance(answer.content, dict):
        value = answer.content.get(field)
        return None if value is None else str(value)
    return None


def _sampled(answer: Any) -> str | None:
    if not isinstance(answer, modern.CreateMessageResult):
        return None
    content = answer.content
    return content.text if isinstance(content, modern.TextContent) else f"<{type(content).__name__}>"


def _roots(answer: Any) -> str | None:
    if not isinstance(answer, modern.ListRootsResult):
        return None
    return ", ".join(root.uri for root in answer.roots) or "(none)"


def _tool_result(text: str, is_error: bool = False) -> modern.CallToolResult:
    if is_error:
        return modern.CallToolResult(content=[modern.TextContent(text=text)], is_error=True)
    return modern.CallToolResult(content=[modern.TextContent(text=text)])


def _prompt_result(text: str) -> modern.GetPromptResult:
    return modern.GetPromptResult(messages=[modern.PromptMessage(role="user", content=modern.TextContent(text=text))])


def _elicitation_summary(prefix: str, answer: modern.ElicitResult) -> str:
    content = json.dumps(answer.content if isinstance(answer.content, dict) else {})
    return f"{prefix}: action={answer.action}, content={content}"


class ModernEverythingServer(modern.ServerHandlers):
    """What 2026-07-28 clients get: the fixtures of ``legacy`` that need
    nothing from the client are served by it and converted."""

    def __init__(self, legacy: EverythingServer, tasks: Tasks) -> None:
        self.legacy = legacy
        self.tasks = tasks
        self.watched = legacy.watched
        self.dynamic_tool = False
        self.dynamic_prompt = False

    @property
    def server(self) -> Server:
        assert self.watched.server is not None, "build_server() sets it"
        return self.watched.server

    # tools -----------------------------------------------------------

    @override
    async def list_tools(self, params: modern.PaginatedRequestParams, ctx: RequestContext) -> modern.ListToolsResult:
        tools = [*MODERN_TOOLS, DYNAMIC_TOOL] if self.dynamic_tool else MODERN_TOOLS
        return modern.ListToolsResult(tools=tools, ttl_ms=LIST_TTL_MS, cache_scope="public")

    @override
    async def call_tool(
        self, params: modern.CallToolRequestParams, ctx: RequestContext
    ) -> modern.CallToolResult | modern.InputRequiredResult:
        name = params.name
        answers = _answers(params)
        arguments: dict[str, Any] = params.arguments if isinstance(params.arguments, dict) else {}
        if name == "test_sampling" or name == "test_missing_capability":
            prompt = str(arguments.get("prompt", "What is the capital of France?"))
            text = _sampled(answers.get("answer"))
            if text is None:
                # Without the sampling capability the runtime refuses this with -32021.
                return modern.InputRequiredResult(input_requests={"answer": _ask_llm(prompt)})
            return _tool_result(f"LLM response: {text}")
        if name == "test_elicitation":
            answer = answers.get("user")
            if not isinstance(answer, modern.ElicitResult):
                request = _form(
                    str(arguments.get("message", "")),
                    {
                        "username": modern.StringSchema(description="User's response"),
                        "email": modern.StringSchema(description="User's email address"),
                    },
                )
                return modern.InputRequiredResult(input_requests={"user": request})
            return _tool_result(_elicitation_summary("User response", answer))
        if name in ("test_elicitation_sep1034_defaults", "test_elicitation_sep1330_enums"):
            return self._elicit_form(name, answers)
        if name == "test_streaming_elicitation":
            confirmed = answers.get("confirm")
            if not isinstance(confirmed, modern.ElicitResult):
                request = _form("Continue?", {"confirmed": modern.BooleanSchema(description="Continue?")})
                return modern.InputRequiredResult(input_requests={"confirm": request})
            return _tool_result(f"Streaming elicitation completed: action={confirmed.action}")
        if name == "test_logging_tool":
            for level in ("debug", "info", "notice", "warning", "error"):
                await ctx.log(level, f"A {level} message from test_logging_tool", logger="test_logging_tool")
            return _tool_result("Logged at debug, info, notice, warning and error")
        if name == "test_trigger_tool_change":
            self.dynamic_tool = not self.dynamic_tool
            await self.server.notify_list_changed("tools")
            return _tool_result(f"test_dynamic_tool is {'listed' if self.dynamic_tool else 'gone'}")
        if name == "test_trigger_prompt_change":
            self.dynamic_prompt = not self.dynamic_prompt
            await self.server.notify_list_changed("prompts")
            return _tool_result(f"test_dynamic_prompt is {'listed' if self.dynamic_prompt else 'gone'}")
        if name.startswith("test_input_required_result_"):
            return self._input_required_tool(name.removeprefix("test_input_required_result_"), params, ctx)
        if name in TASK_SUPPORT or name == "greet":
            return await self._task_tool(name, arguments, params, ctx)
        if name == "test_header_param":
            return _tool_result(f"Region: {arguments.get('region', '')}")
        if name == "test_dynamic_tool" and self.dynamic_tool:
            return _tool_result("The dynamic tool is here")
        if any(tool.name == name for tool in MODERN_FIXTURE_TOOLS):
            # The fixtures that need nothing from the client: as on the handshake wire.
            result = await self.legacy.call_tool(mcp.CallToolRequestParams(name=name, arguments=arguments), ctx)
            return _modern(result, modern.CallToolResult)
        raise McpError(INVALID_PARAMS, f"Unknown tool: {name}", {"name": name})

    async def _task_tool(
        self, name: str, arguments: dict[str, Any], params: modern.CallToolRequestParams, ctx: RequestContext
    ) -> modern.CallToolResult | modern.InputRequiredResult:
        """The tasks fixtures: ``self.tasks.start`` makes a task of the work
        when the request's client declared the extension, else runs it here."""
        if name == "greet":
            return _tool_result(f"Hello, {arguments.get('name', 'World')}!")
        if name == "slow_compute":
            seconds = float(arguments.get("seconds", 1))
            label = str(arguments.get("label", ""))

            async def compute(task: TaskContext) -> modern.CallToolResult:
                # Cancelling the task cancels this sleep: the task settles as cancelled.
                await asyncio.sleep(seconds)
                return _tool_result(f"computed {label} in {seconds:g}s")

            return await self.tasks.start(ctx, compute)
        if name == "failing_job":

            async def fail(task: TaskContext) -> modern.CallToolResult:
                await asyncio.sleep(1)
                return _tool_result("the job failed", is_error=True)  # a tool error: the task completes

            return await self.tasks.start(ctx, fail)
        if name == "protocol_error_job":

            async def crash(task: TaskContext) -> modern.CallToolResult:
                raise McpError(INTERNAL_ERROR, "the job crashed")  # a protocol error: the task fails

            return await self.tasks.start(ctx, crash)
        if name == "confirm_delete":
            filename = str(arguments.get("filename", "file"))

            async def confirm(task: TaskContext) -> modern.CallToolResult:
                answer = await task.elicit(_form(f"Delete {filename}?", {"confirm": modern.BooleanSchema()}).params)
                content = answer.content if answer.action == "accept" and isinstance(answer.content, dict) else {}
                confirmed = content.get("confirm") is True
                return _tool_result(f"deleted {filename}" if confirmed else f"kept {filename}")

            return await self.tasks.start(ctx, confirm)
        if name == "multi_input":

            async def ask_twice(task: TaskContext) -> modern.CallToolResult:
                first, second = await asyncio.gather(
                    task.elicit(_form("Your name?", {"name": modern.StringSchema()}).params),
                    task.elicit(_form("Proceed?", {"confirm": modern.BooleanSchema()}).params),
                )
                return _tool_result(f"answers: {first.content}, {second.content}")

            return await self.tasks.start(ctx, ask_twice)
        # test_tool_with_task: round 1 gathers the name the ordinary way (an
        # input-required result); round 2, carrying it, becomes a task.
        user = _elicited(_answers(params).get("user_name"), "name")
        if user is None:
            request = _form("What is your name?", {"name": modern.StringSchema()})
            return modern.InputRequiredResult(input_requests={"user_name": request})

        async def greet_later(task: TaskContext) -> modern.CallToolResult:
            await asyncio.sleep(0.1)
            return _tool_result(f"Hello, {user}!")

        return await self.tasks.start(ctx, greet_later)

    def _elicit_form(self, name: str, answers: dict[str, Any]) -> modern.CallToolResult | modern.InputRequiredResult:
        answer = answers.get("form")
        if isinstance(answer, modern.ElicitResult):
            return _tool_result(_elicitation_summary("Elicitation completed", answer))
        if name == "test_elicitation_sep1034_defaults":
            message, schema = "Please review your user information", SEP1034_SCHEMA
        else:
            message, schema = "Please pick values for each kind of enum", SEP1330_SCHEMA
        params = modern.ElicitRequestFormParams(
            message=message, requested_schema=_modern(schema, modern.ElicitRequestFormParamsRequestedSchema)
        )
        return modern.InputRequiredResult(input_requests={"form": modern.ElicitRequest(params=params)})

    def _input_required_tool(
        self, fixture: str, params: modern.CallToolRequestParams, ctx: RequestContext
    ) -> modern.CallToolResult | modern.InputRequiredResult:
        answers = _answers(params)
        # The runtime has already checked the seal of requestState: it is ours.
        state = params.request_state if isinstance(params.request_state, str) else None
        if fixture == "elicitation":
            name = _elicited(answers.get("user_name"), "name")
            if name is None:
                request = _form("What is your name?", {"name": modern.StringSchema()})
                return modern.InputRequiredResult(input_requests={"user_name": request})
            return _tool_result(f"Hello, {name}!")
        if fixture == "sampling":
            text = _sampled(answers.get("capital_question"))
            if text is None:
                question = _ask_llm("What is the capital of France?")
                return modern.InputRequiredResult(input_requests={"capital_question": question})
            return _tool_result(f"The LLM says: {text}")
        if fixture == "list_roots":
            roots = _roots(answers.get("client_roots"))
            if roots is None:
                return modern.InputRequiredResult(input_requests={"client_roots": LIST_ROOTS})
            return _tool_result(f"Client roots: {roots}")
        if fixture in ("request_state", "tampered_state"):
            confirmed = _elicited(answers.get("confirm"), "ok")
            if confirmed is None or state != f"{fixture}:asked":
                request = _form("Please confirm", {"ok": modern.BooleanSchema()})
                return modern.InputRequiredResult(input_requests={"confirm": request}, request_state=f"{fixture}:asked")
            return _tool_result(f"Confirmed ({confirmed}): state-ok")
        if fixture == "multiple_inputs":
            wanted: dict[str, modern.InputRequest] = {
                "user_name": _form("What is your name?", {"name": modern.StringSchema()}),
                "greeting": _ask_llm("Generate a greeting", max_tokens=50),
                "client_roots": LIST_ROOTS,
            }
            name, greeting, roots = (
                _elicited(answers.get("user_name"), "name"),
                _sampled(answers.get("greeting")),
                _roots(answers.get("client_roots")),
            )
            if name is None or greeting is None or roots is None:
                missing = {key: request for key, request in wanted.items() if key not in answers}
                return modern.InputRequiredResult(
                    input_requests=missing or wanted, request_state="multiple_inputs:asked"
                )
            return _tool_result(f"{greeting} {name} (roots: {roots})")
        if fixture == "multi_round":
            if state is not None and state.startswith("multi_round:name="):
                color = _elicited(answers.get("step2"), "color")
                if color is not None:
                    return _tool_result(f"{state.removeprefix('multi_round:name=')} likes {color}")
            name = _elicited(answers.get("step1"), "name")
            if name is not None and state == "multi_round:step1":
                request = _form("Step 2: What is your favorite color?", {"color": modern.StringSchema()})
                return modern.InputRequiredResult(
                    input_requests={"step2": request}, request_state=f"multi_round:name={name}"
                )
            request = _form("Step 1: What is your name?", {"name": modern.StringSchema()})
            return modern.InputRequiredResult(input_requests={"step1": request}, request_state="multi_round:step1")
        if fixture == "capabilities":
            # Ask only what this client can answer.
            capabilities = ctx.client_capabilities
            possible: dict[str, tuple[str, modern.InputRequest]] = {
                "user_name": ("elicitation", _form("What is your name?", {"name": modern.StringSchema()})),
                "greeting": ("sampling", _ask_llm("Generate a greeting", max_tokens=50)),
                "client_roots": ("roots", LIST_ROOTS),
            }
            asked = {
                key: request
                for key, (capability, request) in possible.items()
                if key not in answers and has_capability(capabilities, (capability,))
            }
            if asked:
                return modern.InputRequiredResult(input_requests=asked)
            return _tool_result(f"Answered: {', '.join(sorted(answers)) or 'nothing (the client can answer nothing)'}")
        raise McpError(INVALID_PARAMS, f"Unknown tool: {params.name}", {"name": params.name})

    # resources -------------------------------------------------------

    @override
    async def list_resources(
        self, params: modern.PaginatedRequestParams, ctx: RequestContext
    ) -> modern.ListResourcesResult:
        self.watched.start()
        listed = await self.legacy.list_resources(mcp.PaginatedRequestParams(), ctx)
        resources = [_modern(resource, modern.Resource) for resource in listed.resources]
        return modern.ListResourcesResult(resources=resources, ttl_ms=LIST_TTL_MS, cache_scope="public")

    @override
    async def list_resource_templates(
        self, params: modern.PaginatedRequestParams, ctx: RequestContext
    ) -> modern.ListResourceTemplatesResult:
        listed = await self.legacy.list_resource_templates(mcp.PaginatedRequestParams(), ctx)
        templates = [_modern(template, modern.ResourceTemplate) for template in listed.resource_templates]
        return modern.ListResourceTemplatesResult(
            resource_templates=templates, ttl_ms=LIST_TTL_MS, cache_scope="public"
        )

    @override
    async def read_resource(
        self, params: modern.ReadResourceRequestParams, ctx: RequestContext
    ) -> modern.ReadResourceResult | modern.InputRequiredResult:
        self.watched.start()
        try:
            read = await self.legacy.read_resource(mcp.ReadResourceRequestParams(uri=params.uri), ctx)
        except McpError as error:
            # 2026-07-28 (SEP-2164) answers an unknown resource with invalid params.
            raise McpError(INVALID_PARAMS, error.message, {"uri": params.uri}) from None
        contents: list[modern.TextResourceContents | modern.BlobResourceContents] = [
            _modern(item, modern.TextResourceContents)
            if isinstance(item, mcp.TextResourceContents)
            else _modern(item, modern.BlobResourceContents)
            for item in read.contents
        ]
        # The watched resource changes every few seconds: not worth keeping.
        ttl = 0 if params.uri == WATCHED_URI else RESOURCE_TTL_MS
        return modern.ReadResourceResult(contents=contents, ttl_ms=ttl, cache_scope="public")

    # prompts ---------------------------------------------------------

    @override
    async def list_prompts(
        self, params: modern.PaginatedRequestParams, ctx: RequestContext
    ) -> modern.ListPromptsResult:
        prompts = [*MODERN_PROMPTS, DYNAMIC_PROMPT] if self.dynamic_prompt else MODERN_PROMPTS
        return modern.ListPromptsResult(prompts=prompts, ttl_ms=LIST_TTL_MS, cache_scope="public")

    @override
    async def get_prompt(
        self, params: modern.GetPromptRequestParams, ctx: RequestContext
    ) -> modern.GetPromptResult | modern.InputRequiredResult:
        if params.name == "test_input_required_result_prompt":
            context = _elicited(_answers(params).get("user_context"), "context")
            if context is None:
                request = _form("What context should the prompt use?", {"context": modern.StringSchema()})
                return modern.InputRequiredResult(input_requests={"user_context": request})
            return _prompt_result(f"Answer with this context in mind: {context}")
        if params.name == "test_dynamic_prompt" and self.dynamic_prompt:
            return _prompt_result("This prompt comes and goes.")
        arguments = params.arguments if isinstance(params.arguments, dict) else {}
        prompt = await self.legacy.get_prompt(mcp.GetPromptRequestParams(name=params.name, arguments=arguments), ctx)
        return _modern(prompt, modern.GetPromptResult)

    # completion ------------------------------------------------------

    @override
    async def complete(self, params: modern.CompleteRequestParams, ctx: RequestContext) -> modern.CompleteResult:
        completed = await self.legacy.complete(_modern(params, mcp.CompleteRequestParams), ctx)
        return _modern(completed, modern.CompleteResult)


def build_server(watch_interval: float = 5.0) -> Server:
    watched = WatchedResource(watch_interval)
    legacy = EverythingServer(watched)
    # One per server: a task created by one request is polled by others.
    tasks = Tasks(tools=TASK_SUPPORT)
    server = Server(
        [legacy, ModernEverythingServer(legacy, tasks)],
        name="mcp-codegen-everything-server",
        version="0.1.0",
        instructions="The MCP conformance test server of mcp-codegen.",
        extensions=[tasks],
    )
    watched.server = server
    return server


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
    uvicorn.run(app, host=options.host, port=options.port, log_level=options.log_level.lower(), **UVICORN_OPTIONS)


if __name__ == "__main__":
    main()
