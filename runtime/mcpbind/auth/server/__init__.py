"""MCP authorization, server side: the server as an OAuth 2.1 resource server.

``http_app(server, auth=ResourceServer(...))`` serves the Protected Resource
Metadata document, checks the bearer token of every request with a
:class:`TokenVerifier` (:class:`JWTVerifier` against the authorization
server's keys, or :class:`IntrospectionVerifier`), answers 401 and 403 with
the challenges MCP clients act on, and hands the authenticated
:class:`~mcpbind.auth._principal.Principal` to handlers as
``ctx.principal``. Needs joserfc and httpx2 (the ``auth`` extra).
"""

from ._introspection import IntrospectionVerifier
from ._jwt import JWTVerifier
from ._metadata import ProtectedResourceMetadata, canonical_resource, metadata_url
from ._resource_server import HttpAnswer, ResourceServer
from ._verifier import InvalidToken, TokenVerifier, VerifierUnavailable

__all__ = [
    "HttpAnswer",
    "IntrospectionVerifier",
    "InvalidToken",
    "JWTVerifier",
    "ProtectedResourceMetadata",
    "ResourceServer",
    "TokenVerifier",
    "VerifierUnavailable",
    "canonical_resource",
    "metadata_url",
]
