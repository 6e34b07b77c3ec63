"""Serving MCP: a :class:`Server` answers sessions with the handlers you wrote.

Handlers are instances of a generated ``ServerHandlers`` subclass (one per
revision you implement, usually one). A client asking for a revision the
server supports is answered in that revision; the request types it sends are
then decoded with the handler's revision, which is the same or newer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from . import codec, jsonrpc, lifecycle
from .jsonrpc import McpError
from .lifecycle import Revision
from .methods import MethodSpec
from .session import LOG_LEVELS, RequestContext, Route, Session, Transport

_BASE = "ServerHandlers"


class Server:
    """An MCP server: identity, handlers and the revisions it speaks.

    ``handlers`` is one generated ``ServerHandlers`` subclass instance, or
    several for different revisions. ``versions`` defaults to every released
    handshake revision up to the newest handler's.
    """

    def __init__(
        self,
        handlers: object | Sequence[object],
        *,
        name: str,
        version: str,
        title: str | None = None,
        instructions: str | None = None,
        capabilities: Mapping[str, Any] | None = None,
        versions: Sequence[str] | None = None,
        default_timeout: float | None = None,
    ) -> None:
        items = list(handlers) if isinstance(handlers, Sequence) else [handlers]
        if not items:
            raise ValueError("a Server needs at least one handlers object")
        self.handlers = {lifecycle.revision_of_handlers(h, _BASE).version: h for h in items}
        newest = max(self.handlers)
        handshake = lifecycle.handshake_versions()
        self.versions = sorted(versions) if versions is not None else [v for v in handshake if v <= newest]
        unknown = set(self.versions) - set(handshake)
        if unknown or not self.versions:
            raise ValueError(f"unsupported protocol versions: {sorted(unknown) or 'none given'}")
        self.name = name
        self.version = version
        self.title = title
        self.instructions = instructions
        self.extra_capabilities = dict(capabilities or {})
        self.default_timeout = default_timeout

    def handlers_for(self, version: str) -> tuple[object, Revision]:
        """The handlers that serve a session of ``version``: the same revision, else the oldest newer one."""
        chosen = min((v for v in self.handlers if v >= version), default=max(self.handlers))
        return self.handlers[chosen], lifecycle.revision(chosen)

    async def serve(self, transport: Transport) -> None:
        """Serve one session until the peer goes away."""
        session = ServerSession(self, transport)
        try:
            await session.run()
        finally:
            await transport.close()


class ServerSession(Session):
    """A server's side of one connection: lifecycle first, then the handlers."""

    def __init__(self, server: Server, transport: Transport) -> None:
        self.server = server
        self._server_router = _ServerRouter(self)
        super().__init__(transport, self._server_router, protocol_version="", default_timeout=server.default_timeout)
        self.client_capabilities: Any = None
        self.client_info: Any = None
        self.initialized = asyncio.Event()

    def adopt(self, version: str) -> None:
        """Serve ``version`` without an initialize handshake (stateless HTTP)."""
        if version not in self.server.versions:
            version = max(self.server.versions)
        self._server_router.adopt(version)
        self.initialized.set()


class _ServerRouter:
    def __init__(self, session: ServerSession) -> None:
        self.session = session
        self.server = session.server
        self.log_level = "debug"
        self.revision: Revision | None = None
        self.handlers: object | None = None
        self.handler_revision: Revision | None = None
        self._routes: dict[str, Route] = {}
        self._notifications: dict[str, Route | None] = {}
        newest = lifecycle.revision(max(self.server.versions))
        self._initialize_spec = newest.all_methods["initialize"]

    # ------------------------------------------------------------ incoming

    def route_request(self, method: str) -> Route:
        route = self._routes.get(method)
        if route is not None:
            return route
        if method == "initialize":
            if self.revision is not None:
                raise McpError(jsonrpc.INVALID_REQUEST, "Invalid request: the session is already initialized")
            return self._initialize_spec, self._initialize
        if self.revision is None:
            raise McpError(jsonrpc.INVALID_REQUEST, f"Invalid request: {method} before initialize")
        raise McpError(jsonrpc.METHOD_NOT_FOUND, f"Method not found: {method}")

    def route_notification(self, method: str) -> Route | None:
        if method == "notifications/initialized":
            self.session.initialized.set()
            return None
        return self._notifications.get(method)

    def log_level_allows(self, level: str) -> bool:
        try:
            return LOG_LEVELS.index(level) >= LOG_LEVELS.index(self.log_level)
        except ValueError:
            return True

    # ------------------------------------------------------------ outgoing

    def check_outgoing(self, spec: MethodSpec[Any, Any]) -> None:
        if self.revision is None:
            raise McpError(jsonrpc.INVALID_REQUEST, f"cannot send {spec.method} before the session is initialized")
        negotiated = self.revision.all_methods.get(spec.method)
        if negotiated is None or negotiated.direction == "client_to_server":
            raise McpError(
                jsonrpc.METHOD_NOT_FOUND, f"{spec.method} is not part of protocol revision {self.revision.version}"
            )
        if negotiated.capability and not lifecycle.has_capability(
            self.session.client_capabilities, negotiated.capability
        ):
            raise McpError(
                jsonrpc.METHOD_NOT_FOUND,
                f"the client did not declare the {'.'.join(negotiated.capability)} capability needed for {spec.method}",
            )

    # ------------------------------------------------------------ lifecycle

    def adopt(self, version: str, client_capabilities: Any = None, client_info: Any = None) -> None:
        """Speak ``version`` from now on (after initialize, or without one when stateless)."""
        revision = lifecycle.revision(version)
        handlers, handler_revision = self.server.handlers_for(version)
        self.session.client_capabilities = client_capabilities
        self.session.client_info = client_info
        self.session.protocol_version = version
        self.revision, self.handlers, self.handler_revision = revision, handlers, handler_revision
        self._build_routes()

    def _initialize(self, params: Any, ctx: RequestContext) -> Any:
        version = lifecycle.negotiate(params.protocol_version, self.server.versions)
        self.adopt(version, params.capabilities, params.client_info)
        revision, handlers, handler_revision = self.revision, self.handlers, self.handler_revision
        assert revision is not None
        declared = lifecycle.capabilities(
            handlers, _BASE, handler_revision, "CLIENT_REQUESTS", {"logging": {}, **self.server.extra_capabilities}
        )
        info: dict[str, Any] = {"name": self.server.name, "version": self.server.version}
        if self.server.title is not None:
            info["title"] = self.server.title
        result: dict[str, Any] = {"protocolVersion": version, "capabilities": declared, "serverInfo": info}
        if self.server.instructions is not None:
            result["instructions"] = self.server.instructions
        return codec.convert(result, revision.type("InitializeResult"))

    def _build_routes(self) -> None:
        """Resolve every method of the negotiated revision to its handler once."""
        assert self.revision is not None and self.handler_revision is not None
        handler_methods = self.handler_revision.all_methods
        for method, spec in self.revision.table("CLIENT_REQUESTS").items():
            if method in ("initialize", "ping"):
                continue
            if method == "logging/setLevel":
                self._routes[method] = (handler_methods.get(method, spec), self._set_level)
                continue
            typed = handler_methods.get(method)
            if typed is None or not lifecycle.overridden(self.handlers, _BASE, typed.handler):
                continue
            self._routes[method] = (typed, getattr(self.handlers, typed.handler))
        for method, spec in self.revision.table("CLIENT_NOTIFICATIONS").items():
            typed = handler_methods.get(method)
            if typed is not None and lifecycle.overridden(self.handlers, _BASE, typed.handler):
                self._notifications[method] = (typed, getattr(self.handlers, typed.handler))

    async def _set_level(self, params: Any, ctx: RequestContext) -> Any:
        self.log_level = params.level
        assert self.revision is not None
        return codec.convert({}, self.revision.all_methods["logging/setLevel"].result)


async def serve_stdio(server: Server) -> None:
    """Serve one session over this process's stdin and stdout."""
    from .stdio import process_stdio

    transport = await process_stdio()
    await server.serve(transport)


def run_stdio(server: Server) -> None:
    """Run ``server`` over stdio until stdin closes (blocking; the usual entry point)."""
    from .stdio import configure_stdio_logging

    configure_stdio_logging()
    try:
        asyncio.run(serve_stdio(server))
    except KeyboardInterrupt:
        pass
