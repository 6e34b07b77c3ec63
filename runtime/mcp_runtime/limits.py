"""Per-client quotas, so that no one client takes every place of a shared cap.

A client is named by a key: its authenticated principal where the app is
told how to find one (``client_key``), else its peer address. Each
:class:`Quota` counts the places a key holds (sessions, open streams) and
forgets keys that hold none, so it costs nothing for clients that left.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from typing import Any

ClientKey = Callable[[MutableMapping[str, Any]], str]
"""Names the client of an ASGI request from its scope."""


def peer_key(scope: MutableMapping[str, Any]) -> str:
    """The default client key: the peer's address (all ports of one host are one client)."""
    client = scope.get("client")
    if isinstance(client, (tuple, list)) and client:
        return f"peer:{client[0]}"
    return "peer:unknown"


class Quota:
    """Places held by client key, at most ``limit`` each (None: no limit)."""

    def __init__(self, limit: int | None) -> None:
        if limit is not None and limit <= 0:
            raise ValueError("a per-client limit must be positive (or None for none)")
        self.limit = limit
        self._held: dict[str, int] = {}

    def full(self, key: str) -> bool:
        return self.limit is not None and self._held.get(key, 0) >= self.limit

    def held(self, key: str) -> int:
        return self._held.get(key, 0)

    def take(self, key: str) -> None:
        self._held[key] = self._held.get(key, 0) + 1

    def give(self, key: str) -> None:
        left = self._held.get(key, 0) - 1
        if left > 0:
            self._held[key] = left
        else:
            self._held.pop(key, None)
