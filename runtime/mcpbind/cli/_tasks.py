"""Task-augmented tool calls, at both revisions that have tasks.

- 2025-11-25 (tasks in the protocol): the call carries ``task`` and answers at
  once with the task; its status is shown while ``tasks/result`` waits for the
  outcome (and brings the server's questions, such as an elicitation, along
  the way). The call's progress token stays valid until the task ends, so the
  task's progress is shown too.
- 2026-07-28 (the ``io.modelcontextprotocol/tasks`` extension): the call
  declares the extension in its capabilities and the server decides whether
  it becomes a task (``resultType: "task"``). mcpx then polls ``tasks/get``,
  showing the status and its message (the extension's progress: it has no
  progress notifications for tasks), answers the task's input requests with
  ``tasks/update``, and prints the result the last ``tasks/get`` inlines.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from typing import Any

import msgspec

from mcpbind_protocol import ext_tasks, v2025_11_25
from mcpbind_protocol import v2026_07_28 as stateless

from .. import codec
from .._client.client import ClientSession
from .._core import jsonrpc, lifecycle
from .._core.jsonrpc import McpError
from ..methods import MethodSpec
from ._output import Failed, Terminal

HANDSHAKE_TASKS = "2025-11-25"
"""The handshake revision whose tool calls can run as tasks."""
EXTENSION_REVISIONS = ("2026-07-28",)
"""The revisions whose tasks are those of the extension."""
TASK_REVISIONS = (HANDSHAKE_TASKS, *EXTENSION_REVISIONS)
"""The revisions whose tool calls can run as tasks from mcpx."""
DEFAULT_POLL = 1.0
"""Seconds between status checks when the server suggests none."""
TERMINAL_STATES = ("completed", "failed", "cancelled")

CALL_TOOL_OR_TASK: MethodSpec[stateless.CallToolRequestParams, Any] = MethodSpec(
    method="tools/call",
    direction="client_to_server",
    kind="request",
    params=stateless.CallToolRequestParams,
    # What a server of the extension may answer a client that declared it.
    result=codec.discriminated_union(
        "CallToolOrTaskResult",
        __name__,
        "resultType",
        "complete",
        {
            "input_required": (stateless.InputRequiredResult,),
            "complete": (stateless.CallToolResult,),
            "task": (ext_tasks.CreateTaskResult,),
        },
    ),
    params_required=True,
    handler="call_tool",
    capability=("tools",),
)
"""``tools/call`` with the tasks extension declared: a result, a question first, or a task."""


def task_support(tool: Any) -> str:
    """``forbidden``, ``optional`` or ``required``: what a listed tool says (2025-11-25)."""
    execution = getattr(tool, "execution", None)
    support = getattr(execution, "task_support", None)
    return support if isinstance(support, str) else "forbidden"


def offers_tasks(session: ClientSession) -> bool:
    """Whether the server declared the tasks extension (2026-07-28)."""
    return lifecycle.has_capability(
        session.server_capabilities, ("extensions", ext_tasks.EXTENSION_ID)
    )


def needs_the_extension(error: McpError) -> bool:
    """Whether a refusal (-32021) names the tasks extension as the capability missing."""
    if error.code != jsonrpc.MISSING_REQUIRED_CLIENT_CAPABILITY:
        return False
    data = error.data if isinstance(error.data, Mapping) else {}
    required = data.get("requiredCapabilities")
    extensions = required.get("extensions") if isinstance(required, Mapping) else None
    return isinstance(extensions, Mapping) and ext_tasks.EXTENSION_ID in extensions


# ------------------------------------------------------------------ 2025-11-25


async def call_as_task(
    session: ClientSession,
    name: str,
    arguments: dict[str, Any],
    terminal: Terminal,
    meta: Mapping[str, Any] | None = None,
) -> Any:
    """Call ``name`` as a 2025-11-25 task and return its CallToolResult."""
    stub = v2025_11_25.ClientStub(session)
    params = codec.convert(
        {"name": name, "arguments": arguments, "task": {}, **({"_meta": meta} if meta else {})},
        v2025_11_25.CallToolRequestParams,
    )
    token = session.next_id()
    # The token outlives the CreateTaskResult: progress goes on until the task ends.
    with session.follow_progress(token, terminal.progress):
        created = await session.request(
            v2025_11_25.methods.TOOLS_CALL_AS_TASK,
            params,
            on_progress=terminal.progress,
            request_id=token,
        )
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


# ------------------------------------------------------------------ 2026-07-28


async def call_with_extension(
    session: ClientSession,
    name: str,
    arguments: dict[str, Any],
    terminal: Terminal,
    meta: Mapping[str, Any] | None = None,
) -> Any:
    """Call ``name`` declaring the tasks extension; the CallToolResult, whether
    the server answered it at once or through a task (followed to its end)."""
    if not offers_tasks(session):
        raise Failed(f"the server does not offer tasks (the {ext_tasks.EXTENSION_ID} extension)")
    declared = session.client.declared_capabilities()
    extensions = declared.get("extensions")
    capabilities = {
        **declared,
        "extensions": {
            **(extensions if isinstance(extensions, Mapping) else {}),
            ext_tasks.EXTENSION_ID: {},
        },
    }
    # Capabilities are per request at 2026-07-28: only these requests declare the
    # extension. A mapping (Any for the stubs' typed meta): the session adds the
    # rest of the request's envelope to it.
    task_meta: Any = {lifecycle.CAPABILITIES_KEY: capabilities}
    params = codec.convert({"name": name, "arguments": arguments}, stateless.CallToolRequestParams)
    params = msgspec.structs.replace(params, meta={**(meta or {}), **task_meta})
    try:
        answer = await session.request(CALL_TOOL_OR_TASK, params, on_progress=terminal.progress)
    finally:
        terminal.done()
    if not isinstance(answer, ext_tasks.CreateTaskResult):
        return answer  # the server ran it at once
    return await _follow(session, answer, terminal, task_meta)


async def _follow(
    session: ClientSession,
    created: ext_tasks.CreateTaskResult,
    terminal: Terminal,
    task_meta: Any,
) -> Any:
    """Poll the task to its end: status shown, input requests answered; its CallToolResult."""
    stub = ext_tasks.ClientStub(session)
    task_id = created.task_id
    shown = (str(created.status), _message(created))
    terminal.task_status(task_id, *shown)
    answered: set[str] = set()  # keys are unique over a task's life: each is answered once
    interval = _interval(created)
    ended = False
    try:
        while True:
            detail = await stub.get_task(task_id, meta=task_meta)
            status = (str(detail.status), _message(detail))
            if status != shown:
                shown = status
                terminal.task_status(task_id, *status)
            interval = _interval(detail)
            if detail.status in TERMINAL_STATES:
                ended = True
                return _outcome(task_id, detail)
            requests = detail.input_requests if isinstance(detail.input_requests, Mapping) else {}
            fresh = {key: request for key, request in requests.items() if key not in answered}
            if detail.status == "input_required" and fresh:
                terminal.pause()
                responses = await session.answer_input_requests(fresh)
                answered.update(fresh)
                await stub.update_task(task_id, responses, meta=task_meta)
                continue
            await asyncio.sleep(interval)
    finally:
        if not ended:
            with contextlib.suppress(Exception):  # the user gave up: the task should stop too
                await stub.cancel_task(task_id, meta=task_meta, timeout=5)
        terminal.done()


def _outcome(task_id: str, detail: ext_tasks.GetTaskResult) -> Any:
    if detail.status == "completed" and isinstance(detail.result, stateless.CallToolResult):
        return detail.result
    if detail.status == "failed" and isinstance(detail.error, ext_tasks.TaskError):
        error = detail.error
        raise McpError(error.code, error.message, None if error.data is codec.UNSET else error.data)
    if detail.status == "cancelled":
        raise Failed(f"task {task_id} was cancelled")
    raise Failed(f"task {task_id} ended {detail.status} without its outcome")


# ------------------------------------------------------------------ shared


def _message(task: Any) -> str | None:
    message = getattr(task, "status_message", None)
    return message if isinstance(message, str) else None


def _interval(task: Any) -> float:
    poll = getattr(task, "poll_interval", None)
    if poll is None or poll is codec.UNSET:
        poll = getattr(task, "poll_interval_ms", None)
    return poll / 1000 if isinstance(poll, int) and poll > 0 else DEFAULT_POLL
