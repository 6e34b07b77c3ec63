"""Spans and metrics of MCP traffic by the semantic conventions for MCP
(open-telemetry/semantic-conventions-genai, docs/gen-ai/mcp.md), recorded by
the OpenTelemetry SDK's in-memory exporters: a real client session and an app
over the in-memory transport, on every revision."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.trace import SpanKind, StatusCode
from support.peers import run
from support.telemetry import (
    metric_reader,  # noqa: F401  (a fixture)
    points,
    spans,  # noqa: F401  (a fixture)
    telemetry,  # noqa: F401  (a fixture)
)

from mcpbind._client.client import Client, ClientSession
from mcpbind._core import lifecycle
from mcpbind._core.jsonrpc import McpError
from mcpbind.app import App, Context, ToolError
from mcpbind.codec import encode
from mcpbind.telemetry import Telemetry

ALL = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")


def build(telemetry: Telemetry) -> App:
    app: App = App("traced", telemetry=telemetry)

    @app.tool()
    def echo(text: str) -> str:
        """Say it back."""
        return text

    @app.tool()
    def refuse() -> str:
        """Always a tool error."""
        raise ToolError("no")

    @app.prompt()
    def greet(name: str) -> str:
        """A greeting."""
        return f"hello {name}"

    @app.resource("note://one")
    def one() -> str:
        return "1"

    return app


def stub(session: ClientSession) -> Any:
    return lifecycle.revision(session.protocol_version).package.ClientStub(session)


def by_name(spans: Any, name: str, kind: SpanKind) -> Any:
    found = [s for s in spans.get_finished_spans() if s.name == name and s.kind == kind]
    assert found, f"no {kind.name} span {name!r} in {[s.name for s in spans.get_finished_spans()]}"
    return found[-1]


@pytest.mark.parametrize("version", ALL)
def test_each_method_gets_a_client_and_a_server_span_named_and_attributed_by_the_conventions(
    version: str, spans: Any, telemetry: Telemetry
) -> None:
    """ "Span name SHOULD follow the format `{mcp.method.name} {target}` where target
    SHOULD match `{gen_ai.tool.name}` or `{gen_ai.prompt.name}` when applicable."
    The client span is the parent of the server span: its context travels in
    ``params._meta`` ("The receiver extracts the context from `params._meta` and
    uses it as the remote parent")."""
    app = build(telemetry)
    client = Client(name="c", version="1", protocol_version=version, telemetry=telemetry)

    async def main() -> None:
        async with app.test_client(client=client) as session:
            calls = stub(session)
            await calls.call_tool("echo", arguments={"text": "hi"})
            await calls.get_prompt("greet", arguments={"name": "ann"})
            await calls.read_resource("note://one")
            await calls.list_tools()

    run(main())
    for name, attribute, target in (
        ("tools/call echo", "gen_ai.tool.name", "echo"),
        ("prompts/get greet", "gen_ai.prompt.name", "greet"),
    ):
        server = by_name(spans, name, SpanKind.SERVER)
        sent = by_name(spans, name, SpanKind.CLIENT)
        assert server.attributes[attribute] == sent.attributes[attribute] == target
        assert server.parent is not None and server.parent.span_id == sent.context.span_id
        assert server.context.trace_id == sent.context.trace_id
        assert server.attributes["mcp.protocol.version"] == version
        assert sent.attributes["mcp.protocol.version"] == version
        assert server.attributes["jsonrpc.request.id"] == sent.attributes["jsonrpc.request.id"]
        assert server.status.status_code == StatusCode.UNSET
    tool = by_name(spans, "tools/call echo", SpanKind.SERVER)
    assert tool.attributes["gen_ai.operation.name"] == "execute_tool"
    assert tool.attributes["mcp.method.name"] == "tools/call"
    assert (
        "gen_ai.operation.name"
        not in by_name(spans, "prompts/get greet", SpanKind.SERVER).attributes
    )
    read = by_name(spans, "resources/read", SpanKind.SERVER)
    assert read.attributes["mcp.resource.uri"] == "note://one"  # not in the span name
    by_name(spans, "tools/list", SpanKind.SERVER)
    if version < "2026-07-28":
        sent = by_name(spans, "initialize", SpanKind.CLIENT)
        served = by_name(spans, "initialize", SpanKind.SERVER)
        assert served.parent.span_id == sent.context.span_id


@pytest.mark.parametrize("version", ("2025-06-18", "2026-07-28"))
def test_error_spans_carry_the_json_rpc_code_or_tool_error(
    version: str, spans: Any, telemetry: Telemetry, metric_reader: InMemoryMetricReader
) -> None:
    """ "When CallToolResult is returned with `isError` set to `true`, this attribute
    SHOULD be set to `tool_error`"; a JSON-RPC error sets `error.type` and
    `rpc.response.status_code` to its code, and "Span status SHOULD be set to
    `ERROR` when `error.type` attribute is present. The status description SHOULD
    match the `JSONRPCError.message`"."""
    app = build(telemetry)
    client = Client(name="c", version="1", protocol_version=version, telemetry=telemetry)

    async def main() -> None:
        async with app.test_client(client=client) as session:
            calls = stub(session)
            result = await calls.call_tool("refuse", arguments={})
            assert result.is_error
            with pytest.raises(McpError) as raised:
                await calls.get_prompt("missing", arguments={})
            return raised.value

    error = run(main())
    for kind in (SpanKind.SERVER, SpanKind.CLIENT):
        refused = by_name(spans, "tools/call refuse", kind)
        assert refused.attributes["error.type"] == "tool_error"
        assert refused.status.status_code == StatusCode.ERROR
        missing = by_name(spans, "prompts/get missing", kind)
        assert missing.attributes["error.type"] == str(error.code)
        assert missing.attributes["rpc.response.status_code"] == str(error.code)
        assert missing.status.status_code == StatusCode.ERROR
        assert missing.status.description == error.message
    failed = [
        p
        for p in points(metric_reader, "mcp.server.operation.duration")
        if p.attributes.get("error.type") == "tool_error"
    ]
    assert failed and failed[0].attributes["gen_ai.tool.name"] == "refuse"


def test_the_four_duration_histograms_and_the_open_counts(
    spans: Any, telemetry: Telemetry, metric_reader: InMemoryMetricReader
) -> None:
    """mcp.server/client.operation.duration per method (seconds, the conventions'
    buckets, low-cardinality attributes only), the session durations once a session
    ends, and the sessions and requests open back at zero."""
    app = build(telemetry)
    client = Client(name="c", version="1", protocol_version="2025-11-25", telemetry=telemetry)

    async def main() -> None:
        async with app.test_client(client=client) as session:
            await stub(session).call_tool("echo", arguments={"text": "hi"})
            opened = points(metric_reader, "mcp.server.session.active")
            assert [p.value for p in opened] == [1]

    run(main())
    server = {
        p.attributes["mcp.method.name"]: p
        for p in points(metric_reader, "mcp.server.operation.duration")
    }
    echo = server["tools/call"]
    assert echo.count == 1 and echo.sum > 0
    assert list(echo.explicit_bounds) == [
        0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300
    ]  # fmt: skip
    assert "jsonrpc.request.id" not in echo.attributes
    assert echo.attributes["gen_ai.tool.name"] == "echo"
    client_methods = {
        p.attributes["mcp.method.name"]
        for p in points(metric_reader, "mcp.client.operation.duration")
    }
    assert {"initialize", "tools/call"} <= client_methods
    assert [p.count for p in points(metric_reader, "mcp.server.session.duration")] == [1]
    assert [p.count for p in points(metric_reader, "mcp.client.session.duration")] == [1]
    assert [p.value for p in points(metric_reader, "mcp.server.session.active")] == [0]
    assert all(p.value == 0 for p in points(metric_reader, "mcp.server.request.active"))


@pytest.mark.parametrize("version", ALL)
def test_a_trace_context_the_caller_put_in_meta_is_continued(
    version: str, spans: Any, telemetry: Telemetry
) -> None:
    """A request whose ``_meta`` carries a W3C ``traceparent`` (and no span of
    ours) is served in that trace, as a child of that span, on every revision
    ("Instrumentations SHOULD propagate context [...] by injecting it into the MCP
    request `params._meta` property bag"; every revision's requests may carry
    ``_meta``, though before 2025-11-25 the schema declares it only on the base
    ``Request``)."""
    app = build(telemetry)
    client = Client(name="c", version="1", protocol_version=version)  # no telemetry
    parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

    async def main() -> None:
        async with app.test_client(client=client) as session:
            params = {"name": "echo", "arguments": {"text": "x"}, "_meta": {"traceparent": parent}}
            if version < "2026-07-28":  # as another SDK sends it, whatever our types declare
                await session.request_raw("tools/call", encode(params))
            else:  # the session adds its envelope to the _meta of typed params
                spec = lifecycle.revision(version).all_methods["tools/call"]
                typed = spec.params(name="echo", arguments={"text": "x"}, meta=params["_meta"])
                await session.request(spec, typed)

    run(main())
    served = by_name(spans, "tools/call echo", SpanKind.SERVER)
    assert format(served.context.trace_id, "032x") == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert format(served.parent.span_id, "016x") == "00f067aa0ba902b7"
    assert served.parent.is_remote


@pytest.mark.parametrize("version", ("2025-06-18", "2025-11-25"))
def test_a_request_the_server_sends_is_a_client_span_the_client_serves_in_the_same_trace(
    version: str, spans: Any, telemetry: Telemetry
) -> None:
    """The client span "is reported by the MCP client when it initiates the request
    or notification or by the MCP server when server initiates the operation": a
    tool asking the client for its roots makes a CLIENT span on the server, under
    the tool's span, and the client's handler a SERVER span under that."""
    app: App = App("asking", telemetry=telemetry)

    @app.tool()
    async def where(ctx: Context) -> str:
        """The first root."""
        roots = await ctx.list_roots()
        return roots[0].uri

    package = lifecycle.revision(version).package

    class Roots(package.ClientHandlers):  # type: ignore[name-defined,misc]
        async def list_roots(self, params: Any, ctx: Any) -> Any:
            return package.ListRootsResult(roots=[package.Root(uri="file:///work")])

    client = Client(
        name="c", version="1", protocol_version=version, handlers=Roots(), telemetry=telemetry
    )

    async def main() -> None:
        async with app.test_client(client=client) as session:
            result = await stub(session).call_tool("where", arguments={})
            assert result.content[0].text == "file:///work"

    run(main())
    tool = by_name(spans, "tools/call where", SpanKind.SERVER)
    asked = by_name(spans, "roots/list", SpanKind.CLIENT)
    answered = by_name(spans, "roots/list", SpanKind.SERVER)
    assert asked.parent.span_id == tool.context.span_id
    assert answered.parent.span_id == asked.context.span_id
    assert answered.context.trace_id == tool.context.trace_id
