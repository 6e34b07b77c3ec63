"""JSON-RPC 2.0 framing: the envelope every message is decoded into first, the
error codes, and byte-level builders for the messages a session sends.

Only the envelope is decoded here; ``params`` and ``result`` stay raw bytes
until the session knows the method and can decode them with its generated type.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec
from msgspec import UNSET, UnsetType

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603
# MCP: the request was cancelled or timed out (used for locally failed calls).
REQUEST_TIMEOUT: Final = -32001
CONNECTION_CLOSED: Final = -32000

RequestId = str | int


class ErrorObject(msgspec.Struct, omit_defaults=True):
    code: int
    message: str
    data: Any = None


class Envelope(msgspec.Struct, omit_defaults=True):
    """Any JSON-RPC message, with params and result left undecoded."""

    jsonrpc: str | UnsetType = UNSET
    id: RequestId | None | UnsetType = UNSET
    method: str | UnsetType = UNSET
    params: msgspec.Raw | UnsetType = UNSET
    result: msgspec.Raw | UnsetType = UNSET
    error: ErrorObject | UnsetType = UNSET


class McpError(Exception):
    """A JSON-RPC error: raised by a call that got an error response, and by a
    handler that wants to answer with a specific error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def __str__(self) -> str:
        return f"{self.message} (code {self.code})"

    def to_object(self) -> ErrorObject:
        return ErrorObject(self.code, self.message, self.data)


class ConnectionClosed(McpError):
    """The transport closed while a call was waiting for its response."""

    def __init__(self, message: str = "Connection closed") -> None:
        super().__init__(CONNECTION_CLOSED, message)


_decoder = msgspec.json.Decoder(Envelope)
_batch_decoder = msgspec.json.Decoder(list[Envelope])
_encoder = msgspec.json.Encoder()
encode = _encoder.encode


def decode_envelope(data: bytes) -> Envelope:
    """Raises msgspec.DecodeError for bad JSON, msgspec.ValidationError for a bad shape."""
    return _decoder.decode(data)


def decode_batch(data: bytes) -> list[Envelope]:
    return _batch_decoder.decode(data)


def request_bytes(request_id: RequestId, method: str, params: bytes | None) -> bytes:
    head = b'{"jsonrpc":"2.0","id":' + _encoder.encode(request_id) + b',"method":' + _encoder.encode(method)
    if params is None:
        return head + b"}"
    return head + b',"params":' + params + b"}"


def notification_bytes(method: str, params: bytes | None) -> bytes:
    head = b'{"jsonrpc":"2.0","method":' + _encoder.encode(method)
    if params is None:
        return head + b"}"
    return head + b',"params":' + params + b"}"


def result_bytes(request_id: RequestId, result: bytes) -> bytes:
    return b'{"jsonrpc":"2.0","id":' + _encoder.encode(request_id) + b',"result":' + result + b"}"


def error_bytes(request_id: RequestId | None, code: int, message: str, data: Any = None) -> bytes:
    return _encoder.encode(
        {"jsonrpc": "2.0", "id": request_id, "error": ErrorObject(code, message, data)}
    )
