"""Tasks of 2025-11-25 (experimental in its core specification) for an app's task-capable tools.

``@app.tool(task_support="optional")`` (or ``"required"``) makes a tool task-capable on
every revision that has tasks:

* 2025-11-25: the app declares ``capabilities.tasks`` (``list``, ``cancel``,
  ``requests.tools.call``) and the tool's ``execution.taskSupport``; a
  ``tools/call`` carrying ``task`` answers at once with a ``CreateTaskResult``
  and runs the tool in the background; ``tasks/get``, ``tasks/result`` (which
  waits for the end), ``tasks/list`` and ``tasks/cancel`` follow it, and the
  session gets ``notifications/tasks/status`` at each change of status;
* 2026-07-28: the tasks extension (``App(extensions=[Tasks()])``) runs it as a
  task for clients that declared the extension (see :mod:`mcpbind._extensions.tasks.serving`);
* before 2025-11-25, and for clients that ask for no task: the call runs in place.

A call asking for a task of a tool that does not support one, or a call of a
``"required"`` tool without one, is -32601, as 2025-11-25 prescribes. Tasks
belong to the session that created them (another session does not find
them) and are kept ``ttl`` milliseconds (the client's, capped) after creation.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import secrets
import time
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import msgspec
from msgspec import UNSET

from .._core import jsonrpc
from .._core.jsonrpc import McpError
from ..methods import RequestContext

if TYPE_CHECKING:
    from ._flavor import Flavor, NamedCall
    from ._tools import ToolSpec

logger = logging.getLogger(__name__)

RELATED_TASK = "io.modelcontextprotocol/related-task"
TERMINAL = frozenset({"completed", "failed", "cancelled"})
DEFAULT_TTL_MS = 60 * 60 * 1000
MAX_TTL_MS = 24 * 60 * 60 * 1000
POLL_INTERVAL_MS = 500
# The error of tasks/result for a cancelled task (implementation-defined server error).
TASK_CANCELLED = -32000


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class _CoreTask:
    __slots__ = (
        "task_id", "owner", "status", "message", "created", "updated", "ttl_ms",
        "expires", "result", "error", "done", "runner", "flavor",
    )  # fmt: skip

    def __init__(self, owner: Any, ttl_ms: int, flavor: Flavor) -> None:
        self.task_id = secrets.token_urlsafe(18)
        self.owner = owner
        self.status = "working"
        self.message: str | None = None
        self.created = self.updated = _now()
        self.ttl_ms = ttl_ms
        self.expires = time.monotonic() + ttl_ms / 1000
        self.result: Any = None
        self.error: McpError | None = None
        self.done = asyncio.Event()
        self.runner: asyncio.Task[None] | None = None
        self.flavor = flavor

    def wire(self) -> dict[str, object]:
        body: dict[str, object] = {
            "taskId": self.task_id,
            "status": self.status,
            "createdAt": self.created,
            "lastUpdatedAt": self.updated,
            "ttl": self.ttl_ms,
            "pollInterval": POLL_INTERVAL_MS,
        }
        if self.message is not None:
            body["statusMessage"] = self.message
        return body

    def settle(self, status: str, *, result: object = None, error: McpError | None = None) -> bool:
        if self.status in TERMINAL:
            return False  # terminal states never change
        self.status, self.updated = status, _now()
        self.result, self.error = result, error
        if error is not None:
            self.message = error.message
        self.done.set()
        return True


class CoreTasks:
    """The 2025-11-25 tasks of one app (see the module docstring)."""

    def __init__(self, max_tasks: int = 1000) -> None:
        self.max_tasks = max_tasks
        self._tasks: dict[str, _CoreTask] = {}

    # ------------------------------------------------------------ tools/call

    async def call(
        self, tool: ToolSpec, params: Any, request: RequestContext, flavor: Flavor
    ) -> object:
        """Answer a tools/call of a 2025-11-25 session: a task when asked for one."""
        asked = params.task
        support = tool.task_support
        if asked is UNSET or asked is None:
            if support == "required":
                raise McpError(
                    jsonrpc.METHOD_NOT_FOUND,
                    f"Tool {tool.name!r} runs only as a task: call it with `task`",
                )
            return await tool.call(params, request, flavor)
        if support is None:
            raise McpError(jsonrpc.METHOD_NOT_FOUND, f"Tool {tool.name!r} does not run as a task")
        self._purge()
        if len(self._tasks) >= self.max_tasks:
            raise McpError(jsonrpc.INTERNAL_ERROR, "Too many tasks are kept: try again later")
        requested = asked.ttl if isinstance(asked.ttl, int) else DEFAULT_TTL_MS
        task = _CoreTask(request.session, max(1, min(requested, MAX_TTL_MS)), flavor)
        self._tasks[task.task_id] = task
        inner = msgspec.structs.replace(params, task=UNSET)
        # A fresh context: the work outlives the request and must not pass for a
        # part of it (its ctx still carries the request's headers, in ctx.extra).
        context = contextvars.Context()
        request.hold_progress()  # the task reports under the request's token until it ends
        task.runner = asyncio.get_running_loop().create_task(
            self._run(task, tool, inner, request, flavor), context=context
        )
        return flavor.convert({"task": task.wire()}, "CreateTaskResult")

    async def _run(
        self,
        task: _CoreTask,
        tool: ToolSpec,
        params: NamedCall,
        request: RequestContext,
        flavor: Flavor,
    ) -> None:
        try:
            result = await tool.call(params, request, flavor)
        except asyncio.CancelledError:
            changed = task.settle("cancelled")
        except McpError as error:
            changed = task.settle("failed", error=error)
        except Exception:
            logger.exception("a task failed")
            changed = task.settle(
                "failed", error=McpError(jsonrpc.INTERNAL_ERROR, "Internal error")
            )
        else:
            changed = task.settle(
                "failed" if getattr(result, "is_error", False) is True else "completed",
                result=result,
            )
        finally:
            task.runner = None
            request.end_progress()
        if changed:
            await self._notify(task)

    async def _notify(self, task: _CoreTask) -> None:
        """``notifications/tasks/status`` to the session that owns the task (if still there)."""
        session = task.owner
        if getattr(session, "is_closed", True):
            return
        spec = task.flavor.revision.all_methods.get("notifications/tasks/status")
        if spec is None:
            return
        try:
            await session.notify(spec, task.flavor.convert(task.wire(), spec.params.__name__))
        except Exception:  # the client left, or refuses notifications: polling still works
            logger.debug("task status notification not sent", exc_info=True)

    # ------------------------------------------------------------ tasks/*

    def _find(self, params: Any, request: RequestContext) -> _CoreTask:
        self._purge()
        task = self._tasks.get(params.task_id)
        if task is None or task.owner is not request.session:
            raise McpError(
                jsonrpc.INVALID_PARAMS, f"Invalid params: unknown task {params.task_id!r}"
            )
        return task

    async def get(self, params: object, request: RequestContext, flavor: Flavor) -> object:
        return flavor.convert(self._find(params, request).wire(), "GetTaskResult")

    async def result(self, params: object, request: RequestContext, flavor: Flavor) -> object:
        """tasks/result: waits until the task ends, then its result (or its error)."""
        task = self._find(params, request)
        await task.done.wait()
        related = {RELATED_TASK: {"taskId": task.task_id}}
        if task.status == "cancelled":
            raise McpError(TASK_CANCELLED, "Task cancelled", related)
        if task.error is not None:
            raise McpError(task.error.code, task.error.message, related)
        result = task.result
        meta = getattr(result, "meta", UNSET)
        merged = {**(meta if isinstance(meta, dict) else {}), **related}
        return msgspec.structs.replace(result, meta=merged)

    async def list(self, params: object, request: RequestContext, flavor: Flavor) -> object:
        cursor = getattr(params, "cursor", UNSET)
        if cursor is not UNSET and cursor is not None:
            raise McpError(
                jsonrpc.INVALID_PARAMS, "Invalid params: unknown cursor (tasks come in one page)"
            )
        self._purge()
        owner = request.session
        tasks = [task.wire() for task in self._tasks.values() if task.owner is owner]
        return flavor.convert({"tasks": tasks}, "ListTasksResult")

    async def cancel(self, params: object, request: RequestContext, flavor: Flavor) -> object:
        task = self._find(params, request)
        if task.status in TERMINAL:
            raise McpError(
                jsonrpc.INVALID_PARAMS,
                f"Invalid params: task {task.task_id!r} is {task.status} and cannot be cancelled",
            )
        runner = task.runner
        task.settle("cancelled")
        if runner is not None:
            runner.cancel()
        await self._notify(task)
        return flavor.convert(task.wire(), "CancelTaskResult")

    def _purge(self) -> None:
        """Forget the tasks whose time to live has passed (their work cancelled)."""
        now = time.monotonic()
        for task_id in [key for key, task in self._tasks.items() if task.expires < now]:
            task = self._tasks.pop(task_id)
            if task.runner is not None:
                task.runner.cancel()
