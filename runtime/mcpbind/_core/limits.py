"""Per-client quotas, so that no one client takes every place of a shared cap.

A client is named by a key: its authenticated principal (see
``ownership.PRINCIPAL_SCOPE_KEY``), else its peer address (behind a trusted
proxy, the address the proxy forwarded: :class:`TrustedProxies`), unless the
app is given a ``client_key`` of its own. The transports hand that name to
the app with each request (:class:`ClientIdentity`), for its own limits. Each
:class:`Quota` counts the places a key holds (sessions, open streams) and
forgets keys that hold none, so it costs nothing for clients that left.
"""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Literal

import msgspec

from .ownership import PRINCIPAL_SCOPE_KEY, scope_principal_key
from .stepping import Pending, step

if TYPE_CHECKING:  # the ASGI types only: a stdio server loads no HTTP module
    from .._transports.http.asgi import Message, Receive, Scope

ClientKey = Callable[["Scope"], str]
"""Names the client of an ASGI request from its scope."""


# A Struct, not a dataclass: one is made for every POST (a frozen dataclass costs 5x more).
class ClientIdentity(msgspec.Struct, frozen=True):
    """Who sent a request, as the transport that read it names its client.

    ``kind`` ``"http"``: ``key`` is what the HTTP app's :data:`ClientKey` made of
    the request (by default the principal, else the peer's address, or the one
    a proxy of ``trusted_proxies`` forwarded), the key its own per-client limits
    count. ``"local"``: the one peer of a stdio or in-memory connection
    (:func:`local_client`: :data:`LOCAL`, or the principal it was given).
    :data:`SERVER`: a request the server makes of its own handlers (the tool
    listing behind the ``Mcp-Param-*`` check), no client's."""

    key: str
    kind: Literal["http", "local", "server"] = "http"


LOCAL = ClientIdentity("local", "local")
"""The client of stdio and in-memory connections: the process at the other end."""

SERVER = ClientIdentity("server", "server")
"""The server itself, asking its own handlers."""


def local_client(principal: Any) -> ClientIdentity:
    """The client of a stdio or in-memory connection: :data:`LOCAL`, or the
    principal's key where the connection was given one (as over HTTP)."""
    key = getattr(principal, "key", None)
    return LOCAL if not isinstance(key, str) else ClientIdentity(f"principal:{key}", "local")


def peer_key(scope: Scope) -> str:
    """The default client key: the authenticated principal where an
    authorization layer put one in the scope, else the peer's address (all
    ports of one host are one client)."""
    if scope.get(PRINCIPAL_SCOPE_KEY) is not None:  # looked at first: most requests carry none
        principal = scope_principal_key(scope)
        if principal is not None:
            return principal
    client = scope.get("client")
    if isinstance(client, (tuple, list)) and client:
        return f"peer:{client[0]}"
    return "peer:unknown"


class TrustedProxies:
    """The proxies (addresses or networks, ``"10.0.0.0/8"``) whose forwarded
    client address is believed.

    A request whose peer is one of them is keyed by the address its proxies
    forwarded: of ``X-Forwarded-For`` (every line of it, in order), else of
    ``Forwarded``'s ``for=`` parameters, the right-most hop that is not itself
    a trusted proxy. Hops to the left of it were written by whoever sent the
    request and are never believed. A request from any other peer is keyed
    by its peer address, whatever headers it carries."""

    def __init__(self, proxies: Iterable[str]) -> None:
        networks = []
        for proxy in proxies:
            try:
                networks.append(ipaddress.ip_network(proxy.strip(), strict=False))
            except ValueError:
                raise ValueError(
                    f"trusted_proxies: {proxy!r} is neither an IP address nor a network"
                ) from None
        self.networks = tuple(networks)

    def trusts(self, address: str) -> bool:
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return False
        return any(ip in network for network in self.networks)

    def client_address(self, scope: Scope) -> str | None:
        """The client's address: the forwarded one when the peer is trusted."""
        client = scope.get("client")
        peer = str(client[0]) if isinstance(client, (tuple, list)) and client else None
        if peer is None or not self.trusts(peer):
            return peer
        hops = _forwarded_hops(scope.get("headers", ()))
        for hop in reversed(hops):
            if not self.trusts(hop):
                return hop
        return hops[0] if hops else peer

    def key(self, scope: Scope) -> str:
        """A :data:`ClientKey`: the principal, else the client's address (forwarded
        by a trusted proxy)."""
        principal = scope_principal_key(scope)
        if principal is not None:
            return principal
        address = self.client_address(scope)
        return "peer:unknown" if address is None else f"peer:{address}"


def _forwarded_hops(headers: Iterable[tuple[bytes, bytes]]) -> list[str]:
    """The addresses a request went through, first to last, as its proxies
    wrote them (X-Forwarded-For when there is one, else Forwarded)."""
    forwarded_for: list[str] = []
    forwarded: list[str] = []
    for name, value in headers:
        if name == b"x-forwarded-for":
            forwarded_for += [hop.strip() for hop in value.decode("latin-1").split(",")]
        elif name == b"forwarded":
            for element in value.decode("latin-1").split(","):
                for pair in element.split(";"):
                    key, _, hop = pair.strip().partition("=")
                    if key.lower() == "for":
                        forwarded.append(_bare_address(hop.strip().strip('"')))
    return [hop for hop in (forwarded_for or forwarded) if hop]


def _bare_address(node: str) -> str:
    """The address of a Forwarded node (``"[2001:db8::1]:4711"``, ``192.0.2.1:80``)."""
    if node.startswith("["):
        return node[1:].partition("]")[0]
    if node.count(":") == 1:
        return node.partition(":")[0]
    return node


class Quota:
    """Places held by client key, at most ``limit`` each (None: no limit)."""

    def __init__(self, limit: int | None) -> None:
        if limit is not None and limit <= 0:
            raise ValueError("a per-client limit must be positive (or None for none)")
        self.limit = limit
        self._held: dict[str, int] = {}

    def full(self, key: str) -> bool:
        return self.limit is not None and self._held.get(key, 0) >= self.limit

    def take(self, key: str) -> None:
        if self.limit is not None:  # with no limit, nothing to count
            self._held[key] = self._held.get(key, 0) + 1

    def enter(self, key: str) -> bool:
        """Take a place of ``key`` unless its places are all held (then False)."""
        limit = self.limit
        if limit is None:
            return True
        held = self._held.get(key, 0)
        if held >= limit:
            return False
        self._held[key] = held + 1
        return True

    def leave(self, key: str) -> None:
        """Give back a place of ``key`` (taken by take() or enter())."""
        if self.limit is None:
            return
        left = self._held.get(key, 0) - 1
        if left > 0:
            self._held[key] = left
        else:
            self._held.pop(key, None)


class BodyRefused(Exception):
    """A request body that is not read to its end: the HTTP status and why."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


class BodyBudget:
    """Bounds what request bodies cost while they arrive.

    A client that declares a body and sends it slowly, or never finishes,
    would hold its connection and up to the body limit in memory for as
    long as it likes: each body must arrive within ``timeout`` seconds
    (408 otherwise), and the bodies being read hold at most ``max_bytes``
    between them, app-wide (503 for the body that would pass it).

    The deadline is kept by one watch for all the reads, looking every
    ``timeout / 4`` seconds (at most 1 s), not by a timer per request: a
    slow body is refused up to that much after its deadline.
    """

    def __init__(self, max_bytes: int, timeout: float | None) -> None:
        self.max_bytes = max_bytes
        self.timeout = timeout
        self.buffered = 0  # bytes of bodies being read, not yet handed on
        self._reading: dict[asyncio.Task[Any], float] = {}  # task -> deadline (loop time)
        self._expired: set[asyncio.Task[Any]] = set()
        self._watch: asyncio.TimerHandle | None = None
        self._watch_loop: asyncio.AbstractEventLoop | None = None

    async def read(self, receive: Receive, limit: int) -> bytes:
        """The whole body (b"" if the client went away); BodyRefused past
        ``limit`` (413), the deadline (408) or the budget (503). The deadline
        is set when a ``receive()`` first has to wait: a body that has arrived
        whole when it is asked for (most small ones have) costs no deadline
        and no look-up of the reading task (a system call on CPython 3.11)."""
        first: Message | Pending[Message] | None = step(receive())
        if (
            type(first) is dict  # what servers pass; anything else takes the general way
            and not first.get("more_body", False)
            and first["type"] == "http.request"
        ):  # the whole body at once, as most are: nothing to hold or time
            body = first.get("body", b"")
            if type(body) is not bytes:
                body = bytes(body)
            self._admit(0, len(body), limit)
            return body
        task: asyncio.Task[Any] | None = None
        held = 0
        try:
            chunks: list[bytes] = []
            while True:
                if first is not None:
                    message, first = first, None
                else:
                    message = step(receive())
                if isinstance(message, Pending):
                    if task is None and self.timeout is not None:
                        task = asyncio.current_task()
                        assert task is not None
                        self._start(task)
                    message = await message.rest()
                if message["type"] == "http.disconnect":
                    return b""
                chunk = message.get("body", b"")
                self._admit(held, len(chunk), limit)
                held += len(chunk)
                self.buffered += len(chunk)
                chunks.append(chunk)
                if not message.get("more_body", False):
                    return b"".join(chunks)
        except asyncio.CancelledError:
            if task is not None and task in self._expired:
                self._expired.discard(task)
                if task.uncancel() == 0:
                    raise BodyRefused(
                        408, f"Request Timeout: the body did not arrive within {self.timeout} s"
                    ) from None
            raise
        finally:
            self.buffered -= held
            if task is not None:
                self._reading.pop(task, None)
                self._expired.discard(task)

    def _admit(self, held: int, more: int, limit: int) -> None:
        """Refuse ``more`` bytes of a body that holds ``held`` past its
        ``limit`` (413) or the budget of the bodies being read (503)."""
        if held + more > limit:
            raise BodyRefused(413, f"Request body larger than {limit} bytes")
        if self.buffered + more > self.max_bytes:
            raise BodyRefused(503, "Service Unavailable: too many request bodies being read")

    def _start(self, task: asyncio.Task[Any]) -> None:
        assert self.timeout is not None
        loop = task.get_loop()
        self._reading[task] = loop.time() + self.timeout
        if self._watch is None or self._watch_loop is not loop:
            self._watch_loop = loop
            self._watch = loop.call_later(self._tick(), self._look)

    def _tick(self) -> float:
        assert self.timeout is not None
        return min(self.timeout / 4, 1.0)

    def _look(self) -> None:
        loop = self._watch_loop
        assert loop is not None
        now = loop.time()
        for task, deadline in list(self._reading.items()):
            if deadline <= now and task not in self._expired:
                self._expired.add(task)
                task.cancel()
        self._watch = loop.call_later(self._tick(), self._look) if self._reading else None
