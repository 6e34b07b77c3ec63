"""Per-client quotas counted app-wide in a shared store.

With one process, :class:`~mcp_runtime.limits.Quota` counts the places a
client holds (sessions, open streams, 2026-07-28 requests in flight). With
several workers each would count only its own. A :class:`SharedQuota` keeps
each place as a lease in the store: the worker holding a stream or a request
renews its leases while it holds them, so the places of a worker that died
free themselves within ``ttl``; a session's lease lives as long as the
session (it is renewed when the session's expiry is pushed back).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets

from .base import Store, StoreUnavailable

logger = logging.getLogger("mcp_runtime.stores")

LEASE_TTL = 30.0
"""Seconds a place held by a worker that stopped renewing it stays counted."""


class SharedQuota:
    """At most ``limit`` places per client key, app-wide.

    ``renew``: the worker renews what it holds every ``ttl / 3`` seconds
    (streams, requests); without it the holder calls :meth:`renew` itself
    (sessions, whenever their expiry is pushed back)."""

    def __init__(
        self, store: Store, kind: str, limit: int, ttl: float | None = None, renew: bool = True
    ) -> None:
        self.store = store
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
        if not await self.store.take_lease(self._name(client), place, self.limit, self.ttl):
            return None
        self._held.setdefault(client, {})[place] = None
        if self._renews and self._renewer is None:
            self._renewer = asyncio.get_running_loop().create_task(
                self._renew_held(), name=f"mcp-leases-{self.kind}"
            )
        return place

    async def held(self, client: str, place: str) -> bool:
        """Whether ``place`` of ``client`` is held, by any worker. Raises StoreUnavailable."""
        return await self.store.lease_held(self._name(client), place)

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
            await self.store.drop_lease(self._name(client), place)
        except StoreUnavailable:
            pass  # it runs out by itself within ttl

    async def _renew_one(self, client: str, place: str) -> None:
        try:
            await self.store.renew_leases(self._name(client), [place], self.ttl)
        except StoreUnavailable:
            pass

    async def _renew_held(self) -> None:
        while True:
            await asyncio.sleep(self.ttl / 3)
            for client, places in list(self._held.items()):
                try:
                    await self.store.renew_leases(self._name(client), list(places), self.ttl)
                except StoreUnavailable as error:
                    logger.warning("per-client %s quota leases not renewed: %s", self.kind, error)
                    break


__all__ = ["LEASE_TTL", "SharedQuota"]
