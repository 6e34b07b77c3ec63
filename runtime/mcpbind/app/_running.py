"""Serving an app: the low-level server, the ASGI app, ``run`` and the test client."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any, Literal

from .._client.client import Client, ClientSession
from .._core.extensions import declare
from .._core.jsonrpc import McpError
from .._extensions.tasks.serving import Tasks
from .._server.running import run_stdio_loop, serve_stdio
from .._server.server import Extension, Server
from .._transports.memory import memory_pair
from .._transports.stdio import configure_stdio_logging
from ..stores import Store
from ._core_tasks import CoreTasks
from ._flavor import Flavor
from ._handlers import Tasking, build_handlers
from ._lifespan import Lifespan, LifespanASGI, LifespanError
from ._middleware import Middleware, as_middleware
from ._registry import Registry
from ._settings import RunSettings, SettingsError
from ._state import SessionStates
from ._ui import UI_EXTENSION_ID, serves_ui
from ._visibility import Visibility

logger = logging.getLogger(__name__)


class AppServices:
    """What the app lends its functions' contexts, reached through their Flavor."""

    __slots__ = ("lifespan", "states", "core_tasks")

    def __init__(self, lifespan: Lifespan[Any], states: SessionStates) -> None:
        self.lifespan = lifespan
        self.states = states
        self.core_tasks = CoreTasks()


if TYPE_CHECKING:  # only an app given one imports OpenTelemetry
    from ..telemetry import Telemetry


class Running:
    """The serving half of :class:`~mcpbind.app.App`."""

    name: str
    version: str
    title: str | None
    instructions: str | None
    versions: tuple[str, ...]
    extensions: tuple[Extension, ...]
    state_key: bytes | None
    default_timeout: float | None
    capabilities: dict[str, Any]
    cache_ttl_ms: int
    cache_scope: Literal["private", "public"]
    registry: Registry
    middleware: tuple[Middleware, ...]
    store: Store | None
    telemetry: Telemetry | None
    visibility: Visibility
    services: AppServices
    _server: Server | None
    _proxies: list[Any]

    def handlers(self) -> list[object]:
        """A generated ``ServerHandlers`` object per revision, over this app's registry."""
        tasking = self._tasking()
        found = []
        for version in self.versions:
            flavor = Flavor(version, ttl_ms=self.cache_ttl_ms, cache_scope=self.cache_scope)
            flavor.services = self.services
            found.append(
                build_handlers(
                    self.registry,
                    flavor,
                    self.visibility,
                    bool(self.middleware),
                    tasking,
                    proxied=bool(self._proxies),
                )
            )
        return found

    def _tasking(self) -> Tasking | None:
        """How task-capable tools run as tasks, if the app has any."""
        # A proxied tool is not the extension's to refuse: a client without the
        # extension gets it run in place, whenever its backend connected.
        capable = {
            name: tool.task_support
            for name, tool in self.registry.tools.items()
            if tool.task_support is not None and not getattr(tool, "proxied", False)
        }
        if not capable and not self._proxies:  # a proxied server's tools may run as tasks
            return None
        extension = next((each for each in self.extensions if isinstance(each, Tasks)), None)
        if extension is not None:
            for name, support in capable.items():
                extension.tools.setdefault(name, support)
        return Tasking(self.services.core_tasks, extension)

    def server(self) -> Server:
        """The low-level :class:`~mcpbind._server.server.Server` serving this app
        (built on first use, then the same one). What the app serves is
        declared when it is built: register before serving. An app proxying
        other servers declares tools, resources and prompts whether or not its
        backends are connected yet: they connect with the lifespan, which an
        ASGI server enters after the app is built."""
        if self._server is None:
            capabilities = dict(self.capabilities)
            proxied = bool(self._proxies)
            for kind, present in (
                ("tools", self.registry.tools),
                ("resources", self.registry.resources or self.registry.templates),
                ("prompts", self.registry.prompts),
            ):
                if present or proxied:
                    capabilities[kind] = {"listChanged": True, **capabilities.get(kind, {})}
            # MCP Apps: an app with UI resources supports the extension (a
            # server has no settings of its own to give).
            if serves_ui(self.registry.resources):
                capabilities = declare(capabilities, {UI_EXTENSION_ID: {}})
            self._server = Server(
                self.handlers(),
                name=self.name,
                version=self.version,
                title=self.title,
                instructions=self.instructions,
                capabilities=capabilities,
                versions=self.versions,
                default_timeout=self.default_timeout,
                state_key=self.state_key,
                extensions=self.extensions,
                store=self.store,
                middleware=[as_middleware(each) for each in self.middleware],
                telemetry=self.telemetry,
            )
            self._server.item_scopes = self.registry.scopes_of
            if self._proxies:
                self._server.listen_watchers.append(self._listened)
        return self._server

    async def _listened(self, uris: Sequence[str], listening: bool) -> None:
        """A 2026-07-28 listen stream asks for ``uris`` (or ended): the proxies
        subscribe their backends as for a handshake client's resources/subscribe."""
        for uri in uris:
            self.registry.listened(uri, listening)
            for watcher in self.registry.subscription_watchers:
                try:
                    await watcher(uri, listening)
                except McpError as error:  # the stream is still of use for the rest
                    logger.warning("subscription to %s not passed on: %s", uri, error.message)

    def asgi(self, *, metrics_path: str | None = None, **options: Any) -> LifespanASGI:
        """The ASGI application serving the app over Streamable HTTP (``/mcp``)
        and legacy HTTP+SSE, running the app's lifespan around the ASGI
        lifespan; ``options`` go to :func:`mcpbind.http.http_app`.
        ``metrics_path`` (``"/metrics"``) also serves the process's metrics
        in Prometheus' format there (needs ``prometheus-client``; see
        docs/guides/observability.md)."""
        # Late: a stdio app never loads the HTTP server (mcpbind.http and its modules).
        from ..http import http_app

        if self.store is not None:
            options.setdefault("store", self.store)
        app: Any = http_app(self.server(), **options)
        if metrics_path is not None:
            from ..telemetry._prometheus import MetricsEndpoint  # only with the endpoint asked for

            app = MetricsEndpoint(app, metrics_path)
        return LifespanASGI(app, self.services.lifespan)

    def run(
        self,
        transport: Literal["stdio", "http"] | None = None,
        *,
        host: str | None = None,
        port: int | None = None,
        path: str | None = None,
        log_level: str | None = None,
        **options: Any,
    ) -> None:
        """Serve until stopped (blocking): over stdio until stdin closes, or
        over HTTP. Each setting comes from its argument, else its environment
        variable (``MCP_TRANSPORT``, ``MCP_HOST``, ``MCP_PORT``, ``MCP_PATH``,
        ``MCP_LOG_LEVEL``), else the default: see :mod:`mcpbind.app._settings`.
        ``options`` go to :meth:`asgi` (HTTP). A lifespan that fails to start,
        or a setting that cannot be used, ends the process with one line on
        stderr and exit status 1."""
        try:
            settings = RunSettings.resolve(
                transport=transport, host=host, port=port, path=path, log_level=log_level
            )
        except SettingsError as error:
            print(f"{self.name}: {error}", file=sys.stderr)
            raise SystemExit(1) from None
        settings.configure_logging()
        if settings.transport == "http":
            from ..serving import run_http  # late, as in asgi()

            app = self.asgi(path=settings.path, **options)
            said = _SaidInOneLine(self.services.lifespan)
            uvicorn_log = logging.getLogger("uvicorn.error")
            uvicorn_log.addFilter(said)
            try:
                run_http(
                    app,
                    host=settings.host,
                    port=settings.port,
                    log_level=settings.log_level,
                    name=self.name,
                    path=settings.path,
                )
            except SystemExit:
                if self.services.lifespan.failed is None:
                    raise
            finally:
                uvicorn_log.removeFilter(said)
            if self.services.lifespan.failed is not None:
                print(f"{self.name}: {self.services.lifespan.failed}", file=sys.stderr)
                raise SystemExit(1)
            return
        configure_stdio_logging()
        try:
            run_stdio_loop(self._serve_stdio())
        except LifespanError as error:
            print(f"{self.name}: {error}", file=sys.stderr)
            raise SystemExit(1) from None
        except KeyboardInterrupt:
            pass

    def run_http(self, host: str = "127.0.0.1", port: int = 8000, **options: Any) -> None:
        """Serve over HTTP (blocking): ``run("http", host=..., port=...)``."""
        self.run("http", host=host, port=port, **options)

    async def _serve_stdio(self) -> None:
        lifespan = self.services.lifespan
        await lifespan.start()
        main = asyncio.current_task()
        loop = asyncio.get_running_loop()
        if main is not None:
            with contextlib.suppress(NotImplementedError, RuntimeError):
                # SIGTERM and SIGINT end serving as end of input does: the lifespan's
                # teardown runs. One that comes during the teardown hurries it (what
                # waits for a stdio server's exit terminates its process group).
                for signum in (signal.SIGTERM, signal.SIGINT):
                    loop.add_signal_handler(signum, main.cancel)
        try:
            await serve_stdio(self.server())
        except asyncio.CancelledError:
            pass
        finally:
            try:
                await lifespan.stop()
            except asyncio.CancelledError:
                pass  # a second signal hurried the teardown, which ran all the same

    @contextlib.asynccontextmanager
    async def test_client(
        self,
        *,
        protocol_version: str | None = None,
        handlers: object | None = None,
        client: Client | None = None,
        principal: object = None,
    ) -> AsyncIterator[ClientSession]:
        """A real client session connected to this app in memory: the way to
        unit-test a server (the app's lifespan runs around it).
        ``protocol_version`` picks the revision (default: the newest);
        ``handlers`` answer what the server asks (a generated
        ``ClientHandlers`` object: elicitation, sampling, roots);
        ``principal`` is the authenticated caller functions see (``ctx.principal``)."""
        lifespan = self.services.lifespan
        await lifespan.start()
        try:
            server_end, client_end = memory_pair(principal)
            serving = asyncio.get_running_loop().create_task(self.server().serve(server_end))
            if client is None:
                client = Client(
                    name="test-client",
                    version="0",
                    protocol_version=protocol_version,
                    handlers=handlers,
                )
            try:
                session = await client.connect(client_end)
                try:
                    yield session
                finally:
                    await session.close()
            finally:
                await client_end.close()
                await serving
        finally:
            await lifespan.stop()


class _SaidInOneLine(logging.Filter):
    """Drops what uvicorn logs once the app's lifespan failed to start (the
    reason, then "Application startup failed"): :meth:`Running.run` says it in
    one line."""

    def __init__(self, lifespan: Lifespan[object]) -> None:
        super().__init__()
        self.lifespan = lifespan

    def filter(self, record: logging.LogRecord) -> bool:
        return self.lifespan.failed is None
