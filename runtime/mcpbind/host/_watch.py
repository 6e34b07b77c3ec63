"""Watching a host's configuration file: each change (its modification time
or size) calls back, so the host applies the new configuration; a file that
cannot be read or used is reported and the running servers are kept."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Awaitable, Callable

from ._config import ConfigError

logger = logging.getLogger(__name__)

POLL_INTERVAL = 1.0
"""Seconds between two looks at the file."""


Stamp = tuple[float, int] | None


def stamp(path: str) -> Stamp:
    """What tells one version of the file from the next: modification time and size."""
    with contextlib.suppress(OSError):
        found = os.stat(path)
        return found.st_mtime, found.st_size
    return None


async def watch_file(path: str, changed: Callable[[], Awaitable[None]], seen: Stamp) -> None:
    """Call ``changed`` after each change of ``path`` from ``seen`` (its :func:`stamp`
    when the configuration was read), until cancelled."""
    while True:
        await asyncio.sleep(POLL_INTERVAL)
        now = stamp(path)
        if now == seen or now is None:
            continue
        seen = now
        try:
            await changed()
        except ConfigError as error:
            logger.warning("%s not applied: %s", path, error)
