"""The fast JSON decoders of open objects, as statements for the templates.

An open object (:class:`mcpbind.codec.OpenObject`) is a ``dict`` that
keeps every key; its ``__keys__`` Struct validates the keys the schema names.
Decoding parsed JSON through that Struct builds it (copying every nested dict
and list on the way) only to throw it away, unless a key holds a generated
type. For the other open objects the generator writes ``__from_json__``: plain
type tests of the known keys (parsed JSON has only ``str`` keys and exact
built-in types, so ``type(value) is str`` is exact), then the object built
straight from the input. Whatever the tests do not accept goes to the usual
``_decode``, which accepts it or raises its usual error, so the outcome is the
same either way, only faster.

A class gets no decoder when a known key holds a generated type, or a type
the tests do not cover (constrained values, containers inside a union).
"""

from __future__ import annotations

from .model import (
    Builtin,
    Constrained,
    DictOf,
    ListOf,
    LiteralOf,
    Module,
    Ref,
    Struct,
    TypeExpr,
    UnionOf,
)

_EXACT_TYPES = {"str": "str", "int": "int", "bool": "bool"}


class _NotPlain(Exception):
    """A type the plain tests do not cover."""


def json_decoder(module: Module, struct: Struct) -> list[str] | None:
    """The body of ``__from_json__`` of an open object (one statement per
    line, indented relative to the body), or None where it gets none."""
    if not struct.open or struct.typed_keys(module):
        return None
    give_up = f"return {struct.name}._decode(raw)"
    lines = ["if type(raw) is not dict:", f"    {give_up}"]
    try:
        for f in struct.fields:
            # msgspec requires a key only where the field has no default.
            required = f.default is None
            checks = _checks(module, f.type, "value", 0, give_up)
            if required:
                lines += [f"if {f.wire_name!r} not in raw:", f"    {give_up}"]
                if checks:
                    lines.append(f"value = raw[{f.wire_name!r}]")
                    lines += checks
            elif len(checks) == 2:  # one test: `if <test fails>: <give up>`
                lines.append(f"value = raw.get({f.wire_name!r}, UNSET)")
                lines += [f"if value is not UNSET and {checks[0][3:]}", checks[1]]
            elif checks:
                lines.append(f"value = raw.get({f.wire_name!r}, UNSET)")
                lines.append("if value is not UNSET:")
                lines += [f"    {line}" for line in checks]
    except _NotPlain:
        return None
    lines += [
        f"obj = new_object({struct.name})",
        "dict.update(obj, raw)",
        "return obj",
    ]
    return lines


def _checks(module: Module, t: TypeExpr, var: str, depth: int, give_up: str) -> list[str]:
    """Statements that give up unless the parsed JSON value ``var`` is valid as ``t``."""
    test = _test(module, t, var)
    if test == "":
        return []
    if test is not None:
        return [f"if {_negated(test)}:", f"    {give_up}"]
    container = _runtime_type(module, t)
    item = "item" if depth == 0 else f"item_{depth + 1}"
    if isinstance(container, ListOf):
        kind, items, inner = "list", var, container.item
    elif isinstance(container, DictOf):
        kind, items, inner = "dict", f"{var}.values()", container.value
    else:
        raise _NotPlain
    lines = [f"if type({var}) is not {kind}:", f"    {give_up}"]
    nested = _checks(module, inner, item, depth + 1, give_up)
    if nested:
        lines.append(f"for {item} in {items}:")
        lines += [f"    {line}" for line in nested]
    return lines


def _runtime_type(module: Module, t: TypeExpr) -> TypeExpr:
    """What msgspec validates a value against: aliases followed, a
    self-referencing alias (Any at runtime) as Any."""
    seen: set[str] = set()
    while isinstance(t, Ref) and t.name in module.aliases and t.name not in seen:
        seen.add(t.name)
        alias = module.aliases[t.name]
        if alias.recursive:
            return Builtin("Any")
        if alias.untagged:
            raise _NotPlain  # decoded by the codec's dispatch, not plain JSON
        t = alias.type
    return t


def _test(module: Module, t: TypeExpr, var: str) -> str | None:
    """A Python expression, true when the parsed JSON value ``var`` is valid
    as ``t``: "" if any value is, None if ``t`` is a container."""
    t = _runtime_type(module, t)
    if isinstance(t, Builtin):
        if t.name == "Any":
            return ""
        if t.name == "None":
            return f"{var} is None"
        if t.name == "float":  # JSON integers are valid numbers
            return f"(type({var}) is float or type({var}) is int)"
        return f"type({var}) is {_EXACT_TYPES[t.name]}"
    if isinstance(t, LiteralOf):
        tests = []
        for kind in (str, int):
            values = tuple(v for v in t.values if type(v) is kind)
            if values:
                tests.append(f"(type({var}) is {kind.__name__} and {var} in {values!r})")
        if None in t.values:
            tests.append(f"{var} is None")
        if len(tests) != len({type(v) for v in t.values}):
            raise _NotPlain  # a bool or float literal
        return tests[0] if len(tests) == 1 else "(" + " or ".join(tests) + ")"
    if isinstance(t, UnionOf):
        tests = []
        for arm in _flat_arms(module, t):
            test = _test(module, arm, var)
            if test is None:
                raise _NotPlain  # a container inside a union
            if test == "":
                return ""
            tests.append(test)
        return "(" + " or ".join(tests) + ")"
    if isinstance(t, (ListOf, DictOf)):
        return None
    if isinstance(t, Constrained):
        raise _NotPlain  # bounds and lengths: left to msgspec
    raise _NotPlain  # a Struct


def _flat_arms(module: Module, union: UnionOf) -> list[TypeExpr]:
    arms: list[TypeExpr] = []
    for arm in union.arms:
        resolved = _runtime_type(module, arm)
        arms += _flat_arms(module, resolved) if isinstance(resolved, UnionOf) else [resolved]
    return arms


def _negated(test: str) -> str:
    """``type(value) is not str`` rather than ``not type(value) is str``."""
    prefix, is_, kind = test.rpartition(" is ")
    if test.startswith("type(") and is_ and kind.isidentifier() and " " not in prefix:
        return f"{prefix} is not {kind}"
    if test.endswith(" is None") and " " not in test.removesuffix(" is None"):
        return f"{test.removesuffix(' is None')} is not None"
    return f"not {test}" if test.startswith("(") else f"not ({test})"
