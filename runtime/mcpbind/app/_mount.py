"""Mounting: one app served as part of another, under a prefix.

    billing = App("billing")
    notes = App("notes")
    main = App("main")
    main.mount(billing, prefix="billing")
    main.mount(notes, prefix="notes")

The prefix rule, one for everything the mounted app serves:

- a tool or prompt ``name`` becomes ``<prefix>_<name>`` (``notes_add``);
  completions of a prompt follow its new name;
- a resource URI or template ``scheme://rest`` becomes
  ``scheme://<prefix>/rest`` (``note://{id}`` → ``note://notes/{id}``), and a
  URI without an authority (``urn:rest``) becomes ``scheme:<prefix>/rest``;
  contents read through the parent carry the prefixed URI, subscriptions and
  ``notifications/resources/updated`` use it, completions of a template follow it;
  a tool's MCP Apps UI link (``_meta.ui.resourceUri``, ``ui://...``) is
  rewritten the same way, so that it names the UI resource the parent serves.

The mounted app keeps what is its own: its lifespan (entered after the
parent's, left before it; ``ctx.lifespan`` in its functions is its own), its
session state, its visibility rules (on its own names, after the parent's
rules: a parent rule on ``notes_add`` wins over a mounted app's rule on
``add``) and its middleware, which runs inside the parent's around the calls
of its items (``tools/call``, ``resources/read``, ``prompts/get``,
``completion/complete``), seeing its own names. Lists are answered by the
parent (the parent's middleware sees them). What the mounted app adds,
removes, shows or hides later reaches the parent's clients as the list-changed
notifications of the parent. An item of the parent's own with the same name
as a prefixed one wins. Mount before serving, like any registration: the
capabilities are declared when the server is built. Task-capable tools run as
tasks of the parent.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Mapping
from typing import Any, Generic, Literal, Protocol, TypeVar

import msgspec

from .._core.session import Handler
from ..host._names import prefixed_name as prefixed_name  # the host's rule too
from ..methods import RequestContext
from ..middleware import wrap
from ._completion import Completer, completion_key
from ._flavor import Flavor
from ._handlers import build_handlers
from ._middleware import Middleware, as_middleware
from ._registry import Registry
from ._resources import UriTemplate
from ._running import AppServices
from ._ui import relinked
from ._visibility import Visibility

_PREFIX = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.-]*$")

# The handler method of each forwarded method (the names of the generated ServerHandlers).
_METHODS = {
    "tools/call": "call_tool",
    "resources/read": "read_resource",
    "prompts/get": "get_prompt",
    "completion/complete": "complete",
}


def prefixed_uri(prefix: str, uri: str) -> str:
    """A resource URI or template as the parent serves it (see the module docstring)."""
    scheme, colon, rest = uri.partition(":")
    if not colon:
        return f"{prefix}/{uri}"
    if rest.startswith("//"):
        return f"{scheme}://{prefix}/{rest[2:]}"
    return f"{scheme}:{prefix}/{rest}"


def unprefixed_uri(prefix: str, uri: str) -> str | None:
    """The mounted app's URI of a URI of the parent (None: not one of its)."""
    scheme, colon, rest = uri.partition(":")
    if not colon:
        return uri[len(prefix) + 1 :] if uri.startswith(f"{prefix}/") else None
    if rest.startswith(f"//{prefix}/"):
        return f"{scheme}://{rest[len(prefix) + 3 :]}"
    if rest.startswith(f"{prefix}/"):
        return f"{scheme}:{rest[len(prefix) + 1 :]}"
    return None


class MountableApp(Protocol):
    """What a mount reads of the apps on either side: an
    :class:`~mcpbind.app.App` (named by this protocol because that module
    imports this one)."""

    registry: Registry
    visibility: Visibility
    middleware: tuple[Middleware, ...]
    cache_ttl_ms: int
    cache_scope: Literal["private", "public"]
    services: AppServices


A = TypeVar("A", bound=MountableApp)


class Mount(Generic[A]):
    """One app mounted in another: keeps the parent's registry in step with it."""

    def __init__(self, parent: A, app: A, prefix: str) -> None:
        if not isinstance(prefix, str) or not _PREFIX.match(prefix):
            raise ValueError(
                f"mount prefix {prefix!r}: letters, digits, '.' and '-', starting with a letter or digit"
            )
        if app is parent:
            raise ValueError("an app cannot be mounted in itself")
        self.parent = parent
        self.app = app
        self.prefix = prefix
        self._keys: dict[str, set[str]] = {
            kind: set() for kind in ("tools", "resources", "templates", "prompts")
        }
        self._completions: set[tuple[str, str, str]] = set()
        self._routes: dict[tuple[str, str], Handler] = {}

    # ------------------------------------------------------------ names

    def outer(self, kind: str, key: str) -> str:
        if kind in ("tools", "prompts"):
            return prefixed_name(self.prefix, key)
        return prefixed_uri(self.prefix, key)

    def inner(self, key: str) -> str | None:
        """The mounted app's name or URI of a key of the parent (None: not its)."""
        start = f"{self.prefix}_"
        if key.startswith(start):
            return key[len(start) :]
        return unprefixed_uri(self.prefix, key) if ":" in key else None

    # ------------------------------------------------------------ keeping in step

    def sync(self, kind: str) -> bool:
        """Make the parent's ``kind`` entries the mounted app's; whether they changed."""
        self._routes.clear()  # the mounted app's handlers are rebuilt for what it now serves
        if kind == "completions":
            self._sync_completions()
            return False
        parent_items: dict[str, Any] = getattr(self.parent.registry, kind)
        ours = self._keys[kind]
        wanted: dict[str, Any] = {}
        for key, spec in getattr(self.app.registry, kind).items():
            outer = self.outer(kind, key)
            if outer in parent_items and outer not in ours:
                continue  # the parent's own item of that name wins
            wanted[outer] = _wrap(kind, self, key, outer, spec)
        changed = bool(ours - set(wanted)) or any(
            parent_items.get(outer) is None or parent_items[outer].spec is not item.spec
            for outer, item in wanted.items()
        )
        for outer in ours - set(wanted):
            parent_items.pop(outer, None)
        for outer, item in wanted.items():
            current = parent_items.get(outer)
            if current is None or current.spec is not item.spec:
                parent_items[outer] = item
        self._keys[kind] = set(wanted)
        self._sync_completions()
        return changed

    def _sync_completions(self) -> None:
        completions = self.parent.registry.completions
        for key in self._completions:
            completions.pop(key, None)
        self._completions = set()
        for kind, name, argument in self.app.registry.completions:
            outer_kind = "prompts" if kind == "ref/prompt" else "templates"
            key = (kind, self.outer(outer_kind, name), argument)
            if key not in completions:
                completions[key] = MountedCompleter(self, name)
                self._completions.add(key)

    # ------------------------------------------------------------ visibility

    @property
    def active(self) -> bool:
        return bool(self.app.visibility.active)

    def verdict(self, session: object, key: str, tags: frozenset[str]) -> bool | None:
        inner = self.inner(key)
        if inner is None:
            return None
        verdict: bool | None = self.app.visibility.verdict(session, inner, tags)
        return verdict

    # ------------------------------------------------------------ forwarding

    async def forward(
        self, method: str, params: object, request: RequestContext, version: str
    ) -> Any:
        """Answer ``method`` with the mounted app's own handler, its middleware around it."""
        route = self._routes.get((method, version))
        if route is None:
            route = self._routes[(method, version)] = self._route(method, version)
        result = route(params, request)  # type: ignore[arg-type]  # the session's context
        return await result if isinstance(result, Awaitable) else result

    def _route(self, method: str, version: str) -> Handler:
        app = self.app
        flavor = Flavor(version, ttl_ms=app.cache_ttl_ms, cache_scope=app.cache_scope)
        flavor.services = app.services
        # Tasks are the parent's: the mounted handler runs the tool itself.
        handlers = build_handlers(app.registry, flavor, app.visibility, False, None)
        handler: Handler = getattr(handlers, _METHODS[method])
        if not app.middleware:
            return handler
        chain = [as_middleware(each) for each in app.middleware]
        return wrap(chain, flavor.revision.all_methods[method], handler)


def _wrap(kind: str, mount: Mount[Any], key: str, outer: str, spec: Any) -> Any:
    if kind == "tools":
        return MountedTool(mount, key, outer, spec)
    if kind == "prompts":
        return MountedPrompt(mount, key, outer, spec)
    return MountedResource(mount, key, outer, spec)


class MountedTool:
    """A tool of a mounted app as the parent lists and calls it."""

    __slots__ = ("mount", "inner", "name", "spec", "tags", "task_support", "scopes", "wire")

    def __init__(self, mount: Mount[Any], inner: str, outer: str, spec: Any) -> None:
        self.mount, self.inner, self.name, self.spec = mount, inner, outer, spec
        self.tags: frozenset[str] = spec.tags
        self.task_support = spec.task_support
        self.scopes: frozenset[str] = spec.scopes
        # Its UI resource is served under the prefix rule too: the link follows it.
        self.wire: dict[str, Any] = relinked(
            {**spec.wire, "name": outer}, lambda uri: prefixed_uri(mount.prefix, uri)
        )

    def call(self, params: Any, request: RequestContext, flavor: Flavor) -> Awaitable[Any]:
        params = msgspec.structs.replace(params, name=self.inner)
        return self.mount.forward("tools/call", params, request, flavor.version)


class MountedPrompt:
    """A prompt of a mounted app as the parent lists and gets it."""

    __slots__ = ("mount", "inner", "name", "spec", "tags", "scopes", "wire")

    def __init__(self, mount: Mount[Any], inner: str, outer: str, spec: Any) -> None:
        self.mount, self.inner, self.name, self.spec = mount, inner, outer, spec
        self.tags: frozenset[str] = spec.tags
        self.scopes: frozenset[str] = spec.scopes
        self.wire: dict[str, object] = {**spec.wire, "name": outer}

    def get(self, params: Any, request: RequestContext, flavor: Flavor) -> Awaitable[object]:
        params = msgspec.structs.replace(params, name=self.inner)
        return self.mount.forward("prompts/get", params, request, flavor.version)


class MountedResource:
    """A resource or template of a mounted app as the parent lists and reads it."""

    __slots__ = ("mount", "inner", "uri", "spec", "tags", "scopes", "template", "wire")

    def __init__(self, mount: Mount[Any], inner: str, outer: str, spec: Any) -> None:
        self.mount, self.inner, self.uri, self.spec = mount, inner, outer, spec
        self.tags: frozenset[str] = spec.tags
        self.scopes: frozenset[str] = spec.scopes
        self.template = UriTemplate(outer) if spec.template is not None else None
        field = "uriTemplate" if spec.template is not None else "uri"
        self.wire: dict[str, Any] = {**spec.wire, field: outer}

    async def read(
        self,
        uri: str,
        variables: Mapping[str, str],
        params: Any,
        request: RequestContext,
        flavor: Flavor,
    ) -> Any:
        inner = unprefixed_uri(self.mount.prefix, uri) or uri
        params = msgspec.structs.replace(params, uri=inner)
        result = await self.mount.forward("resources/read", params, request, flavor.version)
        contents = getattr(result, "contents", None)
        if not contents:
            return result  # an input-required result (2026-07-28) has none
        renamed = [
            msgspec.structs.replace(item, uri=uri) if getattr(item, "uri", None) == inner else item
            for item in contents
        ]
        return msgspec.structs.replace(result, contents=renamed)


class MountedCompleter(Completer):
    """A completion of a mounted app's prompt or template, answered by it."""

    __slots__ = ("mount", "inner")

    def __init__(self, mount: Mount[Any], inner: str) -> None:
        self.mount = mount
        self.inner = inner

    async def answer(self, params: Any, request: RequestContext, flavor: Flavor) -> Any:
        kind, _, _ = completion_key(params)
        field = "name" if kind == "ref/prompt" else "uri"
        ref = msgspec.structs.replace(params.ref, **{field: self.inner})
        params = msgspec.structs.replace(params, ref=ref)
        return await self.mount.forward("completion/complete", params, request, flavor.version)
