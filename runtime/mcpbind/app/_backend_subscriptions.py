"""What a proxied server is asked to tell the proxy of, beyond its answers.

A front client's ``resources/subscribe`` of a proxied URI, or a 2026-07-28
front's ``subscriptions/listen`` stream asking for it, subscribes the backend
to its own URI (and ``resources/unsubscribe`` once no front client or stream
is still subscribed), again after each reconnection. A 2026-07-28 backend tells of
list changes and resource updates only on a ``subscriptions/listen`` stream:
one is kept open, asking for the lists its capabilities say change and the
URIs the front's clients are subscribed to, and opened anew (before the old one
closes, so nothing goes unheard) when those URIs change. Its notifications
reach the proxy's client handlers (:class:`.relay.BackendHandlers`) as an
older backend's do, so its list changes refresh the app's lists and its
definitions are checked against the pins (:mod:`.pinning`) as they change.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Protocol

from .._client.client import ClientSession, Listener
from .._core import lifecycle
from .._core.jsonrpc import McpError
from ._mount import unprefixed_uri
from ._registry import Registry

logger = logging.getLogger(__name__)


class Backend(Protocol):
    """What the subscriptions need of the proxy."""

    prefix: str
    session: ClientSession | None

    async def forward(self, method: str, wire: Mapping[str, object], ctx: None) -> object: ...


class Subscriptions:
    """One proxied server's subscriptions and, at 2026-07-28, its listen stream."""

    def __init__(self, backend: Backend, registry: Registry) -> None:
        self.backend = backend
        self.registry = registry
        self.uris: set[str] = set()  # its URIs the front's clients subscribed to
        self.listener: Listener | None = None
        registry.subscription_watchers.append(self.changed)

    async def changed(self, uri: str, subscribed: bool) -> None:
        """A front client (un)subscribed to ``uri``: the backend is told, if it is
        one of its resources, it takes subscriptions, and (to unsubscribe) no
        other front client is still subscribed."""
        inner = unprefixed_uri(self.backend.prefix, uri)
        if inner is None:
            return
        if subscribed:
            if inner in self.uris:
                return  # subscribed already
            self.uris.add(inner)
        elif self.registry.subscribed(uri):
            return
        else:
            self.uris.discard(inner)
        await self._subscribe(inner, subscribed)

    async def before_lists(self) -> None:
        """A new session, before its lists are read: a 2026-07-28 backend is listened to."""
        session = self.backend.session
        if session is not None and session.stateless:
            await self._listen(session)

    async def after_lists(self) -> None:
        """A new session of an older backend, its lists read: subscribed to nothing yet."""
        session = self.backend.session
        if session is not None and not session.stateless:
            for inner in self.uris:
                await self._subscribe(inner, True)

    def lost(self) -> None:
        self.listener = None  # its stream ends with the session

    async def _subscribe(self, inner: str, subscribed: bool) -> None:
        session = self.backend.session
        if session is None or not lifecycle.has_capability(
            session.server_capabilities, ("resources", "subscribe")
        ):
            return
        if session.stateless:
            await self._listen(session)
            return
        method = "resources/subscribe" if subscribed else "resources/unsubscribe"
        await self.backend.forward(method, {"uri": inner}, None)

    async def _listen(self, session: ClientSession) -> None:
        offered = session.server_capabilities
        changing = [
            lifecycle.has_capability(offered, (kind, "listChanged"))
            for kind in ("tools", "prompts", "resources")
        ]
        uris = (
            sorted(self.uris)
            if lifecycle.has_capability(offered, ("resources", "subscribe"))
            else []
        )
        old, self.listener = self.listener, None
        if any(changing) or uris:
            try:
                self.listener = await session.listen(
                    tools_list_changed=changing[0],
                    prompts_list_changed=changing[1],
                    resources_list_changed=changing[2],
                    resource_subscriptions=uris,
                )
            except McpError as error:  # still of use: its lists are read at each connection
                logger.warning(
                    "proxy %r: subscriptions/listen failed: %s", self.backend.prefix, error.message
                )
        if old is not None:
            await old.close()
