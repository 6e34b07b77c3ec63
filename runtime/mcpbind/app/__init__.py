"""The application layer: MCP servers from plain, typed Python functions.

    from mcpbind.app import App, Context

    app = App("notes", "1.0")

    @app.tool()
    async def add_note(text: str, ctx: Context) -> Note: ...

Schemas come from signatures (msgspec), arguments are validated in one
msgspec pass, results become structured content, and one app serves every
protocol revision over stdio, Streamable HTTP and legacy SSE. The generated
handler interfaces stay underneath (``app.server()``).
"""

from ._app import App
from ._audit import Audit
from ._client import (
    OutputMismatch,
    ToolCallFailed,
    ToolSchemas,
    call_tool_typed,
    validate_structured,
)
from ._context import Context, Elicited, LogLevel, Root, Sampled
from ._errors import NoSession, PromptError, ResourceError, ToolError
from ._lifespan import LifespanError
from ._media import Audio, Content, File, Image, Link
from ._middleware import Call, Middleware, Next
from ._pinning import PinError, Pins
from ._prompts import Message
from ._registering import PromptOptions, ResourceOptions, ToolOptions
from ._resources import UriTemplate
from ._shipped import RATE_LIMITED, Cache, ErrorMapping, RateLimit, StructuredLogging, Timing
from ._state import SessionState
from ._tools import ToolAnnotations
from ._ui import UI_EXTENSION_ID, UI_MIME_TYPE, UiCsp, UiPermissions, UiResource, UiVisibility

__all__ = [
    "RATE_LIMITED",
    "App",
    "Audio",
    "Audit",
    "Cache",
    "Call",
    "Content",
    "ErrorMapping",
    "File",
    "Image",
    "LifespanError",
    "Link",
    "Middleware",
    "Next",
    "NoSession",
    "PinError",
    "Pins",
    "RateLimit",
    "SessionState",
    "StructuredLogging",
    "Timing",
    "ToolAnnotations",
    "ToolOptions",
    "PromptOptions",
    "ResourceOptions",
    "Context",
    "Elicited",
    "LogLevel",
    "Message",
    "OutputMismatch",
    "PromptError",
    "ResourceError",
    "Root",
    "Sampled",
    "ToolCallFailed",
    "ToolError",
    "ToolSchemas",
    "UI_EXTENSION_ID",
    "UI_MIME_TYPE",
    "UiCsp",
    "UiPermissions",
    "UiResource",
    "UiVisibility",
    "UriTemplate",
    "call_tool_typed",
    "validate_structured",
]
