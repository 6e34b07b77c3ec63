"""Hosts: many MCP servers from one configuration, behind one object.

``async with Host(config, handlers) as host:`` (see :mod:`.host`);
configurations are read by :mod:`.config`, names given by :mod:`.names`,
each server supervised by :mod:`.connection`, and the servers' requests
answered by :class:`HostHandlers` (:mod:`.handlers`); OAuth for servers
reached by URL by :class:`HostAuthorization` (it needs the ``auth`` extra, and is
imported on first use).
"""

from typing import TYPE_CHECKING, Any

from ._config import ConfigError, HostConfig, OAuthEntry, ServerConfig, load_config, parse_config
from ._connection import Authorize, RetryPolicy, ServerStatus
from ._handlers import HostHandlers
from ._host import Host, HostError, HostPrompt, HostResource, HostResourceTemplate, HostTool

if TYPE_CHECKING:
    from ._authorization import HostAuthorization

__all__ = [
    "Authorize",
    "ConfigError",
    "Host",
    "HostConfig",
    "HostError",
    "HostAuthorization",
    "HostHandlers",
    "HostPrompt",
    "HostResource",
    "HostResourceTemplate",
    "HostTool",
    "OAuthEntry",
    "RetryPolicy",
    "ServerConfig",
    "ServerStatus",
    "load_config",
    "parse_config",
]


def __getattr__(name: str) -> Any:
    if name == "HostAuthorization":
        from ._authorization import HostAuthorization

        return HostAuthorization
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
