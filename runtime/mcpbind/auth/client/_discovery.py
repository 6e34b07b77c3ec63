"""Finding the authorization server of an MCP server.

A 401 names, in ``WWW-Authenticate``, where the server's Protected Resource
Metadata (RFC 9728) is and which scopes it wants; without ``resource_metadata``
the client tries the path-based well-known URL, then the one at the root. The
metadata names the authorization servers; the first one's metadata is read
from the RFC 8414 and OpenID Connect discovery URLs in the order the MCP
specification gives, and its ``issuer`` must equal the identifier the URLs
were built from, character for character.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx2

from .. import _metadata as shared
from .._answers import Answer
from .._metadata import PRM_WELL_KNOWN, ProtectedResourceMetadata, well_known_url
from ._errors import MetadataError
from ._metadata import AuthorizationServerMetadata, ask, decode

logger = logging.getLogger(__name__)

LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})

# ---------------------------------------------------------------- WWW-Authenticate

_TOKEN = r"[!#$%&'*+.^_`|~0-9A-Za-z-]+"
_QUOTED = r'"(?:[^"\\]|\\.)*"'
_SCHEME = re.compile(rf"[\s,]*({_TOKEN})")
_PARAM = re.compile(rf"\s*({_TOKEN})\s*=\s*({_QUOTED}|{_TOKEN})\s*")
_TOKEN68 = re.compile(r"\s*([A-Za-z0-9\-._~+/]+=*)\s*(?=,|$)")
_ESCAPE = re.compile(r"\\(.)")


@dataclass(frozen=True)
class Challenge:
    """One challenge of a ``WWW-Authenticate`` header (RFC 9110 section 11.6.1)."""

    scheme: str
    params: Mapping[str, str]
    token68: str | None = None


def parse_www_authenticate(value: str) -> list[Challenge]:
    """Every challenge in a ``WWW-Authenticate`` value; parameter names are
    lower-cased, quoted values unescaped. Text that is not a challenge ends
    the parse (what came before it is kept)."""
    challenges: list[Challenge] = []
    position = 0
    while True:
        scheme = _SCHEME.match(value, position)
        if scheme is None:
            return challenges
        position = scheme.end()
        params: dict[str, str] = {}
        token68 = None
        if (param := _PARAM.match(value, position)) is None and (
            t68 := _TOKEN68.match(value, position)
        ) is not None:
            token68, position = t68.group(1), t68.end()
        while param is not None:
            name, raw = param.group(1).lower(), param.group(2)
            params.setdefault(name, _ESCAPE.sub(r"\1", raw[1:-1]) if raw.startswith('"') else raw)
            position = param.end()
            if not value.startswith(",", position):
                break
            param = _PARAM.match(value, position + 1)  # else a new challenge starts after the comma
            if param is not None:
                position += 1
        challenges.append(Challenge(scheme.group(1), params, token68))
        if position >= len(value) or value[position] not in ", ":
            return challenges


@dataclass(frozen=True)
class BearerChallenge:
    """What a Bearer challenge tells an MCP client."""

    resource_metadata: str | None = None
    scopes: tuple[str, ...] | None = None
    error: str | None = None
    error_description: str | None = None

    @property
    def insufficient_scope(self) -> bool:
        return self.error == "insufficient_scope"


def bearer_challenge(headers: Mapping[str, str] | httpx2.Headers) -> BearerChallenge:
    """The Bearer (or DPoP, RFC 9449) challenge of a response's headers (an
    empty one if none)."""
    values = (
        headers.get_list("www-authenticate")
        if isinstance(headers, httpx2.Headers)
        else [headers.get("www-authenticate", "")]
    )
    for value in values:
        for challenge in parse_www_authenticate(value or ""):
            if challenge.scheme.lower() in ("bearer", "dpop"):
                params = challenge.params
                scope = params.get("scope")
                return BearerChallenge(
                    resource_metadata=params.get("resource_metadata") or None,
                    scopes=tuple(scope.split()) if scope is not None else None,
                    error=params.get("error"),
                    error_description=params.get("error_description"),
                )
    return BearerChallenge()


# ---------------------------------------------------------------- URLs


def _split(url: str, what: str) -> tuple[str, str, str]:
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        raise MetadataError(f"{what} {url!r} is not an absolute http(s) URL")
    return parts.scheme, parts.netloc, parts.path


def protected_resource_metadata_urls(server_url: str) -> list[str]:
    """RFC 9728 section 3.1 for the MCP server at ``server_url``: the
    path-based URL (if the URL has a path), then the one at the root."""
    _, _, path = _split(server_url, "the MCP server URL")
    path = path.rstrip("/")
    root = well_known_url(server_url, PRM_WELL_KNOWN, path="")
    return [root + path, root] if path else [root]


def authorization_server_metadata_urls(issuer: str) -> list[str]:
    """:func:`mcpbind.auth._metadata.authorization_server_metadata_urls`
    of an issuer checked to be an absolute http(s) URL."""
    _split(issuer, "the authorization server")
    return shared.authorization_server_metadata_urls(issuer)


def _origin(scheme: str, netloc: str) -> tuple[str, str]:
    host = netloc.lower()
    default = {"http": ":80", "https": ":443"}.get(scheme.lower())
    if default and host.endswith(default):
        host = host[: -len(default)]
    return scheme.lower(), host


def resource_covers(resource: str, server_url: str) -> bool:
    """Whether the protected resource ``resource`` (from the metadata) is the
    MCP server at ``server_url`` or a parent of it: same origin, and its path
    a whole-segment prefix of the server's."""
    try:
        r_scheme, r_netloc, r_path = _split(resource, "resource")
        s_scheme, s_netloc, s_path = _split(server_url, "the MCP server URL")
    except MetadataError:
        return False
    if urlsplit(resource).fragment or _origin(r_scheme, r_netloc) != _origin(s_scheme, s_netloc):
        return False
    prefix = r_path.rstrip("/") + "/"
    return (s_path.rstrip("/") + "/").startswith(prefix)


def check_endpoint(url: str, what: str) -> str:
    """An endpoint the client will send credentials to: absolute, and HTTPS
    unless on a loopback host (the specification requires TLS)."""
    scheme, netloc, _ = _split(url, what)
    host = urlsplit(url).hostname or ""
    if scheme.lower() != "https" and host not in LOOPBACK_HOSTS:
        raise MetadataError(f"{what} {url!r} is not an HTTPS URL")
    return url


# ---------------------------------------------------------------- fetching


@dataclass(frozen=True)
class Discovery:
    """What discovery found for one MCP server."""

    resource: str
    """The RFC 8707 resource to ask tokens for."""
    resource_metadata: ProtectedResourceMetadata
    issuer: str
    server: AuthorizationServerMetadata


async def _get(http: httpx2.AsyncClient, url: str) -> Answer | None:
    """GET a metadata document; None when the URL has none (4xx)."""
    response = await ask(http, "GET", url, MetadataError, headers={"accept": "application/json"})
    if 400 <= response.status_code < 500:
        logger.debug("no metadata at %s (HTTP %d)", url, response.status_code)
        return None
    if response.status_code != 200:
        raise MetadataError(
            f"GET {url}: HTTP {response.status_code} {response.reason_phrase}".rstrip()
        )
    return response


async def fetch_protected_resource_metadata(
    http: httpx2.AsyncClient, server_url: str, challenge: BearerChallenge | None = None
) -> ProtectedResourceMetadata:
    """The Protected Resource Metadata of the MCP server at ``server_url``,
    checked to be about that server."""
    candidates = protected_resource_metadata_urls(server_url)
    if challenge is not None and challenge.resource_metadata:
        _split(challenge.resource_metadata, "the resource_metadata URL of the challenge")
        candidates.insert(0, challenge.resource_metadata)
    for url in dict.fromkeys(candidates):
        response = await _get(http, url)
        if response is None:
            continue
        metadata = decode(
            response.content, ProtectedResourceMetadata, f"the protected resource metadata at {url}"
        )
        if not resource_covers(metadata.resource, server_url):
            raise MetadataError(
                f"the protected resource metadata at {url} is for {metadata.resource!r}, not for {server_url!r}; "
                "refusing to authorize for another resource"
            )
        if not metadata.authorization_servers:
            raise MetadataError(
                f"the protected resource metadata at {url} names no authorization server"
            )
        return metadata
    raise MetadataError(
        f"{server_url} asks for authorization but publishes no protected resource metadata (tried {', '.join(dict.fromkeys(candidates))})"
    )


async def fetch_authorization_server_metadata(
    http: httpx2.AsyncClient, issuer: str
) -> AuthorizationServerMetadata:
    """The metadata of the authorization server ``issuer``; its ``issuer``
    must be ``issuer`` exactly (RFC 8414 section 3.3)."""
    candidates = authorization_server_metadata_urls(issuer)
    for url in candidates:
        response = await _get(http, url)
        if response is None:
            continue
        metadata = decode(
            response.content,
            AuthorizationServerMetadata,
            f"the authorization server metadata at {url}",
        )
        if metadata.issuer != issuer:
            raise MetadataError(
                f"the authorization server metadata at {url} names issuer {metadata.issuer!r}, "
                f"not {issuer!r}; refusing to use it"
            )
        if metadata.token_endpoint is None:
            raise MetadataError(f"the authorization server metadata at {url} has no token_endpoint")
        check_endpoint(metadata.token_endpoint, "token_endpoint")
        for name in ("authorization_endpoint", "registration_endpoint"):
            endpoint = getattr(metadata, name)
            if endpoint is not None:
                check_endpoint(endpoint, name)
        return metadata
    raise MetadataError(
        f"no authorization server metadata for {issuer} (tried {', '.join(candidates)})"
    )


async def discover(
    http: httpx2.AsyncClient, server_url: str, challenge: BearerChallenge | None = None
) -> Discovery:
    """Protected Resource Metadata, then the metadata of its first authorization server."""
    prm = await fetch_protected_resource_metadata(http, server_url, challenge)
    issuer = prm.authorization_servers[0]
    server = await fetch_authorization_server_metadata(http, issuer)
    return Discovery(resource=prm.resource, resource_metadata=prm, issuer=issuer, server=server)


def select_scopes(
    challenge: BearerChallenge | None,
    discovery: Discovery,
    earlier: tuple[str, ...] = (),
    offline_access: bool = False,
) -> tuple[str, ...]:
    """The scopes to ask for: those the challenge names, else the resource's
    ``scopes_supported``, else none; joined with ``earlier`` ones (a step-up
    keeps what was granted); ``offline_access`` added when wanted and the
    authorization server offers it."""
    if challenge is not None and challenge.scopes is not None:
        wanted = challenge.scopes
    else:
        wanted = tuple(discovery.resource_metadata.scopes_supported or ())
    scopes = list(dict.fromkeys((*earlier, *wanted)))
    offered = discovery.server.scopes_supported or ()
    if offline_access and scopes and "offline_access" in offered and "offline_access" not in scopes:
        scopes.append("offline_access")
    return tuple(scopes)
