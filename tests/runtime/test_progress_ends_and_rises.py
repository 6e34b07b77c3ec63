"""Progress notifications stop with the response and never go backwards, whatever
reports them (the handler, or a task it left behind); over stdio (raw lines) and in
process (our client), at every revision with progress."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import pytest
from support.audit_server import app as audit_app
from support.peers import SUPPORT, run
from support.rawstdio import RawServer
from support.transports import RecordingTransport

from mcpbind._client.client import Client, connect_stdio
from mcpbind._core import lifecycle
from mcpbind._transports.memory import memory_pair
from mcpbind._transports.stdio import StdioServerParameters
from mcpbind_protocol import v2025_11_25

AUDIT_SERVER = [sys.executable, str(SUPPORT / "audit_server.py")]
HANDSHAKE = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
}


async def _collect_until(wire: RawServer, request_id: Any, into: list[Any]) -> dict[str, Any]:
    while True:
        message = await wire.receive()
        if message.get("method") == "notifications/progress":
            into.append(message["params"])
        elif message.get("id") == request_id and "method" not in message:
            return message


@pytest.mark.parametrize("version", HANDSHAKE + ("2026-07-28",))
def test_stdio_progress_stops_at_the_response_and_only_rises(version: str) -> None:
    """The `progress` value **MUST** increase with each notification, even if the total
    is unknown. Progress notifications **MUST** only reference tokens that: Were provided
    in an active request; Are associated with an in-progress operation.
    (basic/utilities/progress, 2025-03-26 to 2025-11-25; basic/patterns/progress,
    2026-07-28; 2024-11-05 asks the same of tokens "associated with an in-progress
    operation")"""

    async def scenario() -> None:
        wire = await RawServer.start(AUDIT_SERVER)
        try:
            meta: dict[str, Any] = {"progressToken": "p-1"}
            if version in HANDSHAKE:
                await wire.initialize(version)
            else:
                meta.update(MODERN_META)
            seen: list[Any] = []
            params = {"name": "late_progress", "arguments": {}, "_meta": meta}
            await wire.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
            answer = await _collect_until(wire, 1, seen)
            assert answer["result"]["content"][0]["text"] == "returned"
            assert [p["progress"] for p in seen] == [5, 6], seen
            release: dict[str, Any] = {"name": "release", "arguments": {}}
            if version not in HANDSHAKE:
                release["_meta"] = MODERN_META
            await wire.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": release})
            after: list[Any] = []
            released = await _collect_until(wire, 2, after)
            assert released["result"]["content"][0]["text"] == "released"
            assert after == [], after  # the late report of 7 never went out
        finally:
            await wire.close()

    run(scenario())


@pytest.mark.parametrize("version", HANDSHAKE + ("2026-07-28",))
def test_in_process_progress_stops_at_the_response_and_only_rises(version: str) -> None:
    """The `progress` value **MUST** increase with each notification, even if the total
    is unknown. Progress notifications **MUST** only reference tokens that: Were provided
    in an active request; Are associated with an in-progress operation.
    (basic/utilities/progress, 2025-11-25; basic/patterns/progress, 2026-07-28)"""

    async def scenario() -> None:
        reported: list[float] = []

        def on_progress(value: float, total: float | None, message: str | None) -> None:
            reported.append(value)

        server_end, client_end = memory_pair()
        wire = RecordingTransport(server_end)
        serving = asyncio.get_running_loop().create_task(audit_app.server().serve(wire))
        client = Client(name="t", version="0", protocol_version=version)
        stub: Any = lifecycle.revision(version).package.ClientStub
        session = await client.connect(client_end)
        try:
            result = await stub(session).call_tool("late_progress", on_progress=on_progress)
            assert result.content[0].text == "returned"
            released = await stub(session).call_tool("release")
            assert released.content[0].text == "released"
        finally:
            await session.close()
            await client_end.close()
            await serving
        sent = [
            m["params"]["progress"]
            for m in wire.sent_messages()
            if m.get("method") == "notifications/progress"
        ]
        assert sent == [5, 6] and reported == [5, 6], (sent, reported)

    run(scenario())


TASK_PROGRESS_SERVER = [sys.executable, str(SUPPORT / "task_progress_server.py")]


def test_a_tasks_progress_goes_on_after_its_create_task_result_and_stops_at_its_end() -> None:
    """2025-11-25 progress: "For task-augmented requests, the `progressToken` provided in
    the original request **MUST** continue to be used for progress notifications
    throughout the task's lifetime, even after the `CreateTaskResult` has been returned",
    and "Progress notifications for tasks **MUST** stop after the task reaches a terminal
    status (`completed`, `failed`, or `cancelled`)"."""

    async def scenario() -> None:
        wire = await RawServer.start(TASK_PROGRESS_SERVER)
        try:
            await wire.initialize("2025-11-25")
            seen: list[Any] = []
            params = {"name": "export", "arguments": {}, "task": {}, "_meta": {"progressToken": 9}}
            await wire.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
            created = await _collect_until(wire, 1, seen)
            task_id = created["result"]["task"]["taskId"]
            go = {"name": "go", "arguments": {}}
            await wire.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": go})
            await _collect_until(wire, 2, seen)
            result = {"taskId": task_id}
            await wire.send({"jsonrpc": "2.0", "id": 3, "method": "tasks/result", "params": result})
            finished = await _collect_until(wire, 3, seen)
            assert finished["result"]["content"][0]["text"] == "exported"
            assert [(p["progressToken"], p["progress"]) for p in seen] == [(9, 1), (9, 2)], seen
            after: list[Any] = []
            late = {"name": "after", "arguments": {}}
            await wire.send({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": late})
            await _collect_until(wire, 4, after)
            assert after == [], after  # reported after the task completed: never sent
        finally:
            await wire.close()

    run(scenario())


def test_a_client_follows_a_tasks_progress_after_its_create_task_result() -> None:
    """2025-11-25 tasks: "Task-augmented requests support progress notifications as
    defined in the progress specification. The `progressToken` provided in the
    initial request remains valid throughout the task lifetime." The client keeps
    the token while ``follow_progress`` lasts: the report made after the
    CreateTaskResult reaches the callback."""

    async def scenario() -> None:
        reported: list[float] = []

        def on_progress(value: float, total: float | None, message: str | None) -> None:
            reported.append(value)

        client = Client(name="t", version="0", protocol_version="2025-11-25")
        server = StdioServerParameters(command=sys.executable, args=TASK_PROGRESS_SERVER[1:])
        async with connect_stdio(client, server) as session:
            stub = v2025_11_25.ClientStub(session)
            token = session.next_id()
            with session.follow_progress(token, on_progress):
                created = await session.request(
                    v2025_11_25.methods.TOOLS_CALL_AS_TASK,
                    v2025_11_25.CallToolRequestParams(
                        name="export", task=v2025_11_25.TaskMetadata()
                    ),
                    on_progress=on_progress,
                    request_id=token,
                )
                await stub.call_tool("go")
                result = await stub.call_tool_task_result(created.task.task_id)
                assert result.content[0].text == "exported"
            assert reported == [1, 2], reported

    run(scenario())
