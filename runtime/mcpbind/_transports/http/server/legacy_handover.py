"""Legacy HTTP+SSE sessions (2024-11-05) served by several workers through a shared store.

A legacy session lives in the worker holding its SSE stream: its messages must reach that
worker, whichever worker their POST lands on. With a shared store each session is a lease
in one app-wide set (its place, capped by ``max_sessions``; the holder renews it
while the stream is open, so the session of a worker that died is forgotten within
:data:`~mcpbind.stores._quotas.LEASE_TTL`), and the holder listens on the session's
mailbox. A POST landing elsewhere is handed over there; the holder feeds its session and
says whether it took the message, and only then is the POST answered (202), so that a
client that waits for each answer keeps its order. A holder that does not answer within
:data:`HANDOVER_WAIT` is taken for gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Final

import msgspec

from ....auth._principal import Principal
from ....stores._base import Store, StoreUnavailable
from ....stores._quotas import SharedQuota

logger = logging.getLogger(__name__)

HANDOVER_WAIT: Final = 5.0
"""Seconds a POST waits for the worker holding its session's stream to take its message."""

TAKEN: Final = b"taken"
BUSY: Final = b"busy"  # max_concurrent_requests of the session reached: 429
UNKNOWN: Final = b"unknown"  # no such session there (ended, or another principal's): 404

_ALL = ""  # the one "client" of the app-wide set of sessions


class _Handover(msgspec.Struct, omit_defaults=True):
    b: bytes  # the POST's body
    r: str  # the mailbox the holder answers to
    o: str | None = None  # the key of the POST's principal
    p: Principal | None = None  # the principal itself, for the handlers
    h: dict[str, str] | None = None  # the POST's headers, for the handlers (ctx.extra)


_decode_handover = msgspec.json.Decoder(_Handover)
_encode = msgspec.json.Encoder(enc_hook=str)  # claims a verifier kept as other types travel as text

Take = Callable[[str, bytes, Principal | None, str | None, Mapping[str, str] | None], bytes]
"""The holder's side: feed ``(session id, body, principal, owner, headers)`` to the session
held here; TAKEN, BUSY or UNKNOWN."""


class LegacyHandover:
    """The legacy sessions of one app, placed app-wide in ``store``; ``take`` feeds a
    message to a session this worker holds."""

    def __init__(self, store: Store, cap: int, take: Take) -> None:
        self.store = store
        self.take = take
        self.places = SharedQuota(store, "legacy-sessions", cap)
        self._answers: set[asyncio.Task[None]] = set()

    async def admit(self, session_id: str) -> str | None:
        """Place a new session app-wide; why not, if not."""
        try:
            if await self.places.take(_ALL, session_id) is None:
                return "Service Unavailable: too many sessions"
        except StoreUnavailable as error:
            return f"Service Unavailable: {error}"
        return None

    def release(self, session_id: str) -> None:
        self.places.give(_ALL, session_id)

    @contextlib.asynccontextmanager
    async def hold(self, session_id: str) -> AsyncIterator[None]:
        """Listen for the session's messages from other workers while held
        (raises StoreUnavailable when the store cannot listen)."""

        async def handed(message: bytes) -> None:
            try:
                handover = _decode_handover.decode(message)
            except msgspec.MsgspecError:
                return
            outcome = self.take(session_id, handover.b, handover.p, handover.o, handover.h)
            # Answered off the pub/sub connection's loop, which must not wait on a command.
            task = asyncio.get_running_loop().create_task(self._answer(handover.r, outcome))
            self._answers.add(task)
            task.add_done_callback(self._answers.discard)

        async with self.store.hold_box(_box(session_id), handed):
            yield

    async def _answer(self, box: str, outcome: bytes) -> None:
        try:
            await self.store.post(box, outcome)
        except StoreUnavailable as error:
            logger.warning("a legacy SSE message was taken but its POST not told: %s", error)

    async def hand_over(
        self,
        session_id: str,
        body: bytes,
        principal: Principal | None,
        headers: dict[str, str] | None = None,
    ) -> bytes | None:
        """Hand a POST's message (and its ``headers``) to the worker holding the
        session: TAKEN, BUSY, UNKNOWN, or None when no worker took it within
        HANDOVER_WAIT. Raises StoreUnavailable."""
        if not await self.places.held(_ALL, session_id):
            return UNKNOWN
        answered: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()

        async def answer(message: bytes) -> None:
            if not answered.done():
                answered.set_result(bytes(message))

        owner = principal.key if principal is not None else None
        reply = f"legacy-answer:{secrets.token_hex(12)}"
        async with self.store.hold_box(reply, answer):
            await self.store.post(
                _box(session_id),
                _encode.encode(_Handover(b=body, r=reply, o=owner, p=principal, h=headers)),
            )
            try:
                return await asyncio.wait_for(answered, HANDOVER_WAIT)
            except TimeoutError:
                return None

    async def close(self) -> None:
        for task in list(self._answers):
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self.places.close()


def _box(session_id: str) -> str:
    return f"legacy:{session_id}"


__all__ = ["BUSY", "HANDOVER_WAIT", "TAKEN", "UNKNOWN", "LegacyHandover"]
