"""What a proxied server sends the proxy, relayed to the front.

The proxy's client session to a backend declares sampling, elicitation and
roots, so a backend may ask for them. The backend's session does not say
which of its requests a question belongs to, so it goes to the front request
the proxy is forwarding to that backend (the newest, when several are in
flight), and is asked of that request's client in the client's own revision:

- a front client that does not declare the capability is not asked: the
  backend gets ``-32601`` (Method not found), the roots page's "Client does
  not support roots: ``-32601`` (Method not found)", used for all three;
- a 2026-07-28 front client is asked through input-required results, which
  the proxy does not relay yet: refused the same way;
- a request while no front request is in flight (a backend asking for roots
  as it connects) is refused as above: there is no client to ask, and
  answering "no roots" would be remembered by the backend as the truth.

List-changed notifications refresh the proxied lists, log messages go to the
front request in flight, and resource updates reach the front's subscribers.
"""

from __future__ import annotations

from typing import Any, Protocol

import msgspec

from mcp_protocol import v2026_07_28 as mcp

from .. import codec, jsonrpc, lifecycle
from ..jsonrpc import McpError
from ..methods import RequestContext

# The client capability each relayed request needs, and its answer's type.
_ASKED: dict[str, tuple[str, type[Any]]] = {
    "sampling/createMessage": ("sampling", mcp.CreateMessageResult),
    "elicitation/create": ("elicitation", mcp.ElicitResult),
    "roots/list": ("roots", mcp.ListRootsResult),
}
# Members of a backend's request that belong to its hop only.
_HOP_MEMBERS = ("_meta", "task")


class Relaying(Protocol):
    """What the handlers need of the proxy."""

    prefix: str

    def front(self) -> RequestContext | None: ...

    def refresh_later(self, kinds: tuple[str, ...]) -> None: ...

    async def relay_log(self, params: Any) -> None: ...

    async def relay_resource_updated(self, uri: str) -> None: ...


class BackendHandlers(mcp.ClientHandlers):
    """The proxy's answers to one backend (one instance per proxied server)."""

    def __init__(self, proxy: Relaying) -> None:
        self.proxy = proxy

    async def on_tool_list_changed(self, params: Any, ctx: RequestContext) -> None:
        self.proxy.refresh_later(("tools",))

    async def on_prompt_list_changed(self, params: Any, ctx: RequestContext) -> None:
        self.proxy.refresh_later(("prompts",))

    async def on_resource_list_changed(self, params: Any, ctx: RequestContext) -> None:
        self.proxy.refresh_later(("resources", "templates"))

    async def on_resource_updated(self, params: Any, ctx: RequestContext) -> None:
        await self.proxy.relay_resource_updated(params.uri)

    async def on_logging_message(self, params: Any, ctx: RequestContext) -> None:
        await self.proxy.relay_log(params)

    async def create_message(self, params: Any, ctx: RequestContext) -> Any:
        return await ask_front(self.proxy, "sampling/createMessage", params)

    async def elicit(self, params: Any, ctx: RequestContext) -> Any:
        return await ask_front(self.proxy, "elicitation/create", params)

    async def list_roots(self, params: Any, ctx: RequestContext) -> Any:
        return await ask_front(self.proxy, "roots/list", params)


async def ask_front(proxy: Relaying, method: str, params: Any) -> Any:
    """The front client's answer to a backend's ``method`` request (see the module docstring)."""
    capability, answer_type = _ASKED[method]
    front = proxy.front()
    if front is None:
        raise _not_found(method, f"no request of a client of {proxy.prefix!r} is in flight to ask")
    if front.modern:
        raise _not_found(
            method,
            f"the client speaks {front.protocol_version}, whose input-required results "
            "the proxy does not relay",
        )
    if not lifecycle.has_capability(front.client_capabilities, (capability,)):
        raise _not_found(method, f"the client does not declare the {capability} capability")
    spec = lifecycle.revision(front.protocol_version).all_methods.get(method)
    if spec is None:
        raise _not_found(method, f"the client speaks {front.protocol_version}, without {method}")
    wire: dict[str, Any] = msgspec.to_builtins(params) if params is not None else {}
    for member in _HOP_MEMBERS:
        wire.pop(member, None)
    try:
        asked = codec.convert(wire, spec.params) if spec.params is not None else None
    except msgspec.ValidationError as error:
        raise McpError(
            jsonrpc.INVALID_PARAMS,
            f"Invalid params: {method} cannot be put to a {front.protocol_version} client: {error}",
        ) from None
    answer = await front.peer.request(spec, asked)
    return codec.convert(msgspec.to_builtins(answer), answer_type)


def _not_found(method: str, why: str) -> McpError:
    return McpError(
        jsonrpc.METHOD_NOT_FOUND, f"Method not found: {method} ({why})", {"reason": why}
    )
