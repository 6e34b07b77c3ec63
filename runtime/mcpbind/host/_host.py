"""The host: every server of a configuration behind one object.

``async with Host(config, handlers) as host:`` starts a supervised client per
server (concurrently, each negotiating its own revision), waits until each
has connected or failed once, and then offers the servers' tools, prompts,
resources and resource templates as one catalogue under collision-free names
(:mod:`mcpbind.host._names`), kept current through list-changed
notifications. Calls, reads, prompts and completions go to the server that
offers them. A server that cannot be reached, or is lost, is retried with
backoff; its entries leave the catalogue until it is back. Leaving the block
closes every session and ends every server process.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable, Coroutine, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from .. import codec
from .._client.client import Client, ClientSession
from .._core import lifecycle
from .._core.jsonrpc import ConnectionClosed, McpError
from ..methods import ProgressCallback
from ._catalogue import (
    KINDS,
    LISTS,
    Catalogue,
    HostPrompt,
    HostResource,
    HostResourceTemplate,
    HostTool,
    list_kind,
)
from ._config import (
    ConfigError,
    HostConfig,
    ServerConfig,
    changed_entries,
    load_config,
    parse_config,
)
from ._connection import Authorize, Connection, RetryPolicy, ServerStatus
from ._handlers import HostHandlers, handlers_factory
from ._routing import Approve, HostError, Routing
from ._stderr import PrefixedStderr
from ._subscriptions import Subscriptions, Updates
from ._watch import stamp, watch_file

if (
    TYPE_CHECKING
):  # the OAuth client needs the 'http' extra; it is imported by the application that uses it
    from ..telemetry import Telemetry
    from ._authorization import HostAuthorization

logger = logging.getLogger(__name__)

CALLBACK_GRACE = 1.0
"""Seconds a closing host waits for the application's callbacks still running."""


class Host(Routing):
    """Many MCP servers behind one object; see the module's description.

    ``config`` is a :class:`HostConfig`, a decoded configuration or a path to one. ``handlers``
    answers the servers' requests (sampling, elicitation, roots) and hears their log messages
    and status. ``authorize`` gives the headers of each HTTP connection (per-server
    authorization); ``oauth`` authorizes the entries whose ``auth`` is of type ``oauth``
    (:mod:`.authorization`). ``log_level`` asks servers for log messages of that level and
    above. ``server_stderr`` is where stdio servers' stderr goes (None: this process's, each
    line prefixed with ``[server]``). ``approve`` is asked before each tool call
    (:data:`~mcpbind.host._routing.Approve`). ``watch_config``, for a configuration read from
    a file, reloads it whenever the file changes. ``protocol_version`` is the revision each
    client asks for (default: the newest, met at an older one by servers that do not speak it).
    ``capabilities`` are declared besides those the handlers imply (``extensions``).
    ``telemetry`` (a :class:`mcpbind.telemetry.Telemetry`): a span per routed call
    naming the server entry, around the client span of the call.
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
        approve: Approve | None = None,
        watch_config: bool = False,
        capabilities: Mapping[str, Any] | None = None,
        telemetry: Telemetry | None = None,
    ) -> None:
        self.telemetry = telemetry
        # One entry that cannot be read (an unset ${VAR}) fails alone, as a lost server would.
        self.path = None if isinstance(config, (HostConfig, Mapping)) else os.fspath(config)
        self.approve = approve
        self._watch_config = watch_config and self.path is not None
        self._stamp = stamp(self.path) if self.path is not None else None
        self._stderr_pipes: dict[str, PrefixedStderr] = {}
        self._subscriptions = Subscriptions()
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
        self._capabilities = dict(capabilities or {})
        self._retry = retry or RetryPolicy()
        self._authorize = authorize
        self._oauth = oauth
        for server in self.config.servers:
            self._check(server)
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
        self._changed = asyncio.Condition()
        for server in self.config.servers:
            self._connect(server)
        await asyncio.gather(
            *(connection.settled.wait() for connection in self._connections.values())
        )
        if self._watch_config:
            assert self.path is not None
            self._spawn(watch_file(self.path, self.reload, self._stamp))

    def _check(self, server: ServerConfig) -> None:
        if server.oauth is not None and self._oauth is None:
            raise ConfigError(
                f"server {server.name!r} is authorized with OAuth: the Host needs oauth=HostAuthorization(...)"
            )

    def _connect(self, server: ServerConfig) -> Connection:
        name, version = self._identity
        handlers = self._make_handlers(server.name, self)
        # An application that answers roots/list can say they changed (roots_changed).
        roots = {"roots": {"listChanged": True}} if "list_roots" in type(handlers).__dict__ else {}
        client = Client(
            name=name,
            version=version,
            handlers=handlers,
            capabilities={**self._capabilities, **roots},
            default_timeout=server.request_timeout,
            log_level=self.log_level,
            protocol_version=self.protocol_version,
            telemetry=self.telemetry,
        )
        stderr = self._server_stderr
        if stderr is None and server.transport == "stdio":
            pipe = self._stderr_pipes.get(server.name) or PrefixedStderr(server.name)
            if server.name not in self._stderr_pipes:
                self._stderr_pipes[server.name] = pipe
                pipe.start()
            stderr = pipe.fd
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
            stderr=stderr,
        )
        self._connections[server.name] = connection
        connection.start()
        return connection

    # ------------------------------------------------------------ changing the servers

    async def add(self, server: ServerConfig) -> ServerStatus:
        """Start a server while the host runs; its status once it connected or failed once."""
        if server.name in self._connections:
            raise HostError(f"there is already a server named {server.name!r}")
        self._check(server)
        self.config = HostConfig(
            (*self.config.servers, server),
            {k: v for k, v in self.config.broken.items() if k != server.name},
        )
        connection = self._connect(server)
        await connection.settled.wait()
        return connection.status

    async def remove(self, name: str) -> None:
        """Stop a server and take its entries out of the catalogue."""
        connection = self._connections.pop(name, None)
        if connection is None and name not in self.config.broken:
            raise HostError(f"no server named {name!r}")
        self.config = HostConfig(
            tuple(s for s in self.config.servers if s.name != name),
            {k: v for k, v in self.config.broken.items() if k != name},
        )
        if connection is not None:
            await connection.stop()
            self._lost(connection)
        pipe = self._stderr_pipes.pop(name, None)
        if pipe is not None:
            await pipe.close()

    async def reload(self, config: HostConfig | Mapping[str, Any] | None = None) -> None:
        """Apply a new configuration (default: the file read again): entries gone are
        stopped, new ones started, changed ones restarted; the others are untouched."""
        if config is None:
            if self.path is None:
                raise HostError("the host was not given a file to read again")
            new = load_config(self.path, keep_broken=True)
        else:
            new = (
                config if isinstance(config, HostConfig) else parse_config(config, keep_broken=True)
            )
        stop, start = changed_entries(self.config, new)
        for name in stop:
            await self.remove(name)
        for name in [n for n in self.config.broken if n not in new.broken]:
            await self.remove(name)
        self.config = HostConfig(self.config.servers, dict(new.broken))
        await asyncio.gather(*(self.add(server) for server in start))
        await self._notify()

    def subscribe(
        self, uri: str, *, server: str | None = None
    ) -> contextlib.AbstractAsyncContextManager[Updates]:
        """``async with host.subscribe(uri) as updates: async for params in updates:``
        each update of the resource (see :mod:`.subscriptions`)."""
        owner = server or self.server_of(uri)
        return self._subscriptions.subscribe(uri, owner, self.session(owner), self.request)

    def resource_updated(self, server: str, params: object) -> None:
        self._subscriptions.updated(server, params)

    def retry_now(self, name: str) -> None:
        """Connect to ``name`` again at once, without waiting for its next attempt."""
        connection = self._connections.get(name)
        if connection is None:
            raise HostError(f"no server named {name!r}")
        connection.retry_now()

    async def aclose(self) -> None:
        """Close every session and end every server process."""
        self._closing = True
        await asyncio.gather(*(connection.stop() for connection in self._connections.values()))
        await asyncio.gather(*(pipe.close() for pipe in self._stderr_pipes.values()))
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
        call = session.request(
            spec, codec.convert(params, spec.params), timeout=timeout, on_progress=on_progress
        )
        if self.telemetry is not None:
            return await self.telemetry.host_call(server, method, params, call)
        return await call

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
            and not session.stateless
            and lifecycle.has_capability(capabilities, ("logging",))
        ):
            spec = lifecycle.revision(session.protocol_version).all_methods["logging/setLevel"]
            await session.request(spec, codec.convert({"level": self.log_level}, spec.params))
        await asyncio.gather(*(self._refresh(connection.name, session, kind) for kind in KINDS))
        if session.stateless:
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
            if kind == "tools":  # the entry's allow and deny lists
                config = self._connections[server].config
                items = [item for item in items if config.permits(str(item.name))]
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


__all__ = [
    "Host",
    "HostError",
    "HostPrompt",
    "HostResource",
    "HostResourceTemplate",
    "HostTool",
    "KINDS",
]
