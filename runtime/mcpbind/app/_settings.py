"""How ``App.run`` serves: from its arguments, else environment variables, else defaults.

================  ===================  ===========  =======================================
argument          environment          default      meaning
================  ===================  ===========  =======================================
``transport``     ``MCP_TRANSPORT``    ``stdio``    ``stdio`` or ``http`` (Streamable HTTP
                                                    and legacy SSE)
``host``          ``MCP_HOST``         127.0.0.1    the address HTTP listens on
``port``          ``MCP_PORT``         8000         the port HTTP listens on
``path``          ``MCP_PATH``         ``/mcp``     the Streamable HTTP endpoint
``log_level``     ``MCP_LOG_LEVEL``    ``warning``  the server's own log level (Python
                                                    logging, on stderr; uvicorn's too)
================  ===================  ===========  =======================================
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

Transport = Literal["stdio", "http"]
LOG_LEVELS = ("debug", "info", "warning", "error", "critical")


class SettingsError(ValueError):
    """A setting has a value ``run`` cannot use (one line, naming where it came from)."""


@dataclass(frozen=True)
class RunSettings:
    transport: Transport = "stdio"
    host: str = "127.0.0.1"
    port: int = 8000
    path: str = "/mcp"
    log_level: str = "warning"

    @classmethod
    def resolve(
        cls,
        *,
        transport: str | None = None,
        host: str | None = None,
        port: int | None = None,
        path: str | None = None,
        log_level: str | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> RunSettings:
        env = os.environ if environ is None else environ
        chosen_transport = transport or env.get("MCP_TRANSPORT") or "stdio"
        if chosen_transport not in ("stdio", "http"):
            raise SettingsError(
                f"transport {chosen_transport!r} (argument or MCP_TRANSPORT): expected stdio or http"
            )
        raw_port = port if port is not None else env.get("MCP_PORT", "8000")
        try:
            chosen_port = int(raw_port)
        except ValueError:
            raise SettingsError(
                f"port {raw_port!r} (argument or MCP_PORT) is not a number"
            ) from None
        if not 0 <= chosen_port <= 65535:
            raise SettingsError(f"port {chosen_port} (argument or MCP_PORT) is not 0 to 65535")
        chosen_path = path or env.get("MCP_PATH") or "/mcp"
        if not chosen_path.startswith("/"):
            raise SettingsError(f"path {chosen_path!r} (argument or MCP_PATH) must start with /")
        level = (log_level or env.get("MCP_LOG_LEVEL") or "warning").lower()
        if level not in LOG_LEVELS:
            raise SettingsError(
                f"log level {level!r} (argument or MCP_LOG_LEVEL): expected one of {', '.join(LOG_LEVELS)}"
            )
        return cls(
            transport="http" if chosen_transport == "http" else "stdio",
            host=host or env.get("MCP_HOST") or "127.0.0.1",
            port=chosen_port,
            path=chosen_path,
            log_level=level,
        )

    def configure_logging(self) -> None:
        """The server's own loggers (``mcpbind``) at this level, on stderr."""
        logging.getLogger("mcpbind").setLevel(self.log_level.upper())
