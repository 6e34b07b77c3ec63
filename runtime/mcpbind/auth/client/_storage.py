"""Where an authorized client keeps its tokens and client registrations.

Client credentials are kept per authorization server (by issuer), so those of
one are never offered to another. The default keeps everything in memory for
the life of the process; implement :class:`TokenStorage` to keep them longer
(an OS keychain, an encrypted file).
"""

from __future__ import annotations

from typing import Protocol

from ._metadata import ClientInformation, Tokens


class TokenStorage(Protocol):
    async def get_tokens(self) -> Tokens | None: ...

    async def set_tokens(self, tokens: Tokens | None) -> None:
        """Keep ``tokens``; None forgets them."""

    async def get_client(self, issuer: str) -> ClientInformation | None: ...

    async def set_client(self, issuer: str, client: ClientInformation | None) -> None:
        """Keep the client's credentials at ``issuer``; None forgets them."""


class InMemoryTokenStorage:
    """A :class:`TokenStorage` that lasts as long as the object."""

    def __init__(self) -> None:
        self._tokens: Tokens | None = None
        self._clients: dict[str, ClientInformation] = {}

    async def get_tokens(self) -> Tokens | None:
        return self._tokens

    async def set_tokens(self, tokens: Tokens | None) -> None:
        self._tokens = tokens

    async def get_client(self, issuer: str) -> ClientInformation | None:
        return self._clients.get(issuer)

    async def set_client(self, issuer: str, client: ClientInformation | None) -> None:
        if client is None:
            self._clients.pop(issuer, None)
        else:
            self._clients[issuer] = client
