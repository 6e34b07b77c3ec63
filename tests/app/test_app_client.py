"""Typed tool calls (structuredContent decoded into a type, checked against the
outputSchema with jsonschema), the in-memory transport, the tasks extension
under the application layer, and the escape hatches to the low-level server."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import msgspec
import pytest

from mcpbind._client.client import Client
from mcpbind._core import lifecycle
from mcpbind._extensions.tasks.serving import (
    EXTENSION_ID,
    TASKS_GET,
    GetTaskParams,
    TaskContext,
    Tasks,
)
from mcpbind._server.server import Server
from mcpbind._transports.memory import memory_pair
from mcpbind.app import (
    App,
    Context,
    OutputMismatch,
    ToolCallFailed,
    ToolError,
    ToolSchemas,
    call_tool_typed,
    validate_structured,
)
from mcpbind.methods import MethodSpec
from mcpbind_protocol import v2025_11_25 as mcp
from mcpbind_protocol import v2026_07_28 as modern


class Note(msgspec.Struct):
    id: int
    text: str


class Hits(msgspec.Struct):
    notes: list[Note]
    total: int


@dataclasses.dataclass
class Wrong:
    title: str


def search_app() -> App:
    app = App("search")

    @app.tool()
    def search(query: str) -> Hits:
        return Hits([Note(1, query)], 1)

    @app.tool()
    def count(query: str) -> int:
        return len(query)

    @app.tool()
    def broken() -> mcp.CallToolResult:
        # Passes through as it is: structured content the caller's schema will not accept.
        return mcp.CallToolResult(
            content=[], structured_content={"notes": [{"id": "x", "text": 1}], "total": 1}
        )

    @app.tool()
    def fails() -> Hits:
        raise ToolError("index offline")

    @app.tool()
    def plain() -> str:
        return "no structure"

    return app


@pytest.mark.parametrize("version", ("2025-06-18", "2025-11-25", "2026-07-28"))
def test_call_tool_typed(version: str) -> None:
    async def main() -> None:
        async with search_app().test_client(protocol_version=version) as session:
            hits = await call_tool_typed(session, "search", {"query": "milk"}, result_type=Hits)
            assert hits == Hits([Note(1, "milk")], 1)
            assert await call_tool_typed(session, "count", {"query": "milk"}, result_type=int) == 4
            schemas = await ToolSchemas.fetch(session)
            assert set(schemas.schemas) == {"search", "count", "fails"}
            assert await call_tool_typed(
                session, "search", {"query": "x"}, result_type=Hits, schemas=schemas
            ) == Hits([Note(1, "x")], 1)
            with pytest.raises(
                OutputMismatch,
                match=r"structuredContent is not a Wrong: Object missing required field `title`",
            ):
                await call_tool_typed(session, "search", {"query": "x"}, result_type=Wrong)
            with pytest.raises(ToolCallFailed, match="tool 'fails' failed: index offline"):
                await call_tool_typed(session, "fails", result_type=Hits)
            with pytest.raises(OutputMismatch, match="tool 'plain' returned no structuredContent"):
                await call_tool_typed(session, "plain", result_type=str)

    asyncio.run(main())


def test_structured_content_against_the_output_schema() -> None:
    async def main() -> None:
        async with search_app().test_client(protocol_version="2025-11-25") as session:
            schemas = await ToolSchemas.fetch(session)
            # The tool "broken" lists no outputSchema; take the one of "search".
            schemas.schemas["broken"] = schemas.schemas["search"]
            with pytest.raises(OutputMismatch) as raised:
                await call_tool_typed(session, "broken", result_type=Hits, schemas=schemas)
            assert str(raised.value) == (
                "tool 'broken': structuredContent does not match its outputSchema at `$.notes[0].id`: "
                "'x' is not of type 'integer' (and 1 more)"
            )

    asyncio.run(main())
    schema = {
        "type": "object",
        "properties": {"total": {"type": "integer", "minimum": 0}},
        "required": ["total"],
    }
    validate_structured(schema, {"total": 3})
    with pytest.raises(OutputMismatch, match=r"at `\$`: 'total' is a required property"):
        validate_structured(schema, {})
    with pytest.raises(OutputMismatch, match=r"at `\$.total`: -1 is less than the minimum of 0"):
        validate_structured(schema, {"total": -1})


def test_the_in_memory_transport_serves_a_low_level_server() -> None:
    """memory_pair() under App.test_client works with any Server."""

    async def main() -> None:
        app = search_app()
        server_end, client_end = memory_pair()
        serving = asyncio.create_task(
            Server(app.handlers(), name="low", version="1").serve(server_end)
        )
        session = await Client(name="c", version="1").connect(client_end)
        assert session.protocol_version == "2026-07-28" and session.server_info.name == "low"
        result = await modern.ClientStub(session).call_tool("count", arguments={"query": "abc"})
        assert result.structured_content == {"result": 3}
        await session.close()
        await serving

    asyncio.run(main())


def test_the_low_level_server_is_the_escape_hatch() -> None:
    app = search_app()
    server = app.server()
    assert server is app.server()
    assert set(server.handlers) == set(
        lifecycle.handshake_versions() + lifecycle.stateless_versions()
    )
    limited = App("old", versions=["2024-11-05"])
    assert limited.server().versions == ["2024-11-05"] and not limited.server().stateless_versions
    with pytest.raises(ValueError, match="unsupported protocol versions"):
        App("x", versions=["1999-01-01"])


# ------------------------------------------------------------------ tasks


_CALL_AS_TASK: MethodSpec[Any, Any] = MethodSpec(
    method="tools/call", direction="client_to_server", kind="request",
    params=modern.CallToolRequestParams, result=dict[str, Any], params_required=True, handler="call_tool",
)  # fmt: skip


def test_a_tool_runs_as_a_task_through_the_context() -> None:
    tasks = Tasks(tools={"export": "optional"})
    app = App("exports", extensions=[tasks])

    @app.tool()
    async def export(rows: int, ctx: Context) -> modern.CallToolResult:
        async def work(task: TaskContext) -> modern.CallToolResult:
            await asyncio.sleep(0.01)
            return modern.CallToolResult(content=[modern.TextContent(text=f"exported {rows} rows")])

        return await tasks.start(ctx.request_context, work)

    async def main() -> None:
        # A client without the extension: the work runs in place.
        async with app.test_client() as session:
            result = await modern.ClientStub(session).call_tool("export", arguments={"rows": 3})
            assert result.content[0].text == "exported 3 rows"
        # A client with it gets a task, and its result from tasks/get.
        client = Client(name="c", version="1", capabilities={"extensions": {EXTENSION_ID: {}}})
        async with app.test_client(client=client) as session:
            created = await session.request(
                _CALL_AS_TASK, modern.CallToolRequestParams(name="export", arguments={"rows": 5})
            )
            assert created["resultType"] == "task"
            for _ in range(200):
                got = await session.request(TASKS_GET, GetTaskParams(task_id=created["taskId"]))
                if got.status == "completed":
                    break
                await asyncio.sleep(0.01)
            assert got.status == "completed" and msgspec.to_builtins(got.result)["content"] == [
                {"type": "text", "text": "exported 5 rows"}
            ]

    asyncio.run(main())
