"""What a new user hit first with mcpx, the host and the examples, each kept
fixed: a quiet stderr after a listing, an OAuth entry authorized in the
browser, the HTTP example naming its missing extra and printing its URL, a
--timeout told apart from a server's answer, piped tables that keep long rows,
one entry's unset variable failing that entry alone, and a call to a lost
server saying the server is not connected."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.http_servers import ThreadedServer
from support.oidc_provider import AuthorizationServer, authorization_server
from support.peers import LOWLEVEL_SERVER, REPO, SUPPORT, run
from support.protected import protected_by
from test_host_cli import EXAMPLE, everything_stdio, mcpx, mcpx_json

from mcpbind.host import Host, HostError, RetryPolicy

EXAMPLES = REPO / "examples"


@pytest.fixture(scope="module")
def issuer() -> Iterator[AuthorizationServer]:
    with authorization_server() as server:
        yield server


@pytest.fixture(scope="module")
def protected(issuer: AuthorizationServer) -> Iterator[ThreadedServer]:
    with protected_by(issuer) as served:
        yield served


@pytest.mark.node
def test_a_listing_leaves_stderr_quiet() -> None:
    """server-everything announces list changes as the session closes; the
    host does not list again then, and nothing reaches stderr."""
    for _ in range(3):
        done = mcpx("list", "tools", "--json", *everything_stdio())
        assert done.stderr == ""
        assert len(json.loads(done.stdout)) >= 13


@pytest.mark.node
def test_an_oauth_entry_is_authorized_in_the_browser(
    protected: ThreadedServer, tmp_path: Path
) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps({"mcpServers": {"guarded": {"url": protected.url(), "auth": {"type": "oauth"}}}})
    )
    browser = f"{sys.executable} {SUPPORT / 'consenting_browser.py'} %s"
    done = subprocess.run(
        [str(Path(sys.executable).with_name("mcpx")), "list", "tools", "--json"]
        + ["--config", str(config)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "BROWSER": browser},
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert "authorize in your browser: http" in done.stderr
    assert json.loads(done.stdout)


def test_the_http_example_names_a_missing_extra_in_one_line() -> None:
    hide = "import runpy, sys; sys.modules['uvicorn'] = None; sys.argv = ['http_server.py']; "
    hide += f"sys.path.insert(0, {str(EXAMPLES)!r}); "
    hide += f"runpy.run_path({str(EXAMPLES / 'http_server.py')!r}, run_name='__main__')"
    done = subprocess.run([sys.executable, "-c", hide], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr == (
        "mcp-codegen-example: serving over HTTP needs the 'http' extra: "
        "pip install 'mcpbind[http]' (uvicorn is not installed)\n"
    )


def test_the_http_example_prints_where_it_listens() -> None:
    server = subprocess.Popen(
        [sys.executable, str(EXAMPLES / "http_server.py"), "--port", "0"],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stderr is not None
        line = server.stderr.readline()
        found = re.fullmatch(
            r"mcp-codegen-example: serving MCP at (http://127\.0\.0\.1:\d+/mcp)\n", line
        )
        assert found, line
        tools = mcpx_json("list", "tools", "--json", "--url", found.group(1))
        assert "echo" in [tool["name"] for tool in tools]
    finally:
        server.terminate()
        server.wait(30)


def test_a_timeout_is_mcpx_giving_up_not_an_answer() -> None:
    done = mcpx("call", "sleep", "seconds=30", "--timeout", "1", *EXAMPLE, expect=1)
    assert (
        done.stderr == "mcpx: error: no answer within 1 s (--timeout); the request was cancelled\n"
    )


@pytest.mark.node
def test_piped_tables_keep_long_rows() -> None:
    listed = mcpx("list", "tools", *everything_stdio()).stdout
    row = next(line for line in listed.splitlines() if line.lstrip().startswith("gzip-file"))
    assert row.endswith(
        "Compresses a single file using gzip compression. Depending upon the "
        "selected output type, returns either the compressed data as a gzipped "
        "resource or a resource link, allowing it to be downloaded in a subsequent "
        "request during the current session."
    )
    assert all(line == line.rstrip() for line in listed.splitlines())


def test_an_unset_variable_fails_its_entry_alone(tmp_path: Path) -> None:
    document = {
        "mcpServers": {
            "example": {"command": sys.executable, "args": [str(LOWLEVEL_SERVER)]},
            "github": {"url": "https://example.invalid/mcp", "headers": {"A": "${NO_SUCH_TOKEN}"}},
        }
    }
    environment = {k: v for k, v in os.environ.items() if k != "NO_SUCH_TOKEN"}
    os.environ.pop("NO_SUCH_TOKEN", None)

    async def go() -> None:
        async with Host(document, retry=RetryPolicy(max_attempts=1)) as host:
            status = host.status()
            assert status["example"].state == "ready"
            assert status["github"].state == "failed"
            assert status["github"].error == (
                "mcpServers.github.headers.A: environment variable NO_SUCH_TOKEN is not set"
            )
            assert (await host.call_tool("example_echo", {"text": "hi"})).content[0].text == "hi"
            with pytest.raises(HostError, match=r"server 'github' is not connected \(failed: "):
                await host.call_tool("github_anything")

    run(go())
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps(document))
    # mcpx takes the entry asked for; the broken one is an error only when it is the one asked for
    assert mcpx_json(
        "call", "echo", "text=hi", "--json", "--config", str(config), "--server", "example"
    )
    done = mcpx("list", "tools", "--config", str(config), "--server", "github", expect=2)
    assert "environment variable NO_SUCH_TOKEN is not set" in done.stderr
    assert environment.get("NO_SUCH_TOKEN") is None


def test_a_call_to_a_lost_server_says_it_is_not_connected() -> None:
    async def go() -> None:
        config = {
            "mcpServers": {"example": {"command": sys.executable, "args": [str(LOWLEVEL_SERVER)]}}
        }
        async with Host(config, retry=RetryPolicy(initial_delay=600, jitter=0)) as host:
            with pytest.raises(Exception):
                await host.call_tool("example_crash")
            await host.wait_until(lambda h: h.status()["example"].state == "retrying", 30)
            with pytest.raises(HostError, match=r"^server 'example' is not connected \(retrying"):
                await host.call_tool("example_echo", {"text": "hi"})

    run(go())
