"""POST, GET and DELETE for the revisions with a handshake (before 2026-07-28).

A POST of ``initialize`` opens a session (an unguessable ``Mcp-Session-Id``); later POSTs
name it, and are answered with an SSE stream of the request's messages (or, with
``json_response``, one JSON body). GET opens the session's standalone stream, or resumes
one with ``Last-Event-ID``; DELETE ends the session. In the stateless mode every POST is
served on its own, without a session, so that any worker can take it.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING

import msgspec

from ...._core import jsonrpc, lifecycle
from ...._core.jsonrpc import Envelope, RequestId
from ...._core.limits import ClientIdentity, ClientKey
from ...._core.stepping import one_pass
from ...._server.server import Server
from ....auth._principal import Principal
from ..asgi import Receive, Scope, Send
from ..disconnect import ClientWatch, Gone, SlowAnswers, next_or_gone
from .answers import plain, refuse, scope_refusal, send_answer, utf8_or_refused
from .events import Events, EventStream, send_stream
from .options import HttpOptions
from .probe import batch_members, is_response, post_problem, reply_id
from .sessions import HttpSession, SessionTable

if TYPE_CHECKING:
    from ....auth.server._resource_server import ResourceServer

# A client that sends no MCP-Protocol-Version is taken to speak this (spec).
DEFAULT_HEADER_VERSION = "2025-03-26"


def owner_of(principal: Principal | None) -> str | None:
    return principal.key if principal is not None else None


class HandshakePath:
    """How one app answers the requests of the handshake revisions, in the sessions of
    ``table`` (or, ``stateless``, in none)."""

    def __init__(
        self,
        server: Server,
        options: HttpOptions,
        table: SessionTable,
        slow_answers: SlowAnswers,
        auth: ResourceServer | None,
        client_key: ClientKey,
        stateless: bool,
        json_response: bool,
    ) -> None:
        self.server = server
        self.options = options
        self.table = table
        self.slow_answers = slow_answers
        self.auth = auth
        self.client_key = client_key
        self.stateless = stateless
        self.json_response = json_response
        self.stateless_running = 0  # requests of the stateless mode in flight

    def check_version(self, headers: dict[str, str]) -> str | None:
        version = headers.get("mcp-protocol-version")
        if version is not None and version not in self.server.versions:
            return f"Bad Request: unsupported MCP-Protocol-Version {version!r} (supported: {', '.join(self.server.versions)})"
        return None

    def version_of(self, headers: dict[str, str]) -> str:
        """The revision a POST speaks: its session's, else its header's."""
        session = self.table.sessions.get(headers.get("mcp-session-id", ""))
        if session is not None and session.session.protocol_version:
            return session.session.protocol_version
        return headers.get("mcp-protocol-version", DEFAULT_HEADER_VERSION).strip(" \t")

    # ------------------------------------------------------------ POST

    async def post(
        self,
        probe: Envelope | list[Envelope],
        body: bytes,
        scope: Scope,
        receive: Receive,
        send: Send,
        headers: dict[str, str],
        principal: Principal | None,
    ) -> None:
        items = probe if isinstance(probe, list) else [probe]
        single = None if isinstance(probe, list) else probe
        errors: list[bytes] = []  # the answers to a batch's members that are no valid message
        if not items:
            await refuse(send, 400, probe, jsonrpc.INVALID_REQUEST, "Invalid request: empty batch")
            return
        if single is None and not lifecycle.allows_batches(self.version_of(headers)):
            await refuse(
                send,
                400,
                probe,
                jsonrpc.INVALID_REQUEST,
                "Invalid request: this protocol revision has no JSON-RPC batches",
            )
            return
        if single is not None:
            problem = post_problem(single)
            if problem is not None:
                await refuse(send, 400, single, jsonrpc.INVALID_REQUEST, problem)
                return
        elif any(post_problem(item) is not None for item in items):
            body, items, errors = _sort_batch(body, items)
            if not items:
                await _send_errors(send, 400, errors)
                return
        requests = [
            i.id
            for i in items
            if isinstance(i.method, str) and i.id is not msgspec.UNSET and i.id is not None
        ]
        initializing = any(i.method == "initialize" for i in items)
        if initializing and len(items) > 1:
            await refuse(
                send,
                400,
                probe,
                jsonrpc.INVALID_REQUEST,
                "Invalid request: initialize must be sent alone",
            )
            return
        if not initializing:
            problem = self.check_version(headers)
            if problem is not None:
                await refuse(send, 400, probe, jsonrpc.INVALID_REQUEST, problem)
                return

        # Who sent it, as the per-client limits name clients: for the app's handlers too.
        client = self.client_key(scope)
        identity = ClientIdentity(client)
        if self.stateless:
            if self.stateless_running + len(requests) > self.options.max_concurrent_requests:
                await refuse(
                    send, 429, probe, jsonrpc.INVALID_REQUEST, "Too many requests in flight"
                )
                return
            self.stateless_running += len(requests)
            try:
                await self._post_alone(
                    body,
                    requests,
                    initializing,
                    headers,
                    send,
                    receive,
                    principal,
                    identity,
                    single,
                    errors,
                )
            finally:
                self.stateless_running -= len(requests)
            return
        table = self.table
        if initializing:
            opened = await table.open(
                secrets.token_urlsafe(32),  # 256 bits from the OS CSPRNG
                owner_of(principal),
                client,
            )
            if isinstance(opened, str):
                await refuse(send, 503, probe, jsonrpc.INTERNAL_ERROR, opened)
                return
            http_session = opened
        else:
            found, status, reason = await table.find(headers, owner_of(principal))
            if found is None:
                code = jsonrpc.INTERNAL_ERROR if status == 503 else jsonrpc.INVALID_REQUEST
                await refuse(send, status, probe, code, reason)
                return
            http_session = found
            if requests and not http_session.used:
                table.used(http_session)
        if http_session.transport.unanswered + len(requests) > self.options.max_concurrent_requests:
            await refuse(
                send,
                429,
                probe,
                jsonrpc.INVALID_REQUEST,
                "Too many requests in flight for this session",
            )
            return
        await self._answer(
            http_session,
            body,
            requests,
            send,
            receive,
            principal,
            identity,
            single,
            headers,
            errors,
        )

    async def _answer(
        self,
        http_session: HttpSession,
        body: bytes,
        requests: list[RequestId],
        send: Send,
        receive: Receive,
        principal: Principal | None,
        identity: ClientIdentity,
        single: Envelope | None = None,
        headers: dict[str, str] | None = None,
        errors: Sequence[bytes] = (),
    ) -> None:
        """``identity``: the POST's client;
        ``single``: the POST's one message, as decoded (None for a batch);
        ``headers``: the POST's, for the handlers (in their ``ctx.extra``);
        ``errors``: the answers to the batch's members that are no valid message,
        sent with the responses to the others."""
        transport = http_session.transport
        extra = http_session.id_headers
        if not requests:
            if not await utf8_or_refused(body, send):
                return
            refused = await self.table.deliver(http_session, body, principal, identity)
            if refused is not None:
                await plain(send, 503, refused)
            elif errors:  # the batch's other members were delivered
                await _send_errors(send, 400, errors, extra)
            else:
                await plain(send, 202, "", extra)
            return
        taken = transport.taken_id(requests)
        if taken is not None:
            # Its stream would take the place of the one waiting for the
            # request that has the id, which would then never be answered.
            await refuse(
                send,
                400,
                single or Envelope(id=taken, method=""),  # a batch: under the member's id
                jsonrpc.INVALID_REQUEST,
                f"Invalid request: id {taken!r} is already in use",
            )
            return
        stream = transport.open_stream(requests, json=self.json_response)
        queue = stream.attach(0)
        for error in errors:  # first on the stream: they are known before any handler runs
            stream.send(error)
        http_session.in_flight += len(requests)
        try:
            http_session.feed(
                body,
                principal,
                identity,
                single,
                headers,
                # The SSE answer's: a handler may end it for the client to resume.
                (
                    None
                    if self.json_response
                    else partial(transport.close_request_stream, requests[0])
                ),
            )
            if self.json_response:
                await self._reply_json(
                    stream,
                    queue,
                    len(requests) + len(errors),
                    send,
                    receive,
                    extra,
                    batch=body.lstrip()[:1] == b"[",
                )
            else:
                await send_stream(
                    stream,
                    queue,
                    send,
                    receive,
                    extra,
                    retry_ms=self.options.retry_ms,
                    slow_answers=self.slow_answers,
                    # After feed: an initialize, answered there, has set the version
                    # (if not, no priming event, which every client can read).
                    prime=lifecycle.primes_streams(http_session.session.protocol_version),
                    short=True,
                )
        finally:
            http_session.in_flight -= len(requests)

    async def _post_alone(
        self,
        body: bytes,
        requests: list[RequestId],
        initializing: bool,
        headers: dict[str, str],
        send: Send,
        receive: Receive,
        principal: Principal | None,
        identity: ClientIdentity,
        single: Envelope | None,
        errors: Sequence[bytes],
    ) -> None:
        """A POST of the stateless mode: served by a session made for it alone."""
        http_session = HttpSession(None, self.server, self.options)
        if not initializing:
            http_session.session.adopt(headers.get("mcp-protocol-version", DEFAULT_HEADER_VERSION))
        try:
            await self._answer(
                http_session,
                body,
                requests,
                send,
                receive,
                principal,
                identity,
                single,
                headers,
                errors,
            )
        finally:
            await http_session.close()

    async def _reply_json(
        self,
        stream: EventStream,
        queue: Events,
        expected: int,
        send: Send,
        receive: Receive,
        extra: Sequence[tuple[bytes, bytes]],
        batch: bool,
    ) -> None:
        """``expected``: how many responses make the answer. The client is
        watched only if they are not all there after one pass of the event
        loop (a handler that answers without waiting has answered by then):
        a quick answer costs no watch and no wait on the queue."""
        responses: list[bytes] = []
        await one_pass()
        watch: ClientWatch | None = None  # made once the answer has to be waited for
        try:
            while len(responses) < expected:
                if watch is None and queue.empty():
                    watch = ClientWatch(receive, self.slow_answers)
                event = queue.get_nowait() if watch is None else await next_or_gone(queue, watch)
                if isinstance(event, Gone):
                    return  # the client went away: nobody to answer
                if event is None:
                    break
                stream.took(queue, event)
                message = event[1]
                if is_response(message):
                    responses.append(message)
        finally:
            if watch is not None:
                watch.close()
        refusal = (
            scope_refusal(self.auth, stream.error) if len(responses) == 1 and not batch else None
        )
        if refusal is not None:
            await send_answer(send, refusal)
            return
        body = b"[" + b",".join(responses) + b"]" if batch else (responses[0] if responses else b"")
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/json"), *extra],
            }
        )
        await send({"type": "http.response.body", "body": body})

    # ------------------------------------------------------------ GET and DELETE

    async def get(
        self,
        receive: Receive,
        send: Send,
        headers: dict[str, str],
        principal: Principal | None,
        client: str,
    ) -> None:
        if "text/event-stream" not in headers.get("accept", "") and "*/*" not in headers.get(
            "accept", ""
        ):
            await plain(send, 406, "Not Acceptable: Accept must list text/event-stream")
            return
        if self.stateless:
            await plain(
                send,
                405,
                "Method Not Allowed: stateless server has no GET stream",
                [(b"allow", b"POST")],
            )
            return
        http_session, status, reason = await self.table.find(headers, owner_of(principal))
        if http_session is None:
            await plain(send, status, reason)
            return
        problem = self.check_version(headers)
        if problem is not None:
            await plain(send, 400, problem)
            return
        await self.table.serve_get(http_session, headers, send, receive, client)

    async def delete(
        self, send: Send, headers: dict[str, str], principal: Principal | None
    ) -> None:
        if self.stateless:
            await plain(
                send,
                405,
                "Method Not Allowed: stateless server has no sessions",
                [(b"allow", b"POST")],
            )
            return
        http_session, status, reason = await self.table.find(headers, owner_of(principal))
        if http_session is None:
            await plain(send, status, reason)
            return
        refused = await self.table.end(http_session)
        if refused is not None:
            await plain(send, 503, refused)
            return
        await plain(send, 200, "")


def _sort_batch(body: bytes, items: list[Envelope]) -> tuple[bytes, list[Envelope], list[bytes]]:
    """A batch some of whose members are no valid message, sorted as JSON-RPC 2.0 answers
    it: the others (as a batch, and their envelopes), and an error for each invalid one
    (under its id when a request's can be read, else null)."""
    kept: list[msgspec.Raw] = []
    valid: list[Envelope] = []
    errors: list[bytes] = []
    for member, item in zip(batch_members(body), items, strict=True):
        problem = post_problem(item)
        if problem is None:
            kept.append(member)
            valid.append(item)
        else:
            errors.append(jsonrpc.error_bytes(reply_id(item), jsonrpc.INVALID_REQUEST, problem))
    return b"[" + b",".join(kept) + b"]", valid, errors


async def _send_errors(
    send: Send, status: int, errors: Sequence[bytes], extra: Sequence[tuple[bytes, bytes]] = ()
) -> None:
    """The answer to a batch with no request left to serve: its members' errors, as an array."""
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), *extra],
        }
    )
    await send({"type": "http.response.body", "body": b"[" + b",".join(errors) + b"]"})
