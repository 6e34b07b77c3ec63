"""DPoP (RFC 9449): access tokens bound to a key the client holds, so a
stolen token is useless without it.

When the authorization server advertises ``dpop_signing_alg_values_supported``
with ES256 and the provider was made with ``dpop=True``, every token request
carries a proof (``DPoP`` header) and the token comes back bound to the key
(``token_type`` DPoP); each request to the MCP server then carries
``Authorization: DPoP <token>`` and a fresh proof naming the method, the URL
and the token's hash (``ath``). A server that wants a nonce answers
``use_dpop_nonce`` with a ``DPoP-Nonce`` header; the request is sent again
with it (and later ones too).

The key is an EC P-256 key made by joserfc for the life of the provider;
signing is joserfc's. Tokens kept in a storage across restarts are then bound
to a key that is gone: the server's 401 starts a new authorization.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
from urllib.parse import urlsplit, urlunsplit

from joserfc import jwk, jwt

from ._metadata import AuthorizationServerMetadata

ALGORITHM = "ES256"
NONCE_ERROR = "use_dpop_nonce"


class DPoPKey:
    """A proof-of-possession key, and the nonces servers asked proofs to carry."""

    def __init__(self) -> None:
        self._key = jwk.ECKey.generate_key("P-256")
        self._header = {
            "typ": "dpop+jwt",
            "alg": ALGORITHM,
            "jwk": self._key.as_dict(private=False),
        }
        self.nonces: dict[str, str] = {}  # by origin: each server's latest DPoP-Nonce

    @staticmethod
    def supported_by(server: AuthorizationServerMetadata) -> bool:
        return ALGORITHM in (server.dpop_signing_alg_values_supported or ())

    def proof(self, method: str, url: str, access_token: str | None = None) -> str:
        """A fresh proof for one request (RFC 9449 section 4.2)."""
        parts = urlsplit(url)
        claims: dict[str, object] = {
            "jti": secrets.token_urlsafe(16),
            "htm": method,
            "htu": urlunsplit((parts.scheme, parts.netloc, parts.path, "", "")),
            "iat": int(time.time()),
        }
        if access_token is not None:
            digest = hashlib.sha256(access_token.encode("ascii")).digest()
            claims["ath"] = base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")
        nonce = self.nonces.get(_origin(url))
        if nonce is not None:
            claims["nonce"] = nonce
        return jwt.encode(self._header, claims, self._key, algorithms=[ALGORITHM])

    def remember_nonce(self, url: str, nonce: str | None) -> bool:
        """Keep a server's new nonce; whether it is one to retry with."""
        if not nonce or self.nonces.get(_origin(url)) == nonce:
            return False
        self.nonces[_origin(url)] = nonce
        return True


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}"
