"""``mcpx``: talk to one MCP server from a terminal or a script.

The server is a command (after ``--``), a URL (``--url``) or an entry of a
host configuration (``--config FILE --server NAME``). See
``docs/guides/cli.md``; ``mcpx --help`` lists the commands.
"""

from __future__ import annotations

import sys

EXTRA_MODULES = ("click", "rich")


def main(argv: list[str] | None = None) -> None:
    """The console script: one line and exit 1 when the ``cli`` extra is missing."""
    try:
        from ._entry import run
    except ImportError as error:
        missing = (error.name or "").partition(".")[0]
        if missing not in EXTRA_MODULES:
            raise
        sys.stderr.write(
            f"mcpx: needs the 'cli' extra ({missing} is not installed): pip install 'mcpbind[cli]'\n"
        )
        raise SystemExit(1) from None
    raise SystemExit(run(sys.argv[1:] if argv is None else argv))
