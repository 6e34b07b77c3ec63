"""What changed in a server's contract between two snapshots.

Tools, prompts and resource templates added or removed; a tool's parameters
added, removed, retyped, made required or optional (nested object parameters
field by field); its output fields the same way; its task support; a prompt's
arguments; a template's URI. Each change says whether code generated from the
older snapshot breaks on it (``breaking``): a removed tool, a new required
parameter, a parameter narrowed (``number`` to ``integer``: old callers may
send 2.5), an output field widened (``string`` to ``string | null``: old code
cannot decode null). A parameter widened or an output field narrowed is drift
without breaking anything. Descriptions are reported as notes only; every
other change is drift, which ``--check`` fails on.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from .snapshot import Snapshot


@dataclass(frozen=True)
class Change:
    entity: str  # tool, prompt, resource template, server
    name: str
    change: str  # e.g. "parameter added"
    path: str  # the parameter or field, dotted; "" for the entity itself
    detail: str
    breaking: bool
    drift: bool = True  # False for description changes

    def line(self) -> str:
        where = f" `{self.path}`" if self.path else ""
        flag = " (breaking)" if self.breaking else ""
        detail = f": {self.detail}" if self.detail else ""
        return f"- {self.entity} `{self.name}`: {self.change}{where}{detail}{flag}"


@dataclass
class Report:
    server: str
    before: str  # snapshot sha256
    after: str
    changes: list[Change]

    @property
    def drift(self) -> bool:
        return any(c.drift for c in self.changes)

    @property
    def breaking(self) -> bool:
        return any(c.breaking for c in self.changes)

    def to_json(self) -> str:
        document = {
            "server": self.server,
            "before": self.before,
            "after": self.after,
            "drift": self.drift,
            "breaking": self.breaking,
            "changes": [asdict(c) for c in self.changes],
        }
        return json.dumps(document, indent=2) + "\n"

    def text(self) -> str:
        if not self.changes:
            return f"{self.server}: no drift (snapshot sha256 {self.before})\n"
        counted = sum(1 for c in self.changes if c.drift)
        lines = [
            f"{self.server}: {counted} change{'s' if counted != 1 else ''} in the server's contract"
            + (" (breaking)" if self.breaking else ""),
            "",
        ]
        lines += [c.line() for c in self.changes]
        return "\n".join(lines) + "\n"


def compare(before: Snapshot, after: Snapshot) -> Report:
    changes: list[Change] = []
    if before.revision != after.revision:
        changes.append(
            Change(
                "server",
                after.name,
                "protocol revision changed",
                "",
                f"{before.revision} -> {after.revision}",
                breaking=False,
            )
        )
    changes += _entities("tool", _by(before.tools, "name"), _by(after.tools, "name"), _tool)
    changes += _entities("prompt", _by(before.prompts, "name"), _by(after.prompts, "name"), _prompt)
    changes += _entities(
        "resource template",
        _by(before.resource_templates, "name", "uriTemplate"),
        _by(after.resource_templates, "name", "uriTemplate"),
        _template,
    )
    return Report(after.name, before.sha256, after.sha256, changes)


def _by(entries: list[dict[str, Any]], *keys: str) -> dict[str, dict[str, Any]]:
    found = {}
    for entry in entries:
        for key in keys:
            if isinstance(entry.get(key), str):
                found[entry[key]] = entry
                break
    return found


def _entities(
    entity: str,
    before: dict[str, dict[str, Any]],
    after: dict[str, dict[str, Any]],
    compare_one: Any,
) -> list[Change]:
    changes = []
    for name in sorted(before.keys() | after.keys()):
        if name not in after:
            changes.append(Change(entity, name, "removed", "", "", breaking=True))
        elif name not in before:
            changes.append(Change(entity, name, "added", "", "", breaking=False))
        else:
            old, new = before[name], after[name]
            changes += compare_one(name, old, new)
            if old.get("description") != new.get("description"):
                changes.append(
                    Change(entity, name, "description changed", "", "", False, drift=False)
                )
    return changes


# ---------------------------------------------------------------- tools


def _tool(name: str, old: dict[str, Any], new: dict[str, Any]) -> list[Change]:
    old_in, new_in = Shape(old.get("inputSchema", {})), Shape(new.get("inputSchema", {}))
    changes = _fields(
        name, old_in, old_in.document, new_in, new_in.document, "parameter", output=False
    )
    old_out, new_out = old.get("outputSchema"), new.get("outputSchema")
    if old_out is None and new_out is not None:
        changes.append(Change("tool", name, "output schema added", "", "", breaking=False))
    elif old_out is not None and new_out is None:
        changes.append(Change("tool", name, "output schema removed", "", "", breaking=True))
    elif old_out is not None and new_out is not None:
        before, after = Shape(old_out), Shape(new_out)
        changes += _fields(name, before, old_out, after, new_out, "output field", output=True)
    old_task, new_task = _task(old), _task(new)
    if old_task != new_task:
        changes.append(
            Change(
                "tool",
                name,
                "task support changed",
                "",
                f"{old_task} -> {new_task}",
                breaking="required" in (old_task, new_task),
            )
        )
    return changes


def _task(tool: dict[str, Any]) -> str:
    execution = tool.get("execution")
    support = execution.get("taskSupport") if isinstance(execution, dict) else None
    return support if isinstance(support, str) else "forbidden"


class Shape:
    """A schema document, read for comparison: each node's type as a short
    text (``integer``, ``array<string>``, ``"a" | "b"``), objects field by field."""

    def __init__(self, document: Any) -> None:
        self.document = document

    def deref(self, node: Any, seen: frozenset[str] = frozenset()) -> tuple[Any, frozenset[str]]:
        while isinstance(node, dict) and isinstance(node.get("$ref"), str):
            ref = node["$ref"]
            if ref in seen or not ref.startswith("#"):
                return {"$recursive": ref}, seen
            seen = seen | {ref}
            node = _pointer(self.document, ref)
        return node, seen

    def fields(self, node: Any, seen: frozenset[str] = frozenset()) -> dict[str, tuple[Any, bool]]:
        """An object's properties: name -> (schema, required); {} for a non-object."""
        node, seen = self.deref(node, seen)
        if not isinstance(node, dict):
            return {}
        properties: dict[str, Any] = {}
        required: set[str] = set(node.get("required", []))
        for arm in [node, *node.get("allOf", [])]:
            arm, _ = self.deref(arm, seen)
            if isinstance(arm, dict):
                for key, value in (arm.get("properties") or {}).items():
                    properties.setdefault(key, value)
                required |= set(arm.get("required", []))
        return {key: (value, key in required) for key, value in properties.items()}

    def alternatives(self, node: Any) -> set[str]:
        """The node's type as a set of alternatives, each as :meth:`describe`
        gives it: ``string | null`` is {"string", "null"}, an enum its values."""
        node, seen = self.deref(node)
        if not isinstance(node, dict):
            return {self.describe(node, seen)}
        for key in ("anyOf", "oneOf"):
            if isinstance(node.get(key), list):
                return set().union(*(self.alternatives(arm) for arm in node[key]))
        if "const" not in node and isinstance(node.get("enum"), list):
            return {json.dumps(v) for v in node["enum"]}
        kinds = node.get("type")
        found = (
            {self.describe({**node, "type": k, "nullable": False}, seen) for k in kinds}
            if isinstance(kinds, list) and "const" not in node
            else {self.describe({**node, "nullable": False}, seen)}
        )
        return found | ({"null"} if node.get("nullable") is True else set())

    def describe(self, node: Any, seen: frozenset[str] = frozenset(), depth: int = 0) -> str:
        node, seen = self.deref(node, seen)
        if node is True or node == {}:
            return "any"
        if not isinstance(node, dict):
            return json.dumps(node)
        if "$recursive" in node:
            return f"recursive {node['$recursive']}"
        if "const" in node:
            return json.dumps(node["const"])
        if "enum" in node:
            return " | ".join(json.dumps(v) for v in node["enum"])
        for key in ("anyOf", "oneOf"):
            if isinstance(node.get(key), list):
                return " | ".join(sorted(self.describe(a, seen, depth) for a in node[key]))
        kind = node.get("type", "object" if "properties" in node else None)
        kinds = kind if isinstance(kind, list) else [kind]
        parts = []
        for k in kinds:
            text = str(k) if k is not None else "any"
            if k == "array":
                items = node.get("prefixItems", node.get("items"))
                if isinstance(items, list):
                    text = f"[{', '.join(self.describe(i, seen, depth) for i in items)}]"
                elif items is not None:
                    text = f"array<{self.describe(items, seen, depth)}>"
            elif k == "object" and depth < 8:
                fields = self.fields(node, seen)
                if fields:
                    inner = ", ".join(
                        f"{key}{'' if req else '?'}: {self.describe(value, seen, depth + 1)}"
                        for key, (value, req) in sorted(fields.items())
                    )
                    text = f"{{{inner}}}"
                elif isinstance(node.get("additionalProperties"), dict):
                    text = f"map<{self.describe(node['additionalProperties'], seen, depth)}>"
            elif k == "string" and isinstance(node.get("format"), str):
                text = f"string<{node['format']}>"
            parts.append(text)
        if node.get("nullable") is True:
            parts.append("null")
        return " | ".join(parts)


def _within(values: set[str], kinds: set[str]) -> bool:
    """Whether every alternative of ``values`` is one of ``kinds`` (as
    :meth:`Shape.alternatives` gives them): the same, an integer where a
    number is, a constant or a formatted string of a kind that is."""
    for value in values:
        if value in kinds:
            continue
        if value == "integer" and "number" in kinds:
            continue
        if value.startswith("string<") and "string" in kinds:
            continue
        try:
            constant = json.loads(value)
        except ValueError:
            return False
        kind = _json_kind(constant)
        if kind is None or not (kind in kinds or (kind == "integer" and "number" in kinds)):
            return False
    return True


def _json_kind(value: Any) -> str | None:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    return None


def _fields(
    name: str,
    old: Shape,
    old_node: Any,
    new: Shape,
    new_node: Any,
    label: str,
    *,
    output: bool,
    prefix: str = "",
    depth: int = 0,
) -> list[Change]:
    """Parameters (or output fields) of two versions of an object, compared;
    nested objects field by field."""
    before, after = old.fields(old_node), new.fields(new_node)
    changes: list[Change] = []
    removed = [k for k in before if k not in after]
    added = [k for k in after if k not in before]
    for key in removed:
        detail = _renamed_hint(old, new, before[key][0], {k: after[k][0] for k in added}, "to")
        # An optional output field that is no longer sent still decodes (as UNSET).
        breaking = not output or before[key][1]
        changes.append(
            Change("tool", name, f"{label} removed", prefix + key, detail, breaking=breaking)
        )
    for key in added:
        schema, required = after[key]
        detail = _renamed_hint(new, old, schema, {k: before[k][0] for k in removed}, "from")
        # Decoding into the older Struct breaks on a new field only where it was closed.
        breaking = (required and not output) or (output and _closed(old, old_node))
        kind = f"required {label} added" if required else f"{label} added"
        changes.append(Change("tool", name, kind, prefix + key, detail, breaking=breaking))
    for key in sorted(before.keys() & after.keys()):
        (old_schema, old_required), (new_schema, new_required) = before[key], after[key]
        path = prefix + key
        if old.fields(old_schema) and new.fields(new_schema) and depth < 8:
            changes += _fields(
                name,
                old,
                old_schema,
                new,
                new_schema,
                label,
                output=output,
                prefix=f"{path}.",
                depth=depth + 1,
            )
        else:
            was, now = old.describe(old_schema), new.describe(new_schema)
            if was != now:
                # Old code breaks unless it takes every new value: callers' old
                # arguments must still be accepted (the parameter widened), the
                # server's new outputs still decode (the output field narrowed).
                if output:
                    breaking = not _within(
                        new.alternatives(new_schema), old.alternatives(old_schema)
                    )
                else:
                    breaking = not _within(
                        old.alternatives(old_schema), new.alternatives(new_schema)
                    )
                changes.append(
                    Change("tool", name, f"{label} retyped", path, f"{was} -> {now}", breaking)
                )
        if old_required != new_required:
            change = f"{label} made {'required' if new_required else 'optional'}"
            # Callers break on a parameter made required; decoders on a field made optional.
            breaking = new_required if not output else not new_required
            changes.append(Change("tool", name, change, path, "", breaking))
    return sorted(changes, key=lambda c: (c.path, c.change))


def _closed(shape: Shape, node: Any) -> bool:
    found, _ = shape.deref(node)
    return isinstance(found, dict) and found.get("additionalProperties") is False


def _renamed_hint(
    mine: Shape, theirs: Shape, schema: Any, candidates: dict[str, Any], direction: str
) -> str:
    text = mine.describe(schema)
    same = [k for k, v in candidates.items() if theirs.describe(v) == text]
    return f"renamed {direction} `{same[0]}`?" if len(same) == 1 else ""


def _pointer(document: Any, ref: str) -> Any:
    node = document
    for segment in ref.lstrip("#").split("/")[1:]:
        segment = segment.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and segment in node:
            node = node[segment]
        elif isinstance(node, list) and segment.isdigit() and int(segment) < len(node):
            node = node[int(segment)]
        else:
            return {}
    return node


# ---------------------------------------------------------------- prompts and templates


def _prompt(name: str, old: dict[str, Any], new: dict[str, Any]) -> list[Change]:
    def arguments(prompt: dict[str, Any]) -> dict[str, bool]:
        return {
            str(a["name"]): a.get("required") is True
            for a in prompt.get("arguments") or []
            if isinstance(a, dict) and "name" in a
        }

    before, after = arguments(old), arguments(new)
    changes = []
    for key in sorted(before.keys() | after.keys()):
        if key not in after:
            changes.append(Change("prompt", name, "argument removed", key, "", True))
        elif key not in before:
            kind = "required argument added" if after[key] else "argument added"
            changes.append(Change("prompt", name, kind, key, "", after[key]))
        elif before[key] != after[key]:
            change = f"argument made {'required' if after[key] else 'optional'}"
            changes.append(Change("prompt", name, change, key, "", after[key]))
    return changes


def _template(name: str, old: dict[str, Any], new: dict[str, Any]) -> list[Change]:
    from .model import template_variables

    was, now = str(old.get("uriTemplate")), str(new.get("uriTemplate"))
    if was == now:
        return []
    breaking = template_variables(was) != template_variables(now)
    return [
        Change("resource template", name, "URI template changed", "", f"{was} -> {now}", breaking)
    ]
