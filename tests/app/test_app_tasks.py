"""Task-capable tools: the 2025-11-25 core tasks (capability, ``execution.taskSupport``,
``tasks/get``, ``tasks/result``, ``tasks/list``, ``tasks/cancel``, status notifications),
the 2026-07-28 tasks extension from the same tools, and each revision's answers
carrying only that revision's fields."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import msgspec
import pytest
from typing_extensions import override

from mcpbind._client.client import Client
from mcpbind._core import lifecycle
from mcpbind._core.jsonrpc import INVALID_PARAMS, METHOD_NOT_FOUND, McpError
from mcpbind._extensions.tasks.serving import EXTENSION_ID, TASKS_GET, GetTaskParams, Tasks
from mcpbind.app import App, Context
from mcpbind.methods import MethodSpec, RequestContext
from mcpbind_protocol import v2024_11_05 as old
from mcpbind_protocol import v2025_11_25 as mcp
from mcpbind_protocol import v2026_07_28 as modern

RELATED = "io.modelcontextprotocol/related-task"


def tasks_app() -> tuple[App[Any], asyncio.Event]:
    release = asyncio.Event()
    app = App("tasks", extensions=[Tasks()])

    @app.tool(task_support="optional")
    async def export(rows: int, ctx: Context) -> str:
        await release.wait()
        return f"exported {rows} rows"

    @app.tool(task_support="required")
    async def migrate() -> str:
        return "migrated"

    @app.tool()
    def quick() -> str:
        return "done"

    return app, release


class StatusWatcher(mcp.ClientHandlers):
    def __init__(self) -> None:
        self.statuses: list[str] = []

    @override
    async def on_task_status(self, params: Any, ctx: RequestContext) -> None:
        self.statuses.append(params.status)


def test_2025_11_25_declares_tasks_and_each_tools_task_support() -> None:
    app, _ = tasks_app()

    async def main() -> None:
        async with app.test_client(protocol_version="2025-11-25") as session:
            declared = msgspec.to_builtins(session.server_capabilities)
            assert declared["tasks"] == {
                "list": {},
                "cancel": {},
                "requests": {"tools": {"call": {}}},
            }
            tools = {
                t.name: msgspec.to_builtins(t)
                for t in (await mcp.ClientStub(session).list_tools()).tools
            }
            assert tools["export"]["execution"] == {"taskSupport": "optional"}
            assert tools["migrate"]["execution"] == {"taskSupport": "required"}
            assert "execution" not in tools["quick"]
        async with app.test_client(protocol_version="2024-11-05") as session:
            assert "tasks" not in msgspec.to_builtins(session.server_capabilities)
            listed = msgspec.to_builtins(await old.ClientStub(session).list_tools())
            assert all("execution" not in tool for tool in listed["tools"])

    asyncio.run(main())


def test_a_task_runs_in_the_background_and_its_result_waits_for_the_end() -> None:
    """2025-11-25 tasks: "Receivers that accept a task-augmented request MUST return a
    `CreateTaskResult` as the response"; for a task in a non-terminal status, "it MUST
    block the response until the task reaches a terminal status"; "The `tasks/result`
    operation MUST include this metadata [io.modelcontextprotocol/related-task] in its
    response"."""
    app, release = tasks_app()

    async def main() -> None:
        watcher = StatusWatcher()
        async with app.test_client(protocol_version="2025-11-25", handlers=watcher) as session:
            client = mcp.ClientStub(session)
            created = await client.call_tool_as_task(
                "export", arguments={"rows": 3}, task=mcp.TaskMetadata(ttl=60_000)
            )
            task_id = created.task.task_id
            assert created.task.status == "working" and created.task.ttl == 60_000
            assert (await client.get_task(task_id)).status == "working"
            listed = await client.list_tasks()
            assert [t.task_id for t in listed.tasks] == [task_id]
            waiting = asyncio.ensure_future(client.call_tool_task_result(task_id))
            await asyncio.sleep(0.05)
            assert not waiting.done()
            release.set()
            result = await waiting
            assert result.content[0].text == "exported 3 rows"
            assert result.meta[RELATED] == {"taskId": task_id}
            assert "resultType" not in msgspec.to_builtins(result)
            assert (await client.get_task(task_id)).status == "completed"
            await asyncio.sleep(0.05)
            assert watcher.statuses == ["completed"]

    asyncio.run(main())


def test_a_cancelled_task_stays_cancelled_and_its_result_is_an_error() -> None:
    """2025-11-25 tasks: "Receivers MUST reject cancellation requests for tasks already
    in a terminal status (`completed`, `failed`, or `cancelled`) with error code `-32602`
    (Invalid params)", and "MUST transition the task to `cancelled` status before
    sending the response"."""
    app, _ = tasks_app()

    async def main() -> None:
        async with app.test_client(protocol_version="2025-11-25") as session:
            client = mcp.ClientStub(session)
            created = await client.call_tool_as_task("export", arguments={"rows": 1})
            task_id = created.task.task_id
            cancelled = await client.cancel_task(task_id)
            assert cancelled.status == "cancelled"
            with pytest.raises(McpError) as again:
                await client.cancel_task(task_id)
            assert again.value.code == INVALID_PARAMS
            with pytest.raises(McpError) as outcome:
                await client.call_tool_task_result(task_id)
            assert outcome.value.data == {RELATED: {"taskId": task_id}}

    asyncio.run(main())


def test_task_support_is_enforced_with_method_not_found() -> None:
    """2025-11-25 tasks: "If `execution.taskSupport` is `"required"`, clients MUST invoke
    the tool as a task. Servers MUST return a `-32601` (Method not found) error if a
    client does not attempt to do so"; if it "is not present or `"forbidden"`, clients
    MUST NOT attempt to invoke the tool as a task. Servers SHOULD return a `-32601`
    (Method not found) error if a client attempts to do so"."""
    app, _ = tasks_app()

    async def main() -> None:
        async with app.test_client(protocol_version="2025-11-25") as session:
            client = mcp.ClientStub(session)
            with pytest.raises(McpError) as required:
                await client.call_tool("migrate", arguments={})
            assert required.value.code == METHOD_NOT_FOUND
            with pytest.raises(McpError) as forbidden:
                await client.call_tool_as_task("quick", arguments={})
            assert forbidden.value.code == METHOD_NOT_FOUND
            plain = await client.call_tool("quick", arguments={})
            assert plain.content[0].text == "done"
            created = await client.call_tool_as_task("migrate", arguments={})
            assert (await client.call_tool_task_result(created.task.task_id)).content[
                0
            ].text == "migrated"

    asyncio.run(main())


def test_a_sessions_tasks_are_its_own() -> None:
    app, release = tasks_app()
    release.set()

    async def main() -> None:
        async with app.test_client(protocol_version="2025-11-25") as one:
            created = await mcp.ClientStub(one).call_tool_as_task("export", arguments={"rows": 2})
            async with app.test_client(protocol_version="2025-11-25") as two:
                other = mcp.ClientStub(two)
                assert (await other.list_tasks()).tasks == []
                with pytest.raises(McpError) as unknown:
                    await other.get_task(created.task.task_id)
                assert unknown.value.code == INVALID_PARAMS

    asyncio.run(main())


_CALL_AS_TASK: MethodSpec[Any, Any] = MethodSpec(
    method="tools/call", direction="client_to_server", kind="request",
    params=modern.CallToolRequestParams, result=dict[str, Any], params_required=True, handler="call_tool",
)  # fmt: skip


def test_the_same_tool_is_a_task_of_the_2026_07_28_extension() -> None:
    app, release = tasks_app()
    release.set()

    async def main() -> None:
        async with app.test_client(protocol_version="2026-07-28") as session:
            result = await modern.ClientStub(session).call_tool("export", arguments={"rows": 4})
            assert result.content[0].text == "exported 4 rows"  # no extension: in place
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
            assert msgspec.to_builtins(got.result)["content"] == [
                {"type": "text", "text": "exported 5 rows"}
            ]

    asyncio.run(main())


def test_before_2025_11_25_a_task_capable_tool_runs_in_place() -> None:
    app, release = tasks_app()
    release.set()

    async def main() -> None:
        for version in ("2024-11-05", "2025-06-18"):
            async with app.test_client(protocol_version=version) as session:
                stub = lifecycle.revision(version).package.ClientStub(session)
                assert (await stub.call_tool("export", arguments={"rows": 1})).content[
                    0
                ].text == "exported 1 rows"

    asyncio.run(main())


def test_a_tasks_function_reads_the_headers_of_the_post_that_started_it() -> None:
    """A task outlives its request's POST: its function, run in the background,
    still reads that POST's headers (``ctx.headers``, from ``ctx.extra``)."""
    from support.http_servers import serving

    from mcpbind._transports.http.client.streamable import connect_http

    app = App("task-headers")
    release = threading.Event()  # the server runs in a thread of its own

    @app.tool(task_support="optional")
    async def tenant(ctx: Context) -> str:
        while not release.is_set():  # answered first: the POST is over when this reads
            await asyncio.sleep(0.01)
        return "none" if ctx.headers is None else ctx.headers.get("x-tenant", "?")

    async def main(url: str) -> None:
        client = Client(name="t", version="0", protocol_version="2025-11-25")
        async with connect_http(client, url, headers={"x-tenant": "acme"}) as session:
            stub = mcp.ClientStub(session)
            created = await stub.call_tool_as_task(
                "tenant", arguments={}, task=mcp.TaskMetadata(ttl=60_000)
            )
            release.set()
            result = await stub.call_tool_task_result(created.task.task_id)
            assert result.content[0].text == "acme"

    with serving(app.asgi()) as served:
        asyncio.run(asyncio.wait_for(main(served.url()), 60))
