"""What ``mcpx run``, ``dev`` and ``install`` take as the server: a file
(``server.py``, or ``server.py:app`` naming the object), a module
(``pkg.server`` or ``pkg.server:app``), or an entry of a host configuration
(``mcp.json:name``; the name may be left out when the file has one entry).

In a file or module, the server is the object named after the colon, else
the one module-level :class:`~mcpbind.app.App` (or
:class:`~mcpbind._server.server.Server`), preferring the names ``app``, ``mcp``
and ``server`` when there are several.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import runpy
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from .._server.server import Server
from ..app import App
from ..host import ConfigError, ServerConfig, load_config

PREFERRED = ("app", "mcp", "server")


@dataclass(frozen=True)
class Target:
    """A server to run: Python code (``file`` or ``module``, ``attribute``) or a configuration entry."""

    spec: str
    file: Path | None = None
    module: str | None = None
    attribute: str | None = None
    entry: ServerConfig | None = None

    @property
    def name(self) -> str:
        """A name for the server in a client's configuration."""
        if self.entry is not None:
            return self.entry.name
        if self.file is not None:
            return self.file.stem
        assert self.module is not None
        return self.module.rpartition(".")[2]

    @property
    def sources(self) -> Path | None:
        """The directory whose Python files a reload watches."""
        if self.file is not None:
            return self.file.parent
        if self.module is not None:
            spec = importlib.util.find_spec(self.module.partition(".")[0])
            origin = spec.origin if spec is not None else None
            return Path(origin).parent if origin else None
        return None

    def portable(self) -> str:
        """The spec with the file made absolute, for a client's configuration."""
        if self.file is None:
            return self.spec
        return str(self.file) + (f":{self.attribute}" if self.attribute else "")


def parse_target(spec: str) -> Target:
    """The target ``spec`` names; click.UsageError when it names nothing runnable."""
    path_part, colon, attribute = spec.rpartition(":") if ":" in spec else (spec, "", "")
    if not colon:
        path_part = spec
    if os.sep in attribute or "/" in attribute:  # a colon inside a path (C:\\...): no attribute
        path_part, attribute = spec, ""
    path = Path(path_part)
    if path.suffix == ".json":
        return Target(spec, entry=_entry(path, attribute or None))
    if path.suffix == ".py" or path.exists():
        if not path.is_file():
            raise click.UsageError(f"{path_part}: no such file")
        return Target(spec, file=path.resolve(), attribute=attribute or None)
    if all(part.isidentifier() for part in path_part.split(".")):
        return Target(spec, module=path_part, attribute=attribute or None)
    raise click.UsageError(f"{spec!r} is not a file, a module or a configuration entry")


def load_server(target: Target) -> App | Server:
    """Import the target's code and find its server (click.UsageError if there is none)."""
    if target.file is not None:
        sys.path.insert(0, str(target.file.parent))
        # Not __main__: a trailing `if __name__ == "__main__": app.run()` stays unrun.
        namespace = runpy.run_path(str(target.file), run_name="__mcpx__")
        where = str(target.file)
    else:
        assert target.module is not None
        sys.path.insert(0, os.getcwd())
        try:
            namespace = vars(importlib.import_module(target.module))
        except ImportError as error:
            raise click.UsageError(f"cannot import {target.module}: {error}") from None
        where = target.module
    if target.attribute is not None:
        found = namespace.get(target.attribute)
        if not isinstance(found, (App, Server)):
            raise click.UsageError(f"{where}: {target.attribute!r} is not an App or a Server")
        return found
    servers = {k: v for k, v in namespace.items() if isinstance(v, (App, Server))}
    for name in PREFERRED:
        if name in servers:
            return servers[name]
    if len(servers) == 1:
        return next(iter(servers.values()))
    if not servers:
        raise click.UsageError(f"{where} has no App or Server at module level")
    raise click.UsageError(
        f"{where} has several servers ({', '.join(servers)}); name one: {target.spec}:NAME"
    )


def _entry(path: Path, name: str | None) -> ServerConfig:
    try:
        config = load_config(path, keep_broken=True)
        if name is None:
            if len(config.names) != 1:
                raise click.UsageError(
                    f"{path} has {len(config.names)} servers; name one: {path}:NAME "
                    f"({', '.join(config.names)})"
                )
            name = config.names[0]
        return config[name]
    except ConfigError as error:
        raise click.UsageError(str(error)) from None


def server_of(found: Any) -> Server:
    return found.server() if isinstance(found, App) else found
