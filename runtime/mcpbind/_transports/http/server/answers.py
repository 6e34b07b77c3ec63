"""Answers an HTTP app of this runtime sends: plain text, JSON-RPC errors, JSON and SSE
bodies, and the answers the resource server makes; and the request headers, read once."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...._core import jsonrpc
from ...._core.jsonrpc import Envelope, ErrorObject, RequestId
from ...._core.limits import BodyRefused
from ..asgi import Scope, Send
from .probe import reply_id

if TYPE_CHECKING:  # the auth package needs joserfc, which serving without auth does not
    from ....auth.server._resource_server import HttpAnswer, ResourceServer

# An SSE answer sent whole, with its length, has nothing a proxy could hold
# back: it goes without X-Accel-Buffering (each header costs the server a little).
WHOLE_SSE_HEADERS = (
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache, no-transform"),
)
SSE_HEADERS = (*WHOLE_SSE_HEADERS, (b"x-accel-buffering", b"no"))
"""An SSE answer; proxies must neither transform nor buffer it."""


# Header names as sent, decoded and lowercased: a server sees few, and looking one
# up costs half what decoding it does. Bounded: names past it are decoded each time.
_NAMES: dict[bytes, str] = {}
_MAX_NAMES = 1024


def headers_of(scope: Scope) -> dict[str, str]:
    """The request's headers by lowercased name (the last of a repeated one)."""
    headers = {}
    names = _NAMES
    for name, value in scope["headers"]:
        key = names.get(name)
        if key is None:
            key = name.decode("latin-1").lower()
            if len(names) < _MAX_NAMES:
                names[name] = key
        headers[key] = value.decode("latin-1")
    return headers


async def plain(
    send: Send, status: int, text: str, extra: Sequence[tuple[bytes, bytes]] = ()
) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"text/plain; charset=utf-8"), *extra],
        }
    )
    await send({"type": "http.response.body", "body": text.encode()})


async def json_error(
    send: Send, status: int, request_id: RequestId | None, code: int, message: str, data: Any = None
) -> None:
    body = jsonrpc.error_bytes(request_id, code, message, data)
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json")],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def refuse(
    send: Send,
    status: int,
    about: Envelope | list[Envelope] | None,
    code: int,
    message: str,
    extra: Sequence[tuple[bytes, bytes]] = (),
) -> None:
    """Turn away what a POST brought, before any handler saw it (no session,
    an unknown one, a version not spoken, no room...): a JSON-RPC error under
    the id of the request ``about`` when it can be read, so that the caller
    waiting on that id fails now; null for a batch, a notification, or what
    was not read."""
    request_id = reply_id(about) if isinstance(about, Envelope) else None
    body = jsonrpc.error_bytes(request_id, code, message)
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), *extra],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def send_answer(send: Send, answer: HttpAnswer) -> None:
    """Send an answer the resource server made (a refusal, the metadata document)."""
    await send(
        {"type": "http.response.start", "status": answer.status, "headers": list(answer.headers)}
    )
    await send({"type": "http.response.body", "body": answer.body})


async def whole_sse(send: Send, body: bytes, extra: Sequence[tuple[bytes, bytes]] = ()) -> None:
    """An SSE answer complete before it is sent: one body, with its length
    (no chunked encoding), and no header asking proxies not to buffer it."""
    length = (b"content-length", str(len(body)).encode())
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [*WHOLE_SSE_HEADERS, *extra, length],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def body_refused(send: Send, refused: BodyRefused) -> None:
    """The answer to a body refused while it was read (too large, too slow, no room)."""
    if refused.status == 413:
        await json_error(send, 413, None, jsonrpc.INVALID_REQUEST, refused.reason)
    else:
        await plain(send, refused.status, refused.reason, [(b"connection", b"close")])


async def utf8_or_refused(body: bytes, send: Send) -> bool:
    """Whether a body of notifications (or responses) is valid UTF-8, else
    answer 400: its params were routed unread, and a 202 would say they were fine."""
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as error:
        await json_error(
            send,
            400,
            None,
            jsonrpc.PARSE_ERROR,
            f"Parse error: invalid UTF-8 at byte {error.start}",
        )
        return False
    return True


def scope_refusal(auth: ResourceServer | None, error: ErrorObject | None) -> HttpAnswer | None:
    """The 403 for a response whose error says the caller lacks scopes (a
    handler raised InsufficientScope, or relayed such an error), when the app
    checks tokens; else None. Decided on the error object the session wrote
    (:attr:`mcpbind._core.wire.Message.error`), never on the response's text: a
    result that merely mentions a scope is a result."""
    if auth is None or error is None or error.code != jsonrpc.INSUFFICIENT_SCOPE:
        return None
    data = error.data
    if not isinstance(data, dict) or data.get("error") != "insufficient_scope":
        return None
    scope = data.get("scope")
    return auth.insufficient(scope.split() if isinstance(scope, str) else ())
