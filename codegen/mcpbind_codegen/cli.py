"""The ``mcp-codegen`` command."""

from __future__ import annotations

import dataclasses
import re
import sys
from pathlib import Path
from typing import NoReturn

import click

from . import diff, generate, sources
from . import output as writer
from .model import GenerationError, Module
from .servers.command import server as server_command
from .sources import Config, LoadedSchema, Pin

_REVISION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
_PACKAGE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


def _fail(message: str) -> NoReturn:
    click.echo(f"mcp-codegen: error: {' '.join(message.split())}", err=True)
    sys.exit(1)


def _stable(pins: dict[str, Pin]) -> list[str]:
    return [r for r, pin in sorted(pins.items()) if not pin.unstable]


def _load(
    config: Config, pins: dict[str, Pin], revision: str, schema: Path | None, verify: bool
) -> LoadedSchema:
    if not _REVISION.match(revision):
        raise GenerationError(f"invalid revision name {revision!r}")
    pin = pins.get(revision)
    if schema is not None:
        return sources.load_file(schema, revision, pin, verify)
    if pin is None:
        raise GenerationError(
            f"unknown revision {revision!r} (pinned: {', '.join(sorted(pins))}); use --schema for a new one"
        )
    return sources.resolve(config, pin)


def _constant(text: str, name: str) -> str | None:
    match = re.search(rf"^{name} = (?:'([^']+)'|\"([^\"]+)\")", text, re.M)
    return (match.group(1) or match.group(2)) if match else None


def _present(config: Config) -> dict[str, str]:
    """Revisions that have a package in the output folder, with their status."""
    if config.package is None:
        return {}
    root = config.output.joinpath(*config.package.split("."))
    if not root.is_dir():
        return {}
    found = {}
    for child in root.iterdir():
        if child.is_dir() and child.name.startswith("v") and (child / "__init__.py").is_file():
            text = (child / "__init__.py").read_text(encoding="utf-8")
            version = _constant(text, "PROTOCOL_VERSION")
            if version is not None:
                unstable = re.search(r"^UNSTABLE = True$", text, re.M) is not None
                found[version] = _constant(text, "STATUS") or ("draft" if unstable else "released")
    return found


def _present_extensions(config: Config) -> dict[str, str]:
    """Extension packages in the output folder (``ext_<name>``), by identifier."""
    if config.package is None:
        return {}
    root = config.output.joinpath(*config.package.split("."))
    found = {}
    for child in sorted(root.glob("ext_*/__init__.py")):
        extension_id = _constant(child.read_text(encoding="utf-8"), "EXTENSION_ID")
        if extension_id is not None:
            found[extension_id] = child.parent.name
    return found


def _report(module: Module) -> None:
    """What the generator decided that the schema did not say, on stderr."""
    carried = module.corrections
    if carried.carried_from is not None:
        # An id corrects several places (ClientCapabilities and ServerCapabilities): named once.
        applied = ", ".join(dict.fromkeys(c.id for c in carried.applied)) or "none"
        stale = ", ".join(dict.fromkeys(c.id for c in carried.not_applicable)) or "none"
        click.echo(
            f"mcp-codegen: {module.revision}: corrections carried forward from {carried.carried_from}: "
            f"applied: {applied}; no longer applicable: {stale}",
            err=True,
        )
    for note in module.notes:
        click.echo(f"mcp-codegen: {module.revision}: warning: {note}", err=True)


@click.group(invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--revision",
    "-r",
    "revisions",
    multiple=True,
    help="Protocol revision to generate (repeatable).",
)
@click.option("--all", "all_", is_flag=True, help="Regenerate every pinned stable revision.")
@click.option(
    "--schema", type=click.Path(path_type=Path), help="Generate --revision from this schema file."
)
@click.option("--no-verify", is_flag=True, help="With --schema: skip the sha256 pin check.")
@click.option(
    "--check", is_flag=True, help="Exit non-zero, naming stale files, if generated/ is out of date."
)
@click.option(
    "--output",
    "-o",
    type=click.Path(path_type=Path),
    help="Folder to write the package into (default: the project's output).",
)
@click.option(
    "--package", "-p", help="Name of the generated package (default: the project's package)."
)
@click.pass_context
def main(
    ctx: click.Context,
    revisions: tuple[str, ...],
    all_: bool,
    schema: Path | None,
    no_verify: bool,
    check: bool,
    output: Path | None,
    package: str | None,
) -> None:
    """Generate typed msgspec bindings from the official MCP JSON Schemas."""
    if ctx.invoked_subcommand is not None:
        return
    try:
        config = sources.find_config(Path.cwd())
        if package is not None and not _PACKAGE.match(package):
            raise GenerationError(
                f"invalid package name {package!r}: a dotted Python name, such as myproject.mcp"
            )
        config = dataclasses.replace(
            config,
            output=Path.cwd() / output if output is not None else config.output,
            package=package or config.package,
        )
        generate.package_of(config)  # fails early, naming --package, when there is none
        pins = sources.load_pins(config)
        if schema is not None and len(revisions) != 1:
            raise GenerationError(
                "--schema needs exactly one --revision naming the package to generate"
            )
        if no_verify and schema is None:
            raise GenerationError(
                "--no-verify applies only to --schema; pinned sources are always verified"
            )
        present = _present(config)
        wanted = list(revisions)
        if all_ or check:
            wanted += _stable(pins)
        if check:
            wanted += sorted(
                r for r, status in present.items() if r in pins and status != "unpinned"
            )
        if not wanted:
            raise GenerationError(
                "nothing to do: pass --revision REVISION, --all or --check (see --help)"
            )
        wanted = list(dict.fromkeys(wanted))
        # By package folder: what it holds, and what it is (for the messages).
        rendered: dict[str, tuple[dict[str, str], str]] = {}
        loaded_by_revision: dict[str, LoadedSchema] = {}
        statuses = dict(present)
        modules = []
        for revision in wanted:
            loaded = loaded_by_revision[revision] = _load(
                config, pins, revision, schema, verify=not no_verify
            )
            files, module = generate.render_package(config, loaded)
            rendered[generate.package_name(revision)] = files, revision
            statuses[revision] = loaded.status
            modules.append(module)
            _report(module)
        extensions = _present_extensions(config)
        if all_ or check:
            for pin in sources.load_extension_pins(config).values():
                extension = sources.load_extension(pin, config)
                base = loaded_by_revision.get(extension.revision) or _load(
                    config, pins, extension.revision, None, verify=True
                )
                files, module = generate.render_extension(config, extension, base)
                rendered[module.package] = files, f"extension {extension.id}"
                extensions[extension.id] = module.package
                modules.append(module)
                _report(module)
            generate.check_facts(config, modules)
        index = generate.render_index(config, statuses, extensions)
    except GenerationError as error:
        _fail(str(error))
    # A dotted package (myproject.mcp) is a folder inside the package it names.
    root = config.output.joinpath(*generate.package_of(config).split("."))
    if check:
        _check(config, root, rendered, index)
        return
    for package, (files, what) in rendered.items():
        writer.write_package(root / package, files)
        click.echo(f"generated {config.package}.{package} ({what})")
    writer.write_files(root, index)


def _check(
    config: Config,
    root: Path,
    rendered: dict[str, tuple[dict[str, str], str]],
    index: dict[str, str],
) -> None:
    expected: dict[Path, str] = {root / name: text for name, text in index.items()}
    stale_extra: list[Path] = []
    for package, (files, _) in rendered.items():
        folder = root / package
        expected.update({folder / name: text for name, text in files.items()})
        if folder.is_dir():
            stale_extra += [
                p for p in sorted(folder.iterdir()) if p.is_file() and p.name not in files
            ]
    stale = writer.stale_files(expected) + stale_extra
    if stale:
        names = ", ".join(str(p.relative_to(config.root)) for p in stale)
        _fail(f"generated code is stale, run `mcp-codegen --all` to refresh: {names}")
    revisions = sum(1 for _, what in rendered.values() if not what.startswith("extension "))
    extensions = len(rendered) - revisions
    click.echo(
        f"generated code is up to date ({revisions} revisions"
        + (f", {extensions} extension{'s' if extensions != 1 else ''})" if extensions else ")")
    )


@main.command("list")
def list_revisions() -> None:
    """Show the pinned revisions and extensions, their pins and whether they are generated."""
    try:
        config = sources.find_config(Path.cwd())
        pins = sources.load_pins(config)
        extensions = sources.load_extension_pins(config)
    except GenerationError as error:
        _fail(str(error))
    present = _present(config)
    for revision, pin in sorted(pins.items()):
        flags = ["generated" if revision in present else "not generated"]
        if pin.unstable:
            flags.append("unstable")
        click.echo(f"{revision}  sha256:{pin.sha256}  {pin.path}  ({', '.join(flags)})")
    generated = set(_present_extensions(config).values())
    for name, extension in extensions.items():
        flag = "generated" if f"ext_{name}" in generated else "not generated"
        click.echo(f"extension {name}  sha256:{extension.sha256}  {extension.label}  ({flag})")


@main.command("diff")
@click.argument("before")
@click.argument("after")
@click.option(
    "--format",
    "format_",
    type=click.Choice(["markdown", "json"]),
    default="markdown",
    show_default=True,
)
def diff_revisions(before: str, after: str, format_: str) -> None:
    """The API differences from BEFORE to AFTER, each a pinned revision or a schema file."""
    try:
        config = sources.find_config(Path.cwd())
        pins = sources.load_pins(config)
        modules = [
            generate.build_module(config, _load_side(config, pins, side))
            for side in (before, after)
        ]
    except GenerationError as error:
        _fail(str(error))
    changes = diff.compare(modules[0], modules[1])
    click.echo(changes.to_json() if format_ == "json" else diff.markdown(changes), nl=False)


def _load_side(config: Config, pins: dict[str, Pin], side: str) -> LoadedSchema:
    """A pinned revision by name, or a schema file (named after its file) by path."""
    path = Path(side)
    if side not in pins and (path.suffix == ".json" or path.exists()):
        return sources.load_file(path, path.stem, None, verify=False)
    return _load(config, pins, side, None, verify=True)


main.add_command(server_command)
