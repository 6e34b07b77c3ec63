"""``mcp-codegen`` in a project of its own: no configuration, ``--output`` and
``--package``, the shipped pins and corrections and a project's overrides, and
schemas from the per-user cache (filled from upstream at the pinned commit),
verified, with an error that says what to do when there is no way to get one."""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

from conftest import REPO, SCHEMA_MIRROR, importing
from test_codegen_cli import assert_one_line_error

REVISION = "2025-11-25"
COMMIT = "b0f60ba5409db7a6582440a7b473cc0398890f15"


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def run_in(project: Path, cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The command in ``project`` with ``cache`` as the user's cache and no
    way out: upstream fetches go to a closed loopback port."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k.lower() not in ("no_proxy", "https_proxy", "http_proxy")
    }
    proxy = f"http://127.0.0.1:{_closed_port()}"
    env.update(XDG_CACHE_HOME=str(cache), https_proxy=proxy, http_proxy=proxy, PYTHONHASHSEED="0")
    return subprocess.run(
        [sys.executable, "-m", "mcpbind_codegen", *args],
        cwd=project,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def cached(cache: Path) -> Path:
    target = cache / "mcp-codegen" / "schemas" / REVISION / "schema.json"
    target.parent.mkdir(parents=True)
    shutil.copyfile(SCHEMA_MIRROR / REVISION / "schema.json", target)
    return target


def test_generate_into_a_project_without_configuration(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    cached(tmp_path / "cache")
    result = run_in(
        project,
        tmp_path / "cache",
        "--revision",
        REVISION,
        "--output",
        "src",
        "--package",
        "myproj.mcp",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"generated myproj.mcp.v2025_11_25 ({REVISION})\n"
    package = project / "src" / "myproj" / "mcp"
    # The shipped corrections apply, and the package is the committed one under another name.
    header = (package / "v2025_11_25" / "types.py").read_text().split('"""')[0]
    assert (
        "#   tool-input-schema-open: /$defs/Tool/properties/inputSchema/additionalProperties"
        in header
    )
    committed = (REPO / "generated" / "mcpbind_protocol" / "v2025_11_25" / "types.py").read_text()
    assert (package / "v2025_11_25" / "types.py").read_text() == committed
    assert '"2025-11-25": "myproj.mcp.v2025_11_25"' in (package / "__init__.py").read_text()
    probe = "import myproj.mcp.v2025_11_25 as m; print(m.PROTOCOL_VERSION, m.STATUS)"
    imported = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=project,
        capture_output=True,
        text=True,
        env=importing("src"),
    )
    assert imported.stdout == f"{REVISION} released\n", imported.stderr


def test_without_a_package_name_the_error_says_so(tmp_path: Path) -> None:
    result = run_in(tmp_path, tmp_path / "cache", "--revision", REVISION)
    assert_one_line_error(result, "no package name: pass --package NAME")
    result = run_in(tmp_path, tmp_path / "cache", "--revision", REVISION, "--package", "my-proj")
    assert_one_line_error(result, "invalid package name 'my-proj'")


def test_offline_the_error_says_what_to_do(tmp_path: Path) -> None:
    result = run_in(tmp_path, tmp_path / "cache", "--revision", REVISION, "--package", "myproj_mcp")
    url = f"https://raw.githubusercontent.com/modelcontextprotocol/modelcontextprotocol/{COMMIT}/schema/{REVISION}/schema.json"
    store = tmp_path / "cache" / "mcp-codegen" / "schemas"
    assert_one_line_error(
        result,
        f"schema for {REVISION} not found",
        f"download {url}",
        f"--schema FILE --revision {REVISION}",
        f"save it as {store / REVISION / 'schema.json'}",
    )
    assert not (tmp_path / "myproj_mcp").exists()


def test_cached_schema_is_verified(tmp_path: Path) -> None:
    target = cached(tmp_path / "cache")
    target.write_bytes(target.read_bytes().replace(b"Tool", b"Tooool", 1))
    result = run_in(tmp_path, tmp_path / "cache", "--revision", REVISION, "--package", "myproj_mcp")
    assert_one_line_error(result, f"sha256 mismatch for {REVISION} from {target}")


def test_project_corrections_override_the_shipped_ones_by_id(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "mcp").mkdir(parents=True)
    (project / "pyproject.toml").write_text(
        '[tool.mcp-codegen]\npackage = "ours"\noutput = "src"\ncorrections = "mcp/corrections.toml"\n'
    )
    # The same id, for no revision: this project does without that correction.
    (project / "mcp" / "corrections.toml").write_text(
        '[[correction]]\nid = "tool-output-schema-open"\nrevisions = []\n'
        'pointer = "/{defs}/Tool/properties/outputSchema/additionalProperties"\nreason = "not wanted here"\nvalue = {}\n'
    )
    cached(tmp_path / "cache")
    result = run_in(project, tmp_path / "cache", "--revision", REVISION)
    assert result.returncode == 0, result.stderr
    header = (project / "src" / "ours" / "v2025_11_25" / "types.py").read_text().split('"""')[0]
    assert "tool-input-schema-open" in header and "tool-output-schema-open" not in header


def test_runtime_learns_revisions_from_the_generated_package(tmp_path: Path) -> None:
    """Generated is spoken: a pinned revision and an unpinned one, no list edited;
    a client asks for the newest released one unless told otherwise."""
    cached(tmp_path / "cache")
    unpinned = tmp_path / "next.json"
    shutil.copyfile(SCHEMA_MIRROR / REVISION / "schema.json", unpinned)
    for args in (
        ["--revision", REVISION],
        ["--revision", "2025-12-01", "--schema", str(unpinned), "--no-verify"],
    ):
        result = run_in(tmp_path, tmp_path / "cache", *args, "--package", "both_mcp")
        assert result.returncode == 0, result.stderr
    probe = (
        "from mcpbind._core import lifecycle; from mcpbind._client.client import Client; "
        "b = lifecycle.bindings('both_mcp'); "
        "print(b.handshake_versions, b.revision('2025-12-01').status, "
        "Client(name='c', version='0', package='both_mcp').protocol_version, "
        "Client(name='c', version='0', package='both_mcp', protocol_version='2025-12-01').versions)"
    )
    shown = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=importing("."),
    )
    assert (
        shown.stdout
        == "('2025-11-25', '2025-12-01') unpinned 2025-11-25 ['2025-11-25', '2025-12-01']\n"
    ), shown.stderr


def test_pin_and_generate_is_enough_to_speak_a_new_revision(tmp_path: Path) -> None:
    """A project pins a revision the shipped pins do not know; generating it
    makes a released revision that the runtime speaks."""
    mirror = tmp_path / "mirror" / "2026-12-01" / "schema.json"
    mirror.parent.mkdir(parents=True)
    shutil.copyfile(SCHEMA_MIRROR / REVISION / "schema.json", mirror)
    digest = hashlib.sha256(mirror.read_bytes()).hexdigest()
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text(
        '[tool.mcp-codegen]\npackage = "new_mcp"\noutput = "."\nsources = ["mirror:../mirror"]\npins = "pins.toml"\n'
    )
    (project / "pins.toml").write_text(
        f'[revisions."2026-12-01"]\npath = "schema/2026-12-01/schema.json"\nsha256 = "{digest}"\n'
    )
    result = run_in(project, tmp_path / "cache", "--all")
    assert result.returncode == 0, result.stderr
    assert "corrections carried forward from 2026-07-28" in result.stderr
    probe = (
        "from mcpbind._client.client import Client; import new_mcp.v2026_12_01 as m; "
        "print(m.STATUS, Client(name='c', version='0', package='new_mcp').protocol_version)"
    )
    shown = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=project,
        capture_output=True,
        text=True,
        env=importing("."),
    )
    assert shown.stdout == "released 2026-12-01\n", shown.stderr
