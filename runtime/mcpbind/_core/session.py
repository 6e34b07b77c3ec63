"""The JSON-RPC session loop, the same for clients and servers.

A :class:`Session` reads messages from a :class:`~mcpbind._core.wire.Transport`,
answers requests through a :class:`Router`, hands responses to the calls
waiting for them (:class:`~mcpbind._core.outgoing.Outgoing`), and owns the
protocol plumbing every revision shares: ping, cancellation (both ways),
progress routing and per-request timeouts.

Each message is decoded once into a JSON-RPC envelope whose ``params`` and
``result`` stay raw; they are decoded exactly once more, with the generated
type the method table names for that method (:mod:`~mcpbind._server.answering`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from contextlib import AbstractContextManager
from typing import Any, Protocol, TypeVar

import msgspec
from msgspec import UNSET, UnsetType

from .._server.answering import (
    LOG_LEVELS,
    ProgressState,
    RequestEnvelope,
    call_handler,
    decode_params,
    error_message,
    level_passes,
    ping_response,
    result_message,
    token_of,
)
from ..codec import encode
from ..methods import MethodSpec, ProgressCallback
from . import jsonrpc, lifecycle, wire
from .jsonrpc import Envelope, ErrorObject, McpError, RequestId
from .limits import ClientIdentity
from .logsafe import quoted
from .outgoing import MAX_PROGRESS_BACKLOG, TYPED_MIN_SIZE, Outgoing
from .stepping import Pending, step
from .wire import NO_EXTRA, ClosesWithReason, Message, RequestExtra, Transport

P = TypeVar("P")
R = TypeVar("R")

logger = logging.getLogger(__name__)

# A handler returns an awaitable (run as its own task) or, for the few that
# must be answered before the next message is read, the result itself.
Handler = Callable[[Any, "SessionContext"], Any]
Route = tuple[MethodSpec[Any, Any], Handler]


class Router(Protocol):
    """Where a session sends what it does not handle itself."""

    @property
    def stateless(self) -> bool:
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


class _Cancelled(msgspec.Struct):
    requestId: RequestId | UnsetType = UNSET
    reason: str | UnsetType = UNSET


_cancelled_decoder = msgspec.json.Decoder(_Cancelled)


class SessionContext:
    """Handed to every handler: the request's id, progress, logging and the peer.

    The session's implementation of :class:`mcpbind.methods.RequestContext`, the
    protocol handlers are typed with."""

    __slots__ = ("_session", "_summon", "_request_id", "_progress", "_envelope", "_extra")

    def __init__(
        self,
        session: Session,
        request_id: RequestId | None,
        progress_token: str | int | None,
        extra: RequestExtra = NO_EXTRA,
        envelope: RequestEnvelope | None = None,
    ) -> None:
        self._session: Session | None = session
        self._summon: Callable[[], Session] | None = None
        self._request_id = request_id
        self._progress = ProgressState(progress_token) if progress_token is not None else None
        self._envelope = envelope
        self._extra = extra

    @classmethod
    def _of(
        cls,
        session: Session | None,
        summon: Callable[[], Session] | None,
        request_id: RequestId | None,
        progress: ProgressState | None,
        envelope: RequestEnvelope | None,
        extra: RequestExtra,
    ) -> SessionContext:
        context = cls.__new__(cls)
        context._session, context._summon = session, summon
        context._request_id, context._progress = request_id, progress
        context._envelope, context._extra = envelope, extra
        return context

    @property
    def request_id(self) -> RequestId | None:
        return self._request_id

    @property
    def has_session(self) -> bool:
        """Whether the request came on a session (not one made when a handler asks for it)."""
        return self._session is not None or self._summon is None

    @property
    def session(self) -> Session:
        """The session the request came on: the same object for each of its requests
        (what per-connection state is kept by). Send through :attr:`peer`."""
        session = self._session
        if session is None:
            assert self._summon is not None
            session = self._session = self._summon()
        return session

    @property
    def peer(self) -> RequestPeer:
        """The other side, as this request's handler sends to it: what goes through
        it is related to this request (over Streamable HTTP, on its stream)."""
        return RequestPeer(self.session, self._request_id)

    @property
    def protocol_version(self) -> str:
        return (
            self._envelope.protocol_version
            if self._envelope is not None
            else self.session.protocol_version
        )

    @property
    def stateless(self) -> bool:
        """Whether the request described itself in ``_meta`` (2026-07-28 on)."""
        return self._envelope is not None

    @property
    def client_capabilities(self) -> Any:
        if self._envelope is not None:
            return self._envelope.client_capabilities
        return getattr(self.session, "client_capabilities", None)

    @property
    def client_info(self) -> Any:
        if self._envelope is not None:
            return self._envelope.client_info
        return getattr(self.session, "client_info", None)

    @property
    def log_level(self) -> str | None:
        envelope = self._envelope
        if envelope is not None:
            return envelope.log_level
        allows = self.session.router.log_level_allows
        return next((level for level in LOG_LEVELS if allows(level)), None)

    @property
    def extra(self) -> RequestExtra:
        return self._extra

    @property
    def principal(self) -> Any:
        return self._extra.principal

    @property
    def client_identity(self) -> ClientIdentity:
        return self._extra.client

    def described(self, envelope: RequestEnvelope) -> SessionContext:
        """This context for a request that describes its sender (2026-07-28 on)."""
        return SessionContext._of(
            self._session,
            self._summon,
            self._request_id,
            self._progress,
            envelope,
            self._extra,
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
        await self.session.send_raw_notification(
            "notifications/progress", encode(params), related=self._request_id
        )

    def close_sse_stream(self) -> None:
        """Close the HTTP stream carrying this request (the client resumes it
        with Last-Event-ID); nothing on transports without such streams."""
        close = self._extra.close_stream
        if close is not None:
            close()

    async def log(self, level: str, data: Any, logger: str | None = None) -> None:
        envelope = self._envelope
        if envelope is not None:
            # 2026-07-28: a request that names no log level gets no log messages.
            if envelope.log_level is None or not level_passes(level, envelope.log_level):
                return
        elif not self.session.router.log_level_allows(level):
            return
        params: dict[str, Any] = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        await self.session.send_raw_notification(
            "notifications/message", encode(params), related=self._request_id
        )


class RequestPeer:
    """A session as one request's handler sends through it (``ctx.peer``): each request
    and notification carries the id of the request being answered (``related``), so a
    transport with a stream per request (Streamable HTTP) sends it on that request's
    stream. Implements the generated stubs' ``Caller``."""

    __slots__ = ("session", "related")

    def __init__(self, session: Session, related: RequestId | None) -> None:
        self.session = session
        self.related = related

    async def request(
        self,
        spec: MethodSpec[P, R],
        params: P | None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        request_id: RequestId | None = None,
    ) -> R:
        """:meth:`Session.request`, related to this view's request."""
        return await self.session.request(
            spec,
            params,
            timeout=timeout,
            on_progress=on_progress,
            request_id=request_id,
            related=self.related,
        )

    async def request_raw(
        self,
        method: str,
        params: bytes | None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> msgspec.Raw:
        """:meth:`Session.request_raw`, related to this view's request."""
        return await self.session.request_raw(
            method, params, timeout=timeout, on_progress=on_progress, related=self.related
        )

    async def notify(self, spec: MethodSpec[P, None], params: P | None) -> None:
        """:meth:`Session.notify`, related to this view's request."""
        await self.session.notify(spec, params, related=self.related)

    async def send_raw_notification(self, method: str, params: bytes | None) -> None:
        await self.session.send_raw_notification(method, params, related=self.related)

    def next_id(self) -> int:
        """A fresh id for an outgoing request (:meth:`Session.next_id`)."""
        return self.session.next_id()


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
        self.outgoing = Outgoing(transport, router, default_timeout)
        # Where a request leaves the session, under any sending middleware (telemetry
        # wraps it on a client): (spec, params, timeout, on_progress, request_id).
        self.send_request: Callable[..., Awaitable[Any]] = self.outgoing.request
        # The notifications the session answers itself (no route, so no
        # middleware), each handler wrapped (by a server's telemetry, in its
        # span); None, the default: the plain branches, at one test's cost.
        self.own_notifications: dict[str, Handler] | None = None
        self._in_flight: dict[RequestId, asyncio.Task[None]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed_event: asyncio.Event | None = None  # made when asked for: most never are
        self._reader: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None  # the loop its handlers run on

    # ------------------------------------------------------------ lifetime

    def start(self) -> None:
        """Start reading in the background."""
        if self._reader is None:
            self._reader = asyncio.get_running_loop().create_task(self.run())

    async def run(self) -> None:
        """Read and dispatch until the transport ends, then fail what is pending."""
        read = self.transport.read
        try:
            while True:
                message = await read()
                if message is None:
                    break
                self.feed(message)
        finally:
            transport = self.transport
            detail = transport.closed_reason() if isinstance(transport, ClosesWithReason) else None
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
            extra = message.extra or NO_EXTRA
            if envelope is None:
                self._dispatch(message.data, extra)
            else:
                self._dispatch_envelope(envelope, message.data, extra)
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
        handler was begun before the session was made (see :func:`first_step`).
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
                    request_id,
                    envelope.method,
                    envelope.params,
                    message.data,
                    message.extra or NO_EXTRA,
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
        if self.outgoing.closed is not None:
            return
        self.outgoing.fail_all(reason)  # which keeps why: the session is closed from then on
        for task in list(self._in_flight.values()):
            task.cancel()
        if self._closed_event is not None:
            self._closed_event.set()

    @property
    def closed(self) -> asyncio.Event:
        """Set once the session has closed."""
        if self._closed_event is None:
            self._closed_event = asyncio.Event()
            if self.outgoing.closed is not None:
                self._closed_event.set()
        return self._closed_event

    @property
    def is_closed(self) -> bool:
        return self.outgoing.closed is not None

    # ------------------------------------------------------------ sending

    async def request(
        self,
        spec: MethodSpec[P, R],
        params: P | None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        request_id: RequestId | None = None,
        related: RequestId | None = None,
    ) -> R:
        """Send a request and wait for its result, decoded with the spec's type.

        ``timeout`` None means the session's default; ``math.inf`` waits
        without limit whatever the default. ``request_id`` is for callers that
        must know the id before the answer (a subscription is named after its
        request); take it from next_id(). ``related``: the incoming request
        this one is sent in answering (a handler sends through ``ctx.peer``,
        which gives it)."""
        return await self.outgoing.request(spec, params, timeout, on_progress, request_id, related)

    async def request_raw(
        self,
        method: str,
        params: bytes | None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        related: RequestId | None = None,
    ) -> msgspec.Raw:
        """Send a request with already-encoded params; the raw result bytes."""
        return await self.outgoing.request_raw(method, params, timeout, on_progress, related)

    def next_id(self) -> int:
        """A fresh id for an outgoing request."""
        return self.outgoing.next_id()

    def follow_progress(
        self, token: str | int, on_progress: ProgressCallback
    ) -> AbstractContextManager[None]:
        """A task's progress after its request's answer (Outgoing.follow_progress)."""
        return self.outgoing.follow_progress(token, on_progress)

    async def notify(
        self, spec: MethodSpec[P, None], params: P | None, *, related: RequestId | None = None
    ) -> None:
        """Send a notification; ``related`` as for :meth:`request`."""
        self.router.check_outgoing(spec, params)
        await self.outgoing.notify(
            spec.method, encode(params) if params is not None else None, params, related
        )

    async def send_raw_notification(
        self, method: str, params: bytes | None, *, related: RequestId | None = None
    ) -> None:
        await self.outgoing.notify(method, params, params, related)

    def _send_error(
        self, request_id: RequestId | None, code: int, message: str, data: Any = None
    ) -> None:
        if self.outgoing.closed is None:
            self.transport.write(
                wire.response(
                    jsonrpc.error_bytes(request_id, code, message, data),
                    request_id,
                    ErrorObject(code, message, data),
                )
            )

    # ------------------------------------------------------------ receiving

    def _dispatch(self, data: bytes, extra: RequestExtra) -> None:
        if (
            len(data) >= TYPED_MIN_SIZE
            and self.outgoing.expecting_typed
            and self.outgoing.deliver_typed(data)
        ):
            return
        try:
            envelope = jsonrpc.decode_envelope(data)
        except msgspec.ValidationError:
            # The shape may fail on the first bytes of what is not even JSON.
            problem = jsonrpc.parse_error(data)
            if problem is not None:
                self._refuse(data, jsonrpc.PARSE_ERROR, problem)
            elif data.lstrip()[:1] == b"[":
                self._dispatch_batch(data, extra)
            else:
                self._send_error(
                    None, jsonrpc.INVALID_REQUEST, "Invalid request: not a JSON-RPC message"
                )
            return
        except jsonrpc.UNDECODABLE as error:
            self._refuse(data, jsonrpc.PARSE_ERROR, jsonrpc.parse_error_message(error))
            return
        self._dispatch_envelope(envelope, data, extra)

    def _refuse(self, data: bytes, code: int, message: str) -> None:
        """Answer a message that is not JSON (or too deep or too large to
        decode). What names a method gets the error under the id its first
        bytes show (null if none), so the call waiting for it fails now; a
        response fails our call waiting for it (its id is ours: an error sent
        under it would reach the peer's own call of that id); the rest get
        the error under a null id."""
        request_id, response = jsonrpc.unreadable_sender(data)
        if response and request_id is not None:
            error = ErrorObject(code, f"{message} (in the response to this request)")
            self.outgoing.deliver(request_id, error)
            return
        self._send_error(request_id, code, message)

    def _dispatch_batch(self, data: bytes, extra: RequestExtra) -> None:
        if self.router.stateless or not lifecycle.allows_batches(self.protocol_version):
            # Refused before decoding: one batch would otherwise start a handler per member.
            self._send_error(
                None,
                jsonrpc.INVALID_REQUEST,
                "Invalid request: this protocol revision has no JSON-RPC batches",
            )
            return
        batch = jsonrpc.batch_members(data)
        if isinstance(batch, tuple):
            self._send_error(None, *batch)
            return
        for envelope in batch:
            self._dispatch_envelope(envelope, data, extra)

    def _dispatch_envelope(self, envelope: Envelope, data: bytes, extra: RequestExtra) -> None:
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
                self.outgoing.deliver(
                    request_id, ErrorObject(jsonrpc.INVALID_REQUEST, f"Invalid response: {problem}")
                )
                return
            reply_to = None if request_id is UNSET else request_id
            self._send_error(reply_to, jsonrpc.INVALID_REQUEST, f"Invalid request: {problem}")
            return
        if envelope.method is not UNSET:
            if request_id is UNSET:
                self._on_notification(envelope.method, envelope.params, extra)
            elif request_id is None:
                self._send_error(
                    None, jsonrpc.INVALID_REQUEST, "Invalid request: id must not be null"
                )
            else:
                self._on_request(request_id, envelope.method, envelope.params, data, extra)
        elif request_id is not UNSET and request_id is not None:
            if envelope.error is not UNSET:
                self.outgoing.deliver(request_id, envelope.error)
            elif envelope.result is not UNSET:
                self.outgoing.deliver(request_id, envelope.result)
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

    def _on_request(
        self,
        request_id: RequestId,
        method: str,
        params: msgspec.Raw | UnsetType,
        data: bytes,
        extra: RequestExtra,
    ) -> None:
        started = self._start_handler(request_id, method, params, data, extra)
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
        self,
        request_id: RequestId,
        method: str,
        params: msgspec.Raw | UnsetType,
        data: bytes,
        extra: RequestExtra,
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
        if method == "ping" and not self.router.stateless:
            self.transport.write(wire.response(ping_response(request_id, params), request_id))
            return None
        try:
            spec, handler = self.router.route_request(method, params)
            decoded = decode_params(spec, params)
        except McpError as error:
            self._send_error(request_id, error.code, error.message, error.data)
            return None
        outcome = _call(spec, handler, decoded, request_id, params, data, extra, self, None)
        if isinstance(outcome, Message):
            self.transport.write(outcome)
            return None
        return spec, outcome

    async def _answer(
        self, request_id: RequestId, spec: MethodSpec[Any, Any], outcome: Awaitable[Any]
    ) -> None:
        try:
            result = await outcome
        except asyncio.CancelledError:
            return  # cancelled by the peer or by shutdown: no response is sent
        except Exception as error:
            message = error_message(request_id, spec, error)
        else:
            message = result_message(request_id, spec, result)
        finally:
            self._in_flight.pop(request_id, None)
        if self.outgoing.closed is None:
            self.transport.write(message)
            await self.transport.drain()

    def own_notification_handlers(self) -> dict[str, Handler]:
        """The notifications this session answers without a route, each as a
        handler of (undecoded params, context), for :attr:`own_notifications`."""
        return {
            "notifications/cancelled": lambda params, ctx: self._on_cancelled(params),
            "notifications/progress": lambda params, ctx: self.outgoing.on_progress(params),
        }

    def _on_notification(
        self, method: str, params: msgspec.Raw | UnsetType, extra: RequestExtra
    ) -> None:
        own = self.own_notifications
        if own is not None:
            handler = own.get(method)
            if handler is not None:
                handler(params, SessionContext(self, None, None, extra))
                return
        if method == "notifications/cancelled":
            self._on_cancelled(params)
            return
        if method == "notifications/progress":
            self.outgoing.on_progress(params)
            return
        route = self.router.route_notification(method)
        if route is None:
            return
        spec, handler = route
        try:
            decoded = decode_params(spec, params)
        except McpError as error:
            logger.warning("dropping %s: %s", quoted(method), quoted(error.message))
            return
        context = SessionContext(self, None, None, extra)
        task = asyncio.get_running_loop().create_task(
            _handle_notification(spec, handler, decoded, context)
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

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


def first_step(
    route: Route,
    request_id: RequestId,
    params: msgspec.Raw | UnsetType,
    data: bytes,
    summon: Callable[[], Session],
    extra: RequestExtra,
) -> Message | Pending[Any] | None:
    """The dispatcher's first step for a request answered in its caller's task
    before any session is made (a 2026-07-28 request over HTTP): serve the
    request ``data`` (``request_id``, ``params``) by ``route`` until its
    handler first waits. Its context makes the session by ``summon()`` when
    the handler first needs one (a notification, ``ctx.peer``); ``extra``:
    what the transport knows of the request.

    Returns the response when the handler answered within that step; else
    where the handler stopped, for :meth:`Session.serve` to carry on
    (``started=(spec, pending.rest())``); None when the params do not decode:
    the session's own dispatch of the request says what is wrong with them."""
    spec, handler = route
    try:
        decoded = decode_params(spec, params)
    except McpError:
        return None
    outcome = _call(spec, handler, decoded, request_id, params, data, extra, None, summon)
    if isinstance(outcome, Message):
        return outcome
    try:
        stepped = step(outcome)
    except Exception as error:
        return error_message(request_id, spec, error)
    if isinstance(stepped, Pending):
        return stepped
    return result_message(request_id, spec, stepped)


def _call(
    spec: MethodSpec[Any, Any],
    handler: Handler,
    decoded: Any,
    request_id: RequestId,
    params: msgspec.Raw | UnsetType,
    data: bytes,
    extra: RequestExtra,
    session: Session | None,
    summon: Callable[[], Session] | None,
) -> Message | Awaitable[Any]:
    """Call the handler of a request with its context: the response when known
    at once (see :func:`call_handler`), else what to await for the result.
    The context is of ``session``, or of the one ``summon()`` makes when the
    handler first needs it (a request begun before its session)."""
    # The bytes looked at here, not in token_of: most requests carry no token,
    # and a call less per request is what _call itself costs.
    token = token_of(params, data) if b'"progressToken"' in data else None
    progress = ProgressState(token) if token is not None else None
    context = SessionContext._of(session, summon, request_id, progress, None, extra)
    return call_handler(request_id, spec, handler, decoded, context, progress)


async def _handle_notification(
    spec: MethodSpec[Any, Any], handler: Handler, params: Any, context: SessionContext
) -> None:
    try:
        await handler(params, context)
    except Exception:
        logger.exception("notification handler for %s failed", spec.method)


__all__ = [
    "LOG_LEVELS",
    "MAX_PROGRESS_BACKLOG",
    "Handler",
    "SessionContext",
    "RequestEnvelope",
    "Route",
    "Router",
    "Session",
    "Transport",
    "first_step",
    "level_passes",
]
