"""The application: decorators that register functions, and one-line ways to serve them.

    app = App("notes", "1.0")

    @app.tool()
    def add(a: int, b: int) -> int:
        return a + b

    app.run()            # stdio; app.run_http() or app.asgi() for HTTP

One app serves every protocol revision the runtime has (2024-11-05 to
2026-07-28) from the same functions: :meth:`App.server` builds a handler
object of each revision's generated interface over the app's registry.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any, Literal, TypeVar

from .. import lifecycle
from ..client import Client, ClientSession
from ..http import HttpApp, http_app
from ..memory import memory_pair
from ..server import Extension, Server, run_stdio
from .completion import Completer
from .flavor import Flavor
from .handlers import build_handlers
from .prompts import PromptSpec
from .registry import Registry
from .resources import ResourceSpec
from .served import run_uvicorn
from .tools import ToolSpec

F = TypeVar("F", bound=Callable[..., Any])

# The capability of each list whose changes the app announces.
_LIST_CAPABILITY = {
    "tools": "tools",
    "resources": "resources",
    "templates": "resources",
    "prompts": "prompts",
}


def _needs_call(kind: str, name: object) -> None:
    if callable(name):  # @app.tool instead of @app.tool()
        raise TypeError(f"@app.{kind} is called to make the decorator: write @app.{kind}()")


class App:
    """An MCP server made of decorated functions (see the module docstring).

    ``versions`` limits the protocol revisions served (default: all).
    ``extensions`` are passed to the :class:`~mcp_runtime.server.Server`
    (``mcp_runtime.tasks.Tasks``, for example). ``cache_ttl_ms`` and
    ``cache_scope`` are the caching hints of 2026-07-28 list and read results.
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
        capabilities: Mapping[str, Any] | None = None,
        cache_ttl_ms: int = 0,
        cache_scope: Literal["private", "public"] = "private",
    ) -> None:
        self.name = name
        self.version = version
        self.title = title
        self.instructions = instructions
        known = lifecycle.handshake_versions() + lifecycle.modern_versions()
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
        self._server: Server | None = None
        self._notifying: set[asyncio.Task[None]] = set()

    # ------------------------------------------------------------ registering

    def tool(
        self,
        name: str | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        annotations: Mapping[str, Any] | None = None,
        icons: Sequence[Mapping[str, Any]] | None = None,
        meta: Mapping[str, Any] | None = None,
        scopes: Sequence[str] = (),
        structured_output: bool | None = None,
        input_schema: Mapping[str, Any] | None = None,
    ) -> Callable[[F], F]:
        """Register a function as a tool (the function is returned unchanged).

        The input schema comes from the parameters, the description from the
        docstring, the outputSchema from the return annotation (``str`` is
        plain text; ``structured_output=False`` turns structured output off).
        A parameter annotated :class:`~mcp_runtime.app.Context` gets the
        request's context. ``scopes``: OAuth scopes the caller's token must
        grant (``InsufficientScope`` otherwise). ``input_schema`` replaces the
        derived schema in ``tools/list`` (the signature still decodes the arguments).
        """
        _needs_call("tool", name)

        def register(fn: F) -> F:
            self.add_tool(
                fn,
                name=name,
                title=title,
                description=description,
                annotations=annotations,
                icons=icons,
                meta=meta,
                scopes=scopes,
                structured_output=structured_output,
                input_schema=input_schema,
            )
            return fn

        return register

    def add_tool(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        annotations: Mapping[str, Any] | None = None,
        icons: Sequence[Mapping[str, Any]] | None = None,
        meta: Mapping[str, Any] | None = None,
        scopes: Sequence[str] = (),
        structured_output: bool | None = None,
        input_schema: Mapping[str, Any] | None = None,
    ) -> None:
        """Register a tool without the decorator (the options of :meth:`tool`);
        clients are told the list changed."""
        spec = ToolSpec(
            fn,
            name=name,
            title=title,
            description=description,
            annotations=annotations,
            icons=icons,
            meta=meta,
            scopes=scopes,
            structured_output=structured_output,
            input_schema=input_schema,
        )
        self.registry.tools[spec.name] = spec
        self._changed("tools")

    def remove_tool(self, name: str) -> None:
        """Stop serving a tool; clients are told the list changed."""
        if self.registry.tools.pop(name, None) is None:
            raise KeyError(f"no tool {name!r}")
        self._changed("tools")

    def resource(
        self,
        uri: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        size: int | None = None,
        icons: Sequence[Mapping[str, Any]] | None = None,
        annotations: Mapping[str, Any] | None = None,
        meta: Mapping[str, Any] | None = None,
        scopes: Sequence[str] = (),
    ) -> Callable[[F], F]:
        """Register a resource (``uri``) or a resource template (``"note://{id}"``).

        The template's variables must be the function's parameters (those
        with defaults may be left out). The function returns ``str`` (text),
        ``bytes`` (a blob), a list of resource contents, or any JSON value
        (sent as ``application/json`` text).
        """
        if not isinstance(uri, str):
            raise TypeError('@app.resource needs the URI or template: @app.resource("note://{id}")')

        def register(fn: F) -> F:
            self.add_resource(
                uri,
                fn,
                name=name,
                title=title,
                description=description,
                mime_type=mime_type,
                size=size,
                icons=icons,
                annotations=annotations,
                meta=meta,
                scopes=scopes,
            )
            return fn

        return register

    def add_resource(
        self,
        uri: str,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        size: int | None = None,
        icons: Sequence[Mapping[str, Any]] | None = None,
        annotations: Mapping[str, Any] | None = None,
        meta: Mapping[str, Any] | None = None,
        scopes: Sequence[str] = (),
    ) -> None:
        """Register a resource or template without the decorator (the options of :meth:`resource`)."""
        spec = ResourceSpec(
            uri,
            fn,
            name=name,
            title=title,
            description=description,
            mime_type=mime_type,
            size=size,
            icons=icons,
            annotations=annotations,
            meta=meta,
            scopes=scopes,
        )
        kind = "templates" if spec.template is not None else "resources"
        getattr(self.registry, kind)[uri] = spec
        self._changed(kind)

    def remove_resource(self, uri: str) -> None:
        """Stop serving a resource or template (by its URI or template)."""
        for kind in ("resources", "templates"):
            if getattr(self.registry, kind).pop(uri, None) is not None:
                self._changed(kind)
                return
        raise KeyError(f"no resource {uri!r}")

    def prompt(
        self,
        name: str | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        icons: Sequence[Mapping[str, Any]] | None = None,
        meta: Mapping[str, Any] | None = None,
        scopes: Sequence[str] = (),
    ) -> Callable[[F], F]:
        """Register a prompt; its arguments are the function's parameters."""
        _needs_call("prompt", name)

        def register(fn: F) -> F:
            self.add_prompt(
                fn,
                name=name,
                title=title,
                description=description,
                icons=icons,
                meta=meta,
                scopes=scopes,
            )
            return fn

        return register

    def add_prompt(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        icons: Sequence[Mapping[str, Any]] | None = None,
        meta: Mapping[str, Any] | None = None,
        scopes: Sequence[str] = (),
    ) -> None:
        """Register a prompt without the decorator (the options of :meth:`prompt`)."""
        spec = PromptSpec(
            fn,
            name=name,
            title=title,
            description=description,
            icons=icons,
            meta=meta,
            scopes=scopes,
        )
        self.registry.prompts[spec.name] = spec
        self._changed("prompts")

    def remove_prompt(self, name: str) -> None:
        """Stop serving a prompt; clients are told the list changed."""
        if self.registry.prompts.pop(name, None) is None:
            raise KeyError(f"no prompt {name!r}")
        self._changed("prompts")

    def completion(
        self, *, argument: str, prompt: str | None = None, template: str | None = None
    ) -> Callable[[F], F]:
        """Register the completion of a prompt's ``argument`` or a template's
        variable: the function takes the partial value (and, optionally, the
        arguments filled in so far) and returns candidates."""
        if (prompt is None) == (template is None):
            raise TypeError("completion() needs exactly one of prompt= and template=")
        key = (
            ("ref/prompt", prompt, argument)
            if prompt is not None
            else ("ref/resource", template or "", argument)
        )

        def register(fn: F) -> F:
            self.registry.completions[key] = Completer(fn)
            return fn

        return register

    # ------------------------------------------------------------ notifications

    def _changed(self, kind: str) -> None:
        self.registry.changed(kind)
        server = self._server
        if server is None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # nobody is connected outside a running loop
        task = loop.create_task(server.notify_list_changed(_LIST_CAPABILITY[kind]))
        self._notifying.add(task)
        task.add_done_callback(self._notifying.discard)

    async def notify_resource_updated(self, uri: str) -> None:
        """Tell the clients subscribed to ``uri`` that it changed (subscribed
        handshake sessions, and 2026-07-28 listen streams that asked for it)."""
        for session in self.registry.subscribers(uri):
            if session.is_closed:
                continue
            spec = lifecycle.revision(session.protocol_version).all_methods[
                "notifications/resources/updated"
            ]
            await session.notify(spec, spec.params(uri=uri))
        if self._server is not None:
            await self._server.notify_resource_updated(uri)

    # ------------------------------------------------------------ serving

    def handlers(self) -> list[object]:
        """A generated ``ServerHandlers`` object per revision, over this app's registry."""
        return [
            build_handlers(
                self.registry,
                Flavor(version, ttl_ms=self.cache_ttl_ms, cache_scope=self.cache_scope),
            )
            for version in self.versions
        ]

    def server(self) -> Server:
        """The low-level :class:`~mcp_runtime.server.Server` serving this app
        (built on first use, then the same one). What the app serves is
        declared when it is built: register before serving."""
        if self._server is None:
            capabilities = dict(self.capabilities)
            for kind, present in (
                ("tools", self.registry.tools),
                ("resources", self.registry.resources or self.registry.templates),
                ("prompts", self.registry.prompts),
            ):
                if present:
                    capabilities[kind] = {"listChanged": True, **capabilities.get(kind, {})}
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
            )
        return self._server

    def asgi(self, **options: Any) -> HttpApp:
        """The ASGI application serving the app over Streamable HTTP (``/mcp``)
        and legacy HTTP+SSE; ``options`` go to :func:`mcp_runtime.http.http_app`."""
        return http_app(self.server(), **options)

    def run(self) -> None:
        """Serve over stdio until stdin closes (blocking)."""
        run_stdio(self.server())

    def run_http(self, host: str = "127.0.0.1", port: int = 8000, **options: Any) -> None:
        """Serve over HTTP with uvicorn (blocking); ``options`` go to :meth:`asgi`.
        uvicorn runs with :data:`mcp_runtime.http.UVICORN_OPTIONS` (bounded
        keep-alive, concurrency and request heads, a short graceful shutdown). Once
        it listens, the endpoint's URL is printed on stderr; without the ``http``
        extra, one line names it and the program exits 1."""
        asgi = self.asgi(**options)
        path = str(options.get("path", "/mcp"))
        run_uvicorn(asgi, host, port, path=path, name=self.name)

    @contextlib.asynccontextmanager
    async def test_client(
        self,
        *,
        protocol_version: str | None = None,
        handlers: object | None = None,
        client: Client | None = None,
        principal: Any = None,
    ) -> AsyncIterator[ClientSession]:
        """A real client session connected to this app in memory: the way to
        unit-test a server. ``protocol_version`` picks the revision (default:
        the newest); ``handlers`` answer what the server asks (a generated
        ``ClientHandlers`` object: elicitation, sampling, roots);
        ``principal`` is the authenticated caller functions see (``ctx.principal``)."""
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
