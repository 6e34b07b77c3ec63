"""Typed, fast MCP for Python: the public API in one place.

    from mcp_runtime import App, Context

    app = App("notes", "1.0")

    @app.tool()
    async def add_note(text: str, ctx: Context) -> Note: ...

    app.run()

The application layer (:class:`App`), the client (:class:`Client`, :func:`connect_stdio`,
:func:`connect_http`), the low-level server (:class:`Server`, :func:`run_stdio`,
:func:`http_app`, :func:`run_http`), errors, stores, hosts and the OAuth entry points are all
importable from here; each also stays importable from the module that defines it.

A name loads its module on first use, so ``import mcp_runtime`` imports nothing else, and a
name whose module needs an optional extra (``http``, ``auth``, ``redis``) fails only when used,
with :class:`MissingExtra` naming the extra to install.
"""

from __future__ import annotations

import importlib

# Not typing.TYPE_CHECKING: importing typing (and re with it) would be most of what
# ``import mcp_runtime`` costs. Type checkers take any name TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .app import (
        App,
        Context,
        Elicited,
        Message,
        OutputMismatch,
        PromptError,
        ResourceError,
        Root,
        Sampled,
        ToolCallFailed,
        ToolError,
        ToolSchemas,
        call_tool_typed,
    )
    from .auth.client import (
        ClientCredentialsProvider,
        ClientMetadata,
        JWTBearerProvider,
        LoopbackRedirect,
        OAuthClientProvider,
    )
    from .auth.principal import InsufficientScope, Principal
    from .auth.server import IntrospectionVerifier, JWTVerifier, ResourceServer
    from .client import Client, ClientSession, connect_stdio
    from .extras import MissingExtra
    from .host import Host, HostHandlers
    from .http import UVICORN_OPTIONS, HttpApp, HttpOptions, http_app
    from .http.client import connect_http, connect_sse, connect_streamable_http
    from .jsonrpc import (
        INTERNAL_ERROR,
        INVALID_PARAMS,
        INVALID_REQUEST,
        METHOD_NOT_FOUND,
        PARSE_ERROR,
        ConnectionClosed,
        McpError,
    )
    from .methods import RequestContext
    from .server import Server
    from .serving import run_http, run_stdio, serve_stdio
    from .stdio import StdioServerParameters
    from .stores import MemoryStore, Store, StoreUnavailable
    from .stores.redis_store import RedisStore
    from .tasks import TaskContext, Tasks, TaskSupport

# Where each name lives, and the extra its module needs (None: the core install). The
# imports above say the same to type checkers; tests/project/test_front_door.py keeps the
# two in step and checks every extra named here against an environment without extras.
_MODULES: dict[str, tuple[str | None, tuple[str, ...]]] = {
    ".app": (
        None,
        (
            "App",
            "Context",
            "Elicited",
            "Message",
            "OutputMismatch",
            "PromptError",
            "ResourceError",
            "Root",
            "Sampled",
            "ToolCallFailed",
            "ToolError",
            "ToolSchemas",
            "call_tool_typed",
        ),
    ),
    ".client": (None, ("Client", "ClientSession", "connect_stdio")),
    ".stdio": (None, ("StdioServerParameters",)),
    ".server": (None, ("Server",)),
    ".methods": (None, ("RequestContext",)),
    ".serving": (None, ("run_http", "run_stdio", "serve_stdio")),
    ".http": (None, ("UVICORN_OPTIONS", "HttpApp", "HttpOptions", "http_app")),
    ".http.client": ("http", ("connect_http", "connect_sse", "connect_streamable_http")),
    ".jsonrpc": (
        None,
        (
            "INTERNAL_ERROR",
            "INVALID_PARAMS",
            "INVALID_REQUEST",
            "METHOD_NOT_FOUND",
            "PARSE_ERROR",
            "ConnectionClosed",
            "McpError",
        ),
    ),
    ".extras": (None, ("MissingExtra",)),
    ".tasks": (None, ("TaskContext", "TaskSupport", "Tasks")),
    ".stores": (None, ("MemoryStore", "Store", "StoreUnavailable")),
    ".stores.redis_store": ("redis", ("RedisStore",)),
    ".host": (None, ("Host", "HostHandlers")),
    ".auth.principal": (None, ("InsufficientScope", "Principal")),
    ".auth.client": (
        "auth",
        (
            "ClientCredentialsProvider",
            "ClientMetadata",
            "JWTBearerProvider",
            "LoopbackRedirect",
            "OAuthClientProvider",
        ),
    ),
    ".auth.server": ("auth", ("IntrospectionVerifier", "JWTVerifier", "ResourceServer")),
}

_HOME: dict[str, str] = {
    name: module for module, (_extra, names) in _MODULES.items() for name in names
}

__all__ = [
    # the application layer
    "App",
    "Context",
    "Elicited",
    "Message",
    "PromptError",
    "ResourceError",
    "Root",
    "Sampled",
    "ToolError",
    "ToolSchemas",
    "call_tool_typed",
    "OutputMismatch",
    "ToolCallFailed",
    # clients
    "Client",
    "ClientSession",
    "StdioServerParameters",
    "connect_stdio",
    "connect_http",
    "connect_streamable_http",
    "connect_sse",
    # servers
    "Server",
    "RequestContext",
    "run_stdio",
    "serve_stdio",
    "http_app",
    "HttpApp",
    "HttpOptions",
    "run_http",
    "UVICORN_OPTIONS",
    "Tasks",
    "TaskContext",
    "TaskSupport",
    # errors
    "McpError",
    "ConnectionClosed",
    "MissingExtra",
    "PARSE_ERROR",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "INVALID_PARAMS",
    "INTERNAL_ERROR",
    # where server state lives
    "Store",
    "MemoryStore",
    "RedisStore",
    "StoreUnavailable",
    # hosts
    "Host",
    "HostHandlers",
    # authorization
    "OAuthClientProvider",
    "ClientCredentialsProvider",
    "JWTBearerProvider",
    "ClientMetadata",
    "LoopbackRedirect",
    "ResourceServer",
    "JWTVerifier",
    "IntrospectionVerifier",
    "Principal",
    "InsufficientScope",
]


def __getattr__(name: str) -> Any:
    module_name = _HOME.get(name)
    if module_name is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        module = importlib.import_module(module_name, __name__)
    except ModuleNotFoundError as error:
        extra = _MODULES[module_name][0]
        missing = (error.name or "").partition(".")[0]
        # Only a third-party module is an uninstalled extra; one of ours missing is a bug.
        if extra is None or missing in ("", __name__, "mcp_protocol"):
            raise
        from .extras import MissingExtra

        raise MissingExtra(f"{__name__}.{name}", extra, error.name) from None
    value = getattr(module, name)
    # Later uses find the name in the module's namespace and skip this function.
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
