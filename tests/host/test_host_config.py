"""Host configurations: both shapes, variable expansion, the naming rule, and
errors that name the entry and the field."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from mcpbind.app._mount import prefixed_name
from mcpbind.host import ConfigError, load_config, parse_config
from mcpbind.host._names import clashing_servers, qualified_names, server_prefix

ENV = {"HOME": "/home/u", "TOKEN": "t0k", "EMPTY": ""}


def test_the_mcp_servers_shape() -> None:
    config = parse_config(
        {
            "mcpServers": {
                "files": {
                    "command": "npx",
                    "args": ["-y", "pkg", "${HOME}/data"],
                    "env": {"KEY": "${TOKEN}", "MODE": "${MODE:-fast}"},
                    "cwd": "${HOME}",
                    "requestTimeout": 2.5,
                    "autoApprove": ["x"],  # another host's key: ignored
                },
                "remote": {
                    "url": "https://example.com/mcp",
                    "headers": {"Authorization": "Bearer ${TOKEN}"},
                    "auth": {"scope": "a"},
                },
                "off": {"command": "nothing", "disabled": True},
            }
        },
        ENV,
    )
    assert config.names == ["files", "remote"]
    files, remote = config["files"], config["remote"]
    assert (files.transport, files.command, files.args, files.cwd) == (
        "stdio",
        "npx",
        ("-y", "pkg", "/home/u/data"),
        "/home/u",
    )
    assert dict(files.env) == {"KEY": "t0k", "MODE": "fast"}
    assert (files.request_timeout, files.connect_timeout) == (2.5, 30.0)
    assert (remote.transport, remote.url, dict(remote.headers)) == (
        "auto",
        "https://example.com/mcp",
        {"Authorization": "Bearer t0k"},
    )
    assert remote.auth == {"scope": "a"}
    # health checks: by default only for servers reached by URL
    assert (files.ping_interval, remote.ping_interval) == (None, 30.0)
    quiet = parse_config(
        {
            "mcpServers": {
                "r": {"url": "http://h", "pingInterval": 0},
                "s": {"command": "a", "pingInterval": 5},
            }
        }
    )
    assert (quiet["r"].ping_interval, quiet["s"].ping_interval) == (None, 5.0)
    # a health check waits healthTimeout for its answer (10 s by default), not connectTimeout
    assert (files.health_timeout, remote.health_timeout) == (10.0, 10.0)
    bounded = parse_config({"mcpServers": {"r": {"url": "http://h", "healthTimeout": 2}}})
    assert bounded["r"].health_timeout == 2.0


def test_the_servers_shape_with_explicit_types(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(
        json.dumps(
            {
                "servers": {
                    "a": {"type": "stdio", "command": "srv"},
                    "b": {"type": "http", "url": "http://127.0.0.1:1/mcp"},
                    "c": {"type": "sse", "url": "http://127.0.0.1:1/sse"},
                    "d": {"type": "streamable-http", "url": "http://127.0.0.1:1/mcp"},
                    "e": {"type": "http", "url": "http://h/${env:TOKEN}/$$x"},
                }
            }
        )
    )
    config = load_config(path, ENV)
    assert [s.transport for s in config.servers] == ["stdio", "http", "sse", "http", "http"]
    assert config["e"].url == "http://h/t0k/$x"


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ([], "a configuration is a JSON object"),
        ({"other": {}}, "needs an 'mcpServers'"),
        ({"mcpServers": []}, "mcpServers must be an object"),
        ({"mcpServers": {"x": 1}}, "mcpServers.x: an entry must be an object"),
        ({"mcpServers": {"x": {}}}, "mcpServers.x: an entry needs a 'command'"),
        (
            {"mcpServers": {"x": {"command": 5}}},
            "mcpServers.x.command: expected a string, got a number",
        ),
        (
            {"mcpServers": {"x": {"command": "a", "args": "b"}}},
            "mcpServers.x.args: expected an array, got a string",
        ),
        (
            {"mcpServers": {"x": {"command": "a", "args": ["b", 1]}}},
            r"mcpServers.x.args\[1\]: expected a string",
        ),
        (
            {"mcpServers": {"x": {"command": "a", "env": {"K": None}}}},
            "mcpServers.x.env.K: expected a string, got null",
        ),
        (
            {"mcpServers": {"x": {"command": "${NOPE}"}}},
            "mcpServers.x.command: environment variable NOPE is not set",
        ),
        (
            {"mcpServers": {"x": {"command": "a", "args": ["${NOPE}"]}}},
            r"mcpServers.x.args\[0\]: environment variable NOPE",
        ),
        (
            {"mcpServers": {"x": {"url": "http://h", "headers": {"A": "${NOPE}"}}}},
            "mcpServers.x.headers.A: environment",
        ),
        (
            {"mcpServers": {"x": {"command": "a", "url": "http://h"}}},
            "mcpServers.x.url: a stdio server",
        ),
        ({"mcpServers": {"x": {"url": "ftp://h"}}}, "mcpServers.x.url: 'ftp://h' is not an http"),
        (
            {"servers": {"x": {"type": "ws", "url": "http://h"}}},
            "servers.x.type: 'ws' is not one of",
        ),
        (
            {"servers": {"x": {"type": "http", "command": "a"}}},
            "servers.x.command: a server reached by URL",
        ),
        ({"servers": {"x": {"type": "http"}}}, "servers.x.url: an HTTP server needs a url"),
        (
            {"mcpServers": {"x": {"command": "a", "connectTimeout": 0}}},
            "mcpServers.x.connectTimeout: expected a positive",
        ),
        (
            {"mcpServers": {"x": {"command": "a", "healthTimeout": -1}}},
            "mcpServers.x.healthTimeout: expected a positive",
        ),
        (
            {"mcpServers": {"x": {"command": "a", "pingInterval": "often"}}},
            "mcpServers.x.pingInterval: expected a positive",
        ),
        (
            {"mcpServers": {"x": {"command": "a", "disabled": "no"}}},
            "mcpServers.x.disabled: expected true or false",
        ),
        (
            {"mcpServers": {"a b": {"command": "a"}, "a_b": {"command": "b"}}},
            "mcpServers.a_b: the name gives the same tool prefix as 'a b'",
        ),
    ],
)
def test_a_bad_configuration_names_the_entry_and_field(document: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_config(document, ENV)


def test_a_file_that_is_not_json_or_missing(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    with pytest.raises(ConfigError, match="bad.json is not JSON"):
        load_config(bad)
    with pytest.raises(ConfigError, match="cannot read .*missing.json"):
        load_config(tmp_path / "missing.json")


def test_the_naming_rule() -> None:
    assert server_prefix("my server/1") == "my-server-1"
    assert server_prefix("everything_http") == "everything-http"
    names = qualified_names("my server", ["echo", "say hi", "say_hi", "a.b-c"])
    assert names == {
        "my-server_echo": "echo",
        "my-server_say_hi": "say hi",
        "my-server_say_hi_2": "say_hi",
        "my-server_a.b-c": "a.b-c",
    }
    long = qualified_names("s", ["x" * 200])
    (name,) = long
    assert len(name) == 128 and name.startswith("s_xxx")


def test_the_host_and_the_gateway_name_tools_by_one_rule() -> None:
    """A tool of server ``weather`` is ``weather_forecast`` behind a Host and behind
    the gateway (Proxy/mount), by one function; a server name the gateway would
    refuse as a prefix (``my_server``) gets the prefix the gateway accepts."""
    assert qualified_names("weather", ["forecast"]) == {
        prefixed_name("weather", "forecast"): "forecast"
    }
    assert prefixed_name("weather", "forecast") == "weather_forecast"
    prefix = server_prefix("my_server")
    assert re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9.-]*", prefix)
    assert qualified_names("my_server", ["go"]) == {prefixed_name(prefix, "go"): "go"}
    # Split at the first underscore, a name says its server: no two servers share one.
    assert clashing_servers(["a", "a_b", "a-b"]) == [("a_b", "a-b")]
