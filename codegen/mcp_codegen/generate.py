"""From a loaded schema to the files of a revision package: parse, model, render."""

from __future__ import annotations

from typing import Any

from . import corrections, methods, render
from .model import Module
from .parser import SchemaParser
from .sources import Config, LoadedSchema


def package_name(revision: str) -> str:
    return "v" + revision.replace("-", "_").replace(".", "_")


def build_module(config: Config, loaded: LoadedSchema) -> Module:
    entries = corrections.load(config.corrections_file)
    schema, applied = corrections.apply(loaded.schema, loaded.revision, entries)
    return SchemaParser(schema).parse(loaded.revision, loaded.sha256, loaded.unstable, applied)


def render_package(config: Config, loaded: LoadedSchema) -> dict[str, str]:
    """The files of one revision package, by name inside the package folder."""
    module = build_module(config, loaded)
    derived = methods.derive(module)
    return {
        "__init__.py": render.render_init(module, config.package),
        "types.py": render.render_types(module),
        "methods.py": render.render_methods(module, derived),
        "client.py": render.render_side(module, derived, "client"),
        "server.py": render.render_side(module, derived, "server"),
    }


def render_index(config: Config, revisions: dict[str, Any]) -> dict[str, str]:
    """The files of the top-level package, listing the revision packages."""
    ordered = sorted(revisions, key=lambda r: (r == "draft", r))
    entries = [(r, package_name(r), bool(revisions[r])) for r in ordered]
    return {"__init__.py": render.render_index(config.package, entries), "py.typed": ""}
