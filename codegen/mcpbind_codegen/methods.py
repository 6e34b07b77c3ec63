"""Derive a revision's JSON-RPC methods from its schema.

The schema has no method table of its own; it has what one is made of:

* the message unions ``ClientRequest``, ``ServerRequest``,
  ``ClientNotification`` and ``ServerNotification`` (direction and kind);
* each message definition's ``method`` const and ``params`` property;
* for a request ``XRequest``, its result: the ``result`` property of
  ``XResultResponse`` where the revision defines one (2026-07-28 on), else the
  definition ``XResult``, else ``EmptyResult`` (reported, except for the
  methods in ``EMPTY_RESULTS``, whose result the specification leaves empty);
* the ``InputRequest`` union (2026-07-28 on): requests a server no longer
  sends on their own but returns inside an input-required result, for the
  client to answer and retry with (multi round-trip requests);
* the receiver's capabilities definition, whose property named after the
  method's first segment (``tools``, ``completions`` for ``completion/...``) is
  the capability the method needs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .model import (
    Field,
    GenerationError,
    ListOf,
    Module,
    Ref,
    Struct,
    TypeExpr,
    UnionOf,
    snake_case,
)

# Methods the session itself sends (handshake, cancellation, progress): the
# generated stubs leave them out.
SESSION_SENT = frozenset(
    {
        "initialize",
        "server/discover",
        "notifications/initialized",
        "notifications/cancelled",
        "notifications/progress",
    }
)

# Methods the runtime answers or routes itself; generated handler interfaces
# leave them out so that nobody overrides them by accident.
RUNTIME_OWNED = frozenset(
    {
        "initialize",
        "ping",
        "server/discover",
        "notifications/initialized",
        "notifications/cancelled",
        "notifications/progress",
        "logging/setLevel",
    }
)

# Requests whose result is empty by the specification's text, not by a result
# definition: typing them as EmptyResult is no guess.
EMPTY_RESULTS = frozenset(
    {"ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"}
)

_UNIONS = {
    ("ClientRequest", "client_to_server", "request"),
    ("ServerRequest", "server_to_client", "request"),
    ("ClientNotification", "client_to_server", "notification"),
    ("ServerNotification", "server_to_client", "notification"),
}
_UNION_NAMES = frozenset(union for union, _, _ in _UNIONS)


@dataclass
class Method:
    method: str
    kind: str
    message: str
    params: TypeExpr | None
    params_required: bool
    params_struct: Struct | None
    result: TypeExpr | None
    directions: set[str] = field(default_factory=set)
    capability: tuple[str, ...] = ()
    # For paginated list requests: the result field holding the items, and their type.
    page_items: tuple[str, TypeExpr] | None = None
    # Its wire name (``resourceTemplates``).
    page_member: str | None = None
    # A request that travels inside an input-required result, not as a message.
    input_request: bool = False
    # The name of the stub's pagination helper (see ``_name_page_helpers``).
    page_helper: str = ""
    # A request the revision lets be task-augmented (2025-11-25 on): its params
    # have a `task` member; the receiver then answers CreateTaskResult and
    # `tasks/result` later answers with this method's own result.
    task_augmented: bool = False
    # The params type of `tasks/result` and its task id field, for such a request.
    task_result_params: tuple[TypeExpr, Field] | None = None
    # A request whose result union has an InputRequiredResult arm (2026-07-28
    # on): the server may answer it with input requests for the client to
    # answer and retry with (see ``_mark_input_required``).
    may_require_input: bool = False
    # Facts of schema/protocol_facts.toml (see ``facts``): the params member
    # Mcp-Name mirrors; the requests whose cached results a notification makes
    # stale; the sender's own capability a notification needs; the filter
    # member of subscriptions/listen that asks for it; whether a tool's invalid
    # input is a tool execution error rather than a protocol error.
    name_field: str | None = None
    stales: tuple[str, ...] = ()
    sender_capability: tuple[str, ...] = ()
    listen_filter: str | None = None
    input_errors_as_result: bool = False
    # For an extension whose messages all repeat a prefix (ext-apps' "McpUi"):
    # left out of the stem, so that stubs and handlers read `open_link`.
    stem_prefix: str = ""

    @property
    def direction(self) -> str:
        return "both" if len(self.directions) > 1 else next(iter(self.directions))

    @property
    def constant(self) -> str:
        return re.sub(r"[^0-9A-Za-z]+", "_", snake_case_path(self.method)).strip("_").upper()

    @property
    def stem(self) -> str:
        """``CallTool`` for ``CallToolRequest``, ``ToolListChanged`` for ``ToolListChangedNotification``."""
        return re.sub(r"(Request|Notification)$", "", self.message).removeprefix(self.stem_prefix)

    @property
    def handler(self) -> str:
        name = snake_case(self.stem)
        return name if self.kind == "request" else f"on_{name}"

    @property
    def notify_name(self) -> str:
        return f"notify_{snake_case(self.stem)}"

    @property
    def runtime_owned(self) -> bool:
        return self.method in RUNTIME_OWNED

    @property
    def in_stubs(self) -> bool:
        return self.method not in SESSION_SENT

    def arguments(self) -> tuple[list[Field], list[Field]]:
        """The params fields a stub takes: required (positional) and optional (keyword-only)."""
        if self.params_struct is None:
            return [], []
        fields = self.params_struct.wire_fields
        if self.task_augmented:
            fields = [
                f for f in fields if f.wire_name != "task"
            ]  # only the `_as_task` stub asks for a task
        return [f for f in fields if f.required and f.default is None], [
            f for f in fields if not (f.required and f.default is None)
        ]


def snake_case_path(method: str) -> str:
    return "_".join(snake_case(part) for part in re.split(r"[/]", method))


def derive(module: Module) -> list[Method]:
    found: dict[str, Method] = {}
    for union, direction, kind in sorted(_UNIONS):
        for message in _members(module, union):
            struct = module.structs[message]
            method = _method_name(struct)
            params_field = struct.field_named("params")
            entry = found.get(method)
            if entry is None:
                params = params_field.type if params_field else None
                entry = Method(
                    method=method,
                    kind=kind,
                    message=message,
                    params=params,
                    params_required=bool(params_field and params_field.required),
                    params_struct=_struct_of(module, params),
                    result=_result_of(module, message, method) if kind == "request" else None,
                )
                found[method] = entry
            elif entry.kind != kind:
                raise GenerationError(f"method {method} is both a request and a notification")
            entry.directions.add(direction)
    for message in _members(module, "InputRequest"):
        struct = module.structs[message]
        method = _method_name(struct)
        if method in found:
            continue
        params_field = struct.field_named("params")
        params = params_field.type if params_field else None
        found[method] = Method(
            method=method,
            kind="request",
            message=message,
            params=params,
            params_required=bool(params_field and params_field.required),
            params_struct=_struct_of(module, params),
            result=_result_of(module, message, method),
            directions={"server_to_client"},
            input_request=True,
        )
    prefix = module.extension.message_prefix if module.extension is not None else ""
    for entry in found.values():
        entry.stem_prefix = prefix
        entry.capability = _capability(module, entry)
        entry.page_items = _page_items(module, entry)
        entry.page_member = _page_member(module, entry)
    ordered = sorted(found.values(), key=lambda m: m.method)
    _name_page_helpers(ordered)
    _mark_task_augmented(module, ordered, found.get("tasks/result"))
    _mark_input_required(module, ordered)
    return ordered


INPUT_REQUIRED_RESULT = "InputRequiredResult"


def _mark_input_required(module: Module, methods: list[Method]) -> None:
    """Requests whose result union has an ``InputRequiredResult`` arm: the
    only ones a server may answer with an input-required result."""
    for m in methods:
        if m.kind == "request" and not m.input_request and m.result is not None:
            m.may_require_input = INPUT_REQUIRED_RESULT in _result_arm_names(module, m.result)


def _result_arm_names(module: Module, result: TypeExpr) -> set[str]:
    """The definitions a result may be: the arms of its union (an inline union
    given a name, or a named one), or the result itself."""
    if isinstance(result, UnionOf) and len(result.arms) == 1:
        result = result.arms[0]
    alias = module.aliases.get(result.name) if isinstance(result, Ref) else None
    union = alias.type if alias is not None else result
    arms = union.arms if isinstance(union, UnionOf) else (union,)
    resolved = (module.resolve(arm) for arm in arms)
    return {r.name for r in resolved if isinstance(r, Ref)}


def _mark_task_augmented(module: Module, methods: list[Method], results: Method | None) -> None:
    """Requests whose params take a `task`, where the revision has both the
    answer to a task-augmented request (CreateTaskResult) and `tasks/result`
    with a single required task id to fetch the outcome by."""
    if results is None or "CreateTaskResult" not in module.structs or results.params_struct is None:
        return
    required = [f for f in results.params_struct.wire_fields if f.required]
    if len(required) != 1 or results.params is None:
        return
    for m in methods:
        if m.kind == "request" and all(
            s.field_named("task") is not None for s in _params_structs(module, m)
        ):
            m.task_augmented = True
            m.task_result_params = (results.params, required[0])


def _params_structs(module: Module, m: Method) -> list[Struct]:
    """The struct of a request's params, or of each arm of a params union
    (elicitation's form and URL params); empty where they are anything else."""
    if m.params_struct is not None:
        return [m.params_struct]
    resolved = module.resolve(m.params) if m.params is not None else None
    alias = module.aliases.get(resolved.name) if isinstance(resolved, Ref) else None
    if alias is None or not isinstance(alias.type, UnionOf):
        return []
    structs = [_struct_of(module, arm) for arm in alias.type.arms]
    return [s for s in structs if s is not None] if all(structs) else []


def _name_page_helpers(methods: list[Method]) -> None:
    """``iter_<items>`` for each paginated request (``iter_tools`` for
    ``tools/list``). Where several requests page through the same field, the
    one whose stub is ``list_<items>`` keeps that name and each other becomes
    ``iter_<stub>`` (``iter_search_resources`` for ``resources/search``)."""
    by_items: dict[str, list[Method]] = {}
    for m in methods:
        if m.page_items is not None:
            by_items.setdefault(m.page_items[0], []).append(m)
    for items, group in by_items.items():
        for m in group:
            plain = len(group) == 1 or m.handler == f"list_{items}"
            m.page_helper = f"iter_{items}" if plain else f"iter_{m.handler}"


def _members(module: Module, union: str) -> list[str]:
    if union in module.structs:
        # A revision with a single message of this kind (2026-07-28's
        # ClientNotification is the cancelled notification): name it after the
        # definition of that message where there is one, not after the union.
        method = _method_name(module.structs[union])
        named = [
            name
            for name, struct in sorted(module.structs.items())
            if struct.definition
            and name not in _UNION_NAMES
            and name.endswith(("Request", "Notification"))
            and _declares_method(struct, method)
        ]
        return named[:1] or [union]
    alias = module.aliases.get(union)
    if alias is None:
        return []
    arms = alias.type.arms if isinstance(alias.type, UnionOf) else (alias.type,)
    names = []
    for arm in arms:
        resolved = module.resolve(arm)
        if not isinstance(resolved, Ref) or resolved.name not in module.structs:
            raise GenerationError(f"{union} has an arm that is not a message definition")
        names.append(resolved.name)
    return names


def _declares_method(struct: Struct, method: str) -> bool:
    if struct.tag_field == "method":
        return struct.tag == method
    field = struct.field_named("method")
    return field is not None and field.has_const and field.const == method


def _method_name(struct: Struct) -> str:
    if struct.tag_field == "method":
        assert isinstance(struct.tag, str)
        return struct.tag
    method = struct.field_named("method")
    if method is None or not isinstance(method.const, str):
        raise GenerationError(f"message {struct.name} has no constant `method`")
    return method.const


def _struct_of(module: Module, expr: TypeExpr | None) -> Struct | None:
    resolved = module.resolve(expr) if expr is not None else None
    if isinstance(resolved, Ref):
        return module.struct(resolved.name)
    return None


def _result_of(module: Module, message: str, method: str) -> TypeExpr:
    stem = message.removesuffix("Request")
    response = module.structs.get(f"{stem}ResultResponse")
    if response is not None and (result := response.field_named("result")) is not None:
        return result.type
    if f"{stem}Result" in module.structs or f"{stem}Result" in module.aliases:
        return Ref(f"{stem}Result")
    for fallback in ("EmptyResult", "Result"):
        if fallback in module.structs or fallback in module.aliases:
            if method not in EMPTY_RESULTS:
                module.notes.append(
                    f"{method}: no {stem}Result or {stem}ResultResponse definition; its result is typed as {fallback}"
                )
            return Ref(fallback)
    raise GenerationError(f"no result type for {message}")


def _capability(module: Module, entry: Method) -> tuple[str, ...]:
    if module.extension is not None:  # the receiver declares the extension itself
        return ("extensions", module.extension.id) if entry.kind == "request" else ()
    if entry.kind != "request" or entry.direction == "both":
        return ()
    receiver = (
        "ServerCapabilities" if entry.direction == "client_to_server" else "ClientCapabilities"
    )
    capabilities = module.structs.get(receiver)
    if capabilities is None:
        return ()
    first, _, rest = entry.method.partition("/")
    for name in (first, first + "s"):
        cap = capabilities.field_named(name)
        if cap is None:
            continue
        sub = _struct_of(module, cap.type)
        if sub is not None and rest and sub.field_named(rest) is not None:
            return (name, rest)
        return (name,)
    return ()


def _page_items(module: Module, entry: Method) -> tuple[str, TypeExpr] | None:
    if (
        entry.params_struct is None
        or entry.params_struct.field_named("cursor") is None
        or entry.result is None
    ):
        return None
    result = _struct_of(module, entry.result)
    if result is None or result.field_named("nextCursor") is None:
        return None
    lists = [f for f in result.wire_fields if isinstance(f.type, ListOf) and f.required]
    if len(lists) != 1:
        return None
    return lists[0].name, lists[0].type.item  # type: ignore[attr-defined]


def _page_member(module: Module, entry: Method) -> str | None:
    """The wire name of the result field holding a list request's items."""
    if entry.page_items is None or entry.result is None:
        return None
    result = _struct_of(module, entry.result)
    fields = result.wire_fields if result is not None else []
    return next((f.wire_name for f in fields if f.name == entry.page_items[0]), None)
