"""Who owns a piece of server state (a task, a stream), so that no one else reaches it.

The owner of what a request creates is, in this order: the authenticated
principal where authorization is on (``ctx.principal``), else the session the
request belongs to (an ``Mcp-Session-Id``), else the connection it came on
(stdio, a legacy HTTP+SSE stream). A 2026-07-28 HTTP request without
authorization has none of these: what it creates is reached by its id alone.
State is looked up by its id *and* its owner; another owner gets exactly the
answer an unknown id gets, so ids reveal nothing about whether they exist.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from typing import Any, Final, Protocol, runtime_checkable

PRINCIPAL_SCOPE_KEY: Final = "mcp.principal"
"""Where an authorization layer in front of the HTTP apps puts the verified
:class:`~mcpbind.auth._principal.Principal` of a request, in its ASGI scope."""


@runtime_checkable
class Owned(Protocol):
    """A server transport that knows who may use its session (an HTTP
    session's owner; None: anyone holding the id)."""

    owner: str | None


def owner_of(ctx: Any) -> str | None:
    """The owner key of the request ``ctx`` (a RequestContext) is answering;
    None where there is no owner to bind to: a 2026-07-28 HTTP request
    without authorization has neither a session nor a lasting connection
    (clients pool connections, and any worker may take any request), so
    there the unguessable id alone grants access."""
    principal = ctx.principal
    if principal is not None:
        return f"principal:{principal.key}"
    session = ctx.session
    transport = session.transport
    if isinstance(transport, Owned):  # a transport that knows (an HTTP session, or no owner at all)
        owner = transport.owner
        return owner if isinstance(owner, str) else None
    return str(session.owner)  # a connection of its own: stdio, legacy HTTP+SSE


def session_owner(session_id: str) -> str:
    return f"session:{session_id}"


def connection_owner() -> str:
    """A fresh owner key for one connection."""
    return f"connection:{secrets.token_hex(16)}"


def scope_principal_key(scope: Mapping[str, Any]) -> str | None:
    """The owner key of the principal an ASGI request was authenticated as, if any."""
    principal = scope.get(PRINCIPAL_SCOPE_KEY)
    key = getattr(principal, "key", None)
    return f"principal:{key}" if isinstance(key, str) else None
