"""Opaque access tokens, checked by asking the authorization server (RFC 7662).

The resource server authenticates to the introspection endpoint as a client
of the authorization server (``client_secret_basic`` or
``client_secret_post``). A token passes when the answer says it is
``active``, is a bearer token, has not expired, names this resource in
``aud`` and (where the answer says) was issued by the expected issuer.
Answers for active tokens are kept for ``cache_ttl`` seconds (never past the
token's expiry), keyed by a hash of the token, so a client making many
requests with one token costs one introspection per ``cache_ttl``.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import time
from collections import OrderedDict
from typing import Any, Literal
from urllib.parse import quote_plus

import httpx2

from .._principal import Principal
from . import _discovery as discovery
from ._jwt import MAX_LEEWAY, MAX_TOKEN_SIZE
from ._metadata import canonical_resource, same_resource
from ._verifier import InvalidToken, VerifierUnavailable, principal_of, refuse_bound

logger = logging.getLogger(__name__)


class IntrospectionVerifier:
    """Verifies tokens through the introspection endpoint of ``issuer``.

    * ``introspection_endpoint``: by default the one the issuer's metadata names.
    * ``client_id`` / ``client_secret`` / ``auth_method``: how this resource
      server authenticates there.
    * ``require_audience``: refuse tokens whose answer has no ``aud`` (the
      default: without it nothing says the token was meant for this server).
    * ``cache_ttl`` / ``max_cached``: the positive cache (0 turns it off).
    """

    def __init__(
        self,
        issuer: str,
        resource: str,
        *,
        client_id: str,
        client_secret: str,
        auth_method: Literal["client_secret_basic", "client_secret_post"] = "client_secret_basic",
        introspection_endpoint: str | None = None,
        require_audience: bool = True,
        leeway: int = 60,
        cache_ttl: float = 30.0,
        max_cached: int = 4096,
        http_client: httpx2.AsyncClient | None = None,
    ) -> None:
        if not 0 <= leeway <= MAX_LEEWAY:
            raise ValueError(f"leeway must be between 0 and {MAX_LEEWAY} seconds, not {leeway}")
        if auth_method not in ("client_secret_basic", "client_secret_post"):
            raise ValueError(f"unsupported client authentication method {auth_method!r}")
        self.issuer = issuer
        self.resource = canonical_resource(resource)
        self.client_id = client_id
        self._client_secret = client_secret
        self.auth_method = auth_method
        self.require_audience = require_audience
        self.leeway = leeway
        self.cache_ttl = cache_ttl
        self.max_cached = max_cached
        self._endpoint = introspection_endpoint
        self._http = discovery.VerifierHTTP(http_client)
        self._cache: OrderedDict[bytes, tuple[float, Principal]] = OrderedDict()

    def __repr__(self) -> str:  # never the secret
        return f"IntrospectionVerifier(issuer={self.issuer!r}, resource={self.resource!r}, client_id={self.client_id!r})"

    async def verify(self, token: str) -> Principal:
        if not token or len(token) > MAX_TOKEN_SIZE:
            raise InvalidToken("the access token is empty or too long")
        key = hashlib.sha256(token.encode()).digest()
        now = time.time()
        cached = self._cache.get(key)
        if cached is not None:
            if cached[0] > now:
                return cached[1]
            del self._cache[key]
        answer = await self._introspect(token)
        principal = self._check(answer, now)
        if self.cache_ttl > 0:
            until = now + self.cache_ttl
            if principal.expires_at is not None:
                until = min(until, principal.expires_at)
            self._cache[key] = (until, principal)
            while len(self._cache) > self.max_cached:
                self._cache.popitem(last=False)
        return principal

    async def _introspect(self, token: str) -> dict[str, Any]:
        http = self._http.get()
        if self._endpoint is None:
            self._endpoint = await discovery.endpoint(http, self.issuer, "introspection_endpoint")
        form = {"token": token, "token_type_hint": "access_token"}
        headers = {"accept": "application/json"}
        if self.auth_method == "client_secret_basic":
            # RFC 6749 §2.3.1: each part form-encoded, then joined and base64-encoded.
            pair = f"{quote_plus(self.client_id)}:{quote_plus(self._client_secret)}"
            headers["authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        else:
            form |= {"client_id": self.client_id, "client_secret": self._client_secret}
        response = await discovery.ask(
            http, "POST", self._endpoint, "the introspection response", data=form, headers=headers
        )
        if response.status_code == 400:
            # What it cannot introspect (oidc-provider: JWT access tokens) is no token of its.
            raise InvalidToken("the authorization server cannot introspect the access token")
        if response.status_code != 200:
            # 401/403: this server's own credentials are refused; a configuration error, not the caller's.
            raise VerifierUnavailable(
                f"the introspection endpoint {self._endpoint} answered HTTP {response.status_code}"
            )
        answer = discovery.decode_json(
            response.content, self._endpoint, "the introspection response"
        )
        if not isinstance(answer, dict):
            raise VerifierUnavailable(
                f"the introspection response of {self._endpoint} is not a JSON object"
            )
        return answer

    def _check(self, answer: dict[str, Any], now: float) -> Principal:
        if answer.get("active") is not True:
            raise InvalidToken("the access token is not active (expired, revoked or unknown)")
        token_type = answer.get("token_type")
        if token_type is not None and (
            not isinstance(token_type, str) or token_type.lower() != "bearer"
        ):
            raise InvalidToken("the token is not a bearer access token")
        expires = answer.get("exp")
        if (
            isinstance(expires, (int, float))
            and not isinstance(expires, bool)
            and expires <= now - self.leeway
        ):
            raise InvalidToken("the access token has expired")
        issuer = answer.get("iss")
        if issuer is not None and issuer != self.issuer:
            raise InvalidToken(
                "the access token was issued by another authorization server (its iss is not the issuer)"
            )
        audience = answer.get("aud")
        if audience is None:
            if self.require_audience:
                raise InvalidToken(
                    "the introspection response names no audience for the access token"
                )
        else:
            audiences = audience if isinstance(audience, list) else [audience]
            if not any(
                isinstance(value, str) and same_resource(value, self.resource)
                for value in audiences
            ):
                raise InvalidToken(
                    "the access token was not issued for this resource (its aud does not name it)"
                )
        refuse_bound(answer)
        return principal_of(answer)

    async def aclose(self) -> None:
        await self._http.aclose()
