"""The ``mcp-codegen`` command: its errors, ``--check``, ``list``, and what it writes.

Each error is one line on stderr, a non-zero exit, and an output folder left
exactly as it was. The tests run the command in temporary projects: a folder
with a pyproject.toml holding only a [tool.mcp-codegen] table, and copies of
the repository's pins and corrections.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import shutil
import subprocess
import sys
import tarfile
import threading
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, SCHEMA_MIRROR, importing

PINS = REPO / "schema" / "pins.toml"
CORRECTIONS = REPO / "schema" / "corrections.toml"
EXTENSIONS = REPO / "schema" / "extensions"
# The installed npm peers: where published extension schemas (ext-apps) are found.
NODE_MODULES = REPO / "tests" / "peers" / "node_modules"
ERROR = "mcp-codegen: error: "


def run(cwd: Path, *args: str, seed: str = "0") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    return subprocess.run(
        [sys.executable, "-m", "mcpbind_codegen", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def _toml_value(value: Any) -> str:
    return json.dumps(value) if not isinstance(value, bool) else str(value).lower()


def make_project(
    root: Path,
    sources: list[str],
    *,
    revisions: list[str] | None = None,
    corrections: str | None = None,
    package: str = "mcpbind_protocol",
) -> Path:
    """A project with the repository's pins (or some of them) and corrections.
    With all the pins, the installed npm peers are a source too: the pins name
    a published extension schema (MCP Apps) found there."""
    root.mkdir(parents=True, exist_ok=True)
    if revisions is None:
        sources = [*sources, f"node_modules:{NODE_MODULES}"]
    table = {
        "sources": sources,
        "output": "generated",
        "package": package,
        "pins": "schema/pins.toml",
        "corrections": "schema/corrections.toml",
    }
    lines = ["[tool.mcp-codegen]", *(f"{k} = {_toml_value(v)}" for k, v in table.items())]
    (root / "pyproject.toml").write_text("\n".join(lines) + "\n")
    (root / "schema").mkdir(exist_ok=True)
    if revisions is None:
        shutil.copyfile(PINS, root / "schema" / "pins.toml")
        # The extensions it pins are schemas beside it.
        shutil.copytree(EXTENSIONS, root / "schema" / "extensions", dirs_exist_ok=True)
    else:
        with PINS.open("rb") as handle:
            pins = tomllib.load(handle)
        out = ["[upstream]", *(f"{k} = {_toml_value(v)}" for k, v in pins["upstream"].items())]
        for revision in revisions:
            out += ["", f'[revisions."{revision}"]']
            out += [f"{k} = {_toml_value(v)}" for k, v in pins["revisions"][revision].items()]
        (root / "schema" / "pins.toml").write_text("\n".join(out) + "\n")
    if corrections is None:
        shutil.copyfile(CORRECTIONS, root / "schema" / "corrections.toml")
    else:
        (root / "schema" / "corrections.toml").write_text(corrections)
    return root


def snapshot(folder: Path) -> dict[str, bytes | None]:
    """Every file's bytes and every folder (None), hidden ones included."""
    return {
        str(p.relative_to(folder)): p.read_bytes() if p.is_file() else None
        for p in sorted(folder.rglob("*"))
    }


def package_files(folder: Path) -> dict[str, bytes | None]:
    return {k: v for k, v in snapshot(folder).items() if "__pycache__" not in k}


@pytest.fixture
def populated(tmp_path: Path) -> Path:
    """A project whose output folder already holds the repository's generated code."""
    project = make_project(tmp_path / "project", [f"mirror:{SCHEMA_MIRROR}"])
    shutil.copytree(
        REPO / "generated" / "mcpbind_protocol",
        project / "generated" / "mcpbind_protocol",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    return project


def assert_one_line_error(
    result: subprocess.CompletedProcess[str], starts: str, *contains: str
) -> str:
    assert result.returncode != 0
    message = result.stderr
    assert message.endswith("\n") and message.count("\n") == 1, message
    assert message.startswith(ERROR + starts), message
    for text in contains:
        assert text in message, message
    assert "Traceback" not in result.stdout + result.stderr
    return message.rstrip("\n")


# ------------------------------------------------------------------ errors


def test_unknown_revision(populated: Path) -> None:
    before = snapshot(populated / "generated")
    result = run(populated, "--revision", "2099-01-01")
    assert_one_line_error(result, "unknown revision '2099-01-01'", "2025-11-25", "--schema")
    assert snapshot(populated / "generated") == before


def test_schema_not_found_in_any_source(tmp_path: Path) -> None:
    project = make_project(tmp_path / "project", ["store:empty-store", "mirror:empty-mirror"])
    (project / "empty-store").mkdir()
    (project / "empty-mirror").mkdir()
    shutil.copytree(
        REPO / "generated" / "mcpbind_protocol",
        project / "generated" / "mcpbind_protocol",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    before = snapshot(project / "generated")
    result = run(project, "--revision", "2025-11-25")
    assert_one_line_error(
        result,
        "schema for 2025-11-25 not found",
        f"store {project / 'empty-store' / '2025-11-25' / 'schema.json'}",
        f"mirror {project / 'empty-mirror' / '2025-11-25' / 'schema.json'}",
    )
    assert snapshot(project / "generated") == before
    assert not (project / "empty-store" / "2025-11-25").exists()


def test_sha256_mismatch(populated: Path) -> None:
    mirror = populated / "mirror"
    (mirror / "2025-11-25").mkdir(parents=True)
    data = (SCHEMA_MIRROR / "2025-11-25" / "schema.json").read_bytes()
    (mirror / "2025-11-25" / "schema.json").write_bytes(
        data.replace(b'"description"', b'"description" ', 1)
    )
    make_project(populated, ["mirror:mirror"])
    before = snapshot(populated / "generated")
    result = run(populated, "--revision", "2025-11-25")
    pinned = tomllib.loads(PINS.read_text())["revisions"]["2025-11-25"]["sha256"]
    assert_one_line_error(
        result,
        "sha256 mismatch for 2025-11-25 from ",
        str(mirror / "2025-11-25" / "schema.json"),
        f"pinned {pinned}",
    )
    assert snapshot(populated / "generated") == before


def test_extension_schema_is_pinned(populated: Path) -> None:
    """An extension's schema is ours, yet checked like a revision's: a change
    that is not also a new pin stops the generation and writes nothing."""
    fragment = populated / "schema" / "extensions" / "tasks.json"
    fragment.write_bytes(fragment.read_bytes().replace(b'"description"', b'"description" ', 1))
    before = snapshot(populated / "generated")
    result = run(populated, "--all")
    pinned = tomllib.loads(PINS.read_text())["extensions"]["tasks"]["sha256"]
    assert_one_line_error(
        result, "sha256 mismatch for extension tasks from ", str(fragment), f"pinned {pinned}"
    )
    assert snapshot(populated / "generated") == before


def _copied_apps_package(populated: Path, version: str = "2.0.4") -> Path:
    """A node_modules of the project's own holding a copy of ext-apps."""
    package = populated / "node_modules" / "@modelcontextprotocol" / "ext-apps"
    shutil.copytree(NODE_MODULES / "@modelcontextprotocol" / "ext-apps", package)
    manifest = json.loads((package / "package.json").read_text())
    (package / "package.json").write_text(json.dumps({**manifest, "version": version}))
    return package


def _only_project_node_modules(populated: Path) -> None:
    text = (populated / "pyproject.toml").read_text()
    (populated / "pyproject.toml").write_text(
        text.replace(f"node_modules:{NODE_MODULES}", "node_modules:node_modules")
    )


def test_published_extension_schema_is_pinned(populated: Path) -> None:
    """A published extension schema (an npm package's) is checked against the
    sha256 pinned for it whichever source holds it: a changed copy stops the
    generation and writes nothing."""
    _only_project_node_modules(populated)
    package = _copied_apps_package(populated)
    schema = package / "dist" / "src" / "generated" / "schema.json"
    schema.write_bytes(schema.read_bytes().replace(b'"description"', b'"description" ', 1))
    before = snapshot(populated / "generated")
    result = run(populated, "--all")
    pinned = tomllib.loads(PINS.read_text())["extensions"]["apps"]["sha256"]
    assert_one_line_error(
        result, "sha256 mismatch for extension apps from ", str(schema), f"pinned {pinned}"
    )
    assert snapshot(populated / "generated") == before


def test_published_extension_schema_of_another_version_is_not_taken(populated: Path) -> None:
    """An installed copy of another version of the package is passed over, and
    the error says what was tried and how to get the pinned one."""
    _only_project_node_modules(populated)
    _copied_apps_package(populated, version="9.9.9")
    before = snapshot(populated / "generated")
    result = run(populated, "--check")
    assert_one_line_error(
        result,
        "schema of extension apps (npm:@modelcontextprotocol/ext-apps@2.0.4/",
        "(version 9.9.9)",
        "install @modelcontextprotocol/ext-apps@2.0.4",
    )
    assert snapshot(populated / "generated") == before


def test_published_extension_schema_from_the_store(populated: Path) -> None:
    """A store holds a published schema under npm/<package>@<version>/, which
    is where one taken from the registry is saved: with it alone the
    generated package is up to date."""
    _only_project_node_modules(populated)
    stored = populated / "store" / "npm" / "@modelcontextprotocol/ext-apps@2.0.4"
    target = stored / "dist" / "src" / "generated" / "schema.json"
    target.parent.mkdir(parents=True)
    shutil.copyfile(
        NODE_MODULES / "@modelcontextprotocol/ext-apps/dist/src/generated/schema.json", target
    )
    text = (populated / "pyproject.toml").read_text()
    (populated / "pyproject.toml").write_text(
        text.replace("sources = [", 'sources = ["store:store", ')
    )
    result = run(populated, "--check")
    assert result.returncode == 0, result.stderr


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[str]:
    """A loopback npm registry serving the ext-apps 2.0.4 tarball (the
    installed copy, packed as npm packs it, under ``package/``)."""
    folder = tmp_path / "registry" / "@modelcontextprotocol" / "ext-apps" / "-"
    folder.mkdir(parents=True)
    with tarfile.open(folder / "ext-apps-2.0.4.tgz", "w:gz") as tar:
        tar.add(NODE_MODULES / "@modelcontextprotocol" / "ext-apps", arcname="package")
    handler = functools.partial(
        http.server.SimpleHTTPRequestHandler, directory=str(tmp_path / "registry")
    )
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_published_extension_schema_from_the_registry_is_saved_to_the_store(
    populated: Path, registry: str
) -> None:
    """With no installed copy, the schema comes from the package's tarball on
    the registry (``npm:<url>``; the public one with plain ``npm``), is checked
    against its pin, and is saved to the store for the next run."""
    text = (populated / "pyproject.toml").read_text()
    (populated / "pyproject.toml").write_text(
        text.replace(f'"node_modules:{NODE_MODULES}"', f'"store:store", "npm:{registry}"')
    )
    result = run(populated, "--check")
    assert result.returncode == 0, result.stderr
    saved = populated / "store" / "npm" / "@modelcontextprotocol/ext-apps@2.0.4"
    schema = saved / "dist" / "src" / "generated" / "schema.json"
    installed = NODE_MODULES / "@modelcontextprotocol/ext-apps/dist/src/generated/schema.json"
    assert schema.read_bytes() == installed.read_bytes()


def test_sha256_mismatch_with_schema_option(populated: Path) -> None:
    schema = populated / "other.json"
    schema.write_bytes((SCHEMA_MIRROR / "2025-06-18" / "schema.json").read_bytes())
    before = snapshot(populated / "generated")
    result = run(populated, "--schema", str(schema), "--revision", "2025-11-25")
    assert_one_line_error(result, "sha256 mismatch for 2025-11-25 from ")
    assert snapshot(populated / "generated") == before


def test_invalid_json(populated: Path) -> None:
    schema = populated / "broken.json"
    schema.write_text('{"definitions": {"A": ')
    before = snapshot(populated / "generated")
    result = run(populated, "--schema", str(schema), "--revision", "2099-01-01", "--no-verify")
    assert_one_line_error(result, f"invalid JSON in {schema}")
    assert snapshot(populated / "generated") == before


UNSUPPORTED = [
    (
        {
            "A": {
                "type": "object",
                "properties": {"v": {"oneOf": [{"type": "string"}, {"type": "integer"}]}},
            }
        },
        "unsupported schema keyword 'oneOf' at #/definitions/A/properties/v",
    ),
    (
        {"A": {"type": "object", "patternProperties": {"^x-": {"type": "string"}}}},
        "unsupported schema keyword 'patternProperties' at #/definitions/A",
    ),
    (
        {"A": {"type": "object", "properties": {"v": {"$ref": "#/definitions/Missing"}}}},
        "unresolvable reference '#/definitions/Missing' at #/definitions/A/properties/v",
    ),
]


@pytest.mark.parametrize(
    ("defs", "message"), UNSUPPORTED, ids=["oneOf", "patternProperties", "missing-ref"]
)
def test_unsupported_schema_construct(populated: Path, defs: dict[str, Any], message: str) -> None:
    schema = populated / "custom.json"
    schema.write_text(
        json.dumps({"$schema": "http://json-schema.org/draft-07/schema#", "definitions": defs})
    )
    before = snapshot(populated / "generated")
    result = run(populated, "--schema", str(schema), "--revision", "2099-01-01", "--no-verify")
    assert_one_line_error(result, message)
    assert snapshot(populated / "generated") == before


def test_correction_that_no_longer_applies(populated: Path) -> None:
    stale = CORRECTIONS.read_text() + (
        "\n[[correction]]\n"
        'id = "fixed-upstream"\n'
        'revisions = ["2025-11-25"]\n'
        'pointer = "/{defs}/NoSuchDefinition/properties/x/type"\n'
        'reason = "a defect that upstream has fixed"\n'
        'value = "string"\n'
    )
    (populated / "schema" / "corrections.toml").write_text(stale)
    before = snapshot(populated / "generated")
    result = run(populated, "--revision", "2025-11-25")
    assert_one_line_error(
        result,
        "correction fixed-upstream does not apply to 2025-11-25: no /$defs/NoSuchDefinition/properties/x/type",
    )
    assert snapshot(populated / "generated") == before


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--schema", "x.json"], "--schema needs exactly one --revision"),
        (["--revision", "2025-11-25", "--no-verify"], "--no-verify applies only to --schema"),
        ([], "nothing to do"),
        (["--revision", "../escape"], "invalid revision name '../escape'"),
    ],
)
def test_usage_errors(populated: Path, args: list[str], message: str) -> None:
    before = snapshot(populated / "generated")
    assert_one_line_error(run(populated, *args), message)
    assert snapshot(populated / "generated") == before


# ------------------------------------------------------------------ --check and list


def test_check_passes_on_the_repository() -> None:
    result = run(REPO, "--check")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("generated code is up to date")


@pytest.fixture(scope="module")
def generated_2024(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project with one stable pinned revision and the draft, generated from
    the mirror with --all, which leaves the draft out."""
    project = make_project(
        tmp_path_factory.mktemp("gen") / "project",
        [f"mirror:{SCHEMA_MIRROR}"],
        revisions=["2024-11-05", "draft"],
    )
    result = run(project, "--all", seed="1")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "generated mcpbind_protocol.v2024_11_05 (2024-11-05)\n"
    return project


def test_check_names_stale_files(generated_2024: Path, tmp_path: Path) -> None:
    project = tmp_path / "copy"
    shutil.copytree(generated_2024, project)
    types = project / "generated" / "mcpbind_protocol" / "v2024_11_05" / "types.py"
    types.write_text(types.read_text().replace("class TextContent(", "class TextContent2(", 1))
    (project / "generated" / "mcpbind_protocol" / "v2024_11_05" / "leftover.py").write_text("")
    before = snapshot(project / "generated")
    message = assert_one_line_error(run(project, "--check"), "generated code is stale")
    assert "generated/mcpbind_protocol/v2024_11_05/types.py" in message
    assert "generated/mcpbind_protocol/v2024_11_05/leftover.py" in message
    assert "client.py" not in message and "methods.py" not in message
    assert snapshot(project / "generated") == before  # --check writes nothing


def test_check_names_a_stale_extension(populated: Path) -> None:
    types = populated / "generated" / "mcpbind_protocol" / "ext_tasks" / "types.py"
    types.write_text(types.read_text().replace("class TaskAck(", "class TaskAck2(", 1))
    message = assert_one_line_error(run(populated, "--check"), "generated code is stale")
    assert message.endswith(": generated/mcpbind_protocol/ext_tasks/types.py"), message


def test_generation_is_deterministic(generated_2024: Path, tmp_path: Path) -> None:
    again = make_project(tmp_path / "again", [f"mirror:{SCHEMA_MIRROR}"], revisions=["2024-11-05"])
    result = run(again, "--revision", "2024-11-05", seed="2")
    assert result.returncode == 0, result.stderr
    first = package_files(generated_2024 / "generated")
    assert package_files(again / "generated") == first
    # ... and the same as the committed package.
    committed = package_files(REPO / "generated" / "mcpbind_protocol" / "v2024_11_05")
    assert {
        k.removeprefix("mcpbind_protocol/v2024_11_05/"): v
        for k, v in first.items()
        if "/v2024_11_05/" in k
    } == committed


def test_list_prints_pins() -> None:
    result = run(REPO, "list")
    assert result.returncode == 0, result.stderr
    pinned = tomllib.loads(PINS.read_text())
    pins, extensions = pinned["revisions"], pinned["extensions"]
    lines = result.stdout.splitlines()
    assert len(lines) == len(pins) + len(extensions)
    for name, pin in extensions.items():
        where = (
            f"npm:{pin['npm']}@{pin['version']}/{pin['file']}"
            if "npm" in pin
            else f"schema/{pin['path']}"
        )
        assert f"extension {name}  sha256:{pin['sha256']}  {where}  (generated)" in lines
    for revision, pin in pins.items():
        (line,) = [line for line in lines if line.startswith(f"{revision} ")]
        assert f"sha256:{pin['sha256']}" in line
        assert ("unstable" in line) == bool(pin.get("unstable"))
    assert "(generated)" in next(line for line in lines if line.startswith("2025-11-25 "))


# ------------------------------------------------------------------ what is written


def test_draft_is_marked_unstable(tmp_path: Path) -> None:
    project = make_project(
        tmp_path / "project", [f"mirror:{SCHEMA_MIRROR}"], package="draft_protocol"
    )
    result = run(project, "--revision", "draft")
    assert result.returncode == 0, result.stderr
    root = project / "generated" / "draft_protocol"
    init = (root / "vdraft" / "__init__.py").read_text()
    assert "\nUNSTABLE = True\n" in init
    for name in ("__init__.py", "types.py", "methods.py", "client.py", "server.py"):
        header = (root / "vdraft" / name).read_text().splitlines()[1]
        assert header == "# revision: draft (unstable: the specification draft)", name
    assert "UNSTABLE" in (root / "vdraft" / "types.py").read_text().split('"""')[1]
    index = (root / "__init__.py").read_text()
    assert '"draft"' not in index  # the index is tracked; the draft is not
    probe = "import draft_protocol.vdraft as d, draft_protocol as p; print(d.UNSTABLE, d.PROTOCOL_VERSION, p.STABLE_REVISIONS)"
    imported = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=project,
        capture_output=True,
        text=True,
        env=importing(root.parent),
    )
    assert imported.stdout == "True draft ()\n", imported.stderr


def test_new_revision_from_a_schema_file(tmp_path: Path) -> None:
    project = make_project(tmp_path / "project", [], package="new_protocol")
    schema = tmp_path / "schema.json"
    shutil.copyfile(SCHEMA_MIRROR / "2024-11-05" / "schema.json", schema)
    result = run(project, "--schema", str(schema), "--revision", "2099-01-01", "--no-verify")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "generated new_protocol.v2099_01_01 (2099-01-01)\n"
    root = project / "generated" / "new_protocol"
    assert sorted(p.name for p in (root / "v2099_01_01").iterdir()) == [
        "__init__.py",
        "client.py",
        "methods.py",
        "server.py",
        "types.py",
    ]
    init = (root / "v2099_01_01" / "__init__.py").read_text()
    assert "PROTOCOL_VERSION = '2099-01-01'" in init or 'PROTOCOL_VERSION = "2099-01-01"' in init
    assert '\nSTATUS = "unpinned"\n' in init  # not a released revision, nor the draft
    assert "\nUNSTABLE = False\n" in init
    probe = "import new_protocol.v2099_01_01 as v; print(len(v.DEFINITIONS), v.methods.METHODS['tools/call'].handler)"
    imported = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=project,
        capture_output=True,
        text=True,
        env=importing(root.parent),
    )
    assert imported.stdout == "79 call_tool\n", imported.stderr
    assert (root / "py.typed").is_file()
    pyflakes = subprocess.run(
        [sys.executable, "-m", "pyflakes", str(root)], capture_output=True, text=True
    )
    assert pyflakes.returncode == 0, pyflakes.stdout + pyflakes.stderr


def test_generated_code_has_no_unused_imports() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pyflakes", str(REPO / "generated")], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == ""


def test_generated_packages_are_typed() -> None:
    root = REPO / "generated" / "mcpbind_protocol"
    assert (root / "py.typed").is_file()
    with (REPO / "pyproject.toml").open("rb") as handle:
        wheel = tomllib.load(handle)["tool"]["hatch"]["build"]["targets"]["wheel"]
    # The wheel takes every file of the package folder, py.typed included
    # (tests/project/test_packaging.py checks the built wheel).
    assert "generated/mcpbind_protocol" in wheel["packages"]
