"""The OAuth documents an MCP client reads and writes, as msgspec Structs.

Unknown members are ignored (every one of these documents is extensible);
members of the wrong type make the document invalid. :func:`decode` turns a
response body into one of them or a :class:`MetadataError` that says which
document, from where, and what is wrong with it; :func:`ask` reads the
authorization server's answer (within :data:`~mcpbind.auth._answers.MAX_ANSWER`).
"""

from __future__ import annotations

import time
from typing import Any, TypeVar

import httpx2
import msgspec

from .._answers import Answer, UnreadableAnswer, read_answer
from .._metadata import ProtectedResourceMetadata
from ._errors import AuthorizationError, MetadataError

T = TypeVar("T")

__all__ = ["ProtectedResourceMetadata"]  # shared with the resource server, decoded here too


class AuthorizationServerMetadata(msgspec.Struct, kw_only=True, omit_defaults=True):
    """RFC 8414 section 2 (and the OpenID Connect discovery members MCP uses)."""

    issuer: str
    authorization_endpoint: str | None = None
    token_endpoint: str | None = None
    registration_endpoint: str | None = None
    jwks_uri: str | None = None
    scopes_supported: list[str] | None = None
    response_types_supported: list[str] | None = None
    grant_types_supported: list[str] | None = None
    code_challenge_methods_supported: list[str] | None = None
    token_endpoint_auth_methods_supported: list[str] | None = None
    token_endpoint_auth_signing_alg_values_supported: list[str] | None = None
    # RFC 9207: the authorization response carries ``iss``.
    authorization_response_iss_parameter_supported: bool = False
    # Client ID metadata documents (a URL as client_id).
    client_id_metadata_document_supported: bool = False
    # RFC 9449: the server binds tokens to DPoP keys of these algorithms.
    dpop_signing_alg_values_supported: list[str] | None = None

    def auth_methods(self) -> list[str]:
        # RFC 8414: absent means client_secret_basic only.
        return self.token_endpoint_auth_methods_supported or ["client_secret_basic"]


class ClientMetadata(msgspec.Struct, kw_only=True, omit_defaults=True):
    """RFC 7591 section 2: what a client says about itself, in a registration
    request or a client ID metadata document."""

    redirect_uris: list[str] = []
    client_name: str | None = None
    client_uri: str | None = None
    logo_uri: str | None = None
    scope: str | None = None
    contacts: list[str] | None = None
    tos_uri: str | None = None
    policy_uri: str | None = None
    software_id: str | None = None
    software_version: str | None = None
    token_endpoint_auth_method: str | None = None
    # refresh_token: the client wants refresh tokens (MCP 2026-07-28 has it say so).
    grant_types: list[str] = msgspec.field(
        default_factory=lambda: ["authorization_code", "refresh_token"]
    )
    response_types: list[str] = msgspec.field(default_factory=lambda: ["code"])
    # OpenID Connect registration; MCP 2026-07-28 has clients send it.
    application_type: str | None = None


class ClientInformation(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Credentials of a client at one authorization server: a registration
    response (RFC 7591 section 3.2.1), pre-registered ones, or a client ID
    metadata document URL (no secret)."""

    client_id: str
    client_secret: str | None = None
    client_id_issued_at: int | None = None
    client_secret_expires_at: int | None = None
    token_endpoint_auth_method: str | None = None

    def __repr__(self) -> str:  # the secret stays out of logs and tracebacks
        return f"ClientInformation(client_id={self.client_id!r}, token_endpoint_auth_method={self.token_endpoint_auth_method!r})"


class TokenResponse(msgspec.Struct, kw_only=True, omit_defaults=True):
    """RFC 6749 section 5.1: a successful token endpoint response."""

    access_token: str
    token_type: str
    expires_in: float | None = None
    refresh_token: str | None = None
    scope: str | None = None
    issued_token_type: str | None = None  # RFC 8693 token exchange


class TokenErrorResponse(msgspec.Struct, kw_only=True):
    """RFC 6749 section 5.2."""

    error: str
    error_description: str | None = None


class Tokens(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Tokens as kept between requests: for which resource, from which issuer,
    with what scopes, and until when."""

    access_token: str
    token_type: str = "Bearer"  # or DPoP: bound to the provider's DPoP key
    refresh_token: str | None = None
    scopes: list[str] = []
    expires_at: float | None = None
    issuer: str | None = None
    resource: str | None = None

    def expires_within(self, seconds: float) -> bool:
        return self.expires_at is not None and self.expires_at - seconds <= time.time()

    def __repr__(self) -> str:
        return f"Tokens(issuer={self.issuer!r}, resource={self.resource!r}, scopes={self.scopes!r}, expires_at={self.expires_at!r})"


async def ask(
    http: httpx2.AsyncClient,
    method: str,
    url: str,
    failure: type[AuthorizationError] = AuthorizationError,
    **options: Any,
) -> Answer:
    """The answer to ``method url`` (``options`` as ``read_answer`` takes
    them, redirects not followed); ``failure`` when there is none, a
    MetadataError when it cannot be read (too large, compressed)."""
    try:
        return await read_answer(http, method, url, follow_redirects=False, **options)
    except httpx2.HTTPError as error:
        raise failure(f"{method} {url} failed: {error or type(error).__name__}") from None
    except UnreadableAnswer as error:
        raise MetadataError(str(error)) from None


def decode(body: bytes, kind: type[T], what: str) -> T:
    """``body`` as a ``kind`` document, or a MetadataError naming ``what``."""
    try:
        return msgspec.json.decode(body, type=kind)
    except msgspec.ValidationError as error:
        raise MetadataError(f"{what} is invalid: {error}") from None
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
        raise MetadataError(f"{what} is not a JSON document") from None
