"""Connecting to MCP servers: a :class:`Client` opens :class:`ClientSession` s.

A ClientSession is the ``Caller`` the generated stubs need, so typed calls
look like ``await v2025_11_25.ClientStub(session).call_tool("echo", ...)``.
What the server may send back (sampling, roots, elicitation, notifications) is
answered by an optional generated ``ClientHandlers`` subclass instance.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from . import codec, jsonrpc, lifecycle
from .jsonrpc import McpError
from .lifecycle import Revision
from .methods import MethodSpec
from .session import Route, Session, Transport

_BASE = "ClientHandlers"


class Client:
    """An MCP client: identity, optional handlers and the revisions it speaks.

    ``protocol_version`` is the revision asked for in initialize (default: the
    handlers' revision, else the newest released handshake revision). The
    server may answer any of ``versions`` (default: every released handshake
    revision up to the one asked for).
    """

    def __init__(
        self,
        *,
        name: str,
        version: str,
        title: str | None = None,
        handlers: object | None = None,
        protocol_version: str | None = None,
        versions: Sequence[str] | None = None,
        capabilities: Mapping[str, Any] | None = None,
        default_timeout: float | None = None,
    ) -> None:
        handshake = lifecycle.handshake_versions()
        self.handlers = handlers
        self.handler_revision = lifecycle.revision_of_handlers(handlers, _BASE) if handlers is not None else None
        if protocol_version is None:
            protocol_version = self.handler_revision.version if self.handler_revision else handshake[-1]
        if protocol_version not in handshake:
            raise ValueError(f"unsupported protocol version {protocol_version!r} (known: {', '.join(handshake)})")
        self.protocol_version = protocol_version
        self.versions = list(versions) if versions is not None else [v for v in handshake if v <= protocol_version]
        self.name = name
        self.version = version
        self.title = title
        self.extra_capabilities = dict(capabilities or {})
        self.default_timeout = default_timeout

    async def connect(self, transport: Transport) -> ClientSession:
        """Run the initialize handshake over ``transport``; the ready session."""
        session = ClientSession(self, transport)
        session.start()
        try:
            await session.initialize()
        except BaseException:
            await session.close()
            raise
        return session


class ClientSession(Session):
    """A client's side of one initialized connection."""

    def __init__(self, client: Client, transport: Transport) -> None:
        self.client = client
        self._router = _ClientRouter(self)
        super().__init__(transport, self._router, protocol_version="", default_timeout=client.default_timeout)
        self.server_info: Any = None
        self.server_capabilities: Any = None
        self.instructions: str | None = None

    async def initialize(self) -> None:
        client = self.client
        asked = lifecycle.revision(client.protocol_version)
        info: dict[str, Any] = {"name": client.name, "version": client.version}
        if client.title is not None:
            info["title"] = client.title
        declared = lifecycle.capabilities(
            client.handlers, _BASE, client.handler_revision, "SERVER_REQUESTS", client.extra_capabilities
        )
        spec = asked.all_methods["initialize"]
        params = codec.convert(
            {"protocolVersion": client.protocol_version, "capabilities": declared, "clientInfo": info}, spec.params
        )
        self._router.initializing = True
        try:
            result = await self.request(spec, params)
        finally:
            self._router.initializing = False
        if result.protocol_version not in client.versions:
            raise McpError(
                jsonrpc.INVALID_REQUEST,
                f"server answered protocol version {result.protocol_version!r}; this client speaks {', '.join(client.versions)}",
            )
        self.protocol_version = result.protocol_version
        self.server_info = result.server_info
        self.server_capabilities = result.capabilities
        self.instructions = result.instructions if isinstance(result.instructions, str) else None
        self._router.negotiated(lifecycle.revision(result.protocol_version))
        # HTTP transports send the negotiated version in a header from now on.
        negotiated = getattr(self.transport, "negotiated", None)
        if negotiated is not None:
            negotiated(result.protocol_version)
        await self.send_raw_notification("notifications/initialized", None)


class _ClientRouter:
    def __init__(self, session: ClientSession) -> None:
        self.session = session
        self.client = session.client
        self.initializing = False
        self.revision: Revision | None = None
        self._routes: dict[str, Route] = {}
        self._notifications: dict[str, Route | None] = {}

    def negotiated(self, revision: Revision) -> None:
        self.revision = revision
        handlers, typed_revision = self.client.handlers, self.client.handler_revision
        if handlers is None or typed_revision is None:
            return
        for method in revision.table("SERVER_REQUESTS"):
            typed = typed_revision.all_methods.get(method)
            if typed is not None and method != "ping" and lifecycle.overridden(handlers, _BASE, typed.handler):
                self._routes[method] = (typed, getattr(handlers, typed.handler))
        for method in revision.table("SERVER_NOTIFICATIONS"):
            typed = typed_revision.all_methods.get(method)
            if typed is not None and lifecycle.overridden(handlers, _BASE, typed.handler):
                self._notifications[method] = (typed, getattr(handlers, typed.handler))

    def route_request(self, method: str) -> Route:
        route = self._routes.get(method)
        if route is None:
            raise McpError(jsonrpc.METHOD_NOT_FOUND, f"Method not found: {method}")
        return route

    def route_notification(self, method: str) -> Route | None:
        return self._notifications.get(method)

    def log_level_allows(self, level: str) -> bool:
        return False  # clients do not send log messages

    def check_outgoing(self, spec: MethodSpec[Any, Any]) -> None:
        if self.revision is None:
            if self.initializing and spec.method == "initialize":
                return
            raise McpError(jsonrpc.INVALID_REQUEST, f"cannot send {spec.method} before the session is initialized")
        negotiated = self.revision.all_methods.get(spec.method)
        if negotiated is None or negotiated.direction == "server_to_client":
            raise McpError(
                jsonrpc.METHOD_NOT_FOUND,
                f"{spec.method} is not part of protocol revision {self.revision.version}, which the server answered",
            )
        if negotiated.capability and not lifecycle.has_capability(
            self.session.server_capabilities, negotiated.capability
        ):
            raise McpError(
                jsonrpc.METHOD_NOT_FOUND,
                f"the server did not declare the {'.'.join(negotiated.capability)} capability needed for {spec.method}",
            )


@contextlib.asynccontextmanager
async def connect_stdio(
    client: Client, parameters: Any, *, max_message_size: int | None = None
) -> AsyncIterator[ClientSession]:
    """Spawn a server process and open an initialized session to it.

    ``parameters`` is a :class:`mcp_runtime.stdio.StdioServerParameters`. On
    exit the session is closed and the process is stopped (stdin closed, then
    terminated, then killed).
    """
    from .stdio import MAX_MESSAGE_SIZE, spawn

    try:
        transport = await spawn(parameters, max_message_size or MAX_MESSAGE_SIZE)
    except OSError as error:
        raise McpError(
            jsonrpc.CONNECTION_CLOSED, f"cannot start server {parameters.command!r}: {error.strerror or error}"
        ) from None
    try:
        session = await client.connect(transport)
    except BaseException:
        await transport.close()
        raise
    try:
        yield session
    finally:
        await session.close()
