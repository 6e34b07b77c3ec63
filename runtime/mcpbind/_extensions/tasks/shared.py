"""Tasks of the tasks extension shared by several workers through a store.

A task runs on the worker whose request made it; that worker copies every
change of the task (its ``tasks/get`` answer and its owner) to the store, so
``tasks/get`` on any worker reads it there. ``tasks/cancel`` from another
worker settles the stored task as cancelled at once (a task already terminal
keeps its outcome: the store takes only the first terminal state) and tells
the running worker over the bus to stop the work; ``tasks/update`` goes over
the bus to the running worker, which checks and applies the answers.

A worker running tasks writes a heartbeat to the store every
``HEARTBEAT_EVERY`` seconds, and each copy of a task names it. A task whose
worker died (SIGKILL, a lost host) would otherwise stay "working" forever: a
worker answering ``tasks/get`` for it that sees no heartbeat of its runner,
on polls spanning ``HEARTBEAT_TTL`` seconds, settles it as failed ("the
server worker running this task stopped before it ended").
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar

import msgspec

from ... import codec
from ..._core import jsonrpc
from ..._core.jsonrpc import McpError
from ...methods import RequestContext
from ...stores._base import Store, StoreUnavailable

logger = logging.getLogger(__name__)

HEARTBEAT_EVERY = 2.0
"""Seconds between the heartbeats of a worker running tasks."""
HEARTBEAT_TTL = 6.0
"""Seconds a heartbeat lives; a runner unseen that long on polls is taken as stopped."""
STOPPED = "the server worker running this task stopped before it ended"

Detail = TypeVar("Detail", bound=msgspec.Struct)
"""A task as ``tasks/get`` answers it (the extension's GetTaskResult)."""
Detail_co = TypeVar("Detail_co", bound=msgspec.Struct, covariant=True)


class TaskRecord(Protocol[Detail_co]):
    """A task as the worker running it keeps it."""

    task_id: str
    ttl_ms: int | None
    owner: str | None
    pending: dict[str, Any]  # input requests waiting for answers: a result_type and a future
    runner: asyncio.Task[None] | None
    mirror: Callable[[], None] | None

    @property
    def terminal(self) -> bool: ...

    def detailed(self) -> Detail_co: ...

    def settle(self, status: Any) -> None: ...

    def after_answer(self) -> None: ...


class TaskTable(Protocol[Detail]):
    """What the sharing needs of the tasks extension of this worker."""

    def local(self, task_id: str) -> TaskRecord[Detail] | None:
        """The task if it runs (or ran) on this worker."""
        ...

    def forget(self, task_id: str) -> None: ...

    def owner_key(self, ctx: RequestContext) -> str | None:
        """Who owns the tasks ``ctx``'s request makes (None: whoever has the id)."""
        ...

    def require_extension(self, ctx: RequestContext) -> None:
        """Raise the error of a client that did not declare the extension, if it did not."""
        ...

    def cancelled(self, detail: Detail) -> Detail:
        """``detail`` as a task cancelled now."""
        ...

    def failed(self, detail: Detail, message: str) -> Detail:
        """``detail`` as a task failed now with an internal error saying ``message``."""
        ...


class _Snapshot(msgspec.Struct, Generic[Detail], array_like=True):
    """What the store keeps of a task."""

    owner: str | None
    terminal: bool
    detail: Detail
    worker: str = ""  # the worker running it (its heartbeat's name)


class _Note(msgspec.Struct):
    k: str
    t: str = ""
    r: dict[str, Any] = {}


_decode_note = msgspec.json.Decoder(_Note)


class SharedTasks(Generic[Detail]):
    """The tasks of one worker's extension (``tasks``), shared through ``store``;
    ``detail``: the type of a task as ``tasks/get`` answers it."""

    def __init__(self, tasks: TaskTable[Detail], store: Store, detail: type[Detail]) -> None:
        self.tasks = tasks
        self.store = store
        self._dirty: dict[str, TaskRecord[Detail]] = {}
        self._wake = asyncio.Event()
        self._writer: asyncio.Task[None] | None = None
        self._down = False
        self._snapshot: msgspec.json.Decoder[_Snapshot[Detail]] = msgspec.json.Decoder(
            _Snapshot[detail]  # type: ignore[valid-type]
        )
        self.worker = secrets.token_hex(6)
        self._running: set[str] = set()  # tasks running here, unsettled
        self._heart: asyncio.Task[None] | None = None
        # Tasks of other workers seen without their runner's heartbeat: (first, last) seen so.
        self._unseen: dict[str, tuple[float, float]] = {}
        store.subscribe(self._on_published)

    # ------------------------------------------------------------ the running worker

    def _owner(self, record: TaskRecord[Detail]) -> str | None:
        owner = getattr(record, "owner", None)
        return owner if isinstance(owner, str) else None

    def _encode(self, record: TaskRecord[Detail]) -> bytes:
        return msgspec.json.encode(
            _Snapshot(self._owner(record), record.terminal, record.detailed(), self.worker)
        )

    async def created(self, record: TaskRecord[Detail]) -> None:
        """Store a new task before its creation is answered."""
        try:
            ttl = None if record.ttl_ms is None else record.ttl_ms / 1000
            await self.store.put_task(record.task_id, self._encode(record), record.terminal, ttl)
        except StoreUnavailable as error:
            self.tasks.forget(record.task_id)
            raise McpError(jsonrpc.INTERNAL_ERROR, f"Task not created: {error}") from None
        record.mirror = lambda: self._changed(record)
        if not record.terminal:
            self._running.add(record.task_id)
            if self._heart is None or self._heart.done():
                self._heart = asyncio.get_running_loop().create_task(
                    self._beat(), name="mcp-task-heartbeat"
                )

    async def _beat(self) -> None:
        """The heartbeat, while tasks run here (none left: it stops)."""
        while self._running:
            try:
                await self.store.set_mark(f"task-worker:{self.worker}", 1, HEARTBEAT_TTL)
            except StoreUnavailable:
                pass  # the writer reports the outage
            await asyncio.sleep(HEARTBEAT_EVERY)

    def _changed(self, record: TaskRecord[Detail]) -> None:
        if record.terminal:
            self._running.discard(record.task_id)
        self._dirty[record.task_id] = record
        self._wake.set()
        if self._writer is None or self._writer.done():
            self._writer = asyncio.get_running_loop().create_task(
                self._write(), name="mcp-task-mirror"
            )

    async def _write(self) -> None:
        """Copy changed tasks to the store, the latest state of each (changes in a burst coalesce)."""
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._dirty:
                task_id, record = next(iter(self._dirty.items()))
                del self._dirty[task_id]
                try:
                    await self.store.put_task(task_id, self._encode(record), record.terminal, None)
                    self._down = False
                except StoreUnavailable as error:
                    if not self._down:
                        logger.warning("task changes are not shared while %s", error)
                        self._down = True

    async def _on_published(self, message: bytes) -> None:
        try:
            note = _decode_note.decode(message)
        except msgspec.MsgspecError:
            return
        record = self.tasks.local(note.t) if note.k in ("cancel", "update") else None
        if record is None or record.terminal:
            return
        if note.k == "cancel":
            record.settle("cancelled")
            if record.runner is not None:
                record.runner.cancel()
            return
        answers = []
        for key, value in note.r.items():
            pending = record.pending.get(key)
            if pending is None or pending.future.done():
                continue
            try:
                answers.append((key, codec.convert(value, pending.result_type)))
            except msgspec.ValidationError:
                return  # the worker that took the update checked the task, not the answers' types: none applied
        for key, answer in answers:
            record.pending.pop(key).future.set_result(answer)
        if answers:
            record.after_answer()

    # ------------------------------------------------------------ any worker

    async def _stored(self, ctx: RequestContext, task_id: str) -> tuple[str | None, bool, Detail]:
        self.tasks.require_extension(ctx)
        try:
            found = await self.store.get_task(task_id)
        except StoreUnavailable as error:
            raise McpError(jsonrpc.INTERNAL_ERROR, f"Tasks unavailable: {error}") from None
        local = self.tasks.local(task_id)
        if found is None and local is None:
            raise McpError(
                jsonrpc.INVALID_PARAMS, f"Unknown task: {task_id!r} (never created, or expired)"
            )
        if found is None:
            assert local is not None
            return self._owner(local), local.terminal, local.detailed()
        snapshot = self._snapshot.decode(found)
        owner, terminal, detail = snapshot.owner, snapshot.terminal, snapshot.detail
        if owner is not None and owner != self.tasks.owner_key(ctx):
            raise McpError(
                jsonrpc.INVALID_PARAMS, f"Unknown task: {task_id!r} (never created, or expired)"
            )
        if local is not None and not (terminal and not local.terminal):
            # This worker runs it: its own state is the newest (the store's copy follows).
            return owner, local.terminal, local.detailed()
        if not terminal and local is None and snapshot.worker:
            try:
                if await self._runner_stopped(task_id, snapshot.worker):
                    return await self._settle_stopped(task_id, snapshot)
            except StoreUnavailable as error:
                raise McpError(jsonrpc.INTERNAL_ERROR, f"Tasks unavailable: {error}") from None
        return owner, terminal, detail

    async def _runner_stopped(self, task_id: str, worker: str) -> bool:
        """Whether the worker running a task has shown no heartbeat on polls
        spanning HEARTBEAT_TTL seconds, none of them further apart than that
        (a store that just came back has no heartbeats yet: a runner that
        lives writes its own within HEARTBEAT_EVERY)."""
        if await self.store.get_mark(f"task-worker:{worker}"):
            self._unseen.pop(task_id, None)
            return False
        now = time.monotonic()
        first, last = self._unseen.get(task_id, (now, now))
        if now - last > HEARTBEAT_TTL:
            first = now
        self._unseen[task_id] = (first, now)
        return now - first >= HEARTBEAT_TTL

    async def _settle_stopped(
        self, task_id: str, snapshot: _Snapshot[Detail]
    ) -> tuple[str | None, bool, Detail]:
        """Store the task of a stopped worker as failed (unless a terminal state came first)."""
        self._unseen.pop(task_id, None)
        failed = self.tasks.failed(snapshot.detail, STOPPED)
        settled = _Snapshot(snapshot.owner, True, failed, snapshot.worker)
        await self.store.put_task(task_id, msgspec.json.encode(settled), True, None)
        found = await self.store.get_task(task_id)
        if found is not None:
            settled = self._snapshot.decode(found)
        return settled.owner, settled.terminal, settled.detail

    async def get(self, ctx: RequestContext, task_id: str) -> Detail:
        return (await self._stored(ctx, task_id))[2]

    async def cancel(self, ctx: RequestContext, task_id: str) -> None:
        owner, terminal, detail = await self._stored(ctx, task_id)
        if terminal:
            return
        cancelled = self.tasks.cancelled(detail)
        try:
            await self.store.put_task(
                task_id, msgspec.json.encode(_Snapshot(owner, True, cancelled)), True, None
            )
            await self.store.publish(msgspec.json.encode(_Note(k="cancel", t=task_id)))
        except StoreUnavailable as error:
            raise McpError(jsonrpc.INTERNAL_ERROR, f"Task not cancelled: {error}") from None

    async def update(
        self, ctx: RequestContext, task_id: str, input_responses: dict[str, Any]
    ) -> None:
        _, terminal, _ = await self._stored(ctx, task_id)
        if terminal:
            return
        try:
            await self.store.publish(
                msgspec.json.encode(_Note(k="update", t=task_id, r=input_responses))
            )
        except StoreUnavailable as error:
            raise McpError(jsonrpc.INTERNAL_ERROR, f"Task not updated: {error}") from None
