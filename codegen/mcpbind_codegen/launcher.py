"""The ``mcp-codegen`` console script: the generator's dependencies come with
the ``codegen`` extra, and without them the command says so in one line."""

from __future__ import annotations

import sys

# The generator's third-party imports (the codegen extra in pyproject.toml).
_CODEGEN_EXTRA = frozenset({"click", "jinja2", "black", "datamodel_code_generator"})


def main() -> None:
    try:
        from .cli import main as cli_main
    except ModuleNotFoundError as error:
        if (error.name or "").partition(".")[0] not in _CODEGEN_EXTRA:
            raise
        print(
            f"mcp-codegen needs the 'codegen' extra: pip install 'mcpbind[codegen]'"
            f" ({error.name} is not installed)",
            file=sys.stderr,
        )
        sys.exit(2)
    cli_main()
