"""The headers of the HTTP request whose message a handler is answering.

The Streamable HTTP app sets them around the dispatch of each POSTed request,
so the handler (and every task it starts) reads the headers of its own POST,
never another's; outside an HTTP request (stdio, in memory, a notification
read by a session's reader) there are none.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextvars import ContextVar, Token

# Names lower-cased, values decoded as latin-1 (as the ASGI server gave them).
_current: ContextVar[Mapping[str, str] | None] = ContextVar("mcp_request_headers", default=None)


def request_headers() -> Mapping[str, str] | None:
    """The current HTTP request's headers (lower-cased names), or None outside one."""
    return _current.get()


# The ContextVar's own methods, not functions calling them: set around every
# POSTed request, a Python frame each would cost more than the setting.
set_request_headers: Callable[[Mapping[str, str] | None], Token[Mapping[str, str] | None]] = (
    _current.set
)
"""``set_request_headers(headers)``: make ``headers`` current; returns the token
for :func:`reset_request_headers`."""

reset_request_headers: Callable[[Token[Mapping[str, str] | None]], None] = _current.reset
"""``reset_request_headers(token)``: the headers current before the matching set."""
