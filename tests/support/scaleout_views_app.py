"""An app of the application layer for the shared-views tests, as an app
factory for ``uvicorn --factory support.scaleout_views_app:asgi``: every
worker builds the same app on the Redis named by ``MCP_TEST_REDIS_URL``.

Its tools hide and show tools for the whole app (``hide``, ``show``), register
a tool in this worker only while serving (``grow``) and tell which worker ran
them (``greet``).
"""

from __future__ import annotations

import os

from mcpbind.app import App
from mcpbind.app._lifespan import LifespanASGI
from mcpbind.stores._redis_store import RedisStore

STATE_KEY = b"the shared-views tests share this key"


def build() -> App:
    app: App = App(
        "views",
        "1",
        state_key=STATE_KEY,
        store=RedisStore.from_url(os.environ["MCP_TEST_REDIS_URL"]),
    )

    @app.tool()
    def greet() -> str:
        """Say which worker answered."""
        return f"hello from {os.getpid()}"

    @app.tool()
    def hide(names: list[str]) -> str:
        """Hide tools from every session of the app."""
        app.disable(names)
        return str(os.getpid())

    @app.tool()
    def show(names: list[str]) -> str:
        """Show tools to every session of the app."""
        app.enable(names)
        return str(os.getpid())

    @app.tool()
    def grow(name: str) -> str:
        """Register a tool in this worker only (a function made while serving)."""

        def grown() -> str:
            return f"grown on {os.getpid()}"

        app.tool(name=name)(grown)
        return str(os.getpid())

    return app


def asgi() -> LifespanASGI:
    return build().asgi(legacy_sse=False)
