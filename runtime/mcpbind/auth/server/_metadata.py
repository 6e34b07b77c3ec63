"""The Protected Resource Metadata document (RFC 9728) of an MCP server, and
the URLs it is served at.

A client that meets a 401 reads the document to learn which authorization
servers issue tokens for this server and which scopes it knows. It is found
through the ``resource_metadata`` of ``WWW-Authenticate``, else at the
well-known URL built from the server's URL (``/.well-known/oauth-protected-resource``
inserted before the path), else at the root form of that URL.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from .._metadata import PRM_WELL_KNOWN, ProtectedResourceMetadata, well_known_url

__all__ = [
    "ProtectedResourceMetadata",
    "canonical_resource",
    "metadata_paths",
    "metadata_url",
    "same_resource",
]


def canonical_resource(url: str) -> str:
    """``url`` as a resource identifier (RFC 8707 §2): absolute http(s), no
    fragment, scheme and host in lower case, no lone trailing slash.

    Raises ValueError for anything else, saying why."""
    try:
        parts = urlsplit(url)
        port = parts.port  # checks that the port is a number in range
    except ValueError as error:
        raise ValueError(f"invalid resource URL {url!r}: {error}") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"invalid resource URL {url!r}: it must be an absolute http or https URL")
    if parts.fragment or url.endswith("#"):
        raise ValueError(f"invalid resource URL {url!r}: a resource identifier has no fragment")
    if parts.username is not None or parts.password is not None:
        raise ValueError(
            f"invalid resource URL {url!r}: a resource identifier has no user information"
        )
    host = parts.hostname.lower()
    if ":" in host:
        host = f"[{host}]"
    netloc = host if port is None else f"{host}:{port}"
    path = "" if parts.path == "/" else parts.path
    return urlunsplit((scheme, netloc, path, parts.query, ""))


def same_resource(a: str, b: str) -> bool:
    """Whether two resource identifiers name the same resource (compared in canonical form)."""
    try:
        return canonical_resource(a) == canonical_resource(b)
    except ValueError:
        return False


def metadata_url(resource: str) -> str:
    """The well-known URL of ``resource``'s metadata: the path-based form (RFC 9728 §3.1)."""
    canonical = canonical_resource(resource)
    return well_known_url(canonical, PRM_WELL_KNOWN, query=urlsplit(canonical).query)


def metadata_paths(resource: str) -> frozenset[str]:
    """The request paths at which a server of ``resource`` answers with its metadata:
    the path-based form and the root form."""
    path = urlsplit(canonical_resource(resource)).path
    return frozenset({PRM_WELL_KNOWN + path, PRM_WELL_KNOWN})
