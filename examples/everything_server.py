"""The MCP conformance "everything" server, written with the application layer.

It serves every fixture the server scenarios of the official conformance
suite (npm ``@modelcontextprotocol/conformance``) call, from one set of
functions, on both wires the suite tests:

- 2025-11-25 (initialize handshake, sessions): the ``test_*`` tools, the
  ``test://`` resources and template, the ``test_*`` prompts, completion,
  logging and resource subscriptions. ``ctx.sample`` and ``ctx.elicit`` are
  requests to the client in the middle of a call.
- 2026-07-28 (stateless, ``_meta`` on every request): the same functions,
  with caching hints; there ``ctx.sample`` and ``ctx.elicit`` answer with an
  ``InputRequiredResult`` and the function runs again when the client retries
  with the answers. The fixtures of the multi-round-trip scenarios that steer
  the rounds themselves (``requestState``, several requests at once) read
  ``ctx.params`` and return their own ``InputRequiredResult``; the tools of the
  tasks extension hand their work to ``tasks.start``.

``python examples/everything_server.py [--port 3001]`` serves it at
http://127.0.0.1:3001/mcp; ``python tests/conformance.py`` runs the suite
against it.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextvars
import json
import logging
from typing import Annotated, Any, Literal

import msgspec
import uvicorn

from mcpbind import (
    INTERNAL_ERROR,
    UVICORN_OPTIONS,
    App,
    Context,
    HttpOptions,
    McpError,
    Message,
    TaskContext,
    Tasks,
    TaskSupport,
    ToolError,
)
from mcpbind_protocol import v2025_11_25 as mcp
from mcpbind_protocol import v2026_07_28 as modern

logger = logging.getLogger("everything_server")

# A 1x1 PNG and a WAV file with one sample.
PNG_BASE64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
WAV_BASE64 = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="

# The fixtures of the tasks extension. How each may run as a task: "required"
# ones are refused (-32021) to a client without the extension, before the
# function runs; "optional" ones answer such a client synchronously.
TASK_SUPPORT: dict[str, TaskSupport] = {
    "slow_compute": "optional",
    "failing_job": "required",
    "protocol_error_job": "optional",
    "confirm_delete": "optional",
    "multi_input": "optional",
    "test_tool_with_task": "required",
}
# One per server: a task created by one request is polled by others.
tasks = Tasks(tools=TASK_SUPPORT)

# Lists and reads may be kept a minute by any cache: nothing here depends on who asks.
app = App(
    "mcp-codegen-everything-server",
    "0.1.0",
    instructions="The MCP conformance test server of mcp-codegen.",
    extensions=[tasks],
    cache_ttl_ms=60_000,
    cache_scope="public",
)


# ---------------------------------------------------------------- content tools


@app.tool()
def test_simple_text() -> str:
    """Returns a simple text response."""
    return "This is a simple text response for testing."


@app.tool()
def test_image_content() -> mcp.ImageContent:
    """Returns a PNG image."""
    return mcp.ImageContent(data=PNG_BASE64, mime_type="image/png")


@app.tool()
def test_audio_content() -> mcp.AudioContent:
    """Returns a WAV audio clip."""
    return mcp.AudioContent(data=WAV_BASE64, mime_type="audio/wav")


@app.tool()
def test_embedded_resource() -> mcp.EmbeddedResource:
    """Returns an embedded text resource."""
    resource = mcp.TextResourceContents(
        uri="test://embedded-resource",
        mime_type="text/plain",
        text="This is an embedded resource content.",
    )
    return mcp.EmbeddedResource(resource=resource)


@app.tool()
def test_multiple_content_types() -> list[mcp.ContentBlock]:
    """Returns text, an image and an embedded resource."""
    resource = mcp.TextResourceContents(
        uri="test://mixed-content-resource",
        mime_type="application/json",
        text='{"test":"data","value":123}',
    )
    return [
        mcp.TextContent(text="Multiple content types test:"),
        mcp.ImageContent(data=PNG_BASE64, mime_type="image/png"),
        mcp.EmbeddedResource(resource=resource),
    ]


@app.tool()
def test_error_handling() -> str:
    """Always fails, with a tool error result."""
    raise ToolError("This tool intentionally returns an error for testing")


# What clients see of json_schema_2020_12_tool: keywords no signature spells
# (an $anchor in $defs, composition and conditional keywords, SEP-2106); its
# signature still decodes the arguments.
JSON_SCHEMA_2020_12_INPUT: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "additionalProperties": False,
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


@app.tool(input_schema=JSON_SCHEMA_2020_12_INPUT)
def json_schema_2020_12_tool(
    ctx: Context,
    name: str | None = None,
    address: dict[str, Any] | None = None,
    contactMethod: Literal["phone", "email"] | None = None,  # noqa: N803 (the fixture's name)
    phone: str | None = None,
    email: str | None = None,
) -> str:
    """Tool with JSON Schema 2020-12 features"""
    return f"Received {json.dumps(ctx.params.arguments, sort_keys=True)}"


@app.tool()
def test_header_param(
    region: Annotated[
        str, msgspec.Meta(description="A region name", extra_json_schema={"x-mcp-header": "Region"})
    ],
) -> str:
    """Echoes its region, which clients also send as the Mcp-Param-Region header."""
    return f"Region: {region}"


# ---------------------------------------------------------------- logging, progress, streams


@app.tool()
async def test_tool_with_logging(ctx: Context) -> str:
    """Sends three info log messages while it runs."""
    await ctx.info("Tool execution started")
    await asyncio.sleep(0.05)
    await ctx.info("Tool processing data")
    await asyncio.sleep(0.05)
    await ctx.info("Tool execution completed")
    return "Tool with logging executed successfully"


@app.tool()
async def test_tool_with_progress(ctx: Context) -> str:
    """Reports progress 0, 50 and 100 of 100."""
    for step, progress in enumerate((0, 50, 100)):
        if step:
            await asyncio.sleep(0.05)
        await ctx.report_progress(progress, 100, f"Completed step {progress} of 100")
    return "Tool with progress executed successfully"


@app.tool()
async def test_logging_tool(ctx: Context) -> str:
    """Logs at every level; only a request asking for a log level gets them."""
    levels: tuple[Literal["debug", "info", "notice", "warning", "error"], ...] = (
        "debug",
        "info",
        "notice",
        "warning",
        "error",
    )
    for level in levels:
        await ctx.log(
            level, f"A {level} message from test_logging_tool", logger="test_logging_tool"
        )
    return "Logged at debug, info, notice, warning and error"


@app.tool()
async def test_reconnection(ctx: Context) -> str:
    """Closes the request's SSE stream mid-call; the result arrives after the client resumes (SEP-1699)."""
    await ctx.info("Before disconnect")
    ctx.close_sse_stream()
    await asyncio.sleep(0.2)  # the client reconnects meanwhile
    await ctx.info("After reconnect")
    return "Reconnection test completed"


# ---------------------------------------------------------------- asking the client
#
# Each question has the key the suite's clients answer at 2026-07-28 (key=).


class UserForm(msgspec.Struct):
    username: Annotated[str, msgspec.Meta(description="User's response")]
    email: Annotated[str, msgspec.Meta(description="User's email address")]


class DefaultsForm(msgspec.Struct):
    """A field of every primitive type, each with a default (SEP-1034)."""

    name: Annotated[str, msgspec.Meta(description="User name")] = "John Doe"
    age: Annotated[int, msgspec.Meta(description="User age")] = 30
    score: Annotated[float, msgspec.Meta(description="User score")] = 95.5
    status: Annotated[
        Literal["active", "inactive", "pending"], msgspec.Meta(description="User status")
    ] = "active"
    verified: Annotated[bool, msgspec.Meta(description="Verification status")] = True


class Confirmation(msgspec.Struct):
    confirmed: Annotated[bool, msgspec.Meta(description="Continue?")]


class Name(msgspec.Struct):
    name: str


class PromptContext(msgspec.Struct):
    context: str


# The five enum variants of SEP-1330: titled and multi-select enums have no
# Python type that spells them, so the schema is given and the answer is a dict.
ENUMS_FORM = {
    "type": "object",
    "properties": {
        "untitledSingle": {
            "type": "string",
            "description": "Single choice without titles",
            "enum": ["option1", "option2", "option3"],
        },
        "titledSingle": {
            "type": "string",
            "description": "Single choice with titles",
            "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"},
            ],
        },
        "legacyEnum": {
            "type": "string",
            "description": "Single choice with enumNames (deprecated)",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {
            "type": "array",
            "description": "Multiple choice without titles",
            "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
        },
        "titledMulti": {
            "type": "array",
            "description": "Multiple choice with titles",
            "items": {
                "anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"},
                ]
            },
        },
    },
}


def _summary(prefix: str, action: str, data: Any) -> str:
    return f"{prefix}: action={action}, content={json.dumps(msgspec.to_builtins(data) if data else {})}"


@app.tool()
async def test_sampling(
    ctx: Context,
    prompt: Annotated[str, msgspec.Meta(description="The prompt to send to the LLM")],
) -> str:
    """Asks the client's LLM to answer a prompt (sampling/createMessage)."""
    try:
        answer = await ctx.sample(prompt, max_tokens=100, key="answer")
    except McpError as error:
        raise ToolError(f"Sampling failed: {error.message}") from None
    return f"LLM response: {answer.text if answer.text is not None else f'<{type(answer.content).__name__}>'}"


@app.tool()
async def test_missing_capability(ctx: Context) -> str:
    """Asks the client's LLM; needs the sampling capability."""
    # Without it the runtime refuses the 2026-07-28 input request with -32021.
    answer = await ctx.sample("What is the capital of France?", max_tokens=100, key="answer")
    return f"LLM response: {answer.text}"


@app.tool()
async def test_elicitation(
    ctx: Context,
    message: Annotated[str, msgspec.Meta(description="The message to show the user")],
) -> str:
    """Asks the user for a username and an email (elicitation/create)."""
    try:
        answer = await ctx.elicit(message, UserForm, key="user")
    except McpError as error:
        raise ToolError(f"Elicitation failed: {error.message}") from None
    return _summary("User response", answer.action, answer.data)


@app.tool()
async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
    """Elicits a form whose fields of every primitive type have defaults (SEP-1034)."""
    answer = await ctx.elicit("Please review your user information", DefaultsForm, key="form")
    return _summary("Elicitation completed", answer.action, answer.data)


@app.tool()
async def test_elicitation_sep1330_enums(ctx: Context) -> str:
    """Elicits a form with the five enum schema variants (SEP-1330)."""
    answer = await ctx.elicit(
        "Please pick values for each kind of enum", dict, schema=ENUMS_FORM, key="form"
    )
    return _summary("Elicitation completed", answer.action, answer.data)


@app.tool()
async def test_streaming_elicitation(ctx: Context) -> str:
    """Asks the user to confirm, on the call's response stream."""
    answer = await ctx.elicit("Continue?", Confirmation, key="confirm")
    return f"Streaming elicitation completed: action={answer.action}"


@app.prompt()
async def test_input_required_result_prompt(ctx: Context) -> str:
    """Asks the user for a context first"""
    answer = await ctx.elicit(
        "What context should the prompt use?", PromptContext, key="user_context"
    )
    return f"Answer with this context in mind: {answer.data.context if answer.data else ''}"


# ---------------------------------------------------------------- 2026-07-28 rounds by hand
#
# These fixtures decide the rounds themselves: their own input request keys,
# several requests in one round, their own requestState (sealed by the runtime,
# so what comes back is what they sent).


def _done(text: str, is_error: bool = False) -> modern.CallToolResult:
    if is_error:
        return modern.CallToolResult(content=[modern.TextContent(text=text)], is_error=True)
    return modern.CallToolResult(content=[modern.TextContent(text=text)])


def _answers(ctx: Context) -> dict[str, Any]:
    if ctx.protocol_version < "2026-07-28":
        raise ToolError(
            f"This fixture needs protocol revision 2026-07-28 (not {ctx.protocol_version})"
        )
    responses = ctx.params.input_responses
    return responses if isinstance(responses, dict) else {}


def _state(ctx: Context) -> str | None:
    state = ctx.params.request_state
    return state if isinstance(state, str) else None


def _form(
    message: str, properties: dict[str, modern.PrimitiveSchemaDefinition]
) -> modern.ElicitRequest:
    schema = modern.ElicitRequestFormParamsRequestedSchema(
        properties=properties, required=sorted(properties)
    )
    return modern.ElicitRequest(
        params=modern.ElicitRequestFormParams(message=message, requested_schema=schema)
    )


def _ask_llm(text: str, max_tokens: int = 100) -> modern.CreateMessageRequest:
    message = modern.SamplingMessage(role="user", content=modern.TextContent(text=text))
    return modern.CreateMessageRequest(
        params=modern.CreateMessageRequestParams(messages=[message], max_tokens=max_tokens)
    )


LIST_ROOTS = modern.ListRootsRequest(params=modern.ListRootsRequestParams())
ASK_NAME = _form("What is your name?", {"name": modern.StringSchema()})


def _elicited(answer: Any, field: str) -> str | None:
    """The ``field`` of an accepted elicitation, None if it is not one."""
    if (
        isinstance(answer, modern.ElicitResult)
        and answer.action == "accept"
        and isinstance(answer.content, dict)
    ):
        value = answer.content.get(field)
        return None if value is None else str(value)
    return None


def _sampled(answer: Any) -> str | None:
    if not isinstance(answer, modern.CreateMessageResult):
        return None
    content = answer.content
    return (
        content.text if isinstance(content, modern.TextContent) else f"<{type(content).__name__}>"
    )


def _roots(answer: Any) -> str | None:
    if not isinstance(answer, modern.ListRootsResult):
        return None
    return ", ".join(root.uri for root in answer.roots) or "(none)"


@app.tool()
async def test_input_required_result_elicitation(ctx: Context) -> str:
    """Asks the user's name, then greets them."""
    answer = await ctx.elicit("What is your name?", Name, key="user_name")
    return f"Hello, {answer.data.name if answer.data else answer.action}!"


@app.tool()
async def test_input_required_result_sampling(ctx: Context) -> str:
    """Asks the client's LLM the capital of France."""
    answer = await ctx.sample(
        "What is the capital of France?", max_tokens=100, key="capital_question"
    )
    return f"The LLM says: {answer.text}"


@app.tool()
async def test_input_required_result_list_roots(ctx: Context) -> str:
    """Asks for the client's roots, then lists them."""
    roots = await ctx.list_roots(key="client_roots")
    return f"Client roots: {', '.join(root.uri for root in roots) or '(none)'}"


def _confirm(ctx: Context, fixture: str) -> modern.CallToolResult | modern.InputRequiredResult:
    confirmed = _elicited(_answers(ctx).get("confirm"), "ok")
    if confirmed is None or _state(ctx) != f"{fixture}:asked":
        request = _form("Please confirm", {"ok": modern.BooleanSchema()})
        return modern.InputRequiredResult(
            input_requests={"confirm": request}, request_state=f"{fixture}:asked"
        )
    return _done(f"Confirmed ({confirmed}): state-ok")


@app.tool()
def test_input_required_result_request_state(
    ctx: Context,
) -> modern.CallToolResult | modern.InputRequiredResult:
    """Asks for a confirmation, keeping state in requestState."""
    return _confirm(ctx, "request_state")


@app.tool()
def test_input_required_result_tampered_state(
    ctx: Context,
) -> modern.CallToolResult | modern.InputRequiredResult:
    """Asks for a confirmation; refuses altered requestState."""
    return _confirm(ctx, "tampered_state")


@app.tool()
def test_input_required_result_multiple_inputs(
    ctx: Context,
) -> modern.CallToolResult | modern.InputRequiredResult:
    """Asks a name, a greeting and the roots at once."""
    answers = _answers(ctx)
    wanted: dict[str, modern.InputRequest] = {
        "user_name": ASK_NAME,
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
    return _done(f"{greeting} {name} (roots: {roots})")


@app.tool()
def test_input_required_result_multi_round(
    ctx: Context,
) -> modern.CallToolResult | modern.InputRequiredResult:
    """Asks a name, then a colour, in two rounds."""
    answers, state = _answers(ctx), _state(ctx)
    if state is not None and state.startswith("multi_round:name="):
        color = _elicited(answers.get("step2"), "color")
        if color is not None:
            return _done(f"{state.removeprefix('multi_round:name=')} likes {color}")
    name = _elicited(answers.get("step1"), "name")
    if name is not None and state == "multi_round:step1":
        request = _form("Step 2: What is your favorite color?", {"color": modern.StringSchema()})
        return modern.InputRequiredResult(
            input_requests={"step2": request}, request_state=f"multi_round:name={name}"
        )
    request = _form("Step 1: What is your name?", {"name": modern.StringSchema()})
    return modern.InputRequiredResult(
        input_requests={"step1": request}, request_state="multi_round:step1"
    )


@app.tool()
def test_input_required_result_capabilities(
    ctx: Context,
) -> modern.CallToolResult | modern.InputRequiredResult:
    """Asks only for what the client declared it can answer."""
    answers = _answers(ctx)
    possible: dict[str, tuple[str, modern.InputRequest]] = {
        "user_name": ("elicitation", ASK_NAME),
        "greeting": ("sampling", _ask_llm("Generate a greeting", max_tokens=50)),
        "client_roots": ("roots", LIST_ROOTS),
    }
    asked = {
        key: request
        for key, (capability, request) in possible.items()
        if key not in answers and ctx.client_supports(capability)
    }
    if asked:
        return modern.InputRequiredResult(input_requests=asked)
    return _done(
        f"Answered: {', '.join(sorted(answers)) or 'nothing (the client can answer nothing)'}"
    )


# ---------------------------------------------------------------- lists that change


def test_dynamic_tool() -> str:
    """Listed after every other call of test_trigger_tool_change."""
    return "The dynamic tool is here"


def test_dynamic_prompt() -> str:
    """Listed after every other call of test_trigger_prompt_change."""
    return "This prompt comes and goes."


@app.tool()
def test_trigger_tool_change() -> str:
    """Adds or removes test_dynamic_tool and says the tool list changed."""
    if "test_dynamic_tool" in app.registry.tools:
        app.remove_tool("test_dynamic_tool")
        return "test_dynamic_tool is gone"
    app.add_tool(test_dynamic_tool)
    return "test_dynamic_tool is listed"


@app.tool()
def test_trigger_prompt_change() -> str:
    """Adds or removes test_dynamic_prompt and says the prompt list changed."""
    if "test_dynamic_prompt" in app.registry.prompts:
        app.remove_prompt("test_dynamic_prompt")
        return "test_dynamic_prompt is gone"
    app.add_prompt(test_dynamic_prompt)
    return "test_dynamic_prompt is listed"


# ---------------------------------------------------------------- the tasks extension


@app.tool()
def greet(name: str = "World") -> str:
    """Says hello (never a task)."""
    return f"Hello, {name}!"


@app.tool()
async def slow_compute(ctx: Context, seconds: float = 1, label: str = "") -> modern.CallToolResult:
    """Sleeps `seconds` seconds, then answers; a task when the client supports tasks."""

    async def compute(task: TaskContext) -> modern.CallToolResult:
        task.set_status_message(f"computing {label} for {seconds:g}s")
        # Cancelling the task cancels this sleep: the task settles as cancelled.
        await asyncio.sleep(seconds)
        return _done(f"computed {label} in {seconds:g}s")

    return await tasks.start(ctx.request_context, compute)


@app.tool()
async def failing_job(ctx: Context) -> modern.CallToolResult:
    """A task (required) that ends with a tool error after about a second."""

    async def fail(task: TaskContext) -> modern.CallToolResult:
        await asyncio.sleep(1)
        return _done("the job failed", is_error=True)  # a tool error: the task completes

    return await tasks.start(ctx.request_context, fail)


@app.tool()
async def protocol_error_job(ctx: Context) -> modern.CallToolResult:
    """A task that fails with a JSON-RPC error."""

    async def crash(task: TaskContext) -> modern.CallToolResult:
        raise McpError(INTERNAL_ERROR, "the job crashed")  # a protocol error: the task fails

    return await tasks.start(ctx.request_context, crash)


@app.tool()
async def confirm_delete(ctx: Context, filename: str = "file") -> modern.CallToolResult:
    """A task that asks the user to confirm, then answers."""

    async def confirm(task: TaskContext) -> modern.CallToolResult:
        answer = await task.elicit(
            _form(f"Delete {filename}?", {"confirm": modern.BooleanSchema()}).params
        )
        content = (
            answer.content if answer.action == "accept" and isinstance(answer.content, dict) else {}
        )
        return _done(
            f"deleted {filename}" if content.get("confirm") is True else f"kept {filename}"
        )

    return await tasks.start(ctx.request_context, confirm)


@app.tool()
async def multi_input(ctx: Context) -> modern.CallToolResult:
    """A task that asks the user two questions at once."""

    async def ask_twice(task: TaskContext) -> modern.CallToolResult:
        first, second = await asyncio.gather(
            task.elicit(_form("Your name?", {"name": modern.StringSchema()}).params),
            task.elicit(_form("Proceed?", {"confirm": modern.BooleanSchema()}).params),
        )
        return _done(f"answers: {first.content}, {second.content}")

    return await tasks.start(ctx.request_context, ask_twice)


@app.tool()
async def test_tool_with_task(ctx: Context) -> modern.CallToolResult | modern.InputRequiredResult:
    """Asks for a name (input-required round), then greets it from a task."""
    # Round 1 gathers the name the ordinary way; round 2, carrying it, becomes a task.
    user = _elicited(_answers(ctx).get("user_name"), "name")
    if user is None:
        return modern.InputRequiredResult(input_requests={"user_name": ASK_NAME})

    async def greet_later(task: TaskContext) -> modern.CallToolResult:
        await asyncio.sleep(0.1)
        return _done(f"Hello, {user}!")

    return await tasks.start(ctx.request_context, greet_later)


# ---------------------------------------------------------------- resources

WATCHED_URI = "test://watched-resource"


class WatchedResource:
    """``test://watched-resource``: its text changes every ``interval``
    seconds, and its subscribers hear of it (handshake sessions that
    subscribed, 2026-07-28 ``subscriptions/listen`` streams that asked)."""

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self.revision = 0
        self._ticker: asyncio.Task[None] | None = None

    @property
    def text(self) -> str:
        return f"Watched resource content (revision {self.revision})"

    def start(self) -> None:
        if self._ticker is None and self.interval > 0:
            # A fresh context: what the ticker sends belongs to no request.
            self._ticker = asyncio.get_running_loop().create_task(
                self._tick(), context=contextvars.Context()
            )

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            self.revision += 1
            try:
                await app.notify_resource_updated(WATCHED_URI)
            except McpError as error:
                logger.warning("cannot notify a subscriber: %s", error.message)


watched = WatchedResource(5.0)


@app.resource("test://static-text", name="static-text", mime_type="text/plain")
def static_text() -> str:
    """A static text resource"""
    return "This is the content of the static text resource."


@app.resource("test://static-binary", name="static-binary", mime_type="image/png")
def static_binary() -> bytes:
    """A static binary resource (a PNG image)"""
    return base64.b64decode(PNG_BASE64)


@app.resource(WATCHED_URI, name="watched-resource", mime_type="text/plain")
def watched_resource() -> str:
    """A resource that changes; subscribe to hear about it"""
    return watched.text


@app.resource("test://template/{id}/data", name="template-data", mime_type="application/json")
def template_data(id: str) -> dict[str, Any]:
    """JSON data for any id"""
    return {"id": id, "templateTest": True, "data": f"Data for ID: {id}"}


# ---------------------------------------------------------------- prompts and completion


@app.prompt()
def test_simple_prompt() -> str:
    """A simple prompt without arguments"""
    return "This is a simple prompt for testing."


@app.prompt()
def test_prompt_with_arguments(arg1: str, arg2: str) -> str:
    """A prompt with two required arguments

    Args:
        arg1: First test argument
        arg2: Second test argument
    """
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@app.prompt()
def test_prompt_with_embedded_resource(
    resourceUri: str,
) -> list[Message]:  # noqa: N803 (the fixture's name)
    """A prompt that embeds a resource

    Args:
        resourceUri: URI of the resource to embed
    """
    resource = mcp.TextResourceContents(
        uri=resourceUri, mime_type="text/plain", text="Embedded resource content for testing."
    )
    return [
        Message("user", mcp.EmbeddedResource(resource=resource)),
        Message("user", "Please process the embedded resource above."),
    ]


@app.prompt()
def test_prompt_with_image() -> list[Message]:
    """A prompt that includes an image"""
    return [
        Message("user", mcp.ImageContent(data=PNG_BASE64, mime_type="image/png")),
        Message("user", "Please analyze the image above."),
    ]


def _starting_with(candidates: list[str]) -> Any:
    def complete(value: str) -> list[str]:
        return [candidate for candidate in candidates if candidate.startswith(value)]

    return complete


app.completion(prompt="test_prompt_with_arguments", argument="arg1")(
    _starting_with(["paris", "park", "party", "test", "testing"])
)
app.completion(prompt="test_prompt_with_arguments", argument="arg2")(
    _starting_with(["world", "wide", "web"])
)
app.completion(prompt="test_prompt_with_embedded_resource", argument="resourceUri")(
    _starting_with(["test://static-text", "test://static-binary", WATCHED_URI])
)
app.completion(template="test://template/{id}/data", argument="id")(
    _starting_with(["1", "2", "3", "123"])
)


# ---------------------------------------------------------------- serving


class _Watching:
    """The ASGI app, starting the watched resource's clock with the first request or lifespan event."""

    def __init__(self, asgi: Any) -> None:
        self.asgi = asgi

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        watched.start()
        await self.asgi(scope, receive, send)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
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
    logging.basicConfig(
        level=options.log_level.upper(), format="%(levelname)s %(name)s: %(message)s"
    )
    watched.interval = options.watch_interval
    # Clients resume a dropped SSE stream after 100 ms (SEP-1699 polling).
    asgi = _Watching(app.asgi(options=HttpOptions(retry_ms=100)))
    # Bounded keep-alive, concurrency and request heads; open SSE streams (a
    # client's GET stream) never end by themselves: on SIGTERM or Ctrl+C give
    # in-flight requests a moment, then cut them.
    uvicorn.run(
        asgi,
        host=options.host,
        port=options.port,
        log_level=options.log_level.lower(),
        **UVICORN_OPTIONS,
    )


if __name__ == "__main__":
    main()
