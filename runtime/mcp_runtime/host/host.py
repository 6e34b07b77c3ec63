"""The host: every server of a configuration behind one object.

``async with Host(config, handlers) as host:`` starts a supervised client per
server (concurrently, each negotiating its own revision), waits until each
has connected or failed once, and then offers the servers' tools, prompts,
resources and resource templates as one catalogue under collision-free names
(:mod:`mcp_runtime.host.names`), kept current through list-changed
notifications. Calls, reads, prompts and completions go to the server that
offers them. A server that cannot be reached, or is lost, is retried with
backoff; its entries leave the catalogue until it is back. Leaving the block
closes every session and ends every server process.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Coroutine, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from .. import codec, lifecycle
from ..client import Client, ClientSession
from ..jsonrpc import ConnectionClosed, McpError
from ..methods import ProgressCallback
from .catalogue import (
    KINDS,
    LISTS,
    Catalogue,
    HostPrompt,
    HostResource,
    HostResourceTemplate,
    HostTool,
    list_kind,
)
from .config import ConfigError, HostConfig, load_config, parse_config
from .connection import Authorize, Connection, RetryPolicy, ServerStatus
from .handlers import HostHandlers, handlers_factory
from .names import SEPARATOR, sanitise

if (
    TYPE_CHECKING
):  # the OAuth client needs the 'http' extra; it is imported by the application that uses it
    from .authorization import HostAuthorization

logger = logging.getLogger("mcp_runtime.host")

CALLBACK_GRACE = 1.0
"""Seconds a closing host waits for the application's callbacks still running."""


class HostError(Exception):
    """A call the host cannot route: an unknown name, an ambiguous URI, a server not connected."""


class Host:
    """Many MCP servers behind one object; see the module's description.

    ``config`` is a :class:`HostConfig`, a decoded configuration or a path to
    one. ``handlers`` answers the servers' requests (sampling, elicitation,
    roots) and hears their log messages and status. ``authorize`` gives the
    headers of each HTTP connection (per-server authorization); ``oauth``
    authorizes the entries whose ``auth`` is of type ``oauth``
    (:mod:`.authorization`). ``log_level``
    asks servers for log messages of that level and above. ``server_stderr``
    is where stdio servers' stderr goes (None: this process's).
    ``protocol_version`` is the revision each client asks for (default: the
    newest, met at an older one by servers that do not speak it).
    """

    def __init__(
        self,
        config: HostConfig | Mapping[str, Any] | str | os.PathLike[str],
        handlers: HostHandlers | None = None,
        *,
        name: str = "mcp-runtime-host",
        version: str = "0.1.0",
        retry: RetryPolicy | None = None,
        authorize: Authorize | None = None,
        oauth: HostAuthorization | None = None,
        log_level: str | None = None,
        server_stderr: int | None = None,
        protocol_version: str | None = None,
    ) -> None:
        # One entry that cannot be read (an unset ${VAR}) fails alone, as a lost server would.
        if isinstance(config, HostConfig):
            self.config = config
        elif isinstance(config, Mapping):
            self.config = parse_config(config, keep_broken=True)
        else:
            self.config = load_config(config, keep_broken=True)
        self.handlers = handlers if handlers is not None else HostHandlers()
        self.log_level = log_level
        self.protocol_version = protocol_version
        self._make_handlers = handlers_factory(self.handlers)
        self._catalogues: dict[str, Catalogue] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._refresh_locks: dict[tuple[str, str], asyncio.Lock] = {}
        self._changed: asyncio.Condition | None = None
        self._connections: dict[str, Connection] = {}
        self._identity = (name, version)
        self._retry = retry or RetryPolicy()
        self._authorize = authorize
        self._oauth = oauth
        for server in self.config.servers:
            if server.oauth is not None and oauth is None:
                raise ConfigError(
                    f"server {server.name!r} is authorized with OAuth: the Host needs oauth=HostAuthorization(...)"
                )
        self._server_stderr = server_stderr
        self._closing = False

    # ------------------------------------------------------------ lifetime

    async def __aenter__(self) -> Host:
        try:
            await self.start()
        except BaseException:  # cancelled while starting: no server is left running
            await self.aclose()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def start(self) -> None:
        """Connect to every server; returns once each has connected or failed once."""
        name, version = self._identity
        self._changed = asyncio.Condition()
        for server in self.config.servers:
            client = Client(
                name=name,
                version=version,
                handlers=self._make_handlers(server.name, self),
                default_timeout=server.request_timeout,
                log_level=self.log_level,
                protocol_version=self.protocol_version,
            )
            connection = Connection(
                server,
                client,
                retry=self._retry,
                on_ready=self._ready,
                on_lost=self._lost,
                on_status=self._status_changed,
                authorize=self._authorize,
                auth=(
                    self._oauth.provider(server)
                    if self._oauth is not None and server.oauth is not None
                    else None
                ),
                stderr=self._server_stderr,
            )
            self._connections[server.name] = connection
            connection.start()
        await asyncio.gather(
            *(connection.settled.wait() for connection in self._connections.values())
        )

    async def aclose(self) -> None:
        """Close every session and end every server process."""
        self._closing = True
        await asyncio.gather(*(connection.stop() for connection in self._connections.values()))
        # The application hears of the last changes (every server stopped), for a moment at most.
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=CALLBACK_GRACE)
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    # ------------------------------------------------------------ what is there

    def status(self) -> dict[str, ServerStatus]:
        """Each server's status, by name; an entry that could not be read is ``failed``."""
        broken = {
            name: ServerStatus(name, "failed", error=error)
            for name, error in self.config.broken.items()
        }
        return broken | {name: connection.status for name, connection in self._connections.items()}

    @property
    def tools(self) -> list[HostTool]:
        return [tool for catalogue in self._ordered() for tool in catalogue.tools.values()]

    @property
    def prompts(self) -> list[HostPrompt]:
        return [prompt for catalogue in self._ordered() for prompt in catalogue.prompts.values()]

    @property
    def resources(self) -> list[HostResource]:
        return [resource for catalogue in self._ordered() for resource in catalogue.resources]

    @property
    def resource_templates(self) -> list[HostResourceTemplate]:
        return [
            template for catalogue in self._ordered() for template in catalogue.resource_templates
        ]

    def session(self, server: str) -> ClientSession:
        """The open session to ``server``; HostError if it is not connected."""
        connection = self._connections.get(server)
        if connection is None:
            if server in self.config.broken:
                raise HostError(
                    f"server {server!r} is not connected (failed: {self.config.broken[server]})"
                )
            raise HostError(
                f"no server named {server!r} (servers: {', '.join(self.config.names) or 'none'})"
            )
        if connection.session is None:
            status = connection.status
            why = f": {status.error}" if status.error else ""
            raise HostError(f"server {server!r} is not connected ({status.state}{why})")
        return connection.session

    async def wait_until(self, check: Callable[[Host], bool], timeout: float | None = None) -> None:
        """Wait until ``check(host)`` holds, re-checked at every change of a
        catalogue or a status; TimeoutError after ``timeout`` seconds."""
        assert self._changed is not None, "the host is not started"
        async with asyncio.timeout(timeout), self._changed:
            await self._changed.wait_for(lambda: check(self))

    # ------------------------------------------------------------ routing

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> Any:
        """Call a tool by its host name; the result is the server's CallToolResult."""
        tool = self._find(name, "tool", lambda c: c.tools)
        params: dict[str, Any] = {"name": tool.original}
        if arguments is not None:
            params["arguments"] = dict(arguments)
        return await self.request(tool.server, "tools/call", params, timeout, on_progress)

    async def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None, *, timeout: float | None = None
    ) -> Any:
        """Get a prompt by its host name; the server's GetPromptResult."""
        prompt = self._find(name, "prompt", lambda c: c.prompts)
        params: dict[str, Any] = {"name": prompt.original}
        if arguments is not None:
            params["arguments"] = dict(arguments)
        return await self.request(prompt.server, "prompts/get", params, timeout)

    async def read_resource(
        self, uri: str, *, server: str | None = None, timeout: float | None = None
    ) -> Any:
        """Read a resource; the server is the one listing ``uri`` (or a template
        matching it) unless named. The server's ReadResourceResult."""
        return await self.request(
            server or self.server_of(uri), "resources/read", {"uri": uri}, timeout
        )

    async def complete(
        self,
        argument: str,
        value: str,
        *,
        prompt: str | None = None,
        template: str | None = None,
        server: str | None = None,
        context: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> Any:
        """Complete an argument of a prompt (by host name) or of a resource
        template (by URI template, with ``server`` when several offer it)."""
        if (prompt is None) == (template is None):
            raise HostError("complete needs a prompt or a resource template, not both")
        if prompt is not None:
            found = self._find(prompt, "prompt", lambda c: c.prompts)
            target, ref = found.server, {"type": "ref/prompt", "name": found.original}
        else:
            owners = [
                t.server
                for t in self.resource_templates
                if t.uri_template == template and server in (None, t.server)
            ]
            if len(owners) != 1:
                raise HostError(_ownership(f"resource template {template!r}", owners))
            target, ref = owners[0], {"type": "ref/resource", "uri": template}
        params: dict[str, Any] = {"ref": ref, "argument": {"name": argument, "value": value}}
        if context:
            params["context"] = {"arguments": dict(context)}
        return await self.request(target, "completion/complete", params, timeout)

    async def roots_changed(self) -> None:
        """Tell every connected server that speaks a handshake revision that the
        application's roots changed (at 2026-07-28 servers ask for them with each request)."""
        for connection in list(self._connections.values()):
            session = connection.session
            if session is None:
                continue
            spec = lifecycle.revision(session.protocol_version).all_methods.get(
                "notifications/roots/list_changed"
            )
            if spec is not None:
                await session.notify(spec, None)

    def server_of(self, uri: str) -> str:
        """The server that lists ``uri``, or else the one with a template matching it."""
        owners = sorted({r.server for r in self.resources if r.uri == uri})
        if not owners:
            owners = sorted({t.server for t in self.resource_templates if t.matches(uri)})
        if len(owners) != 1:
            raise HostError(_ownership(f"resource {uri!r}", owners))
        return owners[0]

    async def request(
        self,
        server: str,
        method: str,
        params: Mapping[str, Any],
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> Any:
        """Send ``method`` to ``server`` with ``params`` in wire form (camelCase
        keys), typed by the revision the server speaks; its decoded result."""
        session = self.session(server)
        spec = lifecycle.revision(session.protocol_version).all_methods[method]
        return await session.request(
            spec, codec.convert(params, spec.params), timeout=timeout, on_progress=on_progress
        )

    def _find(self, name: str, what: str, entries: Callable[[Catalogue], Mapping[str, Any]]) -> Any:
        for catalogue in self._catalogues.values():
            found = entries(catalogue).get(name)
            if found is not None:
                return found
        # A name under the prefix of a server that is down: say so, rather than "no such tool".
        for server in self.config.names:
            if name.startswith(sanitise(server) + SEPARATOR) and server not in self._catalogues:
                self.session(server)  # raises: not connected, and why
        raise HostError(
            f"no {what} named {name!r} (servers not connected: {self._down() or 'none'})"
        )

    def _down(self) -> str:
        return ", ".join(name for name, c in self._connections.items() if c.session is None)

    def _ordered(self) -> Iterator[Catalogue]:
        for name in self._connections:
            catalogue = self._catalogues.get(name)
            if catalogue is not None:
                yield catalogue

    # ------------------------------------------------------------ keeping current

    async def _ready(self, connection: Connection) -> None:
        """A session is open: set its log level, fill its catalogue, and listen
        for list changes where the revision needs a stream for them."""
        session = connection.session
        assert session is not None
        self._catalogues[connection.name] = Catalogue()
        capabilities = session.server_capabilities
        if (
            self.log_level is not None
            and not session.modern
            and lifecycle.has_capability(capabilities, ("logging",))
        ):
            spec = lifecycle.revision(session.protocol_version).all_methods["logging/setLevel"]
            await session.request(spec, codec.convert({"level": self.log_level}, spec.params))
        await asyncio.gather(*(self._refresh(connection.name, session, kind) for kind in KINDS))
        if session.modern:
            wanted = [
                lifecycle.has_capability(capabilities, (c, "listChanged"))
                for c in ("tools", "prompts", "resources")
            ]
            if any(wanted):  # the stream ends with the session
                try:
                    await session.listen(
                        tools_list_changed=wanted[0],
                        prompts_list_changed=wanted[1],
                        resources_list_changed=wanted[2],
                    )
                except McpError as error:  # the server is still of use, its lists only go stale
                    logger.warning(
                        "server %s: subscriptions/listen failed: %s", connection.name, error.message
                    )

    def _lost(self, connection: Connection) -> None:
        if self._catalogues.pop(connection.name, None) is not None:
            self._spawn(self._announce(connection.name, KINDS))

    def _status_changed(self, connection: Connection) -> None:
        self._spawn(self.handlers.on_status(connection.name, connection.status))
        self._spawn(self._notify())

    def list_changed(self, server: str, kinds: tuple[str, ...]) -> None:
        """A server said a list changed: list it again (called by its client's handlers)."""
        connection = self._connections.get(server)
        session = connection.session if connection is not None else None
        if session is None or self._closing:
            return
        for kind in kinds:
            self._spawn(self._refresh(server, session, kind, announce=True))

    async def _refresh(
        self, server: str, session: ClientSession, kind: str, announce: bool = False
    ) -> None:
        # One listing of a kind at a time per server, so the last change's listing is the one kept.
        lock = self._refresh_locks.setdefault((server, kind), asyncio.Lock())
        async with lock:
            method = LISTS[kind][0]
            try:
                items = await list_kind(session, kind)
            except ConnectionClosed:
                if announce:  # a change heard as the session closed: nothing left to list
                    return
                raise
            except McpError as error:
                if (
                    announce
                ):  # a later change may do better; an initial failure fails the connection
                    logger.warning("server %s: %s failed: %s", server, method, error.message)
                    return
                raise
            catalogue = self._catalogues.get(server)
            if catalogue is None or self._connections[server].session is not session:
                return  # lost meanwhile
            catalogue.fill(server, kind, items)
        if announce:
            await self._announce(server, (kind,))

    async def _announce(self, server: str, kinds: tuple[str, ...]) -> None:
        await self._notify()
        for kind in kinds:
            await self.handlers.on_list_changed(server, kind)

    async def _notify(self) -> None:
        if self._changed is not None:
            async with self._changed:
                self._changed.notify_all()

    def _spawn(self, work: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.get_running_loop().create_task(_logged(work))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


async def _logged(work: Coroutine[Any, Any, Any]) -> None:
    try:
        await work
    except Exception:  # an application's callback failing must not go unnoticed, nor stop the host
        logger.exception("host callback failed")


def _ownership(what: str, owners: list[str]) -> str:
    if not owners:
        return f"no connected server offers {what}; name the server"
    return f"{what} is offered by several servers ({', '.join(owners)}); name the server"


__all__ = [
    "Host",
    "HostError",
    "HostPrompt",
    "HostResource",
    "HostResourceTemplate",
    "HostTool",
    "KINDS",
]
