"""``mcp-codegen server``: typed bindings for a server, and the drift check."""

from __future__ import annotations

import asyncio
import shlex
import sys
from pathlib import Path
from typing import Any, NoReturn

import click

from ..model import GenerationError
from ..output import write_files
from . import drift, snapshot
from .model import build
from .render import render
from .snapshot import CLIENT_CAPABILITIES, Snapshot, Source


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
    "--capability",
    "capabilities",
    multiple=True,
    type=click.Choice(sorted(CLIENT_CAPABILITIES)),
    help="A capability the clients using the bindings declare (repeatable): tools a server "
    "lists only to such clients are included. Default: none (with --check: the snapshot's).",
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
    capabilities: tuple[str, ...],
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
        if capabilities and snapshot_file is not None:
            raise GenerationError(
                "--capability applies only to a live server (a snapshot records its own)"
            )
        if as_json and not check:
            raise GenerationError("--json applies only to --check")
        if output.suffix != ".py":
            raise GenerationError(f"--output {output} is not a .py module")
        source_of = _source(command, url, headers, config, entry)
        if check:
            declared = capabilities
            if not declared and source_of is not None and snapshot_path(output).exists():
                declared = tuple(snapshot.load(snapshot_path(output)).capabilities)
            current = _current(source_of, snapshot_file, settle, timeout, declared)
            _check(output, current, class_name, as_json)
            return
        current, other = _current_and_other(source_of, snapshot_file, settle, timeout, capabilities)
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
        + (
            f" (client capabilities: {', '.join(current.capabilities)})"
            if current.capabilities
            else ""
        )
    )
    if other is not None:
        for line in gated(current, other):
            click.echo(line)


def gated(current: Snapshot, other: Snapshot) -> list[str]:
    """What a listing with other client capabilities (``other``) has that the
    bindings' (``current``) has not, or the other way round: which tools,
    prompts and templates the server gates on the capabilities that differ."""
    lines = []
    more = set(other.capabilities) - set(current.capabilities)
    fewer = set(current.capabilities) - set(other.capabilities)
    for kind, key, mine, theirs in (
        ("tools", "name", current.tools, other.tools),
        ("prompts", "name", current.prompts, other.prompts),
        ("resource templates", "uriTemplate", current.resource_templates, other.resource_templates),
    ):
        own = {str(e.get(key)) for e in mine}
        found = {str(e.get(key)) for e in theirs}
        if more and found - own:
            names = sorted(found - own)
            lines.append(
                f"left out {len(names)} {kind} the server lists only to clients that also "
                f"declare {', '.join(sorted(more))}: {', '.join(names)} "
                f"({len(found)} {kind} with them; include them with --capability)"
            )
        if fewer and own - found:
            names = sorted(own - found)
            lines.append(
                f"{len(names)} of the {len(own)} {kind} are listed only to clients that "
                f"declare {', '.join(sorted(fewer))}: {', '.join(names)} "
                f"({len(found)} {kind} without them)"
            )
    return lines


def _source(
    command: str | None,
    url: str | None,
    headers: tuple[str, ...],
    config: Path | None,
    entry: str | None,
) -> Source | None:
    """The live server named by the options; None for a snapshot."""
    if command is None and url is None and config is None:
        return None
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
    return Source(command=argv, url=url, headers=parsed, config=config, entry=entry)


def _current(
    source: Source | None,
    snapshot_file: Path | None,
    settle: float,
    timeout: float,
    capabilities: tuple[str, ...],
) -> Snapshot:
    if source is None:
        assert snapshot_file is not None
        return snapshot.load(snapshot_file)
    return asyncio.run(
        snapshot.fetch(source, settle=settle, timeout=timeout, capabilities=capabilities)
    )


def _current_and_other(
    source: Source | None,
    snapshot_file: Path | None,
    settle: float,
    timeout: float,
    capabilities: tuple[str, ...],
) -> tuple[Snapshot, Snapshot | None]:
    """The snapshot to generate from and, from a live server, a second listing
    to compare it with: declaring every client capability where the bindings'
    users do not declare them all (what is left out), else declaring none
    (what the bindings have only thanks to them). Both connections run at
    once, one after the other for a config entry (its OAuth flow, if any)."""
    if source is None:
        return _current(source, snapshot_file, settle, timeout, capabilities), None
    everything = tuple(sorted(CLIENT_CAPABILITIES))
    other = () if set(capabilities) == set(everything) else everything

    async def both() -> tuple[Snapshot, Snapshot | BaseException]:
        def one(declared: tuple[str, ...]) -> Any:
            return snapshot.fetch(source, settle=settle, timeout=timeout, capabilities=declared)

        if source.config is not None:
            first = await one(capabilities)
            try:
                return first, await one(other)
            except GenerationError as error:
                return first, error
        found = await asyncio.gather(one(capabilities), one(other), return_exceptions=True)
        if isinstance(found[0], BaseException):
            raise found[0]
        return found[0], found[1]

    current, compared = asyncio.run(both())
    if isinstance(compared, GenerationError):
        # The bindings are still right; only the comparison is missing.
        click.echo(
            f"mcp-codegen: could not list with client capabilities "
            f"{', '.join(other) or 'none'} to compare: {compared}",
            err=True,
        )
        return current, None
    if isinstance(compared, BaseException):
        raise compared
    return current, compared


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
