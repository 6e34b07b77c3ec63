"""From a loaded schema to the files of a revision package: parse, model, render."""

from __future__ import annotations

from . import corrections, facts, methods, names, render, sources
from .model import Extension, GenerationError, Module
from .parser import SchemaParser
from .sources import Config, LoadedExtension, LoadedSchema


def package_name(revision: str) -> str:
    return "v" + revision.replace("-", "_").replace(".", "_")


def build_module(config: Config, loaded: LoadedSchema) -> Module:
    entries = corrections.load_all(config.corrections_files)
    schema, applied = corrections.apply(loaded.schema, loaded.revision, entries)
    return SchemaParser(schema).parse(loaded.revision, loaded.sha256, loaded.status, applied)


def render_package(config: Config, loaded: LoadedSchema) -> tuple[dict[str, str], Module]:
    """The files of one revision package, by name inside the package folder,
    and the model they were rendered from (for what the command reports)."""
    module = build_module(config, loaded)
    derived = methods.derive(module)
    reviewed = loaded.revision in sources.shipped_revisions()
    facts.apply(module, derived, facts.load_all(config.facts_files), reviewed=reviewed)
    module.method_names = frozenset(m.method for m in derived)
    names.check(module, derived)
    files = {
        "__init__.py": render.render_init(module, package_of(config)),
        "types.py": render.render_types(module),
        "methods.py": render.render_methods(module, derived),
        "client.py": render.render_side(module, derived, "client"),
        "server.py": render.render_side(module, derived, "server"),
    }
    return files, module


def render_extension(
    config: Config, loaded: LoadedExtension, base: LoadedSchema
) -> tuple[dict[str, str], Module]:
    """The files of an extension's package (``ext_<name>``): its types, method
    tables, client stub and handler interface, on top of the revision ``base``."""
    if base.revision != loaded.revision:
        raise GenerationError(
            f"extension {loaded.name} extends {loaded.revision}, not {base.revision}"
        )
    base_module = build_module(config, base)
    extension = Extension(
        name=loaded.name,
        id=loaded.id,
        source=loaded.origin,
        base=frozenset(base_module.definitions),
        published=loaded.published,
        message_prefix=loaded.message_prefix,
    )
    # A published schema has its quirks corrected in corrections.toml; a
    # fragment of this project's is written right.
    schema, applied = corrections.apply_extension(
        loaded.schema, loaded.name, corrections.load_all(config.corrections_files)
    )
    parser = SchemaParser(schema, base=extension.base, sort_properties=False)
    module = parser.parse(base.revision, loaded.sha256, base.status, applied, extension)
    derived = methods.derive(module)
    reviewed = loaded.revision in sources.shipped_revisions()
    facts.apply(module, derived, facts.load_all(config.facts_files), reviewed=reviewed)
    module.method_names = frozenset(m.method for m in derived)
    names.check(module, derived)
    files = {
        "__init__.py": render.render_extension_init(module, package_of(config)),
        "types.py": render.render_types(module),
        "methods.py": render.render_methods(module, derived),
        "client.py": render.render_side(module, derived, "client"),
        "server.py": render.render_side(module, derived, "server"),
    }
    return files, module


def render_index(
    config: Config, revisions: dict[str, str], extensions: dict[str, str] | None = None
) -> dict[str, str]:
    """The files of the top-level package, listing the revision packages by
    status, and the extension packages by identifier. The draft is left out:
    it is generated on request into a folder nothing tracks, and generating it
    must not change a tracked file."""
    entries = [
        (r, package_name(r), status) for r, status in sorted(revisions.items()) if status != "draft"
    ]
    source = render.render_index(package_of(config), entries, sorted((extensions or {}).items()))
    return {"__init__.py": source, "py.typed": ""}


def package_of(config: Config) -> str:
    if config.package is None:
        raise GenerationError(
            "no package name: pass --package NAME (or set package in [tool.mcp-codegen])"
        )
    return config.package


def check_facts(config: Config, modules: list[Module]) -> None:
    """Fail on a protocol fact of the project's own file (in this repository,
    the shipped one) of a method that none of ``modules`` has: a misspelt
    method, or one every revision dropped. The shipped facts a project's
    revisions do not use are no error of its own."""
    if config.facts_file is None:
        return
    generated = set().union(*(m.method_names for m in modules))
    unknown = facts.unknown_methods(facts.load(config.facts_file), generated)
    if unknown:
        raise GenerationError(f"protocol facts of unknown methods: {', '.join(unknown)}")
