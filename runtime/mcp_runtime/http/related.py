"""Which request of ours a server's request or notification rode on, where the
transport knows.

Kept apart from the HTTP client so that what asks (the app layer's proxy)
needs none of the client's optional dependencies.
"""

from __future__ import annotations

from contextvars import ContextVar

from ..jsonrpc import RequestId
from ..wire import RelatesRequests

carried_on: ContextVar[RequestId | None] = ContextVar("mcp_http_carried_on", default=None)
"""The request of ours on whose response stream the message being handled came
(None: another stream, or another transport). The HTTP client sets it as it
hands each message to the session, whose handler tasks start with a copy."""


def related_request(transport: object, request_id: RequestId | None) -> RequestId | None:
    """The request of ours on whose response stream the server sent its request
    ``request_id`` (2025-11-25, transports: such messages "SHOULD relate to the
    originating client request"); None when it came on no request's stream (the
    standalone stream, the legacy HTTP+SSE stream, stdio)."""
    if not isinstance(transport, RelatesRequests) or request_id is None:
        return None
    return transport.carried.get(request_id)


def notification_related() -> RequestId | None:
    """In a client handler of a server's notification: the request of ours on
    whose response stream it came (2025-11-25, transports: such messages
    "SHOULD relate to the originating client request"), else None."""
    return carried_on.get()
