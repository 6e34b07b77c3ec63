"""The in-process store: the default, for one worker.

The runtime does not route its own state through it (``shared`` is False, so
the HTTP app and the tasks extension keep their structures and their speed);
it implements the interface for code written against a :class:`Store` and as
the reference the Redis store is tested against.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import AsyncIterator, Sequence

from ._base import Listener


class _Log:
    def __init__(self) -> None:
        self.events: deque[tuple[int, bytes]] = deque()
        self.last = 0
        self.ended = False
        self.changed = asyncio.Event()
        self.expires = float("inf")
        self.about: bytes | None = None


class MemoryStore:
    shared = False

    def __init__(self) -> None:
        self._sessions: dict[str, tuple[float, bytes]] = {}
        self._logs: dict[str, _Log] = {}
        self._marks: dict[str, tuple[float, int]] = {}
        self._tasks: dict[str, tuple[float, bytes, bool]] = {}
        self._leases: dict[str, dict[str, float]] = {}  # name -> member -> expiry
        self._listeners: list[Listener] = []
        self._boxes: dict[str, Listener] = {}

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        return None

    # sessions ---------------------------------------------------------

    def _live(self, now: float) -> None:
        for session_id in [s for s, (expires, _) in self._sessions.items() if expires <= now]:
            del self._sessions[session_id]

    async def create_session(self, session_id: str, record: bytes, ttl: float, cap: int) -> bool:
        now = time.monotonic()
        self._live(now)
        if len(self._sessions) >= cap:
            return False
        self._sessions[session_id] = (now + ttl, record)
        return True

    async def touch_session(self, session_id: str, ttl: float) -> bytes | None:
        now = time.monotonic()
        found = self._sessions.get(session_id)
        if found is None or found[0] <= now:
            self._sessions.pop(session_id, None)
            return None
        self._sessions[session_id] = (now + ttl, found[1])
        return found[1]

    async def update_session(self, session_id: str, record: bytes, ttl: float) -> None:
        if session_id in self._sessions:
            self._sessions[session_id] = (time.monotonic() + ttl, record)

    async def delete_session(self, session_id: str) -> bool:
        for key in [k for k in self._logs if k.startswith(f"{session_id}:")]:
            del self._logs[key]
        return self._sessions.pop(session_id, None) is not None

    async def count_sessions(self) -> int:
        self._live(time.monotonic())
        return len(self._sessions)

    # leases -----------------------------------------------------------

    def _live_leases(self, name: str) -> dict[str, float]:
        now = time.monotonic()
        held = self._leases.setdefault(name, {})
        for member in [m for m, expires in held.items() if expires <= now]:
            del held[member]
        return held

    async def take_lease(self, name: str, member: str, limit: int, ttl: float) -> bool:
        held = self._live_leases(name)
        if member not in held and len(held) >= limit:
            return False
        held[member] = time.monotonic() + ttl
        return True

    async def renew_leases(self, name: str, members: Sequence[str], ttl: float) -> None:
        held = self._live_leases(name)
        for member in members:
            if member in held:
                held[member] = time.monotonic() + ttl

    async def lease_held(self, name: str, member: str) -> bool:
        return member in self._live_leases(name)

    async def drop_lease(self, name: str, member: str) -> None:
        held = self._leases.get(name)
        if held is not None:
            held.pop(member, None)
            if not held:
                del self._leases[name]

    # event logs -------------------------------------------------------

    def _log(self, stream: str, ttl: float) -> _Log:
        log = self._logs.get(stream)
        now = time.monotonic()
        if log is None or log.expires <= now:
            log = self._logs[stream] = _Log()
        log.expires = now + ttl
        return log

    def _add(self, log: _Log, seq: int, message: bytes, max_events: int) -> None:
        log.events.append((seq, message))
        log.last = seq
        while len(log.events) > max_events:
            log.events.popleft()
        log.changed.set()
        log.changed = asyncio.Event()

    async def append(
        self, stream: str, message: bytes, ttl: float, max_events: int, once: str | None = None
    ) -> int:
        if once is not None:
            if once in self._marks:
                return 0
            self._marks[once] = (time.monotonic() + ttl, 1)
        log = self._log(stream, ttl)
        self._add(log, log.last + 1, message, max_events)
        return log.last

    async def append_at(
        self,
        stream: str,
        seq: int,
        message: bytes | None,
        ttl: float,
        max_events: int,
        end: bool = False,
        about: bytes | None = None,
    ) -> None:
        log = self._log(stream, ttl)
        if about is not None and log.about is None:
            log.about = about
        if message is not None and seq > log.last:
            self._add(log, seq, message, max_events)
        if message is None or end:
            log.ended = True
            log.changed.set()

    async def has_stream(self, stream: str) -> bool:
        log = self._logs.get(stream)
        return (
            log is not None
            and log.expires > time.monotonic()
            and (bool(log.events) or log.ended or log.about is not None)
        )

    async def declare_stream(self, stream: str, about: bytes, ttl: float) -> None:
        log = self._log(stream, ttl)
        if log.about is None:
            log.about = about

    async def stream_about(self, stream: str) -> bytes | None:
        log = self._logs.get(stream)
        return log.about if log is not None and log.expires > time.monotonic() else None

    async def read_after(
        self, stream: str, after: int, wait: float
    ) -> tuple[list[tuple[int, bytes]], bool]:
        log = self._logs.get(stream)
        if log is None:
            log = self._log(stream, wait + 60)
        if log.last <= after and not log.ended and wait > 0:
            try:
                await asyncio.wait_for(log.changed.wait(), wait)
            except TimeoutError:
                pass
        return [event for event in log.events if event[0] > after], log.ended

    async def set_mark(self, key: str, value: int, ttl: float) -> None:
        self._marks[key] = (time.monotonic() + ttl, value)

    async def get_mark(self, key: str) -> int:
        found = self._marks.get(key)
        return found[1] if found is not None and found[0] > time.monotonic() else 0

    # tasks ------------------------------------------------------------

    async def put_task(
        self, task_id: str, snapshot: bytes, terminal: bool, ttl: float | None
    ) -> None:
        found = self._tasks.get(task_id)
        if found is not None and found[2]:
            return
        self._tasks[task_id] = (
            float("inf") if ttl is None else time.monotonic() + ttl,
            snapshot,
            terminal,
        )

    async def get_task(self, task_id: str) -> bytes | None:
        found = self._tasks.get(task_id)
        if found is None or found[0] <= time.monotonic():
            return None
        return found[1]

    # bus --------------------------------------------------------------

    async def publish(self, message: bytes) -> None:
        for listener in list(self._listeners):
            await listener(message)

    def subscribe(self, listener: Listener) -> None:
        self._listeners.append(listener)

    # mailboxes --------------------------------------------------------

    async def post(self, box: str, message: bytes) -> None:
        listener = self._boxes.get(box)
        if listener is not None:
            await listener(message)

    @contextlib.asynccontextmanager
    async def hold_box(self, box: str, listener: Listener) -> AsyncIterator[None]:
        self._boxes[box] = listener
        try:
            yield
        finally:
            if self._boxes.get(box) is listener:
                del self._boxes[box]
