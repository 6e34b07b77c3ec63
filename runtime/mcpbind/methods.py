"""What generated code knows of the runtime: method descriptions and two small protocols.

Each generated revision package describes its JSON-RPC methods as
:class:`MethodSpec` values and talks to a session only through :class:`Caller`
(to send) and :class:`RequestContext` (inside a handler). Nothing here imports a
transport.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, Literal, Protocol, TypeVar

from ._core.limits import ClientIdentity
from ._core.wire import RequestExtra

__all__ = [
    "Caller",
    "Direction",
    "HandlerNotImplemented",
    "Kind",
    "MethodSpec",
    "ProgressCallback",
    "RequestContext",
    "Selective",
    "optional_as_in",
]

P = TypeVar("P")
R = TypeVar("R")

Direction = Literal["client_to_server", "server_to_client", "both"]
Kind = Literal["request", "notification"]

ProgressCallback = Callable[[float, "float | None", "str | None"], Awaitable[None] | None]
"""Called with (progress, total, message) for each progress notification of a request."""


@dataclass(frozen=True, slots=True)
class MethodSpec(Generic[P, R]):
    """One JSON-RPC method of a protocol revision.

    ``params`` and ``result`` are the generated types; ``result`` is ``None``
    for notifications. ``handler`` is the Python name of the method on the
    generated stubs and handler interfaces (``call_tool``, ``on_progress``).
    """

    method: str
    direction: Direction
    kind: Kind
    params: Any
    result: Any
    params_required: bool
    handler: str
    # Capability the receiver must have declared, as a path into its
    # capabilities object (("tools",), ("resources", "subscribe")), or ().
    capability: tuple[str, ...] = ()
    page_items: tuple[str, type[Any]] | None = None
    """For a paginated list request: the result member holding the items, and their type."""
    # Facts the specification states in prose (schema/protocol_facts.toml).
    name_field: str | None = None
    """The params member the ``Mcp-Name`` header mirrors (``name``, ``uri``)."""
    stales: tuple[str, ...] = ()
    """For a notification: the requests whose cached results it makes stale."""
    sender_capability: tuple[str, ...] = ()
    """For a notification: the capability its sender must itself have declared."""
    listen_filter: str | None = None
    """For a notification: the ``subscriptions/listen`` filter member asking for it."""
    input_errors_as_result: bool = False
    """For ``tools/call``: invalid tool input is a tool execution error, not -32602."""


def optional_as_in(spec: MethodSpec[P, R], session_spec: MethodSpec[Any, Any]) -> MethodSpec[P, R]:
    """``spec`` (a method of newer handlers, whose types decode the request) with
    params optional where the session's revision (``session_spec``) lets a
    client leave them out: 2025-11-25's ``tools/list``, answered by 2026-07-28
    handlers whose revision requires params."""
    if spec.params_required and not session_spec.params_required:
        return dataclasses.replace(spec, params_required=False)
    return spec


class Caller(Protocol):
    """The part of a session that generated stubs use to send messages."""

    async def request(
        self,
        spec: MethodSpec[P, R],
        params: P | None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> R: ...

    async def notify(self, spec: MethodSpec[P, None], params: P | None) -> None: ...


class RequestContext(Protocol):
    """What a handler gets besides its params: who asked, and a way back."""

    @property
    def request_id(self) -> str | int | None:
        """The JSON-RPC id of the request being handled (None for a notification)."""

    @property
    def peer(self) -> Caller:
        """Send requests and notifications to the other side of the session, related
        to this request (over Streamable HTTP they go on its stream)."""

    @property
    def session(self) -> object:
        """The connection the request came on: the same object for all its requests,
        to keep per-connection state by (send through :attr:`peer`)."""

    @property
    def protocol_version(self) -> str:
        """The protocol revision of this request: negotiated for the session, or
        named by the request itself (2026-07-28 on)."""

    @property
    def stateless(self) -> bool:
        """Whether the request described itself in ``_meta`` (2026-07-28 on)
        rather than relying on an initialize handshake."""

    @property
    def client_capabilities(self) -> Any:
        """The capabilities the client declared: in this request's ``_meta``
        (2026-07-28 on) or at initialize. None where unknown."""

    @property
    def client_info(self) -> Any:
        """The client's name and version, where it gave them."""

    @property
    def log_level(self) -> str | None:
        """The least level of log messages the client wants for this request:
        named by the request itself (2026-07-28 on; None: it wants none), else
        the session's (``logging/setLevel``)."""

    @property
    def principal(self) -> Any:
        """The authenticated caller (a :class:`mcpbind.auth._principal.Principal`)
        where the transport verified an access token; None otherwise."""

    @property
    def client_identity(self) -> ClientIdentity:
        """Who sent the request, as its transport names its client for its own
        per-client limits (:class:`mcpbind._core.limits.ClientIdentity`)."""

    @property
    def extra(self) -> RequestExtra:
        """What the transport knows of the request beyond its message
        (:class:`mcpbind._core.wire.RequestExtra`): the principal, the client,
        the HTTP request's headers (None off HTTP) and, where the request's
        answer is a resumable SSE stream, a way to close it early."""

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Send a progress notification, if the caller asked for progress."""

    def hold_progress(self) -> None:
        """Keep this request's progress open after its response, until
        ``end_progress``: the request created a task that reports under its token."""

    def end_progress(self) -> None:
        """No more progress for this request (its task reached a terminal status)."""

    async def log(self, level: str, data: Any, logger: str | None = None) -> None:
        """Send a log message to the peer, if its level passes the one it set."""

    def close_sse_stream(self) -> None:
        """Close the HTTP stream carrying this request early; the client
        resumes it with Last-Event-ID. Nothing on other transports."""


class HandlerNotImplemented(Exception):
    """Raised by the generated handler defaults: the session answers -32601."""


class Selective:
    """A base of generated handlers that define every method but answer only
    some (``AnsweringHandlers``): only those ``serves`` names count as
    overridden (routed, and deciding the capabilities declared). A class, not
    a runtime-checkable protocol: the check runs for every method of every
    session's routes, and a protocol's isinstance costs some 15 µs."""

    __slots__ = ()

    def serves(self, handler: str) -> bool:
        return True
