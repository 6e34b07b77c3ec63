"""What a function of the application layer raises to answer with an error.

``ToolError`` becomes a tool execution error (``isError: true`` with the
message as text), which the model sees and can act on. ``ResourceError`` and
``PromptError`` become JSON-RPC errors with their message. Any other exception
is a bug: the client gets -32603 "Internal error" and no details, and the
exception goes to the ``mcpbind._core.session`` logger.
"""

from __future__ import annotations

from .._core.jsonrpc import INVALID_PARAMS, McpError


class ToolError(Exception):
    """Raised by a tool to answer with a tool execution error (``isError: true``)."""


class NoSession(ToolError, ValueError):
    """A rule for one session (``app.enable(..., session=ctx)``) asked by a
    request that has none (2026-07-28): a tool error that says so to the
    caller (-32602 with the message from a resource or prompt)."""


class ResourceError(McpError):
    """Raised by a resource function: -32602 with the message (a resource
    that does not exist, or cannot be read with these variables)."""

    def __init__(self, message: str, data: object = None) -> None:
        super().__init__(INVALID_PARAMS, message, data)


class PromptError(McpError):
    """Raised by a prompt function: -32602 with the message."""

    def __init__(self, message: str, data: object = None) -> None:
        super().__init__(INVALID_PARAMS, message, data)


class InputRequired(BaseException):
    """Internal: a 2026-07-28 request needs the client's input before the
    function can go on. The wrapper answers with an input-required result;
    the function runs again, from the start, when the client retries.

    A BaseException, as asyncio.CancelledError is: an ``except Exception``
    in the function must not swallow it."""

    def __init__(self, key: str, request: object) -> None:
        super().__init__(key)
        self.key = key
        self.request = request
