"""What a test needs beyond the Python environment, held to its marks.

The fast part of the suite, ``pytest -m "not node and not redis and not peers"``,
runs where Node and the npm peers, ``redis-server`` or the peer programs may be
missing, so a test that reaches one of them must carry its mark. This plugin
(loaded by tests/conftest.py) knows the markers of the test running now, and
fails a test that reaches something its marks do not declare, on every run,
whether the thing is installed or not: "tests/x.py::test_y uses Node but is not
marked `node`". It sees two ways in:

* the support helpers that reach a peer call :func:`needs` (``require`` of
  support.peers for the npm peers, support.redis_server for ``redis-server``);
* every process the test process starts (an audit hook on ``subprocess.Popen``,
  which asyncio's subprocesses go through too): Node or anything under
  ``node_modules``; ``redis-server`` or ``redis-cli``; ``wrk``, ``haproxy``, ``prometheus``,
  ``nginx``, and the official SDK's or FastMCP's servers of tests/support.

``MCP_TESTS_WITHOUT`` (comma-separated marks, e.g. ``node,redis,peers``) makes
them behave as if not installed, as on a fresh clone with only the ``test``
extra: :func:`needs` and the audit hook then fail even a marked test. (The
official SDK itself is in the ``test`` extra: what ``peers`` hides is its
servers and the other peer programs started as processes.) A process started
by a process the test started is not seen; the helpers that hand a peer's
command to one (``everything_stdio`` of test_host_cli) go through ``require``.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Generator, Sequence
from pathlib import PurePath
from typing import Any

import pytest

MARKS = ("node", "redis", "peers")
WITHOUT = frozenset(
    mark.strip() for mark in os.environ.get("MCP_TESTS_WITHOUT", "").split(",") if mark.strip()
)

# The test running now (its node id and marks), None between tests (collection).
_current: tuple[str, frozenset[str]] | None = None
# What the running test reached without its mark (reported even if the error was swallowed).
_unmarked: list[str] = []

_NODE_PROGRAMS = {"node", "npm", "npx"}
_REDIS_PROGRAMS = {"redis-server", "redis-cli", "redis-sentinel"}
_PEER_PROGRAMS = {"wrk", "haproxy", "nginx", "prometheus"}
# A script or module of the official SDK's or FastMCP's side (tests/support, bench/servers).
_PEER_SCRIPT = re.compile(r"(^|[/.:])(sdk_\w+|fastmcp_server)(\.py)?(:\w+)?$")


class UnmarkedNeed(Exception):
    """A test reached Node, Redis or a peer without the mark that says so."""


class Missing(Exception):
    """Node, Redis or a peer is hidden by MCP_TESTS_WITHOUT."""


def needs(mark: str, what: str) -> None:
    """Declare that the running test uses ``what``, which its ``mark`` must say.

    Raises :class:`UnmarkedNeed` when the running test lacks the mark, and
    fails the test (as a missing install) when ``MCP_TESTS_WITHOUT`` hides it."""
    assert mark in MARKS, mark
    current = _current
    if current is not None and mark not in current[1]:
        message = f"{current[0]} uses {what} but is not marked `{mark}`"
        _unmarked.append(message)
        raise UnmarkedNeed(message)
    if mark in WITHOUT:
        raise Missing(
            f"{what} is missing (hidden by MCP_TESTS_WITHOUT={','.join(sorted(WITHOUT))})"
        )


def mark_of(argv: Sequence[str]) -> tuple[str, str] | None:
    """The mark a command needs and what it runs, or None for a plain one."""
    if not argv:
        return None
    program = PurePath(argv[0]).name
    if program in _NODE_PROGRAMS or any("node_modules" in arg for arg in argv[:2]):
        return "node", "Node"
    if program in _REDIS_PROGRAMS:
        return "redis", program
    if program in _PEER_PROGRAMS:
        return "peers", program
    for arg in argv[1:4]:
        if _PEER_SCRIPT.search(arg):
            return "peers", f"a peer server ({PurePath(arg).name})"
    return None


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event != "subprocess.Popen" or _current is None:
        return
    executable, argv = args[0], args[1]
    if isinstance(argv, (str, bytes)):
        argv = [argv]
    command = [os.fsdecode(a) for a in argv]
    if executable is not None and command:
        command[0] = os.fsdecode(executable)
    found = mark_of(command)
    if found is not None:
        needs(*found)


def pytest_configure(config: pytest.Config) -> None:
    # Only in a test session (not in the bench's processes, which import the helpers too).
    sys.addaudithook(_audit)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, object, object]:
    global _current
    marks = frozenset(mark.name for mark in item.iter_markers() if mark.name in MARKS)
    _current = (item.nodeid, marks)
    _unmarked.clear()
    try:
        return (yield)
    finally:
        _current = None


def _checked() -> Generator[None, object, object]:
    # An error raised in a thread or swallowed by the code under test still fails the test.
    result = yield
    if _unmarked:
        pytest.fail(_unmarked[0], pytrace=False)
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from _checked())


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from _checked())
