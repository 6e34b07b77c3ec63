"""The resource server: what the HTTP transports ask before serving a request.

``ResourceServer`` holds the protected resource's identity and metadata, a
:class:`TokenVerifier`, and the scopes requests need:

* ``required_scopes``: what every request needs (named in 401 challenges);
* ``scopes``: what particular requests need on top, by method
  (``"tools/list"``) or by method and name (``("tools/call", "delete")``,
  ``("prompts/get", "review")``, ``("resources/read", "memo://secret")``:
  the ``name`` of tools and prompts, the ``uri`` of resources);
* ``scope_hierarchy``: broader scopes and the narrower ones they imply
  (``{"mcp:admin": ["mcp:tools"]}``); a principal's scopes include what
  those it was granted imply.

A request without a token gets 401 with ``WWW-Authenticate: Bearer
resource_metadata="...", scope="..."``; a refused token 401 with
``error="invalid_token"``; a token lacking scopes 403 with
``error="insufficient_scope"`` and every scope the request needs, so the
client can step up in one go. Handlers that find out later that the caller
lacks a scope raise :class:`InsufficientScope`; over Streamable HTTP that too
is a 403 while the answer has not started.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import msgspec
from msgspec import UNSET, UnsetType

from .._principal import Principal
from ._metadata import ProtectedResourceMetadata, canonical_resource, metadata_paths, metadata_url
from ._verifier import InvalidToken, TokenVerifier, VerifierUnavailable

logger = logging.getLogger(__name__)

# RFC 6750 §2.1: b64token.
_TOKEN68 = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
# What error_description and scope may hold (RFC 6750 §3): no quote, no backslash, no control.
_UNQUOTABLE = re.compile(r'["\\\x00-\x1f\x7f-\U0010ffff]')
_JSON = (b"content-type", b"application/json")

ScopeKey = str | tuple[str, str]
# The requests that name an item of the app: by ``name``, or a resource's ``uri``.
_ITEMS = frozenset({"tools/call", "prompts/get", "resources/read"})


@dataclass(frozen=True, slots=True)
class HttpAnswer:
    """An HTTP response the transport sends as it is."""

    status: int
    headers: tuple[tuple[bytes, bytes], ...]
    body: bytes = b""


class _Named(msgspec.Struct):
    name: str | UnsetType = UNSET
    uri: str | UnsetType = UNSET


_named = msgspec.json.Decoder(_Named)


class ResourceServer:
    """An MCP server's part as an OAuth 2.1 resource server (see the module docstring).

    ``resource`` is the server's canonical URL (its MCP endpoint, e.g.
    ``https://mcp.example.com/mcp``): the audience tokens must name.
    ``scopes_supported`` goes into the metadata document; by default the
    required scopes (the minimal set clients ask for up front).
    """

    def __init__(
        self,
        resource: str,
        authorization_servers: Sequence[str],
        verifier: TokenVerifier,
        *,
        required_scopes: Iterable[str] = (),
        scopes: Mapping[ScopeKey, Iterable[str]] | None = None,
        scope_hierarchy: Mapping[str, Iterable[str]] | None = None,
        scopes_supported: Sequence[str] | None = None,
        resource_name: str | None = None,
        resource_documentation: str | None = None,
    ) -> None:
        if not authorization_servers:
            raise ValueError("a protected resource names at least one authorization server")
        self.resource = canonical_resource(resource)
        self.verifier = verifier
        self.required_scopes = frozenset(required_scopes)
        self._method_scopes: dict[str, frozenset[str]] = {}
        self._named_scopes: dict[tuple[str, str], frozenset[str]] = {}
        for key, needed in (scopes or {}).items():
            if isinstance(key, tuple):
                self._named_scopes[key] = frozenset(needed)
            else:
                self._method_scopes[key] = frozenset(needed)
        self._named_methods = frozenset(method for method, _ in self._named_scopes)
        self._implies = _closure(scope_hierarchy or {})
        supported = (
            list(scopes_supported) if scopes_supported is not None else sorted(self.required_scopes)
        )
        self.metadata = ProtectedResourceMetadata(
            resource=self.resource,
            authorization_servers=list(authorization_servers),
            scopes_supported=supported if supported else None,
            # Tokens go in the Authorization header only: MCP forbids them in the query.
            bearer_methods_supported=["header"],
            resource_name=resource_name,
            resource_documentation=resource_documentation,
        )
        self.metadata_url = metadata_url(self.resource)
        self.metadata_paths = metadata_paths(self.resource)
        self._metadata_body = msgspec.json.encode(self.metadata)

    # ------------------------------------------------------------ metadata

    def serves_metadata(self, path: str) -> bool:
        return path in self.metadata_paths

    def metadata_answer(self, method: str) -> HttpAnswer:
        """The answer to a request for the metadata document (public: no token needed)."""
        cors = ((b"access-control-allow-origin", b"*"),)
        if method in ("GET", "HEAD"):
            body = self._metadata_body if method == "GET" else b""
            return HttpAnswer(200, (_JSON, (b"cache-control", b"max-age=3600"), *cors), body)
        if method == "OPTIONS":  # a browser's preflight
            allow = (
                (b"access-control-allow-methods", b"GET, OPTIONS"),
                (b"access-control-allow-headers", b"*"),
            )
            return HttpAnswer(204, (*cors, *allow))
        return HttpAnswer(405, ((b"allow", b"GET, HEAD, OPTIONS"),))

    # ------------------------------------------------------------ requests

    async def authenticate(self, headers: Mapping[str, str]) -> Principal | HttpAnswer:
        """The principal of a request's bearer token, or the answer refusing it
        (401, 403 for the required scopes, 400 for a malformed header, 503
        when the token cannot be checked now)."""
        header = headers.get("authorization")
        scheme, _, token = (header or "").strip().partition(" ")
        if scheme.lower() != "bearer":
            # No credentials (or another scheme): no error code or description (RFC 6750 §3.1).
            return self._challenge(
                401, None, "this server needs an access token", self.required_scopes, bare=True
            )
        token = token.strip()
        if not _TOKEN68.fullmatch(token):
            return self._challenge(
                400, "invalid_request", "the Authorization header does not hold one bearer token"
            )
        try:
            principal = await self.verifier.verify(token)
        except InvalidToken as error:
            logger.info("refused an access token: %s", error)
            return self._challenge(401, "invalid_token", str(error), self.required_scopes)
        except VerifierUnavailable as error:
            logger.warning("cannot verify an access token: %s", error)
            body = msgspec.json.encode(
                {
                    "error": "temporarily_unavailable",
                    "error_description": "the access token cannot be verified now",
                }
            )
            return HttpAnswer(503, (_JSON, (b"retry-after", b"5")), body)
        if self._implies:
            principal = dataclasses.replace(principal, scopes=self._implied(principal.scopes))
        if not principal.has_scopes(self.required_scopes):
            return self.insufficient(())
        return principal

    def authorize(
        self,
        principal: Principal,
        calls: Iterable[tuple[str, msgspec.Raw | UnsetType]],
        named: Callable[[str, str], Iterable[str]] | None = None,
    ) -> HttpAnswer | None:
        """None if ``principal`` may make these requests (method, raw params),
        else the 403 naming every scope they need: by ``scopes``, and by
        ``named`` (method, name -> scopes: what the served app's item needs,
        its tools' own scopes) for ``tools/call``, ``prompts/get`` and
        ``resources/read``."""
        if not self._method_scopes and not self._named_scopes and named is None:
            return None
        needed: set[str] = set()
        for method, params in calls:
            needed |= self._method_scopes.get(method, frozenset())
            asked = method in self._named_methods or (named is not None and method in _ITEMS)
            if asked and not isinstance(params, UnsetType):
                name = _name_of(params)
                if name is not None:
                    needed |= self._named_scopes.get((method, name), frozenset())
                    if named is not None:
                        needed.update(named(method, name))
        if principal.has_scopes(needed):
            return None
        return self.insufficient(needed)

    def insufficient(self, needed: Iterable[str]) -> HttpAnswer:
        """The 403 for a request that needs ``needed`` besides the required scopes."""
        return self._challenge(
            403,
            "insufficient_scope",
            "the access token lacks scopes this request needs",
            self.required_scopes.union(needed),
        )

    def _challenge(
        self,
        status: int,
        error: str | None,
        description: str,
        scopes: Iterable[str] = (),
        bare: bool = False,
    ) -> HttpAnswer:
        """``description`` goes into the body, and unless ``bare`` into the header too."""
        params = [f'error="{error}"'] if error is not None else []
        if not bare:
            params.append(f'error_description="{_UNQUOTABLE.sub("", description)}"')
        params.append(f'resource_metadata="{self.metadata_url}"')
        scope = " ".join(sorted(scopes))
        if scope:
            params.append(f'scope="{_UNQUOTABLE.sub("", scope)}"')
        challenge = ("Bearer " + ", ".join(params)).encode()
        body = msgspec.json.encode(
            {"error": error or "unauthorized", "error_description": description}
        )
        return HttpAnswer(status, (_JSON, (b"www-authenticate", challenge)), body)

    def _implied(self, granted: frozenset[str]) -> frozenset[str]:
        implied = set(granted)
        for scope in granted:
            implied |= self._implies.get(scope, frozenset())
        return frozenset(implied)

    async def aclose(self) -> None:
        await self.verifier.aclose()


def _name_of(params: msgspec.Raw) -> str | None:
    try:
        named = _named.decode(params)
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
        return None  # the session refuses the params
    value = named.name if not isinstance(named.name, UnsetType) else named.uri
    return value if isinstance(value, str) else None


def _closure(hierarchy: Mapping[str, Iterable[str]]) -> dict[str, frozenset[str]]:
    """Every scope each broader scope implies, directly or through others."""
    direct = {scope: set(narrower) for scope, narrower in hierarchy.items()}
    closed: dict[str, frozenset[str]] = {}
    for scope in direct:
        seen: set[str] = set()
        pending = list(direct[scope])
        while pending:
            narrower = pending.pop()
            if narrower not in seen:
                seen.add(narrower)
                pending.extend(direct.get(narrower, ()))
        closed[scope] = frozenset(seen)
    return closed
