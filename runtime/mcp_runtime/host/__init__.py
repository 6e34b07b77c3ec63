"""Hosts: many MCP servers from one configuration, behind one object.

``async with Host(config, handlers) as host:`` (see :mod:`.host`);
configurations are read by :mod:`.config`, names given by :mod:`.names`,
each server supervised by :mod:`.connection`, and the servers' requests
answered by :class:`HostHandlers` (:mod:`.handlers`); OAuth for servers
reached by URL by :class:`.authorization.HostAuthorization`.
"""

from .config import ConfigError, HostConfig, OAuthEntry, ServerConfig, load_config, parse_config
from .connection import Authorize, RetryPolicy, ServerStatus
from .handlers import HostHandlers
from .host import Host, HostError, HostPrompt, HostResource, HostResourceTemplate, HostTool

__all__ = [
    "Authorize",
    "ConfigError",
    "Host",
    "HostConfig",
    "HostError",
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
