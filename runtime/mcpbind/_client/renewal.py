"""Starting a client session again when the server ends it.

A Streamable HTTP server that ends a session answers HTTP 404 to everything
naming it, and the client "MUST start a new session by sending a new
InitializeRequest without a session ID attached" (basic/transports,
2025-03-26 on). The transport notices the 404 and holds what it was about to
send; a :class:`Renewer`, which the client session hands the transport, does
the rest at the session's level:

* the handshake again, with the same client info and capabilities, asking
  for the revision the old session spoke (a server answering another one
  fails the renewal: calls already made were shaped for that revision);
* what the old session had set up on the server, sent again once the new
  session is open: the resources subscribed to (``resources/subscribe``,
  less those unsubscribed since) and the log level (``logging/setLevel``);
  a refusal of one of them is logged, the session carries on;
* a report: a log line, and the client's ``on_renewed`` callback with a
  :class:`SessionRenewal`.

Which calls the transport sends again is its business (Streamable HTTP:
only the requests whose POST was answered 404, which the server refused
unread; never one it may have run).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from .._core import jsonrpc
from .._core.jsonrpc import McpError
from .._core.wire import NamesSession
from ..methods import MethodSpec

logger = logging.getLogger(__name__)

KEPT = frozenset({"resources/subscribe", "resources/unsubscribe", "logging/setLevel"})
"""The requests that set up something a session keeps on the server."""


@dataclass(frozen=True)
class SessionRenewal:
    """A session the server ended (HTTP 404), and the one that replaced it."""

    previous_session_id: str | None
    session_id: str | None
    protocol_version: str
    number: int
    """How many times this client session was renewed, this one included."""
    restored: tuple[str, ...] = ()
    """What was set up again on the new session: ``resources/subscribe <uri>``,
    ``logging/setLevel <level>``."""
    not_restored: tuple[str, ...] = ()
    """What the new session refused to set up again, each with the reason."""


RenewalCallback = Callable[[Any, SessionRenewal], Awaitable[None] | None]
"""Called with the client session and the renewal once a new session replaced an ended one."""


class Renewable(Protocol):
    """What a renewer needs of its client session."""

    protocol_version: str
    transport: Any

    @property
    def is_closed(self) -> bool: ...

    async def handshake(self, version: str) -> None:
        """Initialize (and send notifications/initialized) asking for ``version``."""

    async def request(self, spec: MethodSpec[Any, Any], params: Any) -> Any: ...


class Renewer:
    """Starts a client session again after its server ended it; remembers
    what the session set up on the server so as to set it up again."""

    def __init__(self, session: Renewable, on_renewed: RenewalCallback | None) -> None:
        self.session = session
        self.on_renewed = on_renewed
        self.renewals = 0
        self._kept: dict[tuple[str, str], tuple[MethodSpec[Any, Any], Any]] = {}
        self._restoring: set[asyncio.Task[None]] = set()

    def note(self, spec: MethodSpec[Any, Any], params: Any) -> None:
        """``spec`` with ``params`` was answered with success: remember what it set up."""
        method = spec.method
        if method == "logging/setLevel":
            self._kept[(method, "")] = (spec, params)
            return
        uri = getattr(params, "uri", None)
        if not isinstance(uri, str):
            return
        if method == "resources/subscribe":
            self._kept[(method, uri)] = (spec, params)
        else:
            self._kept.pop(("resources/subscribe", uri), None)

    async def renew(self, previous: str | None) -> None:
        """The transport's hook: a new session, asking for the revision the
        old one spoke; raises when the server refuses it."""
        session = self.session
        version = session.protocol_version
        await session.handshake(version)
        if session.protocol_version != version:
            raise McpError(
                jsonrpc.CONNECTION_CLOSED,
                f"the new session speaks {session.protocol_version}, the ended one {version}",
            )
        self.renewals += 1
        # Not awaited here: these requests go out once the transport lets
        # requests through again, which it does when this hook returns.
        task = asyncio.get_running_loop().create_task(self._restore(previous, self.renewals))
        self._restoring.add(task)
        task.add_done_callback(self._restoring.discard)

    async def _restore(self, previous: str | None, number: int) -> None:
        session = self.session
        restored: list[str] = []
        refused: list[str] = []
        for (method, key), (spec, params) in list(self._kept.items()):
            what = f"{method} {key or getattr(params, 'level', '')}".rstrip()
            try:
                await session.request(spec, params)
            except McpError as error:
                refused.append(f"{what}: {error.message}")
                logger.warning("the new MCP session refused %s: %s", what, error.message)
            else:
                restored.append(what)
            if session.is_closed:
                return
        renewal = SessionRenewal(
            previous,
            session.transport.session_id if isinstance(session.transport, NamesSession) else None,
            session.protocol_version,
            number,
            tuple(restored),
            tuple(refused),
        )
        logger.info(
            "continuing in MCP session %s, which replaced the ended session %s",
            renewal.session_id,
            previous,
        )
        if self.on_renewed is not None:
            try:
                outcome = self.on_renewed(session, renewal)
                if inspect.isawaitable(outcome):
                    await outcome
            except Exception:  # the application's callback: its failure is not the session's
                logger.exception("the on_renewed callback failed")


__all__ = ["KEPT", "Renewable", "RenewalCallback", "Renewer", "SessionRenewal"]
