"""From a Python signature to an arguments Struct and its JSON Schema.

Everything here runs once, when a decorator runs: the Struct built from a
function's parameters is what ``msgspec.convert`` validates a call's arguments
against (one pass, no per-call reflection), and its JSON Schema (msgspec's own
generator) is the ``inputSchema`` clients see, so the two cannot disagree.
"""

from __future__ import annotations

import copy
import inspect
import re
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


@dataclass(frozen=True)
class Signature:
    """What a decorated function takes: its arguments Struct and schema, and
    the name of the parameter that receives the context, if any."""

    arguments: type[msgspec.Struct]
    names: tuple[str, ...]
    schema: dict[str, Any]
    context_param: str | None
    description: str | None


def type_hints(fn: Callable[..., object]) -> dict[str, object]:
    try:
        return typing.get_type_hints(fn, include_extras=True)
    except (
        Exception
    ) as error:  # NameError for a forward reference that does not resolve, and the like
        raise TypeError(
            f"{_qualname(fn)}: cannot resolve its type hints: {error} "
            "(the names its annotations use must be defined at the top level of its module)"
        ) from None


def analyse(
    fn: Callable[..., object],
    *,
    context_type: type,
    what: str,
    hints: Mapping[str, object] | None = None,
) -> Signature:
    """The Signature of ``fn``; raises TypeError naming the function and
    parameter for what JSON Schema cannot express (``what`` says whose:
    "tool", "prompt", "resource"). ``hints``: its type hints, if already resolved."""
    if hints is None:
        hints = type_hints(fn)
    fields: list[tuple[str, object, object]] = []
    names: list[str] = []
    context_param = None
    for parameter in inspect.signature(fn).parameters.values():
        name = parameter.name
        annotation = hints.get(name, Any)
        if _is_context(annotation, context_type):
            context_param = name
            continue
        if parameter.kind in (
            parameter.VAR_POSITIONAL,
            parameter.VAR_KEYWORD,
            parameter.POSITIONAL_ONLY,
        ):
            raise TypeError(
                f"{what} {_qualname(fn)}: parameter {name!r} must be a named parameter (not *args, **kwargs or positional-only)"
            )
        if parameter.default is inspect.Parameter.empty:
            fields.append((name, annotation, msgspec.NODEFAULT))
        else:
            fields.append((name, annotation, _default(parameter.default)))
        names.append(name)
    arguments = msgspec.defstruct(f"{fn.__name__}_arguments", fields, kw_only=True)
    try:
        schema = object_schema(arguments)
    except (TypeError, ValueError):
        # Find the parameter to blame (only now: one schema pass is the usual cost).
        for name, annotation, _ in fields:
            try:
                msgspec.json.schema(annotation)
            except (TypeError, ValueError) as error:
                raise TypeError(
                    f"{what} {_qualname(fn)}: parameter {name!r} has type {_type_name(annotation)}, "
                    f"which JSON Schema cannot express ({_first_line(error)})"
                ) from None
        raise
    schema.pop("description", None)
    doc = inspect.getdoc(fn) or ""
    properties = schema.setdefault("properties", {})
    for name, text in _param_docs(doc).items():
        if name in properties and "description" not in properties[name]:
            properties[name] = {"description": text, **properties[name]}
    return Signature(arguments, tuple(names), schema, context_param, _summary(doc))


def object_schema(type_: object) -> dict[str, Any]:
    """The JSON Schema of ``type_`` with its own definition at the root and
    the types it refers to under ``$defs`` (msgspec would put them all there)."""
    (root,), components = msgspec.json.schema_components([type_], ref_template="#/$defs/{name}")
    if "$ref" in root and len(root) == 1:
        name = root["$ref"].rsplit("/", 1)[1]
        root = dict(components.pop(name))
        if _refers_to(components, name) or _refers_to(root, name):
            # Recursive: the root is referred to by name, so it stays in $defs too.
            components[name] = dict(root)
    root.pop("title", None)
    if root.get("required") == []:
        del root["required"]
    if components:
        root["$defs"] = components
    return root


def _refers_to(node: object, name: str) -> bool:
    return f'"#/$defs/{name}"'.encode() in msgspec.json.encode(node)


def _default(value: object) -> object:
    # msgspec copies only empty mutable defaults itself; others get a factory
    # so that one call cannot change what the next one sees.
    if isinstance(value, (list, dict, set)) and value:
        return msgspec.field(default_factory=lambda: copy.deepcopy(value))
    return value


def _is_context(annotation: object, context_type: type) -> bool:
    """``Context`` (or ``Context[State]``), or ``Context | None`` (for a function also called without one)."""
    members = (
        typing.get_args(annotation)
        if typing.get_origin(annotation) in (typing.Union, types.UnionType)
        else (annotation,)
    )
    concrete = [member for member in members if member is not type(None)]
    if len(concrete) != 1:
        return False
    # Context[State] (the lifespan state's type) is the Context class at run time.
    found = typing.get_origin(concrete[0]) or concrete[0]
    return isinstance(found, type) and issubclass(found, context_type)


def _qualname(fn: Callable[..., object]) -> str:
    return getattr(fn, "__qualname__", repr(fn))


def _type_name(annotation: object) -> str:
    return getattr(annotation, "__qualname__", None) or repr(annotation)


def _first_line(error: Exception) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[-1] if lines else type(error).__name__


# ------------------------------------------------------------ docstrings

_SECTION = re.compile(
    r"^(Args|Arguments|Parameters|Params|Returns?|Raises|Yields|Examples?|Notes?)\s*:\s*$"
)
_ARGS_SECTIONS = ("Args", "Arguments", "Parameters", "Params")
_GOOGLE_PARAM = re.compile(r"^(\s*)(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_SPHINX_PARAM = re.compile(r"^\s*:param\s+(?:[^:]*\s)?(\w+)\s*:\s*(.*)$")


def _summary(doc: str) -> str | None:
    """The docstring up to its first section (``Args:``, ``:param x:`` ...)."""
    lines = []
    for line in doc.splitlines():
        stripped = line.strip()
        if _SECTION.match(stripped) or stripped.startswith(":"):
            break
        lines.append(line)
    text = "\n".join(lines).strip()
    return text or None


def _param_docs(doc: str) -> dict[str, str]:
    """Parameter descriptions from Google (``Args:``) or Sphinx (``:param x:``)
    style docstrings; continuation lines are joined."""
    found: dict[str, str] = {}
    current: str | None = None
    in_args = False
    entry_indent = -1
    for line in doc.splitlines():
        stripped = line.strip()
        sphinx = _SPHINX_PARAM.match(line)
        if sphinx:
            current, in_args = sphinx.group(1), False
            found[current] = sphinx.group(2).strip()
            continue
        section = _SECTION.match(stripped)
        if section:
            in_args, current, entry_indent = section.group(1) in _ARGS_SECTIONS, None, -1
            continue
        if not stripped:
            continue
        google = _GOOGLE_PARAM.match(line) if in_args else None
        if google and (entry_indent < 0 or len(google.group(1)) <= entry_indent):
            entry_indent = len(google.group(1))
            current = google.group(2)
            found[current] = google.group(3).strip()
        elif (
            current is not None and (in_args or line[:1].isspace()) and not stripped.startswith(":")
        ):
            found[current] = f"{found[current]} {stripped}".strip()
    return {name: text for name, text in found.items() if text}
