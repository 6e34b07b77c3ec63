"""Every name a revision package defines, checked for collisions.

Generated names come from schema names through rules (snake_case, ``list_`` +
method, ``iter_`` + page field, upper-case method constants), so two schema
names can meet in one Python name; a later definition would silently replace
the earlier one. Each scope of the generated package is collected here with
the source of each name, and a second source for a name is an error naming
both. The one collision the generator resolves itself, pagination helpers
over the same field, is settled before this check (``methods._name_page_helpers``).
"""

from __future__ import annotations

from .methods import SESSION_SENT, Method
from .model import GenerationError, Module

# Names the generated modules define or import besides the schema's.
_TYPES_MODULE = (
    "msgspec",
    "typing",
    "UNSET",
    "UnsetType",
    "OpenObject",
    "new_object",
    "untagged_union",
    "DEFINITIONS",
)
_METHODS_MODULE = (
    "METHODS", "CLIENT_REQUESTS", "SERVER_REQUESTS", "CLIENT_NOTIFICATIONS", "SERVER_NOTIFICATIONS",
    "INPUT_REQUESTS", "INPUT_REQUIRED_METHODS", "MethodSpec", "Any",
)  # fmt: skip
_PACKAGE = (
    "DEFINITIONS", "PROTOCOL_VERSION", "SCHEMA_SHA256", "STATUS", "UNSTABLE", "ClientHandlers",
    "ClientStub", "ServerHandlers", "ServerStub", "methods", "client", "server", "types",
    "EXTENSION_ID", "PROTOCOL_REVISION",
)  # fmt: skip


class _Scope:
    def __init__(self, where: str, reserved: tuple[str, ...] = ()) -> None:
        self.where = where
        self.sources: dict[str, str] = {name: "the generator itself" for name in reserved}

    def add(self, name: str, source: str) -> None:
        earlier = self.sources.setdefault(name, source)
        if earlier != source:
            raise GenerationError(
                f"generated name {name!r} in {self.where} comes from both {earlier} and {source}"
            )


def check(module: Module, methods: list[Method]) -> None:
    """Raise GenerationError at the first generated name with two sources."""
    types = _Scope("types.py", _TYPES_MODULE)
    package = _Scope("__init__.py", _PACKAGE)
    for name in sorted({*module.structs, *module.aliases}):
        kind = "definition" if name in module.definitions else "inline type"
        types.add(name, f"{kind} {name}")
        package.add(name, f"{kind} {name}")
    constants = _Scope("methods.py", _METHODS_MODULE)
    for m in methods:
        constants.add(m.constant, f"method {m.method}")
        if m.task_augmented:
            constants.add(f"{m.constant}_AS_TASK", f"the task-augmented method {m.method}")
            constants.add(f"{m.constant}_TASK_RESULT", f"the task result of {m.method}")
    for side, other in (("client", "server"), ("server", "client")):
        stub = _Scope(f"{side}.py {side.title()}Stub", ("_caller",))
        handlers = _Scope(f"{side}.py {side.title()}Handlers")
        for m in methods:
            if (
                f"{side}_to_{other}" in m.directions
                and m.method not in SESSION_SENT
                and not m.input_request
            ):
                stub.add(m.handler if m.kind == "request" else m.notify_name, f"method {m.method}")
                if m.page_items is not None:
                    stub.add(m.page_helper, f"the pagination helper of {m.method}")
                if m.task_augmented:
                    stub.add(f"{m.handler}_as_task", f"the task-augmented method {m.method}")
                    stub.add(f"{m.handler}_task_result", f"the task result of {m.method}")
            if f"{other}_to_{side}" in m.directions and not m.runtime_owned:
                handlers.add(m.handler, f"method {m.method}")
