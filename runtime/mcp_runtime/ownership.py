"""Who owns a piece of server state (a task, a stream), so that no one else reaches it.

The owner of what a request creates is, in this order: the authenticated
principal where authorization is on (``ctx.principal``), else the session the
request belongs to (an ``Mcp-Session-Id``), else the connection it came on.
State is looked up by its id *and* its owner; another owner gets exactly the
answer an unknown id gets, so ids reveal nothing about whether they exist.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from typing import Any, Final

PRINCIPAL_SCOPE_KEY: Final = "mcp.principal"
"""Where an authorization layer in front of the HTTP apps puts the verified
:class:`~mcp_runtime.auth.principal.Principal` of a request, in its ASGI scope."""


def owner_of(ctx: Any) -> str:
    """The owner key of the request ``ctx`` (a RequestContext) is answering."""
    principal = ctx.principal
    if principal is not None:
        return f"principal:{principal.key}"
    session = ctx.peer
    owner = getattr(session.transport, "owner", None)
    if isinstance(owner, str):
        return owner
    return str(session.owner)


def session_owner(session_id: str) -> str:
    return f"session:{session_id}"


def connection_owner(client: Any = None) -> str:
    """The owner key of one connection: its peer address and port where the
    server knows them (an ASGI scope's ``client``), else a fresh random one."""
    if isinstance(client, (tuple, list)) and len(client) == 2:
        return f"connection:{client[0]}:{client[1]}"
    return f"connection:{secrets.token_hex(16)}"


def scope_principal_key(scope: Mapping[str, Any]) -> str | None:
    """The owner key of the principal an ASGI request was authenticated as, if any."""
    principal = scope.get(PRINCIPAL_SCOPE_KEY)
    key = getattr(principal, "key", None)
    return f"principal:{key}" if isinstance(key, str) else None
