"""What an application answers for all of a host's servers.

A host has one set of handlers, a :class:`HostHandlers` subclass, for every
server; each method is told which server asked. The types are those of the
newest revision, which the runtime also uses to answer servers that speak an
older one. As with the generated ``ClientHandlers``, only the requests a
subclass overrides are declared as client capabilities (a server offers its
sampling tools, say, only to a client that declared sampling).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Protocol

from mcpbind_protocol import v2026_07_28 as mcp

from ..methods import HandlerNotImplemented, RequestContext

if TYPE_CHECKING:
    from ._connection import ServerStatus

REQUESTS = ("create_message", "elicit", "list_roots")
"""The server-to-client requests a host answers through its handlers."""


class HostHandlers:
    """Override what the application supports; the rest is refused (-32601) or ignored."""

    async def create_message(
        self, server: str, params: mcp.CreateMessageRequestParams, ctx: RequestContext
    ) -> mcp.CreateMessageResult:
        """``server`` asks to sample an LLM (sampling/createMessage)."""
        raise HandlerNotImplemented("sampling/createMessage")

    async def elicit(
        self, server: str, params: mcp.ElicitRequestParams, ctx: RequestContext
    ) -> mcp.ElicitResult:
        """``server`` asks the user for information (elicitation/create)."""
        raise HandlerNotImplemented("elicitation/create")

    async def list_roots(
        self, server: str, params: mcp.ListRootsRequestParams, ctx: RequestContext
    ) -> mcp.ListRootsResult:
        """``server`` asks for the roots it may work in (roots/list)."""
        raise HandlerNotImplemented("roots/list")

    async def on_log(self, server: str, params: mcp.LoggingMessageNotificationParams) -> None:
        """A log message from ``server``."""

    async def on_resource_updated(
        self, server: str, params: mcp.ResourceUpdatedNotificationParams
    ) -> None:
        """``server`` says a resource changed."""

    async def on_status(self, server: str, status: ServerStatus) -> None:
        """``server``'s :class:`mcpbind.host.ServerStatus` changed (connected, lost, retrying, failed)."""

    async def on_list_changed(self, server: str, kind: str) -> None:
        """The host's view of ``server``'s ``kind`` (tools, resources, resource_templates,
        prompts) changed; the host's lists are already current."""


class ListChanges(Protocol):
    """Where a server's list-changed notifications go (the host)."""

    def list_changed(self, server: str, kinds: tuple[str, ...]) -> None: ...

    def resource_updated(self, server: str, params: object) -> None: ...


class _ServerHandlers(mcp.ClientHandlers):
    """The handlers of one server's client: forward to the application, naming the server."""

    def __init__(self, app: HostHandlers, server: str, changes: ListChanges) -> None:
        self.app = app
        self.server = server
        self.changes = changes

    async def on_tool_list_changed(
        self, params: mcp.NotificationParams, ctx: RequestContext
    ) -> None:
        self.changes.list_changed(self.server, ("tools",))

    async def on_prompt_list_changed(
        self, params: mcp.NotificationParams, ctx: RequestContext
    ) -> None:
        self.changes.list_changed(self.server, ("prompts",))

    async def on_resource_list_changed(
        self, params: mcp.NotificationParams, ctx: RequestContext
    ) -> None:
        self.changes.list_changed(self.server, ("resources", "resource_templates"))

    async def on_resource_updated(
        self, params: mcp.ResourceUpdatedNotificationParams, ctx: RequestContext
    ) -> None:
        self.changes.resource_updated(self.server, params)
        await self.app.on_resource_updated(self.server, params)

    async def on_logging_message(
        self, params: mcp.LoggingMessageNotificationParams, ctx: RequestContext
    ) -> None:
        await self.app.on_log(self.server, params)


HandlersFactory = Callable[[str, ListChanges], mcp.ClientHandlers]


def handlers_factory(app: HostHandlers) -> HandlersFactory:
    """Makes each server's client handlers; built once per host. The class
    overrides exactly the requests ``app`` overrides, so that each client
    declares the capabilities the application has."""
    overrides = {
        name: _forward(name)
        for name in REQUESTS
        if getattr(type(app), name) is not getattr(HostHandlers, name)
    }
    cls = type(f"{type(app).__name__}ForServer", (_ServerHandlers,), overrides)

    def make(server: str, changes: ListChanges) -> mcp.ClientHandlers:
        handlers: mcp.ClientHandlers = cls(app, server, changes)
        return handlers

    return make


def _forward(
    name: str,
) -> Callable[[_ServerHandlers, object, RequestContext], Coroutine[object, object, object]]:
    async def forward(self: _ServerHandlers, params: object, ctx: RequestContext) -> object:
        answer: object = await getattr(self.app, name)(self.server, params, ctx)
        return answer

    forward.__name__ = name
    return forward
