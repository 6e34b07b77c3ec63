"""The union rules and the defaults of the server schema reader (:mod:`.schema`).

msgspec decodes a union only within limits: at most one object type (unless
every object arm is a tagged Struct), one array type, one string-like type;
``union`` keeps within them, loosening with a note where it must. A schema's
``default`` becomes a Python default only where the type takes it as it is.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from .types import (
    AnyT,
    Constrained,
    ListT,
    Lit,
    MapT,
    Named,
    Scalar,
    Struct,
    TupleT,
    Type,
    UnionT,
    kind_of,
)

_TAG_PREFERENCE = ("type", "kind", "method", "mode", "op", "action")


# ---------------------------------------------------------------- unions


def union(arms: list[Type], notes: list[str], structs: dict[str, Struct]) -> Type:
    """``arms`` as one type msgspec decodes: loosened, with a note, where it cannot."""
    flat: list[Type] = []
    for arm in arms:
        flat += list(arm.arms) if isinstance(arm, UnionT) else [arm]
    unique = list(dict.fromkeys(flat))
    if any(isinstance(a, AnyT) for a in unique):
        return AnyT()
    if len(unique) == 1:
        return unique[0]
    literals: list[object] = []
    by_kind: dict[str, list[Type]] = {}
    for arm in unique:
        if isinstance(arm, Lit):
            literals += [v for v in arm.values if v not in literals]
        else:
            by_kind.setdefault(_primary_kind(arm), []).append(arm)
    out: list[Type] = []
    objects = by_kind.get("object", [])
    if len(objects) > 1:
        objects = [_tagged(objects, notes, structs)]
    out += objects
    arrays = by_kind.get("array", [])
    if len(arrays) > 1:
        notes.append("several array types: typed as one list of their items' union")
        arrays = [ListT(union([_item(a) for a in arrays], notes, structs))]
    out += arrays
    for kind, plain in (("string", "str"), ("integer", "int"), ("number", "float")):
        group = by_kind.get(kind, [])
        kind_literals = [v for v in literals if kind_of(v) == kind]
        if not group:
            continue
        if len(group) == 1 and (not kind_literals or group[0] == Scalar(plain)):
            out.append(group[0])
        else:
            notes.append(f"several {kind} types: typed as {plain}")
            out.append(Scalar(plain))
        literals = [v for v in literals if kind_of(v) != kind]
    if by_kind.get("boolean"):
        out.append(Scalar("bool"))
        literals = [v for v in literals if kind_of(v) != "boolean"]
    null = "null" in by_kind or None in literals
    literals = [v for v in literals if v is not None]
    if literals:
        out.append(Lit(tuple(literals)))
    if null:
        out.append(Scalar("None"))
    return out[0] if len(out) == 1 else UnionT(tuple(out))


def _primary_kind(arm: Type) -> str:
    while isinstance(arm, Constrained):
        arm = arm.base
    if arm == Scalar("float"):
        return "number"
    (kind,) = arm.kinds
    return kind


def _item(arm: Type) -> Type:
    while isinstance(arm, Constrained):
        arm = arm.base
    if isinstance(arm, ListT):
        return arm.item
    if isinstance(arm, TupleT):
        return UnionT(arm.items) if arm.items else AnyT()
    return AnyT()


def _tagged(objects: list[Type], notes: list[str], structs: dict[str, Struct]) -> Type:
    """Structs told apart by a required constant string property: a tagged union."""
    arms = [structs.get(a.name) if isinstance(a, Named) else None for a in objects]
    if all(s is not None for s in arms):
        found = [s for s in arms if s is not None]
        candidates = None
        for struct in found:
            keys = {
                f.wire_name: f.type.values[0]
                for f in struct.fields
                if f.required
                and isinstance(f.type, Lit)
                and len(f.type.values) == 1
                and isinstance(f.type.values[0], str)
            }
            candidates = set(keys) if candidates is None else candidates & set(keys)
        for key in sorted(candidates or (), key=lambda k: (k not in _TAG_PREFERENCE, k)):
            tags = [struct.field_named(key) for struct in found]
            values = [t.type.values[0] for t in tags if t is not None and isinstance(t.type, Lit)]
            clash = any(s.tag_field not in (None, key) for s in found) or any(
                s.tag_field == key and s.tag != v for s, v in zip(found, values, strict=True)
            )
            if len(set(values)) == len(values) and not clash:
                for struct, value in zip(found, values, strict=True):
                    struct.tag_field, struct.tag = key, value
                return UnionT(tuple(objects))
    notes.append("objects that no required constant property tells apart: typed as dict[str, Any]")
    return MapT(Scalar("str"), AnyT())


def disjoint(found: UnionT, structs: dict[str, Struct]) -> bool:
    """Whether no JSON value is taken by two arms of ``found`` (what ``oneOf``'s
    "exactly one" needs): arms of different JSON kinds, a float's including
    integers, or objects of a tagged union."""
    arms: list[Type] = []
    for arm in found.arms:
        arms += list(arm.arms) if isinstance(arm, UnionT) else [arm]
    for index, arm in enumerate(arms):
        for other in arms[index + 1 :]:
            if isinstance(arm, Named) and isinstance(other, Named):
                tagged = [structs.get(a.name) for a in (arm, other)]
                if any(s is None or s.tag_field is None for s in tagged):
                    return False
            elif isinstance(arm, Lit) and isinstance(other, Lit):
                if any(_same(a, b) for a in arm.values for b in other.values):
                    return False
            elif arm.kinds & other.kinds:
                return False
    return True


def _same(a: object, b: object) -> bool:
    """Equal as JSON values (``1`` and ``True`` are not)."""
    return a == b and kind_of(a) == kind_of(b)


# ---------------------------------------------------------------- defaults


def python_default(value: Any, type_: Type) -> str | None:
    """Python source of a default the type takes as it is, else None."""
    if isinstance(type_, TupleT) and isinstance(value, list):
        fits = len(value) == len(type_.items) and all(
            not isinstance(v, (list, dict)) and _accepts(t, v)
            for t, v in zip(type_.items, value, strict=False)
        )
        return repr(tuple(value)) if fits else None
    if isinstance(value, (list, dict)):
        return repr(value) if not value and _accepts(type_, value) else None
    if value is None or isinstance(value, (str, int, float, bool)):
        return repr(value) if _accepts(type_, value) else None
    return None


def _accepts(type_: Type, value: Any) -> bool:
    if isinstance(type_, AnyT):
        return True
    if isinstance(type_, UnionT):
        return any(_accepts(arm, value) for arm in type_.arms)
    if isinstance(type_, Lit):
        return any(value == v and type(value) is type(v) for v in type_.values)
    if isinstance(type_, Constrained):
        return _accepts(type_.base, value) and all(
            _meets(arg, bound, value) for arg, bound in type_.meta
        )
    if isinstance(type_, Scalar):
        kind = kind_of(value)
        return kind in type_.kinds and not (type_.name == "int" and isinstance(value, float))
    if isinstance(type_, ListT):
        return bool(value == [])
    if isinstance(type_, MapT):
        return bool(value == {})
    return False


def _meets(arg: str, bound: Any, value: Any) -> bool:
    checks: dict[str, Callable[[], bool]] = {
        "ge": lambda: value >= bound,
        "gt": lambda: value > bound,
        "le": lambda: value <= bound,
        "lt": lambda: value < bound,
        "min_length": lambda: len(value) >= bound,
        "max_length": lambda: len(value) <= bound,
        "pattern": lambda: re.search(bound, value) is not None,
        "multiple_of": lambda: value % bound == 0,
    }
    try:
        return checks[arg]()
    except (TypeError, KeyError):
        return False
