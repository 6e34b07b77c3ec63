"""The generated handler interfaces, implemented once per revision from an app's registry.

Each revision gets a subclass of its ``ServerHandlers`` overriding only the
methods the app needs (the runtime derives the declared capabilities from
which methods are overridden), all reading the same registry, so tools added
later are served at once.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

from msgspec import UNSET

from .. import jsonrpc
from ..http import request_headers
from ..http.current import set_request_headers
from ..jsonrpc import McpError
from ..methods import RequestContext
from ..session import Session
from .completion import completion_key
from .flavor import Flavor
from .resources import ResourceSpec, UriTemplate
from .ui import UiDegradation

if TYPE_CHECKING:
    from ..tasks import TaskContext, Tasks
    from .core_tasks import CoreTasks
    from .registry import Registry
    from .tools import ToolSpec
    from .visibility import Visibility


def build_handlers(
    registry: Registry,
    flavor: Flavor,
    visibility: Visibility,
    notifications: bool = False,
    tasks: Tasking | None = None,
    proxied: bool = False,
) -> object:
    """A ``ServerHandlers`` instance of ``flavor``'s revision serving
    ``registry``, showing what ``visibility`` shows each session.
    ``notifications``: handle the client's notifications (for middleware to see them).
    ``tasks``: how task-capable tools run as tasks (see :mod:`.core_tasks`).
    ``proxied``: serve every kind of list, empty or not, because proxied
    servers fill the registry only once they connect (after the server is built)."""
    types = flavor.types
    methods = flavor.revision.all_methods
    hints = flavor.cache_hints
    namespace: dict[str, Any] = {}

    def listing(kind: str, ctx: RequestContext) -> list[Any]:
        if not visibility.active:
            return registry.listing(kind, flavor)
        session = _session(ctx)
        specs: dict[str, Any] = getattr(registry, kind)
        return [
            item
            for (key, spec), item in zip(specs.items(), registry.listing(kind, flavor))
            if visibility.visible(session, key, spec.tags)
        ]

    def hidden(key: str, spec: Any, ctx: RequestContext) -> bool:
        return visibility.active and not visibility.visible(_session(ctx), key, spec.tags)

    if registry.tools or proxied:
        # MCP Apps: a client that did not negotiate the extension sees no UI links
        # and no tool only an App may call (see .ui).
        degradation = UiDegradation()

        async def list_tools(self: object, params: Any, ctx: RequestContext) -> Any:
            _first_page_only(params)
            tools = degradation.of(listing("tools", ctx), registry.tools, ctx)
            return types.ListToolsResult(tools=tools, **hints)

        core = tasks.core if tasks is not None and "tasks/result" in methods else None
        extension = tasks.extension if tasks is not None and flavor.stateless else None

        def find_tool(params: Any, ctx: RequestContext) -> ToolSpec:
            tool = registry.tools.get(params.name)
            if (
                tool is None
                or (visibility.active and hidden(params.name, tool, ctx))
                or degradation.refused(tool.wire, ctx)
            ):
                raise McpError(
                    jsonrpc.INVALID_PARAMS,
                    registry.unknown("tools", params.name, f"Unknown tool: {params.name}"),
                )
            return tool

        def call_tool(self: object, params: Any, ctx: RequestContext) -> Awaitable[Any]:
            # The tool's own coroutine is the handler's: one frame fewer per call.
            tool = registry.tools.get(params.name)
            if (
                tool is None
                or (visibility.active and hidden(params.name, tool, ctx))
                or degradation.refused(tool.wire, ctx)
            ):
                raise McpError(
                    jsonrpc.INVALID_PARAMS,
                    registry.unknown("tools", params.name, f"Unknown tool: {params.name}"),
                )
            return tool.call(params, ctx, flavor)

        # Tasks (chosen here, once: an app without task-capable tools checks nothing per call).
        if core is not None:

            def call_tool(self: object, params: Any, ctx: RequestContext) -> Awaitable[Any]:
                return core.call(find_tool(params, ctx), params, ctx, flavor)

        elif extension is not None:

            def call_tool(self: object, params: Any, ctx: RequestContext) -> Awaitable[Any]:
                tool = find_tool(params, ctx)
                if tool.task_support is not None:
                    return _as_extension_task(extension, tool, params, ctx, flavor)
                return tool.call(params, ctx, flavor)

        namespace.update(list_tools=list_tools, call_tool=call_tool)
        if core is not None:

            async def get_task(self: object, params: Any, ctx: RequestContext) -> Any:
                return await core.get(params, ctx, flavor)

            async def get_task_payload(self: object, params: Any, ctx: RequestContext) -> Any:
                return await core.result(params, ctx, flavor)

            async def list_tasks(self: object, params: Any, ctx: RequestContext) -> Any:
                return await core.list(params, ctx, flavor)

            async def cancel_task(self: object, params: Any, ctx: RequestContext) -> Any:
                return await core.cancel(params, ctx, flavor)

            namespace.update(
                get_task=get_task,
                get_task_payload=get_task_payload,
                list_tasks=list_tasks,
                cancel_task=cancel_task,
                # Declared with the handshake (2025-11-25 derives no tasks capability from methods).
                extra_capabilities={
                    "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
                },
            )

    if registry.resources or registry.templates or proxied:

        async def list_resources(self: object, params: Any, ctx: RequestContext) -> Any:
            _first_page_only(params)
            return types.ListResourcesResult(resources=listing("resources", ctx), **hints)

        async def list_resource_templates(self: object, params: Any, ctx: RequestContext) -> Any:
            _first_page_only(params)
            return types.ListResourceTemplatesResult(
                resource_templates=listing("templates", ctx), **hints
            )

        async def read_resource(self: object, params: Any, ctx: RequestContext) -> Any:
            spec, variables = _find_resource(registry, params.uri, flavor)
            if visibility.active and hidden(spec.uri, spec, ctx):
                raise McpError(
                    flavor.resource_not_found,
                    f"Resource not found: {params.uri}",
                    {"uri": params.uri},
                )
            return await spec.read(params.uri, variables, params, ctx, flavor)

        namespace.update(
            list_resources=list_resources,
            list_resource_templates=list_resource_templates,
            read_resource=read_resource,
        )
        if "resources/subscribe" in methods:
            subscribe_result = methods["resources/subscribe"].result
            unsubscribe_result = methods["resources/unsubscribe"].result

            async def subscribe(self: object, params: Any, ctx: RequestContext) -> Any:
                peer = ctx.peer
                if isinstance(peer, Session):
                    registry.subscribe(params.uri, peer)
                for watcher in registry.subscription_watchers:
                    await watcher(params.uri, True)
                return subscribe_result()

            async def unsubscribe(self: object, params: Any, ctx: RequestContext) -> Any:
                peer = ctx.peer
                if isinstance(peer, Session):
                    registry.unsubscribe(params.uri, peer)
                for watcher in registry.subscription_watchers:
                    await watcher(params.uri, False)
                return unsubscribe_result()

            namespace.update(subscribe=subscribe, unsubscribe=unsubscribe)

    if registry.prompts or proxied:

        async def list_prompts(self: object, params: Any, ctx: RequestContext) -> Any:
            _first_page_only(params)
            return types.ListPromptsResult(prompts=listing("prompts", ctx), **hints)

        async def get_prompt(self: object, params: Any, ctx: RequestContext) -> Any:
            prompt = registry.prompts.get(params.name)
            if prompt is None or hidden(params.name, prompt, ctx):
                raise McpError(
                    jsonrpc.INVALID_PARAMS,
                    registry.unknown("prompts", params.name, f"Unknown prompt: {params.name}"),
                )
            return await prompt.get(params, ctx, flavor)

        namespace.update(list_prompts=list_prompts, get_prompt=get_prompt)

    if (registry.completions or proxied) and "completion/complete" in methods:

        async def complete(self: object, params: Any, ctx: RequestContext) -> Any:
            key = completion_key(params)
            _check_reference(registry, key)
            completer = registry.completions.get(key)
            if completer is None:
                return flavor.convert({"completion": {"values": []}}, "CompleteResult")
            return await completer.answer(params, ctx, flavor)

        namespace["complete"] = complete

    if (notifications or proxied) and "notifications/roots/list_changed" in methods:

        async def on_roots_list_changed(self: object, params: Any, ctx: RequestContext) -> None:
            for watcher in registry.roots_watchers:  # proxies pass it on; middleware sees it
                await watcher()

        namespace["on_roots_list_changed"] = on_roots_list_changed

    handlers_type = type(
        f"AppHandlers_{flavor.version.replace('-', '_')}", (types.ServerHandlers,), namespace
    )
    return handlers_type()


class Tasking:
    """How an app's task-capable tools become tasks: its 2025-11-25 tasks, and
    the 2026-07-28 tasks extension it serves (if any)."""

    __slots__ = ("core", "extension")

    def __init__(self, core: CoreTasks, extension: Tasks | None) -> None:
        self.core = core
        self.extension = extension


async def _as_extension_task(
    extension: Tasks, tool: ToolSpec, params: Any, ctx: RequestContext, flavor: Flavor
) -> Any:
    """A task-capable tool's call at 2026-07-28: a task of the extension for a
    client that declared it, else the call itself."""

    headers = request_headers()

    async def work(task: TaskContext) -> Any:
        set_request_headers(headers)  # the task's own context: ctx.headers stays the request's
        in_task = getattr(tool, "call_in_task", None)  # a proxied tool asks through the task
        if in_task is not None and task.task_id is not None:
            return await in_task(params, ctx, flavor, task)
        return await tool.call(params, ctx, flavor)

    return await extension.start(ctx, work)


def _session(ctx: RequestContext) -> Any:
    """The session of a request for visibility (None at 2026-07-28: no session)."""
    return None if ctx.stateless else ctx.peer


def _first_page_only(params: Any) -> None:
    """Refuse a cursor: an app's lists are one page, so no cursor is one it issued."""
    cursor = getattr(params, "cursor", UNSET)
    if cursor is not UNSET and cursor is not None:
        raise McpError(
            jsonrpc.INVALID_PARAMS,
            "Invalid params: unknown cursor (this server sends every list in one page)",
        )


def _check_reference(registry: Registry, key: tuple[str, str, str]) -> None:
    """Refuse the completion of a prompt or resource template the app does not serve."""
    kind, name, _ = key
    if kind == "ref/prompt" and name not in registry.prompts:
        raise McpError(jsonrpc.INVALID_PARAMS, f"Invalid params: unknown prompt {name!r}")
    if kind == "ref/resource" and name not in registry.templates and name not in registry.resources:
        raise McpError(
            jsonrpc.INVALID_PARAMS, f"Invalid params: unknown resource template {name!r}"
        )


def _find_resource(
    registry: Registry, uri: str, flavor: Flavor
) -> tuple[ResourceSpec, dict[str, str]]:
    found = registry.resource(uri)
    if found is not None:
        return found
    message = f"Resource not found: {uri}"
    for held, (_, why) in registry.held["templates"].items():
        if UriTemplate(held).match(uri) is not None:
            message = why  # a proxied template held back (see .pinning)
    raise McpError(flavor.resource_not_found, message, {"uri": uri})
