"""The mcpx entry point: every command module registered on the group, then
click run so that bad input is one line and exit status 2."""

from __future__ import annotations

import click

from . import _inspect, _install, _serve, _ui  # noqa: F401  (register their commands)
from ._commands import Invocation, main
from ._output import Terminal


def run(argv: list[str]) -> int:
    """Run mcpx; the exit status. Bad input is one line on stderr and status 2."""
    command: list[str] = []
    if "--" in argv:
        split = argv.index("--")
        argv, command = argv[:split], argv[split + 1 :]
    try:
        status = main.main(
            args=argv, prog_name="mcpx", standalone_mode=False, obj=Invocation(command)
        )
    except click.ClickException as error:
        Terminal(False).error(error.format_message().replace("\n", " "))
        return error.exit_code
    except click.Abort:
        return 130
    return status if isinstance(status, int) else 0
