"""PKCE (RFC 7636) with the S256 method, the one MCP clients must use."""

from __future__ import annotations

import base64
import hashlib
import secrets
from dataclasses import dataclass, field

METHOD = "S256"


def challenge_of(verifier: str) -> str:
    """BASE64URL(SHA256(verifier)) without padding (RFC 7636 section 4.2)."""
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def _verifier() -> str:
    # 64 random bytes give 86 characters of the unreserved set (43 to 128 allowed).
    return secrets.token_urlsafe(64)


@dataclass(frozen=True)
class PKCE:
    """A fresh code verifier and its S256 challenge, for one authorization."""

    verifier: str = field(default_factory=_verifier, repr=False)

    @property
    def challenge(self) -> str:
        return challenge_of(self.verifier)

    method = METHOD
