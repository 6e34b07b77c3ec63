"""The intermediate model between the parsed schema and the templates.

Every decision about Python names and annotations is made here, as properties
of small objects, so that the templates only loop and print.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

# Names the generated modules import; a definition with one of these names
# makes the module refer to the import through its module instead.
TYPING_NAMES = ("Any", "Literal", "Annotated", "TypeAlias", "TYPE_CHECKING", "cast", "ClassVar")


class GenerationError(Exception):
    """The schema uses something the generator cannot express."""


@dataclass
class RenderContext:
    """What a type expression needs to know to print itself."""

    definitions: set[str]
    used_typing: set[str] = field(default_factory=set)
    uses_meta: bool = False

    def typing(self, name: str) -> str:
        self.used_typing.add(name)
        return f"typing.{name}" if name in self.definitions else name


# ---------------------------------------------------------------- type expressions


class TypeExpr:
    """A Python type annotation, built from the schema."""

    def render(self, ctx: RenderContext) -> str:
        raise NotImplementedError

    def children(self) -> tuple[TypeExpr, ...]:
        return ()

    def walk(self) -> Iterator[TypeExpr]:
        yield self
        for child in self.children():
            yield from child.walk()

    def refs(self) -> set[str]:
        return {node.name for node in self.walk() if isinstance(node, Ref)}


@dataclass(frozen=True, eq=True)
class Builtin(TypeExpr):
    name: str  # str, int, float, bool, None, Any

    def render(self, ctx: RenderContext) -> str:
        return ctx.typing("Any") if self.name == "Any" else self.name


@dataclass(frozen=True)
class LiteralOf(TypeExpr):
    values: tuple[object, ...]

    def render(self, ctx: RenderContext) -> str:
        return f"{ctx.typing('Literal')}[{', '.join(repr(v) for v in self.values)}]"


@dataclass(frozen=True)
class ListOf(TypeExpr):
    item: TypeExpr

    def render(self, ctx: RenderContext) -> str:
        return f"list[{self.item.render(ctx)}]"

    def children(self) -> tuple[TypeExpr, ...]:
        return (self.item,)


@dataclass(frozen=True)
class DictOf(TypeExpr):
    value: TypeExpr

    def render(self, ctx: RenderContext) -> str:
        return f"dict[str, {self.value.render(ctx)}]"

    def children(self) -> tuple[TypeExpr, ...]:
        return (self.value,)


@dataclass(frozen=True)
class Ref(TypeExpr):
    name: str

    def render(self, ctx: RenderContext) -> str:
        return self.name


@dataclass(frozen=True)
class Constrained(TypeExpr):
    base: TypeExpr
    constraints: tuple[tuple[str, object], ...]

    def render(self, ctx: RenderContext) -> str:
        ctx.uses_meta = True
        args = ", ".join(f"{k}={v!r}" for k, v in self.constraints)
        return f"{ctx.typing('Annotated')}[{self.base.render(ctx)}, msgspec.Meta({args})]"

    def children(self) -> tuple[TypeExpr, ...]:
        return (self.base,)


@dataclass(eq=False)
class UnionOf(TypeExpr):
    arms: tuple[TypeExpr, ...]
    # Name for the generated alias when this union has to be named (it is
    # inline and msgspec cannot decode it natively).
    name_hint: str = ""

    def render(self, ctx: RenderContext) -> str:
        return " | ".join(arm.render(ctx) for arm in self.arms)

    def children(self) -> tuple[TypeExpr, ...]:
        return self.arms


# ---------------------------------------------------------------- definitions

_DICT_ATTRIBUTES = frozenset(dir(dict))


def _json_aliases(module: Module) -> set[str]:
    """Aliases that decode to plain JSON values (no Struct inside)."""
    plain = set()
    for name, alias in module.aliases.items():
        if alias.recursive or not any(
            module.struct(r) or r in module.aliases for r in alias.refs()
        ):
            plain.add(name)
    return plain


def snake_case(wire_name: str) -> str:
    name = re.sub(r"[^0-9A-Za-z_]", "", wire_name).lstrip("_")
    name = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name)
    name = re.sub(r"(?<=[A-Z])([A-Z][a-z])", r"_\1", name).lower()
    if not name or name[0].isdigit():
        name = f"field_{name}"
    if keyword.iskeyword(name) or name in {"self", "extra"}:
        name = f"{name}_"
    return name


def pascal_case(wire_name: str) -> str:
    parts = re.split(r"[^0-9A-Za-z]+", wire_name)
    return "".join(p[:1].upper() + p[1:] for p in parts if p)


def docstring(text: str | None) -> str | None:
    """A description made safe to print between triple quotes."""
    if not text:
        return None
    text = text.strip().replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    if text.endswith('"'):
        text += " "
    return text


@dataclass
class Field:
    wire_name: str
    type: TypeExpr
    required: bool
    description: str | None = None
    const: object = None
    has_const: bool = False
    default_value: object = None

    @property
    def name(self) -> str:
        return snake_case(self.wire_name)

    @property
    def doc(self) -> str | None:
        return docstring(self.description)

    @property
    def renamed(self) -> bool:
        return self.name != self.wire_name

    def annotation(self, ctx: RenderContext) -> str:
        rendered = self.type.render(ctx)
        return (
            rendered
            if self.required or self.default_value is not None
            else f"{rendered} | UnsetType"
        )

    @property
    def default(self) -> str | None:
        """Python source of the default value, or None for a required field."""
        if self.default_value is not None:
            return repr(self.default_value)
        if not self.required:
            return "UNSET"
        if self.has_const:
            return repr(self.const)
        return None

    def declaration(self, ctx: RenderContext) -> str:
        line = f"{self.name}: {self.annotation(ctx)}"
        default = self.default
        if self.renamed:
            args = [f"name={self.wire_name!r}"]
            if default is not None:
                args.append(f"default={default}")
            return f"{line} = msgspec.field({', '.join(args)})"
        if default is not None:
            return f"{line} = {default}"
        return line


@dataclass
class Struct:
    name: str
    description: str | None
    fields: list[Field]
    open: bool = False
    definition: bool = True
    tag_field: str | None = None
    tag: object = None

    @property
    def doc(self) -> str | None:
        return docstring(self.description)

    @property
    def wire_fields(self) -> list[Field]:
        """The fields that are Struct fields (the tag is struct config, not a field)."""
        return [f for f in self.fields if f.wire_name != self.tag_field]

    def field_named(self, wire_name: str) -> Field | None:
        return next((f for f in self.fields if f.wire_name == wire_name), None)

    def const_keys(self) -> dict[str, object]:
        """Required properties with a single allowed string value: tag candidates."""
        return {
            f.wire_name: f.const
            for f in self.fields
            if f.required and f.has_const and isinstance(f.const, str)
        }

    def class_options(self) -> str:
        # gc=False: decoding is markedly faster when the cycle collector does
        # not track instances; wire data has no cycles (a user who builds one
        # out of Structs leaks it).
        options = ["kw_only=True", "repr_omit_defaults=True", "gc=False"]
        if self.tag_field is not None:
            options += [f"tag_field={self.tag_field!r}", f"tag={self.tag!r}"]
        return ", ".join(options)

    @property
    def tag_attr(self) -> str | None:
        return snake_case(self.tag_field) if self.tag_field is not None else None

    def refs(self) -> set[str]:
        return set().union(*(f.type.refs() for f in self.fields)) if self.fields else set()

    def tag_literal(self, ctx: RenderContext) -> str:
        return LiteralOf((self.tag,)).render(ctx)

    def attr(self, f: Field) -> str:
        """The Python name of a field; on an open object, clear of dict's own methods."""
        return f"{f.name}_" if self.open and f.name in _DICT_ATTRIBUTES else f.name

    def typed_keys(self, module: Module) -> list[tuple[str, str]]:
        """Fields of an open object whose decoded values are generated types."""
        return [(f.name, f.wire_name) for f in self.fields if f.type.refs() - _json_aliases(module)]


@dataclass
class Discriminator:
    """A union whose arms a property's value names (a result union at
    2026-07-28: ``resultType``), from a ``[[discriminator]]`` entry of the
    corrections. At runtime the name is a stand-in made by
    mcpbind.codec.discriminated_union: the value picks the arm, an absent
    property counts as ``absent``, any other value is refused."""

    wire_name: str
    absent: str
    # Each value and the arms that have it as their default, in schema order.
    groups: tuple[tuple[str, tuple[TypeExpr, ...]], ...]

    def arms_source(self, ctx: RenderContext) -> str:
        entries = (
            f"{value!r}: ({''.join(arm.render(ctx) + ', ' for arm in arms)})"
            for value, arms in self.groups
        )
        return "{" + ", ".join(entries) + "}"


@dataclass
class Alias:
    name: str
    description: str | None
    type: TypeExpr
    definition: bool = True
    # msgspec cannot decode this union: at runtime the name is a stand-in made
    # by mcpbind.codec.untagged_union, type checkers see the union itself.
    untagged: bool = False
    # The arms the runtime stand-in dispatches over (nested unions flattened).
    runtime_arms: tuple[TypeExpr, ...] = ()
    # A self-referencing alias: type checkers see it, msgspec sees Any (only
    # used where the alias already admits every JSON value).
    recursive: bool = False
    # Set for an untagged union that a property's value discriminates.
    discriminator: Discriminator | None = None

    @property
    def doc(self) -> str | None:
        return docstring(self.description)

    def refs(self) -> set[str]:
        return self.type.refs() | set().union(*(arm.refs() for arm in self.runtime_arms))

    def runtime_arms_source(self, ctx: RenderContext) -> str:
        return ", ".join(arm.render(ctx) for arm in self.runtime_arms)


@dataclass
class Correction:
    id: str
    pointer: str
    reason: str
    # False for a correction carried forward from an older revision whose
    # path no longer matches: reported, not applied.
    applied: bool = True
    # For a [[discriminator]] entry: the property and the value its absence means.
    discriminator: tuple[str, str] | None = None


@dataclass
class Corrections:
    """The corrections of one revision: its own, or those carried forward
    from the nearest older revision the corrections file names."""

    entries: list[Correction] = field(default_factory=list)
    carried_from: str | None = None

    @property
    def applied(self) -> list[Correction]:
        return [c for c in self.entries if c.applied]

    @property
    def not_applicable(self) -> list[Correction]:
        return [c for c in self.entries if not c.applied]

    @property
    def discriminators(self) -> list[tuple[str, str]]:
        return [c.discriminator for c in self.applied if c.discriminator is not None]


@dataclass(frozen=True)
class Extension:
    """A protocol extension generated from a schema fragment of this project's
    (``schema/extensions/<name>.json``) on top of one revision, whose
    definitions the fragment names as ``schema.json#/$defs/<Name>``."""

    name: str  # the fragment's name: the package is ext_<name>
    id: str  # the extension identifier, as clients declare it
    source: str  # the fragment's path, for the generated header
    base: frozenset[str]  # the definitions of the revision it extends
    # Published by the extension's own project (an npm package's schema),
    # rather than a fragment written here.
    published: bool = False
    # A prefix every message name repeats, left out of stub and handler names.
    message_prefix: str = ""

    @property
    def package(self) -> str:
        return f"ext_{self.name}"


@dataclass
class Module:
    revision: str
    sha256: str
    status: str  # "released" (pinned), "draft" (the moving draft) or "unpinned"
    corrections: Corrections
    structs: dict[str, Struct]
    aliases: dict[str, Alias]
    definitions: list[str]
    # What the generator decided without the schema saying so, for the header.
    notes: list[str] = field(default_factory=list)
    # For an extension: what it is; its types refer to those of ``revision``.
    extension: Extension | None = None
    # The JSON-RPC methods derived from it (set once they are).
    method_names: frozenset[str] = frozenset()

    @property
    def unstable(self) -> bool:
        return self.status == "draft"

    @property
    def package(self) -> str:
        if self.extension is not None:
            return self.extension.package
        return self.revision_package

    @property
    def revision_package(self) -> str:
        """The package of the revision (for an extension: of the one it extends)."""
        return "v" + self.revision.replace("-", "_")

    @property
    def subject(self) -> str:
        """What the generated modules describe, as their docstrings name it."""
        if self.extension is not None:
            return f"MCP extension {self.extension.id} (on {self.revision})"
        return f"MCP {self.revision}"

    @property
    def schema_name(self) -> str:
        """The schema the module is generated from, as docstrings name it."""
        if self.extension is not None:
            return f"``{self.extension.source}``"
        return "the official JSON Schema"

    @property
    def descriptions_from(self) -> str:
        if self.extension is not None:
            return f"``{self.extension.source}``"
        return "the MCP specification"

    def base_names(self) -> set[str]:
        """The names of the extended revision's definitions that this module uses."""
        if self.extension is None:
            return set()
        used = set().union(*(s.refs() for s in self.structs.values()))
        used |= set().union(*(a.refs() for a in self.aliases.values()))
        return used & self.extension.base

    def struct(self, name: str) -> Struct | None:
        return self.structs.get(name)

    def resolve(self, expr: TypeExpr) -> TypeExpr:
        """Follow plain aliases (not unions) to what they name."""
        seen: set[str] = set()
        while isinstance(expr, Ref) and expr.name in self.aliases and expr.name not in seen:
            seen.add(expr.name)
            target = self.aliases[expr.name]
            if isinstance(target.type, UnionOf) or target.recursive:
                return expr
            expr = target.type
        return expr
