"""Deprecated path of the 2024-11-05 HTTP+SSE server app: import from :mod:`mcp_runtime.http`
(or :mod:`mcp_runtime.http.legacy_sse`)."""

import warnings

from .http.legacy_sse import *  # noqa: F403

warnings.warn(
    "mcp_runtime.sse_legacy is deprecated: import from mcp_runtime.http",
    DeprecationWarning,
    stacklevel=2,
)
