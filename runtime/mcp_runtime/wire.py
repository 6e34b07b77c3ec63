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
from typing import Any, Final, Protocol

import msgspec

from .jsonrpc import Envelope, RequestId


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


def incoming(
    data: bytes, envelope: Envelope | None = None, related: RequestId | None = None
) -> Message:
    """A message read from the peer, decoded (``envelope``) or not; ``related``:
    the request of ours whose response stream carried it, where the transport knows."""
    return Message(data=data, envelope=envelope, related=related)


def request(
    data: bytes, request_id: RequestId, method: str, related: RequestId | None, params: Any
) -> Message:
    return Message(
        data=data, kind=REQUEST, id=request_id, method=method, related=related, params=params
    )


def notification(data: bytes, method: str, related: RequestId | None, params: Any) -> Message:
    return Message(data=data, kind=NOTIFICATION, method=method, related=related, params=params)


def response(data: bytes, request_id: RequestId | None) -> Message:
    """The response to the incoming request ``request_id`` (related to it)."""
    return Message(data=data, kind=RESPONSE, id=request_id, related=request_id)


__all__ = [
    "NOTIFICATION",
    "REQUEST",
    "RESPONSE",
    "UNKNOWN",
    "Kind",
    "Message",
    "Transport",
    "incoming",
    "notification",
    "request",
    "response",
]
