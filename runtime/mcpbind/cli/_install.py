"""``mcpx install CLIENT TARGET``: the server's entry written into a client's
own configuration file, where that client documents it.

| client | file | shape |
|---|---|---|
| ``claude-desktop`` | ``claude_desktop_config.json`` in Claude's application directory | ``mcpServers`` |
| ``claude-code`` | ``~/.claude.json`` (the user scope of ``claude mcp add``) | ``mcpServers``, ``type: stdio`` |
| ``cursor`` | ``~/.cursor/mcp.json`` | ``mcpServers`` |
| ``vscode`` | ``mcp.json`` of VS Code's user directory | ``servers``, ``type: stdio`` |

The entry runs this interpreter with ``-m mcpbind.cli run`` on the
target's absolute path, in the target's directory (``--cwd``), with the
``--env`` values. Writing is idempotent (an entry already as wanted leaves
the file untouched); an existing file is copied to ``<file>.bak`` before it
is changed; ``--print`` shows the entry and writes nothing.

The entry is named after the server's own name (the name its ``serverInfo``
gives), else (code that does not load here) the project's folder, and a
configuration entry by its own name. An entry of that name that starts
another server (another command, arguments or URL) is replaced only with
``--force``: two quick-start projects, both ``server.py``, do not overwrite
each other.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from ._commands import main
from ._targets import Target, load_server, parse_target


@dataclass(frozen=True)
class ClientFile:
    """Where a client keeps its servers and how it spells an entry."""

    title: str
    key: str
    typed: bool

    def path(self, client: str) -> Path:
        home = Path.home()
        if client == "claude-desktop":
            return _application_directory("Claude") / "claude_desktop_config.json"
        if client == "claude-code":
            return home / ".claude.json"
        if client == "cursor":
            return home / ".cursor" / "mcp.json"
        return _application_directory("Code") / "User" / "mcp.json"


CLIENTS = {
    "claude-desktop": ClientFile("Claude Desktop", "mcpServers", typed=False),
    "claude-code": ClientFile("Claude Code", "mcpServers", typed=True),
    "cursor": ClientFile("Cursor", "mcpServers", typed=False),
    "vscode": ClientFile("VS Code", "servers", typed=True),
}


def _application_directory(name: str) -> Path:
    home = Path.home()
    if sys.platform == "darwin":
        return home / "Library" / "Application Support" / name
    if sys.platform == "win32":
        return Path(os.environ.get("APPDATA", home / "AppData" / "Roaming")) / name
    return Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config") / name


def entry_for(target: Target, client: ClientFile, env: dict[str, str]) -> dict[str, Any]:
    """The configuration entry that starts ``target`` as the client expects it."""
    if target.entry is not None:
        source = target.entry
        if source.transport != "stdio" or source.command is None:
            entry: dict[str, Any] = {"url": source.url}
            if source.headers:
                entry["headers"] = dict(source.headers)
            return ({"type": "http"} | entry) if client.typed else entry
        entry = {"command": source.command, "args": list(source.args)}
        merged = {**source.env, **env}
        cwd = source.cwd
    else:
        directory = target.file.parent if target.file is not None else Path.cwd()
        entry = {
            "command": sys.executable,
            "args": ["-m", "mcpbind.cli", "run", "--cwd", str(directory), target.portable()],
        }
        merged, cwd = dict(env), None
    if merged:
        entry["env"] = merged
    if cwd is not None:
        entry["cwd"] = cwd
    return ({"type": "stdio"} | entry) if client.typed else entry


@main.command()
@click.argument("client", type=click.Choice(list(CLIENTS)))
@click.argument("target")
@click.option(
    "--name", help="The entry's name (default: the server's own name, else its folder's)."
)
@click.option(
    "--force", is_flag=True, help="Replace an entry of that name that starts another server."
)
@click.option(
    "-e",
    "--env",
    "env",
    multiple=True,
    metavar="KEY=VALUE",
    help="An environment variable (repeatable).",
)
@click.option("--print", "print_only", is_flag=True, help="Print the entry; write nothing.")
def install(
    client: str,
    target: str,
    name: str | None,
    force: bool,
    env: tuple[str, ...],
    print_only: bool,
) -> int:
    """Add TARGET to CLIENT's MCP servers (claude-desktop, claude-code, cursor, vscode).

    TARGET is what mcpx run takes: server.py[:app], a module, or mcp.json:name."""
    chosen = parse_target(target)
    spec = CLIENTS[client]
    values = {}
    for pair in env:
        key, equals, value = pair.partition("=")
        if not equals or not key:
            raise click.UsageError(f"-e {pair!r}: expected KEY=VALUE")
        values[key] = value
    entry_name = name or _default_name(chosen)
    entry = entry_for(chosen, spec, values)
    if print_only:
        click.echo(json.dumps({spec.key: {entry_name: entry}}, indent=2))
        return 0
    path = spec.path(client)
    document = _read(path)
    servers = document.setdefault(spec.key, {})
    if not isinstance(servers, dict):
        raise click.ClickException(f"{path}: {spec.key} is not an object; not changing it")
    if servers.get(entry_name) == entry:
        click.echo(f"{spec.title}: {entry_name!r} is already in {path}", err=True)
        return 0
    verb = "updated" if entry_name in servers else "added"
    previous = servers.get(entry_name)
    if isinstance(previous, dict) and not _same_server(previous, entry):
        if not force:
            raise click.ClickException(
                f"{path}: {entry_name!r} already starts another server "
                f"({_describe(previous)}); not replacing it without --force "
                f"(or give this one another --name)"
            )
        verb = "replaced"
    servers[entry_name] = entry
    if path.exists():
        shutil.copy2(path, path.with_name(path.name + ".bak"))
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    os.replace(temporary, path)  # a reader never sees half a file
    click.echo(
        f"{spec.title}: {verb} {entry_name!r} in {path} (restart {spec.title} to use it)", err=True
    )
    return 0


def _read(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        document = json.loads(path.read_text(encoding="utf-8") or "{}")
    except json.JSONDecodeError as error:
        raise click.ClickException(f"{path} is not JSON ({error}); not changing it") from None
    if not isinstance(document, dict):
        raise click.ClickException(f"{path} is not a JSON object; not changing it")
    return document


def _default_name(target: Target) -> str:
    """The server's own name (its serverInfo's), else its project folder's."""
    if target.entry is not None:
        return target.entry.name
    try:
        found = load_server(target)
    except (Exception, SystemExit):  # code that needs more than this process to load
        found = None
    if found is not None and found.name:
        return str(found.name)
    if target.file is not None:
        return target.file.parent.name or target.name
    return target.name


def _same_server(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether two entries start the same server (their environment aside)."""
    return all(old.get(key) == new.get(key) for key in ("command", "args", "url"))


def _describe(entry: dict[str, Any]) -> str:
    if "url" in entry:
        return str(entry["url"])
    args = entry.get("args")
    words = [str(entry.get("command", "")), *(args if isinstance(args, list) else [])]
    return " ".join(words)
