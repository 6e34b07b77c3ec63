"""The server of the scale-out tests, as an app factory for
``uvicorn --workers N --factory support.scaleout_app:app``: every worker
builds the same server on the Redis named by ``MCP_TEST_REDIS_URL``
(``MCP_TEST_STORE=memory`` keeps everything in the worker, for the bench).

Its tools tell which worker ran them (``pid``), stream numbered log messages
(``count``) or send nothing until they answer (``sleep``), announce changes
(``announce``, ``touch``), ask the client for its roots (``ask_roots``,
answered on whichever worker), say whether this worker holds a session's GET
stream (``holds_stream``), name this worker in the store (``worker``: its pid
and the name its request streams' ids begin with), run a task that waits to be
cancelled (``wait_job``) and tell the Redis round trips this worker made
(``trips``, counted when ``MCP_TEST_COUNT_REDIS`` is set: the soak run of the
bench). The legacy HTTP+SSE transport is served too; its answers carry an
``x-worker`` header naming the worker they landed on (the tool they carry runs
on the worker holding the stream).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from typing import Any

from typing_extensions import override

from mcpbind._core import lifecycle
from mcpbind._extensions.tasks.serving import TaskContext, Tasks
from mcpbind._server.server import Server
from mcpbind._transports.http.asgi import Message, Receive, Scope, Send
from mcpbind._transports.http.server.shared_sessions import SharedSessions
from mcpbind._transports.http.server.streamable import StreamableHTTPApp
from mcpbind.http import HttpApp, HttpOptions, http_app
from mcpbind.methods import RequestContext
from mcpbind.stores import Store
from mcpbind.stores import _quotas as quotas
from mcpbind_protocol import v2025_11_25 as older
from mcpbind_protocol import v2026_07_28 as mcp

STATE_KEY = b"the scale-out tests share this key!"

# Round trips to Redis made by this worker: each command or pipeline sent and
# answered (a script is one); the pub/sub connection's reads are not counted.
trips = [0]


Worker = Callable[[HttpOptions], StreamableHTTPApp]
"""Makes a worker of this server, with these options, on a store the caller chose (the
``worker`` fixture of tests/stores: on the module's redis-server)."""


def count_redis_trips() -> None:
    from redis.asyncio.client import Pipeline, Redis

    command, pipeline = Redis.execute_command, Pipeline.execute

    async def counted_command(self: Redis, *args: Any, **options: Any) -> Any:
        trips[0] += 1
        return await command(self, *args, **options)

    async def counted_pipeline(self: Pipeline, raise_on_error: bool = True) -> Any:
        trips[0] += 1
        return await pipeline(self, raise_on_error)

    Redis.execute_command = counted_command  # type: ignore[method-assign]
    Pipeline.execute = counted_pipeline  # type: ignore[method-assign]


def text(value: object) -> mcp.CallToolResult:
    return mcp.CallToolResult(content=[mcp.TextContent(text=str(value))])


class Tools(mcp.ServerHandlers):
    def __init__(self, tasks: Tasks) -> None:
        self.tasks = tasks
        self.server: Server | None = None
        self.app: HttpApp | None = None

    @override
    async def list_tools(
        self, params: mcp.ListToolsRequestParams | None, ctx: RequestContext
    ) -> mcp.ListToolsResultResponseResult:
        schema = mcp.ToolInputSchema(type="object")
        names = (
            "pid",
            "count",
            "announce",
            "touch",
            "ask_roots",
            "holds_stream",
            "wait_job",
            "trips",
            "sleep",
            "worker",
        )
        tools = [mcp.Tool(name=name, input_schema=schema) for name in names]
        return mcp.ListToolsResult(tools=tools, cache_scope="public", ttl_ms=0)

    @override
    async def call_tool(
        self, params: mcp.CallToolRequestParams, ctx: RequestContext
    ) -> mcp.CallToolResultResponseResult:
        arguments: dict[str, Any] = params.arguments if isinstance(params.arguments, dict) else {}
        assert self.server is not None
        if params.name == "pid":
            return text(os.getpid())
        if params.name == "header":  # the x-probe header of the request's POST
            headers = ctx.extra.headers
            return text("none" if headers is None else headers.get("x-probe", "?"))
        if params.name == "trips":
            return text(f"{os.getpid()} {trips[0]}")
        if params.name == "count":
            for n in range(int(arguments.get("n", 3))):
                await ctx.log("info", {"n": n, "pid": os.getpid()})
                await asyncio.sleep(float(arguments.get("delay", 0.0)))
            return text(os.getpid())
        if params.name == "sleep":
            await asyncio.sleep(float(arguments.get("seconds", 1.0)))
            return text(os.getpid())
        if params.name == "worker":
            table = self.app.streamable.table if self.app is not None else None
            name = table.worker if isinstance(table, SharedSessions) else ""
            return text(f"{os.getpid()} {name}")
        if params.name == "announce":
            await self.server.notify_list_changed("tools")
            return text(os.getpid())
        if params.name == "touch":
            await self.server.notify_resource_updated(str(arguments["uri"]))
            return text(os.getpid())
        if params.name == "ask_roots":  # a request to the client, in a handshake session
            spec = lifecycle.revision(ctx.protocol_version).all_methods["roots/list"]
            roots = await ctx.peer.request(spec, None, timeout=20)
            return text(f"{os.getpid()} {len(roots.roots)}")
        if params.name == "holds_stream":
            table = self.app.streamable.table if self.app is not None else None
            holds = isinstance(table, SharedSessions) and table.holds_stream(
                str(arguments["session"])
            )
            return text(f"{os.getpid()} {holds}")
        if params.name == "wait_job":

            async def work(task: TaskContext) -> mcp.CallToolResult:
                task.set_status_message(f"running on {os.getpid()}")
                await asyncio.sleep(float(arguments.get("seconds", 30)))
                return text(f"finished on {os.getpid()}")

            return await self.tasks.start(ctx, work)
        raise ValueError(f"unknown tool {params.name}")

    @override
    async def list_resources(
        self, params: mcp.ListResourcesRequestParams | None, ctx: RequestContext
    ) -> mcp.ListResourcesResultResponseResult:
        return mcp.ListResourcesResult(
            resources=[mcp.Resource(name="doc", uri="memo://doc")], cache_scope="public", ttl_ms=0
        )


class OlderTools(older.ServerHandlers):
    """``pid`` alone, in handlers of 2025-11-25 (``MCP_TEST_HANDLERS=2025-11-25``): what
    clients of the older revisions, the official SDK's among them, are served."""

    @override
    async def list_tools(
        self, params: older.PaginatedRequestParams, ctx: RequestContext
    ) -> older.ListToolsResult:
        schema = older.ToolInputSchema(type="object")
        return older.ListToolsResult(tools=[older.Tool(name="pid", input_schema=schema)])

    @override
    async def call_tool(
        self, params: older.CallToolRequestParams, ctx: RequestContext
    ) -> older.CallToolResult:
        return older.CallToolResult(content=[older.TextContent(text=str(os.getpid()))])


def store() -> Store | None:
    if os.environ.get("MCP_TEST_STORE") == "memory":
        return None
    from mcpbind.stores._redis_store import RedisStore

    return RedisStore.from_url(os.environ["MCP_TEST_REDIS_URL"])


class SaysWorker:
    """``app`` with an ``x-worker: <pid>`` header on the answers of the legacy transport."""

    def __init__(self, app: HttpApp) -> None:
        self.app = app
        self.pid = str(os.getpid()).encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] not in ("/sse", "/messages"):
            await self.app(scope, receive, send)
            return

        async def marked(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", ()), (b"x-worker", self.pid)]
            await send(message)

        await self.app(scope, receive, marked)


def app() -> SaysWorker:
    if os.environ.get("MCP_TEST_COUNT_REDIS"):
        count_redis_trips()
    tasks = Tasks(tools={"wait_job": "optional"})
    tools = Tools(tasks)
    older_handlers = os.environ.get("MCP_TEST_HANDLERS") == "2025-11-25"
    server = Server(
        OlderTools() if older_handlers else tools,
        name="scaleout",
        version="1",
        state_key=STATE_KEY,
        extensions=[tasks],
        capabilities={"tools": {"listChanged": True}},
    )
    tools.server = server
    per_client: list[int | None] = [None, None, None]
    # MCP_TEST_QUOTAS: "sessions,streams,requests" per client and the lease ttl, then
    # ",app-wide" to count the requests app-wide (app_wide_request_counts); or "default"
    # (the options' defaults, app_wide_request_counts too when followed by ",app-wide").
    chosen = (
        os.environ.get("MCP_TEST_QUOTAS", "").split(",")
        if os.environ.get("MCP_TEST_QUOTAS")
        else []
    )
    app_wide = chosen[-1:] == ["app-wide"]
    if app_wide:
        chosen.pop()
    if chosen == ["default"]:
        defaults = HttpOptions()
        per_client = [defaults.max_sessions_per_client, defaults.max_streams_per_client, defaults.max_requests_per_client]  # fmt: skip
    elif chosen:
        *limits, lease_ttl = chosen
        per_client = [int(limit) for limit in limits]
        quotas.LEASE_TTL = float(
            lease_ttl
        )  # short, so that a test sees a dead worker's places drain
    sessions, streams, requests = per_client
    trusted = tuple(filter(None, os.environ.get("MCP_TEST_TRUSTED_PROXIES", "").split(",")))
    tools.app = http_app(server, store=store(), options=HttpOptions(session_timeout=20, max_sessions_per_client=sessions, max_streams_per_client=streams, max_requests_per_client=requests, app_wide_request_counts=app_wide, trusted_proxies=trusted))  # fmt: skip
    return SaysWorker(tools.app)
