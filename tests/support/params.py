"""Values for the generated types, derived from their msgspec type info: the
smallest valid JSON value of a type, every field of a params type (nested
ones included) with the JSON kinds it accepts, and a wrong value for each
kind it does not. What the bad-input tests send at every params field."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import msgspec
from msgspec import inspect as mi

from mcpbind.codec import OpenObject

KINDS = ("null", "boolean", "integer", "number", "string", "array", "object")
SAMPLES: dict[str, Any] = {
    "null": None,
    "boolean": True,
    "integer": 7,
    "number": 2.5,
    "string": "wrong",
    "array": [1, "a"],
    "object": {"wrong": 1},
}
MAX_DEPTH = 6


def info(t: Any) -> mi.Type:
    return t if isinstance(t, mi.Type) else mi.type_info(t)


def _custom_arms(cls: Any) -> tuple[Any, ...] | None:
    """The arms of an untagged union class of mcpbind.codec, else None."""
    arms = getattr(cls, "__arms__", None)
    return tuple(arms) if arms is not None else None


def _kind_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    raise TypeError(value)


def accepted(t: Any) -> set[str]:
    """The JSON kinds a value of type ``t`` may have (not counting constraints)."""
    t = info(t)
    if isinstance(t, mi.AnyType):
        return set(KINDS)
    if isinstance(t, mi.NoneType):
        return {"null"}
    if isinstance(t, mi.BoolType):
        return {"boolean"}
    if isinstance(t, mi.IntType):
        return {"integer"}
    if isinstance(t, mi.FloatType):
        return {"integer", "number"}
    if isinstance(t, mi.StrType):
        return {"string"}
    if isinstance(t, mi.LiteralType):
        return {_kind_of(v) for v in t.values}
    if isinstance(t, (mi.ListType, mi.SetType, mi.FrozenSetType, mi.VarTupleType, mi.TupleType)):
        return {"array"}
    if isinstance(t, (mi.DictType, mi.TypedDictType, mi.DataclassType)):
        return {"object"}
    if isinstance(t, mi.StructType):
        return {"array"} if t.array_like else {"object"}
    if isinstance(t, mi.UnionType):
        return set().union(*(accepted(arm) for arm in t.types))
    if isinstance(t, mi.CustomType):
        if isinstance(t.cls, type) and issubclass(t.cls, OpenObject):
            return {"object"}
        arms = _custom_arms(t.cls)
        if arms is not None:
            return set().union(*(accepted(arm) for arm in arms))
    return set(KINDS)  # unknown: assume anything goes (no wrong value is drawn)


def _struct_of(t: mi.Type) -> mi.StructType | None:
    """The struct a value of ``t`` is built from (open objects: their typed keys)."""
    if isinstance(t, mi.StructType):
        return t
    if isinstance(t, mi.CustomType) and isinstance(t.cls, type) and issubclass(t.cls, OpenObject):
        keys = info(t.cls.__keys__)
        return keys if isinstance(keys, mi.StructType) else None
    if isinstance(t, mi.UnionType):  # a tagged union, or T | None: its first struct arm
        for arm in t.types:
            found = _struct_of(arm)
            if found is not None:
                return found
    if isinstance(t, mi.CustomType):
        arms = _custom_arms(t.cls)
        for arm in arms or ():
            found = _struct_of(info(arm))
            if found is not None:
                return found
    return None


def minimal(t: Any, depth: int = 0) -> Any:
    """The smallest valid JSON value of type ``t``: required fields only."""
    t = info(t)
    if isinstance(t, mi.StructType) or (
        isinstance(t, mi.CustomType) and isinstance(t.cls, type) and issubclass(t.cls, OpenObject)
    ):
        struct = _struct_of(t)
        assert struct is not None
        value = {f.encode_name: minimal(f.type, depth + 1) for f in struct.fields if f.required}
        if struct.tag_field is not None:
            value[struct.tag_field] = struct.tag
        return value
    if isinstance(t, mi.UnionType):
        arms = [arm for arm in t.types if not isinstance(arm, mi.NoneType)]
        return minimal(arms[0] if arms else t.types[0], depth + 1)
    if isinstance(t, mi.CustomType):
        arms = _custom_arms(t.cls)
        if arms:
            return minimal(arms[0], depth + 1)
        return {}
    if isinstance(t, mi.AnyType):
        return "any"
    if isinstance(t, mi.NoneType):
        return None
    if isinstance(t, mi.BoolType):
        return False
    if isinstance(t, mi.IntType):
        if t.ge is not None:
            return t.ge
        if t.gt is not None:
            return t.gt + 1
        return 1
    if isinstance(t, mi.FloatType):
        return float(t.ge) if t.ge is not None else 1.5
    if isinstance(t, mi.StrType):
        return "x" * max(t.min_length or 1, 1)
    if isinstance(t, mi.LiteralType):
        return t.values[0]
    if isinstance(t, (mi.ListType, mi.SetType, mi.FrozenSetType, mi.VarTupleType)):
        return [minimal(t.item_type, depth + 1) for _ in range(t.min_length or 0)]
    if isinstance(t, mi.TupleType):
        return [minimal(item, depth + 1) for item in t.item_types]
    if isinstance(t, (mi.DictType, mi.TypedDictType, mi.DataclassType)):
        return {}
    raise TypeError(f"no minimal value for {t!r}")


@dataclass(frozen=True)
class FieldPath:
    """One field of a params type, reached through ``path`` (wire names)."""

    path: tuple[str, ...]
    types: tuple[mi.Type, ...]  # the type at each step of the path
    required: bool

    @property
    def type(self) -> mi.Type:
        return self.types[-1]

    @property
    def dotted(self) -> str:
        return "$." + ".".join(self.path)


def fields(
    t: Any, path: tuple[str, ...] = (), types: tuple[mi.Type, ...] = ()
) -> Iterator[FieldPath]:
    """Every field of a struct type, nested structs' fields after their own."""
    struct = _struct_of(info(t))
    if struct is None or len(path) >= MAX_DEPTH:
        return
    if struct.tag_field is not None and isinstance(
        struct.tag, str
    ):  # the tag of a tagged union's arm
        tag = mi.LiteralType((struct.tag,))
        yield FieldPath((*path, struct.tag_field), (*types, tag), True)
    for field in struct.fields:
        step = (*path, field.encode_name)
        steps = (*types, field.type)
        yield FieldPath(step, steps, field.required)
        yield from fields(field.type, step, steps)


def wrong_values(t: Any) -> list[Any]:
    """A value of every JSON kind ``t`` does not accept, and values breaking
    its constraints (literals, bounds)."""
    t = info(t)
    values = [SAMPLES[kind] for kind in KINDS if kind not in accepted(t)]
    if isinstance(t, mi.LiteralType) and any(isinstance(v, str) for v in t.values):
        values.append("not-one-of-the-literals")
    if isinstance(t, mi.IntType) and t.ge is not None:
        values.append(t.ge - 1)
    if isinstance(t, mi.IntType) and t.gt is not None:
        values.append(t.gt)
    return values


def with_value(baseline: dict[str, Any], field: FieldPath, value: Any) -> dict[str, Any]:
    """``baseline`` with ``value`` at the field's path (parents made minimal where missing)."""
    result = copy.deepcopy(baseline)
    node = result
    for key, parent_type in zip(field.path[:-1], field.types[:-1]):
        child = node.get(key)
        if not isinstance(child, dict):
            child = minimal(parent_type)
            node[key] = child
        node = child
    node[field.path[-1]] = value
    return result


def without(baseline: dict[str, Any], field: FieldPath) -> dict[str, Any]:
    """``baseline`` with the field removed (its parents made minimal where missing)."""
    result = with_value(baseline, field, None)
    node = result
    for key in field.path[:-1]:
        node = node[key]
    del node[field.path[-1]]
    return result


def valid(value: Any, t: Any) -> bool:
    from mcpbind.codec import convert

    try:
        convert(value, t)
    except (msgspec.ValidationError, ValueError, TypeError):
        return False
    return True
