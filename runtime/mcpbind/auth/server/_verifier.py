"""What checks an access token: the TokenVerifier protocol and its refusals.

A verifier turns a bearer token into the :class:`Principal` it speaks for,
or refuses it. Its messages say what is wrong and never quote the token:
they reach logs and ``error_description``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from .._principal import Principal


class InvalidToken(Exception):
    """The token is not acceptable here (answered with 401 ``invalid_token``)."""


class VerifierUnavailable(Exception):
    """The verifier could not reach what it needs to decide (the authorization
    server's metadata, its keys, its introspection endpoint); answered with 503."""


class TokenVerifier(Protocol):
    """Checks access tokens presented to this resource server."""

    async def verify(self, token: str) -> Principal:
        """The principal ``token`` speaks for; raises InvalidToken or VerifierUnavailable."""

    async def aclose(self) -> None:
        """Release what the verifier holds (its HTTP client)."""


def scopes_of(claims: Mapping[str, Any]) -> frozenset[str]:
    """The scopes a token grants: ``scope`` (space-delimited, RFC 9068 and
    RFC 7662), else ``scp`` (a list or a string, as some servers issue)."""
    value = claims.get("scope", claims.get("scp"))
    if isinstance(value, str):
        return frozenset(value.split())
    if isinstance(value, list):
        return frozenset(item for item in value if isinstance(item, str))
    return frozenset()


def refuse_bound(claims: Mapping[str, Any]) -> None:
    """Refuse a sender-constrained token (``cnf``: DPoP, mutual TLS): presented
    as a bearer token it must not pass, and this server checks no proof of possession."""
    if "cnf" in claims:
        raise InvalidToken(
            "the access token is bound to a key (cnf) and this server accepts bearer tokens only"
        )


def principal_of(claims: Mapping[str, Any]) -> Principal:
    """The principal of verified claims (a JWT's or an introspection response's)."""
    subject = claims.get("sub")
    client_id = claims.get("client_id", claims.get("azp"))
    expires = claims.get("exp")
    return Principal(
        subject=subject if isinstance(subject, str) else None,
        client_id=client_id if isinstance(client_id, str) else None,
        scopes=scopes_of(claims),
        claims=dict(claims),
        expires_at=(
            float(expires)
            if isinstance(expires, (int, float)) and not isinstance(expires, bool)
            else None
        ),
    )
