"""Deprecated path of the Streamable HTTP server app: import from :mod:`mcp_runtime.http`
(or :mod:`mcp_runtime.http.streamable`)."""

import warnings

from .http.streamable import *  # noqa: F403

warnings.warn(
    "mcp_runtime.streamable_http is deprecated: import from mcp_runtime.http",
    DeprecationWarning,
    stacklevel=2,
)
