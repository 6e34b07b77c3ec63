"""The application: decorators that register functions, and one-line ways to serve them.

    app = App("notes", "1.0")

    @app.tool()
    def add(a: int, b: int) -> int:
        return a + b

    app.run()            # stdio (or MCP_TRANSPORT=http); app.asgi() for an ASGI server

One app serves every protocol revision the runtime has (2024-11-05 to
2026-07-28) from the same functions: :meth:`App.server` builds a handler
object of each revision's generated interface over the app's registry.
Registering lives in :mod:`.registering`, serving in :mod:`.running`.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, Literal

from typing_extensions import TypeVar

from .._core import lifecycle
from .._extensions.tasks.serving import Tasks
from .._server.server import Extension, Server
from ..methods import RequestContext
from ..stores import Store
from ._audit import Audit
from ._context import Context
from ._errors import NoSession
from ._lifespan import Lifespan, LifespanFactory
from ._middleware import Invalidates, Middleware, UsesStore
from ._mount import Mount, prefixed_uri
from ._pinning import Pins
from ._proxy import Proxy
from ._registering import Registering
from ._registry import Registry
from ._running import AppServices, Running
from ._shared_rules import SharedRules
from ._state import SessionStates
from ._supervision import connected as proxies_connected
from ._visibility import KINDS, Visibility

if TYPE_CHECKING:  # only an app given one imports OpenTelemetry
    from ..telemetry import Telemetry

S = TypeVar("S", default=Any)

# The capability of each list whose changes the app announces.
_LIST_CAPABILITY = KINDS


class App(Registering, Running, Generic[S]):
    """An MCP server made of decorated functions (see the module docstring).

    ``versions`` limits the protocol revisions served (default: all).
    ``extensions`` are passed to the :class:`~mcpbind._server.server.Server`
    (``mcpbind._extensions.tasks.serving.Tasks``, for example). ``cache_ttl_ms`` and
    ``cache_scope`` are the caching hints of 2026-07-28 list and read results.
    ``lifespan``: a function of the app returning an async context manager,
    entered once per process around serving; what it yields is
    ``ctx.lifespan`` (see :mod:`.lifespan`). ``middleware``: run around every
    request and notification, outermost first (see :mod:`.middleware`).
    ``store``: a shared store (``RedisStore.from_url(url)``) for sessions,
    per-session state and rate limits across workers; app-wide
    :meth:`enable` and :meth:`disable` made while serving then hold on every
    worker (see :mod:`.shared_rules`).
    ``telemetry`` (a :class:`mcpbind.telemetry.Telemetry`): spans and metrics
    of what the app serves and, for proxied backends, of the calls to them, in
    the same trace; ``mcp.gateway.backend.up`` per backend (see
    docs/guides/observability.md). Without one, ``MCP_TELEMETRY=otlp`` in the
    environment makes one exporting over OTLP (see
    :mod:`mcpbind.telemetry._environment`).
    """

    def __init__(
        self,
        name: str,
        version: str = "0.1.0",
        *,
        title: str | None = None,
        instructions: str | None = None,
        versions: Sequence[str] | None = None,
        extensions: Sequence[Extension] = (),
        state_key: bytes | None = None,
        default_timeout: float | None = None,
        capabilities: Mapping[str, object] | None = None,
        cache_ttl_ms: int = 0,
        cache_scope: Literal["private", "public"] = "private",
        lifespan: LifespanFactory[S] | None = None,
        middleware: Sequence[Middleware] = (),
        store: Store | None = None,
        telemetry: Telemetry | None = None,
    ) -> None:
        self.name = name
        if telemetry is None and os.environ.get("MCP_TELEMETRY"):
            from ..telemetry._environment import from_environment  # only when asked for

            telemetry = from_environment(name)
        self.telemetry = telemetry
        if telemetry is not None:
            telemetry.watch_backends(
                lambda: [
                    (name, problem() is None) for name, problem in self.registry.backends.items()
                ]
            )
        self.version = version
        self.title = title
        self.instructions = instructions
        known = lifecycle.handshake_versions() + lifecycle.stateless_versions()
        self.versions = tuple(versions) if versions is not None else known
        unknown = set(self.versions) - set(known)
        if unknown or not self.versions:
            raise ValueError(
                f"unsupported protocol versions: {sorted(unknown) or 'none given'} (known: {', '.join(known)})"
            )
        self.extensions = tuple(extensions)
        self.state_key = state_key
        self.default_timeout = default_timeout
        self.capabilities = dict(capabilities or {})
        self.cache_ttl_ms = cache_ttl_ms
        self.cache_scope = cache_scope
        self.registry = Registry()
        self.middleware = tuple(middleware)
        self.store = store
        self.visibility = Visibility()
        self.visibility.on_change.append(self._visibility_changed)
        states = SessionStates()
        states.store = store
        self.services = AppServices(Lifespan(lifespan, self), states)
        if store is not None:
            for each in self.middleware:
                if isinstance(each, UsesStore):
                    each.use_store(store)
        # App-wide rules made while serving, shared by the workers (None: this process only).
        self.shared_rules: SharedRules | None = None
        if store is not None and store.shared:
            self.shared_rules = SharedRules(self, store)
            self.services.lifespan.children.append(Lifespan(self.shared_rules.serve, self))
        self._server: Server | None = None
        self._notifying: set[asyncio.Task[None]] = set()
        self._mounts: list[Mount[App[object]]] = []  # the apps mounted in this one
        self._mounted_in: list[Mount[App[object]]] = []  # where this app is mounted
        self._proxies: list[Proxy] = []  # the servers proxied by this one

    def mount(self, app: App[Any], *, prefix: str) -> None:
        """Serve ``app``'s tools, resources, prompts and completions as part of
        this app, under ``prefix`` (tool ``add`` → ``<prefix>_add``, resource
        ``note://1`` → ``note://<prefix>/1``); ``app`` keeps its lifespan,
        middleware and visibility rules. See :mod:`mcpbind.app._mount`."""
        if any(each.prefix == prefix for each in self._mounts):
            raise ValueError(f"an app is already mounted with prefix {prefix!r}")
        if any(each.app is app for each in self._mounts):
            raise ValueError(f"app {app.name!r} is already mounted here")
        mount = Mount(self, app, prefix)
        self._mounts.append(mount)
        app._mounted_in.append(mount)
        self.visibility.delegates.append(mount)
        self.services.lifespan.children.append(app.services.lifespan)
        for kind in ("tools", "resources", "templates", "prompts", "completions"):
            if mount.sync(kind):
                self._changed(kind)

    def proxy(
        self,
        source: object,
        *,
        prefix: str,
        allow_tools: Sequence[str] | None = None,
        deny_tools: Sequence[str] = (),
        pins: Pins | None = None,
        audit: Audit | None = None,
        scopes: Mapping[str, Sequence[str]] | None = None,
        redact: bool | Iterable[str] = False,
    ) -> None:
        """Serve another MCP server as part of this app, under ``prefix`` (the
        rule of :meth:`mount`). ``source``: a
        :class:`~mcpbind._transports.stdio.StdioServerParameters`, an http(s) URL or an
        ``mcpServers`` entry (a mapping, or a host ``ServerConfig``). The
        server is connected with the app's lifespan; ``allow_tools`` and
        ``deny_tools`` (names or fnmatch patterns) choose its tools served;
        ``pins`` hold back definitions that changed since approved
        (:mod:`.pinning`); ``audit`` writes each call made through it
        (:mod:`.audit`); ``scopes`` maps tool names or fnmatch patterns to the
        OAuth scopes a caller's token needs to call them; ``redact`` takes
        secret values out of what the server's answers, errors, progress and
        log messages carry to the clients (True: the values of the entry's
        ``env`` and ``headers``; or the values themselves; see
        :mod:`.redaction`). An app that proxies
        serves the 2026-07-28 tasks extension (a :class:`~mcpbind._extensions.tasks.serving.Tasks`
        is added to its extensions unless it has one), so that the backends'
        task-capable tools run as tasks for the clients that ask for them.
        See :mod:`mcpbind.app._proxy`."""
        taken = {each.prefix for each in self._mounts} | {each.prefix for each in self._proxies}
        if prefix in taken:
            raise ValueError(f"an app or server is already served with prefix {prefix!r}")
        proxy = Proxy(
            self,
            source,
            prefix,
            allow_tools=tuple(allow_tools) if allow_tools is not None else None,
            deny_tools=tuple(deny_tools),
            pins=pins,
            audit=audit,
            scopes={pattern: tuple(needed) for pattern, needed in (scopes or {}).items()},
            redact=redact,
        )
        if not self._proxies:
            self.services.lifespan.children.append(
                Lifespan(lambda app: proxies_connected(self._proxies), self)
            )
        self._proxies.append(proxy)
        if not any(isinstance(each, Tasks) for each in self.extensions):
            # So that a 2026-07-28 client asking for a task gets one of a task-capable backend tool.
            self.extensions += (Tasks(),)

    def unconnected(self) -> dict[str, str]:
        """The proxied servers not connected now, by prefix, and why (the
        reason of the last attempt, with what a stdio server last wrote to its
        stderr); empty when every one is. See :meth:`proxy`."""
        return {
            proxy.prefix: problem
            for proxy in self._proxies
            if (problem := proxy.problem) is not None
        }

    @property
    def lifespan_state(self) -> S:
        """What the lifespan yielded (while it runs; RuntimeError otherwise)."""
        state: S = self.services.lifespan.state
        return state

    # ------------------------------------------------------------ notifications

    def _changed(self, kind: str) -> None:
        for mount in self._mounted_in:
            if mount.sync(kind):
                mount.parent._changed(kind)
        if kind == "completions":
            return  # no list, no notification
        self.registry.changed(kind)
        self._invalidate(None)
        server = self._server
        if server is None:
            return
        if self.shared_rules is not None and self.shared_rules.serving:
            # A function registered while serving is served by this worker
            # only: the other workers' clients are not told of it.
            kind = _LIST_CAPABILITY[kind]
            self._later(
                server.notify_list_changed_to(kind, server.handshake_sessions(), streams=True)
            )
            return
        self._later(server.notify_list_changed(_LIST_CAPABILITY[kind]))

    def _visibility_changed(self) -> None:
        # Lists and reads kept by middleware (Cache) may show what is now hidden,
        # here and in the apps this one is mounted in (their lists hold its items).
        self._invalidate(None)
        for mount in self._mounted_in:
            mount.parent._visibility_changed()

    def _later(self, notifying: Any) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            notifying.close()
            return  # nobody is connected outside a running loop
        task = loop.create_task(notifying)
        self._notifying.add(task)
        task.add_done_callback(self._notifying.discard)

    def _invalidate(self, uri: str | None) -> None:
        for each in self.middleware:
            if isinstance(each, Invalidates):
                each.invalidate(uri)

    async def notify_resource_updated(self, uri: str) -> None:
        """Tell the clients subscribed to ``uri`` that it changed (subscribed
        handshake sessions, and 2026-07-28 listen streams that asked for it)."""
        self._invalidate(uri)
        for session in self.registry.subscribers(uri):
            if session.is_closed:
                continue
            spec = lifecycle.revision(session.protocol_version).all_methods[
                "notifications/resources/updated"
            ]
            await session.notify(spec, spec.params(uri=uri))
        if self._server is not None:
            await self._server.notify_resource_updated(uri)
        for mount in self._mounted_in:
            await mount.parent.notify_resource_updated(prefixed_uri(mount.prefix, uri))

    def _notifier(self) -> Server | None:
        """The server that tells this app's clients (a mounting app's when mounted)."""
        if self._server is not None:
            return self._server
        for mount in self._mounted_in:
            found: Server | None = mount.parent._notifier()
            if found is not None:
                return found
        return None

    # ------------------------------------------------------------ visibility

    def enable(
        self,
        names: Iterable[str] = (),
        *,
        tags: Iterable[str] = (),
        session: Context[Any] | RequestContext | None = None,
    ) -> None:
        """Show the tools, prompts and resources named (names, URIs or
        templates) or tagged, to every session or to ``session`` (a context of
        one of its requests); see :mod:`.visibility`. The sessions whose view
        changed are told so. A 2026-07-28 request has no session: ``session=``
        of one raises :class:`~.errors.NoSession` (a ToolError), which its
        caller gets as a tool error saying so."""
        self._set_visible(names, tags, session, True)

    def disable(
        self,
        names: Iterable[str] = (),
        *,
        tags: Iterable[str] = (),
        session: Context[Any] | RequestContext | None = None,
    ) -> None:
        """Hide what :meth:`enable` would show (the same arguments)."""
        self._set_visible(names, tags, session, False)

    def _set_visible(
        self,
        names: Iterable[str],
        tags: Iterable[str],
        session: Context[Any] | RequestContext | None,
        shown: bool,
    ) -> None:
        names, tags = _strings(names, "names"), _strings(tags, "tags")
        peer = _peer(session)
        shared = self.shared_rules
        if peer is None and shared is not None and shared.serving:
            shared.change(names, tags, shown)  # it tells the clients once every worker has it
            return
        server = self._notifier()
        # Whose view may change: one session, or every session and the listen streams.
        watched: list[Any] = [peer] if peer is not None else [None]
        if peer is None and server is not None:
            watched += server.handshake_sessions()
        before = [self._view(each) for each in watched]
        self.visibility.change(peer, names, tags, shown)
        after = [self._view(each) for each in watched]
        if server is None:
            return
        for each, old, new in zip(watched, before, after):
            for kind in ("tools", "resources", "prompts"):
                if old[kind] == new[kind]:
                    continue
                if each is None:  # the app's view: what the listen streams see
                    self._later(server.notify_list_changed_to(kind, [], streams=True))
                else:
                    self._later(server.notify_list_changed_to(kind, [each]))

    def _view(self, session: object) -> dict[str, frozenset[str]]:
        registry, visibility = self.registry, self.visibility
        return {
            "tools": visibility.view(session, registry.tools),
            "resources": visibility.view(session, registry.resources)
            | visibility.view(session, registry.templates),
            "prompts": visibility.view(session, registry.prompts),
        }


def _strings(values: Iterable[str], what: str) -> tuple[str, ...]:
    if isinstance(values, str):
        raise TypeError(f"{what} is a collection of strings: write [{values!r}]")
    return tuple(values)


def _peer(session: Context[object] | RequestContext | None) -> object:
    """The session a context's request belongs to (None for the app's rules)."""
    if session is None:
        return None
    request = session.request_context if isinstance(session, Context) else session
    if request.stateless:
        # The same tool serves every revision: its caller is told, in a tool error.
        raise NoSession(
            f"protocol revision {request.protocol_version} has no sessions: "
            "nothing can be shown or hidden for this client alone"
        )
    return request.session
