"""Task-augmented tool calls (2025-11-25): the call answers at once with a
task; its status is shown while ``tasks/result`` waits for the outcome (and
brings the server's questions, such as an elicitation, along the way)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from mcp_protocol import v2025_11_25

from ..client import ClientSession
from .output import Terminal

TASK_REVISIONS = ("2025-11-25",)
"""The revisions whose tool calls can run as tasks from mcpx."""
DEFAULT_POLL = 1.0
"""Seconds between status checks when the server suggests none."""
TERMINAL_STATES = ("completed", "failed", "cancelled")


def task_support(tool: Any) -> str:
    """``forbidden``, ``optional`` or ``required``: what a listed tool says."""
    execution = getattr(tool, "execution", None)
    support = getattr(execution, "task_support", None)
    return support if isinstance(support, str) else "forbidden"


async def call_as_task(
    session: ClientSession, name: str, arguments: dict[str, Any], terminal: Terminal
) -> Any:
    """Call ``name`` as a task and return its CallToolResult."""
    stub = v2025_11_25.ClientStub(session)
    created = await stub.call_tool_as_task(name, arguments=arguments, on_progress=terminal.progress)
    task = created.task
    terminal.task_status(task.task_id, task.status, _message(task))
    outcome = asyncio.get_running_loop().create_task(stub.call_tool_task_result(task.task_id))
    try:
        await _watch(stub, task, outcome, terminal)
        return await outcome
    finally:
        if not outcome.done():
            outcome.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await outcome
            with contextlib.suppress(Exception):  # the user gave up: the task should stop too
                await stub.cancel_task(task.task_id, timeout=5)
        terminal.done()


async def _watch(
    stub: v2025_11_25.ClientStub, task: Any, outcome: asyncio.Task[Any], terminal: Terminal
) -> None:
    """Show the task's status until the outcome is in."""
    shown = (task.status, _message(task))
    interval = _interval(task)
    while not outcome.done():
        await asyncio.wait([outcome], timeout=interval)
        if outcome.done():
            return
        current = await stub.get_task(task.task_id)
        status = (str(current.status), _message(current))
        if status != shown:
            shown = status
            terminal.task_status(task.task_id, *status)
        if status[0] in TERMINAL_STATES:
            return
        interval = _interval(current)


def _message(task: Any) -> str | None:
    message = getattr(task, "status_message", None)
    return message if isinstance(message, str) else None


def _interval(task: Any) -> float:
    poll = getattr(task, "poll_interval", None)
    return poll / 1000 if isinstance(poll, int) and poll > 0 else DEFAULT_POLL
