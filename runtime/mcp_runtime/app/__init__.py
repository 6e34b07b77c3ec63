"""The application layer: MCP servers from plain, typed Python functions.

    from mcp_runtime.app import App, Context

    app = App("notes", "1.0")

    @app.tool()
    async def add_note(text: str, ctx: Context) -> Note: ...

Schemas come from signatures (msgspec), arguments are validated in one
msgspec pass, results become structured content, and one app serves every
protocol revision over stdio, Streamable HTTP and legacy SSE. The generated
handler interfaces stay underneath (``app.server()``).
"""

from .app import App
from .audit import Audit
from .client import (
    OutputMismatch,
    ToolCallFailed,
    ToolSchemas,
    call_tool_typed,
    validate_structured,
)
from .context import Context, Elicited, LogLevel, Root, Sampled
from .errors import NoSession, PromptError, ResourceError, ToolError
from .lifespan import LifespanError
from .media import Audio, Content, File, Image, Link
from .middleware import Call, Middleware, Next
from .pinning import PinError, Pins
from .prompts import Message
from .registering import PromptOptions, ResourceOptions, ToolOptions
from .resources import UriTemplate
from .shipped import RATE_LIMITED, Cache, ErrorMapping, RateLimit, StructuredLogging, Timing
from .state import SessionState
from .tools import ToolAnnotations
from .ui import UI_EXTENSION_ID, UI_MIME_TYPE, UiCsp, UiPermissions, UiResource, UiVisibility

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
