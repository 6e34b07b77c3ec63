"""MCP Apps (``io.modelcontextprotocol/ui``, SEP-1865): tools with an interactive UI.

A tool names a ``ui://`` resource in ``_meta.ui.resourceUri``; the resource
is an HTML document served as ``text/html;profile=mcp-app``, which a host
renders in a sandboxed iframe next to the tool's result::

    app = App("weather")
    dashboard = app.ui_resource(
        "ui://weather/dashboard",
        html=Path("dashboard.html"),
        csp=UiCsp(connect_domains=["https://api.weather.example"]),
    )

    @app.tool(ui=dashboard)
    def forecast(city: str) -> str:
        return f"Sunny in {city}"           # what a client without Apps shows

    @app.tool(ui=dashboard, ui_visibility=["app"])
    def refresh(city: str) -> dict[str, float]:   # called by the UI only
        ...

:meth:`~mcpbind.app.App.ui_resource` registers the resource and returns a
:class:`UiResource`, the handle ``@app.tool(ui=...)`` takes: a tool cannot be
linked to anything else (a plain string or another resource is a mypy
error), and a handle exists only for a ``ui://`` URI.

Degradation: a client that did not negotiate the extension
(``capabilities.extensions["io.modelcontextprotocol/ui"]``, on every
revision; see :mod:`mcpbind._core.extensions`) gets the tools without their
``_meta.ui`` and without the tools only an App may call
(``ui_visibility=["app"]``, which the specification keeps from the model),
and the tool's result as the tool returned it: its text is what such a client
shows. A tool may branch on :meth:`~mcpbind.app.Context.client_supports_ui`.
The app declares the extension in its own capabilities as soon as it has a
UI resource.

The wire types come from the extension's published schema, generated into
``mcpbind_protocol.ext_apps`` (``UiCsp`` is its ``McpUiResourceCsp``,
``UiPermissions`` its ``McpUiResourcePermissions``).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal, Union

import msgspec

from mcpbind_protocol.ext_apps import EXTENSION_ID
from mcpbind_protocol.ext_apps.types import McpUiResourceCsp as UiCsp
from mcpbind_protocol.ext_apps.types import McpUiResourceMeta, McpUiToolMeta
from mcpbind_protocol.ext_apps.types import McpUiResourcePermissions as UiPermissions

from .._core.extensions import negotiated

if TYPE_CHECKING:
    from ..methods import RequestContext

__all__ = [
    "UI_EXTENSION_ID",
    "UI_MIME_TYPE",
    "HtmlSource",
    "UiCsp",
    "UiPermissions",
    "UiResource",
    "UiVisibility",
    "client_supports_ui",
]

UI_EXTENSION_ID: Final = EXTENSION_ID
"""The extension's identifier, ``io.modelcontextprotocol/ui``."""

UI_MIME_TYPE: Final = "text/html;profile=mcp-app"
"""The MIME type of a UI resource; hosts render no other."""

UiVisibility = Literal["model", "app"]
"""Who may call a tool: the model (through the host), the App (its UI), or both (the default)."""

HtmlSource = Union[str, Path, Callable[[], Union[str, Awaitable[str]]]]
"""A UI resource's HTML: the document itself, a file read at each
``resources/read`` (edits show on the next read), or a function (sync or
async) returning it."""

# The legacy flat key ext-apps hosts before 1.0 read; the package's own
# registerAppTool still writes it next to `_meta.ui`.
LEGACY_RESOURCE_URI_KEY: Final = "ui/resourceUri"
_SCHEME = "ui://"


class UiResource:
    """A registered UI resource: the handle a tool is linked to (``@app.tool(ui=...)``).

    Made by :meth:`~mcpbind.app.App.ui_resource`, which registers it;
    constructing one checks the URI is a ``ui://`` one (``ValueError``
    otherwise). ``uri`` is its URI, ``meta`` its ``_meta.ui`` object as the
    wire carries it (CSP, permissions, domain, border preference)."""

    __slots__ = ("uri", "html", "meta")

    def __init__(
        self,
        uri: str,
        html: HtmlSource,
        *,
        csp: UiCsp | None = None,
        permissions: UiPermissions | None = None,
        domain: str | None = None,
        prefers_border: bool | None = None,
    ) -> None:
        if not isinstance(uri, str) or not uri.startswith(_SCHEME) or len(uri) == len(_SCHEME):
            raise ValueError(f"a UI resource's URI is a ui:// one, not {uri!r}")
        if not isinstance(html, (str, Path)) and not callable(html):
            raise TypeError(f"UI resource {uri}: html is a str, a Path or a function, not {html!r}")
        self.uri = uri
        self.html = html
        ui: dict[str, Any] = {}
        if csp is not None:
            ui["csp"] = msgspec.to_builtins(csp)
        if permissions is not None:
            ui["permissions"] = msgspec.to_builtins(permissions)
        if domain is not None:
            ui["domain"] = domain
        if prefers_border is not None:
            ui["prefersBorder"] = prefers_border
        # Checked against the schema's type once, so that what hosts get is what it allows.
        self.meta: dict[str, Any] = msgspec.to_builtins(msgspec.convert(ui, McpUiResourceMeta))

    def __repr__(self) -> str:
        return f"UiResource({self.uri!r})"

    async def read_html(self) -> str:
        """The document, read now from its source."""
        source = self.html
        if isinstance(source, str):
            return source
        if isinstance(source, Path):
            return source.read_text(encoding="utf-8")
        value = source()
        if inspect.isawaitable(value):
            value = await value
        if not isinstance(value, str):
            raise TypeError(
                f"UI resource {self.uri}: the html function returned {type(value).__name__}"
            )
        return value


class UiContents(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A UI resource's contents as ``resources/read`` answers them on every
    revision: the document, its MIME type, and its ``_meta.ui``."""

    uri: str
    mime_type: str = msgspec.field(name="mimeType")
    text: str
    meta: dict[str, Any] | None = msgspec.field(name="_meta", default=None)


def serves_ui(resources: Mapping[str, Any]) -> bool:
    """Whether registered resources (specs with a ``wire``) include a UI one."""
    return any(spec.wire.get("mimeType") == UI_MIME_TYPE for spec in resources.values())


def tool_meta(resource: UiResource, visibility: Sequence[UiVisibility] | None) -> dict[str, Any]:
    """A linked tool's ``_meta`` entries: ``ui`` (checked against the schema's
    McpUiToolMeta) and the legacy flat key."""
    if visibility is not None:
        unknown = sorted(set(visibility) - {"model", "app"})
        if unknown or not visibility:
            raise ValueError(
                f"ui_visibility is a non-empty list of 'model' and 'app', not {list(visibility)!r}"
            )
    link: dict[str, Any] = {"resourceUri": resource.uri}
    if visibility is not None:
        link["visibility"] = list(dict.fromkeys(visibility))
    checked = msgspec.to_builtins(msgspec.convert(link, McpUiToolMeta))
    return {"ui": checked, LEGACY_RESOURCE_URI_KEY: resource.uri}


def relinked(wire: dict[str, Any], rename: Callable[[str], str]) -> dict[str, Any]:
    """A tool's ``wire`` with its UI link renamed (a gateway's prefix rule:
    ``ui://x`` served as ``ui://<prefix>/x``), in ``_meta.ui`` and the legacy key."""
    meta = wire.get("_meta")
    if not isinstance(meta, Mapping) or not has_ui(meta):
        return wire
    meta = dict(meta)
    ui = meta.get("ui")
    if isinstance(ui, Mapping) and isinstance(ui.get("resourceUri"), str):
        meta["ui"] = {**ui, "resourceUri": rename(ui["resourceUri"])}
    legacy = meta.get(LEGACY_RESOURCE_URI_KEY)
    if isinstance(legacy, str):
        meta[LEGACY_RESOURCE_URI_KEY] = rename(legacy)
    return {**wire, "_meta": meta}


def client_supports_ui(capabilities: object) -> bool:
    """Whether client capabilities (any revision's, a mapping, or None)
    negotiated MCP Apps: the extension declared with
    ``text/html;profile=mcp-app`` among its ``mimeTypes``, the way the
    official SDKs and ext-apps' ``getUiCapability`` read it."""
    settings = negotiated(capabilities, UI_EXTENSION_ID)
    mime_types = settings.get("mimeTypes") if settings is not None else None
    return isinstance(mime_types, list) and UI_MIME_TYPE in mime_types


def supports_ui(ctx: RequestContext) -> bool:
    """:func:`client_supports_ui` of the client of a request."""
    return client_supports_ui(ctx.client_capabilities)


class UiDegradation:
    """What a client that did not negotiate MCP Apps gets of a tools listing:
    the tools without ``_meta.ui`` (and the legacy key), and without those
    only an App may call. The degraded listing is kept for as long as the
    listing it was made from is the current one (a registry keeps one per
    revision until its tools change)."""

    __slots__ = ("_source", "_degraded")

    def __init__(self) -> None:
        self._source: list[Any] | None = None
        self._degraded: list[Any] = []  # `_source` itself when it has no UI link

    def of(self, tools: list[Any], specs: Mapping[str, Any], ctx: RequestContext) -> list[Any]:
        """``tools`` (a revision's listing of the tool ``specs``, by name) as
        the client of ``ctx`` gets it. A listing without UI links is passed
        through without asking what the client declared."""
        if tools is not self._source:
            self._source, self._degraded = tools, self._degrade(tools, specs)
        if self._degraded is tools or supports_ui(ctx):
            return tools
        return self._degraded

    @staticmethod
    def _degrade(tools: list[Any], specs: Mapping[str, Any]) -> list[Any]:
        # By the specs' own `_meta`: the revisions before 2025-06-18 list tools without one.
        linked = [spec.wire.get("_meta") for spec in specs.values()]
        if not any(has_ui(meta) for meta in linked):
            return tools
        hidden = {name for name, spec in specs.items() if app_only(spec.wire.get("_meta"))}
        degraded = []
        for tool in tools:
            if tool.name in hidden:
                continue
            meta = msgspec.structs.asdict(tool).get("meta")
            if isinstance(meta, Mapping) and has_ui(meta):
                kept = without_ui(meta)
                tool = msgspec.structs.replace(tool, meta=msgspec.UNSET if kept is None else kept)
            degraded.append(tool)
        return degraded

    @staticmethod
    def refused(wire: Mapping[str, Any], ctx: RequestContext) -> bool:
        """Whether a call of the tool ``wire`` describes is refused: an
        App-only tool called by a client without the extension, as if it did not exist."""
        return app_only(wire.get("_meta")) and not supports_ui(ctx)


def app_only(meta: Mapping[str, Any] | None) -> bool:
    """Whether a tool's ``_meta`` keeps it for Apps only (``ui.visibility == ["app"]``)."""
    ui = meta.get("ui") if meta else None
    visibility = ui.get("visibility") if isinstance(ui, Mapping) else None
    return isinstance(visibility, list) and "model" not in visibility and "app" in visibility


def without_ui(meta: Mapping[str, Any]) -> dict[str, Any] | None:
    """A tool's ``_meta`` without what only an Apps host can use (None if nothing is left)."""
    kept = {k: v for k, v in meta.items() if k not in ("ui", LEGACY_RESOURCE_URI_KEY)}
    return kept or None


def has_ui(meta: Mapping[str, Any] | None) -> bool:
    """Whether a tool's ``_meta`` links it to a UI."""
    return meta is not None and ("ui" in meta or LEGACY_RESOURCE_URI_KEY in meta)
