"""The OAuth client credentials extension: an MCP client acting for itself
(a service, a batch job), with no user and no redirect.

    provider = ClientCredentialsProvider(url, client_id="svc", client_secret="...")
    provider = ClientCredentialsProvider(url, client_id="svc", private_key=pem, signing_algorithm="ES256")

The client authenticates at the token endpoint with ``client_secret_basic``
(or ``client_secret_post`` when that is all the server takes) or with
``private_key_jwt`` (RFC 7523 section 2.2): a short-lived JWT signed with the
client's private key. Signing uses joserfc; this module only assembles the
claims.
"""

from __future__ import annotations

import secrets
import time
from typing import Literal

import httpx2
from joserfc import jwk, jwt

from ._discovery import BearerChallenge, Discovery, select_scopes
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

JWT_BEARER_ASSERTION = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
_KEY_TYPES: dict[str, Literal["EC", "RSA", "OKP"]] = {
    "ES": "EC",
    "RS": "RSA",
    "PS": "RSA",
    "Ed": "OKP",
}


class PrivateKeyJWT:
    """``private_key_jwt`` client authentication: ``iss`` and ``sub`` the
    client ID, ``aud`` the authorization server's issuer, valid ``lifetime``
    seconds, a fresh ``jti`` each time."""

    def __init__(
        self,
        client_id: str,
        private_key: str | bytes,
        algorithm: str = "ES256",
        lifetime: int = 300,
    ) -> None:
        key_type = _KEY_TYPES.get(algorithm[:2])
        if key_type is None:
            raise ValueError(f"unsupported signing algorithm {algorithm!r} for private_key_jwt")
        try:
            self._key: jwk.Key = jwk.import_key(private_key, key_type)
        except Exception as error:  # joserfc raises several kinds; the key is unusable either way
            raise ValueError(
                f"the private key is not a usable {key_type} key ({type(error).__name__})"
            ) from None
        self.client_id = client_id
        self.algorithm = algorithm
        self.lifetime = lifetime

    def __repr__(self) -> str:
        return f"PrivateKeyJWT(client_id={self.client_id!r}, algorithm={self.algorithm!r})"

    def apply(
        self, form: dict[str, str], headers: dict[str, str], server: AuthorizationServerMetadata
    ) -> None:
        supported = server.auth_methods()
        if "private_key_jwt" not in supported:
            raise AuthorizationError(
                f"the authorization server {server.issuer} does not accept private_key_jwt"
            )
        algorithms = server.token_endpoint_auth_signing_alg_values_supported
        if algorithms and self.algorithm not in algorithms:
            raise AuthorizationError(
                f"the authorization server {server.issuer} does not accept {self.algorithm} client assertions"
            )
        now = int(time.time())
        claims = {
            "iss": self.client_id,
            "sub": self.client_id,
            "aud": server.issuer,
            "iat": now,
            "exp": now + self.lifetime,
            "jti": secrets.token_urlsafe(16),
        }
        form["client_assertion_type"] = JWT_BEARER_ASSERTION
        form["client_assertion"] = jwt.encode(
            {"alg": self.algorithm}, claims, self._key, algorithms=[self.algorithm]
        )


class ClientCredentialsProvider(TokenProvider):
    """An ``httpx2.Auth`` getting tokens with the client credentials grant.

    Give ``client_secret`` or ``private_key`` (PEM, with ``signing_algorithm``).
    ``scopes``, when given, are asked for instead of those the server names.
    """

    def __init__(
        self,
        server_url: str,
        *,
        client_id: str,
        client_secret: str | None = None,
        private_key: str | bytes | None = None,
        signing_algorithm: str = "ES256",
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
        if (client_secret is None) == (private_key is None):
            raise ValueError("give exactly one of client_secret and private_key")
        self.client_id = client_id
        self._secret = client_secret
        self._signer = (
            PrivateKeyJWT(client_id, private_key, signing_algorithm)
            if private_key is not None
            else None
        )
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
        if self._signer is not None:
            return self._signer
        supported = [m for m in discovery.server.auth_methods() if m != "none"] or [
            "client_secret_basic"
        ]
        return SecretAuthentication(self.client_id, self._secret, choose_method(supported, True))

    async def obtain(
        self, http: httpx2.AsyncClient, discovery: Discovery, scopes: tuple[str, ...]
    ) -> Tokens:
        form = {"grant_type": "client_credentials", "resource": discovery.resource}
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
