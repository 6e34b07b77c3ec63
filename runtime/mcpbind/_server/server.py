"""Serving MCP: a :class:`Server` answers sessions with the handlers you wrote.

Handlers are instances of a generated ``ServerHandlers`` subclass (one per
revision you implement, usually one). A client asking for a revision the
server supports is answered in that revision; the request types it sends are
then decoded with the handler's revision, which is the same or newer.

With handlers of 2026-07-28 or newer the server also speaks the stateless
revisions: a connection whose first request is not ``initialize`` (or names its
protocol version in ``_meta``) is served request by request, each one checked
for the version, capabilities and identity its ``_meta`` declares. The runtime
answers ``server/discover`` and ``subscriptions/listen`` itself, adds the
server's identity to every result, and seals the ``requestState`` of
input-required results.
"""

from __future__ import annotations

import asyncio
import secrets
import weakref
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import msgspec
from msgspec import UNSET, UnsetType

from .. import codec
from .._core import capabilities, jsonrpc, lifecycle
from .._core.jsonrpc import McpError, RequestId
from .._core.lifecycle import (
    SERVER_INFO_KEY,
    SUBSCRIPTION_ID_KEY,
    VERSION_KEY,
    Revision,
)
from .._core.ownership import connection_owner
from .._core.request_state import StateSealer
from .._core.session import (
    Handler,
    Route,
    Session,
    SessionContext,
    Transport,
    level_passes,
)
from ..methods import MethodSpec, P, ProgressCallback, R, optional_as_in
from ..middleware import Middleware, Senders, SendingMiddleware, wrap
from ..stores._base import Store, StoreUnavailable, current_note
from .stateless_answers import (
    PerRequestAnswers,
    Subscription,
    accepted_notifications,
    requested_version,
    send_change,
)

if TYPE_CHECKING:  # only a server given one imports OpenTelemetry
    from ..telemetry import Telemetry

_BASE = "ServerHandlers"


class Extension(Protocol):
    """A protocol extension served next to a revision's methods (2026-07-28 on),
    advertised under ``capabilities.extensions[id]``."""

    id: str

    def settings(self) -> Mapping[str, Any]:
        """The extension's settings object in the server's capabilities."""

    def routes(self) -> Mapping[str, Route]:
        """Request methods the extension answers, by name."""

    def middleware(self) -> Sequence[Middleware]:
        """Middleware (see :mod:`mcpbind.middleware`) around the methods served
        at the extension's revisions, inside the server's own; empty if none."""


@runtime_checkable
class DeclaresCapabilities(Protocol):
    """Handlers that add capabilities of their own revision to what their
    methods imply (2025-11-25 tasks, which no method implies)."""

    extra_capabilities: Mapping[str, Any]


class Server:
    """An MCP server: identity, handlers and the revisions it speaks.

    ``handlers`` is one generated ``ServerHandlers`` subclass instance, or
    several for different revisions. ``versions`` defaults to every released
    revision up to the newest handler's. ``state_key`` (at least 32 bytes) signs the
    ``requestState`` of input-required results; servers running as several
    workers must share one (the default is random per process).
    ``encrypt_state`` seals it with AES-256-GCM so the client cannot read it
    (needs the ``crypto`` extra). A state is bound to the authenticated
    caller where the transport verified one: another cannot replay it.
    ``store`` (e.g. ``RedisStore.from_url(url)``) shares sessions, resumable
    events, tasks and change notifications between workers; see
    docs/guides/scaling.md. Default: this process only.
    ``middleware`` wraps every request and notification the handlers and
    extensions answer, ``sending`` every request the server sends its clients
    (sampling, elicitation, roots): see :mod:`mcpbind.middleware`.
    ``telemetry`` (a :class:`mcpbind.telemetry.Telemetry`): spans and
    metrics of every request and notification, and of sessions (see
    docs/guides/observability.md). Default: none, at no cost.
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
        state_key: bytes | None = None,
        encrypt_state: bool = False,
        extensions: Sequence[Extension] = (),
        store: Store | None = None,
        middleware: Sequence[Middleware] = (),
        sending: Sequence[SendingMiddleware] = (),
        telemetry: Telemetry | None = None,
    ) -> None:
        items = list(handlers) if isinstance(handlers, Sequence) else [handlers]
        if not items:
            raise ValueError("a Server needs at least one handlers object")
        found = {h: lifecycle.revision_of_handlers(h, _BASE) for h in items}
        roots = sorted({r.root for r in found.values()})
        if len(roots) != 1:
            raise ValueError(
                f"handlers of one server come from one generated package, not {', '.join(roots)}"
            )
        # The revisions this server knows: those generated into its handlers' package.
        self.bindings = lifecycle.bindings(roots[0])
        self.handlers = {r.version: h for h, r in found.items()}
        newest = max(self.handlers)
        handshake, stateless = self.bindings.handshake_versions, self.bindings.stateless_versions
        wanted = (
            list(versions)
            if versions is not None
            else [v for v in handshake + stateless if v <= newest]
        )
        unknown = set(wanted) - set(handshake) - set(stateless)
        if unknown or not wanted:
            raise ValueError(f"unsupported protocol versions: {sorted(unknown) or 'none given'}")
        # The handshake revisions, negotiated by initialize:
        self.versions = sorted(v for v in wanted if v in handshake)
        # Named by each request (2026-07-28 on); they need handlers of that revision or newer.
        self.stateless_versions = sorted(v for v in wanted if v in stateless and v <= newest)
        self.name = name
        self.version = version
        self.title = title
        self.instructions = instructions
        self.extra_capabilities = dict(capabilities or {})
        self.default_timeout = default_timeout
        self.sealer = StateSealer(state_key, encrypt=encrypt_state)
        self.extensions = list(extensions)
        self.info: dict[str, Any] = {"name": name, "version": version}
        if title is not None:
            self.info["title"] = title
        self.answers = PerRequestAnswers(self.sealer, self.info, self.bindings)
        self._stateless_routes: dict[str, dict[str, Route]] = {}
        self._discover_results: dict[str, Any] = {}
        self._declared: dict[str, dict[str, Any]] = {}
        self.initialize_spec: MethodSpec[Any, Any] | None = (
            self.bindings.revision(max(self.versions)).all_methods["initialize"]
            if self.versions
            else None
        )
        self._subscriptions: set[Subscription] = set()
        # Told the URIs a listen stream asks for (True, before it is acknowledged; False at its end).
        self.listen_watchers: list[Callable[[Sequence[str], bool], Awaitable[None]]] = []
        # The scopes the item a request names needs ((method, name) -> scopes: a tool's
        # own), asked by HTTP before the request is served, so that a token lacking
        # them gets its 403 before any answer (an SSE stream) starts. Set by the app layer.
        self.item_scopes: Callable[[str, str], frozenset[str]] | None = None
        self._handshake_sessions: weakref.WeakSet[ServerSession] = weakref.WeakSet()
        self.telemetry = telemetry
        self.store: Store | None = None
        if store is not None:
            self.use_store(store)
        # Telemetry outermost, so that its spans and durations include what middleware adds.
        traced: tuple[Middleware, ...] = (telemetry.server_route,) if telemetry is not None else ()
        self.middleware = (*traced, *middleware)
        # None without sending middleware: requests then go straight out.
        self.senders = Senders(sending) if sending else None

    def use_store(self, store: Store) -> None:
        """Share state through ``store`` (once; the same store again is a no-op)."""
        if self.store is store:
            return
        if self.store is not None:
            raise ValueError("this server already uses another store")
        self.store = store
        if store.shared:
            store.subscribe(self._on_published)
        if self.telemetry is not None:
            self.telemetry.watch_store(store)

    def wrapped(self, spec: MethodSpec[Any, Any], handler: Handler) -> Handler:
        """``handler`` as the server's middleware makes it (itself without any)."""
        return wrap(self.middleware, spec, handler) if self.middleware else handler

    def handshake_sessions(self) -> list[ServerSession]:
        """The live sessions of the handshake revisions served by this process."""
        return [session for session in self._handshake_sessions if not session.is_closed]

    def handlers_for(self, version: str) -> tuple[object, Revision]:
        """The handlers that serve a session of ``version``: the same revision, else the oldest newer one."""
        chosen = min((v for v in self.handlers if v >= version), default=max(self.handlers))
        return self.handlers[chosen], self.bindings.revision(chosen)

    async def serve(self, transport: Transport) -> None:
        """Serve one connection until the peer goes away."""
        session = ServerSession(self, transport)
        try:
            await session.run()
        finally:
            await transport.close()

    # ------------------------------------------------------------ change notifications

    async def notify_list_changed(self, kind: str) -> None:
        """Tell clients that the list of ``kind`` ("tools", "prompts" or
        "resources") changed: every subscriptions/listen stream that asked for
        it, and every handshake session whose server declared listChanged."""
        lists = self.bindings.list_changes  # generated protocol facts
        if kind not in lists:
            raise ValueError(f"no list of {kind!r} (expected one of {', '.join(lists)})")
        if self.store is not None and self.store.shared:
            await self._publish({"k": "list", "kind": kind})
            return
        await self._list_changed(kind)

    async def _list_changed(self, kind: str) -> None:
        """Deliver a list change to this process's streams and sessions."""
        await self.notify_list_changed_to(kind, list(self._handshake_sessions), streams=True)

    async def notify_list_changed_to(
        self, kind: str, sessions: Sequence[ServerSession], *, streams: bool = False
    ) -> None:
        """Tell only ``sessions`` (handshake sessions of this process, those
        declared listChanged to) that the list of ``kind`` changed; with
        ``streams``, also this process's subscriptions/listen streams that asked."""
        change = self.bindings.list_changes[kind]
        method = change.notification
        for subscription in list(self._subscriptions) if streams else ():
            if change.listen_filter and subscription.accepted.get(change.listen_filter) is True:
                await subscription.send(method, {})
        for session in sessions:
            if lifecycle.has_capability(session.declared_capabilities, (kind, "listChanged")):
                await send_change(session, method, None, None)

    async def notify_resource_updated(self, uri: str) -> None:
        """Tell the subscriptions/listen streams that asked for ``uri`` that it changed."""
        if self.store is not None and self.store.shared:
            await self._publish({"k": "res", "uri": uri})
            return
        await self._resource_updated(uri)

    async def _resource_updated(self, uri: str) -> None:
        for subscription in list(self._subscriptions):
            if uri in subscription.accepted.get("resourceSubscriptions", ()):
                await subscription.send("notifications/resources/updated", {"uri": uri})

    async def _publish(self, note: dict[str, Any]) -> None:
        """A change for every worker (this one too, through the store)."""
        assert self.store is not None
        note["n"] = secrets.token_hex(12)
        try:
            await self.store.publish(msgspec.json.encode(note))
        except StoreUnavailable as error:
            raise McpError(
                jsonrpc.INTERNAL_ERROR, f"Change notification not sent: {error}"
            ) from None

    async def _on_published(self, message: bytes) -> None:
        note = msgspec.json.decode(message)
        if not isinstance(note, dict) or note.get("k") not in ("list", "res"):
            return
        token = current_note.set(str(note.get("n")))
        try:
            if note["k"] == "list" and note.get("kind") in self.bindings.list_changes:
                await self._list_changed(note["kind"])
            elif note["k"] == "res" and isinstance(note.get("uri"), str):
                await self._resource_updated(note["uri"])
        finally:
            current_note.reset(token)

    def end_subscriptions(self) -> None:
        """End every subscriptions/listen stream gracefully (on shutdown): each gets its result."""
        for subscription in list(self._subscriptions):
            subscription.ended.set()

    # ------------------------------------------------------------ stateless revisions

    def stateless_routes(self, version: str) -> dict[str, Route]:
        """Every request method a stateless request of ``version`` may name, resolved once per server."""
        routes = self._stateless_routes.get(version)
        if routes is not None:
            return routes
        handlers, handler_revision = self.handlers_for(version)
        revision = self.bindings.revision(version)
        handler_methods = handler_revision.all_methods
        answering = self.answers.middleware(revision)
        # The per-request answers outermost, then the server's middleware, then the extensions'.
        chain: list[Middleware] = [answering, *self.middleware]
        for extension in self.extensions:
            chain.extend(extension.middleware())
        routes = {}
        for method, spec in revision.table("CLIENT_REQUESTS").items():
            if method == "server/discover":
                routes[method] = (spec, answering(spec, self._discover))
                continue
            if method == "subscriptions/listen":
                routes[method] = (spec, answering(spec, self._listen))
                continue
            typed = handler_methods.get(method)
            if typed is None or not lifecycle.overridden(handlers, _BASE, typed.handler):
                continue
            routes[method] = (typed, wrap(chain, typed, getattr(handlers, typed.handler)))
        for extension in self.extensions:
            for method, (spec, handler) in extension.routes().items():
                routes[method] = (spec, wrap(chain, spec, handler))
        self._stateless_routes[version] = routes
        return routes

    def requested_version(self, params: msgspec.Raw | UnsetType) -> str:
        """The stateless revision a request names in ``_meta``; McpError if it names none this server speaks."""
        return requested_version(params, self.stateless_versions)

    def _capabilities_of(self, version: str) -> dict[str, Any]:
        found = self._declared.get(version)
        if found is None:
            found = self._declared[version] = self.capabilities_for(version)
        return found

    def capabilities_for(self, version: str) -> dict[str, Any]:
        """What a stateless server of ``version`` declares in server/discover."""
        handlers, handler_revision = self.handlers_for(version)
        declared = lifecycle.capabilities(
            handlers,
            _BASE,
            handler_revision,
            "CLIENT_REQUESTS",
            {"logging": {}, **self.extra_capabilities},
        )
        # Changes reach clients through subscriptions/listen, which the runtime serves.
        for kind in self.bindings.list_changes:
            if kind in declared:
                declared[kind] = {**declared[kind], "listChanged": True}
        if "resources" in declared:
            declared["resources"]["subscribe"] = True
        if self.extensions:
            declared["extensions"] = {
                **declared.get("extensions", {}),
                **{extension.id: dict(extension.settings()) for extension in self.extensions},
            }
        return declared

    async def _discover(self, params: Any, ctx: SessionContext) -> Any:
        version = ctx.protocol_version
        result = self._discover_results.get(version)
        if result is None:
            body: dict[str, Any] = {
                "supportedVersions": list(self.stateless_versions),
                "capabilities": self._capabilities_of(version),
                "resultType": "complete",
                "ttlMs": 0,
                "cacheScope": "public",
                "_meta": {SERVER_INFO_KEY: self.info},
            }
            if self.instructions is not None:
                body["instructions"] = self.instructions
            result = self._discover_results[version] = codec.convert(
                body, self.bindings.revision(version).type("DiscoverResult")
            )
        return result

    async def _listen(self, params: Any, ctx: SessionContext) -> Any:
        session = ctx.session
        assert isinstance(session, Session) and ctx.request_id is not None
        declared = self._capabilities_of(ctx.protocol_version)
        accepted = accepted_notifications(msgspec.to_builtins(params.notifications), declared)
        subscription = Subscription(session, ctx.request_id, accepted)
        self._subscriptions.add(subscription)
        uris = [uri for uri in accepted.get("resourceSubscriptions", ()) if isinstance(uri, str)]
        try:
            for watcher in self.listen_watchers if uris else ():
                await watcher(uris, True)
            await subscription.send(
                "notifications/subscriptions/acknowledged", {"notifications": accepted}
            )
            await subscription.ended.wait()
        finally:
            self._subscriptions.discard(subscription)
            for watcher in self.listen_watchers if uris else ():
                await watcher(uris, False)
        body = {
            "resultType": "complete",
            "_meta": {SUBSCRIPTION_ID_KEY: ctx.request_id, SERVER_INFO_KEY: self.info},
        }
        return codec.convert(
            body, self.bindings.revision(ctx.protocol_version).type("SubscriptionsListenResult")
        )


class ServerSession(Session):
    """A server's side of one connection: lifecycle first, then the handlers."""

    def __init__(
        self,
        server: Server,
        transport: Transport,
        *,
        stateless: bool = False,
        version: str | None = None,
    ) -> None:
        """``stateless``: serve every request by its own ``_meta`` from the
        start (a transport that already knows, such as one HTTP request).
        ``version``: the stateless revision the transport already read in
        the request's ``_meta``, if it is one this server speaks."""
        self.server = server
        self._server_router = _ServerRouter(self)
        self._server_router.stateless = stateless and bool(server.stateless_versions)
        if version is not None and version in server.stateless_versions:
            self._server_router.known_version = version
        super().__init__(
            transport,
            self._server_router,
            protocol_version="",
            default_timeout=server.default_timeout,
        )
        self.client_capabilities: Any = None
        self.client_info: Any = None
        self.declared_capabilities: Any = None
        self._initialized: asyncio.Event | None = (
            None  # made when first asked for (never, per 2026-07-28 request)
        )
        self._owner: str | None = None
        self._telemetry_closed: Callable[[str], None] | None = None
        # Requests to the client (sampling, elicitation, roots): in CLIENT spans with telemetry.
        if server.telemetry is not None:
            self.send_request = server.telemetry.client_send(self, self.send_request)
            # And the client's notifications the session answers itself, in SERVER spans.
            self.own_notifications = server.telemetry.server_notifications(
                self.own_notification_handlers()
            )

    def own_notification_handlers(self) -> dict[str, Handler]:
        handlers = super().own_notification_handlers()
        # As route_notification does it; here only while own_notifications is set.
        handlers["notifications/initialized"] = lambda params, ctx: self.initialized.set()
        return handlers

    def opened(self) -> None:
        """The handshake made this a session (told to the server's telemetry, if any)."""
        telemetry = self.server.telemetry
        if telemetry is not None and self._telemetry_closed is None:
            self._telemetry_closed = telemetry.server_session_opened(self.transport)

    def shut_down(self, reason: str) -> None:
        closed, self._telemetry_closed = self._telemetry_closed, None
        if closed is not None:
            closed(self.protocol_version)
        super().shut_down(reason)

    async def request(
        self,
        spec: MethodSpec[P, R],
        params: P | None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        request_id: RequestId | None = None,
        related: RequestId | None = None,
    ) -> R:
        senders = self.server.senders
        if senders is None:
            answer: R = await self.send_request(
                spec, params, timeout, on_progress, request_id, related
            )
            return answer
        result: R = await senders.request(
            self, spec, params, timeout, on_progress, request_id, related
        )
        return result

    @property
    def initialized(self) -> asyncio.Event:
        """Set once the client has sent notifications/initialized (or the
        session was adopted without a handshake)."""
        if self._initialized is None:
            self._initialized = asyncio.Event()
        return self._initialized

    @property
    def owner(self) -> str:
        """What this connection creates belongs to it when nothing more
        precise (a principal, an HTTP session) owns it: see ownership.owner_of.
        Made when first asked for (most requests never do: it costs a system call)."""
        if self._owner is None:
            self._owner = connection_owner()
        return self._owner

    @property
    def stateless(self) -> bool:
        """Whether this connection is served request by request (2026-07-28 on)."""
        return self._server_router.stateless

    @property
    def requests_running(self) -> int:
        """The client's requests whose handlers are running."""
        return len(self._in_flight)

    @property
    def log_level(self) -> str:
        """The least level of log messages the client asked for (logging/setLevel)."""
        return self._server_router.log_level

    @log_level.setter
    def log_level(self, level: str) -> None:
        self._server_router.log_level = level

    def restore(
        self,
        version: str,
        client_capabilities: Any,
        client_info: Any,
        log_level: str | None,
        declared_capabilities: Any,
    ) -> None:
        """Take up a handshake session another process started, from what it stored: the
        negotiated ``version``, what the client and the server declared, the log level."""
        self._server_router.adopt(version, client_capabilities, client_info)
        if log_level is not None:
            self._server_router.log_level = log_level
        self.declared_capabilities = declared_capabilities
        self.server._handshake_sessions.add(self)
        self.opened()
        self.initialized.set()

    def adopt(self, version: str) -> None:
        """Serve ``version`` without an initialize handshake (stateless HTTP of the handshake revisions)."""
        if not self.server.versions:
            # A server of stateless revisions only judges each request by its own _meta.
            self._server_router.stateless = True
        else:
            self._server_router.adopt(
                version if version in self.server.versions else max(self.server.versions)
            )
        self.initialized.set()


class _ServerRouter:
    def __init__(self, session: ServerSession) -> None:
        # Weak: the session holds its router, and a cycle between the two
        # would leave every 2026-07-28 request's session to the cyclic
        # collector instead of freeing it when the request ends.
        self._session = weakref.ref(session)
        self.server = session.server
        self.stateless = False
        self.known_version: str | None = None  # see ServerSession
        self.log_level = "debug"
        self.revision: Revision | None = None
        self.handlers: object | None = None
        self.handler_revision: Revision | None = None
        self._routes: dict[str, Route] = {}
        self._notifications: dict[str, Route | None] = {}

    @property
    def session(self) -> ServerSession:
        session = self._session()
        assert session is not None, "a router outlived its session"
        return session

    # ------------------------------------------------------------ incoming

    def route_request(self, method: str, params: msgspec.Raw | UnsetType) -> Route:
        if self.stateless or (self.revision is None and self._is_stateless(method, params)):
            self.stateless = True
            version = self.known_version or self.server.requested_version(params)
            route = self.server.stateless_routes(version).get(method)
            if route is None:
                if self.known_version is not None:
                    self.server.requested_version(params)  # what is wrong with _meta comes first
                raise McpError(jsonrpc.METHOD_NOT_FOUND, f"Method not found: {method}")
            return route
        route = self._routes.get(method)
        if route is not None:
            return route
        if method == "initialize" and self.server.initialize_spec is not None:
            if self.revision is not None:
                raise McpError(
                    jsonrpc.INVALID_REQUEST, "Invalid request: the session is already initialized"
                )
            spec, telemetry = self.server.initialize_spec, self.server.telemetry
            if telemetry is not None:  # its span too; middleware sees no initialize
                return (spec, telemetry.server_route(spec, self._initialize))
            return (spec, self._initialize)
        if self.revision is None:
            raise McpError(jsonrpc.INVALID_REQUEST, f"Invalid request: {method} before initialize")
        raise McpError(jsonrpc.METHOD_NOT_FOUND, f"Method not found: {method}")

    def _is_stateless(self, method: str, params: msgspec.Raw | UnsetType) -> bool:
        """Whether the first request of a connection starts it on a stateless revision."""
        if not self.server.stateless_versions:
            return False
        if method != "initialize" or not self.server.versions:
            return True
        # An initialize that names a stateless version is a request for a removed method.
        return params is not UNSET and VERSION_KEY.encode() in bytes(params)

    def route_notification(self, method: str) -> Route | None:
        if method == "notifications/initialized":
            self.session.initialized.set()
            return None
        return self._notifications.get(method)

    def log_level_allows(self, level: str) -> bool:
        return level_passes(level, self.log_level)

    # ------------------------------------------------------------ outgoing

    def check_outgoing(self, spec: MethodSpec[Any, Any], params: Any) -> None:
        if self.stateless:
            if spec.kind == "request":
                raise McpError(
                    jsonrpc.METHOD_NOT_FOUND,
                    f"cannot send {spec.method}: servers of stateless revisions ask for input with an input-required result",
                )
            return
        if self.revision is None:
            raise McpError(
                jsonrpc.INVALID_REQUEST,
                f"cannot send {spec.method} before the session is initialized",
            )
        negotiated = self.revision.all_methods.get(spec.method)
        if negotiated is None or negotiated.direction == "client_to_server":
            raise McpError(
                jsonrpc.METHOD_NOT_FOUND,
                f"{spec.method} is not part of protocol revision {self.revision.version}",
            )
        if negotiated.capability and not lifecycle.has_capability(
            self.session.client_capabilities, negotiated.capability
        ):
            raise McpError(
                jsonrpc.METHOD_NOT_FOUND,
                f"the client did not declare the {'.'.join(negotiated.capability)} capability needed for {spec.method}",
            )
        missing = capabilities.unmet(
            self.revision,
            capabilities.SERVER,
            spec.method,
            params,
            self.session.client_capabilities,
            self.session.declared_capabilities,
        )
        if missing:
            raise McpError(
                jsonrpc.METHOD_NOT_FOUND, capabilities.refusal(missing, spec.method, "client")
            )

    # ------------------------------------------------------------ lifecycle

    def adopt(self, version: str, client_capabilities: Any = None, client_info: Any = None) -> None:
        """Speak ``version`` from now on (after initialize, or without one when stateless)."""
        revision = self.server.bindings.revision(version)
        handlers, handler_revision = self.server.handlers_for(version)
        self.session.client_capabilities = client_capabilities
        self.session.client_info = client_info
        self.session.protocol_version = version
        self.revision, self.handlers, self.handler_revision = revision, handlers, handler_revision
        self._build_routes()

    def _initialize(self, params: Any, ctx: SessionContext) -> Any:
        version = lifecycle.negotiate(params.protocol_version, self.server.versions)
        self.adopt(version, params.capabilities, params.client_info)
        revision, handlers, handler_revision = self.revision, self.handlers, self.handler_revision
        assert revision is not None
        own = handlers.extra_capabilities if isinstance(handlers, DeclaresCapabilities) else None
        declared = lifecycle.capabilities(
            handlers,
            _BASE,
            handler_revision,
            "CLIENT_REQUESTS",
            {"logging": {}, **self.server.extra_capabilities, **(own or {})},
        )
        self.session.declared_capabilities = declared
        self.server._handshake_sessions.add(self.session)
        self.session.opened()
        result: dict[str, Any] = {
            "protocolVersion": version,
            "capabilities": declared,
            "serverInfo": self.server.info,
        }
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
                level_spec = handler_methods.get(method, spec)
                self._routes[method] = (
                    level_spec,
                    self.server.wrapped(level_spec, self._set_level),
                )
                continue
            typed = handler_methods.get(method)
            if typed is None or not lifecycle.overridden(self.handlers, _BASE, typed.handler):
                continue
            handler = getattr(self.handlers, typed.handler)
            typed = optional_as_in(typed, spec)
            self._routes[method] = (typed, self.server.wrapped(typed, handler))
        for method, spec in self.revision.table("CLIENT_NOTIFICATIONS").items():
            typed = handler_methods.get(method)
            if typed is not None and lifecycle.overridden(self.handlers, _BASE, typed.handler):
                handler = getattr(self.handlers, typed.handler)
                typed = optional_as_in(typed, spec)
                self._notifications[method] = (typed, self.server.wrapped(typed, handler))

    async def _set_level(self, params: Any, ctx: SessionContext) -> Any:
        self.log_level = params.level
        assert self.revision is not None
        return codec.convert({}, self.revision.all_methods["logging/setLevel"].result)
