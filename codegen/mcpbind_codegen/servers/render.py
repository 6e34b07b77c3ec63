"""Render a server's bindings module: the model through one jinja template,
then the imports of what the body uses, then black."""

from __future__ import annotations

import ast

import jinja2

from ..model import GenerationError
from ..render import format_source
from .model import BindingModule

_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("mcpbind_codegen", "templates"),
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
    undefined=jinja2.StrictUndefined,
    autoescape=False,
)
_ENV.filters["repr"] = repr
_IMPORTS = "#<imports>#"


def render(module: BindingModule, protocol_package: str = "mcpbind_protocol") -> str:
    source = _ENV.get_template("server_bindings.py.j2").render(module=module)
    body = source.replace(_IMPORTS, "")
    try:
        tree = ast.parse(body)
    except SyntaxError as error:  # a template bug, never the server's schema
        raise GenerationError(f"generated code does not parse: {error}") from None
    used = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    groups: list[list[str]] = [[], [], []]
    groups[0] += [f"import {name}" for name in ("datetime", "uuid") if name in used]
    typing_names = sorted(used & {"Annotated", "Any", "Literal"})
    if typing_names:
        groups[0].append(f"from typing import {', '.join(typing_names)}")
    groups[1].append("import msgspec")
    unset = sorted(used & {"UNSET", "UnsetType"})
    if unset:
        groups[1].append(f"from msgspec import {', '.join(unset)}")
    if "protocol" in used:
        groups[2].append(f"from {protocol_package} import {module.package} as protocol")
    groups[2].append("from mcpbind.bindings import ServerBindings")
    if "ProgressCallback" in used:
        groups[2].append("from mcpbind.methods import ProgressCallback")
    block = "\n\n".join("\n".join(g) for g in groups if g)
    return format_source(source.replace(_IMPORTS, block, 1))
