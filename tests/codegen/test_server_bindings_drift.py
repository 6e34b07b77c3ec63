"""``mcp-codegen server --check``: a server that changes its contract fails the
check with the change named, in text and in JSON; an unchanged server passes.

The server is ours (tests/support/bindings_server.py), started in the variants a
real server drifts in: a required parameter added, a parameter renamed, an output
field retyped."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from support.peers import SUPPORT

from mcp_codegen.cli import main
from mcp_codegen.servers import drift, snapshot

SERVER = [sys.executable, str(SUPPORT / "bindings_server.py")]


def cli(*args: str) -> Result:
    return CliRunner().invoke(main, ["server", *args])


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    output = tmp_path_factory.mktemp("drift") / "kitchen.py"
    result = cli("--stdio", " ".join(SERVER), "-o", str(output))
    assert result.exit_code == 0, result.output
    return output


def check(output: Path, variant: str, *extra: str) -> Result:
    return cli("--stdio", " ".join([*SERVER, variant]), "-o", str(output), "--check", *extra)


def test_an_unchanged_server_passes(generated: Path) -> None:
    result = check(generated, "base")
    assert result.exit_code == 0, result.output
    assert "no drift" in result.output


def test_a_new_required_parameter_fails_the_check_naming_it(generated: Path) -> None:
    result = check(generated, "added-required")
    assert result.exit_code == 1
    assert "tool `plan_trip`: required parameter added `budget`" in result.output
    assert "(breaking)" in result.output


def test_a_renamed_parameter_fails_the_check_naming_both_names(generated: Path) -> None:
    result = check(generated, "renamed", "--json")
    assert result.exit_code == 1
    report = json.loads(result.output)
    assert report["drift"] is True and report["breaking"] is True
    changes = {(c["change"], c["path"]): c for c in report["changes"]}
    assert changes[("parameter removed", "destination")]["detail"] == "renamed to `city`?"
    assert changes[("required parameter added", "city")]["breaking"] is True


def test_a_changed_output_field_fails_the_check_naming_it(generated: Path) -> None:
    result = check(generated, "output-changed")
    assert result.exit_code == 1
    assert "output field retyped `nights`: integer -> string (breaking)" in result.output


def test_a_newer_snapshot_is_a_source_for_the_check(generated: Path, tmp_path: Path) -> None:
    saved = snapshot.load(generated.with_name("kitchen.snapshot.json"))
    newer = snapshot.parse(json.loads(saved.to_json()), "copy")
    newer.tools = [t for t in newer.tools if t["name"] != "fail"]
    newer.prompts = []
    path = tmp_path / "newer.snapshot.json"
    snapshot.write(path, newer)
    result = cli("--snapshot", str(path), "-o", str(generated), "--check")
    assert result.exit_code == 1
    assert "tool `fail`: removed (breaking)" in result.output
    assert "prompt `greet`: removed (breaking)" in result.output


def test_a_hand_edited_module_is_reported_stale(generated: Path, tmp_path: Path) -> None:
    copy = tmp_path / "kitchen.py"
    copy.write_text(generated.read_text() + "\n# edited\n")
    copy.with_name("kitchen.snapshot.json").write_text(
        generated.with_name("kitchen.snapshot.json").read_text()
    )
    result = cli(
        "--snapshot", str(copy.with_name("kitchen.snapshot.json")), "-o", str(copy), "--check"
    )
    assert result.exit_code == 1
    assert "is not what its snapshot generates" in result.output


def test_descriptions_are_reported_without_failing() -> None:
    before = snapshot.Snapshot(
        {"name": "s", "version": "1"},
        "2025-11-25",
        [{"name": "t", "description": "a", "inputSchema": {"type": "object"}}],
    )
    after = snapshot.Snapshot(
        {"name": "s", "version": "1"},
        "2025-11-25",
        [{"name": "t", "description": "b", "inputSchema": {"type": "object"}}],
    )
    report = drift.compare(before, after)
    assert not report.drift and [c.change for c in report.changes] == ["description changed"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "name one server"),
        (("--stdio", "x", "--url", "http://h"), "given: --stdio, --url"),
        (("--config", "c.json"), "--config and --entry go together"),
        (("--url", "http://h", "--json"), "--json applies only to --check"),
        (("--stdio", "no-such-command-here"), "no-such-command-here"),
    ],
)
def test_bad_input_is_one_line_and_a_non_zero_exit(
    args: tuple[str, ...], message: str, tmp_path: Path
) -> None:
    result = cli(*args, "-o", str(tmp_path / "m.py"))
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert (
        len(lines) == 1 and lines[0].startswith("mcp-codegen: error: ") and message in lines[0]
    ), result.output
