"""The generated handler interfaces, answered from an app's registry.

Each revision is served by its generated ``AnsweringHandlers`` (typed as that
revision) forwarding to one :class:`RegistryAnswers`, which answers only the
methods the app needs (the runtime routes them and derives the declared
capabilities from them), all reading the same registry, so tools added later
are served at once. No class is built at run time.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from msgspec import UNSET

from .._core import jsonrpc
from .._core.jsonrpc import McpError
from .._core.session import Session
from ..methods import HandlerNotImplemented, RequestContext
from ._completion import completion_key
from ._flavor import Flavor, NamedCall
from ._resources import ResourceSpec, UriTemplate
from ._ui import UiDegradation

if TYPE_CHECKING:
    from mcpbind_protocol import v2024_11_05, v2025_03_26, v2025_06_18, v2025_11_25, v2026_07_28

    from .._extensions.tasks.serving import TaskContext, Tasks
    from ._core_tasks import CoreTasks
    from ._registry import Registry
    from ._tools import ToolSpec
    from ._visibility import Visibility


def build_handlers(
    registry: Registry,
    flavor: Flavor,
    visibility: Visibility,
    notifications: bool = False,
    tasks: Tasking | None = None,
    proxied: bool = False,
) -> object:
    """The generated ``AnsweringHandlers`` of ``flavor``'s revision serving
    ``registry``, showing what ``visibility`` shows each session.
    ``notifications``: handle the client's notifications (for middleware to see them).
    ``tasks``: how task-capable tools run as tasks (see :mod:`.core_tasks`).
    ``proxied``: serve every kind of list, empty or not, because proxied
    servers fill the registry only once they connect (after the server is built)."""
    answers = RegistryAnswers(registry, flavor, visibility, notifications, tasks, proxied)
    return flavor.types.AnsweringHandlers(answers)


if TYPE_CHECKING:

    def _answers_every_revision(answers: RegistryAnswers) -> None:
        """The proof (checked by mypy) that one RegistryAnswers answers every
        shipped revision's server methods, as that revision types them."""
        a: v2024_11_05.ServerAnswers = answers
        b: v2025_03_26.ServerAnswers = answers
        c: v2025_06_18.ServerAnswers = answers
        d: v2025_11_25.ServerAnswers = answers
        e: v2026_07_28.ServerAnswers = answers
        del a, b, c, d, e


class Tasking:
    """How an app's task-capable tools become tasks: its 2025-11-25 tasks, and
    the 2026-07-28 tasks extension it serves (if any)."""

    __slots__ = ("core", "extension")

    def __init__(self, core: CoreTasks, extension: Tasks | None) -> None:
        self.core = core
        self.extension = extension


class _Addressed(Protocol):
    """The params of a request naming a resource by URI."""

    @property
    def uri(self) -> str: ...


# Declared with the handshake (2025-11-25 derives no tasks capability from methods).
_TASKS_CAPABILITY: Mapping[str, object] = {
    "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
}


class RegistryAnswers:
    """The answers of every revision's server methods from one app's registry.

    One object per revision (its :class:`Flavor` builds that revision's
    results); the generated ``AnsweringHandlers`` of the revision types each
    method and forwards it here. Which methods are answered is decided once,
    from what the registry holds when the server is built: an app without
    prompts declares no ``prompts`` capability, and answers -32601."""

    def __init__(
        self,
        registry: Registry,
        flavor: Flavor,
        visibility: Visibility,
        notifications: bool,
        tasks: Tasking | None,
        proxied: bool,
    ) -> None:
        self.registry = registry
        self.flavor = flavor
        self.visibility = visibility
        # MCP Apps: a client that did not negotiate the extension sees no UI links
        # and no tool only an App may call (see .ui).
        self.degradation = UiDegradation()
        methods = flavor.revision.all_methods
        self.core = tasks.core if tasks is not None and "tasks/result" in methods else None
        self.extension = tasks.extension if tasks is not None and flavor.stateless else None
        served: set[str] = set()
        if registry.tools or proxied:
            served |= {"list_tools", "call_tool"}
            if self.core is not None:
                served |= {"get_task", "get_task_payload", "list_tasks", "cancel_task"}
        if registry.resources or registry.templates or proxied:
            served |= {"list_resources", "list_resource_templates", "read_resource"}
            if "resources/subscribe" in methods:
                served |= {"subscribe", "unsubscribe"}
        if registry.prompts or proxied:
            served |= {"list_prompts", "get_prompt"}
        if (registry.completions or proxied) and "completion/complete" in methods:
            served.add("complete")
        if (notifications or proxied) and "notifications/roots/list_changed" in methods:
            served.add("on_roots_list_changed")
        self.served = frozenset(served)
        self.extra_capabilities: Mapping[str, object] = (
            _TASKS_CAPABILITY if "get_task" in served else {}
        )
        # Chosen here, once: an app without task-capable tools checks nothing per call.
        self._call: Callable[[NamedCall, RequestContext], Coroutine[object, object, object]] = (
            self._call_in_place
        )
        if self.core is not None:
            self._call = self._call_as_core_task
        elif self.extension is not None:
            self._call = self._call_as_extension_task

    def serves(self, handler: str) -> bool:
        return handler in self.served

    # ------------------------------------------------------------ tools

    async def list_tools(self, params: object, ctx: RequestContext) -> Any:
        _first_page_only(params)
        tools = self.degradation.of(self._listing("tools", ctx), self.registry.tools, ctx)
        return self.flavor.types.ListToolsResult(tools=tools, **self.flavor.cache_hints)

    def call_tool(self, params: NamedCall, ctx: RequestContext) -> Coroutine[Any, Any, Any]:
        return self._call(params, ctx)

    def _call_in_place(self, params: NamedCall, ctx: RequestContext) -> Coroutine[Any, Any, object]:
        # The tool's own coroutine is the handler's: one frame fewer per call.
        return self._tool(params.name, ctx).call(params, ctx, self.flavor)

    def _call_as_core_task(
        self, params: NamedCall, ctx: RequestContext
    ) -> Coroutine[Any, Any, object]:
        assert self.core is not None
        return self.core.call(self._tool(params.name, ctx), params, ctx, self.flavor)

    def _call_as_extension_task(
        self, params: NamedCall, ctx: RequestContext
    ) -> Coroutine[Any, Any, object]:
        assert self.extension is not None
        tool = self._tool(params.name, ctx)
        if tool.task_support is not None:
            return _as_extension_task(self.extension, tool, params, ctx, self.flavor)
        return tool.call(params, ctx, self.flavor)

    def _tool(self, name: str, ctx: RequestContext) -> ToolSpec:
        tool = self.registry.tools.get(name)
        if (
            tool is None
            or self._hidden(name, tool.tags, ctx)
            or self.degradation.refused(tool.wire, ctx)
        ):
            raise McpError(
                jsonrpc.INVALID_PARAMS,
                self.registry.unknown("tools", name, f"Unknown tool: {name}"),
            )
        return tool

    # ------------------------------------------------------------ 2025-11-25 tasks

    async def get_task(self, params: object, ctx: RequestContext) -> Any:
        assert self.core is not None
        return await self.core.get(params, ctx, self.flavor)

    async def get_task_payload(self, params: object, ctx: RequestContext) -> Any:
        assert self.core is not None
        return await self.core.result(params, ctx, self.flavor)

    async def list_tasks(self, params: object, ctx: RequestContext) -> Any:
        assert self.core is not None
        return await self.core.list(params, ctx, self.flavor)

    async def cancel_task(self, params: object, ctx: RequestContext) -> Any:
        assert self.core is not None
        return await self.core.cancel(params, ctx, self.flavor)

    async def on_task_status(self, params: object, ctx: RequestContext) -> None:
        return None  # a client's task status: the app runs no task on a client

    # ------------------------------------------------------------ resources

    async def list_resources(self, params: object, ctx: RequestContext) -> Any:
        _first_page_only(params)
        return self.flavor.types.ListResourcesResult(
            resources=self._listing("resources", ctx), **self.flavor.cache_hints
        )

    async def list_resource_templates(self, params: object, ctx: RequestContext) -> Any:
        _first_page_only(params)
        return self.flavor.types.ListResourceTemplatesResult(
            resource_templates=self._listing("templates", ctx), **self.flavor.cache_hints
        )

    async def read_resource(self, params: _Addressed, ctx: RequestContext) -> Any:
        uri = params.uri
        spec, variables = _find_resource(self.registry, uri, self.flavor)
        if self._hidden(spec.uri, spec.tags, ctx):
            raise McpError(
                self.flavor.resource_not_found, f"Resource not found: {uri}", {"uri": uri}
            )
        return await spec.read(uri, variables, params, ctx, self.flavor)

    async def subscribe(self, params: _Addressed, ctx: RequestContext) -> Any:
        return await self._subscription(params.uri, ctx, True, "resources/subscribe")

    async def unsubscribe(self, params: _Addressed, ctx: RequestContext) -> Any:
        return await self._subscription(params.uri, ctx, False, "resources/unsubscribe")

    async def _subscription(
        self, uri: str, ctx: RequestContext, subscribed: bool, method: str
    ) -> object:
        peer = ctx.session
        if isinstance(peer, Session):
            if subscribed:
                self.registry.subscribe(uri, peer)
            else:
                self.registry.unsubscribe(uri, peer)
        for watcher in self.registry.subscription_watchers:
            await watcher(uri, subscribed)
        return self.flavor.revision.all_methods[method].result()

    async def subscriptions_listen(self, params: object, ctx: RequestContext) -> Any:
        # The server answers subscriptions/listen itself; an app never routes it here.
        raise HandlerNotImplemented("subscriptions/listen")

    # ------------------------------------------------------------ prompts

    async def list_prompts(self, params: object, ctx: RequestContext) -> Any:
        _first_page_only(params)
        return self.flavor.types.ListPromptsResult(
            prompts=self._listing("prompts", ctx), **self.flavor.cache_hints
        )

    async def get_prompt(self, params: NamedCall, ctx: RequestContext) -> Any:
        name = params.name
        prompt = self.registry.prompts.get(name)
        if prompt is None or self._hidden(name, prompt.tags, ctx):
            raise McpError(
                jsonrpc.INVALID_PARAMS,
                self.registry.unknown("prompts", name, f"Unknown prompt: {name}"),
            )
        return await prompt.get(params, ctx, self.flavor)

    # ------------------------------------------------------------ completion, roots

    async def complete(self, params: object, ctx: RequestContext) -> Any:
        key = completion_key(params)
        _check_reference(self.registry, key)
        completer = self.registry.completions.get(key)
        if completer is None:
            return self.flavor.convert({"completion": {"values": []}}, "CompleteResult")
        return await completer.answer(params, ctx, self.flavor)

    async def on_roots_list_changed(self, params: object, ctx: RequestContext) -> None:
        for watcher in self.registry.roots_watchers:  # proxies pass it on; middleware sees it
            await watcher()

    # ------------------------------------------------------------ visibility

    def _listing(self, kind: str, ctx: RequestContext) -> list[object]:
        items = self.registry.listing(kind, self.flavor)
        if not self.visibility.active:
            return items
        session = _session(ctx)
        specs = self.registry.specs(kind)
        return [
            item
            for (key, spec), item in zip(specs.items(), items)
            if self.visibility.visible(session, key, spec.tags)
        ]

    def _hidden(self, key: str, tags: frozenset[str], ctx: RequestContext) -> bool:
        return self.visibility.active and not self.visibility.visible(_session(ctx), key, tags)


async def _as_extension_task(
    extension: Tasks, tool: ToolSpec, params: Any, ctx: RequestContext, flavor: Flavor
) -> object:
    """A task-capable tool's call at 2026-07-28: a task of the extension for a
    client that declared it, else the call itself."""

    async def work(task: TaskContext) -> Any:
        in_task = getattr(tool, "call_in_task", None)  # a proxied tool asks through the task
        if in_task is not None and task.task_id is not None:
            return await in_task(params, ctx, flavor, task)
        return await tool.call(params, ctx, flavor)

    return await extension.start(ctx, work)


def _session(ctx: RequestContext) -> object:
    """The session of a request for visibility (None at 2026-07-28: no session)."""
    return None if ctx.stateless else ctx.session


def _first_page_only(params: object) -> None:
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
