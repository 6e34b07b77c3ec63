"""The tasks extension (io.modelcontextprotocol/tasks) on a real Server.

Each test serves a :class:`~mcpbind._server.server.Server` with the extension over
an in-memory transport and talks 2026-07-28 JSON-RPC to it as bytes, so what
is checked is exactly what a client sees on the wire: task creation, polling
with inlined results and errors, input requests answered by tasks/update
(also in parts), cancellation, capability gating, TTL, and that handlers
written against the generated signature type-check without casts.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import os
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO
from support.peers import run
from support.transports import MemoryTransport, memory_pair
from typing_extensions import override

from mcpbind._core.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS, McpError
from mcpbind._extensions.tasks.serving import (
    EXTENSION_ID,
    TaskContext,
    Tasks,
    client_supports_tasks,
)
from mcpbind._server.server import Server
from mcpbind.codec import UNSET
from mcpbind.methods import RequestContext
from mcpbind_protocol import v2026_07_28 as mcp

VERSION = "2026-07-28"
WITH_TASKS: dict[str, Any] = {"extensions": {EXTENSION_ID: {}}, "elicitation": {}}
WITHOUT_TASKS: dict[str, Any] = {"elicitation": {}}
MISSING_TASKS = {"requiredCapabilities": {"extensions": {EXTENSION_ID: {}}}}

TERMINAL = ("completed", "failed", "cancelled")


def _text(text: str, *, is_error: bool = False) -> mcp.CallToolResult:
    content: list[mcp.ContentBlock] = [mcp.TextContent(text=text)]
    return (
        mcp.CallToolResult(content=content, is_error=True)
        if is_error
        else mcp.CallToolResult(content=content)
    )


def _form(message: str, field: str) -> mcp.ElicitRequestFormParams:
    schema = mcp.ElicitRequestFormParamsRequestedSchema(properties={field: mcp.StringSchema()})
    return mcp.ElicitRequestFormParams(message=message, requested_schema=schema)


class Tools(mcp.ServerHandlers):
    """The conformance suite's task fixtures, instrumented."""

    def __init__(self, tasks: Tasks) -> None:
        self.tasks = tasks
        self.calls: dict[str, int] = {}
        self.gate = asyncio.Event()  # releases "blocked", "stubborn" and "abandoning"
        self.cancelled: list[str] = []
        self.outcomes: list[str] = (
            []
        )  # what "stubborn" and "abandoning" saw of their late input requests
        self.children: list[asyncio.Task[None]] = []

    @override
    async def call_tool(
        self, params: mcp.CallToolRequestParams, ctx: RequestContext
    ) -> mcp.CallToolResultResponseResult:
        arguments: dict[str, Any] = params.arguments if isinstance(params.arguments, dict) else {}
        self.calls[params.name] = self.calls.get(params.name, 0) + 1
        if params.name == "greet":
            return _text(f"Hello, {arguments.get('name', 'World')}!")

        if params.name == "blocked":

            async def blocked(task: TaskContext) -> mcp.CallToolResult:
                try:
                    await self.gate.wait()
                except asyncio.CancelledError:
                    self.cancelled.append(task.task_id or "")
                    raise
                return _text("released")

            return await self.tasks.start(ctx, blocked)

        if params.name == "stubborn":

            async def survive_cancel(task: TaskContext) -> mcp.CallToolResult:
                with contextlib.suppress(asyncio.CancelledError):
                    await self.gate.wait()
                try:
                    answer = await task.elicit(_form("Still there?", "confirm"))
                except asyncio.CancelledError:
                    self.outcomes.append("refused")
                    raise
                self.outcomes.append("answered")
                return _text(f"answer: {answer.action}")

            return await self.tasks.start(ctx, survive_cancel)

        if params.name == "abandoning":

            async def leave_a_question(task: TaskContext) -> mcp.CallToolResult:
                async def ask() -> None:
                    try:
                        await task.elicit(_form("Anyone?", "name"))
                    except asyncio.CancelledError:
                        self.outcomes.append("dropped")
                        raise

                self.children.append(asyncio.get_running_loop().create_task(ask()))
                await self.gate.wait()
                return _text("done without waiting")

            return await self.tasks.start(ctx, leave_a_question)

        if params.name == "quick":

            async def quick(task: TaskContext) -> mcp.CallToolResult:
                return _text(f"quick, task {task.task_id}")

            return await self.tasks.start(ctx, quick)

        if params.name == "failing_job":

            async def tool_error(task: TaskContext) -> mcp.CallToolResult:
                return _text("the job failed", is_error=True)

            return await self.tasks.start(ctx, tool_error)

        if params.name == "protocol_error_job":

            async def protocol_error(task: TaskContext) -> mcp.CallToolResult:
                raise McpError(INTERNAL_ERROR, "the job crashed", {"stage": 2})

            return await self.tasks.start(ctx, protocol_error)

        if params.name == "crashing_job":

            async def crash(task: TaskContext) -> mcp.CallToolResult:
                raise RuntimeError("secret internals")

            return await self.tasks.start(ctx, crash)

        if params.name == "confirm_delete":

            async def confirm(task: TaskContext) -> mcp.CallToolResult:
                task.set_status_message("waiting for confirmation")
                answer = await task.elicit(_form("Delete it?", "confirm"))
                return _text(f"answer: {answer.action} {answer.content}")

            return await self.tasks.start(ctx, confirm)

        if params.name == "multi_input":

            async def ask_twice(task: TaskContext) -> mcp.CallToolResult:
                first, second = await asyncio.gather(
                    task.elicit(_form("Name?", "name")), task.elicit(_form("Colour?", "colour"))
                )
                return _text(f"{first.content} {second.content}")

            return await self.tasks.start(ctx, ask_twice)

        if params.name == "test_tool_with_task":
            responses = params.input_responses if isinstance(params.input_responses, dict) else {}
            answer = responses.get("user_name")
            if not isinstance(answer, mcp.ElicitResult):
                request = mcp.ElicitRequest(params=_form("What is your name?", "name"))
                return mcp.InputRequiredResult(
                    input_requests={"user_name": request}, request_state="asked"
                )
            name = answer.content.get("name") if isinstance(answer.content, dict) else None

            async def greet_later(task: TaskContext) -> mcp.CallToolResult:
                return _text(f"Hello, {name}!")

            return await self.tasks.start(ctx, greet_later)

        return _text(f"unknown tool {params.name}", is_error=True)


def make_tasks(**options: Any) -> Tasks:
    return Tasks(
        tools={"failing_job": "required", "test_tool_with_task": "required", "blocked": "optional"},
        **options,
    )


class Wire:
    """A 2026-07-28 client as bytes: every request carries its own ``_meta``."""

    def __init__(self, end: MemoryTransport) -> None:
        self.end = end
        self.next_id = 0

    async def call(
        self, method: str, params: dict[str, Any] | None = None, caps: dict[str, Any] = WITH_TASKS
    ) -> dict[str, Any]:
        """The whole response: ``result`` or ``error``."""
        self.next_id += 1
        body = dict(params or {})
        body["_meta"] = {
            "io.modelcontextprotocol/protocolVersion": VERSION,
            "io.modelcontextprotocol/clientCapabilities": caps,
            **body.get("_meta", {}),
        }
        self.end.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": body})
        while True:
            message = await self.end.receive()
            assert message is not None, "the server closed the connection"
            if message.get("id") == self.next_id:
                return message

    async def result(
        self, method: str, params: dict[str, Any] | None = None, caps: dict[str, Any] = WITH_TASKS
    ) -> dict[str, Any]:
        response = await self.call(method, params, caps)
        assert "result" in response, response
        result: dict[str, Any] = response["result"]
        return result

    async def error(
        self, method: str, params: dict[str, Any] | None = None, caps: dict[str, Any] = WITH_TASKS
    ) -> dict[str, Any]:
        response = await self.call(method, params, caps)
        assert "error" in response, response
        error: dict[str, Any] = response["error"]
        return error

    async def until(self, task_id: str, statuses: tuple[str, ...]) -> dict[str, Any]:
        """Poll tasks/get until the task is in one of ``statuses``."""
        for _ in range(1000):
            task = await self.result("tasks/get", {"taskId": task_id})
            if task["status"] in statuses:
                return task
            await asyncio.sleep(0.01)
        raise AssertionError(f"task {task_id} never reached {statuses}: {task}")


class Served:
    def __init__(self, server: Server, tools: Tools) -> None:
        self.server = server
        self.tools = tools
        self._serving: list[tuple[MemoryTransport, asyncio.Task[None]]] = []

    def connect(self) -> Wire:
        client, server_end = memory_pair("client", "server")
        self._serving.append(
            (client, asyncio.get_running_loop().create_task(self.server.serve(server_end)))
        )
        return Wire(client)

    async def close(self) -> None:
        for client, serving in self._serving:
            await client.close()
            await asyncio.wait_for(serving, 10)


@contextlib.asynccontextmanager
async def serving(*, extensions: bool = True, **options: Any) -> AsyncIterator[Served]:
    tasks = make_tasks(**options)
    tools = Tools(tasks)
    server = Server(
        tools, name="tasks-test", version="1.0.0", extensions=[tasks] if extensions else []
    )
    running = Served(server, tools)
    try:
        yield running
    finally:
        tools.gate.set()
        await running.close()


Scenario = Callable[..., Awaitable[None]]


def on_server(**options: Any) -> Callable[[Scenario], Callable[..., None]]:
    """Run an ``async def test(served, wire, ...)`` against a fresh server, on a fresh loop."""

    def decorate(test: Scenario) -> Callable[..., None]:
        @functools.wraps(test)
        def sync(*args: Any, **kwargs: Any) -> None:
            async def scenario() -> None:
                async with serving(**options) as served:
                    await test(served, served.connect(), *args, **kwargs)

            run(scenario(), timeout=30)

        signature = inspect.signature(test)
        sync.__signature__ = signature.replace(parameters=list(signature.parameters.values())[2:])  # type: ignore[attr-defined]
        return sync

    return decorate


# ---------------------------------------------------------------- advertising and creation


@on_server()
async def test_discover_advertises_the_extension(served: Served, wire: Wire) -> None:
    capabilities = (await wire.result("server/discover"))["capabilities"]
    assert capabilities["extensions"][EXTENSION_ID] == {}
    assert "tasks" not in capabilities


@on_server()
async def test_sync_tool_is_never_a_task(served: Served, wire: Wire) -> None:
    result = await wire.result(
        "tools/call", {"name": "greet", "arguments": {"name": "World"}, "task": {"ttl": 60000}}
    )
    assert result["resultType"] == "complete"
    assert result["content"] == [{"type": "text", "text": "Hello, World!"}]
    assert "taskId" not in result


@on_server()
async def test_create_task_result_is_flat_and_immediately_pollable(
    served: Served, wire: Wire
) -> None:
    created = await wire.result("tools/call", {"name": "blocked"})
    assert created["resultType"] == "task"
    assert created["status"] == "working"
    for absent in (
        "task",
        "result",
        "error",
        "inputRequests",
        "requestState",
        "ttl",
        "pollInterval",
        "content",
    ):
        assert absent not in created
    assert isinstance(created["ttlMs"], int) and created["ttlMs"] > 0
    assert isinstance(created["pollIntervalMs"], int) and created["pollIntervalMs"] > 0
    assert created["createdAt"].endswith("Z") and created["lastUpdatedAt"] >= created["createdAt"]
    task = await wire.result("tasks/get", {"taskId": created["taskId"]})
    assert task["resultType"] == "complete"
    assert task["taskId"] == created["taskId"]
    assert task["status"] == "working"
    for absent in ("result", "error", "inputRequests", "requestState"):
        assert absent not in task


@on_server()
async def test_completed_task_inlines_the_tool_result(served: Served, wire: Wire) -> None:
    created = await wire.result("tools/call", {"name": "blocked"})
    served.tools.gate.set()
    task = await wire.until(created["taskId"], TERMINAL)
    assert task["status"] == "completed"
    assert task["result"]["content"] == [{"type": "text", "text": "released"}]
    assert "io.modelcontextprotocol/related-task" not in task["result"].get("_meta", {})
    assert "error" not in task and "inputRequests" not in task


@on_server()
async def test_the_work_sees_its_task_id(served: Served, wire: Wire) -> None:
    created = await wire.result("tools/call", {"name": "quick"})
    task = await wire.until(created["taskId"], TERMINAL)
    assert task["result"]["content"][0]["text"] == f"quick, task {created['taskId']}"


@on_server()
async def test_tool_error_completes_and_protocol_error_fails(served: Served, wire: Wire) -> None:
    tool_error = await wire.result("tools/call", {"name": "failing_job"})
    task = await wire.until(tool_error["taskId"], TERMINAL)
    assert task["status"] == "completed"
    assert task["result"]["isError"] is True

    protocol_error = await wire.result("tools/call", {"name": "protocol_error_job"})
    task = await wire.until(protocol_error["taskId"], TERMINAL)
    assert task["status"] == "failed"
    assert task["error"] == {
        "code": INTERNAL_ERROR,
        "message": "the job crashed",
        "data": {"stage": 2},
    }
    assert task["statusMessage"] == "the job crashed"
    assert "result" not in task


@on_server()
async def test_an_exception_fails_the_task_without_showing_it(served: Served, wire: Wire) -> None:
    created = await wire.result("tools/call", {"name": "crashing_job"})
    task = await wire.until(created["taskId"], TERMINAL)
    assert task["status"] == "failed"
    assert task["error"] == {"code": INTERNAL_ERROR, "message": "Internal error"}
    assert "secret" not in str(task)


# ---------------------------------------------------------------- cancellation


@on_server()
async def test_cancel_stops_the_work_and_settles_cancelled(served: Served, wire: Wire) -> None:
    created = await wire.result("tools/call", {"name": "blocked"})
    ack = await wire.result("tasks/cancel", {"taskId": created["taskId"]})
    assert set(ack) <= {"resultType", "_meta"} and ack["resultType"] == "complete"
    task = await wire.result("tasks/get", {"taskId": created["taskId"]})
    assert task["status"] == "cancelled"
    assert "result" not in task and "error" not in task
    for _ in range(100):
        if served.tools.cancelled:
            break
        await asyncio.sleep(0.01)
    assert served.tools.cancelled == [created["taskId"]]
    served.tools.gate.set()  # nothing left to release: the status stays
    await asyncio.sleep(0.01)
    assert (await wire.result("tasks/get", {"taskId": created["taskId"]}))["status"] == "cancelled"


@on_server()
async def test_cancel_of_a_terminal_task_is_the_same_ack(served: Served, wire: Wire) -> None:
    created = await wire.result("tools/call", {"name": "quick"})
    await wire.until(created["taskId"], TERMINAL)
    ack = await wire.result("tasks/cancel", {"taskId": created["taskId"]})
    assert set(ack) <= {"resultType", "_meta"} and ack["resultType"] == "complete"
    assert (await wire.result("tasks/get", {"taskId": created["taskId"]}))["status"] == "completed"


@on_server()
async def test_work_that_survives_cancel_cannot_reopen_the_task(served: Served, wire: Wire) -> None:
    created = await wire.result("tools/call", {"name": "stubborn"})
    await wire.result("tasks/cancel", {"taskId": created["taskId"]})
    for _ in range(100):
        if served.tools.outcomes:
            break
        await asyncio.sleep(0.01)
    assert served.tools.outcomes == ["refused"]
    task = await wire.result("tasks/get", {"taskId": created["taskId"]})
    assert task["status"] == "cancelled"
    assert "inputRequests" not in task


@on_server()
async def test_settling_drops_the_input_requests_left_pending(served: Served, wire: Wire) -> None:
    created = await wire.result("tools/call", {"name": "abandoning"})
    task = await wire.until(created["taskId"], ("input_required", *TERMINAL))
    assert task["status"] == "input_required"
    [key] = task["inputRequests"]
    served.tools.gate.set()  # the work returns while its child still waits for an answer
    task = await wire.until(created["taskId"], TERMINAL)
    assert task["status"] == "completed"
    assert "inputRequests" not in task
    done, _ = await asyncio.wait(served.tools.children, timeout=10)
    assert [child.cancelled() for child in done] == [True]
    assert served.tools.outcomes == ["dropped"]
    # A late answer is ignored and leaves the task as it was.
    await wire.result(
        "tasks/update",
        {"taskId": created["taskId"], "inputResponses": {key: {"action": "decline"}}},
    )
    assert await wire.result("tasks/get", {"taskId": created["taskId"]}) == task


# ---------------------------------------------------------------- input requests


@on_server()
async def test_input_required_then_update_resumes(served: Served, wire: Wire) -> None:
    created = await wire.result("tools/call", {"name": "confirm_delete"})
    task = await wire.until(created["taskId"], ("input_required", *TERMINAL))
    assert task["status"] == "input_required"
    assert task["statusMessage"] == "waiting for confirmation"
    [(key, request)] = task["inputRequests"].items()
    assert request["method"] == "elicitation/create"
    assert request["params"]["message"] == "Delete it?"
    ack = await wire.result(
        "tasks/update",
        {
            "taskId": created["taskId"],
            "inputResponses": {key: {"action": "accept", "content": {"confirm": "yes"}}},
        },
    )
    assert set(ack) <= {"resultType", "_meta"} and ack["resultType"] == "complete"
    task = await wire.until(created["taskId"], TERMINAL)
    assert task["status"] == "completed"
    assert task["result"]["content"][0]["text"] == "answer: accept {'confirm': 'yes'}"


@on_server()
async def test_partial_update_keeps_the_rest_pending(served: Served, wire: Wire) -> None:
    created = await wire.result("tools/call", {"name": "multi_input"})
    task_id = created["taskId"]
    for _ in range(1000):
        task = await wire.result("tasks/get", {"taskId": task_id})
        if len(task.get("inputRequests", {})) == 2:
            break
        await asyncio.sleep(0.01)
    assert task["status"] == "input_required"
    first, second = sorted(task["inputRequests"])
    assert first != second

    # Unknown keys are ignored; a known key answered is removed at once.
    ack = await wire.result(
        "tasks/update",
        {
            "taskId": task_id,
            "inputResponses": {
                first: {"action": "accept", "content": {"name": "Ada"}},
                "nope": {"x": 1},
            },
        },
    )
    assert ack["resultType"] == "complete"
    task = await wire.result("tasks/get", {"taskId": task_id})
    assert task["status"] == "input_required"
    assert list(task["inputRequests"]) == [second]

    # An answer of the wrong shape is refused and changes nothing.
    error = await wire.error(
        "tasks/update", {"taskId": task_id, "inputResponses": {second: {"action": "maybe"}}}
    )
    assert error["code"] == -32602
    assert list((await wire.result("tasks/get", {"taskId": task_id}))["inputRequests"]) == [second]

    # Answering the same key twice is harmless.
    await wire.result(
        "tasks/update", {"taskId": task_id, "inputResponses": {first: {"action": "decline"}}}
    )
    await wire.result(
        "tasks/update",
        {
            "taskId": task_id,
            "inputResponses": {second: {"action": "accept", "content": {"colour": "red"}}},
        },
    )
    task = await wire.until(task_id, TERMINAL)
    assert task["status"] == "completed"
    assert task["result"]["content"][0]["text"] == "{'name': 'Ada'} {'colour': 'red'}"


@on_server()
async def test_input_needs_the_client_capability(served: Served, wire: Wire) -> None:
    # The task was created by a request that did not declare elicitation.
    created = await wire.result(
        "tools/call", {"name": "confirm_delete"}, caps={"extensions": {EXTENSION_ID: {}}}
    )
    task = await wire.until(created["taskId"], TERMINAL)
    assert task["status"] == "failed"
    assert task["error"]["code"] == -32021
    assert task["error"]["data"] == {"requiredCapabilities": {"elicitation": {}}}


@on_server()
async def test_mrtr_round_then_task(served: Served, wire: Wire) -> None:
    first = await wire.result("tools/call", {"name": "test_tool_with_task"})
    assert first["resultType"] == "input_required"
    assert "taskId" not in first
    [key] = first["inputRequests"]
    retry: dict[str, Any] = {
        "name": "test_tool_with_task",
        "inputResponses": {key: {"action": "accept", "content": {"name": "Alice"}}},
    }
    if "requestState" in first:
        retry["requestState"] = first["requestState"]
    created = await wire.result("tools/call", retry)
    assert created["resultType"] == "task"
    assert "requestState" not in created and "inputRequests" not in created
    task = await wire.until(created["taskId"], TERMINAL)
    assert task["status"] == "completed"
    assert task["result"]["content"][0]["text"] == "Hello, Alice!"


# ---------------------------------------------------------------- gating and errors


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("tasks/get", {"taskId": "gate-test"}),
        ("tasks/update", {"taskId": "gate-test", "inputResponses": {}}),
        ("tasks/cancel", {"taskId": "gate-test"}),
    ],
)
@on_server()
async def test_task_methods_need_the_extension(
    served: Served, wire: Wire, method: str, params: dict[str, Any]
) -> None:
    error = await wire.error(method, params, caps=WITHOUT_TASKS)
    assert error["code"] == -32021
    assert error["data"] == MISSING_TASKS


@on_server()
async def test_required_tool_is_refused_before_its_handler_runs(served: Served, wire: Wire) -> None:
    error = await wire.error("tools/call", {"name": "failing_job"}, caps=WITHOUT_TASKS)
    assert error["code"] == -32021
    assert error["data"] == MISSING_TASKS
    assert "failing_job" not in served.tools.calls


@on_server()
async def test_optional_tool_runs_synchronously_without_the_extension(
    served: Served, wire: Wire
) -> None:
    result = await wire.result("tools/call", {"name": "quick"}, caps=WITHOUT_TASKS)
    assert result["resultType"] == "complete"
    assert result["content"] == [{"type": "text", "text": "quick, task None"}]
    assert "taskId" not in result


@on_server()
async def test_input_outside_a_task_needs_the_extension(served: Served, wire: Wire) -> None:
    error = await wire.error("tools/call", {"name": "confirm_delete"}, caps=WITHOUT_TASKS)
    assert error["code"] == -32021
    assert error["data"] == MISSING_TASKS


@pytest.mark.parametrize(
    ("capabilities", "supported"),
    [
        (None, False),
        (UNSET, False),
        ({}, False),
        ({"extensions": {}}, False),
        ({"extensions": {EXTENSION_ID: {}}}, True),
        ({"extensions": {EXTENSION_ID: {"x": 1}}}, True),
        (mcp.ClientCapabilities(extensions={EXTENSION_ID: {}}), True),
        (mcp.ClientCapabilities(extensions={"other/ext": {}}), False),
        (mcp.ClientCapabilities(), False),
        # Like any other capability, a null or false entry declares nothing.
        ({"extensions": {EXTENSION_ID: None}}, False),
        ({"extensions": {EXTENSION_ID: False}}, False),
    ],
)
def test_client_supports_tasks(capabilities: Any, supported: bool) -> None:
    assert client_supports_tasks(capabilities) is supported


@on_server()
async def test_per_request_opt_in(served: Served, wire: Wire) -> None:
    sync = await wire.result("tools/call", {"name": "quick"}, caps={})
    assert sync["resultType"] == "complete"
    created = await wire.result(
        "tools/call", {"name": "quick"}, caps={"extensions": {EXTENSION_ID: {}}}
    )
    assert created["resultType"] == "task"


@pytest.mark.parametrize("method", ["tasks/result", "tasks/list"])
@on_server()
async def test_removed_methods_are_not_found(served: Served, wire: Wire, method: str) -> None:
    assert (await wire.error(method, {"taskId": "x"}))["code"] == -32601


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("tasks/get", {"taskId": "no-such-task"}),
        ("tasks/update", {"taskId": "no-such-task", "inputResponses": {}}),
        ("tasks/cancel", {"taskId": "no-such-task"}),
        ("tasks/get", {}),
        ("tasks/update", {"taskId": "no-such-task"}),
    ],
)
@on_server()
async def test_unknown_task_or_bad_params(
    served: Served, wire: Wire, method: str, params: dict[str, Any]
) -> None:
    assert (await wire.error(method, params))["code"] == -32602


@on_server(bind_to_owner=False)
async def test_unbound_tasks_outlive_the_connection_that_made_them(
    served: Served, first: Wire
) -> None:
    created = await first.result("tools/call", {"name": "blocked"})
    await first.end.close()
    second = served.connect()
    served.tools.gate.set()
    task = await second.until(created["taskId"], TERMINAL)
    assert task["status"] == "completed"


@on_server()
async def test_tasks_belong_to_the_connection_that_made_them(served: Served, first: Wire) -> None:
    created = await first.result("tools/call", {"name": "blocked"})
    second = served.connect()
    error = await second.error("tasks/get", {"taskId": created["taskId"]})
    assert error == (await second.error("tasks/get", {"taskId": "never-made"})) | {
        "message": error["message"]
    }
    assert (await first.result("tasks/get", {"taskId": created["taskId"]}))["status"] == "working"


@on_server()
async def test_task_ids_are_unguessable_and_distinct(served: Served, wire: Wire) -> None:
    ids = {(await wire.result("tools/call", {"name": "quick"}))["taskId"] for _ in range(20)}
    assert len(ids) == 20
    assert all(len(task_id) >= 22 for task_id in ids)


# ---------------------------------------------------------------- TTL


@on_server(ttl_ms=300, poll_interval_ms=50)
async def test_ttl_keeps_tasks_until_it_passes_then_drops_them(served: Served, wire: Wire) -> None:
    created = await wire.result("tools/call", {"name": "blocked"})
    assert created["ttlMs"] == 300 and created["pollIntervalMs"] == 50
    assert (await wire.result("tasks/get", {"taskId": created["taskId"]}))["status"] == "working"
    await asyncio.sleep(0.45)
    assert (await wire.error("tasks/get", {"taskId": created["taskId"]}))["code"] == -32602
    # Its work went with it.
    for _ in range(100):
        if served.tools.cancelled:
            break
        await asyncio.sleep(0.01)
    assert served.tools.cancelled == [created["taskId"]]


@on_server(ttl_ms=None, poll_interval_ms=None)
async def test_unlimited_ttl_is_null_on_the_wire(served: Served, wire: Wire) -> None:
    created = await wire.result("tools/call", {"name": "quick"})
    assert created["ttlMs"] is None
    assert "pollIntervalMs" not in created


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError):
        Tasks(ttl_ms=0)
    with pytest.raises(ValueError):
        Tasks(poll_interval_ms=-5)
    with pytest.raises(ValueError):
        Tasks(max_tasks=0)
    with pytest.raises(ValueError, match="max_tasks_per_owner"):
        Tasks(max_tasks_per_owner=0)


# ---------------------------------------------------------------- capacity


class Clock:
    """A stand-in for the ``time`` module of the extension: TTLs pass when a test says so."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


@on_server(max_tasks=2)
async def test_max_tasks_forgets_finished_tasks_first_then_refuses(
    served: Served, wire: Wire
) -> None:
    waiting = await wire.result("tools/call", {"name": "confirm_delete"})
    settled = await wire.result("tools/call", {"name": "quick"})
    await wire.until(settled["taskId"], TERMINAL)
    task = await wire.until(waiting["taskId"], ("input_required", *TERMINAL))
    assert task["status"] == "input_required"

    # Full, but one kept task has finished: it makes room (and is forgotten).
    blocked = await wire.result("tools/call", {"name": "blocked"})
    assert (await wire.error("tasks/get", {"taskId": settled["taskId"]}))["code"] == INVALID_PARAMS
    # Full of running tasks: refused, and nothing else changes.
    error = await wire.error("tools/call", {"name": "quick"})
    assert error["code"] == INTERNAL_ERROR
    assert "busy" in error["message"].lower()
    # Calls that make no task are still served.
    sync = await wire.result("tools/call", {"name": "quick"}, caps=WITHOUT_TASKS)
    assert sync["resultType"] == "complete" and "taskId" not in sync

    # The tasks kept go on as if nothing happened.
    [key] = task["inputRequests"]
    await wire.result(
        "tasks/update",
        {
            "taskId": waiting["taskId"],
            "inputResponses": {key: {"action": "accept", "content": {"confirm": "yes"}}},
        },
    )
    task = await wire.until(waiting["taskId"], TERMINAL)
    assert task["status"] == "completed"
    assert (await wire.result("tasks/get", {"taskId": blocked["taskId"]}))["status"] == "working"


@on_server(max_tasks=100, max_tasks_per_owner=2)
async def test_one_owner_cannot_take_every_place(served: Served, wire: Wire) -> None:
    first = await wire.result("tools/call", {"name": "blocked"})
    await wire.result("tools/call", {"name": "blocked"})
    assert (await wire.error("tools/call", {"name": "blocked"}))["code"] == INTERNAL_ERROR
    other = served.connect()  # another owner is not held back
    assert (await other.result("tools/call", {"name": "blocked"}))["status"] == "working"
    await wire.result("tasks/cancel", {"taskId": first["taskId"]})
    # The owner's own finished task makes room for its next one.
    assert (await wire.result("tools/call", {"name": "blocked"}))["status"] == "working"


@on_server(max_tasks=1, ttl_ms=60_000)
async def test_tasks_past_their_ttl_free_their_place(
    served: Served, wire: Wire, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Clock()
    monkeypatch.setattr("mcpbind._extensions.tasks.serving.time", clock)
    first = await wire.result(
        "tools/call", {"name": "blocked"}
    )  # still running: a finished one would make room
    assert (await wire.error("tools/call", {"name": "quick"}))["code"] == INTERNAL_ERROR
    clock.now += 60.0  # the TTL is reached, not passed: the task stays
    assert (await wire.error("tools/call", {"name": "quick"}))["code"] == INTERNAL_ERROR
    clock.now += 0.001
    second = await wire.result("tools/call", {"name": "quick"})
    assert second["resultType"] == "task" and second["taskId"] != first["taskId"]
    assert (await wire.error("tasks/get", {"taskId": first["taskId"]}))["code"] == -32602


@on_server(extensions=False)
async def test_without_the_extension_installed_start_stays_synchronous(
    served: Served, wire: Wire
) -> None:
    result = await wire.result("tools/call", {"name": "quick"})
    assert result["resultType"] == "complete" and "taskId" not in result
    assert (await wire.error("tasks/get", {"taskId": "x"}))["code"] == -32601


# ---------------------------------------------------------------- typing


SAMPLE = """
from __future__ import annotations

import asyncio

from typing_extensions import override

from mcpbind_protocol import v2026_07_28 as mcp
from mcpbind.methods import RequestContext
from mcpbind._server.server import Server
from mcpbind._extensions.tasks.serving import TaskContext, Tasks

tasks = Tasks(tools={"slow": "optional"})


class Tools(mcp.ServerHandlers):
    @override
    async def call_tool(self, params: mcp.CallToolRequestParams, ctx: RequestContext) -> mcp.CallToolResultResponseResult:
        async def work(task: TaskContext) -> mcp.CallToolResult:
            answer = await task.elicit(
                mcp.ElicitRequestFormParams(
                    message="Sure?",
                    requested_schema=mcp.ElicitRequestFormParamsRequestedSchema(properties={}),
                )
            )
            task.set_status_message(f"answered {answer.action}")
            await asyncio.sleep(1)
            return mcp.CallToolResult(content=[mcp.TextContent(text=str(task.task_id))])

        return await tasks.start(ctx, work)


server = Server(Tools(), name="typed", version="1", extensions=[tasks])
"""

WRONG = """
from __future__ import annotations

from mcpbind_protocol import v2026_07_28 as mcp
from mcpbind.methods import RequestContext
from mcpbind._extensions.tasks.serving import TaskContext, Tasks

tasks = Tasks()


async def work(task: TaskContext) -> str:
    return "not a tool result"


async def call_tool(params: mcp.CallToolRequestParams, ctx: RequestContext) -> mcp.CallToolResultResponseResult:
    return await tasks.start(ctx, work)
"""


def _mypy(tmp_path: Path, source: str) -> subprocess.CompletedProcess[str]:
    module = tmp_path / "sample_tasks.py"
    module.write_text(textwrap.dedent(source))
    env = {
        **os.environ,
        "MYPYPATH": os.pathsep.join(str(REPO / p) for p in ("generated", "runtime")),
    }
    command = [
        sys.executable, "-m", "mypy", "--strict", "--config-file", str(REPO / "pyproject.toml"),
        "--cache-dir", str(tmp_path / "cache"), "--no-error-summary", "--no-color-output", str(module),
    ]  # fmt: skip
    return subprocess.run(
        command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600
    )


def test_a_task_handler_type_checks_without_casts(tmp_path: Path) -> None:
    done = _mypy(tmp_path, SAMPLE)
    assert done.returncode == 0, done.stdout + done.stderr


def test_work_must_return_a_tool_result(tmp_path: Path) -> None:
    done = _mypy(tmp_path, WRONG)
    assert done.returncode == 1, done.stdout + done.stderr
    [error] = done.stdout.splitlines()
    assert 'Argument 2 to "start" of "Tasks"' in error and error.endswith("[arg-type]"), error
