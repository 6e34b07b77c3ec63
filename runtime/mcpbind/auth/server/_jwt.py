"""JWT access tokens (RFC 9068) checked against the authorization server's keys.

The keys come from the ``jwks_uri`` of the authorization server's metadata
(or one given), are kept for ``jwks_ttl`` seconds, and are fetched again when
a token names a key id they lack (the server rotated its keys), at most once
every ``min_refresh_interval`` seconds so that tokens with made-up key ids
cannot make this server hammer the authorization server.

Signatures are checked by joserfc; a token passes when its signature holds
under one of the published keys with an accepted algorithm, its ``iss`` is
the issuer, its ``aud`` names this resource (RFC 8707), it has not expired
and its ``nbf`` and ``iat`` are not in the future, give or take ``leeway``
seconds of clock skew.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from typing import Any

import httpx2
from joserfc import errors, jws
from joserfc import jwt as jose_jwt
from joserfc.jwk import KeySet

from .._principal import Principal
from . import _discovery as discovery
from ._metadata import canonical_resource, same_resource
from ._verifier import InvalidToken, VerifierUnavailable, principal_of, refuse_bound

logger = logging.getLogger(__name__)

# Asymmetric algorithms only: the keys are public, so a MAC (HS256) or "none" never verifies anything.
DEFAULT_ALGORITHMS = (
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
    "ES256",
    "ES384",
    "ES512",
    "EdDSA",
    "Ed25519",
)
MAX_LEEWAY = 300
"""The most clock skew a verifier tolerates, in seconds (a few minutes, as RFC 7519 suggests)."""
MAX_TOKEN_SIZE = 16 * 1024


class JWTVerifier:
    """Verifies JWT access tokens issued by ``issuer`` for ``resource``.

    * ``jwks_uri``: where the keys are; by default the ``jwks_uri`` of the
      issuer's metadata (RFC 8414, or OpenID Connect Discovery).
    * ``algorithms``: the signature algorithms accepted.
    * ``leeway``: seconds of clock skew tolerated (at most MAX_LEEWAY).
    * ``token_type``: when set (``"at+jwt"`` for RFC 9068 tokens), the
      ``typ`` header a token must have, so that other JWTs of the same
      issuer (ID tokens) are not taken for access tokens.
    * ``http_client``: an ``httpx2.AsyncClient`` to fetch with (not closed by
      ``aclose``); by default one of its own.
    """

    def __init__(
        self,
        issuer: str,
        resource: str,
        *,
        jwks_uri: str | None = None,
        algorithms: Sequence[str] = DEFAULT_ALGORITHMS,
        leeway: int = 60,
        token_type: str | None = None,
        jwks_ttl: float = 3600.0,
        min_refresh_interval: float = 30.0,
        http_client: httpx2.AsyncClient | None = None,
    ) -> None:
        if not 0 <= leeway <= MAX_LEEWAY:
            raise ValueError(f"leeway must be between 0 and {MAX_LEEWAY} seconds, not {leeway}")
        if not issuer.startswith(("https://", "http://")):
            raise ValueError(f"the issuer must be an http or https URL, not {issuer!r}")
        if not algorithms or any(alg == "none" or alg.startswith("HS") for alg in algorithms):
            raise ValueError("algorithms must be asymmetric signature algorithms")
        self.issuer = issuer
        self.resource = canonical_resource(resource)
        self.algorithms = list(algorithms)
        self.leeway = leeway
        self.token_type = token_type.lower() if token_type is not None else None
        self.jwks_ttl = jwks_ttl
        self.min_refresh_interval = min_refresh_interval
        self._jwks_uri = jwks_uri
        self._http = discovery.VerifierHTTP(http_client)
        self._keys: KeySet | None = None
        self._kids: frozenset[str] = frozenset()
        self._fetched_at = float("-inf")
        self._lock = asyncio.Lock()
        self._fetches = 0  # fetches ended, whatever their outcome
        self._failure: VerifierUnavailable | None = None  # why the last one failed, if it did

    async def verify(self, token: str) -> Principal:
        header = self._header(token)
        keys = await self._key_set(header.get("kid"))
        try:
            decoded = jose_jwt.decode(token, keys, algorithms=self.algorithms)
        except errors.InvalidKeyIdError:
            raise InvalidToken(
                "the access token is signed with a key the authorization server does not publish"
            ) from None
        except errors.BadSignatureError:
            raise InvalidToken("the access token's signature is invalid") from None
        except (errors.JoseError, ValueError):
            raise InvalidToken("the access token is not a valid signed JWT") from None
        claims = decoded.claims
        self._check_claims(claims)
        return principal_of(claims)

    def _header(self, token: str) -> dict[str, Any]:
        if len(token) > MAX_TOKEN_SIZE:
            raise InvalidToken(f"the access token is longer than {MAX_TOKEN_SIZE} characters")
        try:
            header = jws.extract_compact(token.encode("ascii")).headers()
        except (errors.JoseError, ValueError):
            raise InvalidToken("the access token is not a JWT") from None
        if header.get("alg") not in self.algorithms:
            raise InvalidToken(
                "the access token is signed with an algorithm this server does not accept"
            )
        if self.token_type is not None:
            typ = header.get("typ")
            if not isinstance(typ, str) or typ.lower() not in (
                self.token_type,
                "application/" + self.token_type,
            ):
                raise InvalidToken(
                    f"the token is not an access token (its typ header is not {self.token_type})"
                )
        return header

    def _check_claims(self, claims: dict[str, Any]) -> None:
        registry = jose_jwt.JWTClaimsRegistry(
            leeway=self.leeway,
            iss={"essential": True, "value": self.issuer},
            exp={"essential": True},
        )
        try:
            registry.validate(claims)
        except errors.ExpiredTokenError:
            raise InvalidToken("the access token has expired") from None
        except errors.MissingClaimError as error:
            raise InvalidToken(f"the access token lacks the {error.claim} claim") from None
        except errors.InvalidClaimError as error:
            raise InvalidToken(_claim_problem(error.claim)) from None
        audience = claims.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        if not any(
            isinstance(value, str) and same_resource(value, self.resource) for value in audiences
        ):
            raise InvalidToken(
                "the access token was not issued for this resource (its aud does not name it)"
            )
        refuse_bound(claims)

    async def _key_set(self, kid: object) -> KeySet:
        if self._stale(kid):
            fetches = self._fetches
            async with self._lock:
                if self._fetches != fetches and self._failure is not None and self._keys is None:
                    # The fetch this request waited for failed: its outcome
                    # is this request's too. Fetching again in turn, each
                    # waiting request would wait for every fetch before it.
                    raise VerifierUnavailable(str(self._failure))
                if self._stale(kid):  # another request may have fetched them meanwhile
                    await self._refresh()
        assert self._keys is not None
        return self._keys

    def _stale(self, kid: object) -> bool:
        age = time.monotonic() - self._fetched_at
        if self._keys is None or age > self.jwks_ttl:
            return True
        return isinstance(kid, str) and kid not in self._kids and age >= self.min_refresh_interval

    async def _refresh(self) -> None:
        self._failure = (
            None  # and so it stays if this fetch is cancelled: a waiting request then fetches
        )
        try:
            self._keys, self._kids = await self._fetch()
        except VerifierUnavailable as error:
            self._failure = error
            if self._keys is None:
                raise
            logger.warning("keeping the keys fetched before: %s", error)
        finally:
            self._fetches += 1
        self._fetched_at = time.monotonic()

    async def _fetch(self) -> tuple[KeySet, frozenset[str]]:
        http = self._http.get()
        if self._jwks_uri is None:
            self._jwks_uri = await discovery.endpoint(http, self.issuer, "jwks_uri")
        document = await discovery.fetch_json(http, self._jwks_uri, "the JWKS")
        keys = document.get("keys") if isinstance(document, dict) else None
        if not isinstance(keys, list):
            raise VerifierUnavailable(f"the JWKS at {self._jwks_uri} has no keys array")
        # Signing keys only; a key of a type joserfc cannot import is skipped, not fatal.
        usable = [key for key in keys if isinstance(key, dict) and key.get("use", "sig") == "sig"]
        try:
            key_set = KeySet.import_key_set({"keys": usable})
        except (errors.JoseError, ValueError, TypeError) as error:
            raise VerifierUnavailable(
                f"the JWKS at {self._jwks_uri} holds an invalid key: {error}"
            ) from None
        kids = frozenset(key["kid"] for key in usable if isinstance(key.get("kid"), str))
        logger.debug("fetched %d keys from %s", len(usable), self._jwks_uri)
        return key_set, kids

    async def aclose(self) -> None:
        await self._http.aclose()


def _claim_problem(claim: str) -> str:
    if claim == "iss":
        return "the access token was issued by another authorization server (its iss is not the issuer)"
    if claim in ("nbf", "iat"):
        return f"the access token is not valid yet (its {claim} is in the future)"
    return f"the access token's {claim} claim is invalid"
