"""The MCP tasks extension (``io.modelcontextprotocol/tasks``, SEP-2663) for 2026-07-28 servers.

A tool call may answer with a task handle (``resultType: "task"``) instead of
its result; the client then polls ``tasks/get`` (which inlines the final
result or error), answers the task's input requests with ``tasks/update`` and
may ``tasks/cancel`` it. Only requests whose ``_meta`` client capabilities name
the extension ever get a task.

Usage::

    tasks = Tasks(tools={"slow_compute": "optional", "deploy": "required"})

    class Tools(mcp.ServerHandlers):
        @override
        async def call_tool(self, params: mcp.CallToolRequestParams, ctx: RequestContext) -> mcp.CallToolResultResponseResult:
            if params.name == "slow_compute":

                async def work(task: TaskContext) -> mcp.CallToolResult:
                    answer = await task.elicit(mcp.ElicitRequestFormParams(message="Go on?", requested_schema=...))
                    await asyncio.sleep(10)
                    return mcp.CallToolResult(content=[mcp.TextContent(text=f"done ({answer.action})")])

                return await tasks.start(ctx, work)
            ...

    server = Server(Tools(), name="demo", version="1", extensions=[tasks])

How a handler becomes a task: ``tasks.start(ctx, work)`` decides. If this
request's client declared the extension (and the server routes it), it stores
a new task, runs ``work`` in the background and returns a placeholder
``CallToolResult`` that the extension's middleware of ``tools/call`` turns into
the ``CreateTaskResult`` (so the handler keeps the generated signature; no
casts). Otherwise it awaits ``work`` in place and returns its result: the call
stays synchronous. A handler can therefore answer some rounds itself (an
``InputRequiredResult`` first, for instance) and escalate to a task on a later
one, or return a quick result without a task at all.

Inside a task, ``work`` asks the client for input through its
:class:`TaskContext` (``elicit``, ``create_message``, ``list_roots``, or
``input`` for any input request): the task shows ``input_required`` with the
pending ``inputRequests`` until ``tasks/update`` has delivered every answer,
then goes back to ``working``. Several requests may be pending at once (start
them with ``asyncio.gather``). Outside a task there is no channel for such
input, and these methods raise -32021 naming the extension.

Outcomes: a returned result (``isError`` or not) completes the task; an
:class:`~mcpbind._core.jsonrpc.McpError` fails it with that error, any other
exception with -32603; ``tasks/cancel`` cancels ``work`` and settles the task
as ``cancelled`` at once. Tasks live in the :class:`Tasks` object, shared by
every session of the server (a task created on one HTTP request is polled on
others), for at least ``ttl_ms`` after creation, and are discarded (their work
cancelled) once it has passed.

Tools declared ``"required"`` are refused with -32021 before their handler
runs when the request lacks the extension; ``"optional"`` (or undeclared)
tools run synchronously then.
"""

from __future__ import annotations

import asyncio
import contextvars
import heapq
import itertools
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Final, Literal, TypeVar

import msgspec

from mcpbind_protocol import v2026_07_28 as mcp_types

# The wire types and method specs are generated from schema/extensions/tasks.json.
from mcpbind_protocol.ext_tasks import EXTENSION_ID
from mcpbind_protocol.ext_tasks.methods import TASKS_CANCEL, TASKS_GET, TASKS_UPDATE
from mcpbind_protocol.ext_tasks.types import (
    CancelTaskParams,
    CreateTaskResult,
    GetTaskParams,
    GetTaskResult,
    Task,
    TaskAck,
    TaskError,
    TaskStatus,
    UpdateTaskParams,
)
from mcpbind_protocol.v2026_07_28 import methods as mcp_methods
from mcpbind_protocol.v2026_07_28.types import (
    CallToolRequestParams,
    CallToolResult,
    CreateMessageRequest,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequest,
    ElicitRequestParams,
    ElicitResult,
    InputRequest,
    InputResponse,
    ListRootsRequest,
    ListRootsResult,
)

from ... import codec
from ..._core import capabilities, jsonrpc, lifecycle, ownership
from ..._core.extensions import negotiated as declared_extension
from ..._core.jsonrpc import McpError
from ..._core.session import Route, SessionContext
from ...codec import UNSET
from ...methods import MethodSpec, RequestContext
from ...middleware import Handler, Middleware
from .shared import SharedTasks

__all__ = [
    "EXTENSION_ID",
    "TASKS_CANCEL",
    "TASKS_GET",
    "TASKS_UPDATE",
    "CancelTaskParams",
    "CreateTaskResult",
    "GetTaskParams",
    "GetTaskResult",
    "Task",
    "TaskAck",
    "TaskContext",
    "TaskError",
    "TaskStatus",
    "TaskSupport",
    "Tasks",
    "UpdateTaskParams",
    "client_supports_tasks",
]

TaskSupport = Literal["optional", "required"]
TERMINAL: Final = frozenset({"completed", "failed", "cancelled"})

logger = logging.getLogger(__name__)

R = TypeVar("R")


# ---------------------------------------------------------------- capabilities


def client_supports_tasks(capabilities: Any) -> bool:
    """Whether decoded client capabilities (a Struct, a mapping, or None/UNSET) name the extension."""
    return declared_extension(capabilities, EXTENSION_ID) is not None


def _missing_extension(why: str) -> McpError:
    return lifecycle.missing_capabilities([("extensions", EXTENSION_ID)], why)


# ---------------------------------------------------------------- the store


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(eq=False)
class _Pending:
    request: InputRequest
    result_type: Any
    future: asyncio.Future[Any]


@dataclass(eq=False)
class _Record:
    task_id: str
    ttl_ms: int | None
    poll_interval_ms: int | None
    capabilities: Any
    owner: str | None = (
        None  # ownership.owner_of the request that made it; None: anyone with the id
    )
    created_at: str = field(default_factory=_now)
    last_updated_at: str = ""
    status: TaskStatus = "working"
    status_message: str | None = None
    result: CallToolResult | None = None
    error: TaskError | None = None
    pending: dict[str, _Pending] = field(default_factory=dict)
    keys: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    runner: asyncio.Task[None] | None = None
    mirror: Callable[[], None] | None = None  # with a shared store: copies each change there

    def __post_init__(self) -> None:
        self.last_updated_at = self.created_at

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    def touch(self, status: TaskStatus | None = None) -> None:
        # Clients may stop polling once they see a terminal status, so it is final:
        # work that outlives its task (cancelled, or a stray child) changes nothing.
        if self.terminal:
            return
        if status is not None:
            self.status = status
        self.last_updated_at = _now()
        if self.mirror is not None:
            self.mirror()

    def settle(
        self,
        status: TaskStatus,
        *,
        result: CallToolResult | None = None,
        error: TaskError | None = None,
    ) -> None:
        """Enter a terminal status; a task that already has one keeps it."""
        if self.terminal:
            return
        self.result, self.error = result, error
        if error is not None:
            self.status_message = error.message
        # No tasks/update can answer them any more: whatever still awaits one
        # (a child the work left behind) would otherwise wait forever.
        for pending in self.pending.values():
            pending.future.cancel()
        self.pending.clear()
        self.touch(status)

    def after_answer(self) -> None:
        if self.status == "input_required" and not self.pending:
            self.touch("working")

    def base(self) -> dict[str, Any]:
        fields: dict[str, Any] = {
            "task_id": self.task_id,
            "status": self.status,
            "created_at": self.created_at,
            "last_updated_at": self.last_updated_at,
            "ttl_ms": self.ttl_ms,
        }
        if self.status_message is not None:
            fields["status_message"] = self.status_message
        if self.poll_interval_ms is not None:
            fields["poll_interval_ms"] = self.poll_interval_ms
        return fields

    def detailed(self) -> GetTaskResult:
        detail = GetTaskResult(**self.base())
        if self.status == "input_required":
            detail.input_requests = {key: p.request for key, p in self.pending.items()}
        elif self.status == "completed" and self.result is not None:
            detail.result = self.result
        elif self.status == "failed" and self.error is not None:
            detail.error = self.error
        return detail


class _TaskCreated(CallToolResult, kw_only=True, gc=False):
    """What :meth:`Tasks.start` hands the handler when it made a task: the
    middleware of ``tools/call`` answers with the task instead."""

    task_id: str


# The Tasks object whose tools/call middleware is running the current handler.
_serving: contextvars.ContextVar[Tasks | None] = contextvars.ContextVar(
    "mcp_tasks_serving", default=None
)

_KEY_PREFIX: Final = {
    "elicitation/create": "elicit",
    "sampling/createMessage": "sample",
    "roots/list": "roots",
}


# ---------------------------------------------------------------- work's view


class TaskContext:
    """What a task's work sees: its id, its status message, and the client for input.

    Once the task is terminal (cancelled, or settled while a child of the work
    still runs) it takes no more input: asking raises ``asyncio.CancelledError``,
    and requests still pending then are cancelled.
    """

    def __init__(self, tasks: Tasks, record: _Record | None, capabilities: Any) -> None:
        self._tasks = tasks
        self._record = record
        self._capabilities = capabilities

    @property
    def task_id(self) -> str | None:
        """The task's id; None when the work runs synchronously, as the request's answer."""
        return None if self._record is None else self._record.task_id

    @property
    def client_capabilities(self) -> Any:
        """The client capabilities of the request that started the work."""
        return self._capabilities

    def set_status_message(self, message: str | None) -> None:
        """Describe what the task is doing (shown as ``statusMessage``)."""
        record = self._record
        if record is not None and not record.terminal:
            record.status_message = message
            record.touch()

    async def elicit(self, params: ElicitRequestParams, *, key: str | None = None) -> ElicitResult:
        """Ask the user through the client (``elicitation/create``)."""
        return await self._ask(ElicitRequest(params=params), ElicitResult, key)

    async def create_message(
        self, params: CreateMessageRequestParams, *, key: str | None = None
    ) -> CreateMessageResult:
        """Ask the client's model (``sampling/createMessage``)."""
        return await self._ask(CreateMessageRequest(params=params), CreateMessageResult, key)

    async def list_roots(self, *, key: str | None = None) -> ListRootsResult:
        """Ask the client for its roots (``roots/list``)."""
        return await self._ask(ListRootsRequest(), ListRootsResult, key)

    async def input(self, request: InputRequest, *, key: str | None = None) -> InputResponse:
        """Any input request; the answer is decoded as that request's result."""
        result: InputResponse = await self._ask(
            request, mcp_methods.INPUT_REQUESTS[request.method].result, key
        )
        return result

    async def _ask(self, request: InputRequest, result_type: type[R], key: str | None) -> R:
        record = self._record
        if record is None:
            raise _missing_extension(
                f"{request.method} during a tool call needs the {EXTENSION_ID} extension"
            )
        if record.terminal:
            # The client is told nothing more about this task, so no answer can come.
            raise asyncio.CancelledError(
                f"task {record.task_id} is {record.status}: it takes no more input"
            )
        spec = mcp_methods.INPUT_REQUESTS[request.method]
        missing = [spec.capability] if spec.capability else []
        if missing and lifecycle.has_capability(record.capabilities, spec.capability):
            missing = [
                need.path
                for need in capabilities.unmet(
                    lifecycle.revision(mcp_types.PROTOCOL_VERSION),
                    capabilities.SERVER,
                    request.method,
                    request.params,
                    record.capabilities,
                )
            ]
        if missing:
            raise lifecycle.missing_capabilities(
                missing,
                f"{request.method} needs the client's {', '.join('.'.join(p) for p in missing)} capability",
            )
        if key is None:
            key = f"{_KEY_PREFIX.get(request.method, 'input')}-{next(record.keys)}"
        elif key in record.pending:
            raise ValueError(f"input request key {key!r} is already pending")
        future: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        record.pending[key] = _Pending(request, result_type, future)
        record.touch("input_required")
        try:
            return await future
        finally:
            if record.pending.get(key) is not None and record.pending[key].future is future:
                del record.pending[key]
                record.after_answer()


# ---------------------------------------------------------------- the extension


class Tasks:
    """The tasks extension: pass it to ``Server(..., extensions=[tasks])``.

    ``tools`` names the tools that support tasks: ``"required"`` ones are
    refused (-32021) to requests without the extension, ``"optional"`` ones run
    synchronously for them. ``ttl_ms`` (None: unlimited) is how long a task is
    kept after its creation; ``poll_interval_ms`` is the polling pace suggested
    to clients.

    ``max_tasks`` (None: unlimited) caps the tasks kept at once, running or
    settled, since each holds its work or its result until its TTL passes.
    When it is reached, the tasks that finished longest ago are forgotten
    first (before their TTL) to make room; only when every kept task is still
    running does a ``tools/call`` that would make one more fail with -32603
    (server busy), changing nothing else. Tasks past their TTL do not count.
    ``max_tasks_per_owner`` (None: unlimited) caps the tasks of one owner the
    same way, so that one client cannot take every place.

    Each task belongs to the owner of the request that made it
    (:func:`mcpbind._core.ownership.owner_of`: the authenticated principal,
    else the session, else the connection); ``tasks/get``, ``tasks/update``
    and ``tasks/cancel`` from anyone else get the answer an unknown id gets.
    A 2026-07-28 HTTP request without authorization has no owner to bind
    to: its task is reached by its id alone. ``bind_to_owner=False`` does
    the same everywhere.
    """

    id: str = EXTENSION_ID

    def __init__(
        self,
        *,
        tools: Mapping[str, TaskSupport] | None = None,
        ttl_ms: int | None = 3_600_000,
        poll_interval_ms: int | None = 500,
        max_tasks: int | None = 1024,
        max_tasks_per_owner: int | None = None,
        bind_to_owner: bool = True,
    ) -> None:
        if ttl_ms is not None and ttl_ms <= 0:
            raise ValueError("ttl_ms must be positive (or None for unlimited)")
        if poll_interval_ms is not None and poll_interval_ms <= 0:
            raise ValueError("poll_interval_ms must be positive (or None)")
        if max_tasks is not None and max_tasks <= 0:
            raise ValueError("max_tasks must be positive (or None for unlimited)")
        if max_tasks_per_owner is not None and max_tasks_per_owner <= 0:
            raise ValueError("max_tasks_per_owner must be positive (or None for unlimited)")
        self.tools: dict[str, TaskSupport] = dict(tools or {})
        self.ttl_ms = ttl_ms
        self.poll_interval_ms = poll_interval_ms
        self.max_tasks = max_tasks
        self.max_tasks_per_owner = max_tasks_per_owner
        self.bind_to_owner = bind_to_owner
        self._tasks: dict[str, _Record] = {}
        self._expiry: list[tuple[float, str]] = []
        self._settled: dict[str, None] = {}  # ids of the terminal tasks kept, oldest settled first
        self._owned: dict[str, int] = {}  # tasks kept, by owner
        # Once a request of a server with a shared store came: the tasks shared through it.
        self._shared: SharedTasks[GetTaskResult] | None = None

    # ------------------------------------------------------------ extension interface

    def settings(self) -> dict[str, Any]:
        return {}

    def routes(self) -> Mapping[str, Route]:
        return {
            TASKS_GET.method: (TASKS_GET, self._get),
            TASKS_UPDATE.method: (TASKS_UPDATE, self._update),
            TASKS_CANCEL.method: (TASKS_CANCEL, self._cancel),
        }

    def middleware(self) -> Sequence[Middleware]:
        return (self._call_tool_middleware,)

    def _call_tool_middleware(self, spec: MethodSpec[Any, Any], handler: Handler) -> Handler:
        """Around ``tools/call``: refuses required tasks to clients without the
        extension, and answers a started task with its ``CreateTaskResult``."""
        if spec.method != "tools/call":
            return handler

        async def call_tool(params: CallToolRequestParams, ctx: SessionContext) -> Any:
            if self.tools.get(params.name) == "required" and not client_supports_tasks(
                ctx.client_capabilities
            ):
                raise _missing_extension(f"tool {params.name!r} runs as a task")
            token = _serving.set(self)
            try:
                result = await handler(params, ctx)
            finally:
                _serving.reset(token)
            if isinstance(result, _TaskCreated):
                return self._created(result.task_id)
            return result

        return call_tool

    # ------------------------------------------------------------ handler API

    async def start(
        self, ctx: RequestContext, work: Callable[[TaskContext], Awaitable[CallToolResult]]
    ) -> CallToolResult:
        """Run ``work`` as a task if this request may get one, else in place.

        Return what it returns from ``call_tool``. With a task, that is a
        placeholder the extension answers with the ``CreateTaskResult``: the
        task exists (``tasks/get`` finds it) before the response is sent.
        Raises -32603 instead, without running ``work``, when ``max_tasks``
        tasks are already kept.
        """
        capabilities = ctx.client_capabilities
        if _serving.get() is not self or not client_supports_tasks(capabilities):
            return await work(TaskContext(self, None, capabilities))
        self._purge()
        owner = ownership.owner_of(ctx) if self.bind_to_owner else None
        self._make_room(owner)
        record = _Record(
            secrets.token_urlsafe(18), self.ttl_ms, self.poll_interval_ms, capabilities, owner
        )
        self._tasks[record.task_id] = record
        if owner is not None:
            self._owned[owner] = self._owned.get(owner, 0) + 1
        if record.ttl_ms is not None:
            heapq.heappush(self._expiry, (time.monotonic() + record.ttl_ms / 1000, record.task_id))
        shared = self._shared_for(ctx)
        if shared is not None:
            await shared.created(record)  # other workers find it before the client hears of it
        # A fresh context: the work outlives the request that started it and
        # must not pass for a part of it.
        record.runner = asyncio.get_running_loop().create_task(
            self._run(record, work),
            name=f"mcp-task-{record.task_id}",
            context=contextvars.Context(),
        )
        return _TaskCreated(content=[], task_id=record.task_id)

    # ------------------------------------------------------------ running

    async def _run(
        self, record: _Record, work: Callable[[TaskContext], Awaitable[CallToolResult]]
    ) -> None:
        try:
            result = await work(TaskContext(self, record, record.capabilities))
        except asyncio.CancelledError:
            record.settle("cancelled")
        except McpError as error:
            data: Any = UNSET if error.data is None else error.data
            record.settle(
                "failed", error=TaskError(code=error.code, message=error.message, data=data)
            )
        except Exception:
            logger.exception("a task failed")  # its id stays out of logs: it is what grants access
            record.settle(
                "failed", error=TaskError(code=jsonrpc.INTERNAL_ERROR, message="Internal error")
            )
        else:
            record.settle("completed", result=result)
        finally:
            record.runner = None
            self._note_settled(record)

    def _created(self, task_id: str) -> CreateTaskResult:
        record = self._tasks[task_id]
        return CreateTaskResult(**record.base())

    def _purge(self) -> None:
        """Forget the tasks whose TTL has passed (strictly: never before it)."""
        now = time.monotonic()
        while self._expiry and self._expiry[0][0] < now:
            _, task_id = heapq.heappop(self._expiry)
            record = self._forget(task_id)
            if record is not None and record.runner is not None:
                record.runner.cancel()

    def _forget(self, task_id: str) -> _Record | None:
        record = self._tasks.pop(task_id, None)
        if record is not None:
            self._settled.pop(task_id, None)
            if record.owner is not None:
                left = self._owned[record.owner] - 1
                if left:
                    self._owned[record.owner] = left
                else:
                    del self._owned[record.owner]
        return record

    def _note_settled(self, record: _Record) -> None:
        if record.terminal and self._tasks.get(record.task_id) is record:
            self._settled.setdefault(record.task_id)

    def _make_room(self, owner: str | None) -> None:
        """Room for one more task of ``owner``: forget finished tasks (the
        oldest first; the owner's own when it is the owner's quota that is
        full), or raise -32603 when only running tasks fill the place."""
        quota = self.max_tasks_per_owner
        if owner is not None and quota is not None and self._owned.get(owner, 0) >= quota:
            finished = next((i for i in self._settled if self._tasks[i].owner == owner), None)
            if finished is None:
                raise McpError(
                    jsonrpc.INTERNAL_ERROR,
                    f"Server busy: this client already has {quota} tasks running; try again once one has finished",
                )
            self._forget(finished)
        if self.max_tasks is not None and len(self._tasks) >= self.max_tasks:
            finished = next(iter(self._settled), None)
            if finished is None:
                raise McpError(
                    jsonrpc.INTERNAL_ERROR,
                    f"Server busy: {self.max_tasks} tasks are running; try again once some have finished",
                )
            self._forget(finished)

    def _find(self, ctx: RequestContext, task_id: str) -> _Record:
        if not client_supports_tasks(ctx.client_capabilities):
            raise _missing_extension(f"the tasks/* methods belong to the {EXTENSION_ID} extension")
        self._purge()
        record = self._tasks.get(task_id)
        if record is None or (record.owner is not None and record.owner != ownership.owner_of(ctx)):
            # Another owner's task is answered as if it did not exist.
            raise McpError(
                jsonrpc.INVALID_PARAMS, f"Unknown task: {task_id!r} (never created, or expired)"
            )
        return record

    # ------------------------------------------------------------ the methods

    def _owner_key(self, ctx: RequestContext) -> str | None:
        """Who owns the tasks ``ctx``'s request makes (None: whoever has the id)."""
        return ownership.owner_of(ctx)

    def _shared_for(self, ctx: RequestContext) -> SharedTasks[GetTaskResult] | None:
        """The SharedTasks of a server whose store other workers share, else None."""
        if self._shared is None:
            store = getattr(getattr(ctx.session, "server", None), "store", None)
            if store is None or not store.shared:
                return None
            self._shared = SharedTasks(_Table(self), store, GetTaskResult)
        return self._shared

    async def _get(self, params: GetTaskParams, ctx: RequestContext) -> GetTaskResult:
        shared = self._shared_for(ctx)
        if shared is not None:
            return await shared.get(ctx, params.task_id)
        return self._find(ctx, params.task_id).detailed()

    async def _update(self, params: UpdateTaskParams, ctx: RequestContext) -> TaskAck:
        shared = self._shared_for(ctx)
        if shared is not None and params.task_id not in self._tasks:
            await shared.update(ctx, params.task_id, params.input_responses)
            return TaskAck()
        record = self._find(ctx, params.task_id)
        answers: list[tuple[str, Any]] = []
        for key, value in params.input_responses.items():
            pending = record.pending.get(key)
            if pending is None or pending.future.done():
                continue  # unknown, already answered or superseded: ignored
            try:
                answers.append((key, codec.convert(value, pending.result_type)))
            except msgspec.ValidationError as error:
                raise McpError(
                    jsonrpc.INVALID_PARAMS,
                    f"Invalid params for tasks/update: inputResponses[{key!r}]: {error}",
                ) from None
        # Validated first, applied together: a bad answer changes nothing.
        for key, answer in answers:
            record.pending.pop(key).future.set_result(answer)
        if answers:
            record.after_answer()
        return TaskAck()

    async def _cancel(self, params: CancelTaskParams, ctx: RequestContext) -> TaskAck:
        shared = self._shared_for(ctx)
        if shared is not None and params.task_id not in self._tasks:
            await shared.cancel(ctx, params.task_id)
            return TaskAck()
        record = self._find(ctx, params.task_id)
        if not record.terminal:
            record.settle("cancelled")
            self._note_settled(record)
            if record.runner is not None:
                record.runner.cancel()
        return TaskAck()


class _Table:
    """The view of one worker's tasks that their sharing through a store works with."""

    __slots__ = ("tasks",)

    def __init__(self, tasks: Tasks) -> None:
        self.tasks = tasks

    def local(self, task_id: str) -> _Record | None:
        return self.tasks._tasks.get(task_id)

    def forget(self, task_id: str) -> None:
        self.tasks._forget(task_id)

    def owner_key(self, ctx: RequestContext) -> str | None:
        return self.tasks._owner_key(ctx)

    def require_extension(self, ctx: RequestContext) -> None:
        if not client_supports_tasks(ctx.client_capabilities):
            raise _missing_extension(f"the tasks/* methods belong to the {EXTENSION_ID} extension")

    def cancelled(self, detail: GetTaskResult) -> GetTaskResult:
        return msgspec.structs.replace(
            detail, status="cancelled", last_updated_at=_now(), input_requests=UNSET
        )

    def failed(self, detail: GetTaskResult, message: str) -> GetTaskResult:
        error = TaskError(code=jsonrpc.INTERNAL_ERROR, message=message)
        return msgspec.structs.replace(
            detail,
            status="failed",
            status_message=message,
            error=error,
            last_updated_at=_now(),
            input_requests=UNSET,
        )
