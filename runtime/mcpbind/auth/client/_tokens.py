"""Token endpoint requests (RFC 6749 section 3.2) and client authentication.

Every grant goes through :func:`token_request`: a form POST, authenticated
the way the client and the authorization server agree on
(``client_secret_basic``, ``client_secret_post``, ``none``, or
``private_key_jwt`` from :mod:`.client_credentials`), answered by a token
response that is checked before use.
"""

from __future__ import annotations

import base64
import time
from dataclasses import dataclass, field
from typing import Protocol
from urllib.parse import quote

import httpx2

from ._dpop import NONCE_ERROR, DPoPKey
from ._errors import AuthorizationError, MetadataError
from ._metadata import (
    AuthorizationServerMetadata,
    ClientInformation,
    TokenErrorResponse,
    TokenResponse,
    Tokens,
    ask,
    decode,
)

SECRET_METHODS = ("client_secret_basic", "client_secret_post")


class ClientAuthentication(Protocol):
    """How a client proves who it is at the token endpoint."""

    @property
    def client_id(self) -> str: ...

    def apply(
        self, form: dict[str, str], headers: dict[str, str], server: AuthorizationServerMetadata
    ) -> None:
        """Add the client's credentials to a token request."""


@dataclass(frozen=True)
class SecretAuthentication:
    """``client_secret_basic``, ``client_secret_post`` or ``none`` (a public client)."""

    client_id: str
    client_secret: str | None = field(default=None, repr=False)
    method: str = "none"

    def apply(
        self, form: dict[str, str], headers: dict[str, str], server: AuthorizationServerMetadata
    ) -> None:
        if self.method == "client_secret_basic" and self.client_secret is not None:
            # RFC 6749 section 2.3.1: each part form-urlencoded before joining.
            pair = f"{quote(self.client_id, safe='')}:{quote(self.client_secret, safe='')}"
            headers["authorization"] = "Basic " + base64.b64encode(pair.encode()).decode("ascii")
            return
        form["client_id"] = self.client_id
        if self.method == "client_secret_post" and self.client_secret is not None:
            form["client_secret"] = self.client_secret


def choose_method(supported: list[str], has_secret: bool) -> str:
    """The token endpoint authentication method to use: a secret method the
    server supports when the client has a secret (basic first), else none."""
    if has_secret:
        for method in SECRET_METHODS:
            if method in supported:
                return method
    if "none" in supported or not has_secret:
        return "none"
    raise AuthorizationError(
        f"the authorization server supports none of the client's authentication methods (it supports {', '.join(supported)})"
    )


def secret_authentication(
    client: ClientInformation, server: AuthorizationServerMetadata
) -> SecretAuthentication:
    """The authentication of ``client``: the method its registration names,
    else the best one the server supports."""
    method = client.token_endpoint_auth_method or choose_method(
        server.auth_methods(), client.client_secret is not None
    )
    if method in SECRET_METHODS and client.client_secret is None:
        raise AuthorizationError(f"the client is registered for {method} but has no client secret")
    if method not in (*SECRET_METHODS, "none"):
        raise AuthorizationError(
            f"token endpoint authentication method {method!r} is not supported by this client"
        )
    return SecretAuthentication(client.client_id, client.client_secret, method)


async def token_request(
    http: httpx2.AsyncClient,
    server: AuthorizationServerMetadata,
    form: dict[str, str],
    auth: ClientAuthentication,
    dpop: DPoPKey | None = None,
) -> TokenResponse:
    """POST ``form`` to the token endpoint (with a DPoP proof when ``dpop``
    is given, sent once more if the server asks for a nonce); the token
    response, or an AuthorizationError with the server's error code and
    description."""
    assert server.token_endpoint is not None  # checked by discovery
    endpoint = server.token_endpoint
    grant = form.get("grant_type", "?")
    for attempt in range(2):
        headers = {"accept": "application/json"}
        body = dict(form)
        auth.apply(body, headers, server)
        if dpop is not None:
            headers["dpop"] = dpop.proof("POST", endpoint)
        response = await ask(http, "POST", endpoint, data=body, headers=headers)
        if response.status_code == 200:
            if dpop is not None:
                dpop.remember_nonce(endpoint, response.headers.get("dpop-nonce"))
            return decode(response.content, TokenResponse, f"the token response from {endpoint}")
        try:
            refusal = decode(response.content, TokenErrorResponse, "the token error response")
        except MetadataError:
            refusal = None
        if (
            dpop is not None
            and refusal is not None
            and refusal.error == NONCE_ERROR
            and attempt == 0
        ):
            if dpop.remember_nonce(endpoint, response.headers.get("dpop-nonce")):
                continue
        if refusal is not None:
            detail = refusal.error + (
                f": {refusal.error_description}" if refusal.error_description else ""
            )
        else:
            detail = f"HTTP {response.status_code} {response.reason_phrase}".rstrip()
        break
    raise AuthorizationError(f"the token endpoint {endpoint} refused the {grant} grant ({detail})")


def tokens_from(
    response: TokenResponse,
    *,
    issuer: str,
    resource: str,
    requested: tuple[str, ...],
    refresh_token: str | None = None,
    dpop: bool = False,
) -> Tokens:
    """Tokens to keep from a token response: a refresh response without a
    new refresh token keeps the old one; no ``scope`` means those asked for.
    A DPoP-bound token is taken only when a proof was sent (``dpop``)."""
    kinds = {"bearer": "Bearer", "dpop": "DPoP"} if dpop else {"bearer": "Bearer"}
    token_type = kinds.get(response.token_type.lower())
    if token_type is None:
        raise MetadataError(
            f"the token endpoint issued a {response.token_type!r} token; this client uses {' or '.join(kinds.values())} tokens"
        )
    if not response.access_token:
        raise MetadataError("the token endpoint issued an empty access token")
    expires_at = time.time() + response.expires_in if response.expires_in is not None else None
    scopes = response.scope.split() if response.scope is not None else list(requested)
    return Tokens(
        access_token=response.access_token,
        token_type=token_type,
        refresh_token=response.refresh_token or refresh_token,
        scopes=scopes,
        expires_at=expires_at,
        issuer=issuer,
        resource=resource,
    )
