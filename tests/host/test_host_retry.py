"""Retrying a server: delays double up to a cap, with jitter; a server that
keeps failing is retried until max_attempts and then given up."""

from __future__ import annotations

import random
import sys
import time

import pytest
from support.peers import (
    no_leaked_processes,  # noqa: F401  (a fixture)
    run,
)

from mcpbind.host import Host, RetryPolicy


def test_delays_double_up_to_the_cap_with_jitter() -> None:
    policy = RetryPolicy(initial_delay=1.0, max_delay=10.0, factor=2.0, jitter=0.5)
    rng = random.Random(7)
    for failures, base in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (5, 10.0), (12, 10.0)]:
        delays = [policy.delay(failures, rng) for _ in range(200)]
        assert all(base * 0.5 <= delay <= base for delay in delays)
        assert max(delays) - min(delays) > base * 0.3  # spread, not one value
    assert RetryPolicy(jitter=0.0).delay(3, rng) == 4.0


@pytest.mark.usefixtures("no_leaked_processes")
def test_a_server_that_keeps_failing_is_given_up_after_max_attempts() -> None:
    failing = {"command": sys.executable, "args": ["-c", "import sys; sys.exit(5)"]}
    seen: list[str] = []

    async def scenario() -> None:
        policy = RetryPolicy(initial_delay=0.05, max_delay=0.1, max_attempts=3)
        async with Host({"mcpServers": {"bad": failing}}, retry=policy) as host:
            started = time.monotonic()
            await host.wait_until(lambda h: h.status()["bad"].state == "failed", timeout=30)
            status = host.status()["bad"]
            seen.append(status.state)
            assert status.failures == 3
            assert status.error is not None and "exited with code 5" in status.error
            assert time.monotonic() - started < 30

    run(scenario())
    assert seen == ["failed"]
