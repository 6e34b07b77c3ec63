"""The small type model a server's JSON Schemas are read into.

Each type knows its Python annotation and the JSON kinds it accepts (what
msgspec's union rules are about); a Struct knows its fields and its options.
The reader (:mod:`.schema`) decides; the template only prints.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..model import docstring

KINDS = frozenset({"null", "boolean", "integer", "number", "string", "array", "object"})


@dataclass
class Imports:
    """What a rendered module needs imported, collected while rendering."""

    typing: set[str] = field(default_factory=set)
    modules: set[str] = field(default_factory=set)


class Type:
    def render(self, imports: Imports) -> str:
        raise NotImplementedError

    @property
    def kinds(self) -> frozenset[str]:
        raise NotImplementedError

    def children(self) -> tuple[Type, ...]:
        return ()


@dataclass(frozen=True)
class AnyT(Type):
    def render(self, imports: Imports) -> str:
        imports.typing.add("Any")
        return "Any"

    @property
    def kinds(self) -> frozenset[str]:
        return KINDS


_SCALAR_KINDS = {
    "str": frozenset({"string"}),
    "int": frozenset({"integer"}),
    "float": frozenset({"number", "integer"}),
    "bool": frozenset({"boolean"}),
    "None": frozenset({"null"}),
}


@dataclass(frozen=True)
class Scalar(Type):
    name: str  # str, int, float, bool, None

    def render(self, imports: Imports) -> str:
        return self.name

    @property
    def kinds(self) -> frozenset[str]:
        return _SCALAR_KINDS[self.name]


def kind_of(value: object) -> str:
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
    return "array" if isinstance(value, list) else "object"


@dataclass(frozen=True)
class Lit(Type):
    values: tuple[object, ...]

    def render(self, imports: Imports) -> str:
        imports.typing.add("Literal")
        return f"Literal[{', '.join(repr(v) for v in self.values)}]"

    @property
    def kinds(self) -> frozenset[str]:
        return frozenset(kind_of(v) for v in self.values)


@dataclass(frozen=True)
class Formatted(Type):
    """A string format msgspec parses exactly: datetime.datetime, uuid.UUID ..."""

    module: str
    name: str

    def render(self, imports: Imports) -> str:
        imports.modules.add(self.module)
        return f"{self.module}.{self.name}"

    @property
    def kinds(self) -> frozenset[str]:
        return frozenset({"string"})


@dataclass(frozen=True)
class ListT(Type):
    item: Type

    def render(self, imports: Imports) -> str:
        return f"list[{self.item.render(imports)}]"

    @property
    def kinds(self) -> frozenset[str]:
        return frozenset({"array"})

    def children(self) -> tuple[Type, ...]:
        return (self.item,)


@dataclass(frozen=True)
class TupleT(Type):
    items: tuple[Type, ...]

    def render(self, imports: Imports) -> str:
        if not self.items:
            return "tuple[()]"
        return f"tuple[{', '.join(i.render(imports) for i in self.items)}]"

    @property
    def kinds(self) -> frozenset[str]:
        return frozenset({"array"})

    def children(self) -> tuple[Type, ...]:
        return self.items


@dataclass(frozen=True)
class MapT(Type):
    key: Type
    value: Type

    def render(self, imports: Imports) -> str:
        return f"dict[{self.key.render(imports)}, {self.value.render(imports)}]"

    @property
    def kinds(self) -> frozenset[str]:
        return frozenset({"object"})

    def children(self) -> tuple[Type, ...]:
        return (self.key, self.value)


@dataclass(frozen=True)
class Named(Type):
    """A generated Struct, by its class name."""

    name: str

    def render(self, imports: Imports) -> str:
        return self.name

    @property
    def kinds(self) -> frozenset[str]:
        return frozenset({"object"})


@dataclass(frozen=True)
class Constrained(Type):
    base: Type
    meta: tuple[tuple[str, object], ...]

    def render(self, imports: Imports) -> str:
        imports.typing.add("Annotated")
        args = ", ".join(f"{k}={v!r}" for k, v in self.meta)
        return f"Annotated[{self.base.render(imports)}, msgspec.Meta({args})]"

    @property
    def kinds(self) -> frozenset[str]:
        return self.base.kinds

    def children(self) -> tuple[Type, ...]:
        return (self.base,)


@dataclass(frozen=True)
class UnionT(Type):
    arms: tuple[Type, ...]

    def render(self, imports: Imports) -> str:
        return " | ".join(arm.render(imports) for arm in self.arms)

    @property
    def kinds(self) -> frozenset[str]:
        return frozenset().union(*(arm.kinds for arm in self.arms))

    def children(self) -> tuple[Type, ...]:
        return self.arms


def walk(type_: Type) -> list[Type]:
    found = [type_]
    for child in type_.children():
        found += walk(child)
    return found


# ---------------------------------------------------------------- structs


@dataclass
class Field:
    wire_name: str
    name: str  # the Python name (see .naming)
    type: Type
    required: bool
    description: str | None = None
    default: str | None = None  # Python source of the default, None when there is none
    notes: list[str] = field(default_factory=list)

    def annotation(self, imports: Imports) -> str:
        rendered = self.type.render(imports)
        if self.required or self.default is not None:
            return rendered
        return f"{rendered} | UnsetType"

    @property
    def value(self) -> str | None:
        """What the declaration is set to: the default, UNSET or nothing."""
        if self.required:
            return None
        return self.default if self.default is not None else "UNSET"


@dataclass
class Struct:
    name: str
    description: str | None
    fields: list[Field] = field(default_factory=list)
    closed: bool = False
    tag_field: str | None = None
    tag: object = None
    notes: list[str] = field(default_factory=list)

    @property
    def doc(self) -> str | None:
        return docstring(self.description)

    @property
    def options(self) -> str:
        # omit_defaults: a parameter left at the default the server published is
        # not sent, so the server applies its own default (the same value).
        options = ["kw_only=True", "omit_defaults=True"]
        if self.closed:
            options.append("forbid_unknown_fields=True")
        if self.tag_field is not None:
            options += [f"tag_field={self.tag_field!r}", f"tag={self.tag!r}"]
        return ", ".join(options)

    @property
    def wire_fields(self) -> list[Field]:
        """The fields that are Struct fields (a tag is class config, not a field)."""
        return [f for f in self.fields if f.wire_name != self.tag_field]

    def field_named(self, wire_name: str) -> Field | None:
        return next((f for f in self.fields if f.wire_name == wire_name), None)
