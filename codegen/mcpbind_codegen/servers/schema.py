"""JSON Schema as servers write it, read into the type model of :mod:`.types`.

Both dialects servers use are read: draft-07 (``definitions``, ``items`` as a
list, ``additionalItems``, boolean ``exclusiveMinimum``) and 2020-12
(``$defs``, ``prefixItems``, numeric ``exclusiveMinimum``). What a Python type
cannot say exactly becomes a looser type, never a stricter or a wrong one, and
the reason is kept as a note that the generated code prints as a comment above
the field (``# looser: ...``). The rules, in the order they apply:

- ``$ref`` (``#``, JSON pointers, ``$anchor``; ``$recursiveRef`` and
  ``$dynamicRef`` to the root): an object target is a Struct of its own,
  recursion included; a recursive non-object target is ``Any`` (msgspec
  cannot decode a recursive alias). A reference outside the document is ``Any``.
- ``allOf``: objects are merged (properties and required keys); anything else
  keeps its first typed arm.
- ``anyOf`` / ``oneOf``: a union, within what msgspec decodes: objects told
  apart by a required property with a constant string become a tagged union;
  other object unions are ``dict[str, Any]``; several array arms one list of
  their items; several string arms ``str`` (see :func:`union`). ``oneOf``'s
  "exactly one" is not checked when arms overlap (a JSON value two arms'
  types both take: an integer for ``integer`` and ``number``, a string for a
  constant and ``string``), and that is noted.
- ``enum`` / ``const``: ``Literal`` of strings, integers, booleans and null;
  other values loosen to their base type.
- ``type`` lists and ``nullable: true`` are unions (with ``None``).
- objects with ``properties`` are Structs: ``additionalProperties: false``
  forbids unknown fields, anything else lets them through (typed extra
  properties are then not checked); objects without are ``dict[str, V]``,
  with ``patternProperties`` or ``propertyNames`` patterns on the keys.
- arrays are ``list[T]``; ``prefixItems`` (``items`` as a list in draft-07)
  are a ``tuple`` when the length is fixed, a list of the items' union otherwise.
- numeric and string bounds, ``multipleOf``, ``pattern`` and
  ``minItems``/``maxItems``/``minProperties``/``maxProperties`` become
  ``msgspec.Meta``; the formats ``date-time``, ``date``, ``time`` and
  ``uuid`` are ``datetime``/``uuid`` types (``date-time`` and ``time`` with
  the offset RFC 3339 requires), other formats are ``str``. What msgspec's
  parsers of those formats accept beyond the format is noted (a space for
  ``T``, an offset without a colon, a UUID without hyphens); a leap second and
  the year 0000 are refused, as Python's datetime has neither.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

from . import naming
from .types import (
    AnyT,
    Constrained,
    Field,
    Formatted,
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
from .unions import disjoint, python_default, union

FORMATS = {
    "date-time": ("datetime", "datetime"),
    "date": ("datetime", "date"),
    "time": ("datetime", "time"),
    "uuid": ("uuid", "UUID"),
}
# What msgspec's parsers of these formats take beyond the format's own grammar.
_LOOSER_FORMATS = {
    "date-time": "format date-time: a space for `T` and an offset without a colon (+0100) "
    "are accepted too",
    "time": "format time: an offset without a colon (+0100) is accepted too",
    "uuid": "format uuid: 32 hex digits without hyphens are accepted too",
}
_SCALAR = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}
# Validation keywords nothing here expresses: reported, never silently dropped.
_UNCHECKED = (
    "not", "if", "then", "else", "dependentRequired", "dependentSchemas", "dependencies",
    "contains", "minContains", "maxContains", "uniqueItems", "unevaluatedItems",
    "unevaluatedProperties",
)  # fmt: skip


class Registry:
    """The Structs of one generated module, named in the module's scope."""

    def __init__(self, scope: naming.Scope) -> None:
        self.scope = scope
        self.structs: dict[str, Struct] = {}
        # A $defs entry shared by several tools: its name -> (canonical JSON, class name).
        self.shared: dict[str, list[tuple[str, str]]] = {}


class Reader:
    """Reads the schemas of one document (a tool's inputSchema, its outputSchema)."""

    def __init__(self, registry: Registry, document: Any, owner: str) -> None:
        self.registry = registry
        self.document = document
        self.owner = owner
        self.notes: list[str] = []
        self._done: dict[str, Type] = {}
        self._open: dict[str, str | None] = {}  # pointer -> Struct name, None for non-objects
        self._anchors = _anchors(document)

    # ------------------------------------------------------------ entry points

    def root(self, name: str) -> Type:
        """The document as a type; an object document is a Struct called ``name``
        (a name the caller has claimed)."""
        self._open["#"] = None
        try:
            return self.read(self.document, name, "#", exact_name=True)
        finally:
            self._open.pop("#", None)

    def collect(self, read: Callable[[], Type]) -> tuple[Type, list[str]]:
        """``read()`` and the notes it made."""
        before = len(self.notes)
        found = read()
        notes = self.notes[before:]
        del self.notes[before:]
        return found, notes

    # ------------------------------------------------------------ nodes

    def read(self, node: Any, hint: str, pointer: str | None, exact_name: bool = False) -> Type:
        if node is True or node == {}:
            return AnyT()
        if node is False:
            self.notes.append("schema `false` (no value is valid): typed as Any")
            return AnyT()
        if not isinstance(node, dict):
            self.notes.append(f"schema {node!r} is not an object: typed as Any")
            return AnyT()
        for ref_key in ("$ref", "$recursiveRef", "$dynamicRef"):
            if isinstance(node.get(ref_key), str):
                return self._ref(node, ref_key, hint)
        unchecked = [k for k in _UNCHECKED if k in node]
        if unchecked:
            self.notes.append(f"{', '.join(unchecked)} not checked")
        if "allOf" in node:
            return self.read(self._merged(node, pointer), hint, pointer, exact_name)
        for key in ("anyOf", "oneOf"):
            if isinstance(node.get(key), list):
                return self._alternatives(node, key, hint, pointer)
        if "enum" in node or "const" in node:
            return self._literal(node)
        found = self._typed(node, hint, pointer, exact_name)
        if node.get("nullable") is True:
            found = union([found, Scalar("None")], self.notes, self.registry.structs)
        return found

    def _typed(self, node: dict[str, Any], hint: str, pointer: str | None, exact: bool) -> Type:
        kinds = node.get("type")
        if isinstance(kinds, list):
            arms = [
                self._typed({**node, "type": kind}, hint, pointer, exact and kind == "object")
                for kind in kinds
            ]
            return union(arms, self.notes, self.registry.structs)
        if kinds is None:
            kinds = _implied_type(node)
        if kinds == "object":
            return self._object(node, hint, pointer, exact)
        if kinds == "array":
            return self._array(node, hint)
        if kinds == "string":
            return _string(node, self.notes)
        if kinds in ("integer", "number"):
            return _number(node, kinds, self.notes)
        if kinds in _SCALAR:
            return Scalar(_SCALAR[kinds])
        if kinds is not None:
            self.notes.append(f"unknown type {kinds!r}: typed as Any")
        return AnyT()

    # ------------------------------------------------------------ references

    def _ref(self, node: dict[str, Any], key: str, hint: str) -> Type:
        ref = node[key]
        if key != "$ref":
            ref = "#"  # $recursiveRef / $dynamicRef: the root, as servers use them
        pointer = self._anchors.get(ref, ref)
        if not pointer.startswith("#"):
            self.notes.append(f"reference {ref!r} outside the schema: typed as Any")
            return AnyT()
        if pointer in self._done:
            return self._done[pointer]
        if pointer in self._open:
            name = self._open[pointer]
            if name is None:
                self.notes.append(f"recursive non-object schema {ref!r}: typed as Any")
                return AnyT()
            return Named(name)
        target = _resolve(self.document, pointer)
        if target is _MISSING:
            self.notes.append(f"reference {ref!r} does not resolve: typed as Any")
            return AnyT()
        segments = pointer.rstrip("/").split("/")
        definition = len(segments) == 3 and segments[1] in ("$defs", "definitions")
        name_hint = naming.pascal(_unescape(segments[-1])) if len(segments) > 1 else hint
        if definition and _is_object(target):
            shared = self._shared_name(name_hint, pointer)
            if shared in self.registry.structs:
                self._done[pointer] = Named(shared)
                return Named(shared)
            found = self.read(target, shared, pointer, exact_name=True)
        else:
            if len(segments) == 1:
                name_hint = hint
            elif not definition:
                name_hint = f"{self.owner}{name_hint}"
            self._open[pointer] = None
            try:
                found = self.read(target, name_hint, pointer)
            finally:
                self._open.pop(pointer, None)
        self._done[pointer] = found
        return found

    def _shared_name(self, name: str, pointer: str) -> str:
        """A $defs Struct: one class for the same definition across tools."""
        canonical = json.dumps(_closure(self.document, pointer), sort_keys=True)
        known = self.registry.shared.setdefault(name, [])
        for text, class_name in known:
            if text == canonical:
                return class_name
        class_name = self.registry.scope.claim(name if not known else f"{self.owner}{name}")
        known.append((canonical, class_name))
        return class_name

    def _merged(self, node: dict[str, Any], pointer: str | None) -> dict[str, Any]:
        """allOf: objects merged, anything else its first typed arm."""
        arms = [self._deref(arm) for arm in node["allOf"]]
        rest = {k: v for k, v in node.items() if k != "allOf"}
        if rest.get("type", "object") == "object" and all(_is_object(a) for a in arms):
            merged: dict[str, Any] = {**rest, "type": "object"}
            properties: dict[str, Any] = dict(rest.get("properties", {}))
            required: list[str] = list(rest.get("required", []))
            for arm in arms:
                for key, value in arm.get("properties", {}).items():
                    properties.setdefault(key, value)
                required += [r for r in arm.get("required", []) if r not in required]
                if arm.get("additionalProperties") is False and "additionalProperties" not in rest:
                    self.notes.append("allOf arm closed to unknown properties: not checked")
            merged["properties"] = properties
            if required:
                merged["required"] = required
            return merged
        self.notes.append("allOf of non-objects: typed by its first arm, the others not checked")
        first = next((a for a in arms if isinstance(a, dict) and a), {})
        return {**rest, **first}

    def _deref(self, node: Any) -> Any:
        seen: set[str] = set()
        while isinstance(node, dict) and isinstance(node.get("$ref"), str):
            ref: str = node["$ref"]
            pointer = self._anchors.get(ref, ref)
            if pointer in seen:
                break
            seen.add(pointer)
            target = _resolve(self.document, pointer)
            if target is _MISSING:
                break
            node = target
        return node

    # ------------------------------------------------------------ alternatives and values

    def _alternatives(self, node: dict[str, Any], key: str, hint: str, pointer: str | None) -> Type:
        rest = {k: v for k, v in node.items() if k not in ("anyOf", "oneOf", "nullable")}
        arms = []
        for index, arm in enumerate(node[key]):
            # Keywords beside anyOf apply to every arm.
            sub = {**rest, **arm} if rest and isinstance(arm, dict) and "$ref" not in arm else arm
            arms.append(self.read(sub, f"{hint}Option{index + 1}", None))
        if node.get("nullable") is True:
            arms.append(Scalar("None"))
        found = union(arms, self.notes, self.registry.structs)
        # The arms as written, not as merged: `str` may have absorbed a constant arm.
        if key == "oneOf" and not disjoint(UnionT(tuple(arms)), self.registry.structs):
            self.notes.append("oneOf: that exactly one arm matches is not checked")
        return found

    def _literal(self, node: dict[str, Any]) -> Type:
        values = [node["const"]] if "const" in node else node.get("enum")
        if not isinstance(values, list) or not values:
            self.notes.append("enum without values: typed as Any")
            return AnyT()
        if all(v is None or isinstance(v, (str, int, bool)) for v in values):
            found: Type = Lit(tuple(dict.fromkeys(values)))
            if node.get("nullable") is True and None not in values:
                found = Lit((*found.values, None))  # type: ignore[attr-defined]
            return found
        kinds = sorted({kind_of(v) for v in values})
        self.notes.append(
            f"enum or const of {', '.join(kinds)} values (Literal takes strings, integers, "
            "booleans and null): typed by kind, the values not checked"
        )
        arms: list[Type] = []
        for kind in kinds:
            arms.append(
                Scalar(_SCALAR[kind])
                if kind in _SCALAR
                else ListT(AnyT()) if kind == "array" else MapT(Scalar("str"), AnyT())
            )
        return union(arms, self.notes, self.registry.structs)

    # ------------------------------------------------------------ arrays and objects

    def _array(self, node: dict[str, Any], hint: str) -> Type:
        items = node.get("items")
        prefix = node.get("prefixItems")
        rest: Any = items
        if isinstance(items, list):  # draft-07's tuple form
            prefix, rest = items, node.get("additionalItems", True)
        elif prefix is None:
            rest = items
        elif items is None:
            rest = True
        low, high = node.get("minItems"), node.get("maxItems")
        meta: list[tuple[str, object]] = []
        if isinstance(low, int) and low > 0:
            meta.append(("min_length", low))
        if isinstance(high, int):
            meta.append(("max_length", high))
        if isinstance(prefix, list):
            parts = [self.read(p, f"{hint}Item{i + 1}", None) for i, p in enumerate(prefix)]
            fixed = isinstance(low, int) and low >= len(prefix)
            closed = rest is False or (isinstance(high, int) and high <= len(prefix))
            if fixed and closed:
                return TupleT(tuple(parts))
            if rest is not False and rest is not None:
                parts.append(self.read(rest, f"{hint}Item", None))
            self.notes.append(
                "a tuple of varying length (prefixItems without a fixed length): "
                "typed as a list of its items' union"
            )
            found: Type = ListT(union(parts, self.notes, self.registry.structs))
        else:
            found = ListT(self.read(rest, f"{hint}Item", None) if rest is not None else AnyT())
        return Constrained(found, tuple(meta)) if meta else found

    def _object(self, node: dict[str, Any], hint: str, pointer: str | None, exact: bool) -> Type:
        properties = node.get("properties")
        properties = properties if isinstance(properties, dict) else {}
        required = [r for r in node.get("required", []) if isinstance(r, str)]
        additional = node.get("additionalProperties", True)
        patterns = node.get("patternProperties")
        if properties or required or (additional is False and not patterns):
            return self._struct(node, properties, required, hint, pointer, exact)
        return self._map(node, additional, patterns, hint)

    def _struct(
        self,
        node: dict[str, Any],
        properties: dict[str, Any],
        required: list[str],
        hint: str,
        pointer: str | None,
        exact: bool,
    ) -> Type:
        name = hint if exact else self.registry.scope.claim(hint)
        # Titles are mostly generated (pydantic's "get_forecastArguments"): descriptions only.
        struct = Struct(name, node.get("description"))
        self.registry.structs[name] = struct
        if pointer is not None:
            self._open[pointer] = name
        additional = node.get("additionalProperties", True)
        struct.closed = additional is False and not node.get("patternProperties")
        if isinstance(additional, dict) and additional:
            struct.notes.append("the types of additional properties are not checked")
        if node.get("patternProperties"):
            struct.notes.append("patternProperties beside properties: not checked")
        for key in ("minProperties", "maxProperties", "propertyNames"):
            if key in node:
                struct.notes.append(f"{key} not checked")
        fields = naming.Scope(naming.FIELD_RESERVED)
        wanted = list(properties) + [r for r in required if r not in properties]
        for wire in wanted:
            sub = properties.get(wire, True)
            if sub is False:
                struct.notes.append(f"property {wire!r} may not be present: not checked")
                continue
            sub_pointer = f"{pointer}/properties/{_escape(wire)}" if pointer is not None else None
            field_type, notes = self.collect(
                lambda: self.read(sub, f"{name}{naming.pascal(wire)}", sub_pointer)
            )
            is_required = wire in required
            default = None
            if not is_required and isinstance(sub, dict) and "default" in sub:
                default = python_default(sub["default"], field_type)
                if default is None:
                    notes.append(f"server default {sub['default']!r} is not written here")
            struct.fields.append(
                Field(
                    wire_name=wire,
                    name=fields.claim(naming.snake(wire)),
                    type=field_type,
                    required=is_required,
                    description=sub.get("description") if isinstance(sub, dict) else None,
                    default=default,
                    notes=notes,
                )
            )
        if pointer is not None:
            self._open.pop(pointer, None)
            self._done[pointer] = Named(name)
        return Named(name)

    def _map(self, node: dict[str, Any], additional: Any, patterns: Any, hint: str) -> Type:
        key: Type = Scalar("str")
        values: list[Type] = []
        names = node.get("propertyNames")
        if isinstance(names, dict) and isinstance(names.get("pattern"), str) and not patterns:
            key = _string({"pattern": names["pattern"]}, self.notes)
        elif names is not None:
            self.notes.append("propertyNames not checked")
        if isinstance(patterns, dict) and patterns:
            values = [self.read(v, f"{hint}Value", None) for v in patterns.values()]
            if len(patterns) == 1 and additional is False:
                key = _string({"pattern": next(iter(patterns))}, self.notes)
            else:
                self.notes.append("patternProperties: which key takes which value is not checked")
                if additional is not False:
                    values.append(self.read(additional, f"{hint}Value", None))
        elif additional is not True:
            values = [self.read(additional, f"{hint}Value", None)]
        value = union(values, self.notes, self.registry.structs) if values else AnyT()
        found: Type = MapT(key, value)
        meta = [
            (arg, node[k])
            for k, arg in (("minProperties", "min_length"), ("maxProperties", "max_length"))
            if isinstance(node.get(k), int)
        ]
        return Constrained(found, tuple(meta)) if meta else found


# ---------------------------------------------------------------- scalars


def _string(node: dict[str, Any], notes: list[str]) -> Type:
    meta: list[tuple[str, object]] = []
    for key, arg in (("minLength", "min_length"), ("maxLength", "max_length")):
        if isinstance(node.get(key), int):
            meta.append((arg, node[key]))
    pattern = node.get("pattern")
    if isinstance(pattern, str):
        try:
            re.compile(pattern)
            meta.append(("pattern", pattern))
        except re.error:
            notes.append(f"pattern {pattern!r} is not a Python regular expression")
    fmt = node.get("format")
    if fmt in FORMATS:
        if meta:
            notes.append(f"string bounds on format {fmt}: not checked")
        found: Type = Formatted(*FORMATS[fmt])
        if fmt in _LOOSER_FORMATS:
            notes.append(_LOOSER_FORMATS[fmt])
        if fmt in ("date-time", "time"):
            # RFC 3339 requires the offset; msgspec refuses a naive value with tz=True.
            found = Constrained(found, (("tz", True),))
        return found
    base = Scalar("str")
    return Constrained(base, tuple(meta)) if meta else base


def _number(node: dict[str, Any], kind: str, notes: list[str]) -> Type:
    integer = kind == "integer"
    meta: list[tuple[str, object]] = []
    for key, exclusive, inclusive_arg, exclusive_arg in (
        ("minimum", "exclusiveMinimum", "ge", "gt"),
        ("maximum", "exclusiveMaximum", "le", "lt"),
    ):
        bound, flag = node.get(key), node.get(exclusive)
        if _is_number(bound):
            meta.append((exclusive_arg if flag is True else inclusive_arg, bound))
        if _is_number(flag):
            meta.append((exclusive_arg, flag))
    multiple = node.get("multipleOf")
    if _is_number(multiple):
        meta.append(("multiple_of", multiple))
    if integer:
        meta = _integer_meta(meta, notes)
    base = Scalar("int" if integer else "float")
    return Constrained(base, tuple(meta)) if meta else base


def _integer_meta(meta: list[tuple[str, object]], notes: list[str]) -> list[tuple[str, object]]:
    fixed: list[tuple[str, object]] = []
    for arg, value in meta:
        assert isinstance(value, (int, float))
        if isinstance(value, int) or value.is_integer():
            fixed.append((arg, int(value)))
        elif arg in ("ge", "gt"):
            fixed.append(("ge", math.ceil(value)))  # the same integers
        elif arg in ("le", "lt"):
            fixed.append(("le", math.floor(value)))
        else:
            notes.append(f"multipleOf {value} on an integer: not checked")
    return fixed


# ---------------------------------------------------------------- documents


class _Missing:
    pass


_MISSING: Any = _Missing()


def _implied_type(node: dict[str, Any]) -> str | None:
    if any(k in node for k in ("properties", "additionalProperties", "patternProperties")):
        return "object"
    if "required" in node:
        return "object"
    if any(k in node for k in ("items", "prefixItems", "minItems", "maxItems")):
        return "array"
    if any(k in node for k in ("minLength", "maxLength", "pattern")):
        return "string"
    if any(k in node for k in ("minimum", "maximum", "exclusiveMinimum", "multipleOf")):
        return "number"
    return None


def _is_object(node: Any) -> bool:
    if not isinstance(node, dict):
        return False
    kind = node.get("type", _implied_type(node))
    return kind == "object" and not any(k in node for k in ("anyOf", "oneOf", "enum", "const"))


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _escape(segment: str) -> str:
    return segment.replace("~", "~0").replace("/", "~1")


def _unescape(segment: str) -> str:
    return unquote(segment).replace("~1", "/").replace("~0", "~")


def _resolve(document: Any, pointer: str) -> Any:
    node = document
    for segment in pointer.lstrip("#").split("/")[1:]:
        segment = _unescape(segment)
        if isinstance(node, dict) and segment in node:
            node = node[segment]
        elif isinstance(node, list) and segment.isdigit() and int(segment) < len(node):
            node = node[int(segment)]
        else:
            return _MISSING
    return node


def _anchors(document: Any) -> dict[str, str]:
    """``#name`` of each ``$anchor`` (and ``$id: "#name"``) -> its JSON pointer."""
    found: dict[str, str] = {}

    def visit(node: Any, pointer: str) -> None:
        if isinstance(node, dict):
            for key in ("$anchor", "$id"):
                anchor = node.get(key)
                if isinstance(anchor, str) and anchor:
                    found[anchor if anchor.startswith("#") else f"#{anchor}"] = pointer
            for key, value in node.items():
                if key not in ("enum", "const", "default", "examples"):
                    visit(value, f"{pointer}/{_escape(key)}")
        elif isinstance(node, list):
            for index, value in enumerate(node):
                visit(value, f"{pointer}/{index}")

    visit(document, "#")
    found.pop("#", None)
    return {k: v for k, v in found.items() if not k.startswith("#/")}


def _closure(document: Any, pointer: str) -> list[Any]:
    """A definition and every definition it reaches: what makes two equal."""
    seen: dict[str, Any] = {}
    pending = [pointer]
    while pending:
        current = pending.pop()
        if current in seen:
            continue
        target = _resolve(document, current)
        seen[current] = target
        text = json.dumps(target)
        pending += re.findall(r'"\$ref": "(#/[^"]*)"', text)
    return [seen[k] for k in sorted(seen)]
