"""The JSON-RPC session loop, the same for clients and servers.

A :class:`Session` reads messages from a :class:`Transport`, answers requests
through a :class:`Router`, matches responses to the calls waiting for them, and
owns the protocol plumbing every revision shares: ping, cancellation (both
ways), progress routing and per-request timeouts.

Each message is decoded once into a JSON-RPC envelope whose ``params`` and
``result`` stay raw; they are decoded exactly once more, with the generated
type the method table names for that method.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import itertools
import logging
import math
import types
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Mapping
from typing import Any, Protocol, TypeVar, cast

import msgspec
from msgspec import UNSET, UnsetType

from . import jsonrpc, lifecycle, wire
from .auth.principal import InsufficientScope
from .codec import JsonDecoder, decode_lenient, decoder, encode, join_paths
from .jsonrpc import ConnectionClosed, Envelope, ErrorObject, McpError, RequestId
from .logsafe import quoted
from .methods import HandlerNotImplemented, MethodSpec, ProgressCallback
from .stepping import Pending, step
from .wire import REQUEST, RESPONSE, Message

P = TypeVar("P")
R = TypeVar("R")

logger = logging.getLogger("mcp_runtime.session")

# The incoming request whose handler is running: what it sends is related to it.
_current_request: contextvars.ContextVar[RequestId | None] = contextvars.ContextVar(
    "mcp_request", default=None
)

# A handler returns an awaitable (run as its own task) or, for the few that
# must be answered before the next message is read, the result itself.
Handler = Callable[[Any, "RequestContext"], Any]
Route = tuple[MethodSpec[Any, Any], Handler]


class Transport(Protocol):
    """A bidirectional stream of JSON-RPC messages, one :class:`~mcp_runtime.wire.Message` each."""

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


class Router(Protocol):
    """Where a session sends what it does not handle itself."""

    @property
    def modern(self) -> bool:
        """Whether requests are self-describing (2026-07-28 on): no ping, no session state."""

    def route_request(self, method: str, params: msgspec.Raw | UnsetType) -> Route:
        """The spec and handler of an incoming request; raises McpError to refuse it."""

    def route_notification(self, method: str) -> Route | None:
        """The spec and handler of an incoming notification, or None to drop it."""

    def log_level_allows(self, level: str) -> bool:
        """Whether a log message of this level may be sent to the peer."""

    def check_outgoing(self, spec: MethodSpec[Any, Any], params: Any) -> None:
        """Raise McpError if the negotiated revision or the declared capabilities
        (the peer's, and for what announces a capability, the sender's own)
        rule out sending this message with these params."""


# -------------------------------------------------------------- runtime-owned messages


class _ProgressMeta(msgspec.Struct):
    progressToken: str | int | UnsetType = UNSET


class _ParamsMeta(msgspec.Struct):
    meta: _ProgressMeta | UnsetType = msgspec.field(name="_meta", default=UNSET)


class _Cancelled(msgspec.Struct):
    requestId: RequestId | UnsetType = UNSET
    reason: str | UnsetType = UNSET


class _Progress(msgspec.Struct):
    progressToken: str | int
    progress: float
    total: float | None | UnsetType = UNSET
    message: str | None | UnsetType = UNSET


_meta_decoder = msgspec.json.Decoder(_ParamsMeta)
_cancelled_decoder = msgspec.json.Decoder(_Cancelled)
_progress_decoder = msgspec.json.Decoder(_Progress)
_any_decoder = msgspec.json.Decoder()
_EMPTY_OBJECT = b"{}"

# Calls without a timeout skip asyncio.timeout(None): a context manager, a
# cancellation check and an exception handler per call, for nothing.
_NO_TIMEOUT = contextlib.nullcontext()

# A response laid out the way this runtime and the official Python SDK write
# them: {"jsonrpc":"2.0","id":<int>,"result":<value>}, compact.
_RESULT_HEAD = b'{"jsonrpc":"2.0","id":'
_RESULT_KEY = b',"result":'
_JSON_SPACE = b" \t\r\n"
# Below this size the envelope pass costs less than finding the result bytes.
_TYPED_MIN_SIZE = 4096


def _result_bytes(data: bytes) -> tuple[int, memoryview] | None:
    """The id and the bytes between the head and the closing brace of a
    response in the layout of _RESULT_HEAD, or None for any other message."""
    if not data.startswith(_RESULT_HEAD):
        return None
    start = len(_RESULT_HEAD)
    key = data.find(_RESULT_KEY, start, start + 30)
    if key < 0:
        return None
    digits = data[start:key]
    if not digits.isdigit() or (digits[0] == 0x30 and len(digits) > 1):  # no leading zeros
        return None
    end = len(data) - 1
    while end > key and data[end] in _JSON_SPACE:
        end -= 1
    if data[end] != 0x7D:  # "}"
        return None
    return int(digits), memoryview(data)[key + len(_RESULT_KEY) : end]


class _Decoded:
    """A result the reader already decoded into the type its call expects."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


MAX_PROGRESS_BACKLOG = 256
"""Async progress callbacks of one call waiting to run; progress notifications
that arrive faster than that are dropped."""

LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


class _ProgressState:
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


class RequestContext:
    """Handed to every handler: the request's id, progress, logging and the peer."""

    __slots__ = ("_session", "_summon", "_request_id", "_progress", "_envelope", "_principal")

    def __init__(
        self,
        session: Session,
        request_id: RequestId | None,
        progress_token: str | int | None,
        envelope: RequestEnvelope | None = None,
    ) -> None:
        self._session: Session | None = session
        self._summon: Callable[[], Session] | None = None
        self._request_id = request_id
        self._progress = _ProgressState(progress_token) if progress_token is not None else None
        self._envelope = envelope
        # Taken now, while the message is being dispatched: a transport that
        # authenticates (HTTP) names the principal of the message it last read.
        self._principal = getattr(session.transport, "principal", None)

    @classmethod
    def on_demand(
        cls,
        summon: Callable[[], Session],
        request_id: RequestId,
        progress_token: str | int | None,
        principal: Any,
    ) -> RequestContext:
        """The context of a request served with no session yet: ``summon()``
        makes it (once; later calls return the same) when the handler first
        needs it. ``principal``: who the request was authenticated as."""
        progress = _ProgressState(progress_token) if progress_token is not None else None
        return cls._of(None, summon, request_id, progress, None, principal)

    @classmethod
    def _of(
        cls,
        session: Session | None,
        summon: Callable[[], Session] | None,
        request_id: RequestId | None,
        progress: _ProgressState | None,
        envelope: RequestEnvelope | None,
        principal: Any,
    ) -> RequestContext:
        context = cls.__new__(cls)
        context._session, context._summon = session, summon
        context._request_id, context._progress = request_id, progress
        context._envelope, context._principal = envelope, principal
        return context

    @property
    def request_id(self) -> RequestId | None:
        return self._request_id

    @property
    def peer(self) -> Session:
        session = self._session
        if session is None:
            assert self._summon is not None
            session = self._session = self._summon()
        return session

    @property
    def protocol_version(self) -> str:
        return (
            self._envelope.protocol_version
            if self._envelope is not None
            else self.peer.protocol_version
        )

    @property
    def modern(self) -> bool:
        return self._envelope is not None

    @property
    def client_capabilities(self) -> Any:
        if self._envelope is not None:
            return self._envelope.client_capabilities
        return getattr(self.peer, "client_capabilities", None)

    @property
    def client_info(self) -> Any:
        if self._envelope is not None:
            return self._envelope.client_info
        return getattr(self.peer, "client_info", None)

    @property
    def principal(self) -> Any:
        return self._principal

    def described(self, envelope: RequestEnvelope) -> RequestContext:
        """This context for a request that describes its sender (2026-07-28 on)."""
        return RequestContext._of(
            self._session,
            self._summon,
            self._request_id,
            self._progress,
            envelope,
            self._principal,
        )

    def hold_progress(self) -> None:
        """This request's progress goes on after its response, until ``end_progress``:
        a task-augmented request whose task now runs. (2025-11-25: "the
        ``progressToken`` provided in the original request MUST continue to be used
        for progress notifications throughout the task's lifetime, even after the
        ``CreateTaskResult`` has been returned.")"""
        if self._progress is not None:
            self._progress.held = True

    def end_progress(self) -> None:
        """No more progress for this request: its task reached a terminal status
        ("Progress notifications for tasks MUST stop after the task reaches a
        terminal status")."""
        if self._progress is not None:
            self._progress.open = False

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        state = self._progress
        if state is None:
            return
        # Progress belongs to a request in progress, and only goes up.
        if not state.open:
            logger.debug("dropping progress %s: its request has been answered", progress)
            return
        if state.last is not None and not progress > state.last:
            logger.debug(
                "dropping progress %s: not above the %s reported before", progress, state.last
            )
            return
        state.last = progress
        params: dict[str, Any] = {"progressToken": state.token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await self.peer.send_raw_notification("notifications/progress", encode(params))

    def close_sse_stream(self) -> None:
        """Close the HTTP stream carrying this request (the client resumes it
        with Last-Event-ID); nothing on transports without such streams."""
        if self._request_id is not None:
            self.peer.transport.close_request_stream(self._request_id)

    async def log(self, level: str, data: Any, logger: str | None = None) -> None:
        envelope = self._envelope
        if envelope is not None:
            # 2026-07-28: a request that names no log level gets no log messages.
            if envelope.log_level is None or not level_passes(level, envelope.log_level):
                return
        elif not self.peer.router.log_level_allows(level):
            return
        params: dict[str, Any] = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        await self.peer.send_raw_notification("notifications/message", encode(params))


def level_passes(level: str, threshold: str) -> bool:
    """Whether a log message of ``level`` goes to a peer that asked for ``threshold`` and above."""
    try:
        return LOG_LEVELS.index(level) >= LOG_LEVELS.index(threshold)
    except ValueError:
        return True


class Session:
    """One JSON-RPC connection. Implements the generated stubs' ``Caller``."""

    def __init__(
        self,
        transport: Transport,
        router: Router,
        *,
        protocol_version: str,
        default_timeout: float | None = None,
    ) -> None:
        self.transport = transport
        self.router = router
        self.protocol_version = protocol_version
        self.default_timeout = default_timeout
        self._ids = itertools.count(1)
        self._pending: dict[RequestId, asyncio.Future[msgspec.Raw | ErrorObject | _Decoded]] = {}
        # The result decoder of each call made through request() (see _dispatch_typed_response).
        self._typed: dict[RequestId, JsonDecoder] = {}
        self._progress: dict[str | int, ProgressCallback] = {}
        # Tokens followed beyond their request's answer (a task's): see follow_progress.
        self._followed: dict[str | int, ProgressCallback] = {}
        self._progress_tasks: dict[str | int, asyncio.Task[None]] = {}
        self._progress_waiting: dict[str | int, int] = (
            {}
        )  # async progress callbacks not yet finished, by token
        self._in_flight: dict[RequestId, asyncio.Task[None]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed: str | None = None  # why, once closed (the error is made where it is raised)
        self._closed_event: asyncio.Event | None = (
            None  # made when asked for: most sessions never are
        )
        self._reader: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None  # the loop its handlers run on

    # ------------------------------------------------------------ lifetime

    def start(self) -> None:
        """Start reading in the background."""
        if self._reader is None:
            self._reader = asyncio.get_running_loop().create_task(self.run())

    async def run(self) -> None:
        """Read and dispatch until the transport ends, then fail what is pending."""
        try:
            while True:
                message = await self.transport.read()
                if message is None:
                    break
                self.feed(message)
        finally:
            reason = getattr(self.transport, "closed_reason", None)
            detail = reason() if reason is not None else None
            self.shut_down(
                f"Connection closed: {detail}" if detail else "Connection closed by peer"
            )

    def feed(self, message: Message) -> None:
        """Dispatch one incoming message: what ``run`` does with each message
        it reads, for a transport that hands messages over by other means (one
        per HTTP request: no reader task to start and switch to). A message
        whose envelope the transport decoded (to route it) is not decoded again."""
        try:
            envelope = message.envelope
            if envelope is None:
                self._dispatch(message.data)
            else:
                self._dispatch_envelope(envelope, message.data)
        except Exception:  # a bug here must not take the session down
            logger.exception("failed to dispatch a message")

    def serve(
        self,
        message: Message,
        task: asyncio.Task[Any],
        started: tuple[MethodSpec[Any, Any], Awaitable[Any]] | None = None,
    ) -> Coroutine[Any, Any, None] | None:
        """Dispatch the incoming request ``message`` for the calling task
        (``task``) to answer, rather than a task of its own: for a transport
        of one request, whose task has nothing else to do. Returns the
        coroutine that runs the handler and writes the response, to await
        now, or None when the response is written already (an error, a
        plain-function handler) or the message is no request (then it is
        dispatched as ``feed`` does). Until it is answered, the calling task
        is the request in flight: closing the session cancels it.

        ``started``: the request's method and its handler's outcome, when the
        handler was begun without the session (see :func:`first_step`).
        ``task`` is passed in because looking it up again is a system call
        on CPython 3.11."""
        envelope = message.envelope
        if envelope is None or envelope.jsonrpc != "2.0" or type(envelope.method) is not str:
            self.feed(message)
            return None
        request_id = envelope.id
        if request_id is None or request_id is UNSET:
            self.feed(message)
            return None
        if started is None:
            try:
                started = self._start_handler(
                    request_id, envelope.method, envelope.params, message.data
                )
            except Exception:  # as in feed()
                logger.exception("failed to dispatch a message")
                return None
            if started is None:
                return None
        self._in_flight[request_id] = task
        return self._answer(request_id, *started)

    async def close(self) -> None:
        """Close the transport; every pending call fails with ConnectionClosed."""
        self.shut_down("Session closed")
        await self.transport.close()
        if self._reader is not None and self._reader is not asyncio.current_task():
            try:
                await self._reader
            except Exception:  # the reader's own failure was already reported
                pass

    def shut_down(self, reason: str) -> None:
        """Fail what is pending and cancel the handlers in flight, now (close()
        also closes the transport)."""
        if self._closed is not None:
            return
        self._closed = reason
        if self._pending:
            error = ConnectionClosed(reason)
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(error)
            self._pending.clear()
        for task in list(self._in_flight.values()):
            task.cancel()
        if self._closed_event is not None:
            self._closed_event.set()

    @property
    def closed(self) -> asyncio.Event:
        """Set once the session has closed."""
        if self._closed_event is None:
            self._closed_event = asyncio.Event()
            if self._closed is not None:
                self._closed_event.set()
        return self._closed_event

    @property
    def is_closed(self) -> bool:
        return self._closed is not None

    # ------------------------------------------------------------ sending

    async def request(
        self,
        spec: MethodSpec[P, R],
        params: P | None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        request_id: RequestId | None = None,
    ) -> R:
        """Send a request and wait for its result, decoded with the spec's type.

        ``timeout`` None means the session's default; ``math.inf`` waits
        without limit whatever the default. ``request_id`` is for callers that
        must know the id before the answer (a subscription is named after its
        request); take it from next_id()."""
        self.router.check_outgoing(spec, params)
        value: Any = params
        if on_progress is None:
            raw_params = encode(params) if params is not None else None
        else:
            if request_id is None:
                request_id = next(self._ids)
            value, raw_params = _with_token(params, request_id)
        result_decoder = decoder(spec.result)
        raw = await self._call(
            spec.method, raw_params, value, timeout, on_progress, result_decoder, request_id
        )
        if isinstance(raw, _Decoded):
            return cast(R, raw.value)
        try:
            result: R = result_decoder.decode(raw)
        except msgspec.ValidationError as error:
            try:  # a peer ahead of our revision may send union arms it does not have
                result = decode_lenient(raw, spec.result)
            except msgspec.ValidationError:
                raise McpError(
                    jsonrpc.INTERNAL_ERROR,
                    f"invalid result for {spec.method}: {join_paths(str(error))}",
                ) from None
        except jsonrpc.UNDECODABLE as error:
            raise McpError(
                jsonrpc.PARSE_ERROR,
                f"invalid result for {spec.method}: {jsonrpc.parse_error_message(error)}",
            ) from None
        return result

    async def request_raw(
        self,
        method: str,
        params: bytes | None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> msgspec.Raw:
        """Send a request with already-encoded params; the raw result bytes."""
        request_id = None
        if on_progress is not None:
            request_id = next(self._ids)
            params = _with_progress_token(params, request_id)
        raw = await self._call(method, params, params, timeout, on_progress, None, request_id)
        assert not isinstance(raw, _Decoded)  # only calls with a result decoder get one
        return raw

    async def _call(
        self,
        method: str,
        params: bytes | None,
        value: Any,
        timeout: float | None,
        on_progress: ProgressCallback | None,
        result_decoder: JsonDecoder | None,
        request_id: RequestId | None,
    ) -> msgspec.Raw | _Decoded:
        """``params`` encoded, and ``value``, what they were encoded from (for
        the transport); they carry the progress token when ``on_progress`` is given."""
        if self._closed is not None:
            raise ConnectionClosed(self._closed)
        if request_id is None:
            request_id = next(self._ids)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[msgspec.Raw | ErrorObject | _Decoded] = loop.create_future()
        self._pending[request_id] = future
        if result_decoder is not None:
            self._typed[request_id] = result_decoder
        callbacks: asyncio.Task[None] | None = None
        if on_progress is not None:
            self._progress[request_id] = on_progress
        timeout = (
            self.default_timeout if timeout is None else None if timeout == math.inf else timeout
        )
        try:
            # The timeout covers the wait to send (a peer that stops reading
            # blocks drain()) as well as the wait for the response.
            async with asyncio.timeout(timeout) if timeout is not None else _NO_TIMEOUT:
                self.transport.write(
                    Message(  # not wire.request(): a call less on the hot path
                        data=jsonrpc.request_bytes(request_id, method, params),
                        kind=REQUEST,
                        id=request_id,
                        method=method,
                        related=_current_request.get(),
                        params=value,
                    )
                )
                await self.transport.drain()
                outcome = await future
        except TimeoutError:
            if method != "initialize":  # which the spec forbids cancelling
                self._send_cancelled(request_id, "Request timed out")
            raise McpError(
                jsonrpc.REQUEST_TIMEOUT, f"{method} timed out after {timeout} s"
            ) from None
        except asyncio.CancelledError:
            if self._closed is None and method != "initialize":
                self._send_cancelled(request_id, "Request cancelled")
            raise
        finally:
            self._pending.pop(request_id, None)
            self._typed.pop(request_id, None)
            if on_progress is not None:
                self._progress.pop(request_id, None)
                callbacks = self._progress_tasks.pop(request_id, None)
        if on_progress is not None and callbacks is not None:
            await asyncio.shield(callbacks)  # progress reported before the result is seen first
        if isinstance(outcome, ErrorObject):
            raise McpError(outcome.code, outcome.message, outcome.data)
        return outcome

    def next_id(self) -> int:
        """A fresh id for an outgoing request."""
        return next(self._ids)

    @contextlib.contextmanager
    def follow_progress(self, token: str | int, on_progress: ProgressCallback) -> Iterator[None]:
        """Progress notifications with ``token`` go to ``on_progress`` while this
        lasts, after the answer of the request that sent the token too: the token of
        a task-augmented request stays valid until its task ends (2025-11-25 tasks:
        "The ``progressToken`` provided in the initial request remains valid
        throughout the task lifetime."). Send that request with
        ``request_id=token`` and ``on_progress`` inside the block."""
        self._followed[token] = on_progress
        try:
            yield
        finally:
            if self._followed.get(token) is on_progress:
                del self._followed[token]
                self._progress_tasks.pop(token, None)  # its callbacks still run (self._tasks)

    async def notify(self, spec: MethodSpec[P, None], params: P | None) -> None:
        self.router.check_outgoing(spec, params)
        await self._notify(spec.method, encode(params) if params is not None else None, params)

    async def send_raw_notification(self, method: str, params: bytes | None) -> None:
        await self._notify(method, params, params)

    async def _notify(self, method: str, params: bytes | None, value: Any) -> None:
        if self._closed is not None:
            raise ConnectionClosed(self._closed)
        self.transport.write(
            wire.notification(
                jsonrpc.notification_bytes(method, params), method, _current_request.get(), value
            )
        )
        await self.transport.drain()

    def _send_cancelled(self, request_id: RequestId, reason: str) -> None:
        if self._closed is None:
            value = {"requestId": request_id, "reason": reason}
            method = "notifications/cancelled"
            self.transport.write(
                wire.notification(
                    jsonrpc.notification_bytes(method, encode(value)),
                    method,
                    _current_request.get(),
                    value,
                )
            )

    def _send_error(
        self, request_id: RequestId | None, code: int, message: str, data: Any = None
    ) -> None:
        if self._closed is None:
            self.transport.write(
                wire.response(jsonrpc.error_bytes(request_id, code, message, data), request_id)
            )

    # ------------------------------------------------------------ receiving

    def _dispatch(self, data: bytes) -> None:
        if self._typed and len(data) >= _TYPED_MIN_SIZE and self._dispatch_typed_response(data):
            return
        try:
            envelope = jsonrpc.decode_envelope(data)
        except msgspec.ValidationError:
            # The shape may fail on the first bytes of what is not even JSON.
            problem = jsonrpc.parse_error(data)
            if problem is not None:
                self._refuse(data, jsonrpc.PARSE_ERROR, problem)
            elif data.lstrip()[:1] == b"[":
                self._dispatch_batch(data)
            else:
                self._send_error(
                    None, jsonrpc.INVALID_REQUEST, "Invalid request: not a JSON-RPC message"
                )
            return
        except jsonrpc.UNDECODABLE as error:
            self._refuse(data, jsonrpc.PARSE_ERROR, jsonrpc.parse_error_message(error))
            return
        self._dispatch_envelope(envelope, data)

    def _dispatch_typed_response(self, data: bytes) -> bool:
        """Decode a response to a call made through request() straight into
        its result type, skipping the envelope pass over the whole message
        (which costs about as much again for large results).

        Only for the layout of _RESULT_HEAD. The bytes between that head and
        the closing brace are decoded in place as the result: when that
        succeeds the message is well-formed JSON with exactly those three
        members, so the usual path would have delivered the same result.
        Anything else (another layout, an id no typed call waits for, bad
        JSON, a result of the wrong shape) returns False and goes the usual
        way, which decides as before."""
        found = _result_bytes(data)
        if found is None:
            return False
        request_id, result = found
        result_decoder = self._typed.get(request_id)
        future = self._pending.get(request_id)
        if result_decoder is None or future is None or future.done():
            return False
        try:
            value = result_decoder.decode(result)
        except Exception:  # whatever it is, the usual path reports it as it always did
            return False
        future.set_result(_Decoded(value))
        return True

    def _refuse(self, data: bytes, code: int, message: str) -> None:
        """Answer a message that is not JSON (or too deep or too large to
        decode). What names a method gets the error under the id its first
        bytes show (null if none), so the call waiting for it fails now; a
        response fails our call waiting for it (its id is ours: an error sent
        under it would reach the peer's own call of that id); the rest get
        the error under a null id."""
        members = jsonrpc.top_level_members(data)
        request_id = jsonrpc.request_id_of(members)
        if (
            "method" not in members
            and request_id is not None
            and ("result" in members or "error" in members)
        ):
            self._on_response(
                request_id, ErrorObject(code, f"{message} (in the response to this request)")
            )
            return
        self._send_error(request_id if "method" in members else None, code, message)

    def _dispatch_batch(self, data: bytes) -> None:
        if self.router.modern or not lifecycle.allows_batches(self.protocol_version):
            # Refused before decoding: one batch would otherwise start a handler per member.
            self._send_error(
                None,
                jsonrpc.INVALID_REQUEST,
                "Invalid request: this protocol revision has no JSON-RPC batches",
            )
            return
        try:
            batch = jsonrpc.decode_batch(data)
        except msgspec.ValidationError:
            self._send_error(
                None, jsonrpc.INVALID_REQUEST, "Invalid request: not a JSON-RPC message"
            )
            return
        except jsonrpc.UNDECODABLE as error:
            self._send_error(None, jsonrpc.PARSE_ERROR, jsonrpc.parse_error_message(error))
            return
        if not batch:
            self._send_error(None, jsonrpc.INVALID_REQUEST, "Invalid request: empty batch")
            return
        if not all(jsonrpc.well_formed(envelope) for envelope in batch):
            self._send_error(
                None, jsonrpc.INVALID_REQUEST, "Invalid request: not a JSON-RPC message"
            )
            return
        for envelope in batch:
            self._dispatch_envelope(envelope, data)

    def _dispatch_envelope(self, envelope: Envelope, data: bytes) -> None:
        request_id = envelope.id
        if envelope.jsonrpc != "2.0":
            if not jsonrpc.well_formed(envelope):
                self._send_error(
                    None, jsonrpc.INVALID_REQUEST, "Invalid request: not a JSON-RPC message"
                )
                return
            problem = '"jsonrpc" must be "2.0"'
            if (
                envelope.method is UNSET
                and request_id is not UNSET
                and request_id is not None
                and (envelope.result is not UNSET or envelope.error is not UNSET)
            ):  # a response: never answered, as in _refuse
                self._on_response(
                    request_id, ErrorObject(jsonrpc.INVALID_REQUEST, f"Invalid response: {problem}")
                )
                return
            reply_to = None if request_id is UNSET else request_id
            self._send_error(reply_to, jsonrpc.INVALID_REQUEST, f"Invalid request: {problem}")
            return
        if envelope.method is not UNSET:
            if request_id is UNSET:
                self._on_notification(envelope.method, envelope.params)
            elif request_id is None:
                self._send_error(
                    None, jsonrpc.INVALID_REQUEST, "Invalid request: id must not be null"
                )
            else:
                self._on_request(request_id, envelope.method, envelope.params, data)
        elif request_id is not UNSET and request_id is not None:
            if envelope.error is not UNSET:
                self._on_response(request_id, envelope.error)
            elif envelope.result is not UNSET:
                self._on_response(request_id, envelope.result)
            else:
                self._send_error(
                    request_id,
                    jsonrpc.INVALID_REQUEST,
                    "Invalid request: no method, result or error",
                )
        elif envelope.error is not UNSET:
            logger.warning("peer reported an error: %s", quoted(envelope.error.message))
        else:
            self._send_error(
                None, jsonrpc.INVALID_REQUEST, "Invalid request: no method, result or error"
            )

    def _on_response(self, request_id: RequestId, outcome: msgspec.Raw | ErrorObject) -> None:
        future = self._pending.get(request_id)
        if future is None or future.done():
            logger.debug("dropping a response to an unknown request")
            return
        future.set_result(outcome)

    def _on_request(
        self, request_id: RequestId, method: str, params: msgspec.Raw | UnsetType, data: bytes
    ) -> None:
        started = self._start_handler(request_id, method, params, data)
        if started is None:
            return
        spec, outcome = started
        loop = self._loop
        if loop is None:  # looked up once: on CPython 3.11 each lookup is a system call
            loop = self._loop = asyncio.get_running_loop()
        task = loop.create_task(self._answer(request_id, spec, outcome))
        if isinstance(outcome, Coroutine):
            # Cancelled before it first ran, the task never awaits the
            # handler's coroutine: close it (a no-op once it has finished).
            close = outcome.close
            task.add_done_callback(lambda _: close())
        self._in_flight[request_id] = task

    def _start_handler(
        self, request_id: RequestId, method: str, params: msgspec.Raw | UnsetType, data: bytes
    ) -> tuple[MethodSpec[Any, Any], Awaitable[Any]] | None:
        """The method and what its handler returned, to await for the result;
        None when the response (an error, the result of a plain-function
        handler) is written already."""
        if request_id in self._in_flight:
            self._send_error(
                request_id,
                jsonrpc.INVALID_REQUEST,
                f"Invalid request: id {request_id!r} is already in use",
            )
            return None
        if method == "ping" and not self.router.modern:
            try:
                if params is not UNSET:
                    _meta_decoder.decode(
                        params
                    )  # ping's params are RequestParams: only _meta is typed
            except msgspec.ValidationError as error:
                self._send_error(
                    request_id,
                    jsonrpc.INVALID_PARAMS,
                    f"Invalid params for ping: {join_paths(str(error))}",
                )
            except jsonrpc.UNDECODABLE as error:
                self._send_error(
                    request_id, jsonrpc.PARSE_ERROR, jsonrpc.parse_error_message(error)
                )
            else:
                self.transport.write(
                    wire.response(jsonrpc.result_bytes(request_id, _EMPTY_OBJECT), request_id)
                )
            return None
        try:
            spec, handler = self.router.route_request(method, params)
            decoded = _decode_params(spec, params)
        except McpError as error:
            self._send_error(request_id, error.code, error.message, error.data)
            return None
        outcome = _call_handler(
            request_id,
            spec,
            handler,
            decoded,
            RequestContext(self, request_id, _token_of(params, data)),
        )
        if isinstance(outcome, bytes):
            self.transport.write(wire.response(outcome, request_id))
            return None
        return spec, outcome

    async def _answer(
        self, request_id: RequestId, spec: MethodSpec[Any, Any], outcome: Awaitable[Any]
    ) -> None:
        _current_request.set(request_id)  # the answering task's own context
        try:
            result = await outcome
        except asyncio.CancelledError:
            return  # cancelled by the peer or by shutdown: no response is sent
        except Exception as error:
            message = _error_message(request_id, spec, error)
        else:
            message = _result_message(request_id, spec, result)
        finally:
            self._in_flight.pop(request_id, None)
        if self._closed is None:
            self.transport.write(
                Message(data=message, kind=RESPONSE, id=request_id, related=request_id)
            )
            await self.transport.drain()

    def _on_notification(self, method: str, params: msgspec.Raw | UnsetType) -> None:
        if method == "notifications/cancelled":
            self._on_cancelled(params)
            return
        if method == "notifications/progress":
            self._on_progress(params)
            return
        route = self.router.route_notification(method)
        if route is None:
            return
        spec, handler = route
        try:
            decoded = _decode_params(spec, params)
        except McpError as error:
            logger.warning("dropping %s: %s", quoted(method), quoted(error.message))
            return
        context = RequestContext(self, None, None)  # now, while its message is the one read
        task = asyncio.get_running_loop().create_task(
            self._notify_handler(spec, handler, decoded, context)
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _notify_handler(
        self, spec: MethodSpec[Any, Any], handler: Handler, params: Any, context: RequestContext
    ) -> None:
        try:
            await handler(params, context)
        except Exception:
            logger.exception("notification handler for %s failed", spec.method)

    def _on_cancelled(self, params: msgspec.Raw | UnsetType) -> None:
        if params is UNSET:
            return
        try:
            cancelled = _cancelled_decoder.decode(params)
        except (msgspec.ValidationError, *jsonrpc.UNDECODABLE):
            return
        if cancelled.requestId is UNSET:
            return
        task = self._in_flight.pop(cancelled.requestId, None)
        if task is not None:
            task.cancel()

    def _on_progress(self, params: msgspec.Raw | UnsetType) -> None:
        if params is UNSET:
            return
        try:
            progress = _progress_decoder.decode(params)
        except (msgspec.ValidationError, *jsonrpc.UNDECODABLE):
            return
        callback = self._progress.get(progress.progressToken) or self._followed.get(
            progress.progressToken
        )
        if callback is None:
            return
        total = progress.total if isinstance(progress.total, (int, float)) else None
        message = progress.message if isinstance(progress.message, str) else None
        token = progress.progressToken
        waiting = self._progress_waiting.get(token, 0)
        if waiting >= MAX_PROGRESS_BACKLOG:
            return  # a flood faster than the callback: dropped, not queued without end
        outcome = callback(progress.progress, total, message)
        if outcome is not None:
            # Callbacks of one request run in order, and the call returns only
            # after they have (request_raw awaits the last one).
            previous = self._progress_tasks.get(token)
            task = asyncio.get_running_loop().create_task(_await(outcome, previous))
            self._progress_tasks[token] = task
            self._progress_waiting[token] = waiting + 1
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            task.add_done_callback(lambda _: self._progress_done(token))

    def _progress_done(self, token: str | int) -> None:
        left = self._progress_waiting.get(token, 0) - 1
        if left > 0:
            self._progress_waiting[token] = left
        else:
            self._progress_waiting.pop(token, None)


def first_step(
    route: Route,
    request_id: RequestId,
    params: msgspec.Raw | UnsetType,
    data: bytes,
    summon: Callable[[], Session],
    principal: Any,
) -> bytes | Pending[Any] | None:
    """Serve the request ``data`` (``request_id``, ``params``) by ``route``
    with no session, until its handler first waits. Its context makes the
    session by ``summon()`` when the handler first needs one (a
    notification, ``ctx.peer``); ``principal``: who sent the request.

    Returns the response when the handler answered within that step; else
    where the handler stopped, to carry on (``Pending.rest()``, see
    Session.serve); None when the params do not decode: a session's
    own dispatch of the request says what is wrong with them."""
    spec, handler = route
    try:
        decoded = _decode_params(spec, params)
    except McpError:
        return None
    context = RequestContext.on_demand(summon, request_id, _token_of(params, data), principal)
    outcome = _call_handler(request_id, spec, handler, decoded, context)
    if isinstance(outcome, bytes):
        return outcome
    _current_request.set(request_id)  # as _answer does
    try:
        stepped = step(outcome)
    except Exception as error:
        return _error_message(request_id, spec, error)
    if isinstance(stepped, Pending):
        return stepped
    return _result_message(request_id, spec, stepped)


def _call_handler(
    request_id: RequestId,
    spec: MethodSpec[Any, Any],
    handler: Handler,
    params: Any,
    context: RequestContext,
) -> bytes | Awaitable[Any]:
    """What the handler returned, to await; or the response when it is
    known already: the error the handler raised, or a plain function's result."""
    progress = context._progress
    try:
        outcome = handler(params, context)
    except Exception as error:
        if progress is not None:
            progress.open = False
        return _error_message(request_id, spec, error)
    if type(outcome) is not types.CoroutineType and not isinstance(outcome, Awaitable):
        # A plain function (the lifecycle's initialize) is answered in
        # order, before the next message is read.
        if progress is not None:
            progress.open = False
        return jsonrpc.result_bytes(request_id, encode(outcome))
    if progress is not None:
        # Only requests that asked for progress pay for the frame that ends it.
        return _ending_progress(outcome, progress)
    return outcome


async def _ending_progress(outcome: Awaitable[Any], progress: _ProgressState) -> Any:
    """Await the handler; once it has returned (or failed), what it or the
    tasks it started report is no longer progress of this request."""
    try:
        return await outcome
    finally:
        if not progress.held:
            progress.open = False


def _token_of(params: msgspec.Raw | UnsetType, data: bytes) -> str | int | None:
    # Only requests that carry a token pay for the second, partial decode.
    return _progress_token(params) if b'"progressToken"' in data else None


def _result_message(request_id: RequestId, spec: MethodSpec[Any, Any], result: Any) -> bytes:
    try:
        return jsonrpc.result_bytes(request_id, encode(result))
    except Exception as error:  # a result the codec cannot encode
        return _error_message(request_id, spec, error)


def _error_message(request_id: RequestId, spec: MethodSpec[Any, Any], error: Exception) -> bytes:
    """The error response for a handler that raised; no traceback goes on the wire."""
    if isinstance(error, McpError):
        return jsonrpc.error_bytes(request_id, error.code, error.message, error.data)
    if isinstance(error, HandlerNotImplemented):
        return jsonrpc.error_bytes(
            request_id, jsonrpc.METHOD_NOT_FOUND, f"Method not found: {spec.method}"
        )
    if isinstance(error, InsufficientScope):
        data = {"error": "insufficient_scope", "scope": " ".join(error.required)}
        return jsonrpc.error_bytes(
            request_id,
            jsonrpc.INSUFFICIENT_SCOPE,
            f"Insufficient scope: {spec.method} needs {data['scope']}",
            data,
        )
    logger.error("handler for %s failed", spec.method, exc_info=error)
    return jsonrpc.error_bytes(request_id, jsonrpc.INTERNAL_ERROR, "Internal error")


async def _await(awaitable: Awaitable[None], previous: asyncio.Task[None] | None) -> None:
    if previous is not None:
        await asyncio.shield(previous)
    try:
        await awaitable
    except Exception:
        logger.exception("progress callback failed")


def _decode_params(spec: MethodSpec[Any, Any], params: msgspec.Raw | UnsetType) -> Any:
    if spec.params is None:
        return None
    raw = _EMPTY_OBJECT if params is UNSET else params
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
    except (
        jsonrpc.UNDECODABLE
    ) as error:  # params Raw skipped are JSON, but maybe not UTF-8, or too deep to decode
        raise McpError(jsonrpc.PARSE_ERROR, jsonrpc.parse_error_message(error)) from None


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


def _with_token(params: Any, token: RequestId) -> tuple[Any, bytes]:
    """``params`` carrying ``_meta.progressToken``, as a value and encoded:
    set on the typed value where it has a ``_meta`` (one encoding), else in
    the encoded params (then the value is those bytes)."""
    if params is not None and "meta" in getattr(type(params), "__struct_fields__", ()):
        meta = params.meta
        if meta is UNSET or isinstance(meta, Mapping):
            merged = {"progressToken": token} if meta is UNSET else {**meta, "progressToken": token}
            value = msgspec.structs.replace(params, meta=merged)
            return value, encode(value)
    raw = _with_progress_token(encode(params) if params is not None else None, token)
    return raw, raw


def _with_progress_token(params: bytes | None, token: RequestId) -> bytes:
    """Params with ``_meta.progressToken`` set, whatever the params type declares."""
    value: Any = _any_decoder.decode(params) if params is not None else {}
    if not isinstance(value, dict):
        value = {}
    meta = value.get("_meta")
    value["_meta"] = (
        {**meta, "progressToken": token} if isinstance(meta, dict) else {"progressToken": token}
    )
    return encode(value)
