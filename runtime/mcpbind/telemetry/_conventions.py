"""The names OpenTelemetry's semantic conventions for MCP give spans, attributes
and metrics (docs/gen-ai/mcp.md of open-telemetry/semantic-conventions-genai),
and the few this runtime adds where the conventions leave a need open. Plain
strings: importing them needs no OpenTelemetry."""

from __future__ import annotations

# Attributes of spans and metrics.
METHOD_NAME = "mcp.method.name"
PROTOCOL_VERSION = "mcp.protocol.version"
SESSION_ID = "mcp.session.id"
RESOURCE_URI = "mcp.resource.uri"
TOOL_NAME = "gen_ai.tool.name"
PROMPT_NAME = "gen_ai.prompt.name"
OPERATION_NAME = "gen_ai.operation.name"
REQUEST_ID = "jsonrpc.request.id"
ERROR_TYPE = "error.type"
STATUS_CODE = "rpc.response.status_code"
NETWORK_TRANSPORT = "network.transport"
NETWORK_PROTOCOL = "network.protocol.name"

# Values.
EXECUTE_TOOL = "execute_tool"  # gen_ai.operation.name of tools/call, and only of it
TOOL_ERROR = "tool_error"  # error.type of a CallToolResult with isError true
PIPE = "pipe"  # network.transport of stdio
TCP = "tcp"  # network.transport of HTTP

# The four histograms of the conventions, in seconds.
SERVER_OPERATION_DURATION = "mcp.server.operation.duration"
CLIENT_OPERATION_DURATION = "mcp.client.operation.duration"
SERVER_SESSION_DURATION = "mcp.server.session.duration"
CLIENT_SESSION_DURATION = "mcp.client.session.duration"
# Their advised bucket boundaries (ExplicitBucketBoundaries of the conventions).
DURATION_BUCKETS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)

# What operators ask for that the conventions leave open (this runtime's names).
SERVER_ACTIVE_SESSIONS = "mcp.server.session.active"  # UpDownCounter, {session}
SERVER_ACTIVE_REQUESTS = "mcp.server.request.active"  # UpDownCounter, {request}
STORE_OPERATIONS = "mcp.store.operations"  # Counter, {operation}: round trips to the store
STORE_FAILURES = "mcp.store.failures"  # Counter, {operation}: those that failed
BACKEND_UP = "mcp.gateway.backend.up"  # Gauge, 1 connected / 0 not, per backend
BACKEND_NAME = "mcp.gateway.backend"  # attribute: the backend's (Host entry's) name

# The span of a Host's routed call names the server entry.
HOST_SERVER = "mcp.host.server"

# The keys of params._meta trace context travels in (SEP-414: unprefixed).
PROPAGATION_KEYS = ("traceparent", "tracestate", "baggage")

# The instrumentation scope.
SCOPE = "mcpbind"
