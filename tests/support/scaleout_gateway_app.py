"""The gateway of the scale-out tests, as an app factory for ``uvicorn
--factory support.scaleout_gateway_app:asgi``: every worker builds the gateway
over the ``mcpServers`` file named by ``MCP_TEST_GATEWAY_CONFIG`` on the Redis
named by ``MCP_TEST_REDIS_URL``, and connects its own backends."""

from __future__ import annotations

import os

from mcpbind.app._lifespan import LifespanASGI
from mcpbind.cli._serve import gateway_app
from mcpbind.stores._redis_store import RedisStore

STATE_KEY = b"the scale-out gateway tests share this key"


def asgi() -> LifespanASGI:
    store = RedisStore.from_url(os.environ["MCP_TEST_REDIS_URL"])
    gateway, _ = gateway_app(
        os.environ["MCP_TEST_GATEWAY_CONFIG"], store=store, state_key=STATE_KEY
    )
    return gateway.asgi(legacy_sse=False)
