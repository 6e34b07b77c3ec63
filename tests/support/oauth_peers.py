"""Small HTTP peers for the OAuth client's tests, served on loopback by
uvicorn (support.http_servers.serving):

* :class:`DocumentServer`: serves fixed documents by path (metadata that is
  well-formed, malformed, or lying), remembering what was asked for.
* :class:`AuthorizationServerPeer`: a minimal OAuth 2.1 authorization server
  that grants at once (no user): metadata, dynamic registration, the
  authorization endpoint (redirecting with code, state and iss), and the token
  endpoint (authorization_code with PKCE S256 checked, refresh_token,
  client_credentials), token introspection (RFC 7662), with every request
  kept for the test to look at.
* :class:`ProtectedResource`: an ASGI wrapper that makes an MCP app a
  protected resource of such a server: Protected Resource Metadata, 401 with
  ``resource_metadata`` and ``scope``, 403 ``insufficient_scope``.

They are test servers speaking real HTTP, not stand-ins for a library.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import time
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlencode

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


async def _body(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


async def _respond(
    send: Send, status: int, body: bytes = b"", headers: dict[str, str] | None = None
) -> None:
    raw = [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
    raw.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


def _json(document: Any) -> tuple[bytes, dict[str, str]]:
    return json.dumps(document).encode(), {"content-type": "application/json"}


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}


class DocumentServer:
    """Answers GET <path> with the (status, body) given for it, else 404."""

    def __init__(self, documents: dict[str, tuple[int, bytes | Any]] | None = None) -> None:
        self.documents = dict(documents or {})
        self.asked: list[str] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        self.asked.append(scope["path"])
        status, body = self.documents.get(scope["path"], (404, b"not found"))
        if not isinstance(body, bytes):
            body = json.dumps(body).encode()
        await _respond(send, status, body, {"content-type": "application/json"})


@dataclass
class Grant:
    client_id: str
    scopes: list[str]
    resource: str | None
    expires_at: float


@dataclass
class AuthorizationServerPeer:
    """See the module docstring. ``base`` is set once the port is known."""

    base: str = ""
    issuer_path: str = ""
    lifetime: float = 3600.0
    issue_refresh_tokens: bool = True
    iss_parameter: str = "correct"  # or "omit", "wrong"
    scopes_supported: list[str] | None = None
    withheld: set[str] = field(default_factory=set)  # scopes never granted, whatever is asked
    auth_methods: list[str] = field(default_factory=lambda: ["none", "client_secret_basic"])
    clients: dict[str, dict[str, Any]] = field(default_factory=dict)
    codes: dict[str, dict[str, Any]] = field(default_factory=dict)
    access: dict[str, Grant] = field(default_factory=dict)
    refresh: dict[str, Grant] = field(default_factory=dict)
    registrations: list[dict[str, Any]] = field(default_factory=list)
    authorizations: list[dict[str, str]] = field(default_factory=list)
    token_requests: list[dict[str, str]] = field(default_factory=list)

    @property
    def issuer(self) -> str:
        return self.base + self.issuer_path

    def metadata(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "issuer": self.issuer,
            "authorization_endpoint": f"{self.issuer}/authorize",
            "token_endpoint": f"{self.issuer}/token",
            "registration_endpoint": f"{self.issuer}/register",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": self.auth_methods,
            "authorization_response_iss_parameter_supported": True,
        }
        if self.scopes_supported is not None:
            document["scopes_supported"] = self.scopes_supported
        return document

    def verify(self, token: str) -> Grant | None:
        grant = self.access.get(token)
        return grant if grant is not None and grant.expires_at > time.time() else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        path = scope["path"].removeprefix(self.issuer_path)
        if scope["path"] == "/.well-known/oauth-authorization-server" + self.issuer_path:
            await _respond(send, 200, *_json(self.metadata()))
        elif path == "/register" and scope["method"] == "POST":
            await self._register(json.loads(await _body(receive)), send)
        elif path == "/authorize":
            await self._authorize(
                {k: v[0] for k, v in parse_qs(scope["query_string"].decode()).items()}, send
            )
        elif path == "/introspect" and scope["method"] == "POST":
            form = {k: v[0] for k, v in parse_qs((await _body(receive)).decode()).items()}
            grant = self.verify(form.get("token", ""))
            answer: dict[str, Any] = {"active": False}
            if grant is not None:  # RFC 7662
                answer = {
                    "active": True,
                    "client_id": grant.client_id,
                    "scope": " ".join(grant.scopes),
                    "exp": int(grant.expires_at),
                    "aud": grant.resource,
                }
            await _respond(send, 200, *_json(answer))
        elif path == "/token" and scope["method"] == "POST":
            form = {k: v[0] for k, v in parse_qs((await _body(receive)).decode()).items()}
            await self._token(form, _headers(scope).get("authorization"), send)
        else:
            await _respond(send, 404, b"not found")

    async def _register(self, request: dict[str, Any], send: Send) -> None:
        self.registrations.append(request)
        client_id = f"client-{secrets.token_hex(4)}"
        method = request.get("token_endpoint_auth_method", "client_secret_basic")
        client = {
            "client_id": client_id,
            "token_endpoint_auth_method": method,
            "redirect_uris": request.get("redirect_uris", []),
        }
        if method != "none":
            client["client_secret"] = secrets.token_urlsafe(16)
        self.clients[client_id] = client
        await _respond(send, 201, *_json(client))

    async def _authorize(self, query: dict[str, str], send: Send) -> None:
        self.authorizations.append(query)
        client = self.clients.get(query.get("client_id", ""))
        if client is None or query.get("redirect_uri") not in client["redirect_uris"]:
            await _respond(send, 400, *_json({"error": "invalid_request"}))
            return
        code = secrets.token_urlsafe(16)
        self.codes[code] = query
        back = {"code": code, "state": query.get("state", "")}
        if self.iss_parameter != "omit":
            back["iss"] = self.issuer if self.iss_parameter == "correct" else "https://evil.example"
        await _respond(
            send, 302, headers={"location": f"{query['redirect_uri']}?{urlencode(back)}"}
        )

    def _client(self, form: dict[str, str], authorization: str | None) -> str | None:
        if authorization is not None and authorization.startswith("Basic "):
            client_id, _, secret = base64.b64decode(authorization[6:]).decode().partition(":")
            client = self.clients.get(client_id)
            return (
                client_id if client is not None and client.get("client_secret") == secret else None
            )
        client = self.clients.get(form.get("client_id", ""))
        if client is None or client["token_endpoint_auth_method"] not in (
            "none",
            "client_secret_post",
        ):
            return None
        if (
            client["token_endpoint_auth_method"] == "client_secret_post"
            and form.get("client_secret") != client["client_secret"]
        ):
            return None
        return client["client_id"]

    async def _token(self, form: dict[str, str], authorization: str | None, send: Send) -> None:
        self.token_requests.append(form)
        client_id = self._client(form, authorization)
        if client_id is None:
            await _respond(send, 401, *_json({"error": "invalid_client"}))
            return
        if form.get("grant_type") == "authorization_code":
            request = self.codes.pop(form.get("code", ""), None)
            verifier = form.get("code_verifier", "")
            challenge = (
                base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
                .rstrip(b"=")
                .decode()
            )
            if (
                request is None
                or request["client_id"] != client_id
                or request.get("code_challenge") != challenge
            ):
                await _respond(
                    send,
                    400,
                    *_json({"error": "invalid_grant", "error_description": "bad code or verifier"}),
                )
                return
            grant = Grant(client_id, request.get("scope", "").split(), form.get("resource"), 0.0)
        elif form.get("grant_type") == "refresh_token":
            old = self.refresh.pop(form.get("refresh_token", ""), None)
            if old is None or old.client_id != client_id:
                await _respond(send, 400, *_json({"error": "invalid_grant"}))
                return
            grant = old
        elif form.get("grant_type") == "client_credentials":
            grant = Grant(client_id, form.get("scope", "").split(), form.get("resource"), 0.0)
        else:
            await _respond(send, 400, *_json({"error": "unsupported_grant_type"}))
            return
        scopes = [s for s in grant.scopes if s not in self.withheld]
        grant = Grant(grant.client_id, scopes, grant.resource, time.time() + self.lifetime)
        token = secrets.token_urlsafe(16)
        self.access[token] = grant
        answer: dict[str, Any] = {
            "access_token": token,
            "token_type": "Bearer",
            "expires_in": self.lifetime,
            "scope": " ".join(grant.scopes),
        }
        if self.issue_refresh_tokens:
            answer["refresh_token"] = secrets.token_urlsafe(16)
            self.refresh[answer["refresh_token"]] = grant
        await _respond(send, 200, *_json(answer))


@dataclass
class ProtectedResource:
    """Wraps an MCP ASGI app: tokens of ``authorization`` with ``required``
    scopes get through; ``base`` is set once the port is known."""

    app: Any
    authorization: AuthorizationServerPeer
    required: list[str] = field(default_factory=lambda: ["mcp"])
    base: str = ""
    path: str = "/mcp"  # of the resource identifier: "" makes the whole origin the resource

    @property
    def resource(self) -> str:
        return self.base + self.path

    @property
    def prm_path(self) -> str:
        return "/.well-known/oauth-protected-resource" + self.path

    seen: list[str] = field(default_factory=list)  # the Authorization headers received

    def challenge(self, extra: str = "") -> str:
        return f'Bearer resource_metadata="{self.base}{self.prm_path}", scope="{" ".join(self.required)}"{extra}'

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["path"] == self.prm_path:
            document = {
                "resource": self.resource,
                "authorization_servers": [self.authorization.issuer],
                "scopes_supported": ["mcp"],
            }
            await _respond(send, 200, *_json(document))
            return
        header = _headers(scope).get("authorization", "")
        self.seen.append(header)
        grant = (
            self.authorization.verify(header.removeprefix("Bearer "))
            if header.startswith("Bearer ")
            else None
        )
        if grant is None or grant.resource != self.resource:
            await _respond(send, 401, b"", {"www-authenticate": self.challenge()})
            return
        if not set(self.required) <= set(grant.scopes):
            await _respond(
                send, 403, b"", {"www-authenticate": self.challenge(', error="insufficient_scope"')}
            )
            return
        await self.app(scope, receive, send)
