"""The JWT bearer authorization grant (RFC 7523 section 2.1): an assertion the
client got elsewhere, exchanged for an access token to the MCP server.

* Workload identity federation (the ``auth/wif`` extension): the assertion is
  the workload's own identity token (a cloud or CI platform issues it).
* Enterprise-managed authorization (the enterprise-managed-authorization
  extension): the user's ID token is first exchanged at the enterprise
  identity provider (RFC 8693) for an identity assertion authorization grant
  (ID-JAG) meant for the MCP server's authorization server;
  :class:`IdentityAssertionExchange` does that step.

A refused assertion fails the request that needed it; the provider neither
retries it nor falls back to another grant.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import httpx2

from ._discovery import BearerChallenge, Discovery, check_endpoint, select_scopes
from ._errors import AuthorizationError
from ._metadata import AuthorizationServerMetadata, Tokens
from ._provider import TokenProvider
from ._storage import TokenStorage
from ._tokens import (
    ClientAuthentication,
    SecretAuthentication,
    choose_method,
    token_request,
    tokens_from,
)

JWT_BEARER_GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"
TOKEN_EXCHANGE_GRANT = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:id_token"
ID_JAG_TYPE = "urn:ietf:params:oauth:token-type:id-jag"

AssertionSource = Callable[[httpx2.AsyncClient, Discovery], Awaitable[str]]
"""Makes the assertion for the authorization server ``discovery`` found."""


class JWTBearerProvider(TokenProvider):
    """An ``httpx2.Auth`` getting tokens with the JWT bearer grant.

    ``assertion`` is the JWT itself or an :data:`AssertionSource` called for
    each grant (assertions are short-lived). The client authenticates with
    ``client_secret`` when it has one (as the server supports), else it only
    names itself (``none``).
    """

    def __init__(
        self,
        server_url: str,
        *,
        assertion: str | AssertionSource,
        client_id: str,
        client_secret: str | None = None,
        scopes: tuple[str, ...] | None = None,
        storage: TokenStorage | None = None,
        http_client: httpx2.AsyncClient | None = None,
        timeout: float = 30.0,
        max_step_ups: int = 2,
        refresh_margin: float = 60.0,
        dpop: bool = False,
    ) -> None:
        super().__init__(
            server_url,
            storage=storage,
            http_client=http_client,
            timeout=timeout,
            max_step_ups=max_step_ups,
            refresh_margin=refresh_margin,
            dpop=dpop,
        )
        self._assertion = assertion
        self.client_id = client_id
        self._secret = client_secret
        self.scopes = scopes

    def initial_scopes(
        self, challenge: BearerChallenge | None, discovery: Discovery
    ) -> tuple[str, ...]:
        return self.scopes if self.scopes is not None else select_scopes(challenge, discovery)

    def step_up_scopes(
        self, challenge: BearerChallenge, discovery: Discovery, earlier: tuple[str, ...]
    ) -> tuple[str, ...]:
        return select_scopes(challenge, discovery, earlier)

    async def client_authentication(
        self, http: httpx2.AsyncClient, discovery: Discovery
    ) -> ClientAuthentication:
        method = choose_method(discovery.server.auth_methods(), self._secret is not None)
        return SecretAuthentication(self.client_id, self._secret, method)

    async def obtain(
        self, http: httpx2.AsyncClient, discovery: Discovery, scopes: tuple[str, ...]
    ) -> Tokens:
        assertion = (
            self._assertion
            if isinstance(self._assertion, str)
            else await self._assertion(http, discovery)
        )
        form = {
            "grant_type": JWT_BEARER_GRANT,
            "assertion": assertion,
            "resource": discovery.resource,
        }
        if scopes:
            form["scope"] = " ".join(scopes)
        auth = await self.client_authentication(http, discovery)
        dpop = self.dpop_for(discovery)
        answer = await token_request(http, discovery.server, form, auth, dpop)
        return tokens_from(
            answer,
            issuer=discovery.issuer,
            resource=discovery.resource,
            requested=scopes,
            dpop=dpop is not None,
        )


@dataclass(frozen=True)
class IdentityAssertionExchange:
    """An :data:`AssertionSource` for enterprise-managed authorization: the
    user's ``id_token`` exchanged (RFC 8693) at the identity provider's
    ``token_endpoint`` for an ID-JAG whose audience is the MCP server's
    authorization server and whose resource is the MCP server."""

    token_endpoint: str
    id_token: str = field(repr=False)
    client_id: str
    client_secret: str | None = field(default=None, repr=False)

    async def __call__(self, http: httpx2.AsyncClient, discovery: Discovery) -> str:
        check_endpoint(self.token_endpoint, "the identity provider's token endpoint")
        idp = AuthorizationServerMetadata(
            issuer=self.token_endpoint, token_endpoint=self.token_endpoint
        )
        form = {
            "grant_type": TOKEN_EXCHANGE_GRANT,
            "requested_token_type": ID_JAG_TYPE,
            "audience": discovery.issuer,
            "resource": discovery.resource,
            "subject_token": self.id_token,
            "subject_token_type": ID_TOKEN_TYPE,
        }
        method = "client_secret_post" if self.client_secret is not None else "none"
        answer = await token_request(
            http, idp, form, SecretAuthentication(self.client_id, self.client_secret, method)
        )
        if answer.issued_token_type != ID_JAG_TYPE:
            raise AuthorizationError(
                f"the identity provider issued a {answer.issued_token_type!r} token, not an identity assertion grant"
            )
        return answer.access_token
