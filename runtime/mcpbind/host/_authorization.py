"""OAuth for the servers of a host: entries whose ``auth`` is
``{"type": "oauth", ...}`` (:class:`~.config.OAuthEntry`) are authorized by
the OAuth client (:mod:`mcpbind.auth.client`), one provider per server,
kept across reconnections so that its tokens are too.

The application gives what only it can: how the user is sent to the
authorization URL and how the answer comes back (a
:class:`~mcpbind.auth.client.RedirectHandler`, shared by every server),
and where each server's tokens and client registrations are kept (in memory
by default)::

    oauth = HostAuthorization(LoopbackRedirect(), storage=lambda server: KeychainStorage(server.name))
    async with Host("servers.json", oauth=oauth) as host:
        ...
"""

from __future__ import annotations

from collections.abc import Callable

from ..auth.client import (
    ClientMetadata,
    InMemoryTokenStorage,
    OAuthClientProvider,
    PreRegisteredClient,
    RedirectHandler,
    TokenStorage,
)
from ._config import ServerConfig


class HostAuthorization:
    """The redirect step and the token storage of a host's OAuth entries.

    ``storage`` makes the storage of one server (called once per server);
    ``client_name`` is what the host registers as where it registers itself."""

    def __init__(
        self,
        redirect: RedirectHandler,
        *,
        storage: Callable[[ServerConfig], TokenStorage] | None = None,
        client_name: str = "mcp-runtime host",
    ) -> None:
        self.redirect = redirect
        self._storage = storage
        self.client_name = client_name

    def provider(self, server: ServerConfig) -> OAuthClientProvider:
        """The OAuth client of ``server`` (an entry with an ``oauth`` setting)."""
        entry = server.oauth
        assert entry is not None and server.url is not None
        pre_registered = (
            PreRegisteredClient(entry.client_id, entry.client_secret)
            if entry.client_id is not None
            else None
        )
        return OAuthClientProvider(
            server.url,
            client_metadata=ClientMetadata(client_name=self.client_name),
            redirect=self.redirect,
            pre_registered=pre_registered,
            scopes=entry.scopes,
            storage=self._storage(server) if self._storage is not None else InMemoryTokenStorage(),
        )
