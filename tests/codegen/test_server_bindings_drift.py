"""``mcp-codegen server --check``: a server that changes its contract fails the
check with the change named, in text and in JSON; an unchanged server passes.

The server is ours (tests/support/bindings_server.py), started in the variants a
real server drifts in: a required parameter added, a parameter renamed, an output
field retyped."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from support.peers import SUPPORT

from mcpbind_codegen.cli import main
from mcpbind_codegen.servers import drift, snapshot

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
        (("--snapshot", "s.json", "--capability", "roots"), "--capability applies only"),
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


# ---------------------------------------------------------------- the classification table

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guides" / "server-bindings.md"
ROW = re.compile(r"^\| `(?P<change>[^`]+)` \| (?P<entity>[^|]+) \| (?P<breaking>[^|]+) \|$")


def obj(properties: dict[str, Any], *required: str, closed: bool = False) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    if closed:
        schema["additionalProperties"] = False
    return schema


S, N, INT = {"type": "string"}, {"type": "number"}, {"type": "integer"}
SN = {"type": ["string", "null"]}


def tool(
    inputs: dict[str, Any] | None = None, output: dict[str, Any] | None = None, **extra: Any
) -> dict[str, Any]:
    found = {"name": "t", "inputSchema": inputs or obj({}), **extra}
    if output is not None:
        found["outputSchema"] = output
    return found


def snap(
    tools: list[dict[str, Any]] = (),  # type: ignore[assignment]
    prompts: list[dict[str, Any]] = (),  # type: ignore[assignment]
    templates: list[dict[str, Any]] = (),  # type: ignore[assignment]
    revision: str = "2025-11-25",
) -> snapshot.Snapshot:
    return snapshot.Snapshot(
        {"name": "s", "version": "1"}, revision, list(tools), list(prompts), list(templates)
    )


def prompt(*arguments: tuple[str, bool]) -> dict[str, Any]:
    return {"name": "p", "arguments": [{"name": n, "required": r} for n, r in arguments]}


def template(uri: str) -> dict[str, Any]:
    return {"name": "r", "uriTemplate": uri}


# The change (as reported) -> cases of (before, after, breaking).
CASES: dict[str, list[tuple[snapshot.Snapshot, snapshot.Snapshot, bool]]] = {
    "removed": [(snap([tool()]), snap(), True), (snap(prompts=[prompt()]), snap(), True)],
    "added": [
        (snap(), snap([tool()]), False),
        (snap(), snap(templates=[template("a://{x}")]), False),
    ],
    "parameter added": [(snap([tool()]), snap([tool(obj({"a": S}))]), False)],
    "required parameter added": [(snap([tool()]), snap([tool(obj({"a": S}, "a"))]), True)],
    "parameter removed": [(snap([tool(obj({"a": S}))]), snap([tool()]), True)],
    "parameter retyped": [
        (snap([tool(obj({"a": N}))]), snap([tool(obj({"a": INT}))]), True),
        (snap([tool(obj({"a": SN}))]), snap([tool(obj({"a": S}))]), True),
        (snap([tool(obj({"a": INT}))]), snap([tool(obj({"a": N}))]), False),
        (snap([tool(obj({"a": S}))]), snap([tool(obj({"a": SN}))]), False),
        (snap([tool(obj({"a": {"enum": ["x"]}}))]), snap([tool(obj({"a": S}))]), False),
    ],
    "parameter made required": [
        (snap([tool(obj({"a": S}))]), snap([tool(obj({"a": S}, "a"))]), True)
    ],
    "parameter made optional": [
        (snap([tool(obj({"a": S}, "a"))]), snap([tool(obj({"a": S}))]), False)
    ],
    "output schema added": [(snap([tool()]), snap([tool(output=obj({"a": S}))]), False)],
    "output schema removed": [(snap([tool(output=obj({"a": S}))]), snap([tool()]), True)],
    "output field added": [
        (snap([tool(output=obj({}))]), snap([tool(output=obj({"a": S}))]), False),
        (snap([tool(output=obj({}, closed=True))]), snap([tool(output=obj({"a": S}))]), True),
    ],
    "output field removed": [
        (snap([tool(output=obj({"a": S}, "a"))]), snap([tool(output=obj({"b": S}))]), True),
        (snap([tool(output=obj({"a": S}))]), snap([tool(output=obj({"b": S}))]), False),
    ],
    "output field retyped": [
        (snap([tool(output=obj({"a": SN}))]), snap([tool(output=obj({"a": S}))]), False),
        (snap([tool(output=obj({"a": N}))]), snap([tool(output=obj({"a": INT}))]), False),
        (
            snap([tool(output=obj({"a": S}))]),
            snap([tool(output=obj({"a": {"const": "x"}}))]),
            False,
        ),
        (snap([tool(output=obj({"a": S}))]), snap([tool(output=obj({"a": SN}))]), True),
        (snap([tool(output=obj({"a": INT}))]), snap([tool(output=obj({"a": N}))]), True),
        (snap([tool(output=obj({"a": INT}))]), snap([tool(output=obj({"a": S}))]), True),
    ],
    "output field made required": [
        (snap([tool(output=obj({"a": S}))]), snap([tool(output=obj({"a": S}, "a"))]), False)
    ],
    "output field made optional": [
        (snap([tool(output=obj({"a": S}, "a"))]), snap([tool(output=obj({"a": S}))]), True)
    ],
    "task support changed": [
        (snap([tool()]), snap([tool(execution={"taskSupport": "optional"})]), False),
        (snap([tool()]), snap([tool(execution={"taskSupport": "required"})]), True),
    ],
    "argument added": [(snap(prompts=[prompt()]), snap(prompts=[prompt(("a", False))]), False)],
    "required argument added": [
        (snap(prompts=[prompt()]), snap(prompts=[prompt(("a", True))]), True)
    ],
    "argument removed": [(snap(prompts=[prompt(("a", False))]), snap(prompts=[prompt()]), True)],
    "argument made required": [
        (snap(prompts=[prompt(("a", False))]), snap(prompts=[prompt(("a", True))]), True)
    ],
    "argument made optional": [
        (snap(prompts=[prompt(("a", True))]), snap(prompts=[prompt(("a", False))]), False)
    ],
    "URI template changed": [
        (snap(templates=[template("a://{x}")]), snap(templates=[template("b://{x}")]), False),
        (snap(templates=[template("a://{x}")]), snap(templates=[template("a://{y}")]), True),
    ],
    "protocol revision changed": [(snap(), snap(revision="2026-07-28"), False)],
    "description changed": [(snap([tool(description="a")]), snap([tool(description="b")]), False)],
}


def guide_rows() -> dict[str, str]:
    rows = {}
    for line in GUIDE.read_text().splitlines():
        match = ROW.match(line.strip())
        if match:
            rows[match["change"]] = match["breaking"].strip()
    return rows


def test_the_guides_classification_table_is_the_one_tested() -> None:
    assert set(guide_rows()) == set(CASES)


@pytest.mark.parametrize("change", sorted(CASES))
def test_each_row_of_the_classification_table(change: str) -> None:
    """Breaking means: code generated from the older snapshot breaks on the newer
    server (a call it makes is refused, or a result it receives does not decode)."""
    for before, after, breaking in CASES[change]:
        report = drift.compare(before, after)
        found = [c for c in report.changes if c.change == change]
        assert len(found) == 1, (change, report.changes)
        assert found[0].breaking is breaking, (change, found[0])
        assert report.breaking is breaking, (change, report.changes)
    row = guide_rows()[change]
    always = {"always": True, "never": False}
    word = row.split(",")[0]
    if word in always:
        assert {b for _, _, b in CASES[change]} == {always[word]}, row
    else:
        assert {b for _, _, b in CASES[change]} == {True, False}, (change, "both sides tested")
