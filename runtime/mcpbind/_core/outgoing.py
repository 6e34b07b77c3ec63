"""What one side of a session sends: its requests and notifications.

:class:`Outgoing` numbers the requests, keeps each call waiting for its
response (with its timeout, its result decoder and its progress callback),
cancels on the peer what times out or is cancelled here, and routes the
peer's progress notifications to the call they belong to. The session hands
it the responses and progress it reads, and fails every call when it closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import math
from collections.abc import Awaitable, Iterator, Mapping
from typing import Any, Protocol, TypeVar, cast

import msgspec
from msgspec import UNSET, UnsetType

from ..codec import JsonDecoder, decode_lenient, decoder, encode, join_paths
from ..methods import MethodSpec, ProgressCallback
from . import jsonrpc, wire
from .jsonrpc import ConnectionClosed, ErrorObject, McpError, RequestId
from .wire import REQUEST, Message, Transport

P = TypeVar("P")
R = TypeVar("R")

logger = logging.getLogger(__name__)

MAX_PROGRESS_BACKLOG = 256
"""Async progress callbacks of one call waiting to run; progress notifications
that arrive faster than that are dropped."""


class OutgoingCheck(Protocol):
    def check_outgoing(self, spec: MethodSpec[Any, Any], params: Any) -> None:
        """Raise McpError if this message may not be sent with these params."""


class _Progress(msgspec.Struct):
    progressToken: str | int
    progress: float
    total: float | None | UnsetType = UNSET
    message: str | None | UnsetType = UNSET


_progress_decoder = msgspec.json.Decoder(_Progress)
_any_decoder = msgspec.json.Decoder()

# Calls without a timeout skip asyncio.timeout(None): a context manager, a
# cancellation check and an exception handler per call, for nothing.
_NO_TIMEOUT = contextlib.nullcontext()

# A response laid out the way this runtime and the official Python SDK write
# them: {"jsonrpc":"2.0","id":<int>,"result":<value>}, compact.
_RESULT_HEAD = b'{"jsonrpc":"2.0","id":'
_RESULT_KEY = b',"result":'
_JSON_SPACE = b" \t\r\n"
TYPED_MIN_SIZE = 4096
"""Below this size the envelope pass costs less than finding the result bytes."""


def result_bytes(data: bytes) -> tuple[int, memoryview] | None:
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


class Outgoing:
    """The calls a session makes and the notifications it sends, over ``transport``.

    ``checks.check_outgoing`` refuses what the negotiated revision or the
    declared capabilities rule out; ``default_timeout`` applies to calls made
    without their own (None: no limit)."""

    def __init__(
        self, transport: Transport, checks: OutgoingCheck, default_timeout: float | None
    ) -> None:
        self.transport = transport
        self.checks = checks
        self.default_timeout = default_timeout
        self._ids = itertools.count(1)
        self.pending: dict[RequestId, asyncio.Future[msgspec.Raw | ErrorObject | _Decoded]] = {}
        # The result decoder of each call made through request() (see deliver_typed).
        self._typed: dict[RequestId, JsonDecoder] = {}
        self.progress: dict[str | int, ProgressCallback] = {}
        # Tokens followed beyond their request's answer (a task's): see follow_progress.
        self._followed: dict[str | int, ProgressCallback] = {}
        self._progress_tasks: dict[str | int, asyncio.Task[None]] = {}
        # Async progress callbacks not yet finished, by token.
        self._progress_waiting: dict[str | int, int] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self.closed: str | None = None  # why, once closed
        # The loop the calls are made on, looked up at the first (on CPython 3.11
        # each lookup is a system call).
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def expecting_typed(self) -> bool:
        """Whether some call waits for a result it decodes itself (see deliver_typed)."""
        return bool(self._typed)

    def next_id(self) -> int:
        return next(self._ids)

    def fail_all(self, reason: str) -> None:
        """Fail every call waiting for a response; later calls fail at once."""
        if self.closed is not None:
            return
        self.closed = reason
        if self.pending:
            error = ConnectionClosed(reason)
            for future in self.pending.values():
                if not future.done():
                    future.set_exception(error)
            self.pending.clear()

    # ------------------------------------------------------------ requests

    async def request(
        self,
        spec: MethodSpec[P, R],
        params: P | None,
        timeout: float | None,
        on_progress: ProgressCallback | None,
        request_id: RequestId | None,
        related: RequestId | None = None,
    ) -> R:
        """See Session.request."""
        self.checks.check_outgoing(spec, params)
        value: Any = params
        if on_progress is None:
            raw_params = encode(params) if params is not None else None
        else:
            if request_id is None:
                request_id = next(self._ids)
            value, raw_params = _with_token(params, request_id)
        result_decoder = decoder(spec.result)
        raw = await self.call(
            spec.method,
            raw_params,
            value,
            timeout,
            on_progress,
            result_decoder,
            request_id,
            related,
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
        timeout: float | None,
        on_progress: ProgressCallback | None,
        related: RequestId | None = None,
    ) -> msgspec.Raw:
        """See Session.request_raw."""
        request_id = None
        if on_progress is not None:
            request_id = next(self._ids)
            params = _with_progress_token(params, request_id)
        raw = await self.call(
            method, params, params, timeout, on_progress, None, request_id, related
        )
        assert not isinstance(raw, _Decoded)  # only calls with a result decoder get one
        return raw

    async def call(
        self,
        method: str,
        params: bytes | None,
        value: Any,
        timeout: float | None,
        on_progress: ProgressCallback | None,
        result_decoder: JsonDecoder | None,
        request_id: RequestId | None,
        related: RequestId | None = None,
    ) -> msgspec.Raw | _Decoded:
        """``params`` encoded, and ``value``, what they were encoded from (for
        the transport); they carry the progress token when ``on_progress`` is given.
        ``related``: the incoming request this one is sent in answering, if any."""
        if self.closed is not None:
            raise ConnectionClosed(self.closed)
        if request_id is None:
            request_id = next(self._ids)
        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.get_running_loop()
        future: asyncio.Future[msgspec.Raw | ErrorObject | _Decoded] = loop.create_future()
        self.pending[request_id] = future
        if result_decoder is not None:
            self._typed[request_id] = result_decoder
        callbacks: asyncio.Task[None] | None = None
        if on_progress is not None:
            self.progress[request_id] = on_progress
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
                        related=related,
                        params=value,
                    )
                )
                await self.transport.drain()
                outcome = await future
        except TimeoutError:
            if method != "initialize":  # which the spec forbids cancelling
                self.send_cancelled(request_id, "Request timed out", related)
            raise McpError(
                jsonrpc.REQUEST_TIMEOUT, f"{method} timed out after {timeout} s"
            ) from None
        except asyncio.CancelledError:
            if self.closed is None and method != "initialize":
                self.send_cancelled(request_id, "Request cancelled", related)
            raise
        finally:
            self.pending.pop(request_id, None)
            self._typed.pop(request_id, None)
            if on_progress is not None:
                self.progress.pop(request_id, None)
                callbacks = self._progress_tasks.pop(request_id, None)
        if on_progress is not None and callbacks is not None:
            await asyncio.shield(callbacks)  # progress reported before the result is seen first
        if isinstance(outcome, ErrorObject):
            raise McpError(outcome.code, outcome.message, outcome.data)
        return outcome

    # ------------------------------------------------------------ notifications

    async def notify(
        self, method: str, params: bytes | None, value: Any, related: RequestId | None = None
    ) -> None:
        """Send a notification; ``related``: the incoming request it is sent in answering."""
        if self.closed is not None:
            raise ConnectionClosed(self.closed)
        self.transport.write(
            wire.notification(jsonrpc.notification_bytes(method, params), method, related, value)
        )
        await self.transport.drain()

    def send_cancelled(
        self, request_id: RequestId, reason: str, related: RequestId | None = None
    ) -> None:
        if self.closed is None:
            value = {"requestId": request_id, "reason": reason}
            method = "notifications/cancelled"
            self.transport.write(
                wire.notification(
                    jsonrpc.notification_bytes(method, encode(value)),
                    method,
                    related,
                    value,
                )
            )

    # ------------------------------------------------------------ what the peer sends back

    def deliver(self, request_id: RequestId, outcome: msgspec.Raw | ErrorObject) -> None:
        """The peer's response to our call ``request_id``."""
        future = self.pending.get(request_id)
        if future is None or future.done():
            logger.debug("dropping a response to an unknown request")
            return
        future.set_result(outcome)

    def deliver_typed(self, data: bytes) -> bool:
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
        found = result_bytes(data)
        if found is None:
            return False
        request_id, result = found
        result_decoder = self._typed.get(request_id)
        future = self.pending.get(request_id)
        if result_decoder is None or future is None or future.done():
            return False
        try:
            value = result_decoder.decode(result)
        except Exception:  # whatever it is, the usual path reports it as it always did
            return False
        future.set_result(_Decoded(value))
        return True

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

    def on_progress(self, params: msgspec.Raw | UnsetType) -> None:
        """A progress notification from the peer, for one of our calls."""
        if params is UNSET:
            return
        try:
            progress = _progress_decoder.decode(params)
        except (msgspec.ValidationError, *jsonrpc.UNDECODABLE):
            return
        callback = self.progress.get(progress.progressToken) or self._followed.get(
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


async def _await(awaitable: Awaitable[None], previous: asyncio.Task[None] | None) -> None:
    if previous is not None:
        await asyncio.shield(previous)
    try:
        await awaitable
    except Exception:
        logger.exception("progress callback failed")


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
