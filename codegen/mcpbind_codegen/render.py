"""Render the intermediate model with jinja2 templates and format with black."""

from __future__ import annotations

import ast
import graphlib
from typing import Any

import black
import black.mode
import black.parsing
import jinja2

from . import decoders
from .methods import Method
from .model import (
    TYPING_NAMES,
    Alias,
    GenerationError,
    Module,
    Ref,
    RenderContext,
    Struct,
    UnionOf,
)

_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("mcpbind_codegen", "templates"),
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
    undefined=jinja2.StrictUndefined,
    autoescape=False,
)
_ENV.filters["repr"] = repr
_IMPORTS = "#<imports>#"
_BLACK_MODE = black.mode.Mode(line_length=100, target_versions={black.mode.TargetVersion.PY311})


def format_source(source: str) -> str:
    try:
        return black.format_str(source, mode=_BLACK_MODE)
    except black.parsing.InvalidInput as error:  # a template bug, never the user's input
        raise GenerationError(f"generated code does not parse: {error}") from None


def imports_block(
    ctx: RenderContext,
    extra_typing: set[str],
    runtime: list[str],
    msgspec: bool,
    base: tuple[str, set[str]] | None = None,
) -> str:
    """The import lines for what a rendered module actually uses; ``base``: the
    revision package an extension's types come from, and the names it takes."""
    lines = []
    typing_names = sorted((ctx.used_typing | extra_typing) - ctx.definitions)
    qualified = (ctx.used_typing | extra_typing) & ctx.definitions
    if qualified:
        lines.append("import typing")
    if typing_names:
        lines.append(f"from typing import {', '.join(typing_names)}")
    if msgspec:
        lines.append("")
        lines.append("import msgspec")
    if runtime:
        lines.append("")
        lines.append(f"from mcpbind.codec import {', '.join(sorted(runtime))}")
    if base is not None and base[1]:
        lines.append("")
        lines.append(f"from ..{base[0]}.types import {', '.join(sorted(base[1]))}")
    return "\n".join(lines)


def _alias_order(module: Module, aliases: list[Alias]) -> list[Alias]:
    """Aliases in dependency order (they run at import time), ties by name."""
    names = {a.name for a in aliases}
    graph = {a.name: {r for r in a.refs() if r in names and r != a.name} for a in aliases}
    # Recursive aliases are Any at runtime: their references do not order them.
    for a in aliases:
        if a.recursive:
            graph[a.name] = set()
    sorter = graphlib.TopologicalSorter(graph)
    sorter.prepare()
    ordered: list[str] = []
    while sorter.is_active():
        ready = sorted(sorter.get_ready())
        ordered.extend(ready)
        sorter.done(*ready)
    by_name = {a.name: a for a in aliases}
    return [by_name[n] for n in ordered]


def render_types(module: Module) -> str:
    definitions = set(module.structs) | set(module.aliases)
    ctx = RenderContext(definitions=definitions & set(TYPING_NAMES))
    leading: list[Alias] = []
    trailing: list[Alias] = []
    for alias in module.aliases.values():
        depends_on_types = (
            alias.untagged or alias.recursive or _reaches_struct(module, alias.name, set())
        )
        (trailing if depends_on_types else leading).append(alias)
    structs = [module.structs[n] for n in sorted(module.structs)]
    exported = sorted(definitions)
    decoders = json_decoders(module, structs)
    body_args: dict[str, Any] = dict(
        module=module,
        ctx=ctx,
        imports=_IMPORTS,
        exported=exported,
        leading_aliases=_alias_order(module, leading),
        structs=structs,
        trailing_aliases=_alias_order(module, trailing),
        decoders=decoders,
    )
    source = _ENV.get_template("types.py.j2").render(**body_args)
    extra_typing = set()
    runtime = []
    if module.aliases:
        extra_typing.add("TypeAlias")
    if any(a.untagged or a.recursive for a in module.aliases.values()):
        extra_typing.add("TYPE_CHECKING")
    if any(a.recursive for a in module.aliases.values()):
        extra_typing.add("Any")
    runtime += _union_factories(module)
    if any(s.tag_field for s in structs):
        extra_typing.add("ClassVar")
    if any(s.open for s in structs):
        extra_typing |= {"Any", "cast"}
        runtime.append("OpenObject")
    if any(not f.required for s in structs for f in s.fields):
        runtime += ["UNSET", "UnsetType"]
    elif any("UNSET" in line for lines in decoders.values() for line in lines):
        runtime.append("UNSET")
    if decoders:
        runtime.append("new_object")
    base = (module.revision_package, module.base_names())
    source = source.replace(
        _IMPORTS, imports_block(ctx, extra_typing, runtime, msgspec=bool(structs), base=base), 1
    )
    return format_source(source)


def _union_factories(module: Module) -> list[str]:
    """The codec functions that make the runtime stand-ins of the module's unions."""
    untagged = [a for a in module.aliases.values() if a.untagged]
    factories = []
    if any(a.discriminator is None for a in untagged):
        factories.append("untagged_union")
    if any(a.discriminator is not None for a in untagged):
        factories.append("discriminated_union")
    return factories


def json_decoders(module: Module, structs: list[Struct]) -> dict[str, list[str]]:
    """The ``__from_json__`` bodies of the open objects that get one, by class name."""
    found = {s.name: decoders.json_decoder(module, s) for s in structs if s.open}
    return {name: lines for name, lines in found.items() if lines is not None}


def _reaches_struct(module: Module, name: str, seen: set[str]) -> bool:
    if name in seen:
        return False
    seen.add(name)
    alias = module.aliases[name]
    for ref in alias.refs():
        if ref in module.structs:
            return True
        target = module.aliases.get(ref)
        if target is not None and (
            target.untagged or target.recursive or _reaches_struct(module, ref, seen)
        ):
            return True
    return False


# ---------------------------------------------------------------- methods, stubs, handlers

_STUB_RESERVED = {"self", "params", "timeout", "on_progress", "cursor_"}


class MethodView:
    """A derived method as the method and stub templates print it."""

    def __init__(self, method: Method, module: Module, ctx: RenderContext) -> None:
        self.m = method
        self.ctx = ctx
        self.module = module
        struct = method.params_struct
        required, optional = method.arguments()
        self.required_args = required
        self.optional_args = optional
        self.whole_params = method.params is not None and struct is None
        for f in required + optional:
            if f.name in _STUB_RESERVED:
                raise GenerationError(
                    f"params field {f.wire_name!r} of {method.method} clashes with a stub argument"
                )

    def __getattr__(self, name: str) -> Any:
        return getattr(self.m, name)

    @property
    def doc(self) -> str | None:
        struct = self.module.structs.get(self.m.message)
        return struct.doc if struct else None

    @property
    def stub_name(self) -> str:
        return self.m.handler if self.m.kind == "request" else self.m.notify_name

    @property
    def params_annotation(self) -> str:
        return self.m.params.render(self.ctx) if self.m.params is not None else "None"

    @property
    def result_annotation(self) -> str:
        return self.m.result.render(self.ctx) if self.m.result is not None else "None"

    @property
    def final_result(self) -> str | None:
        """For a result that may be input-required (2026-07-28 on): the other
        arms, which is all a stub returns, since the session answers the input
        requests and retries. None for every other result."""
        result = self.m.result
        if isinstance(result, UnionOf) and len(result.arms) == 1:  # an inline union given a name
            result = result.arms[0]
        alias = self.module.aliases.get(result.name) if isinstance(result, Ref) else None
        union = alias.type if alias is not None else result
        if not isinstance(union, UnionOf):
            return None
        final = [
            arm
            for arm in union.arms
            if not (isinstance(arm, Ref) and arm.name == "InputRequiredResult")
        ]
        if len(final) == len(union.arms):
            return None
        return " | ".join(arm.render(self.ctx) for arm in final)

    @property
    def stub_result(self) -> str:
        return self.final_result or self.result_annotation

    @property
    def params_runtime(self) -> str:
        return self.params_annotation

    @property
    def result_runtime(self) -> str:
        return self.result_annotation

    @property
    def params_source(self) -> str:
        return self._params_source(with_task=False)

    @property
    def params_source_task(self) -> str:
        """The params of the ``_as_task`` stub: those of the plain one and the task."""
        return self._params_source(with_task=True)

    def _params_source(self, with_task: bool) -> str:
        struct = self.m.params_struct
        if self.m.params is None:
            return "None"
        if struct is None:  # a params union: each arm has the task member
            return (
                "msgspec.structs.replace(params, task=task if task is not None else TaskMetadata())"
                if with_task
                else "params"
            )
        fields = [
            f
            for f in struct.wire_fields
            if with_task or not self.m.task_augmented or f.wire_name != "task"
        ]
        args = [f"{struct.attr(f)}={f.name}" for f in fields if f.wire_name != "task"]
        if with_task:
            args.append("task=task if task is not None else TaskMetadata()")
        return f"{self.params_annotation}({', '.join(args)})"

    @property
    def task_result_source(self) -> str:
        """The params of ``tasks/result`` for a task id held in ``task_id``."""
        assert self.m.task_result_params is not None
        params, field = self.m.task_result_params
        return f"{params.render(self.ctx)}({field.name}=task_id)"

    @property
    def page(self) -> dict[str, str] | None:
        if self.m.page_items is None:
            return None
        field_name, item = self.m.page_items
        return {"field": field_name, "item": item.render(self.ctx)}

    @property
    def page_items_runtime(self) -> str | None:
        """``("tools", Tool)``: the wire member holding a list request's items, and their type."""
        if self.m.page_items is None or self.m.page_member is None:
            return None
        return f"({self.m.page_member!r}, {self.m.page_items[1].render(self.ctx)})"


def _prune_imports(source: str, candidates: dict[str, str]) -> str:
    """Import lines for the candidate names the module body uses.

    ``candidates`` maps a name to the module it comes from; ``typing`` names
    and relative imports are grouped the usual way.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError as error:  # a template bug, never the user's input
        raise GenerationError(f"generated code does not parse: {error}") from None
    used = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    by_module: dict[str, list[str]] = {}
    plain_imports = []
    for name, origin in candidates.items():
        if name not in used:
            continue
        if origin == "<module>":
            plain_imports.append(f"import {name}")
        else:
            by_module.setdefault(origin, []).append(name)
    groups: list[list[str]] = [[], sorted(plain_imports), [], []]
    # Relative imports from farther up first (``..v2026_07_28.types`` before ``.types``).
    for origin in sorted(by_module, key=lambda o: (-(len(o) - len(o.lstrip("."))), o)):
        names = sorted(by_module[origin], key=lambda n: (n.lower(), n))
        line = f"from {origin} import {', '.join(names)}"
        group = 3 if origin.startswith(".") else 2 if origin.startswith("mcpbind") else 0
        groups[group].append(line)
    return "\n\n".join("\n".join(g) for g in groups if g)


def _candidates(module: Module) -> dict[str, str]:
    names = {n: f"..{module.revision_package}.types" for n in module.base_names()}
    names.update({n: ".types" for n in (*module.structs, *module.aliases)})
    names.update({n: "typing" for n in ("Any", "Literal", "Annotated", "cast")})
    names["msgspec"] = "<module>"
    names["AsyncIterator"] = "collections.abc"
    names.update({n: "mcpbind.codec" for n in ("UNSET", "UnsetType")})
    names.update(
        {
            n: "mcpbind.methods"
            for n in (
                "Caller",
                "HandlerNotImplemented",
                "MethodSpec",
                "ProgressCallback",
                "RequestContext",
                "Selective",
            )
        }
    )
    return names


def _with_imports(source: str, module: Module, extra: dict[str, str] | None = None) -> str:
    candidates = _candidates(module)
    candidates.update(extra or {})
    body = source.replace(_IMPORTS, "")
    return format_source(source.replace(_IMPORTS, _prune_imports(body, candidates), 1))


def render_methods(module: Module, methods: list[Method]) -> str:
    ctx = RenderContext(definitions=set())
    views = [MethodView(m, module, ctx) for m in methods]
    messages = [v for v in views if not v.input_request]

    def table(name: str, direction: str, kind: str, doc: str) -> dict[str, Any]:
        chosen = [v for v in messages if v.kind == kind and direction in v.directions]
        return {"name": name, "methods": chosen, "doc": doc}

    tables = [
        table(
            "CLIENT_REQUESTS",
            "client_to_server",
            "request",
            "Requests a client sends and a server handles.",
        ),
        table(
            "SERVER_REQUESTS",
            "server_to_client",
            "request",
            "Requests a server sends and a client handles.",
        ),
        table(
            "CLIENT_NOTIFICATIONS",
            "client_to_server",
            "notification",
            "Notifications a client sends.",
        ),
        table(
            "SERVER_NOTIFICATIONS",
            "server_to_client",
            "notification",
            "Notifications a server sends.",
        ),
    ]
    inputs = [v for v in views if v.input_request]
    if inputs:
        tables.append(
            {
                "name": "INPUT_REQUESTS",
                "methods": inputs,
                "doc": "Requests a server returns inside an input-required result, for the client to answer.",
            }
        )
    tables += _input_required_table(messages)
    source = _ENV.get_template("methods.py.j2").render(
        module=module,
        methods=views,
        messages=messages,
        tables=tables,
        input_messages=[v for v in views if v.input_request],
    )
    return _with_imports(source, module)


def _input_required_table(messages: list[MethodView]) -> list[dict[str, Any]]:
    """INPUT_REQUIRED_METHODS, where the revision has requests that may answer
    input-required (2026-07-28 on); older revisions have no such table."""
    chosen = [v for v in messages if v.may_require_input]
    if not chosen:
        return []
    doc = (
        "Requests a server may answer with an input-required result (multi round-trip\n"
        "requests): the client answers its input requests and retries the request."
    )
    return [{"name": "INPUT_REQUIRED_METHODS", "methods": chosen, "doc": doc}]


def render_side(module: Module, methods: list[Method], side: str) -> str:
    """``client.py`` (side="client") or ``server.py`` (side="server")."""
    ctx = RenderContext(definitions=set())
    other = "server" if side == "client" else "client"
    sends = f"{side}_to_{other}"
    receives = f"{other}_to_{side}"
    stub = [
        MethodView(m, module, ctx)
        for m in methods
        if sends in m.directions and m.in_stubs and not m.input_request
    ]
    handlers = [
        MethodView(m, module, ctx)
        for m in methods
        if receives in m.directions and not m.runtime_owned
    ]
    names = {
        "client": dict(
            summary="the stub a client calls a server through, and the handlers a client implements for what a server sends it.",
            stub_class="ClientStub",
            stub_doc="Typed requests and notifications from a client to a server.",
            handlers_class="ClientHandlers",
            handlers_doc=(
                "What a client answers: subclass, override what the client supports (use @override).\n\n"
                "    A request without an override is answered with -32601 (method not found);\n"
                "    a notification without one is ignored. Overridden methods also decide the\n"
                "    capabilities the client declares."
            ),
        ),
        "server": dict(
            summary="the handlers a server implements, and the stub a server calls a client through.",
            stub_class="ServerStub",
            stub_doc="Typed requests and notifications from a server to its client.",
            handlers_class="ServerHandlers",
            handlers_doc=(
                "What a server answers: subclass, override what the server supports (use @override).\n\n"
                "    A request without an override is answered with -32601 (method not found);\n"
                "    a notification without one is ignored. Overridden methods also decide the\n"
                "    capabilities the server declares."
            ),
        ),
    }[side]
    # A server's handlers also come as one class forwarding to an object that
    # answers them (the application layer's), so no per-revision class is hand-written.
    answering = side == "server" and bool(handlers) and module.extension is None
    source = _ENV.get_template("rpc.py.j2").render(
        module=module,
        side=side,
        stub_methods=stub,
        handler_methods=handlers,
        ctx=ctx,
        answering=answering,
        answers_class="ServerAnswers",
        answering_class="AnsweringHandlers",
        **names,
    )
    extra = {"methods": ".", "Coroutine": "collections.abc", "Mapping": "collections.abc"}
    extra["Protocol"] = "typing"
    return _with_imports(source, module, extra)


def render_init(module: Module, package: str) -> str:
    names = sorted({*module.structs, *module.aliases})
    source = _ENV.get_template("init.py.j2").render(module=module, names=names, package=package)
    return format_source(source)


def render_extension_init(module: Module, package: str) -> str:
    names = sorted({*module.structs, *module.aliases})
    source = _ENV.get_template("extension_init.py.j2").render(
        module=module, extension=module.extension, names=names, package=package
    )
    return format_source(source)


def render_index(
    package: str, revisions: list[tuple[str, str, str]], extensions: list[tuple[str, str]]
) -> str:
    """``extensions``: (identifier, package) of each extension package."""
    source = _ENV.get_template("index.py.j2").render(
        root_package=package, revisions=revisions, extensions=extensions
    )
    return format_source(source)
