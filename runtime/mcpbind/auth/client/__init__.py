"""The MCP authorization client (OAuth 2.1), as ``httpx2.Auth`` providers for
the HTTP transports: ``connect_http(client, url, auth=provider)``.

* :class:`OAuthClientProvider`: the authorization code flow with PKCE, for
  applications acting for a user.
* :class:`ClientCredentialsProvider`: the client credentials extension, for
  services acting for themselves.
* :class:`JWTBearerProvider`: the JWT bearer grant, for workload identity
  federation and (with :class:`IdentityAssertionExchange`) enterprise-managed
  authorization.

Discovery, registration, the redirect step and token storage have their own
modules; see docs/guides/authorization-client.md.
"""

from ._assertion import IdentityAssertionExchange, JWTBearerProvider
from ._client_credentials import ClientCredentialsProvider, PrivateKeyJWT
from ._discovery import BearerChallenge, Discovery, bearer_challenge, parse_www_authenticate
from ._errors import AuthorizationError, MetadataError
from ._metadata import (
    AuthorizationServerMetadata,
    ClientInformation,
    ClientMetadata,
    ProtectedResourceMetadata,
    TokenResponse,
    Tokens,
)
from ._oauth import OAuthClientProvider
from ._provider import TokenProvider
from ._redirect import (
    AuthorizationResponse,
    CallbackRedirect,
    HTTPRedirectFollower,
    LoopbackRedirect,
    RedirectHandler,
)
from ._registration import PreRegisteredClient
from ._storage import InMemoryTokenStorage, TokenStorage

__all__ = [
    "AuthorizationError",
    "AuthorizationResponse",
    "AuthorizationServerMetadata",
    "BearerChallenge",
    "CallbackRedirect",
    "ClientCredentialsProvider",
    "ClientInformation",
    "ClientMetadata",
    "Discovery",
    "HTTPRedirectFollower",
    "IdentityAssertionExchange",
    "JWTBearerProvider",
    "InMemoryTokenStorage",
    "LoopbackRedirect",
    "MetadataError",
    "OAuthClientProvider",
    "PreRegisteredClient",
    "PrivateKeyJWT",
    "ProtectedResourceMetadata",
    "RedirectHandler",
    "TokenProvider",
    "TokenResponse",
    "TokenStorage",
    "Tokens",
    "bearer_challenge",
    "parse_www_authenticate",
]
