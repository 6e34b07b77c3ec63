"""Registering what an app serves: the decorators and their add/remove twins.

The decorators are typed: a prompt or completion function returning what
the wire cannot carry, or a misspelled tool annotation or option, is a mypy
error. Each kind's options are one typed dictionary (:class:`ToolOptions`,
:class:`ResourceOptions`, :class:`PromptOptions`), shared by the decorator,
its ``add_`` twin and the spec it builds.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, TypedDict, TypeVar, Union

from typing_extensions import Unpack

from ._completion import Completer
from ._prompts import Message, PromptSpec, RevisionMessage, RevisionResult
from ._registry import Registry
from ._resources import ResourceSpec
from ._tools import TaskSupport, ToolAnnotations, ToolSpec
from ._ui import (
    UI_MIME_TYPE,
    HtmlSource,
    UiContents,
    UiCsp,
    UiPermissions,
    UiResource,
    UiVisibility,
)

F = TypeVar("F", bound=Callable[..., Any])

# What a prompt function may return: a PromptMessage or GetPromptResult of any revision by
# their fields, so that another Struct, which the wire cannot carry as a prompt, is an error.
PromptItem = Union[str, Message, RevisionMessage]
PromptReturn = Union[PromptItem, RevisionResult, Sequence[PromptItem]]
PromptF = TypeVar("PromptF", bound=Callable[..., Union[PromptReturn, Awaitable[PromptReturn]]])
# What a completion function may return: candidates (one str is refused when registered).
CompleteF = TypeVar(
    "CompleteF", bound=Callable[..., Union[Iterable[str], Awaitable[Iterable[str]]]]
)


class ToolOptions(TypedDict, total=False):
    """The options of a tool (see :meth:`Registering.tool`)."""

    title: str | None
    description: str | None
    annotations: ToolAnnotations | None
    icons: Sequence[Mapping[str, Any]] | None
    meta: Mapping[str, Any] | None
    scopes: Sequence[str]
    structured_output: bool | None
    input_schema: Mapping[str, Any] | None
    tags: Iterable[str]
    task_support: TaskSupport | None
    ui: UiResource | None
    ui_visibility: Sequence[UiVisibility] | None


class ResourceOptions(TypedDict, total=False):
    """The options of a resource or template (see :meth:`Registering.resource`)."""

    name: str | None
    title: str | None
    description: str | None
    mime_type: str | None
    size: int | None
    icons: Sequence[Mapping[str, Any]] | None
    annotations: Mapping[str, Any] | None
    meta: Mapping[str, Any] | None
    scopes: Sequence[str]
    tags: Iterable[str]


class PromptOptions(TypedDict, total=False):
    """The options of a prompt (see :meth:`Registering.prompt`)."""

    title: str | None
    description: str | None
    icons: Sequence[Mapping[str, Any]] | None
    meta: Mapping[str, Any] | None
    scopes: Sequence[str]
    tags: Iterable[str]


def _needs_call(kind: str, name: object) -> None:
    if callable(name):  # @app.tool instead of @app.tool()
        raise TypeError(f"@app.{kind} is called to make the decorator: write @app.{kind}()")


class Registering:
    """The registering half of :class:`~mcpbind.app.App`."""

    registry: Registry

    def _changed(self, kind: str) -> None:
        raise NotImplementedError

    def _add(self, kind: str, key: str, spec: object) -> None:
        getattr(self.registry, kind)[key] = spec
        self._changed(kind)

    def _remove(self, kinds: tuple[str, ...], key: str, what: str) -> None:
        for kind in kinds:
            if getattr(self.registry, kind).pop(key, None) is not None:
                self._changed(kind)
                return
        raise KeyError(f"no {what} {key!r}")

    def tool(self, name: str | None = None, **options: Unpack[ToolOptions]) -> Callable[[F], F]:
        """Register a function as a tool (the function is returned unchanged).

        The input schema comes from the parameters, the description from the
        docstring, the outputSchema from the return annotation (``str`` is
        plain text; ``structured_output=False`` turns structured output off).
        A parameter annotated :class:`~mcpbind.app.Context` gets the
        request's context. Options (:class:`ToolOptions`): ``title``,
        ``description``, ``icons``, ``meta``; ``scopes``: OAuth scopes the
        caller's token must grant (``InsufficientScope`` otherwise);
        ``input_schema`` replaces the derived schema in ``tools/list`` (the
        signature still decodes the arguments); ``tags``: for :meth:`enable`
        and :meth:`disable`; ``annotations`` is a :class:`ToolAnnotations` (a
        misspelled hint is a mypy error, and refused here); ``task_support``
        ("optional" or "required"): the tool may run as a task (2025-11-25
        core tasks, and the 2026-07-28 tasks extension when the app has one);
        see :mod:`mcpbind.app._core_tasks`. ``ui``: the
        :class:`~mcpbind.app._ui.UiResource` (from :meth:`ui_resource`)
        the tool renders in an MCP Apps host (its ``_meta.ui.resourceUri``);
        ``ui_visibility``: who may call it, ``["model", "app"]`` by default,
        ``["app"]`` for a tool only its UI calls (hidden from clients without
        the extension); see :mod:`mcpbind.app._ui`.
        """
        _needs_call("tool", name)

        def register(fn: F) -> F:
            self.add_tool(fn, name=name, **options)
            return fn

        return register

    def add_tool(
        self, fn: Callable[..., object], *, name: str | None = None, **options: Unpack[ToolOptions]
    ) -> None:
        """Register a tool without the decorator (the options of :meth:`tool`);
        clients are told the list changed."""
        spec = ToolSpec(fn, name=name, **options)
        self._add("tools", spec.name, spec)

    def remove_tool(self, name: str) -> None:
        """Stop serving a tool; clients are told the list changed."""
        self._remove(("tools",), name, "tool")

    def resource(self, uri: str, **options: Unpack[ResourceOptions]) -> Callable[[F], F]:
        """Register a resource (``uri``) or a resource template (``"note://{id}"``).

        The template's variables must be the function's parameters (those
        with defaults may be left out). The function returns ``str`` (text),
        ``bytes`` (a blob), a list of resource contents, or any JSON value
        (sent as ``application/json`` text). Options: :class:`ResourceOptions`.
        """
        if not isinstance(uri, str):
            raise TypeError('@app.resource needs the URI or template: @app.resource("note://{id}")')

        def register(fn: F) -> F:
            self.add_resource(uri, fn, **options)
            return fn

        return register

    def add_resource(
        self, uri: str, fn: Callable[..., object], **options: Unpack[ResourceOptions]
    ) -> None:
        """Register a resource or template without the decorator (the options of :meth:`resource`)."""
        spec = ResourceSpec(uri, fn, **options)
        self._add("templates" if spec.template is not None else "resources", uri, spec)

    def ui_resource(
        self,
        uri: str,
        html: HtmlSource,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        csp: UiCsp | None = None,
        permissions: UiPermissions | None = None,
        domain: str | None = None,
        prefers_border: bool | None = None,
        scopes: Sequence[str] = (),
        tags: Iterable[str] = (),
    ) -> UiResource:
        """Register an MCP Apps UI resource and return the handle tools link to
        (``@app.tool(ui=handle)``).

        ``uri`` is a ``ui://`` URI (ValueError otherwise). ``html`` is the
        document: a string, a :class:`~pathlib.Path` read at each read, or a
        function (sync or async) returning it. It is served as
        ``text/html;profile=mcp-app``, with ``_meta.ui`` on the listing and on
        the contents: ``csp`` (:class:`~mcpbind.app._ui.UiCsp`: the
        origins the page may connect to, load resources, frames and base URIs
        from; none by default), ``permissions``
        (:class:`~mcpbind.app._ui.UiPermissions`: camera, microphone,
        geolocation, clipboardWrite), ``domain`` (a dedicated sandbox origin)
        and ``prefers_border``. ``name`` defaults to the URI; ``scopes`` and
        ``tags`` are those of :meth:`resource`. Registering it also declares
        the extension in the app's capabilities.
        """
        resource = UiResource(
            uri,
            html,
            csp=csp,
            permissions=permissions,
            domain=domain,
            prefers_border=prefers_border,
        )
        meta = {"ui": resource.meta} if resource.meta else None

        async def read() -> list[UiContents]:
            text = await resource.read_html()
            return [UiContents(uri=uri, mime_type=UI_MIME_TYPE, text=text, meta=meta)]

        self.add_resource(
            uri,
            read,
            name=name or uri,
            title=title,
            description=description,
            mime_type=UI_MIME_TYPE,
            meta=meta,
            scopes=scopes,
            tags=tags,
        )
        return resource

    def remove_resource(self, uri: str) -> None:
        """Stop serving a resource or template (by its URI or template)."""
        self._remove(("resources", "templates"), uri, "resource")

    def prompt(
        self, name: str | None = None, **options: Unpack[PromptOptions]
    ) -> Callable[[PromptF], PromptF]:
        """Register a prompt; its arguments are the function's parameters. It
        returns a string, a :class:`Message`, a generated ``PromptMessage``, a
        list of these, or a generated ``GetPromptResult``, of any revision
        (another return type, such as a Struct of your own, is a mypy error).
        Options: :class:`PromptOptions`."""
        _needs_call("prompt", name)

        def register(fn: PromptF) -> PromptF:
            self.add_prompt(fn, name=name, **options)
            return fn

        return register

    def add_prompt(
        self,
        fn: Callable[..., object],
        *,
        name: str | None = None,
        **options: Unpack[PromptOptions],
    ) -> None:
        """Register a prompt without the decorator (the options of :meth:`prompt`)."""
        spec = PromptSpec(fn, name=name, **options)
        self._add("prompts", spec.name, spec)

    def remove_prompt(self, name: str) -> None:
        """Stop serving a prompt; clients are told the list changed."""
        self._remove(("prompts",), name, "prompt")

    def completion(
        self, *, argument: str, prompt: str | None = None, template: str | None = None
    ) -> Callable[[CompleteF], CompleteF]:
        """Register the completion of a prompt's ``argument`` or a template's
        variable: the function takes the partial value (and, optionally, the
        arguments filled in so far) and returns candidates, a list of strings
        (another type is a mypy error; one ``str`` is refused here)."""
        if (prompt is None) == (template is None):
            raise TypeError("completion() needs exactly one of prompt= and template=")
        key = (
            ("ref/prompt", prompt, argument)
            if prompt is not None
            else ("ref/resource", template or "", argument)
        )

        def register(fn: CompleteF) -> CompleteF:
            self.registry.completions[key] = Completer(fn)
            self._changed("completions")  # for the apps this one is mounted in
            return fn

        return register
