"""What both sides of MCP authorization read the same way: the Protected
Resource Metadata document (RFC 9728) a resource server publishes and a
client reads, and the well-known URLs of that document and of an
authorization server's metadata (RFC 8414, OpenID Connect discovery).
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

import msgspec

PRM_WELL_KNOWN = "/.well-known/oauth-protected-resource"
OAUTH_WELL_KNOWN = "/.well-known/oauth-authorization-server"
OIDC_WELL_KNOWN = "/.well-known/openid-configuration"


class ProtectedResourceMetadata(msgspec.Struct, kw_only=True, omit_defaults=True):
    """RFC 9728 section 2: what a protected resource says about itself.

    Unknown members are ignored when decoding (the document is extensible);
    members left at their default are not published."""

    resource: str
    authorization_servers: list[str] = []
    scopes_supported: list[str] | None = None
    bearer_methods_supported: list[str] | None = None
    resource_name: str | None = None
    resource_documentation: str | None = None


def well_known_url(url: str, well_known: str, *, path: str | None = None, query: str = "") -> str:
    """``well_known`` inserted between the host of ``url`` and ``path`` (by
    default the path of ``url``), followed by ``query``."""
    parts = urlsplit(url)
    return urlunsplit(
        (parts.scheme, parts.netloc, well_known + (parts.path if path is None else path), query, "")
    )


def authorization_server_metadata_urls(issuer: str) -> list[str]:
    """Where the metadata of the authorization server ``issuer`` may be, in
    the order MCP clients try them: with a path, RFC 8414 with the path
    inserted, OpenID Connect discovery with the path inserted, then with it
    appended; without one, RFC 8414 then OpenID Connect discovery."""
    path = urlsplit(issuer).path.rstrip("/")
    if not path:
        return [
            well_known_url(issuer, OAUTH_WELL_KNOWN, path=""),
            well_known_url(issuer, OIDC_WELL_KNOWN, path=""),
        ]
    return [
        well_known_url(issuer, OAUTH_WELL_KNOWN, path=path),
        well_known_url(issuer, OIDC_WELL_KNOWN, path=path),
        well_known_url(issuer, path + OIDC_WELL_KNOWN, path=""),
    ]
