"""A small, correct MCP 2025-11-25 client: it must type-check under mypy --strict.

``demo()`` also runs (see tests/protocol/test_methods_typecheck.py), against a fake
caller that answers from canned JSON.
"""

from __future__ import annotations

from typing import Any, TypeVar, cast

from mcpbind_protocol.v2025_11_25 import (
    CallToolResult,
    ClientStub,
    ElicitResult,
    ListTasksResult,
    TextContent,
    Tool,
)
from mcpbind.codec import convert
from mcpbind.methods import Caller, MethodSpec, ProgressCallback

P = TypeVar("P")
R = TypeVar("R")


class FakeCaller:
    """Answers each request with a canned result, decoded as the method's result type."""

    def __init__(self, answers: dict[str, list[Any]]) -> None:
        self.answers = answers
        self.sent: list[tuple[str, Any]] = []

    async def request(
        self,
        spec: MethodSpec[P, R],
        params: P | None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> R:
        self.sent.append((spec.method, params))
        return cast(R, convert(self.answers[spec.method].pop(0), spec.result))

    async def notify(self, spec: MethodSpec[P, None], params: P | None) -> None:
        self.sent.append((spec.method, params))


async def call_echo(stub: ClientStub) -> str:
    result: CallToolResult = await stub.call_tool("echo", arguments={"text": "hi"}, timeout=5.0)
    first = result.content[0]
    return first.text if isinstance(first, TextContent) else ""


async def tool_names(stub: ClientStub) -> list[str]:
    names = []
    async for tool in stub.iter_tools():
        checked: Tool = tool
        names.append(checked.name)
    return names


async def task_count(stub: ClientStub) -> int:
    page: ListTasksResult = await stub.list_tasks()
    return len(page.tasks)


def accept() -> ElicitResult:
    return ElicitResult(action="accept", content={"name": "x", "count": 2.5})


async def demo() -> tuple[str, list[str], int, list[str]]:
    tool = {"name": "echo", "inputSchema": {"type": "object"}}
    fake = FakeCaller(
        {
            "tools/call": [{"content": [{"type": "text", "text": "hi"}]}],
            "tools/list": [{"tools": [tool], "nextCursor": "2"}, {"tools": [{**tool, "name": "add"}]}],
            "tasks/list": [{"tasks": []}],
        }
    )
    caller: Caller = fake
    stub = ClientStub(caller)
    await stub.notify_roots_list_changed()
    return await call_echo(stub), await tool_names(stub), await task_count(stub), [m for m, _ in fake.sent]
