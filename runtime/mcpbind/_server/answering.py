"""How a session answers one incoming request, apart from the session itself.

Decoding the params with the method's type, calling the handler, turning what
it returned or raised into the response bytes, and the progress state of a
request that carries a progress token: what the dispatcher of
:class:`~mcpbind._core.session.Session` does with each request, whether it
answers in a task of its own or in its caller's.
"""

from __future__ import annotations

import logging
import types
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

from .._core import jsonrpc
from .._core.jsonrpc import ErrorObject, McpError, RequestId
from .._core.wire import RESPONSE, Message
from ..auth._principal import InsufficientScope
from ..codec import decoder, encode, join_paths
from ..methods import HandlerNotImplemented, MethodSpec

logger = logging.getLogger(__name__)

LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")

EMPTY_OBJECT = b"{}"


def level_passes(level: str, threshold: str) -> bool:
    """Whether a log message of ``level`` goes to a peer that asked for ``threshold`` and above."""
    try:
        return LOG_LEVELS.index(level) >= LOG_LEVELS.index(threshold)
    except ValueError:
        return True


class RequestEnvelope:
    """What a 2026-07-28 request says of its sender in ``_meta``: the protocol
    version, the client's capabilities and identity, and the log level it wants."""

    __slots__ = ("protocol_version", "client_capabilities", "client_info", "log_level")

    def __init__(
        self,
        protocol_version: str,
        client_capabilities: Any,
        client_info: Any,
        log_level: str | None,
    ) -> None:
        self.protocol_version = protocol_version
        self.client_capabilities = client_capabilities
        self.client_info = client_info
        self.log_level = log_level


class ProgressState:
    """The progress of one incoming request that carries a token: what was
    last reported, and whether the request is still in progress (its handler
    has not returned). Shared by every context of the request."""

    __slots__ = ("token", "last", "open", "held")

    def __init__(self, token: str | int) -> None:
        self.token = token
        self.last: float | None = None
        self.open = True
        # Held by a task the request created: open after the response, until the task ends.
        self.held = False


class _ProgressMeta(msgspec.Struct):
    progressToken: str | int | UnsetType = UNSET


class _ParamsMeta(msgspec.Struct):
    meta: _ProgressMeta | UnsetType = msgspec.field(name="_meta", default=UNSET)


_meta_decoder = msgspec.json.Decoder(_ParamsMeta)


def ping_response(request_id: RequestId, params: msgspec.Raw | UnsetType) -> bytes:
    """The answer to a ping: an empty result, or what is wrong with its params."""
    try:
        if params is not UNSET:
            _meta_decoder.decode(params)  # ping's params are RequestParams: only _meta is typed
    except msgspec.ValidationError as error:
        return jsonrpc.error_bytes(
            request_id, jsonrpc.INVALID_PARAMS, f"Invalid params for ping: {join_paths(str(error))}"
        )
    except jsonrpc.UNDECODABLE as error:
        return jsonrpc.error_bytes(
            request_id, jsonrpc.PARSE_ERROR, jsonrpc.parse_error_message(error)
        )
    return jsonrpc.result_bytes(request_id, EMPTY_OBJECT)


def decode_params(spec: MethodSpec[Any, Any], params: msgspec.Raw | UnsetType) -> Any:
    if spec.params is None:
        return None
    raw = EMPTY_OBJECT if params is UNSET else params
    if params is UNSET and spec.params_required:
        raise McpError(
            jsonrpc.INVALID_PARAMS, f"Invalid params for {spec.method}: params are required"
        )
    try:
        return decoder(spec.params).decode(raw)
    except msgspec.ValidationError as error:
        raise McpError(
            jsonrpc.INVALID_PARAMS, f"Invalid params for {spec.method}: {join_paths(str(error))}"
        ) from None
    except jsonrpc.UNDECODABLE as error:
        # Params msgspec.Raw skipped are JSON, but maybe not UTF-8, or too deep to decode.
        raise McpError(jsonrpc.PARSE_ERROR, jsonrpc.parse_error_message(error)) from None


def token_of(params: msgspec.Raw | UnsetType, data: bytes) -> str | int | None:
    """The progress token of a request's params (``data``: the whole message)."""
    # Only requests that carry a token pay for the second, partial decode.
    return _progress_token(params) if b'"progressToken"' in data else None


def _progress_token(params: msgspec.Raw | UnsetType) -> str | int | None:
    if params is UNSET:
        return None
    try:
        meta = _meta_decoder.decode(params).meta
    except (msgspec.ValidationError, *jsonrpc.UNDECODABLE):
        return None
    if meta is UNSET or meta.progressToken is UNSET:
        return None
    return meta.progressToken


def call_handler(
    request_id: RequestId,
    spec: MethodSpec[Any, Any],
    handler: Callable[[Any, Any], Any],
    params: Any,
    context: Any,
    progress: ProgressState | None,
) -> Message | Awaitable[Any]:
    """What the handler returned, to await; or the response when it is
    known already: the error the handler raised, or a plain function's result.
    ``progress``: the request's progress state, closed once it is answered."""
    try:
        outcome = handler(params, context)
    except Exception as error:
        if progress is not None:
            progress.open = False
        return error_message(request_id, spec, error)
    if type(outcome) is not types.CoroutineType and not isinstance(outcome, Awaitable):
        # A plain function (the lifecycle's initialize) is answered in
        # order, before the next message is read.
        if progress is not None:
            progress.open = False
        return result_message(request_id, spec, outcome)
    if progress is not None:
        # Only requests that asked for progress pay for the frame that ends it.
        return _ending_progress(outcome, progress)
    return outcome


async def _ending_progress(outcome: Awaitable[Any], progress: ProgressState) -> Any:
    """Await the handler; once it has returned (or failed), what it or the
    tasks it started report is no longer progress of this request."""
    try:
        return await outcome
    finally:
        if not progress.held:
            progress.open = False


def result_message(request_id: RequestId, spec: MethodSpec[Any, Any], result: Any) -> Message:
    """The response carrying ``result``: a Message the transport knows for a result."""
    try:
        data = jsonrpc.result_bytes(request_id, encode(result))
    except Exception as error:  # a result the codec cannot encode
        return error_message(request_id, spec, error)
    return Message(data=data, kind=RESPONSE, id=request_id, related=request_id)


def error_message(request_id: RequestId, spec: MethodSpec[Any, Any], error: Exception) -> Message:
    """The error response for a handler that raised; no traceback goes on the
    wire. The Message carries the error object, for the transport to choose
    its HTTP status by (see :attr:`mcpbind._core.wire.Message.error`)."""
    problem = error_object(spec, error)
    return Message(
        data=jsonrpc.error_bytes(request_id, problem.code, problem.message, problem.data),
        kind=RESPONSE,
        id=request_id,
        related=request_id,
        error=problem,
    )


def error_object(spec: MethodSpec[Any, Any], error: Exception) -> ErrorObject:
    """What the error response for a handler that raised ``error`` says."""
    if isinstance(error, McpError):
        return ErrorObject(error.code, error.message, error.data)
    if isinstance(error, HandlerNotImplemented):
        return ErrorObject(jsonrpc.METHOD_NOT_FOUND, f"Method not found: {spec.method}")
    if isinstance(error, InsufficientScope):
        data = {"error": "insufficient_scope", "scope": " ".join(error.required)}
        return ErrorObject(
            jsonrpc.INSUFFICIENT_SCOPE,
            f"Insufficient scope: {spec.method} needs {data['scope']}",
            data,
        )
    logger.error("handler for %s failed", spec.method, exc_info=error)
    return ErrorObject(jsonrpc.INTERNAL_ERROR, "Internal error")
