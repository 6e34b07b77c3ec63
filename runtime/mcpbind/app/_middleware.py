"""Middleware: code around every request and notification an app answers.

    async def timing(call: Call, call_next: Next) -> Any:
        started = time.perf_counter()
        try:
            return await call_next(call)
        finally:
            print(call.method, time.perf_counter() - started)

    app = App("notes", middleware=[timing, RateLimit(600, per=60.0)])

A middleware gets the :class:`Call` (method, the params decoded as the
negotiated revision's type, the request's context, principal, revision and
HTTP headers) and ``call_next``. It may return what ``call_next`` returned,
return something else of the method's result type (a cached result, say),
never call it (short-circuit), change the params (``call.replace(params=...)``)
or raise :class:`~mcpbind._core.jsonrpc.McpError` (the client gets that error).

The list is in order from the outside in: the first middleware sees the
request first and the result last. Each is one of the runtime's middleware
(:mod:`mcpbind.middleware`, through :func:`as_middleware`): the chain is
built once per route (when a session or a revision first resolves the
method), not per request; an app without middleware installs none and pays
nothing. It runs the same on
stdio, Streamable HTTP, legacy SSE and in memory, at every revision: around
the app's requests, ``logging/setLevel``, the tasks extension's methods,
and the notifications the app handles (``notifications/roots/list_changed``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol, runtime_checkable

from .._core.limits import ClientIdentity
from .._core.session import SessionContext
from ..methods import MethodSpec
from ..middleware import Handler
from ..middleware import Middleware as RouteMiddleware
from ..stores._base import Store

Next = Callable[["Call"], Awaitable[Any]]


class Call:
    """One incoming request or notification, as middleware sees it."""

    __slots__ = ("method", "params", "request", "notification", "_headers")

    def __init__(
        self,
        method: str,
        params: Any,
        request: SessionContext,
        notification: bool,
        headers: Mapping[str, str] | None,
    ) -> None:
        self.method = method
        self.params = params
        """The params as the revision's generated type (``CallToolRequestParams`` ...)."""
        self.request = request
        """The runtime's context of the request (progress, logging, the peer)."""
        self.notification = notification
        """Whether it is a notification (its handler's result is dropped)."""
        self._headers = headers

    @property
    def principal(self) -> Any:
        """The authenticated caller (:class:`~mcpbind.auth._principal.Principal`), or None."""
        return self.request.principal

    @property
    def protocol_version(self) -> str:
        return self.request.protocol_version

    @property
    def headers(self) -> Mapping[str, str] | None:
        """The HTTP request's headers (lower-cased names); None off HTTP."""
        return self._headers

    @property
    def name(self) -> str | None:
        """The tool or prompt name, or the resource URI, the call is about (if any)."""
        for field in ("name", "uri"):
            value = getattr(self.params, field, None)
            if isinstance(value, str):
                return value
        return None

    @property
    def client_identity(self) -> ClientIdentity:
        """Who is calling, as the transport names the client for its own
        per-client limits (:class:`~mcpbind._core.limits.ClientIdentity`)."""
        return self.request.client_identity

    @property
    def client(self) -> str:
        """Who is calling, for counting: the key of :attr:`client_identity`.
        Over HTTP the principal's (``principal:...``) if authenticated, else the
        client's address (``peer:<address>``; behind a proxy of
        ``HttpOptions.trusted_proxies``, the address it forwarded), or what the
        app's ``client_key`` returns; ``"local"`` on stdio and in memory (the
        process at the other end)."""
        return self.request.client_identity.key

    def replace(self, *, params: Any) -> Call:
        """This call with other params (of the same type) for the rest of the chain."""
        return Call(self.method, params, self.request, self.notification, self._headers)


class Middleware(Protocol):
    """What a middleware is: an async callable of the call and the rest of the chain."""

    def __call__(self, call: Call, call_next: Next, /) -> Awaitable[Any]: ...


def as_middleware(middleware: Middleware) -> RouteMiddleware:
    """``middleware`` as the runtime's middleware (:mod:`mcpbind.middleware`): given a
    route's spec and next handler once, the handler that hands it a :class:`Call`."""

    def around(spec: MethodSpec[Any, Any], handler: Handler) -> Handler:
        method, notification = spec.method, spec.kind == "notification"

        async def call_next(call: Call) -> Any:
            return await handler(call.params, call.request)

        async def route(params: Any, ctx: SessionContext) -> Any:
            if ctx.client_identity.kind == "server":
                # The transport asking the app for itself (the tool listing behind
                # the Mcp-Param-* check): no client's call, not the middleware's.
                return await handler(params, ctx)
            return await middleware(
                Call(method, params, ctx, notification, ctx.extra.headers), call_next
            )

        return route

    return around


@runtime_checkable
class UsesStore(Protocol):
    """A middleware that shares its state through the app's store (``App(store=...)``)."""

    def use_store(self, store: Store) -> None: ...


@runtime_checkable
class Invalidates(Protocol):
    """A middleware that keeps results, told when a resource (``uri``; None: every one) changed."""

    def invalidate(self, uri: str | None = None) -> None: ...
