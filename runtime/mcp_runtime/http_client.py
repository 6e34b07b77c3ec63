"""Deprecated path of the HTTP client transports: import from :mod:`mcp_runtime.http`
(or :mod:`mcp_runtime.http.client`)."""

import warnings

from .http.client import *  # noqa: F403

warnings.warn(
    "mcp_runtime.http_client is deprecated: import from mcp_runtime.http",
    DeprecationWarning,
    stacklevel=2,
)
