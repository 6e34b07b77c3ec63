"""How the client gets a client ID at an authorization server.

In the order the MCP specification gives: pre-registered credentials when the
application has some for that server; a client ID metadata document (the
client ID is an HTTPS URL where the client's metadata is published) when the
server advertises ``client_id_metadata_document_supported``; dynamic client
registration (RFC 7591) when it has a ``registration_endpoint``. Otherwise
the client cannot proceed, and says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlsplit

import httpx2
import msgspec

from ._discovery import LOOPBACK_HOSTS
from ._errors import AuthorizationError, MetadataError
from ._metadata import (
    AuthorizationServerMetadata,
    ClientInformation,
    ClientMetadata,
    TokenErrorResponse,
    ask,
    decode,
)
from ._tokens import SECRET_METHODS


@dataclass(frozen=True)
class PreRegisteredClient:
    """Credentials the application got from an authorization server's
    operator. With ``issuer`` they are used at that server only; without,
    at whichever server the MCP server names (the application vouches that
    it is the right one)."""

    client_id: str
    client_secret: str | None = field(default=None, repr=False)
    token_endpoint_auth_method: str | None = None
    issuer: str | None = None

    def information(self) -> ClientInformation:
        return ClientInformation(
            client_id=self.client_id,
            client_secret=self.client_secret,
            token_endpoint_auth_method=self.token_endpoint_auth_method,
        )


def check_metadata_document_url(url: str) -> str:
    """A client ID metadata document URL: HTTPS with a path (the client ID)."""
    parts = urlsplit(url)
    if parts.scheme != "https" or not parts.netloc or parts.path in ("", "/") or parts.fragment:
        raise ValueError(
            f"a client ID metadata document URL must be an https URL with a path, not {url!r}"
        )
    return url


def application_type(redirect_uris: list[str]) -> str:
    """``native`` for loopback or private-scheme redirects (desktop and CLI
    applications), ``web`` otherwise."""
    for uri in redirect_uris:
        parts = urlsplit(uri)
        if parts.scheme == "https" and (parts.hostname or "") not in LOOPBACK_HOSTS:
            return "web"
    return "native"


def registration_metadata(
    metadata: ClientMetadata, server: AuthorizationServerMetadata
) -> ClientMetadata:
    """The registration request: ``metadata`` with an authentication method
    the server supports (none for a public client when allowed) and an
    ``application_type``."""
    method = metadata.token_endpoint_auth_method
    if method is None:
        supported = server.auth_methods()
        method = (
            "none"
            if "none" in supported
            else next((m for m in SECRET_METHODS if m in supported), None)
        )
    return msgspec.structs.replace(
        metadata,
        token_endpoint_auth_method=method,
        application_type=metadata.application_type or application_type(metadata.redirect_uris),
    )


async def register(
    http: httpx2.AsyncClient, server: AuthorizationServerMetadata, metadata: ClientMetadata
) -> ClientInformation:
    """Dynamic client registration at ``server``."""
    endpoint = server.registration_endpoint
    if endpoint is None:
        raise AuthorizationError(
            f"the authorization server {server.issuer} does not offer dynamic client registration"
        )
    body = msgspec.json.encode(registration_metadata(metadata, server))
    response = await ask(
        http,
        "POST",
        endpoint,
        content=body,
        headers={"content-type": "application/json", "accept": "application/json"},
    )
    if response.status_code not in (200, 201):
        try:
            refusal = decode(response.content, TokenErrorResponse, "the registration error")
            detail = refusal.error + (
                f": {refusal.error_description}" if refusal.error_description else ""
            )
        except MetadataError:
            detail = f"HTTP {response.status_code} {response.reason_phrase}".rstrip()
        raise AuthorizationError(f"client registration at {endpoint} failed ({detail})")
    client = decode(
        response.content, ClientInformation, f"the client registration response from {endpoint}"
    )
    if not client.client_id:
        raise MetadataError(
            f"the client registration response from {endpoint} has an empty client_id"
        )
    return client


async def obtain_client(
    http: httpx2.AsyncClient,
    server: AuthorizationServerMetadata,
    metadata: ClientMetadata,
    pre_registered: PreRegisteredClient | None,
    metadata_document_url: str | None,
) -> ClientInformation:
    """A client ID (and secret, if any) at ``server``, the first way that applies."""
    if pre_registered is not None and pre_registered.issuer in (None, server.issuer):
        return pre_registered.information()
    if metadata_document_url is not None and server.client_id_metadata_document_supported:
        return ClientInformation(client_id=metadata_document_url, token_endpoint_auth_method="none")
    if server.registration_endpoint is not None:
        return await register(http, server, metadata)
    raise AuthorizationError(
        f"cannot get a client ID at {server.issuer}: it offers neither client ID metadata documents "
        "(or none is configured) nor dynamic registration, and no pre-registered client is configured for it"
    )
