"""The answers a Streamable HTTP client reads: one request's exchange (its POST,
the JSON body or SSE stream that answers it, and resuming that stream with
GET and ``Last-Event-ID`` after the server's ``retry`` delay), and the SSE
streams themselves, which the standalone GET stream reads too.

The messages of a request's answer are decoded here, once, to know which one
answers it (the exchange ends with it); each goes to the transport
(:class:`Owner`) with its decoded envelope, which the session then uses as it
is. What the standalone stream brings is handed on undecoded.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Protocol

import msgspec
from msgspec import UNSET

from ...._core import jsonrpc
from ...._core.jsonrpc import Envelope, McpError, RequestId
from ...._core.wire import Message
from .fetch import (
    ACCEPT_SSE,
    MAX_ERROR_BODY,
    Failure,
    Fetcher,
    FetchError,
    Response,
    error_in,
    http_failure,
    media_type,
    read_limited,
)
from .sse_parser import MAX_EVENT_SIZE, SSEParseError, SSEParser

logger = logging.getLogger(__name__)

DEFAULT_RETRY_MS: Final = 1000
"""How long to wait before resuming a stream when the server sent no ``retry``."""
FALLBACK_STATUSES: Final = (400, 404, 405)
"""Statuses of the initialize POST that mean "try the legacy HTTP+SSE transport"."""
ACCEPT_ANY: Final = "application/json, text/event-stream"


@dataclass
class StreamState:
    """Where a stream stands, across the connections that carry it."""

    last_id: str | None = None
    retry_ms: int = DEFAULT_RETRY_MS
    answered: bool = False
    events: int = 0
    failure: str | None = None  # why the stream, or the last attempt to resume it, failed


class Owner(Protocol):
    """What an exchange needs of its transport."""

    url: str
    session_id: str | None
    fallback_reason: str | None
    max_reconnects: int

    @property
    def http(self) -> Fetcher: ...

    @property
    def ended(self) -> bool:
        """Whether the transport was closed or the server ended the session."""

    def headers_for(
        self, accept: str, content: bool = False, stateless: bool = False
    ) -> dict[str, str]:
        """The headers of a request of the session's (``stateless``: of 2026-07-28)."""

    def deliver(
        self,
        data: bytes,
        envelope: Envelope | None,
        answers: RequestId | None,
        carried_on: RequestId | None = None,
    ) -> None:
        """Hand a message read (and its envelope, if decoded) to the session;
        ``answers``: the request it is the response to, if it is one;
        ``carried_on``: the request on whose stream a request or notification
        of the server came (its handler's ``ctx.extra.related``)."""

    def deliver_error(self, request_id: RequestId, error: McpError) -> None:
        """Answer the call ``request_id`` with ``error``."""

    def expire(self) -> None:
        """The server forgot the session (HTTP 404)."""

    async def admitted(self) -> None:
        """Wait while a new session is being started (requests then name it)."""

    def lost(self, sent: str) -> asyncio.Future[bool]:
        """The server answered 404 to what named session ``sent``: True once
        a new session replaced it, False when the session is over (every
        pending call then has its error)."""

    def served(self) -> None:
        """A request's POST was accepted: the session works."""


def envelope_of(data: bytes) -> Envelope | None:
    """The envelope of a message read; None for what is not one JSON-RPC
    message (a batch, or not JSON at all), which the session takes apart."""
    try:
        return jsonrpc.decode_envelope(data)
    except (msgspec.MsgspecError, *jsonrpc.UNDECODABLE):
        return None


def answers(data: bytes, envelope: Envelope | None, request_id: RequestId) -> bool:
    """Whether the message (or batch) ``data`` holds the response to ``request_id``."""
    if envelope is not None:
        found = envelope.id
        return envelope.method is UNSET and type(found) is type(request_id) and found == request_id
    if data.lstrip()[:1] != b"[":
        return False
    try:
        batch = jsonrpc.decode_batch(data)
    except (msgspec.MsgspecError, *jsonrpc.UNDECODABLE):
        return False
    return any(answers(data, item, request_id) for item in batch)


def deliver(owner: Owner, data: bytes, request_id: RequestId | None) -> bool:
    """Hand a message read on ``request_id``'s stream (None: the standalone
    stream) to the transport; whether it answers that request."""
    if request_id is None:
        owner.deliver(data, None, None)
        return False
    envelope = envelope_of(data)
    answered = answers(data, envelope, request_id)
    carried_on = None
    if not answered and envelope is not None and envelope.method is not UNSET:
        carried_on = request_id  # the server's request or notification, sent on its stream
    owner.deliver(data, envelope, request_id if answered else None, carried_on)
    return answered


async def consume(
    owner: Owner, response: Response, request_id: RequestId | None, state: StreamState
) -> None:
    """Deliver a stream's messages until it ends or (for a request) is answered."""
    parser = SSEParser(last_event_id=state.last_id)  # ids persist across reconnections
    async for chunk in response.content.iter_any():
        events = parser.feed(chunk)
        if parser.retry is not None:
            state.retry_ms = parser.retry
        for event in events:
            state.events += 1
            if event.event != "message" or not event.data.strip():
                continue
            if deliver(owner, event.data.encode(), request_id):
                state.answered = True
        state.last_id = parser.last_event_id
        if state.answered:
            return  # the server ends the stream now; no need to wait for it


class Exchange:
    """One request's exchange with the server, from its POST until it is
    answered (by the server, or with the error that ended the exchange).

    A POST answered 404 was refused unread: the request is sent again in the
    session that replaces the ended one. A request whose POST was accepted
    is never sent again: if the session ends before it is answered, it fails
    (it may have run)."""

    __slots__ = ("owner", "message", "request_id", "initialize", "extra", "stateless", "state")

    def __init__(
        self, owner: Owner, message: Message, extra: Mapping[str, str], stateless: bool
    ) -> None:
        assert message.id is not None
        self.owner = owner
        self.message = message
        self.request_id: RequestId = message.id
        self.initialize = message.method == "initialize"
        self.extra = extra  # the headers mirroring the body
        self.stateless = stateless  # a 2026-07-28 request: no session, no resuming
        self.state = StreamState()

    async def run(self) -> None:
        owner, state, request_id = self.owner, self.state, self.request_id
        try:
            lost = await self._post()
            # Shielded: cancelling this call must not stop the new session for the others.
            while lost is not None and await asyncio.shield(lost) and not owner.ended:
                lost = await self._post()  # in the new session
            attempts = 0
            while not state.answered and not owner.ended:
                if self.stateless:
                    raise Failure(
                        McpError(
                            jsonrpc.CONNECTION_CLOSED,
                            "the server ended the response stream before answering"
                            + (f" ({state.failure})" if state.failure else ""),
                        )
                    )
                if state.last_id is None:
                    raise Failure(
                        McpError(
                            jsonrpc.CONNECTION_CLOSED,
                            "the server ended the response stream before answering, "
                            "and the stream cannot be resumed (it sent no event id)",
                        )
                    )
                attempts += 1
                if attempts > owner.max_reconnects:
                    raise Failure(
                        McpError(
                            jsonrpc.CONNECTION_CLOSED,
                            f"gave up resuming the response stream after {owner.max_reconnects} attempts"
                            + (f" (last: {state.failure})" if state.failure else ""),
                        )
                    )
                await asyncio.sleep(state.retry_ms / 1000)
                before = state.events
                await self._resume()
                if state.events > before:
                    attempts = 0
        except Failure as failure:
            owner.deliver_error(request_id, failure.error)
        except McpError as error:  # from the auth provider: authorization failed
            owner.deliver_error(request_id, error)
        except SSEParseError as error:
            owner.deliver_error(
                request_id,
                McpError(jsonrpc.PARSE_ERROR, f"bad SSE stream from the server: {error}"),
            )
        except Exception:  # a bug here must still answer the waiting call
            logger.exception("HTTP request %r failed", request_id)
            owner.deliver_error(
                request_id, McpError(jsonrpc.INTERNAL_ERROR, "internal error in the HTTP transport")
            )

    async def _post(self) -> asyncio.Future[bool] | None:
        """POST the request, and deliver its answer if it comes in that
        response. If the server answered 404 for the session: whether a new
        session replaced it, to come."""
        owner, state, stateless, initialize = (
            self.owner,
            self.state,
            self.stateless,
            self.initialize,
        )
        url = owner.url
        if not (initialize or stateless):
            await owner.admitted()
            if owner.ended:
                return None
        headers = owner.headers_for(ACCEPT_ANY, content=True, stateless=stateless)
        headers.update(self.extra)
        sent = None if initialize or stateless else headers.get("mcp-session-id")
        try:
            async with owner.http.open("POST", url, headers, self.message.data) as response:
                status = response.status
                if initialize:
                    owner.session_id = response.headers.get("mcp-session-id") or owner.session_id
                if status == 404 and sent is not None:
                    return owner.lost(sent)
                if sent is not None and status < 300:
                    owner.served()
                if status >= 300 or status == 202:
                    body = await read_limited(response, MAX_ERROR_BODY)
                    # An authentication status stays one (a client does not fall back on it).
                    if (
                        stateless
                        and status >= 400
                        and status not in (401, 403)
                        and self._answer_with_error_body(body)
                    ):
                        state.answered = True
                        return None
                    if initialize and status in FALLBACK_STATUSES:
                        owner.fallback_reason = f"HTTP {status}"
                    raise Failure(http_failure(status, response.reason or "", body, f"POST {url}"))
                media = media_type(response)
                if media == "application/json":
                    body = await read_limited(response, MAX_EVENT_SIZE, f"POST {url}")
                    self._deliver_json(body)
                elif media == "text/event-stream":
                    await consume(owner, response, self.request_id, state)
                else:
                    if initialize:
                        owner.fallback_reason = f"content type {media or 'none'!r}"
                    raise Failure(
                        McpError(
                            jsonrpc.INTERNAL_ERROR,
                            f"POST {url}: expected a JSON or SSE answer, got content type {media or 'none'!r}",
                        )
                    )
        except FetchError as error:
            if (stateless or state.last_id is None) and not state.answered:
                raise Failure(
                    McpError(jsonrpc.CONNECTION_CLOSED, f"POST {url} failed: {error}")
                ) from None
            state.failure = str(error)  # the stream dropped after it started: resumed by run()
        return None

    def _answer_with_error_body(self, body: bytes) -> bool:
        """Answer the call with the JSON-RPC error an error status carries, if it carries one."""
        error = error_in(body)
        if error is None:
            return False
        self.owner.deliver_error(self.request_id, McpError(error.code, error.message, error.data))
        return True

    def _deliver_json(self, body: bytes) -> None:
        url = self.owner.url
        if not body.strip():
            raise Failure(
                McpError(jsonrpc.INTERNAL_ERROR, f"POST {url}: empty answer to a request")
            )
        try:
            envelope: Envelope | None = jsonrpc.decode_envelope(body)
        except msgspec.ValidationError:  # a batch, or not JSON-RPC (or not JSON: a shape
            envelope = None  # may fail on the first bytes of what is not even JSON)
            invalid = jsonrpc.parse_error(body) is not None
        except msgspec.DecodeError:
            invalid = True
        else:
            invalid = False
        if invalid:
            raise Failure(
                McpError(jsonrpc.PARSE_ERROR, f"POST {url}: the answer is not valid JSON")
            )
        answered = answers(body, envelope, self.request_id)
        self.owner.deliver(body, envelope, self.request_id if answered else None)
        if answered:
            self.state.answered = True
        else:
            raise Failure(
                McpError(jsonrpc.INTERNAL_ERROR, f"POST {url}: the JSON answer holds no response")
            )

    async def _resume(self) -> None:
        """One attempt to resume the request's stream with GET and Last-Event-ID."""
        owner, state = self.owner, self.state
        headers = owner.headers_for(ACCEPT_SSE)
        assert state.last_id is not None
        headers["last-event-id"] = state.last_id
        sent = headers.get("mcp-session-id")
        try:
            async with owner.http.open("GET", owner.url, headers) as response:
                status = response.status
                if status == 404 and sent is not None:
                    owner.lost(sent)
                    if owner.ended:
                        return  # the session is over: every call has its error
                    # The POST was accepted, so the request may have run: never sent again.
                    raise Failure(
                        McpError(
                            jsonrpc.CONNECTION_CLOSED,
                            f"the server ended MCP session {sent} (HTTP 404) before answering; "
                            "the request may have run, so it is not sent again",
                            {"httpStatus": 404},
                        )
                    )
                if status >= 500:
                    state.failure = f"HTTP {status} {response.reason or ''}".rstrip()
                    return  # try again later
                if status != 200 or media_type(response) != "text/event-stream":
                    body = await read_limited(response, MAX_ERROR_BODY)
                    raise Failure(
                        http_failure(
                            status,
                            response.reason or "",
                            body,
                            f"resuming the response stream at {owner.url}",
                        )
                    )
                await consume(owner, response, self.request_id, state)
        except FetchError as error:
            state.failure = str(error)
            logger.debug(
                "resuming the stream of request %r failed: %s", self.request_id, state.failure
            )


__all__ = [
    "ACCEPT_ANY",
    "DEFAULT_RETRY_MS",
    "FALLBACK_STATUSES",
    "Exchange",
    "Owner",
    "StreamState",
    "answers",
    "consume",
    "deliver",
    "envelope_of",
]
