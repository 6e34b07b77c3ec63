"""What the store tests share: a redis-server for a module's tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from support.redis_server import RedisServer


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    """The URL of a redis-server started for the module's tests, stopped after them."""
    redis = RedisServer()
    redis.start()
    try:
        yield redis.url
    finally:
        redis.close()
