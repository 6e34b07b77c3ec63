"""The tasks extension (io.modelcontextprotocol/tasks) is generated from its schema.

``schema/extensions/tasks.json`` is the source of ``mcpbind_protocol.ext_tasks``:
one type per definition, fields sent in the order the schema lists them, one
method spec per request of its ``ClientRequest`` union, each needing the
extension, and the runtime's ``mcpbind._extensions.tasks.serving`` speaking with exactly
those. The generated client stub drives a task of a real server.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import msgspec
from conftest import REPO

import mcpbind_protocol
from mcpbind._client.client import Client
from mcpbind._extensions.tasks import serving as tasks
from mcpbind._extensions.tasks.serving import TaskContext, Tasks
from mcpbind.app import App, Context
from mcpbind.methods import MethodSpec
from mcpbind_protocol import ext_tasks
from mcpbind_protocol import v2026_07_28 as modern

FRAGMENT = json.loads((REPO / "schema" / "extensions" / "tasks.json").read_text())
DEFS: dict[str, Any] = FRAGMENT["$defs"]


def _properties(name: str) -> list[str]:
    """A definition's properties in the order sent: those of its allOf parts first."""
    node = DEFS[name]
    inherited = [
        key for part in node.get("allOf", []) for key in _properties(part["$ref"].rsplit("/", 1)[1])
    ]
    return inherited + [key for key in node.get("properties", {}) if key not in inherited]


def test_one_type_per_definition_of_the_fragment() -> None:
    assert sorted(ext_tasks.DEFINITIONS) == sorted(DEFS)
    assert ext_tasks.EXTENSION_ID == FRAGMENT["x-mcp-extension"]["id"] == tasks.EXTENSION_ID
    assert ext_tasks.PROTOCOL_REVISION == FRAGMENT["x-mcp-extension"]["revision"]
    assert mcpbind_protocol.EXTENSIONS[ext_tasks.EXTENSION_ID] == "mcpbind_protocol.ext_tasks"
    for name in DEFS:
        assert getattr(ext_tasks, name) is getattr(ext_tasks.types, name)


def test_fields_are_sent_in_the_order_the_fragment_lists_them() -> None:
    """The runtime has always sent a task's fields in this order; generating
    the types keeps the bytes on the wire as they were."""
    for name, node in DEFS.items():
        if "properties" not in node:
            continue  # a union, an enum, or another name for a definition
        info = msgspec.inspect.type_info(getattr(ext_tasks, name))
        assert isinstance(info, msgspec.inspect.StructType)
        sent = [f.encode_name for f in info.fields]
        listed = _properties(name)
        if info.tag_field is not None:  # msgspec sends a message's tag (its method) first
            sent.insert(0, info.tag_field)
            listed = [info.tag_field, *(key for key in listed if key != info.tag_field)]
        assert sent == listed, name
    task = ext_tasks.CreateTaskResult(
        task_id="t", status="working", created_at="a", last_updated_at="b", ttl_ms=None
    )
    assert msgspec.json.encode(task) == (
        b'{"taskId":"t","status":"working","createdAt":"a","lastUpdatedAt":"b",'
        b'"ttlMs":null,"resultType":"task"}'
    )


def test_every_request_of_the_extension_needs_it() -> None:
    requests = {
        DEFS[arm["$ref"].rsplit("/", 1)[1]]["properties"]["method"]["const"]
        for arm in DEFS["ClientRequest"]["anyOf"]
    }
    table = ext_tasks.methods.CLIENT_REQUESTS
    assert set(table) == set(ext_tasks.methods.METHODS) == requests
    for spec in table.values():
        assert isinstance(spec, MethodSpec)
        assert spec.capability == ("extensions", ext_tasks.EXTENSION_ID)
        assert spec.direction == "client_to_server" and spec.params_required
        assert callable(getattr(ext_tasks.ClientStub, spec.handler))
        assert callable(getattr(ext_tasks.ServerHandlers, spec.handler))
    # The runtime routes exactly the generated specs.
    routes = Tasks().routes()
    assert {method: spec for method, (spec, _) in routes.items()} == table
    assert tasks.GetTaskResult is ext_tasks.GetTaskResult and tasks.TaskAck is ext_tasks.TaskAck


def test_the_generated_stub_drives_a_task() -> None:
    gate = asyncio.Event()
    extension = Tasks(tools={"ask": "optional", "wait": "optional"})
    app = App("tasks", extensions=[extension])

    @app.tool()
    async def ask(ctx: Context) -> modern.CallToolResult:
        async def work(task: TaskContext) -> modern.CallToolResult:
            roots = await task.list_roots(key="roots")
            return modern.CallToolResult(content=[modern.TextContent(text=f"{len(roots.roots)}")])

        return await extension.start(ctx.request_context, work)

    @app.tool()
    async def wait(ctx: Context) -> modern.CallToolResult:
        async def work(task: TaskContext) -> modern.CallToolResult:
            await gate.wait()
            return modern.CallToolResult(content=[])

        return await extension.start(ctx.request_context, work)

    as_task: MethodSpec[Any, Any] = MethodSpec(
        method="tools/call", direction="client_to_server", kind="request",
        params=modern.CallToolRequestParams, result=ext_tasks.CreateTaskResult,
        params_required=True, handler="call_tool",
    )  # fmt: skip
    client = Client(
        name="c",
        version="1",
        capabilities={"extensions": {ext_tasks.EXTENSION_ID: {}}, "roots": {}},
    )

    async def poll(stub: ext_tasks.ClientStub, task_id: str, status: str) -> Any:
        for _ in range(500):
            got = await stub.get_task(task_id)
            if got.status == status:
                return got
            await asyncio.sleep(0.01)
        raise AssertionError(f"task never {status}: {got}")

    async def main() -> None:
        async with app.test_client(client=client) as session:
            stub = ext_tasks.ClientStub(session)
            created = await session.request(as_task, modern.CallToolRequestParams(name="ask"))
            assert isinstance(created, ext_tasks.CreateTaskResult)
            waiting = await poll(stub, created.task_id, "input_required")
            assert isinstance(waiting, ext_tasks.GetTaskResult)
            assert list(waiting.input_requests) == ["roots"]
            ack = await stub.update_task(
                created.task_id, {"roots": {"roots": [{"uri": "file:///a"}]}}
            )
            assert isinstance(ack, ext_tasks.TaskAck)
            done = await poll(stub, created.task_id, "completed")
            assert isinstance(done.result, modern.CallToolResult)
            assert msgspec.to_builtins(done.result.content) == [{"type": "text", "text": "1"}]

            running = await session.request(as_task, modern.CallToolRequestParams(name="wait"))
            assert isinstance(await stub.cancel_task(running.task_id), ext_tasks.TaskAck)
            assert (await stub.get_task(running.task_id)).status == "cancelled"

    asyncio.run(main())
