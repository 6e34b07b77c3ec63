"""Per-session state: values that last across one session's requests.

    @app.tool()
    async def add_to_cart(item: str, ctx: Context) -> int:
        cart = await ctx.session.get("cart", list[str]) or []
        cart.append(item)
        await ctx.session.set("cart", cart)
        return len(cart)

Values are stored as JSON and decoded as the type asked for, so what a worker
reads is what another wrote. A session is the MCP session: the HTTP session
(``Mcp-Session-Id``) on Streamable HTTP, the connection on stdio, legacy SSE
and in memory. With a shared store (``App(store=...)``) the state of HTTP
sessions is kept in it, for every worker; otherwise in this process. A
2026-07-28 request has no session: its state lasts that request only.
"""

from __future__ import annotations

import weakref
from typing import TypeVar

import msgspec

from ..stores import Store

T = TypeVar("T")

# How long the state of an HTTP session is kept in a shared store after its last write.
STATE_TTL = 24 * 3600.0


class SessionStates:
    """Where an app keeps its sessions' state."""

    def __init__(self) -> None:
        self.store: Store | None = None
        self._by_id: dict[str, dict[str, bytes]] = {}
        self._by_connection: weakref.WeakKeyDictionary[object, dict[str, bytes]] = (
            weakref.WeakKeyDictionary()
        )

    def for_http(self, session_id: str) -> SessionState:
        return SessionState(self, session_id, None)

    def for_connection(self, connection: object) -> SessionState:
        return SessionState(self, None, connection)

    def forget(self, session_id: str) -> None:
        self._by_id.pop(session_id, None)

    async def load(self, session_id: str | None, connection: object) -> dict[str, bytes]:
        if session_id is None:
            if connection is None:
                return {}
            return self._by_connection.setdefault(connection, {})
        store = self.store
        if store is None or not store.shared:
            return self._by_id.setdefault(session_id, {})
        raw = await store.get_task(_key(session_id))
        found: dict[str, bytes] = {}
        if raw is not None:
            for name, value in msgspec.json.decode(raw, type=dict[str, msgspec.Raw]).items():
                found[name] = bytes(value)
        return found

    async def save(self, session_id: str | None, values: dict[str, bytes]) -> None:
        store = self.store
        if session_id is None or store is None or not store.shared:
            return  # the dict loaded is the one kept
        record = msgspec.json.encode({name: msgspec.Raw(value) for name, value in values.items()})
        await store.put_task(_key(session_id), record, False, STATE_TTL)


def _key(session_id: str) -> str:
    return f"app-session-state:{session_id}"


class SessionState:
    """The state of one session (see the module docstring)."""

    __slots__ = ("_states", "_session_id", "_connection", "_values")

    def __init__(self, states: SessionStates | None, session_id: str | None, connection: object):
        self._states = states
        self._session_id = session_id
        self._connection = connection
        self._values: dict[str, bytes] | None = None

    async def _loaded(self) -> dict[str, bytes]:
        if self._values is None:
            self._values = (
                await self._states.load(self._session_id, self._connection)
                if self._states is not None
                else {}
            )
        return self._values

    async def get(self, key: str, type_: type[T]) -> T | None:
        """The value of ``key`` decoded as ``type_`` (``list[str]``, a Struct ...), or None if unset."""
        raw = (await self._loaded()).get(key)
        return None if raw is None else msgspec.json.decode(raw, type=type_)

    async def set(self, key: str, value: object) -> None:
        """Set ``key`` (any value msgspec encodes as JSON)."""
        values = await self._loaded()
        values[key] = msgspec.json.encode(value)
        if self._states is not None:
            await self._states.save(self._session_id, values)

    async def delete(self, key: str) -> None:
        values = await self._loaded()
        if values.pop(key, None) is not None and self._states is not None:
            await self._states.save(self._session_id, values)

    async def keys(self) -> list[str]:
        return list(await self._loaded())
