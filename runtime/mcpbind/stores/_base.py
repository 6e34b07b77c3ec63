"""The store interface: what server state several workers must share.

Records are opaque bytes (the runtime encodes them with msgspec); a store
only keeps them, expires them and hands them to whoever asks. Every method
either completes or raises :class:`StoreUnavailable`: nothing is ever
half-written (the Redis store makes each multi-key change one script).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from contextvars import ContextVar
from typing import Protocol

Listener = Callable[[bytes], Awaitable[None]]

# The change notification being delivered, by the id its publisher gave it:
# every worker holding a copy of a session delivers it, and the session's
# shared stream keeps it once.
current_note: ContextVar[str | None] = ContextVar("mcp_store_note", default=None)


class StoreUnavailable(Exception):
    """The shared store cannot be reached; the request is refused (503 or
    -32603), and served again once the store is back."""


class SessionStore(Protocol):
    """Handshake sessions: id → record (revision, client capabilities and
    info, log level), expiring after ``ttl`` idle seconds, capped app-wide."""

    async def create_session(self, session_id: str, record: bytes, ttl: float, cap: int) -> bool:
        """Keep a new session; False (and nothing kept) when ``cap`` live sessions exist."""

    async def touch_session(self, session_id: str, ttl: float) -> bytes | None:
        """The record of a live session, its expiry pushed back; None if gone."""

    async def update_session(self, session_id: str, record: bytes, ttl: float) -> None:
        """Replace a live session's record (a new log level)."""

    async def delete_session(self, session_id: str) -> bool:
        """Forget a session and its event logs; whether it was there."""

    async def count_sessions(self) -> int:
        """Live sessions, app-wide."""


class EventLog(Protocol):
    """The events of SSE streams kept for resumption, by stream key, with
    integer ids that only grow; an end mark says no more will come."""

    async def append(
        self, stream: str, message: bytes, ttl: float, max_events: int, once: str | None = None
    ) -> int:
        """Add one event with the next id of ``stream`` (any worker may write); its id.
        With ``once``, only the first append naming it is kept (0 for the others)."""

    async def has_stream(self, stream: str) -> bool:
        """Whether ``stream`` has events (or its end mark, or what it is) kept."""

    async def declare_stream(self, stream: str, about: bytes, ttl: float) -> None:
        """Keep what ``stream`` is before any of its events (as
        :meth:`append_at` does with its first), so that every worker knows
        the stream from then on."""

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
        """Add the event ``seq`` (one writer numbers them); ``end``: the last
        one (None: just the end mark). The expiry is pushed back on the first
        event, the last, and every 64th (not on each). ``about``: what the
        stream is (kept beside it as long as it, for :meth:`stream_about`);
        given with its first event. An ``seq`` at or below the last is
        ignored: a write is done once, whichever writer comes first."""

    async def stream_about(self, stream: str) -> bytes | None:
        """What the first event's writer said the stream is, if anything."""

    async def read_after(
        self, stream: str, after: int, wait: float
    ) -> tuple[list[tuple[int, bytes]], bool]:
        """Events after ``after`` (waiting up to ``wait`` seconds for the first
        when there is none yet), and whether the end mark follows them."""

    async def set_mark(self, key: str, value: int, ttl: float) -> None:
        """Remember an integer (how far a stream was handed out)."""

    async def get_mark(self, key: str) -> int:
        """A remembered integer; 0 if none (or expired)."""


class TaskStore(Protocol):
    """Snapshots of tasks (the ``tasks/get`` answer and owner), written by the
    worker running the task, read by every other."""

    async def put_task(
        self, task_id: str, snapshot: bytes, terminal: bool, ttl: float | None
    ) -> None:
        """Write a snapshot, unless the stored one is terminal already (one script)."""

    async def get_task(self, task_id: str) -> bytes | None:
        """The latest snapshot, or None if unknown or expired."""


class LeaseStore(Protocol):
    """Places under a limit, counted app-wide: each place a lease (a member
    of a named set) that lives ``ttl`` seconds unless renewed, so the places
    of a worker that died free themselves."""

    async def take_lease(self, name: str, member: str, limit: int, ttl: float) -> bool:
        """Hold ``member`` of ``name`` for ``ttl`` seconds; False (and nothing
        held) when ``limit`` live leases of ``name`` exist (one script)."""

    async def renew_leases(self, name: str, members: Sequence[str], ttl: float) -> None:
        """Push back the expiry of the leases of ``members`` still held."""

    async def drop_lease(self, name: str, member: str) -> None: ...

    async def lease_held(self, name: str, member: str) -> bool:
        """Whether some worker holds the lease of ``member`` of ``name`` now."""


class Bus(Protocol):
    """Messages to every worker (change notifications, task cancellations,
    closed sessions), the sender included."""

    async def publish(self, message: bytes) -> None: ...

    def subscribe(self, listener: Listener) -> None:
        """Call ``listener`` with every message published from now on."""


class Mailboxes(Protocol):
    """Messages to one named box, heard only by the worker holding it (the
    worker holding a legacy SSE session's stream, a worker waiting for an
    answer), and lost when nobody holds it."""

    async def post(self, box: str, message: bytes) -> None: ...

    def hold_box(self, box: str, listener: Listener) -> AbstractAsyncContextManager[None]:
        """Call ``listener`` with every message posted to ``box`` while the
        context is held (entered once the store listens)."""


class Store(SessionStore, EventLog, TaskStore, LeaseStore, Bus, Mailboxes, Protocol):
    """Everything the HTTP app, the server and the tasks extension share.

    ``shared`` tells the runtime whether other processes see it: when False
    it keeps using its own in-process structures (no awaits added)."""

    shared: bool

    async def start(self) -> None:
        """Connect and start delivering published messages (idempotent)."""

    async def close(self) -> None: ...
