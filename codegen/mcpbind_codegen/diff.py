"""API-level differences between two revisions (``mcp-codegen diff A B``).

Both sides go through the generator's own model (corrections included), so
the differences are those of the generated Python API: definitions, their
fields (added, removed, type changed, optional or required), the arms of
unions, the JSON-RPC methods, and the capabilities each side declares.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from .methods import Method, derive
from .model import Module, Ref, RenderContext, Struct, TypeExpr, UnionOf

_CAPABILITIES = ("ClientCapabilities", "ServerCapabilities")


@dataclass
class FieldChange:
    type: str
    field: str
    change: str  # added, removed, type changed, now optional, now required
    before: str | None = None
    after: str | None = None


@dataclass
class Diff:
    before: str
    after: str
    types_added: list[str] = field(default_factory=list)
    types_removed: list[str] = field(default_factory=list)
    fields: list[FieldChange] = field(default_factory=list)
    arms: list[dict[str, Any]] = field(default_factory=list)
    methods_added: list[dict[str, str]] = field(default_factory=list)
    methods_removed: list[dict[str, str]] = field(default_factory=list)
    methods_changed: list[dict[str, str]] = field(default_factory=list)
    capabilities_added: list[str] = field(default_factory=list)
    capabilities_removed: list[str] = field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2) + "\n"


def _render(expr: TypeExpr | None) -> str:
    return expr.render(RenderContext(definitions=set())) if expr is not None else "None"


def _field_type(struct: Struct, wire_name: str) -> str:
    f = struct.field_named(wire_name)
    assert f is not None
    return _render(f.type)


def compare(old: Module, new: Module) -> Diff:
    diff = Diff(old.revision, new.revision)
    before, after = set(old.definitions), set(new.definitions)
    diff.types_added = sorted(after - before)
    diff.types_removed = sorted(before - after)
    for name in sorted(before & after):
        _compare_struct(diff, name, old.structs.get(name), new.structs.get(name))
        _compare_arms(diff, name, old, new)
    _compare_methods(diff, derive(old), derive(new))
    caps_before, caps_after = _capability_paths(old), _capability_paths(new)
    diff.capabilities_added = sorted(caps_after - caps_before)
    diff.capabilities_removed = sorted(caps_before - caps_after)
    return diff


def _compare_struct(diff: Diff, name: str, old: Struct | None, new: Struct | None) -> None:
    if old is None or new is None:
        return
    old_fields = {f.wire_name: f for f in old.fields}
    new_fields = {f.wire_name: f for f in new.fields}
    for wire in sorted(new_fields.keys() - old_fields.keys()):
        required = "required" if new_fields[wire].required else "optional"
        diff.fields.append(
            FieldChange(name, wire, f"added ({required})", after=_render(new_fields[wire].type))
        )
    for wire in sorted(old_fields.keys() - new_fields.keys()):
        diff.fields.append(
            FieldChange(name, wire, "removed", before=_render(old_fields[wire].type))
        )
    for wire in sorted(old_fields.keys() & new_fields.keys()):
        a, b = old_fields[wire], new_fields[wire]
        if _render(a.type) != _render(b.type):
            diff.fields.append(
                FieldChange(name, wire, "type changed", _render(a.type), _render(b.type))
            )
        if a.required != b.required:
            diff.fields.append(
                FieldChange(name, wire, "now required" if b.required else "now optional")
            )


def _arms(module: Module, name: str) -> list[str] | None:
    alias = module.aliases.get(name)
    if alias is None or not isinstance(alias.type, UnionOf):
        return None
    return [_render(arm) for arm in alias.type.arms]


def _compare_arms(diff: Diff, name: str, old: Module, new: Module) -> None:
    before, after = _arms(old, name), _arms(new, name)
    if before is None or after is None:
        return
    added = [a for a in after if a not in before]
    removed = [a for a in before if a not in after]
    if added or removed:
        diff.arms.append({"union": name, "added": added, "removed": removed})


def _method_row(m: Method) -> dict[str, str]:
    return {
        "method": m.method,
        "direction": m.direction,
        "params": _render(m.params),
        "result": _render(m.result),
    }


def _compare_methods(diff: Diff, old: list[Method], new: list[Method]) -> None:
    before = {m.method: m for m in old}
    after = {m.method: m for m in new}
    diff.methods_added = [_method_row(after[m]) for m in sorted(after.keys() - before.keys())]
    diff.methods_removed = [_method_row(before[m]) for m in sorted(before.keys() - after.keys())]
    for name in sorted(before.keys() & after.keys()):
        a, b = _method_row(before[name]), _method_row(after[name])
        for key in ("direction", "params", "result"):
            if a[key] != b[key]:
                diff.methods_changed.append(
                    {"method": name, "what": key, "before": a[key], "after": b[key]}
                )


def _capability_paths(module: Module) -> set[str]:
    """Every capability path a side may declare, such as ``ServerCapabilities.tasks.requests.tools.call``."""
    paths: set[str] = set()

    def walk(struct: Struct, prefix: str, seen: frozenset[str]) -> None:
        for f in struct.fields:
            if f.wire_name == "_meta":
                continue
            path = f"{prefix}.{f.wire_name}"
            paths.add(path)
            target = module.resolve(f.type)
            inner = module.struct(target.name) if isinstance(target, Ref) else None
            if inner is not None and inner.name not in seen:
                walk(inner, path, seen | {inner.name})

    for name in _CAPABILITIES:
        struct = module.struct(name)
        if struct is not None:
            walk(struct, name, frozenset({name}))
    return paths


def markdown(diff: Diff) -> str:
    lines = [f"# MCP {diff.before} → {diff.after}", ""]
    lines.append("Generated by `mcp-codegen diff`: the differences of the generated API.")

    def section(title: str, rows: list[str]) -> None:
        lines.extend(["", f"## {title}", ""])
        lines.extend(rows or ["None."])

    section("Types added", [f"- `{t}`" for t in diff.types_added])
    section("Types removed", [f"- `{t}`" for t in diff.types_removed])
    rows = []
    for c in diff.fields:
        detail = {
            "type changed": f": `{c.before}` → `{c.after}`",
            "removed": f" (was `{c.before}`)",
        }.get(c.change, f": `{c.after}`" if c.after else "")
        rows.append(f"- `{c.type}.{c.field}` {c.change}{detail}")
    section("Fields", rows)
    rows = []
    for u in diff.arms:
        parts = [f"+ `{a}`" for a in u["added"]] + [f"− `{a}`" for a in u["removed"]]
        rows.append(f"- `{u['union']}`: {', '.join(parts)}")
    section("Union arms", rows)
    section(
        "Methods added",
        [
            f"- `{m['method']}` ({m['direction']}): `{m['params']}` → `{m['result']}`"
            for m in diff.methods_added
        ],
    )
    section(
        "Methods removed", [f"- `{m['method']}` ({m['direction']})" for m in diff.methods_removed]
    )
    section(
        "Methods changed",
        [
            f"- `{m['method']}` {m['what']}: `{m['before']}` → `{m['after']}`"
            for m in diff.methods_changed
        ],
    )
    section("Capabilities added", [f"- `{p}`" for p in diff.capabilities_added])
    section("Capabilities removed", [f"- `{p}`" for p in diff.capabilities_removed])
    return "\n".join(lines) + "\n"
