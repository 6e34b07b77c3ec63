"""Middleware: code around the requests and notifications a session receives or sends.

A middleware is a function of a method's :class:`~mcpbind.methods.MethodSpec`
(its name, params and result types, direction) and the next handler, returning
the handler to use instead::

    def timing(spec: MethodSpec[Any, Any], call_next: H) -> H:
        async def timed(params: Any, ctx: Any) -> Any:
            started = time.perf_counter()
            try:
                return await call_next(params, ctx)
            finally:
                print(spec.method, time.perf_counter() - started)

        return timed

    server = Server(Handlers(), name="demo", version="1", middleware=[timing], sending=[timing])
    client = Client(name="demo", version="1", sending=[timing])

It is called once per method (when a session or revision first resolves the
method), not per message: a server or client without middleware pays nothing
per request. ``middleware=`` wraps what arrives (requests and notifications:
``ctx`` is the request's :class:`~mcpbind._core.session.SessionContext`);
``sending=`` wraps the requests sent to the peer (``ctx`` is a
:class:`Sending`). The handler gets the params decoded as the method's type
and returns its result type; it may change either, answer without calling
``call_next``, or raise :class:`~mcpbind._core.jsonrpc.McpError` (received: the
peer gets that error; sent: the caller does). The list is in order from the
outside in: the first middleware sees a request first and its result last.

A middleware that wraps only some methods returns ``call_next`` itself for
the others: it then costs nothing on them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from ._core.jsonrpc import RequestId
from ._core.session import Session, SessionContext
from .methods import MethodSpec, ProgressCallback

__all__ = ["Handler", "Middleware", "Send", "Sending", "SendingMiddleware"]

Handler = Callable[[Any, SessionContext], Awaitable[Any]]
"""Answers one received request or notification: (params, context) -> result."""

Middleware = Callable[[MethodSpec[Any, Any], Handler], Handler]
"""Given a received method's spec and the next handler, the handler to use."""


class Sending:
    """One request being sent, as sending middleware sees it besides its params."""

    __slots__ = ("session", "timeout", "on_progress", "request_id", "related")

    def __init__(
        self,
        session: Session,
        timeout: float | None,
        on_progress: ProgressCallback | None,
        request_id: RequestId | None,
        related: RequestId | None = None,
    ) -> None:
        self.session = session
        """The session sending it (a ``ServerSession`` or ``ClientSession``)."""
        self.timeout = timeout
        """How long to wait for the answer (None: the session's default)."""
        self.on_progress = on_progress
        self.request_id = request_id
        """The id chosen in advance, if the caller chose one."""
        self.related = related
        """The incoming request it is sent in answering (a server's ``ctx.peer``), if any."""


Send = Callable[[Any, Sending], Awaitable[Any]]
"""Sends one request: (params, sending) -> the decoded result."""

SendingMiddleware = Callable[[MethodSpec[Any, Any], Send], Send]
"""Given a sent method's spec and the next sender, the sender to use."""

H = TypeVar("H")


def wrap(
    middleware: Sequence[Callable[[MethodSpec[Any, Any], H], H]],
    spec: MethodSpec[Any, Any],
    handler: H,
) -> H:
    """``handler`` of ``spec`` wrapped by ``middleware``, the first outermost."""
    for each in reversed(middleware):
        handler = each(spec, handler)
    return handler


async def _send(spec: MethodSpec[Any, Any], params: Any, sending: Sending) -> Any:
    return await sending.session.send_request(
        spec, params, sending.timeout, sending.on_progress, sending.request_id, sending.related
    )


class Senders:
    """The sending middleware of a server or client, each method's chain built once."""

    def __init__(self, middleware: Sequence[SendingMiddleware]) -> None:
        self.middleware = tuple(middleware)
        # By the spec's identity (specs are module constants): each revision's has its chain.
        self._chains: dict[int, tuple[MethodSpec[Any, Any], Send]] = {}

    def sender(self, spec: MethodSpec[Any, Any]) -> Send:
        """The chain sending ``spec``'s requests."""
        found = self._chains.get(id(spec))
        if found is not None and found[0] is spec:
            return found[1]

        async def send(params: Any, sending: Sending) -> Any:
            return await _send(spec, params, sending)

        chain: Send = send
        chain = wrap(self.middleware, spec, chain)
        self._chains[id(spec)] = (spec, chain)
        return chain

    def request(
        self,
        session: Session,
        spec: MethodSpec[Any, Any],
        params: Any,
        timeout: float | None,
        on_progress: ProgressCallback | None,
        request_id: RequestId | None,
        related: RequestId | None = None,
    ) -> Awaitable[Any]:
        """Send a request of ``session`` through the middleware."""
        sending = Sending(session, timeout, on_progress, request_id, related)
        return self.sender(spec)(params, sending)
