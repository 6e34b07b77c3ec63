"""One options object for every limit of the HTTP apps, seen through raw HTTP against a real
server, and no other way to pass them."""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx
import pytest
from support.http_servers import lowlevel_server, serving

from mcpbind.http import HttpOptions, LegacySSEApp, StreamableHTTPApp, http_app

ACCEPT = "application/json, text/event-stream"
PING = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()


def post(url: str, body: bytes) -> httpx.Response:
    return httpx.post(
        url, content=body, headers={"accept": ACCEPT, "content-type": "application/json"}
    )


def test_one_options_object_bounds_both_http_transports() -> None:
    options = HttpOptions(max_body_size=len(PING) - 1)
    app = http_app(lowlevel_server(), options=options)
    assert app.streamable.options is options
    assert app.legacy is not None and app.legacy.options is options
    with serving(app) as server:
        refused = post(server.url("/mcp"), PING)
        assert refused.status_code == 413
        assert refused.json()["error"]["code"] == -32600


@pytest.mark.parametrize("app", [http_app, StreamableHTTPApp, LegacySSEApp])
def test_a_limit_passed_as_a_keyword_is_refused(app: Callable[..., object]) -> None:
    """The limits are options only (the keyword form was removed before 0.1.0): a limit
    passed beside them is a TypeError, not a silently ignored setting."""
    with pytest.raises(TypeError, match="unexpected keyword argument 'max_body_size'"):
        app(lowlevel_server(), max_body_size=1)


def test_a_keyword_that_names_no_option_is_refused() -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument 'max_bodysize'"):
        http_app(lowlevel_server(), max_bodysize=1)  # type: ignore[call-arg]


def test_options_are_frozen() -> None:
    options = HttpOptions()
    with pytest.raises(AttributeError):
        options.max_body_size = 1  # type: ignore[misc]
