"""``mcp-codegen server``: typed bindings for a server, and the drift check."""

from __future__ import annotations

import asyncio
import shlex
import sys
from pathlib import Path
from typing import NoReturn

import click

from ..model import GenerationError
from ..output import write_files
from . import drift, snapshot
from .model import build
from .render import render
from .snapshot import Snapshot, Source


def _fail(message: str) -> NoReturn:
    click.echo(f"mcp-codegen: error: {' '.join(message.split())}", err=True)
    sys.exit(1)


def snapshot_path(output: Path) -> Path:
    """Where the snapshot of the module ``output`` is kept: beside it."""
    return output.with_name(f"{output.stem}.snapshot.json")


@click.command("server")
@click.option("--stdio", "command", help='Start the server with this command ("npx -y pkg").')
@click.option("--url", help="Connect to the server at this URL (Streamable HTTP or HTTP+SSE).")
@click.option(
    "--header",
    "headers",
    multiple=True,
    help='With --url: a header to send, "Name: value" (repeatable).',
)
@click.option(
    "--config",
    type=click.Path(path_type=Path),
    help="An mcpServers configuration file; with --entry.",
)
@click.option("--entry", help="With --config: the server entry to use.")
@click.option(
    "--snapshot",
    "snapshot_file",
    type=click.Path(path_type=Path),
    help="A saved snapshot instead of a live server.",
)
@click.option(
    "--output",
    "-o",
    type=click.Path(path_type=Path),
    required=True,
    help="The module to write (its snapshot goes beside it, NAME.snapshot.json).",
)
@click.option("--class-name", help="Name of the facade class (default: from the server's name).")
@click.option(
    "--settle",
    type=float,
    default=0.0,
    show_default=True,
    help="Seconds to wait after connecting, for servers that add tools later.",
)
@click.option(
    "--timeout", type=float, default=60.0, show_default=True, help="Seconds for the whole fetch."
)
@click.option(
    "--check",
    is_flag=True,
    help="Compare the saved snapshot with the server (or --snapshot); exit 1 on drift.",
)
@click.option("--json", "as_json", is_flag=True, help="With --check: the report as JSON.")
def server(
    command: str | None,
    url: str | None,
    headers: tuple[str, ...],
    config: Path | None,
    entry: str | None,
    snapshot_file: Path | None,
    output: Path,
    class_name: str | None,
    settle: float,
    timeout: float,
    check: bool,
    as_json: bool,
) -> None:
    """Typed bindings for the tools, prompts and resource templates of an MCP server."""
    try:
        chosen = [
            name
            for name, given in (
                ("--stdio", command),
                ("--url", url),
                ("--config", config),
                ("--snapshot", snapshot_file),
            )
            if given is not None
        ]
        if len(chosen) != 1:
            raise GenerationError(
                "name one server: --stdio COMMAND, --url URL, --config FILE --entry NAME "
                f"or --snapshot FILE (given: {', '.join(chosen) or 'none'})"
            )
        if (config is None) != (entry is None):
            raise GenerationError("--config and --entry go together")
        if headers and url is None:
            raise GenerationError("--header applies only to --url")
        if as_json and not check:
            raise GenerationError("--json applies only to --check")
        if output.suffix != ".py":
            raise GenerationError(f"--output {output} is not a .py module")
        current = _current(command, url, headers, config, entry, snapshot_file, settle, timeout)
        if check:
            _check(output, current, class_name, as_json)
            return
        source = render(build(current, class_name))
    except GenerationError as error:
        _fail(str(error))
    write_files(output.parent, {output.name: source})
    saved = snapshot_path(output)
    if snapshot_file is None or snapshot_file.resolve() != saved.resolve():
        snapshot.write(saved, current)
    click.echo(
        f"generated {output} for {current.name} {current.version} ({current.revision}): "
        f"{len(current.tools)} tools, {len(current.prompts)} prompts, "
        f"{len(current.resource_templates)} resource templates"
    )


def _current(
    command: str | None,
    url: str | None,
    headers: tuple[str, ...],
    config: Path | None,
    entry: str | None,
    snapshot_file: Path | None,
    settle: float,
    timeout: float,
) -> Snapshot:
    if snapshot_file is not None:
        return snapshot.load(snapshot_file)
    parsed = {}
    for header in headers:
        key, sep, value = header.partition(":")
        if not sep or not key.strip():
            raise GenerationError(f'--header {header!r} is not "Name: value"')
        parsed[key.strip()] = value.strip()
    try:
        argv = shlex.split(command) if command is not None else []
    except ValueError as error:
        raise GenerationError(f"--stdio {command!r}: {error}") from None
    if command is not None and not argv:
        raise GenerationError("--stdio needs a command")
    source = Source(command=argv, url=url, headers=parsed, config=config, entry=entry)
    return asyncio.run(snapshot.fetch(source, settle=settle, timeout=timeout))


def _check(output: Path, current: Snapshot, class_name: str | None, as_json: bool) -> None:
    saved_path = snapshot_path(output)
    if not saved_path.exists():
        raise GenerationError(
            f"no snapshot at {saved_path}: generate the bindings first (without --check)"
        )
    saved = snapshot.load(saved_path)
    report = drift.compare(saved, current)
    stale = False
    try:
        stale = output.read_text(encoding="utf-8") != render(build(saved, class_name))
    except OSError:
        stale = True
    if as_json:
        click.echo(report.to_json(), nl=False)
    else:
        click.echo(report.text(), nl=False)
    if stale:
        click.echo(
            f"mcp-codegen: {output} is not what its snapshot generates: regenerate it", err=True
        )
    if report.drift or stale:
        sys.exit(1)
