"""Why authorization failed, as the call that needed it sees it."""

from __future__ import annotations

from ..._core import jsonrpc
from ..._core.jsonrpc import McpError


class AuthorizationError(McpError):
    """Authorization for an MCP server could not be obtained or was refused.

    It is an :class:`McpError` so a call over an authorized transport fails
    with it like with any other transport error; ``data["httpStatus"]`` is the
    status that started the attempt (401 or 403), so a client never mistakes
    it for a server that speaks another protocol revision. Messages name what
    went wrong and where, never a token, code or secret.
    """

    def __init__(self, message: str, status: int = 401) -> None:
        super().__init__(jsonrpc.INVALID_REQUEST, message, {"httpStatus": status})


class MetadataError(AuthorizationError):
    """A metadata document (protected resource, authorization server, or a
    registration or token response) is missing, malformed or fails a check."""
