"""JSON-RPC 2.0 framing: the envelope every message is decoded into first, the
error codes, and byte-level builders for the messages a session sends.

Only the envelope is decoded here; ``params`` and ``result`` stay raw bytes
until the session knows the method and can decode them with its generated type.
"""

from __future__ import annotations

import re
from typing import Any, Final

import msgspec
from msgspec import UNSET, UnsetType

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603
# Errors of MCP 2026-07-28 (the -32020 to -32099 range is the specification's).
HEADER_MISMATCH: Final = -32020
MISSING_REQUIRED_CLIENT_CAPABILITY: Final = -32021
UNSUPPORTED_PROTOCOL_VERSION: Final = -32022
# MCP: the request was cancelled or timed out (used for locally failed calls).
REQUEST_TIMEOUT: Final = -32001
CONNECTION_CLOSED: Final = -32000
# This runtime's: the caller's access token lacks scopes (data: {"error":
# "insufficient_scope", "scope": "..."}, the parameters of the HTTP 403
# challenge), where no HTTP status can say so (stdio, a stream under way).
INSUFFICIENT_SCOPE: Final = -32003

RequestId = str | int


class ErrorObject(msgspec.Struct, omit_defaults=True):
    code: int
    message: str
    data: Any = None


class Envelope(msgspec.Struct, omit_defaults=True):
    """Any JSON-RPC message, with params and result left undecoded.

    ``jsonrpc`` is whatever the member holds, so that the HTTP transport,
    which decodes a POST into envelopes to route it, can say what is wrong
    with a message whose version is not "2.0" (see :func:`well_formed`)."""

    jsonrpc: Any = UNSET
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
_members_decoder = msgspec.json.Decoder(list[msgspec.Raw])
_encoder = msgspec.json.Encoder()
encode = _encoder.encode


def well_formed(envelope: Envelope) -> bool:
    """Whether the envelope has the shape of a JSON-RPC message: its
    ``jsonrpc`` member, if any, a string (which :class:`Envelope` leaves unchecked)."""
    version = envelope.jsonrpc
    return version is UNSET or type(version) is str


def decode_envelope(data: bytes) -> Envelope:
    """Raises msgspec.DecodeError for bad JSON, msgspec.ValidationError for a bad shape."""
    return _decoder.decode(data)


def decode_batch(data: bytes) -> list[Envelope]:
    return _batch_decoder.decode(data)


def batch_members(data: bytes) -> list[Envelope] | tuple[int, str]:
    """The members of the batch ``data``, or the error (code and message)
    that refuses the whole batch: not JSON, not an array, empty. JSON-RPC 2.0
    answers a batch member by member: a member that is no message (not an
    object, or one whose members have the wrong types) is an envelope that
    :func:`well_formed` refuses, so it gets its own Invalid Request error,
    as a single message would, and the others are served (``[{...}, 5]`` is
    a request and an error)."""
    try:
        members = _members_decoder.decode(data)
    except msgspec.ValidationError:
        return INVALID_REQUEST, "Invalid request: not a JSON-RPC message"
    except UNDECODABLE as error:
        return PARSE_ERROR, parse_error_message(error)
    if not members:
        return INVALID_REQUEST, "Invalid request: empty batch"
    return [_member(member) for member in members]


def _member(member: msgspec.Raw) -> Envelope:
    try:
        return _decoder.decode(member)
    except (msgspec.ValidationError, *UNDECODABLE):
        return Envelope(jsonrpc=None)  # not a string: no message


UNDECODABLE: Final = (msgspec.DecodeError, UnicodeDecodeError, RecursionError)
"""What decoding bytes from a peer raises besides ValidationError: invalid
JSON, invalid UTF-8 inside a string, nesting deeper than the decoder goes."""

_raw_decoder = msgspec.json.Decoder(msgspec.Raw)
_any_decoder = msgspec.json.Decoder()
_str_decoder = msgspec.json.Decoder(str)


def parse_error_message(error: BaseException) -> str:
    """The message of the -32700 error for one of :data:`UNDECODABLE`."""
    if isinstance(error, RecursionError):
        return "Parse error: JSON nested too deeply"
    if isinstance(error, UnicodeDecodeError):
        return "Parse error: invalid UTF-8"
    return "Parse error: invalid JSON"


def parse_error(data: bytes) -> str | None:
    """Why ``data`` is not one JSON value, or None if it is. Syntax only (not
    the UTF-8 inside strings): a message whose first bytes already fail its
    shape may still be invalid JSON further on, which this tells."""
    try:
        _raw_decoder.decode(data)
    except UNDECODABLE as error:
        return parse_error_message(error)
    return None


# One JSON token: a string, a bracket, a separator, or a bare literal.
_TOKEN = re.compile(
    rb'\s*(?:(?P<str>"[^"\\]*(?:\\.[^"\\]*)*")|(?P<open>[{\[])|(?P<close>[}\]])|(?P<sep>[:,])|(?P<lit>[^\s{}\[\]:,"]+))'
)

OPAQUE: Final[Any] = ...
"""What :func:`top_level_members` gives for a member holding an object, an
array, or a scalar that does not decode."""


def top_level_members(data: bytes, limit: int = 64 * 1024) -> dict[str, Any]:
    """The members of the JSON object that ``data`` starts with, read from its
    first ``limit`` bytes by a scan that neither recurses nor decodes the
    rest: enough to find the ``id`` and ``method`` of a message that cannot be
    decoded (too large, nested too deeply, invalid further on). Scalars are
    decoded, other values are :data:`OPAQUE`; members after ``limit`` bytes
    are not seen. Empty if ``data`` is not an object."""
    members: dict[str, Any] = {}
    depth = 0
    key: str | None = None
    want_value = False
    for match in _TOKEN.finditer(data, 0, min(len(data), limit)):
        kind, token = match.lastgroup, match.group(match.lastindex or 0)
        if depth == 0:
            if token != b"{":
                return members
            depth = 1
        elif kind == "open":
            if depth == 1 and want_value and key is not None:
                members[key] = OPAQUE
            depth += 1
            want_value = False
        elif kind == "close":
            depth -= 1
            if depth == 0:
                break
        elif depth > 1:
            continue
        elif kind == "sep":
            want_value = token == b":" and key is not None
            if token == b",":
                key = None
        elif want_value and key is not None:
            try:
                members[key] = _any_decoder.decode(token)
            except (msgspec.MsgspecError, *UNDECODABLE):
                members[key] = OPAQUE
            want_value = False
        elif kind == "str":
            try:
                key = _str_decoder.decode(token)
            except (msgspec.MsgspecError, *UNDECODABLE):
                key = None
    return members


def request_id_of(members: dict[str, Any]) -> RequestId | None:
    """The ``id`` among :func:`top_level_members`, if it is a valid request id."""
    value = members.get("id")
    return value if isinstance(value, (str, int)) and not isinstance(value, bool) else None


def unreadable_sender(data: bytes) -> tuple[RequestId | None, bool]:
    """Whom to tell that the message ``data`` could not be read, going by its
    first bytes: the id it shows, and whether it is a response (then the id is
    of a call of ours, to fail; an error sent under it would reach the peer's
    own call of that id). A message that names no method and is no response
    gets (None, False): the error goes under a null id."""
    members = top_level_members(data)
    request_id = request_id_of(members)
    if (
        "method" not in members
        and request_id is not None
        and ("result" in members or "error" in members)
    ):
        return request_id, True
    return (request_id if "method" in members else None), False


# Method names encoded, by name: a session sends the same few again and again.
_method_names: dict[str, bytes] = {}
_MAX_METHOD_NAMES: Final = 256


def _method_name(method: str) -> bytes:
    encoded = _method_names.get(method)
    if encoded is None:
        encoded = _encoder.encode(method)
        if len(_method_names) < _MAX_METHOD_NAMES:
            _method_names[method] = encoded
    return encoded


def request_bytes(request_id: RequestId, method: str, params: bytes | None) -> bytes:
    head = (
        b'{"jsonrpc":"2.0","id":'
        + _encoder.encode(request_id)
        + b',"method":'
        + (_method_names.get(method) or _method_name(method))
    )
    if params is None:
        return head + b"}"
    return head + b',"params":' + params + b"}"


def notification_bytes(method: str, params: bytes | None) -> bytes:
    head = b'{"jsonrpc":"2.0","method":' + (_method_names.get(method) or _method_name(method))
    if params is None:
        return head + b"}"
    return head + b',"params":' + params + b"}"


def result_bytes(request_id: RequestId, result: bytes) -> bytes:
    return b'{"jsonrpc":"2.0","id":' + _encoder.encode(request_id) + b',"result":' + result + b"}"


def error_bytes(request_id: RequestId | None, code: int, message: str, data: Any = None) -> bytes:
    return _encoder.encode(
        {"jsonrpc": "2.0", "id": request_id, "error": ErrorObject(code, message, data)}
    )
