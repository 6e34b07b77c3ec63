"""Read an MCP JSON Schema into the intermediate model.

Schema nodes are parsed with datamodel-code-generator's ``JsonSchemaObject``
(it normalises ``type``, ``$ref``, ``additionalProperties`` and friends); the
mapping to msgspec types is ours, because msgspec needs decisions that
datamodel-code-generator's msgspec output does not make: which unions become
tagged unions, which need the codec's untagged dispatch, and which objects must
keep unknown keys.
"""

from __future__ import annotations

import json
from typing import Any

from datamodel_code_generator.parser.jsonschema import JsonSchemaObject

from .model import (
    Alias,
    Builtin,
    Constrained,
    Corrections,
    DictOf,
    Discriminator,
    Extension,
    Field,
    GenerationError,
    ListOf,
    LiteralOf,
    Module,
    Ref,
    Struct,
    TypeExpr,
    UnionOf,
    pascal_case,
)

# Tag fields msgspec may use for a union, most telling first.
TAG_PREFERENCE = ("type", "method", "kind", "mode")

_SCALARS: dict[str, TypeExpr] = {
    "string": Builtin("str"),
    "integer": Builtin("int"),
    "number": Builtin("float"),
    "boolean": Builtin("bool"),
    "null": Builtin("None"),
}

# Keywords the generator understands; anything else in a schema node is refused.
_SUPPORTED = {
    "type", "description", "$ref", "properties", "required", "const", "additionalProperties",
    "items", "anyOf", "allOf", "format", "enum", "minimum", "maximum", "maxItems", "minItems",
    "title", "default", "minLength", "maxLength", "$schema", "propertyNames", "pattern",
}  # fmt: skip


def _definitions_key(schema: dict[str, Any]) -> str:
    for key in ("$defs", "definitions"):
        if isinstance(schema.get(key), dict):
            return key
    raise GenerationError("schema has neither `$defs` nor `definitions`")


# How an extension's fragment names a definition of the revision it extends.
BASE_REF = "schema.json#/$defs/"


class SchemaParser:
    """One schema's definitions into a :class:`Module`.

    ``base`` (for an extension's fragment) names the definitions of the
    revision it extends, which the fragment may refer to as
    ``schema.json#/$defs/<Name>``. ``sort_properties`` orders each object's
    properties by name, as every revision package always has; a fragment of
    ours keeps the order it lists them in, which is the order they are sent.
    """

    def __init__(
        self,
        schema: dict[str, Any],
        base: frozenset[str] = frozenset(),
        sort_properties: bool = True,
    ) -> None:
        self.defs_key = _definitions_key(schema)
        self.raw: dict[str, Any] = schema[self.defs_key]
        self.base = base
        self.sort_properties = sort_properties
        self.structs: dict[str, Struct] = {}
        self.aliases: dict[str, Alias] = {}
        self.unions: list[UnionOf] = []
        self.shared_names = _shared_nested_names(self.raw)

    # ------------------------------------------------------------ entry point

    def parse(
        self,
        revision: str,
        sha256: str,
        status: str,
        corrections: Corrections,
        extension: Extension | None = None,
    ) -> Module:
        for name in sorted(self.raw):
            self._define(name, self._node(self.raw[name], f"#/{self.defs_key}/{name}"))
        module = Module(
            revision=revision,
            sha256=sha256,
            status=status,
            corrections=corrections,
            structs=self.structs,
            aliases=self.aliases,
            definitions=sorted(self.raw),
            extension=extension,
        )
        _mark_recursive_aliases(module)
        _assign_union_strategies(module, self.unions)
        return module

    # ------------------------------------------------------------ nodes

    def _node(self, raw: Any, where: str) -> JsonSchemaObject:
        _check_supported(raw, where)
        return _schema_object(raw)

    def _define(self, name: str, node: JsonSchemaObject) -> None:
        where = f"#/{self.defs_key}/{name}"
        if self._is_struct(node):
            self._struct(name, node, where, definition=True)
            return
        self.aliases[name] = Alias(name, node.description, self._type(node, name, where))

    def _is_struct(self, node: JsonSchemaObject) -> bool:
        return bool(node.properties) or bool(node.allOf)

    # ------------------------------------------------------------ objects

    def _struct(self, name: str, node: JsonSchemaObject, where: str, definition: bool) -> Ref:
        if not definition:
            name = self.shared_names.get(name, name)
            if name in self.structs:
                return Ref(name)
        if name in self.structs or name in self.aliases or (not definition and name in self.raw):
            raise GenerationError(f"type name {name!r} generated twice (at {where})")
        properties, required, open_ = self._collect_properties(node, where)
        struct = Struct(
            name=name, description=node.description, fields=[], open=open_, definition=definition
        )
        self.structs[name] = struct  # registered before its fields, for self-references
        for prop, sub in properties.items():
            const = sub.extras.get("const", _MISSING)
            struct.fields.append(
                Field(
                    wire_name=prop,
                    type=self._type(sub, name + pascal_case(prop), f"{where}/properties/{prop}"),
                    required=prop in required,
                    description=sub.description or sub.extras.get("description"),
                    const=None if const is _MISSING else const,
                    has_const=const is not _MISSING,
                    # Only schema/corrections.toml and our extension fragments set
                    # defaults: no official schema has one.
                    default_value=sub.default,
                )
            )
        names = [f.name for f in struct.fields]
        if len(set(names)) != len(names):
            raise GenerationError(f"two properties of {name} map to one Python name (at {where})")
        return Ref(name)

    def _collect_properties(
        self, node: JsonSchemaObject, where: str
    ) -> tuple[dict[str, JsonSchemaObject], set[str], bool]:
        """Properties, required names and openness of an object, allOf merged."""
        properties: dict[str, JsonSchemaObject] = {}
        required: set[str] = set()
        open_ = _is_open(node)
        for index, part in enumerate(map(_sub, node.allOf)):
            part_where = f"{where}/allOf/{index}"
            if part.ref:
                target = self._ref_name(part.ref, part_where)
                if target not in self.raw:
                    raise GenerationError(
                        f"allOf of a definition of the extended revision at {part_where}: list its properties instead"
                    )
                part = self._node(self.raw[target], f"#/{self.defs_key}/{target}")
                part_where = f"#/{self.defs_key}/{target}"
            sub_props, sub_required, sub_open = self._collect_properties(part, part_where)
            # A later part narrows what an earlier one declared (an error's `code`).
            properties.update(sub_props)
            required |= sub_required
            open_ = open_ or sub_open
        properties.update({key: _sub(value) for key, value in (node.properties or {}).items()})
        required |= set(node.required or [])
        if self.sort_properties:
            properties = dict(sorted(properties.items()))
        return properties, required, open_

    # ------------------------------------------------------------ types

    def _ref_name(self, ref: str, where: str) -> str:
        prefix = f"#/{self.defs_key}/"
        if ref.startswith(prefix) and ref[len(prefix) :] in self.raw:
            return ref[len(prefix) :]
        if ref.startswith(BASE_REF) and ref[len(BASE_REF) :] in self.base:
            return ref[len(BASE_REF) :]
        raise GenerationError(f"unresolvable reference {ref!r} at {where}")

    def _type(self, node: JsonSchemaObject, context: str, where: str) -> TypeExpr:
        if node.ref:
            return Ref(self._ref_name(node.ref, where))
        if node.anyOf:
            arms: list[TypeExpr] = []
            for index, arm in enumerate(map(_sub, node.anyOf)):
                expr = self._type(arm, f"{context}Variant{index}", f"{where}/anyOf/{index}")
                arms.extend(expr.arms if isinstance(expr, UnionOf) else [expr])
            return self._union(arms, context)
        if node.allOf or node.properties:
            return self._struct(context, node, where, definition=False)
        if "const" in node.extras:
            return LiteralOf((node.extras["const"],))
        if node.enum:
            return LiteralOf(tuple(node.enum))
        types = node.type if isinstance(node.type, list) else [node.type] if node.type else []
        if not types:
            return Builtin("Any")
        if len(types) > 1:
            return self._union([self._scalar(t, node, context, where) for t in types], context)
        return self._scalar(types[0], node, context, where)

    def _scalar(self, kind: str, node: JsonSchemaObject, context: str, where: str) -> TypeExpr:
        if kind == "object":
            extra = node.additionalProperties
            if isinstance(extra, JsonSchemaObject) and not _is_empty(extra):
                return DictOf(self._type(extra, context + "Value", f"{where}/additionalProperties"))
            return DictOf(Builtin("Any"))
        if kind == "array":
            item = (
                self._type(node.items, context + "Item", f"{where}/items")
                if isinstance(node.items, JsonSchemaObject)
                else Builtin("Any")
            )
            return _constrain(ListOf(item), max_length=node.maxItems, min_length=node.minItems)
        if kind not in _SCALARS:
            raise GenerationError(f"unsupported type {kind!r} at {where}")
        base = _SCALARS[kind]
        if kind in ("integer", "number"):
            return _constrain(base, ge=node.minimum, le=node.maximum)
        return base

    def _union(self, arms: list[TypeExpr], context: str) -> TypeExpr:
        unique: list[TypeExpr] = []
        for arm in arms:
            if arm not in unique:
                unique.append(arm)
        # `integer` and `number` together keep integers as int on a round trip.
        if len(unique) == 1:
            return unique[0]
        union = UnionOf(tuple(unique), name_hint=context)
        self.unions.append(union)
        return union


_MISSING = object()


def _shared_nested_names(raw_defs: dict[str, Any]) -> dict[str, str]:
    """One name for each inline object shape that several definitions repeat.

    The schemas inline the same object in many places (every request's
    ``params._meta``, for one). Each shape gets one generated type, named after
    its shortest owner: ``RequestParamsMeta`` rather than a copy per request.
    """
    shapes: dict[str, list[str]] = {}

    def signature(node: Any) -> str:
        def strip(value: Any) -> Any:
            if isinstance(value, dict):
                return {k: strip(v) for k, v in value.items() if k != "description"}
            if isinstance(value, list):
                return [strip(v) for v in value]
            return value

        return json.dumps(strip(node), sort_keys=True)

    def visit(node: Any, context: str, prop: str | None) -> None:
        if not isinstance(node, dict):
            return
        if prop is not None and (node.get("properties") or node.get("allOf")):
            shapes.setdefault(prop + signature(node), []).append(context)
        for key, sub in (node.get("properties") or {}).items():
            visit(sub, context + pascal_case(key), key)
        for index, sub in enumerate(node.get("anyOf") or []):
            visit(sub, f"{context}Variant{index}", prop or "")
        if isinstance(node.get("items"), dict):
            visit(node["items"], context + "Item", prop or "")
        if isinstance(node.get("additionalProperties"), dict):
            visit(node["additionalProperties"], context + "Value", prop or "")

    # Only shapes under the same property name are shared: `ServerCapabilities.tools`
    # and `ClientCapabilities.roots` look alike but mean different things.
    for name in sorted(raw_defs):
        visit(raw_defs[name], name, None)
    shared: dict[str, str] = {}
    for names in shapes.values():
        if len(names) > 1:
            chosen = min(names, key=lambda n: (len(n), n))
            shared.update({n: chosen for n in names})
    return shared


def _schema_object(raw: Any) -> JsonSchemaObject:
    node: JsonSchemaObject = JsonSchemaObject.model_validate({} if raw is True else raw)
    return node


def _sub(value: JsonSchemaObject | bool) -> JsonSchemaObject:
    """A subschema; ``true`` (anything) is the empty schema."""
    return value if isinstance(value, JsonSchemaObject) else _schema_object({})


def _check_supported(raw: Any, where: str) -> None:
    """Refuse schema keywords the generator would otherwise silently ignore."""
    if isinstance(raw, bool):
        return
    if not isinstance(raw, dict):
        raise GenerationError(f"unsupported schema node at {where}: {raw!r}")
    unknown = set(raw) - _SUPPORTED
    if unknown:
        raise GenerationError(f"unsupported schema keyword {sorted(unknown)[0]!r} at {where}")
    for key, value in (raw.get("properties") or {}).items():
        _check_supported(value, f"{where}/properties/{key}")
    for key in ("items", "additionalProperties"):
        if key in raw:
            _check_supported(raw[key], f"{where}/{key}")
    for key in ("anyOf", "allOf"):
        for index, value in enumerate(raw.get(key) or []):
            _check_supported(value, f"{where}/{key}/{index}")


def _is_empty(node: JsonSchemaObject) -> bool:
    return not node.model_dump(exclude_none=True, exclude_defaults=True)


def _is_open(node: JsonSchemaObject) -> bool:
    extra = node.additionalProperties
    return extra is True or isinstance(extra, JsonSchemaObject)


def _constrain(base: TypeExpr, **constraints: object) -> TypeExpr:
    # datamodel-code-generator wraps numeric bounds in UnionIntFloat; keep the number.
    present = tuple((k, getattr(v, "value", v)) for k, v in constraints.items() if v is not None)
    return Constrained(base, present) if present else base


# ---------------------------------------------------------------- whole-module passes


def _mark_recursive_aliases(module: Module) -> None:
    """Aliases that reach themselves through other aliases only.

    Python 3.11 cannot spell such a type for msgspec; the one in the MCP
    schemas (JSONValue and its JSONObject/JSONArray) admits every JSON value,
    so at runtime it is Any, while type checkers see the precise alias.
    """

    def reaches(start: str, name: str, seen: set[str]) -> bool:
        alias = module.aliases.get(name)
        if alias is None or name in seen:
            return False
        seen.add(name)
        return any(ref == start or reaches(start, ref, seen) for ref in alias.refs())

    for name, alias in module.aliases.items():
        if reaches(name, name, set()):
            alias.recursive = True


def _object_arms(
    module: Module, arms: tuple[TypeExpr, ...]
) -> tuple[list[TypeExpr], list[TypeExpr]]:
    """Split union arms (nested union aliases flattened) into object-like and other arms."""
    objects: list[TypeExpr] = []
    others: list[TypeExpr] = []
    for arm in arms:
        resolved = module.resolve(arm)
        if isinstance(resolved, Ref) and resolved.name in module.aliases:
            inner = module.aliases[resolved.name]
            if isinstance(inner.type, UnionOf):
                sub_objects, sub_others = _object_arms(module, inner.type.arms)
                objects += sub_objects
                others += sub_others
                continue
            others.append(arm)  # a recursive alias
        elif isinstance(resolved, Ref) or isinstance(resolved, DictOf):
            objects.append(resolved)
        else:
            others.append(arm)
    return objects, others


def _assign_union_strategies(module: Module, unions: list[UnionOf]) -> None:
    """Make each union msgspec-decodable: native, tagged, or untagged dispatch."""
    alias_unions = {id(alias.type): alias for alias in module.aliases.values()}
    for union in sorted(unions, key=lambda u: (u.name_hint not in module.aliases, u.name_hint)):
        objects, others = _object_arms(module, union.arms)
        if len(objects) <= 1 and not any(_is_open_struct(module, o) for o in objects):
            continue
        if _try_tag(module, objects):
            continue
        alias = alias_unions.get(id(union))
        if alias is None:
            name = union.name_hint
            if name in module.aliases or name in module.structs:
                raise GenerationError(f"type name {name!r} generated twice (an inline union)")
            alias = Alias(name, None, UnionOf(union.arms), definition=False)
            module.aliases[name] = alias
            union.arms = (Ref(name),)
        alias.untagged = True
        alias.runtime_arms = tuple(objects + others)
        alias.discriminator = _discriminator(module, objects, others)


def _discriminator(
    module: Module, objects: list[TypeExpr], others: list[TypeExpr]
) -> Discriminator | None:
    """For a union of objects that each give a declared discriminating
    property a default of their own (``resultType``: "input_required" for
    InputRequiredResult, "complete" for the final results), the arms by
    value; None for any other union."""
    if others:
        return None
    for prop, absent in module.corrections.discriminators:
        groups: dict[str, list[TypeExpr]] = {}
        for arm in objects:
            struct = module.struct(arm.name) if isinstance(arm, Ref) else None
            field = struct.field_named(prop) if struct is not None else None
            if field is None or not isinstance(field.default_value, str):
                break
            groups.setdefault(field.default_value, []).append(arm)
        else:
            if len(groups) > 1 and absent in groups:
                arms = tuple((value, tuple(group)) for value, group in groups.items())
                return Discriminator(prop, absent, arms)
    return None


def _is_open_struct(module: Module, expr: TypeExpr) -> bool:
    struct = module.struct(expr.name) if isinstance(expr, Ref) else None
    return struct is not None and struct.open


def _try_tag(module: Module, objects: list[TypeExpr]) -> bool:
    structs = [module.struct(o.name) if isinstance(o, Ref) else None for o in objects]
    if any(s is None or s.open for s in structs):
        return False
    candidates: set[str] | None = None
    for s in structs:
        assert s is not None
        keys = set(s.const_keys())
        candidates = keys if candidates is None else candidates & keys
    ordered = sorted(
        candidates or (),
        key=lambda k: (
            k not in TAG_PREFERENCE,
            TAG_PREFERENCE.index(k) if k in TAG_PREFERENCE else 0,
            k,
        ),
    )
    for key in ordered:
        values = [s.const_keys()[key] for s in structs if s is not None]
        if len(set(values)) != len(values):
            continue
        if any(s is not None and s.tag_field not in (None, key) for s in structs):
            continue
        for s in structs:
            assert s is not None
            s.tag_field = key
            s.tag = s.const_keys()[key]
        return True
    return False
