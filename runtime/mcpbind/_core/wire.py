"""The message a session and its transport hand each other.

A session encodes what it sends once. What it knew while encoding (whether the
message is a request, a notification or a response, its id and method, the
incoming request it belongs to, and its params as a value) travels with the
bytes in a :class:`Message`, so that no transport decodes again what the
session has just encoded: Streamable HTTP routes by the id, mirrors the
method, the name, the protocol version and the tool arguments in headers, and
closes the stream of a cancelled request, all from the message's fields.

Incoming messages come the same way: a transport that had to decode a message
to route it (the HTTP client, to know which response ends a request's
stream) hands the decoded envelope with the bytes, and the session uses it;
from others (stdio) the session gets the bytes alone and decodes them, once.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, Protocol, runtime_checkable

import msgspec

from .jsonrpc import Envelope, ErrorObject, RequestId
from .limits import LOCAL, ClientIdentity


class Kind(enum.IntEnum):
    """What a message is, as far as its sender knows (UNKNOWN: not decoded yet)."""

    UNKNOWN = 0
    REQUEST = 1
    NOTIFICATION = 2
    RESPONSE = 3
    """A result or an error."""


UNKNOWN: Final = Kind.UNKNOWN
REQUEST: Final = Kind.REQUEST
NOTIFICATION: Final = Kind.NOTIFICATION
RESPONSE: Final = Kind.RESPONSE


class RequestExtra(msgspec.Struct, frozen=True, gc=False):
    """What the transport knows of an incoming message beyond its bytes.

    Built by the transport as it hands the message over (once per connection
    where nothing changes between messages: stdio, in memory; once per POST
    over HTTP), read by handlers as ``ctx.extra``. A frozen Struct: built in
    C, shared by every handler and task of the request, changed by none."""

    principal: Any = None
    """Who the message was authenticated as (a
    :class:`~mcpbind.auth._principal.Principal`), where the transport
    verified an access token; else None."""
    client: ClientIdentity = LOCAL
    """Who sent it, as the transport names its clients for per-client limits."""
    headers: Mapping[str, str] | None = None
    """The headers of the HTTP request that carried it (names lower-cased,
    values as latin-1), read only; None off HTTP."""
    close_stream: Callable[[], None] | None = None
    """Ends the connection carrying the request's messages early, for the
    client to resume it (Streamable HTTP, an SSE answer); None where the
    transport has no such stream (stdio, in memory, JSON answers, 2026-07-28
    requests, whose streams cannot be resumed)."""
    related: RequestId | None = None
    """On a client: the request of ours a server's request or notification
    belongs to. Over Streamable HTTP, the request on whose response stream it
    came (2025-11-25, transports: such messages "SHOULD relate to the
    originating client request"). At 2026-07-28, for an input request carried
    by an input-required result: the first request of the rounds (its retries
    with the answers are new requests, but the same call), whatever the
    transport. None when it came on no request's stream (the standalone
    stream, the legacy HTTP+SSE stream, stdio)."""


NO_EXTRA: Final = RequestExtra()
"""The extra of a message whose transport knows nothing more of it: a local,
unauthenticated peer (stdio)."""


class Message(msgspec.Struct, kw_only=True, gc=False):
    """One JSON-RPC message: its bytes, and what its side already knows of them.

    A Struct, not a class of its own: built in C, it costs a session about a
    tenth of a microsecond per message. Not tracked by the garbage collector:
    a message refers to what it carries, never back to itself."""

    data: bytes
    """The encoded message, as it goes on the wire."""
    kind: Kind = UNKNOWN
    id: RequestId | None = None
    """A request's id, or the id a response answers (None for an error
    response to a message whose id was unreadable)."""
    method: str | None = None
    related: RequestId | None = None
    """The incoming request this message belongs to: its response, or a
    request or notification sent while handling it. Transports with a stream
    per request (Streamable HTTP, server side) route by it. Incoming, on a
    client's Streamable HTTP transport: the request of ours whose response
    stream carried a notification."""
    params: Any = None
    """Outgoing: the params as the session had them before encoding (a typed
    Struct, a mapping), or their encoded bytes when it only ever had those
    (``request_raw``); None for none."""
    envelope: Envelope | None = None
    """Incoming: the envelope, when the transport decoded it (else the session does)."""
    extra: RequestExtra | None = None
    """Incoming: what the transport knows of the message beyond its bytes
    (None: nothing, :data:`NO_EXTRA`)."""
    error: ErrorObject | None = None
    """Outgoing, for an error response: its code, message and data, so that the
    transport decides on its HTTP status (403 and its challenge for an
    insufficient scope) from what the session knew, not from the bytes."""


class Transport(Protocol):
    """A bidirectional stream of JSON-RPC messages, one :class:`Message` each."""

    async def read(self) -> Message | None:
        """The next message, or None once the peer has gone. A transport that
        decoded the message's envelope (to route it) hands it along; else the
        session decodes the bytes."""

    def write(self, message: Message) -> None:
        """Queue one message for sending; never blocks.

        Besides the bytes, the message says what the session knows of them:
        its kind, id, method and params, and ``related``, the id of the
        incoming request it belongs to (its response, or a notification or
        request sent while handling it). Transports with a stream per request
        (Streamable HTTP) route by them, others send the bytes alone.
        """

    async def drain(self) -> None:
        """Wait until queued messages are handed to the peer (backpressure)."""

    async def close(self) -> None:
        """Stop sending and receiving; pending reads return None."""

    def close_request_stream(self, request_id: RequestId) -> None:
        """End the connection carrying ``request_id``'s messages early, where
        the transport can resume it later (Streamable HTTP); else nothing."""


# What some transports can do besides the five members every one has: each a
# Protocol of its own, checked with isinstance where it matters (at connect or
# close, never per message), so a transport without the ability still serves.


@runtime_checkable
class ClosesWithReason(Protocol):
    """A transport that can say why its peer went away (a child process's exit)."""

    def closed_reason(self) -> str | None:
        """Why reading ended, for the error of the calls left waiting; None if unknown."""


@runtime_checkable
class TakesVersion(Protocol):
    """A client transport that sends the negotiated version with every message
    (HTTP, in headers), told once it is known."""

    def negotiated(self, version: str, stateless: bool | None = None) -> None:
        """``version`` was agreed on; ``stateless``: whether requests describe
        themselves (2026-07-28 on), None to leave it as it was."""


@runtime_checkable
class RenewsSession(Protocol):
    """A client transport whose server can end the session (Streamable HTTP:
    a 404 to a request of an expired session), and which can start a new one."""

    def renew_by(self, renew: Callable[[str | None], Awaitable[None]]) -> None:
        """Call ``renew`` (with the ended session's id) when the server ended it."""


@runtime_checkable
class NamesSession(Protocol):
    """A transport whose connection has a session id (Streamable HTTP)."""

    session_id: str | None


def incoming(
    data: bytes,
    envelope: Envelope | None = None,
    related: RequestId | None = None,
    extra: RequestExtra | None = None,
) -> Message:
    """A message read from the peer, decoded (``envelope``) or not; ``related``:
    the request of ours whose response stream carried it, where the transport
    knows; ``extra``: what else it knows of it (see :class:`RequestExtra`)."""
    return Message(data=data, envelope=envelope, related=related, extra=extra)


def request(
    data: bytes, request_id: RequestId, method: str, related: RequestId | None, params: Any
) -> Message:
    return Message(
        data=data, kind=REQUEST, id=request_id, method=method, related=related, params=params
    )


def notification(data: bytes, method: str, related: RequestId | None, params: Any) -> Message:
    return Message(data=data, kind=NOTIFICATION, method=method, related=related, params=params)


def response(
    data: bytes, request_id: RequestId | None, error: ErrorObject | None = None
) -> Message:
    """The response to the incoming request ``request_id`` (related to it);
    ``error``: what it says, when it is an error response."""
    return Message(data=data, kind=RESPONSE, id=request_id, related=request_id, error=error)


__all__ = [
    "NOTIFICATION",
    "NO_EXTRA",
    "REQUEST",
    "RESPONSE",
    "UNKNOWN",
    "ClosesWithReason",
    "Kind",
    "Message",
    "NamesSession",
    "RenewsSession",
    "RequestExtra",
    "TakesVersion",
    "Transport",
    "incoming",
    "notification",
    "request",
    "response",
]
