"""What a proxied server sends the proxy, relayed to the front.

The proxy's client session to a backend declares sampling, elicitation (form
and URL modes) and roots, so a backend may ask for them. A question goes to
the front request it belongs to, where the backend says which: a 2026-07-28
backend asks within the answer to one call (an input-required result), a
Streamable HTTP backend on the response stream of the call it is answering.
A backend over stdio (or the legacy HTTP+SSE transport) does not say: its
question goes to the newest front request in flight to it, which may be
another client's when several call it at once. It is asked of that request's
client in the client's own revision:

- a front client that does not declare the capability (for a URL-mode
  elicitation, ``elicitation.url``) is not asked: the backend gets ``-32601``
  (Method not found), the roots page's "Client does not support roots:
  ``-32601`` (Method not found)", used for all three;
- a 2026-07-28 front client is asked through input-required results
  (:class:`Rounds`): the front's ``tools/call``, ``prompts/get`` or
  ``resources/read`` (the revision's requests that may take rounds) is
  answered with an input-required result carrying the backend's question,
  while the backend call waits; the client's retry brings the answer, which
  goes to the backend, and is answered with the call's result or the next
  question. The waiting call is kept by this process (``requestState`` names
  it) for :data:`ROUND_TIMEOUT` seconds between rounds; a retry that reaches
  another process, or comes later, starts the call again. Its
  ``completion/complete`` cannot take rounds: the question is refused as
  above. A tool call run as a task of the tasks extension (:class:`InTask`)
  asks through the task's input requests instead;
- a request while no front request is in flight (a backend asking for roots
  as it connects) is refused as above: there is no client to ask, and
  answering "no roots" would be remembered by the backend as the truth.

List-changed notifications refresh the proxied lists, log messages go to the
front request in flight, and resource updates reach the front's subscribers.
A front client's ``notifications/roots/list_changed`` is passed on to the
backends that asked for roots.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable, Coroutine, Mapping
from typing import Any, Protocol

import msgspec

from mcpbind_protocol import v2026_07_28 as mcp

from .. import codec
from .._core import jsonrpc, lifecycle
from .._core.jsonrpc import McpError
from ..methods import RequestContext

# The client capability each relayed request needs, and its answer's type.
_ASKED: dict[str, tuple[str, type]] = {
    "sampling/createMessage": ("sampling", mcp.CreateMessageResult),
    "elicitation/create": ("elicitation", mcp.ElicitResult),
    "roots/list": ("roots", mcp.ListRootsResult),
}
# Members of a backend's request that belong to its hop only.
_HOP_MEMBERS = ("_meta", "task")
# The key prefix of each question in an input-required result.
_KEYS = {"sampling/createMessage": "sample", "elicitation/create": "elicit", "roots/list": "roots"}
ROUND_TIMEOUT = 300.0
"""Seconds a backend call waits for the 2026-07-28 client's next round."""
STATE_PREFIX = "proxied:"
"""How the requestState of a proxied call's input-required result begins."""


class Rounds:
    """A 2026-07-28 front's request (``tools/call``, ``prompts/get``,
    ``resources/read``) whose backend asks questions, over the rounds of
    input-required results that carry them."""

    def __init__(self, ctx: RequestContext, flavor: Any) -> None:
        self.token = secrets.token_urlsafe(18)
        self.ctx = ctx  # the current round's request (progress and logs go there)
        self.flavor = flavor
        self.call: asyncio.Task[object] | None = None
        self.questions: asyncio.Queue[tuple[str, object]] = asyncio.Queue()
        self.waiting: dict[str, tuple[asyncio.Future[object], str]] = {}
        self.asked = 0
        self.expiry: asyncio.TimerHandle | None = None

    @property
    def state(self) -> str:
        return STATE_PREFIX + self.token

    async def ask(self, method: str, params: dict[str, object]) -> object:
        """Put a backend's question to the front and wait for the round that answers it."""
        key = f"{_KEYS[method]}-{self.asked}"
        self.asked += 1
        future: asyncio.Future[object] = asyncio.get_running_loop().create_future()
        self.waiting[key] = (future, method)
        self.questions.put_nowait((key, self.flavor.input_request(method, params)))
        return await future

    def answer(self, responses: object) -> None:
        """The answers a retry carries, to the questions waiting for them."""
        if not isinstance(responses, Mapping):
            return
        for key, value in responses.items():
            found = self.waiting.pop(key, None)
            if found is not None and not found[0].done():
                found[0].set_result(msgspec.to_builtins(value))


class InTask(Rounds):
    """A 2026-07-28 front's ``tools/call`` run as a task of the tasks extension:
    the backend's questions are the task's input requests (the task shows
    ``input_required`` until the client's ``tasks/update`` answers them)."""

    def __init__(self, ctx: RequestContext, flavor: object, task: Any) -> None:
        super().__init__(ctx, flavor)
        self.task = task  # the extension's TaskContext

    async def ask(self, method: str, params: dict[str, Any]) -> object:
        answer = await self.task.input(self.flavor.input_request(method, params))
        return msgspec.to_builtins(answer)


class WaitingCalls:
    """A proxy's 2026-07-28 calls whose backend asked a question, each waiting
    for its client's next round, by the token of its ``requestState``."""

    def __init__(self) -> None:
        self._calls: dict[str, Rounds] = {}

    async def run(
        self,
        start: Callable[[Rounds], Coroutine[object, object, object]],
        params: object,
        ctx: RequestContext,
        flavor: Any,
    ) -> tuple[object, bool]:
        """A 2026-07-28 front's call: (its result, True), or (an input-required
        result asking the backend's question, False) while the backend call
        waits for the round that answers (see :class:`Rounds`)."""
        state = getattr(params, "request_state", None)
        rounds = None
        if isinstance(state, str) and state.startswith(STATE_PREFIX):
            rounds = self._calls.get(state.removeprefix(STATE_PREFIX))
        if rounds is None:
            rounds = Rounds(ctx, flavor)
            rounds.call = asyncio.get_running_loop().create_task(start(rounds))
            self._calls[rounds.token] = rounds
        else:
            rounds.ctx = ctx
            rounds.answer(getattr(params, "input_responses", None))
        if rounds.expiry is not None:
            rounds.expiry.cancel()
        call = rounds.call
        assert call is not None
        question = asyncio.ensure_future(rounds.questions.get())
        try:
            await asyncio.wait({call, question}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not call.done():
                # Asked, or the front gave up this round: the call waits for the next one.
                rounds.expiry = asyncio.get_running_loop().call_later(
                    ROUND_TIMEOUT, self._expire, rounds.token
                )
            if not question.done():
                question.cancel()
        if call.done():
            self._calls.pop(rounds.token, None)
            return call.result(), True
        key, request = question.result()
        asked = flavor.type_named("InputRequiredResult")(
            input_requests={key: request}, request_state=rounds.state
        )
        return asked, False

    def _expire(self, token: str) -> None:
        rounds = self._calls.pop(token, None)
        if rounds is not None and rounds.call is not None:
            rounds.call.cancel()


class Relaying(Protocol):
    """What the handlers need of the proxy."""

    prefix: str
    session: Any  # its ClientSession to the backend, while connected

    def front(self, asked: RequestContext | None = None) -> RequestContext | Rounds | None: ...

    def refresh_later(self, kinds: tuple[str, ...]) -> None: ...

    async def relay_log(self, params: object, ctx: RequestContext) -> None: ...

    async def relay_resource_updated(self, uri: str) -> None: ...


class BackendHandlers(mcp.ClientHandlers):
    """The proxy's answers to one backend (one instance per proxied server)."""

    def __init__(self, proxy: Relaying) -> None:
        self.proxy = proxy
        self.asked_roots = False  # whether the backend ever asked for roots

    async def roots_changed(self) -> None:
        """A front client's ``notifications/roots/list_changed``: passed on to a
        backend that asked for roots (its next ``roots/list`` is asked of the
        client whose request it is then answering, as every question is)."""
        session = self.proxy.session
        if not self.asked_roots or session is None or session.is_closed:
            return
        spec = lifecycle.revision(session.protocol_version).all_methods.get(
            "notifications/roots/list_changed"
        )
        if spec is not None:  # not at 2026-07-28, whose backends ask each time
            await session.notify(spec, None)

    async def on_tool_list_changed(self, params: object, ctx: RequestContext) -> None:
        self.proxy.refresh_later(("tools",))

    async def on_prompt_list_changed(self, params: object, ctx: RequestContext) -> None:
        self.proxy.refresh_later(("prompts",))

    async def on_resource_list_changed(self, params: object, ctx: RequestContext) -> None:
        self.proxy.refresh_later(("resources", "templates"))

    async def on_resource_updated(self, params: Any, ctx: RequestContext) -> None:
        await self.proxy.relay_resource_updated(params.uri)

    async def on_logging_message(self, params: Any, ctx: RequestContext) -> None:
        await self.proxy.relay_log(params, ctx)

    async def create_message(self, params: object, ctx: RequestContext) -> Any:
        return await ask_front(self.proxy, "sampling/createMessage", params, ctx)

    async def elicit(self, params: Any, ctx: RequestContext) -> Any:
        return await ask_front(self.proxy, "elicitation/create", params, ctx)

    async def list_roots(self, params: object, ctx: RequestContext) -> Any:
        self.asked_roots = True
        return await ask_front(self.proxy, "roots/list", params, ctx)


async def ask_front(
    proxy: Relaying, method: str, params: object, request: RequestContext
) -> object:
    """The front client's answer to a backend's ``method`` request (see the module docstring)."""
    capability, answer_type = _ASKED[method]
    asking = proxy.front(request)
    if asking is None:
        raise _not_found(method, f"no request of a client of {proxy.prefix!r} is in flight to ask")
    front = asking.ctx if isinstance(asking, Rounds) else asking
    wire: dict[str, object] = msgspec.to_builtins(params) if params is not None else {}
    # The proxy declares every elicitation mode to its backends; a front client has its own.
    needed = (capability, "url") if wire.get("mode") == "url" else (capability,)
    if not lifecycle.has_capability(front.client_capabilities, needed):
        named = ".".join(needed)
        raise _not_found(method, f"the client does not declare the {named} capability")
    for member in _HOP_MEMBERS:
        wire.pop(member, None)
    if isinstance(asking, Rounds):
        try:
            answer = await asking.ask(method, wire)
        except msgspec.ValidationError as error:
            raise _unfit(method, front, error) from None
        return codec.convert(answer, answer_type)
    if front.stateless:
        # Its completion/complete: the revision's input-required results are for
        # tools/call, prompts/get and resources/read only (INPUT_REQUIRED_METHODS).
        raise _not_found(
            method,
            f"the client speaks {front.protocol_version}, where only tools/call, prompts/get "
            "and resources/read ask it",
        )
    spec = lifecycle.revision(front.protocol_version).all_methods.get(method)
    if spec is None:
        raise _not_found(method, f"the client speaks {front.protocol_version}, without {method}")
    if needed == ("elicitation", "url"):
        # The proxy's handlers speak 2026-07-28, whose URL mode has no elicitationId;
        # a handshake client needs one, unique for its server, which the app is to it.
        wire.setdefault("elicitationId", secrets.token_urlsafe(16))
    try:
        asked = codec.convert(wire, spec.params) if spec.params is not None else None
    except msgspec.ValidationError as error:
        raise _unfit(method, front, error) from None
    answer = await front.peer.request(spec, asked)
    return codec.convert(msgspec.to_builtins(answer), answer_type)


def _unfit(method: str, front: RequestContext, error: Exception) -> McpError:
    return McpError(
        jsonrpc.INVALID_PARAMS,
        f"Invalid params: {method} cannot be put to a {front.protocol_version} client: {error}",
    )


def _not_found(method: str, why: str) -> McpError:
    return McpError(
        jsonrpc.METHOD_NOT_FOUND, f"Method not found: {method} ({why})", {"reason": why}
    )
