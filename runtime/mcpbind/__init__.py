"""Typed, fast MCP for Python: the public API in one place.

    from mcpbind import App, Context

    app = App("notes", "1.0")

    @app.tool()
    async def add_note(text: str, ctx: Context) -> Note: ...

    app.run()

The application layer (:class:`App` and every other name of :mod:`mcpbind.app`), the
client (:class:`Client`, :func:`connect_stdio`, :func:`connect_http`), the low-level server (:class:`Server`, :func:`run_stdio`,
:func:`http_app`, :func:`run_http`), errors, stores, hosts and the OAuth entry points are all
importable from here; each also stays importable from the module that defines it.

A name loads its module on first use, so ``import mcpbind`` imports nothing else, and a
name whose module needs an optional extra (``http``, ``auth``, ``redis``) fails only when used,
with :class:`MissingExtra` naming the extra to install.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

# The front door's one table: the module each name lives in, and the extra that module
# needs (None: the core install). ``__all__`` and ``__getattr__`` below are derived from
# it; ``__init__.pyi``, which type checkers read in place of this file, is generated from it
# (``python tests/project/test_front_door.py --write``; the test fails when the two differ).
# A name added or removed here needs its line in CHANGELOG.md (tests/project/test_public_names.py).
_MODULES: dict[str, tuple[str | None, tuple[str, ...]]] = {
    # the application layer: every name of mcpbind.app
    ".app": (
        None,
        (
            "App",
            "Audio",
            "Audit",
            "Cache",
            "Call",
            "Content",
            "Context",
            "Elicited",
            "ErrorMapping",
            "File",
            "Image",
            "LifespanError",
            "Link",
            "LogLevel",
            "Message",
            "Middleware",
            "Next",
            "NoSession",
            "OutputMismatch",
            "PinError",
            "Pins",
            "PromptError",
            "PromptOptions",
            "RATE_LIMITED",
            "RateLimit",
            "ResourceError",
            "ResourceOptions",
            "Root",
            "Sampled",
            "SessionState",
            "StructuredLogging",
            "Timing",
            "ToolAnnotations",
            "ToolCallFailed",
            "ToolError",
            "ToolOptions",
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
        ),
    ),
    # clients
    "._client.client": (None, ("Client", "ClientSession", "connect_stdio")),
    "._transports.stdio": (None, ("StdioServerParameters",)),
    "._transports.http.client.streamable": (
        "http",
        ("connect_http", "connect_sse", "connect_streamable_http"),
    ),
    # servers
    "._server.server": (None, ("Server",)),
    ".methods": (None, ("RequestContext",)),
    "._core.wire": (None, ("RequestExtra",)),
    ".serving": (None, ("run_http", "run_stdio", "serve_stdio")),
    ".http": (None, ("UVICORN_OPTIONS", "HttpApp", "HttpOptions", "http_app")),
    "._extensions.tasks.serving": (None, ("TaskContext", "TaskSupport", "Tasks")),
    # errors
    "._core.jsonrpc": (
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
    "._core.extras": (None, ("MissingExtra",)),
    # where server state lives
    ".stores": (None, ("MemoryStore", "Store", "StoreUnavailable")),
    ".stores._redis_store": ("redis", ("RedisStore",)),
    # hosts
    ".host": (None, ("Host", "HostHandlers")),
    # authorization
    ".auth._principal": (None, ("InsufficientScope", "Principal")),
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

__all__ = list(_HOME)


def __getattr__(name: str) -> object:
    module_name = _HOME.get(name)
    if module_name is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        module = importlib.import_module(module_name, __name__)
    except ModuleNotFoundError as error:
        extra = _MODULES[module_name][0]
        missing = (error.name or "").partition(".")[0]
        # Only a third-party module is an uninstalled extra; one of ours missing is a bug.
        if extra is None or missing in ("", __name__, "mcpbind_protocol"):
            raise
        from ._core.extras import MissingExtra

        raise MissingExtra(f"{__name__}.{name}", extra, error.name) from None
    value = getattr(module, name)
    # Later uses find the name in the module's namespace and skip this function.
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
