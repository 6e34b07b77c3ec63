"""One options object for every limit of the HTTP apps, and the keywords users were told
about still working (deprecated), seen through raw HTTP against a real server."""

from __future__ import annotations

import json

import httpx
import pytest
from support.http_servers import lowlevel_server, serving

from mcp_runtime.http import HttpOptions, LegacySSEApp, StreamableHTTPApp, http_app

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


def test_limits_passed_as_keywords_still_apply_with_a_deprecation_warning() -> None:
    with pytest.warns(DeprecationWarning, match=r"http_app\(max_body_size=\.\.\.\)"):
        app = http_app(lowlevel_server(), max_body_size=len(PING) - 1)
    assert app.streamable.options.max_body_size == len(PING) - 1
    with serving(app) as server:
        assert post(server.url("/mcp"), PING).status_code == 413
    with pytest.warns(DeprecationWarning):
        streamable = StreamableHTTPApp(lowlevel_server(), session_timeout=5.0)
    assert streamable.options.session_timeout == 5.0
    # The 2024-11-05 app's session cap was its max_sessions: one GET stream each.
    with pytest.warns(DeprecationWarning):
        legacy = LegacySSEApp(lowlevel_server(), max_sessions=3)
    assert legacy.options.max_streams == 3


def test_a_keyword_that_names_no_option_is_refused() -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument 'max_bodysize'"):
        http_app(lowlevel_server(), max_bodysize=1)


def test_options_are_frozen() -> None:
    options = HttpOptions()
    with pytest.raises(AttributeError):
        options.max_body_size = 1  # type: ignore[misc]
