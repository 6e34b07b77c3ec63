"""Connecting to MCP servers: a :class:`Client` opens :class:`ClientSession` s.

A ClientSession is the ``Caller`` the generated stubs need, so typed calls
look like ``await v2025_11_25.ClientStub(session).call_tool("echo", ...)``.
What the server may send back (sampling, roots, elicitation, notifications) is
answered by an optional generated ``ClientHandlers`` subclass instance.

With 2026-07-28 (the default) a connection starts with ``server/discover``: a
server that answers with that revision is spoken to request by request, each
request carrying the client's version, capabilities and identity in
``_meta``; any other answer falls back to the initialize handshake. Input a
server asks for (an input-required result) is answered by the same handlers,
and the request retried, until the result is final.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec
from msgspec import UNSET

from .. import codec
from .._core import capabilities, jsonrpc, lifecycle
from .._core.extensions import declare
from .._core.extensions import negotiated as declared_extension
from .._core.jsonrpc import McpError, RequestId
from .._core.lifecycle import (
    CAPABILITIES_KEY,
    CLIENT_INFO_KEY,
    LOG_LEVEL_KEY,
    SERVER_INFO_KEY,
    SUBSCRIPTION_ID_KEY,
    VERSION_KEY,
    Revision,
)
from .._core.session import Route, Session, SessionContext, Transport
from .._core.wire import NO_EXTRA, RenewsSession, RequestExtra, TakesVersion
from ..methods import MethodSpec, ProgressCallback
from ..middleware import Handler, Middleware, Senders, SendingMiddleware, wrap
from .renewal import KEPT, RenewalCallback, Renewer, SessionRenewal  # noqa: F401  (offered here)

if TYPE_CHECKING:  # only a client given one imports OpenTelemetry
    from ..telemetry import Telemetry

_BASE = "ClientHandlers"

P = TypeVar("P")
R = TypeVar("R")


MAX_CACHED = 1024
"""Cached results a session keeps at most (Client(cache=True))."""


class Client:
    """An MCP client: identity, optional handlers and the revisions it speaks.

    ``protocol_version`` is the revision asked for: by default the handlers'
    revision, else the newest released one (2026-07-28, which falls back to
    the newest handshake revision with servers that do not know it). The
    server may answer any of ``versions`` (default: every released revision
    up to the one asked for). ``package`` names the generated package whose
    revisions the client speaks when it has no handlers to tell (default
    ``mcpbind_protocol``). ``log_level`` asks stateless servers for log
    messages of that level and above; ``cache`` keeps list and read results
    for the time the server says they stay fresh. ``on_renewed`` is called
    with the session and a :class:`~mcpbind._client.renewal.SessionRenewal` when
    the server ended a session (HTTP 404) and a new one replaced it (see
    :mod:`mcpbind._client.renewal`). ``sending`` wraps the requests it sends,
    ``middleware`` what its handlers answer (:mod:`mcpbind.middleware`).
    ``extensions`` declares the extensions the client supports (SEP-2133),
    settings by identifier, in ``capabilities.extensions`` on every revision
    (``{"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}``);
    :meth:`ClientSession.server_extension` tells what the server declared.
    ``telemetry`` (a :class:`mcpbind.telemetry.Telemetry`): a span and a
    duration of each request, its trace context sent in ``params._meta`` (see
    docs/guides/observability.md). Default: none, at no cost.
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
        log_level: str | None = None,
        cache: bool = False,
        max_input_rounds: int = 8,
        discover_timeout: float = 10.0,
        package: str | None = None,
        on_renewed: RenewalCallback | None = None,
        middleware: Sequence[Middleware] = (),
        sending: Sequence[SendingMiddleware] = (),
        extensions: Mapping[str, Mapping[str, Any]] | None = None,
        telemetry: Telemetry | None = None,
    ) -> None:
        self.handlers = handlers
        self.middleware = tuple(middleware)
        # None without sending middleware: requests then go straight out.
        self.senders = Senders(sending) if sending else None
        self.telemetry = telemetry
        self.on_renewed = on_renewed
        self.handler_revision = (
            lifecycle.revision_of_handlers(handlers, _BASE) if handlers is not None else None
        )
        # The generated package whose revisions this client speaks: its handlers', else ``package``.
        root = (
            self.handler_revision.root
            if self.handler_revision
            else package or lifecycle.DEFAULT_PACKAGE
        )
        self.bindings = lifecycle.bindings(root)
        handshake, stateless = self.bindings.handshake_versions, self.bindings.stateless_versions
        known = handshake + stateless
        if protocol_version is None:
            protocol_version = (
                self.handler_revision.version if self.handler_revision else self.bindings.newest
            )
        if protocol_version not in known:
            raise ValueError(
                f"unsupported protocol version {protocol_version!r} (known: {', '.join(known)})"
            )
        self.protocol_version = protocol_version
        self.versions = (
            list(versions) if versions is not None else [v for v in known if v <= protocol_version]
        )
        self.name = name
        self.version = version
        self.title = title
        self.extra_capabilities = declare(capabilities or {}, extensions or {})
        self.default_timeout = default_timeout
        self.log_level = log_level
        self.cache = cache
        self.max_input_rounds = max_input_rounds
        self.discover_timeout = discover_timeout
        self.info: dict[str, Any] = {"name": name, "version": version}
        if title is not None:
            self.info["title"] = title

    @property
    def stateless_versions(self) -> list[str]:
        """The revisions it speaks without a handshake (2026-07-28 on)."""
        return [v for v in self.versions if v in self.bindings.stateless_versions]

    @property
    def handshake_versions(self) -> list[str]:
        return [v for v in self.versions if v in self.bindings.handshake_versions]

    def declared_capabilities(self) -> dict[str, Any]:
        return lifecycle.capabilities(
            self.handlers,
            _BASE,
            self.handler_revision,
            ("SERVER_REQUESTS", "INPUT_REQUESTS"),
            self.extra_capabilities,
        )

    async def connect(self, transport: Transport) -> ClientSession:
        """Open a session over ``transport``: server/discover for the stateless
        revisions, else (or when the server does not answer it) initialize."""
        session = ClientSession(self, transport)
        session.start()
        try:
            if not (self.stateless_versions and await session.discover()):
                await session.initialize()
        except BaseException:
            await session.close()
            raise
        return session


class ClientSession(Session):
    """A client's side of one connection."""

    def __init__(self, client: Client, transport: Transport) -> None:
        self.client = client
        self._router = _ClientRouter(self)
        super().__init__(
            transport, self._router, protocol_version="", default_timeout=client.default_timeout
        )
        self.server_info: Any = None
        self.server_capabilities: Any = None
        self.instructions: str | None = None
        self.supported_versions: list[str] = []
        self._envelope: dict[str, Any] | None = None
        self._cache: dict[tuple[str, bytes], tuple[float, Any]] = {}
        # Bumped by invalidate(): a result asked for before a change is not cached after it.
        self._cache_generation: dict[str, int] = {}
        self.renewer = Renewer(self, client.on_renewed)
        # The one place requests leave the session: what telemetry wraps.
        # send_request (Session's): the one place requests leave the session,
        # under any sending middleware: what telemetry wraps.
        self._telemetry_closed: Callable[[str], None] | None = None
        telemetry = client.telemetry
        if telemetry is not None:
            self.send_request = telemetry.client_send(self, self.send_request)
            self._telemetry_closed = telemetry.client_session_opened(transport)

    def shut_down(self, reason: str) -> None:
        closed, self._telemetry_closed = self._telemetry_closed, None
        if closed is not None:
            closed(self.protocol_version)
        super().shut_down(reason)

    def server_extension(self, extension_id: str) -> Mapping[str, Any] | None:
        """The settings the server declared for an extension (SEP-2133) on
        whichever revision was negotiated, or None if it declared none."""
        return declared_extension(self.server_capabilities, extension_id)

    @property
    def stateless(self) -> bool:
        """Whether the session speaks a stateless revision (2026-07-28 on)."""
        return self._envelope is not None

    # ------------------------------------------------------------ opening

    async def discover(self) -> bool:
        """Ask the server for the stateless revisions it speaks; True if one of
        ours is among them (the session then speaks the newest shared one)."""
        client = self.client
        wanted = max(client.stateless_versions)
        for attempt in range(2):
            revision = client.bindings.revision(wanted)
            envelope = self._build_envelope(wanted)
            spec = revision.all_methods["server/discover"]
            self._router.initializing = True
            try:
                result = await self.request(
                    spec, self._with_envelope(spec, None, envelope), timeout=client.discover_timeout
                )
                break
            except McpError as error:
                # An invalid answer (-32603, -32700) or a timeout falls back to initialize too.
                retry = self._after_refused_discover(error, attempt)
                if retry is None:
                    return False
                wanted = retry
            finally:
                self._router.initializing = False
        shared = [v for v in result.supported_versions if v in client.stateless_versions]
        if not shared:
            return False
        version = max(shared)
        if version != wanted:
            revision = client.bindings.revision(version)
            envelope = self._build_envelope(version)
        self.protocol_version = version
        self.supported_versions = list(result.supported_versions)
        self.server_capabilities = result.capabilities
        self.instructions = result.instructions if isinstance(result.instructions, str) else None
        meta = result.meta
        self.server_info = meta.get(SERVER_INFO_KEY) if isinstance(meta, Mapping) else None
        self._envelope = envelope
        self._router.negotiated(revision)
        self._tell_transport(version)
        return True

    def _after_refused_discover(self, error: McpError, attempt: int) -> str | None:
        """What to do when server/discover fails: a stateless version to ask
        again with, None to fall back to initialize, or raise."""
        data = error.data if isinstance(error.data, Mapping) else {}
        if data.get("httpStatus") in (401, 403):
            raise error  # not a question of versions: the server wants credentials
        if error.code in (jsonrpc.HEADER_MISMATCH, jsonrpc.MISSING_REQUIRED_CLIENT_CAPABILITY):
            raise error  # a stateless server, refusing what we sent
        if error.code == jsonrpc.UNSUPPORTED_PROTOCOL_VERSION and attempt == 0:
            offered = data.get("supported")
            shared: list[str] = (
                [v for v in offered if v in self.client.stateless_versions]
                if isinstance(offered, list)
                else []
            )
            if shared:
                return max(shared)
        return None

    async def initialize(self) -> None:
        client = self.client
        if not client.handshake_versions:
            raise McpError(
                jsonrpc.INVALID_REQUEST,
                "the server does not speak a stateless revision and this client speaks no other",
            )
        await self.handshake(
            client.protocol_version
            if client.protocol_version in client.handshake_versions
            else max(client.handshake_versions)
        )
        if isinstance(self.transport, RenewsSession):  # its server can end the session (HTTP)
            self.transport.renew_by(self.renewer.renew)

    async def handshake(self, asked_version: str) -> None:
        """initialize, asking for ``asked_version``, then notifications/initialized."""
        client = self.client
        asked = client.bindings.revision(asked_version)
        spec = asked.all_methods["initialize"]
        params = codec.convert(
            {
                "protocolVersion": asked_version,
                "capabilities": client.declared_capabilities(),
                "clientInfo": client.info,
            },
            spec.params,
        )
        self._router.initializing = True
        try:
            result = await self.request(spec, params)
        finally:
            self._router.initializing = False
        if result.protocol_version not in client.handshake_versions:
            raise McpError(
                jsonrpc.INVALID_REQUEST,
                f"server answered protocol version {result.protocol_version!r}; this client speaks {', '.join(client.handshake_versions)}",
            )
        self.protocol_version = result.protocol_version
        self.server_info = result.server_info
        self.server_capabilities = result.capabilities
        self.instructions = result.instructions if isinstance(result.instructions, str) else None
        self._router.negotiated(client.bindings.revision(result.protocol_version))
        self._tell_transport(result.protocol_version)
        await self.send_raw_notification("notifications/initialized", None)

    def _build_envelope(self, version: str) -> dict[str, Any]:
        envelope: dict[str, Any] = {
            VERSION_KEY: version,
            # Encoded once: the same bytes go out with every request.
            CAPABILITIES_KEY: msgspec.Raw(codec.encode(self.client.declared_capabilities())),
            CLIENT_INFO_KEY: msgspec.Raw(codec.encode(self.client.info)),
        }
        if self.client.log_level is not None:
            envelope[LOG_LEVEL_KEY] = self.client.log_level
        return envelope

    def _tell_transport(self, version: str) -> None:
        # HTTP transports send the version (and, when stateless, more) in headers from now on.
        if isinstance(self.transport, TakesVersion):
            self.transport.negotiated(version, self.stateless)

    # ------------------------------------------------------------ requests

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
        envelope = self._envelope
        senders = self.client.senders
        if envelope is None:
            # Straight to the calls (Session.request hands them on): a frame less per call.
            answer: R = await (
                self.send_request(spec, params, timeout, on_progress, request_id, related)
                if senders is None
                else senders.request(self, spec, params, timeout, on_progress, request_id, related)
            )
            if spec.method in KEPT:
                self.renewer.note(spec, params)
            return answer
        params = self._with_envelope(spec, params, envelope)
        key = self._cache_key(spec, params) if self.client.cache else None
        generation = 0
        if key is not None:
            hit = self._cache.get(key)
            if hit is not None:
                if hit[0] > time.monotonic():
                    return hit[1]  # type: ignore[no-any-return]
                del self._cache[key]
            generation = self._cache_generation.get(spec.method, 0)
        rounds = 0
        # The questions of every round are answered as asked by the first
        # request: ``ctx.extra.related`` names it (see RequestExtra.related).
        first = request_id if request_id is not None else self.next_id()
        request_id = first
        while True:
            result: Any = await (
                self.send_request(spec, params, timeout, on_progress, request_id, related)
                if senders is None
                else senders.request(self, spec, params, timeout, on_progress, request_id, related)
            )
            request_id = None  # a retry is a new request
            if getattr(result, "result_type", None) != "input_required":
                break
            if not result.input_requests:
                raise McpError(
                    jsonrpc.INTERNAL_ERROR,
                    f"{spec.method}: the server asks for input without input requests",
                )
            rounds += 1
            if rounds > self.client.max_input_rounds:
                raise McpError(
                    jsonrpc.INTERNAL_ERROR,
                    f"{spec.method}: the server still asks for input after {rounds - 1} rounds",
                )
            responses = await self._router.fulfil(result.input_requests, first)
            params = msgspec.structs.replace(
                params,  # type: ignore[type-var]
                input_responses=responses,
                request_state=result.request_state,
            )
        if key is not None and generation == self._cache_generation.get(spec.method, 0):
            ttl = getattr(result, "ttl_ms", 0)
            if isinstance(ttl, int) and ttl > 0:
                self._remember(key, time.monotonic() + ttl / 1000, result)
        final: R = result
        return final

    async def answer_input_requests(self, requests: Mapping[str, Any]) -> dict[str, Any]:
        """The handlers' answers to decoded input requests, by key: those of a
        task waiting for input (``inputRequests``), to send with ``tasks/update``."""
        return await self._router.fulfil(requests)

    def _with_envelope(
        self, spec: MethodSpec[P, Any], params: P | None, envelope: dict[str, Any]
    ) -> P:
        if params is None:
            made: P = spec.params(meta=envelope)
            return made
        meta = getattr(params, "meta", UNSET)
        merged = {**envelope, **meta} if isinstance(meta, Mapping) else envelope
        return msgspec.structs.replace(params, meta=merged)  # type: ignore[type-var]

    def _cache_key(self, spec: MethodSpec[Any, Any], params: Any) -> tuple[str, bytes] | None:
        if spec.method not in self.client.bindings.cacheable:
            return None
        return spec.method, codec.encode(msgspec.structs.replace(params, meta=UNSET))

    def _remember(self, key: tuple[str, bytes], expires: float, result: Any) -> None:
        if len(self._cache) >= MAX_CACHED:
            now = time.monotonic()
            self._cache = {k: v for k, v in self._cache.items() if v[0] > now}
            if len(self._cache) >= MAX_CACHED:
                del self._cache[next(iter(self._cache))]  # the oldest entry
        self._cache[key] = (expires, result)

    def invalidate(self, method: str) -> None:
        """Forget cached results of ``method``, and any it is asking for now."""
        self._cache_generation[method] = self._cache_generation.get(method, 0) + 1
        self._cache = {k: v for k, v in self._cache.items() if k[0] != method}

    # ------------------------------------------------------------ subscriptions

    async def listen(
        self,
        *,
        tools_list_changed: bool = False,
        prompts_list_changed: bool = False,
        resources_list_changed: bool = False,
        resource_subscriptions: Sequence[str] = (),
        timeout: float | None = 30.0,
    ) -> Listener:
        """Open a subscriptions/listen stream (stateless revisions); the
        notifications it brings go to the client handlers' ``on_*`` methods.
        Returns once the server has acknowledged it."""
        if not self.stateless:
            raise McpError(
                jsonrpc.METHOD_NOT_FOUND,
                f"subscriptions/listen is not part of protocol revision {self.protocol_version}",
            )
        assert self._router.revision is not None
        spec = self._router.revision.all_methods["subscriptions/listen"]
        wanted: dict[str, Any] = {}
        if tools_list_changed:
            wanted["toolsListChanged"] = True
        if prompts_list_changed:
            wanted["promptsListChanged"] = True
        if resources_list_changed:
            wanted["resourcesListChanged"] = True
        if resource_subscriptions:
            wanted["resourceSubscriptions"] = list(resource_subscriptions)
        params = codec.convert({"notifications": wanted}, spec.params)
        request_id = self.next_id()
        listener = Listener(self, request_id)
        self._router.listeners[request_id] = listener
        # The stream stays open until closed: the client's default timeout is not for it.
        listen = self.request(spec, params, request_id=request_id, timeout=math.inf)
        listener.task = asyncio.get_running_loop().create_task(listen)
        listener.task.add_done_callback(listener._ended)
        acknowledged = asyncio.ensure_future(listener._ack.wait())
        try:
            async with asyncio.timeout(timeout):
                await asyncio.wait(
                    [listener.task, acknowledged], return_when=asyncio.FIRST_COMPLETED
                )
        except TimeoutError:
            await listener.close()
            raise McpError(
                jsonrpc.REQUEST_TIMEOUT, "subscriptions/listen was not acknowledged in time"
            ) from None
        finally:
            acknowledged.cancel()
        if not listener._ack.is_set():
            await listener.close()
            listener.task.result()  # the server refused it: raise its error
            raise McpError(
                jsonrpc.INTERNAL_ERROR, "subscriptions/listen ended before it was acknowledged"
            )
        return listener


class Listener:
    """An open subscriptions/listen stream."""

    def __init__(self, session: ClientSession, request_id: RequestId) -> None:
        self.session = session
        self.id = request_id
        self.acknowledged: dict[str, Any] = {}
        self.task: asyncio.Task[Any] | None = None
        self._ack = asyncio.Event()

    def _acknowledge(self, accepted: dict[str, Any]) -> None:
        self.acknowledged = accepted
        self._ack.set()

    def _ended(self, task: asyncio.Task[Any]) -> None:
        self.session._router.listeners.pop(self.id, None)
        if not task.cancelled():
            task.exception()  # retrieved: an ended stream is not an unhandled error

    @property
    def open(self) -> bool:
        return self.task is not None and not self.task.done()

    async def close(self) -> None:
        """Stop listening (the server is told with notifications/cancelled)."""
        if self.task is not None and not self.task.done():
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError, McpError):
                await self.task


class _ClientRouter:
    def __init__(self, session: ClientSession) -> None:
        self.session = session
        self.client = session.client
        self.initializing = False
        self.revision: Revision | None = None
        self.declared: dict[str, Any] = {}  # what this client declared to the server
        self.listeners: dict[RequestId, Listener] = {}
        self._routes: dict[str, Route] = {}
        self._inputs: dict[str, Route] = {}
        self._notifications: dict[str, Route | None] = {}
        # Methods that passed check_outgoing's checks of the method alone, with
        # the revision and server capabilities they passed under: those checks
        # give the same answer while both stay the objects they were.
        self._sendable: dict[str, tuple[Revision, Any]] = {}

    @property
    def stateless(self) -> bool:
        return self.session.stateless

    def negotiated(self, revision: Revision) -> None:
        self.revision = revision
        self.declared = self.client.declared_capabilities()
        handlers, typed_revision = self.client.handlers, self.client.handler_revision
        if handlers is None or typed_revision is None:
            return
        # Handlers of a stateless revision answer the older revisions' server
        # requests too (sampling, roots, elicitation are input requests there).
        typed_methods = {**typed_revision.table("INPUT_REQUESTS"), **typed_revision.all_methods}
        middleware = self.client.middleware

        def handler(spec: MethodSpec[Any, Any]) -> Handler:
            found: Handler = getattr(handlers, spec.handler)
            return wrap(middleware, spec, found) if middleware else found

        for method in revision.table("SERVER_REQUESTS"):
            typed = typed_methods.get(method)
            if (
                typed is not None
                and method != "ping"
                and lifecycle.overridden(handlers, _BASE, typed.handler)
            ):
                answer = self._checked(method, handler(typed))
                telemetry = self.client.telemetry
                if telemetry is not None:  # a SERVER span of each request the server sends
                    answer = telemetry.server_route(typed, answer)
                self._routes[method] = (typed, answer)
        for method in revision.table("INPUT_REQUESTS"):
            typed = typed_methods.get(method)
            if typed is not None and lifecycle.overridden(handlers, _BASE, typed.handler):
                self._inputs[method] = (typed, handler(typed))
        for method in revision.table("SERVER_NOTIFICATIONS"):
            typed = typed_methods.get(method)
            if typed is not None and lifecycle.overridden(handlers, _BASE, typed.handler):
                self._notifications[method] = (typed, handler(typed))

    async def fulfil(self, requests: Any, related: RequestId | None = None) -> dict[str, Any]:
        """The client's answers to input requests (decoded, by key), by key;
        ``related``: the request of ours whose input-required results carry them."""
        requests = requests if isinstance(requests, Mapping) else {}
        extra = RequestExtra(related=related) if related is not None else NO_EXTRA
        context = SessionContext(self.session, None, None, extra)

        async def answer(request: Any) -> Any:
            method = getattr(request, "method", "")
            route = self._inputs.get(method)
            if route is None:
                raise McpError(
                    jsonrpc.METHOD_NOT_FOUND,
                    f"the server asked for {method}, which this client's handlers do not answer",
                )
            spec, handler = route
            params = request.params
            if params is UNSET:
                params = codec.convert({}, spec.params)
            self.check_incoming(method, params)
            return await handler(params, context)

        # A task group: when one handler fails, the others (a user prompt, say) are cancelled.
        try:
            async with asyncio.TaskGroup() as group:
                tasks = {
                    key: group.create_task(answer(request)) for key, request in requests.items()
                }
        except BaseExceptionGroup as failed:
            raise failed.exceptions[0] from None  # the call fails as the first handler did
        return {key: task.result() for key, task in tasks.items()}

    def route_request(self, method: str, params: msgspec.Raw | Any) -> Route:
        route = self._routes.get(method)
        if route is None:
            raise McpError(jsonrpc.METHOD_NOT_FOUND, f"Method not found: {method}")
        return route

    def route_notification(self, method: str) -> Route | None:
        stale = self.client.bindings.stales.get(method)  # generated protocol facts
        if stale is not None and self.client.cache:
            for name in stale:
                self.session.invalidate(name)
        if method == "notifications/subscriptions/acknowledged" and self.revision is not None:
            return (self.revision.all_methods[method], self._on_acknowledged)
        return self._notifications.get(method)

    async def _on_acknowledged(self, params: Any, ctx: SessionContext) -> None:
        meta = params.meta
        subscription = meta.get(SUBSCRIPTION_ID_KEY) if isinstance(meta, Mapping) else None
        listener = (
            self.listeners.get(subscription) if isinstance(subscription, (str, int)) else None
        )
        if listener is not None:
            listener._acknowledge(msgspec.to_builtins(params.notifications))
        route = self._notifications.get("notifications/subscriptions/acknowledged")
        if route is not None:
            await route[1](params, ctx)

    def log_level_allows(self, level: str) -> bool:
        return False  # clients do not send log messages

    def check_outgoing(self, spec: MethodSpec[Any, Any], params: Any) -> None:
        revision = self.revision
        sendable = self._sendable.get(spec.method)
        if (
            sendable is None
            or sendable[0] is not revision
            or sendable[1] is not self.session.server_capabilities
        ):
            self._check_method(spec)
        if revision is None:
            return  # initialize or server/discover, which _check_method let through
        missing = capabilities.unmet(
            revision,
            capabilities.CLIENT,
            spec.method,
            params,
            self.session.server_capabilities,
            self.declared,
        )
        if missing:
            raise McpError(
                jsonrpc.METHOD_NOT_FOUND, capabilities.refusal(missing, spec.method, "server")
            )

    def _check_method(self, spec: MethodSpec[Any, Any]) -> None:
        """Refuse a method the session may not send whatever its params."""
        if self.revision is None:
            if self.initializing and spec.method in ("initialize", "server/discover"):
                return
            raise McpError(
                jsonrpc.INVALID_REQUEST,
                f"cannot send {spec.method} before the session is initialized",
            )
        negotiated = self.revision.all_methods.get(spec.method)
        if negotiated is None and spec.capability[:1] == ("extensions",):
            # An extension's method (tasks/get): allowed when the server declared the extension.
            negotiated = spec
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
        self._sendable[spec.method] = (self.revision, self.session.server_capabilities)

    def check_incoming(self, method: str, params: Any) -> None:
        """Refuse a server's request that needs more than this client declared (-32602)."""
        assert self.revision is not None
        missing = capabilities.unmet(
            self.revision, capabilities.SERVER, method, params, self.declared
        )
        if missing:
            names = ", ".join(need.dotted for need in missing)
            raise McpError(
                jsonrpc.INVALID_PARAMS,
                f"Invalid params: this {method} needs the {names} capability, which this client did not declare",
            )

    def _checked(self, method: str, handler: Any) -> Any:
        async def answer(params: Any, ctx: SessionContext) -> Any:
            self.check_incoming(method, params)
            return await handler(params, ctx)

        return answer


@contextlib.asynccontextmanager
async def connect_stdio(
    client: Client, parameters: Any, *, max_message_size: int | None = None
) -> AsyncIterator[ClientSession]:
    """Spawn a server process and open an initialized session to it.

    ``parameters`` is a :class:`mcpbind._transports.stdio.StdioServerParameters`. On
    exit the session is closed and the process is stopped (stdin closed, then
    terminated, then killed).
    """
    from .._transports.stdio import MAX_MESSAGE_SIZE, spawn

    try:
        transport = await spawn(parameters, max_message_size or MAX_MESSAGE_SIZE)
    except OSError as error:
        raise McpError(
            jsonrpc.CONNECTION_CLOSED,
            f"cannot start server {parameters.command!r}: {error.strerror or error}",
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
