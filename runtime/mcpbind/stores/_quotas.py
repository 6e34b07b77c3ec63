"""Per-client quotas counted app-wide in a shared store.

With one process, :class:`~mcpbind._core.limits.Quota` counts the places a
client holds (sessions, open streams, 2026-07-28 requests in flight). With
several workers each would count only its own. A :class:`SharedQuota` keeps
each place as a lease in the store: the worker holding a stream or a request
renews its leases while it holds them, so the places of a worker that died
free themselves within ``ttl``; a session's lease lives as long as the
session (it is renewed when the session's expiry is pushed back).

With a ``timeout``, every store call of the quota is bounded by it (a stalled
store is then the store unavailable, within ``timeout``). A lease whose
taking timed out may still be written when the store wakes up (the command
was sent): it is dropped once the store answers again, else it runs out
within ``ttl`` (past ``UNSURE_KEPT`` of them).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import Awaitable
from typing import Any, TypeVar

from ._base import Store, StoreUnavailable

logger = logging.getLogger(__name__)
_T = TypeVar("_T")

LEASE_TTL = 30.0
"""Seconds a place held by a worker that stopped renewing it stays counted."""

UNSURE_KEPT = 256
"""Leases whose taking timed out, remembered to be dropped when the store answers
again (at most; the others run out within the lease's ttl)."""


def _ended_in_background(task: asyncio.Future[Any]) -> None:
    """The end of a store call given up on: its outcome was answered already."""
    if not task.cancelled():
        task.exception()  # retrieved, so that asyncio does not log it


class SharedQuota:
    """At most ``limit`` places per client key, app-wide.

    ``renew``: the worker renews what it holds every ``ttl / 3`` seconds
    (streams, requests); without it the holder calls :meth:`renew` itself
    (sessions, whenever their expiry is pushed back)."""

    def __init__(
        self,
        store: Store,
        kind: str,
        limit: int,
        ttl: float | None = None,
        renew: bool = True,
        timeout: float | None = None,
    ) -> None:
        """``timeout``: seconds each store call may take (None: the store's own bounds)."""
        self.store = store
        self.timeout = timeout
        self._unsure: dict[tuple[str, str], None] = {}  # taken when the store did not answer
        self._given_up: set[asyncio.Future[Any]] = set()  # store calls past the timeout, ending
        self.kind = kind
        self.limit = limit
        self.ttl = LEASE_TTL if ttl is None else ttl
        self._renews = renew
        self._held: dict[str, dict[str, None]] = {}  # client key -> places held here
        self._renewer: asyncio.Task[None] | None = None
        self._background: set[asyncio.Task[None]] = set()

    def _name(self, client: str) -> str:
        return f"{self.kind}:{client}"

    async def take(self, client: str, place: str | None = None) -> str | None:
        """A new place for ``client`` (its name: ``place``, or a fresh one),
        or None when the client holds ``limit`` already. Raises
        StoreUnavailable."""
        place = place or secrets.token_hex(8)
        try:
            if self._unsure:  # first, so that they do not take this client's places
                await self._drop_unsure()
            taken = await self._bounded(
                self.store.take_lease(self._name(client), place, self.limit, self.ttl)
            )
        except StoreUnavailable:
            if self.timeout is not None and len(self._unsure) < UNSURE_KEPT:
                self._unsure[client, place] = None
            raise
        if not taken:
            return None
        self._held.setdefault(client, {})[place] = None
        if self._renews and self._renewer is None:
            self._renewer = asyncio.get_running_loop().create_task(
                self._renew_held(), name=f"mcp-leases-{self.kind}"
            )
        return place

    async def held(self, client: str, place: str) -> bool:
        """Whether ``place`` of ``client`` is held, by any worker. Raises StoreUnavailable."""
        return await self._bounded(self.store.lease_held(self._name(client), place))

    async def _bounded(self, call: Awaitable[_T]) -> _T:
        """``call``, within ``timeout`` seconds when there is one.

        The call runs as a task of its own, waited for, not cancelled in place: redis-py
        has been seen to lose a cancellation (one that lands as a connection to a stalled
        Redis is being made) and wait on for its own socket timeout. Past ``timeout`` the
        task is cancelled and left to end in the background."""
        if self.timeout is None:
            return await call
        task = asyncio.ensure_future(call)
        try:
            done, _ = await asyncio.wait({task}, timeout=self.timeout)
        except BaseException:
            task.cancel()
            raise
        if task in done:
            return task.result()
        task.cancel()
        self._given_up.add(task)
        task.add_done_callback(self._given_up.discard)
        task.add_done_callback(_ended_in_background)
        raise StoreUnavailable(f"the shared store did not answer within {self.timeout:g} s")

    async def _drop_unsure(self) -> None:
        unsure = list(self._unsure)
        await self._bounded(
            asyncio.gather(
                *(self.store.drop_lease(self._name(client), place) for client, place in unsure)
            )
        )
        for dropped in unsure:
            self._unsure.pop(dropped, None)

    def give(self, client: str, place: str) -> None:
        """Free a place (in the background: the answer does not wait for it)."""
        held = self._held.get(client)
        if held is not None:
            held.pop(place, None)
            if not held:
                del self._held[client]
        task = asyncio.get_running_loop().create_task(self._drop(client, place))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def renew(self, client: str, place: str) -> None:
        """Push back the expiry of one place (in the background)."""
        task = asyncio.get_running_loop().create_task(self._renew_one(client, place))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def close(self) -> None:
        tasks = [*self._background, *([self._renewer] if self._renewer is not None else [])]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, StoreUnavailable):
                await task
        self._renewer = None

    async def _drop(self, client: str, place: str) -> None:
        try:
            await self._bounded(self.store.drop_lease(self._name(client), place))
        except StoreUnavailable:
            pass  # it runs out by itself within ttl

    async def _renew_one(self, client: str, place: str) -> None:
        try:
            await self._bounded(self.store.renew_leases(self._name(client), [place], self.ttl))
        except StoreUnavailable:
            pass

    async def _renew_held(self) -> None:
        while True:
            await asyncio.sleep(self.ttl / 3)
            for client, places in list(self._held.items()):
                try:
                    await self._bounded(
                        self.store.renew_leases(self._name(client), list(places), self.ttl)
                    )
                except StoreUnavailable as error:
                    logger.warning("per-client %s quota leases not renewed: %s", self.kind, error)
                    break


__all__ = ["LEASE_TTL", "SharedQuota"]
