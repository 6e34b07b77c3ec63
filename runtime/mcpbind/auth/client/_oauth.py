"""The authorization code flow with PKCE, for MCP clients acting for a user.

    provider = OAuthClientProvider(
        "https://mcp.example.com/mcp",
        client_metadata=ClientMetadata(client_name="My app"),
        redirect=LoopbackRedirect(),
    )
    async with connect_http(client, "https://mcp.example.com/mcp", auth=provider) as session:
        ...

The flow: a client ID (:mod:`.registration`), the authorization request with
an S256 PKCE challenge, ``state`` and the RFC 8707 ``resource``; the
redirect (:mod:`.redirect`); checks on the response (``state``, an ``error``,
RFC 9207 ``iss`` by exact comparison and required when the server advertises
it); the token request with the code verifier and the same ``resource``.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from urllib.parse import urlencode

import httpx2
import msgspec

from ._discovery import BearerChallenge, Discovery, select_scopes
from ._errors import AuthorizationError
from ._metadata import ClientInformation, ClientMetadata, Tokens
from ._pkce import PKCE
from ._provider import TokenProvider
from ._redirect import AuthorizationResponse, RedirectHandler
from ._registration import PreRegisteredClient, check_metadata_document_url, obtain_client
from ._storage import TokenStorage
from ._tokens import ClientAuthentication, secret_authentication, token_request, tokens_from


class OAuthClientProvider(TokenProvider):
    """An ``httpx2.Auth`` that authorizes a user's MCP client at the MCP
    server's authorization server.

    * ``client_metadata``: what the client registers (``redirect_uris`` is
      filled from ``redirect`` when empty).
    * ``redirect``: the redirect step (:mod:`.redirect`).
    * ``client_metadata_url``: the HTTPS URL of the client's ID metadata
      document, used as client ID where the server supports it.
    * ``pre_registered``: credentials the application already has.
    * ``scopes``: scopes to ask for beside those the server names (in its
      challenge or its metadata).
    * ``offline_access``: ask for ``offline_access`` (a refresh token) when
      the authorization server offers it.
    * ``dpop``: bind tokens to a DPoP key where the authorization server
      supports it (:mod:`.dpop`).
    * ``storage``, ``http_client``, ``timeout``, ``max_step_ups``,
      ``refresh_margin``: see :class:`~.provider.TokenProvider`.
    """

    def __init__(
        self,
        server_url: str,
        *,
        client_metadata: ClientMetadata,
        redirect: RedirectHandler,
        client_metadata_url: str | None = None,
        pre_registered: PreRegisteredClient | None = None,
        scopes: Sequence[str] = (),
        offline_access: bool = True,
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
        if not client_metadata.redirect_uris:
            client_metadata = msgspec.structs.replace(
                client_metadata, redirect_uris=[redirect.redirect_uri]
            )
        self.client_metadata = client_metadata
        self.redirect = redirect
        self.client_metadata_url = (
            check_metadata_document_url(client_metadata_url) if client_metadata_url else None
        )
        self.pre_registered = pre_registered
        self.scopes = tuple(scopes)
        self.offline_access = offline_access

    def initial_scopes(
        self, challenge: BearerChallenge | None, discovery: Discovery
    ) -> tuple[str, ...]:
        return select_scopes(challenge, discovery, self.scopes, offline_access=self.offline_access)

    def step_up_scopes(
        self, challenge: BearerChallenge, discovery: Discovery, earlier: tuple[str, ...]
    ) -> tuple[str, ...]:
        return select_scopes(challenge, discovery, earlier, offline_access=self.offline_access)

    async def _client(self, http: httpx2.AsyncClient, discovery: Discovery) -> ClientInformation:
        """This client's credentials at the server (kept per issuer, so a new
        server gets a new registration)."""
        client = await self.storage.get_client(discovery.issuer)
        if client is None:
            client = await obtain_client(
                http,
                discovery.server,
                self.client_metadata,
                self.pre_registered,
                self.client_metadata_url,
            )
            await self.storage.set_client(discovery.issuer, client)
        return client

    async def client_authentication(
        self, http: httpx2.AsyncClient, discovery: Discovery
    ) -> ClientAuthentication:
        return secret_authentication(await self._client(http, discovery), discovery.server)

    async def obtain(
        self, http: httpx2.AsyncClient, discovery: Discovery, scopes: tuple[str, ...]
    ) -> Tokens:
        server = discovery.server
        if server.authorization_endpoint is None:
            raise AuthorizationError(
                f"the authorization server {server.issuer} has no authorization_endpoint"
            )
        if "S256" not in (server.code_challenge_methods_supported or ()):
            raise AuthorizationError(
                f"the authorization server {server.issuer} does not advertise PKCE with S256 "
                "(code_challenge_methods_supported); refusing to authorize without it"
            )
        client = await self._client(http, discovery)
        auth = secret_authentication(client, server)
        pkce, state = PKCE(), secrets.token_urlsafe(32)
        redirect_uri = self.redirect.redirect_uri
        params = {
            "response_type": "code",
            "client_id": client.client_id,
            "redirect_uri": redirect_uri,
            "state": state,
            "code_challenge": pkce.challenge,
            "code_challenge_method": pkce.method,
            "resource": discovery.resource,
        }
        if scopes:
            params["scope"] = " ".join(scopes)
        endpoint = server.authorization_endpoint
        response = await self.redirect.authorize(
            f"{endpoint}{'&' if '?' in endpoint else '?'}{urlencode(params)}"
        )
        code = check_authorization_response(response, state, discovery)
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect_uri,
            "code_verifier": pkce.verifier,
            "resource": discovery.resource,
        }
        dpop = self.dpop_for(discovery)
        answer = await token_request(http, server, form, auth, dpop)
        return tokens_from(
            answer,
            issuer=discovery.issuer,
            resource=discovery.resource,
            requested=scopes,
            dpop=dpop is not None,
        )


def check_authorization_response(
    response: AuthorizationResponse, state: str, discovery: Discovery
) -> str:
    """The code of an authorization response that passes the checks that
    protect the user, else an AuthorizationError."""
    if response.state != state:
        raise AuthorizationError(
            "the authorization response does not carry the state of this authorization request"
        )
    issuer = discovery.server.issuer
    if response.iss is not None:
        if response.iss != issuer:  # RFC 9207: simple string comparison
            raise AuthorizationError(
                f"the authorization response comes from issuer {response.iss!r}, not {issuer!r} (RFC 9207); refusing it"
            )
    elif discovery.server.authorization_response_iss_parameter_supported:
        raise AuthorizationError(
            f"the authorization response lacks the iss parameter {issuer} promises (RFC 9207); refusing it"
        )
    if response.error is not None:
        detail = f": {response.error_description}" if response.error_description else ""
        raise AuthorizationError(f"authorization was refused ({response.error}{detail})")
    if not response.code:
        raise AuthorizationError("the authorization response carries no code")
    return response.code
