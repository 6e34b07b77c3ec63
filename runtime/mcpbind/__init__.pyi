"""The front door as type checkers see it: generated from ``_MODULES`` in
__init__.py by ``python tests/project/test_front_door.py --write``; do not edit."""

from ._client.client import Client as Client
from ._client.client import ClientSession as ClientSession
from ._client.client import connect_stdio as connect_stdio
from ._core.extras import MissingExtra as MissingExtra
from ._core.jsonrpc import INTERNAL_ERROR as INTERNAL_ERROR
from ._core.jsonrpc import INVALID_PARAMS as INVALID_PARAMS
from ._core.jsonrpc import INVALID_REQUEST as INVALID_REQUEST
from ._core.jsonrpc import METHOD_NOT_FOUND as METHOD_NOT_FOUND
from ._core.jsonrpc import PARSE_ERROR as PARSE_ERROR
from ._core.jsonrpc import ConnectionClosed as ConnectionClosed
from ._core.jsonrpc import McpError as McpError
from ._core.wire import RequestExtra as RequestExtra
from ._extensions.tasks.serving import TaskContext as TaskContext
from ._extensions.tasks.serving import Tasks as Tasks
from ._extensions.tasks.serving import TaskSupport as TaskSupport
from ._server.server import Server as Server
from ._transports.http.client.streamable import connect_http as connect_http
from ._transports.http.client.streamable import connect_sse as connect_sse
from ._transports.http.client.streamable import connect_streamable_http as connect_streamable_http
from ._transports.stdio import StdioServerParameters as StdioServerParameters
from .app import RATE_LIMITED as RATE_LIMITED
from .app import UI_EXTENSION_ID as UI_EXTENSION_ID
from .app import UI_MIME_TYPE as UI_MIME_TYPE
from .app import App as App
from .app import Audio as Audio
from .app import Audit as Audit
from .app import Cache as Cache
from .app import Call as Call
from .app import Content as Content
from .app import Context as Context
from .app import Elicited as Elicited
from .app import ErrorMapping as ErrorMapping
from .app import File as File
from .app import Image as Image
from .app import LifespanError as LifespanError
from .app import Link as Link
from .app import LogLevel as LogLevel
from .app import Message as Message
from .app import Middleware as Middleware
from .app import Next as Next
from .app import NoSession as NoSession
from .app import OutputMismatch as OutputMismatch
from .app import PinError as PinError
from .app import Pins as Pins
from .app import PromptError as PromptError
from .app import PromptOptions as PromptOptions
from .app import RateLimit as RateLimit
from .app import ResourceError as ResourceError
from .app import ResourceOptions as ResourceOptions
from .app import Root as Root
from .app import Sampled as Sampled
from .app import SessionState as SessionState
from .app import StructuredLogging as StructuredLogging
from .app import Timing as Timing
from .app import ToolAnnotations as ToolAnnotations
from .app import ToolCallFailed as ToolCallFailed
from .app import ToolError as ToolError
from .app import ToolOptions as ToolOptions
from .app import ToolSchemas as ToolSchemas
from .app import UiCsp as UiCsp
from .app import UiPermissions as UiPermissions
from .app import UiResource as UiResource
from .app import UiVisibility as UiVisibility
from .app import UriTemplate as UriTemplate
from .app import call_tool_typed as call_tool_typed
from .app import validate_structured as validate_structured
from .auth._principal import InsufficientScope as InsufficientScope
from .auth._principal import Principal as Principal
from .auth.client import ClientCredentialsProvider as ClientCredentialsProvider
from .auth.client import ClientMetadata as ClientMetadata
from .auth.client import JWTBearerProvider as JWTBearerProvider
from .auth.client import LoopbackRedirect as LoopbackRedirect
from .auth.client import OAuthClientProvider as OAuthClientProvider
from .auth.server import IntrospectionVerifier as IntrospectionVerifier
from .auth.server import JWTVerifier as JWTVerifier
from .auth.server import ResourceServer as ResourceServer
from .host import Host as Host
from .host import HostHandlers as HostHandlers
from .http import UVICORN_OPTIONS as UVICORN_OPTIONS
from .http import HttpApp as HttpApp
from .http import HttpOptions as HttpOptions
from .http import http_app as http_app
from .methods import RequestContext as RequestContext
from .serving import run_http as run_http
from .serving import run_stdio as run_stdio
from .serving import serve_stdio as serve_stdio
from .stores import MemoryStore as MemoryStore
from .stores import Store as Store
from .stores import StoreUnavailable as StoreUnavailable
from .stores._redis_store import RedisStore as RedisStore

__version__: str
_MODULES: dict[str, tuple[str | None, tuple[str, ...]]]
_HOME: dict[str, str]

__all__ = [
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
    "Client",
    "ClientSession",
    "connect_stdio",
    "StdioServerParameters",
    "connect_http",
    "connect_sse",
    "connect_streamable_http",
    "Server",
    "RequestContext",
    "RequestExtra",
    "run_http",
    "run_stdio",
    "serve_stdio",
    "UVICORN_OPTIONS",
    "HttpApp",
    "HttpOptions",
    "http_app",
    "TaskContext",
    "TaskSupport",
    "Tasks",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "ConnectionClosed",
    "McpError",
    "MissingExtra",
    "MemoryStore",
    "Store",
    "StoreUnavailable",
    "RedisStore",
    "Host",
    "HostHandlers",
    "InsufficientScope",
    "Principal",
    "ClientCredentialsProvider",
    "ClientMetadata",
    "JWTBearerProvider",
    "LoopbackRedirect",
    "OAuthClientProvider",
    "IntrospectionVerifier",
    "JWTVerifier",
    "ResourceServer",
]

def __dir__() -> list[str]: ...
