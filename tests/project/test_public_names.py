"""The public names are a contract from 0.1.0 on: a name of the front door (``mcpbind``)
or of a public package that appears or disappears has its line in CHANGELOG.md's
``[Unreleased]`` section, and the names removed before 0.1.0 stay removed.

What counts as public, and how a name is deprecated, is in docs/contributing.md ("Public
names and deprecation"). ``public_names.txt`` lists the names of the last release; a release
rewrites it (``python tests/project/test_public_names.py --write``)."""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RELEASED = Path(__file__).with_name("public_names.txt")
CHANGELOG = ROOT / "CHANGELOG.md"

# The front door and the packages whose __all__ is their public list (docs/contributing.md).
PUBLIC_MODULES = (
    "mcpbind",
    "mcpbind.app",
    "mcpbind.auth.client",
    "mcpbind.auth.server",
    "mcpbind.bindings",
    "mcpbind.codec",
    "mcpbind.host",
    "mcpbind.http",
    "mcpbind.methods",
    "mcpbind.middleware",
    "mcpbind.serving",
    "mcpbind.stores",
    "mcpbind.telemetry",
)


def current_names() -> set[str]:
    """``module.name`` for every name the public modules list."""
    return {
        f"{module}.{name}"
        for module in PUBLIC_MODULES
        for name in importlib.import_module(module).__all__
    }


def released() -> tuple[str, set[str]]:
    """The version the listed names are those of, and the names."""
    version, *names = RELEASED.read_text().split()
    return version, set(names)


def section(changelog: str, heading: str) -> str:
    """The text of one ``## [...]`` section of the changelog."""
    found = re.search(
        rf"^## \[{re.escape(heading)}\].*?$(.*?)(?=^## \[|\Z)", changelog, re.M | re.S
    )
    assert found is not None, f"CHANGELOG.md has no [{heading}] section"
    return found.group(1)


def unlisted_changes(before: set[str], after: set[str], unreleased: str) -> list[str]:
    """The names added or removed (``module.name``) that the unreleased section does not name
    in backticks, by their full path or by the name alone."""
    return sorted(
        qualified
        for qualified in before ^ after
        if f"`{qualified}`" not in unreleased
        and f"`{qualified.rpartition('.')[2]}`" not in unreleased
    )


def test_a_public_name_added_or_removed_has_its_changelog_line() -> None:
    version, names = released()
    unreleased = section(CHANGELOG.read_text(), "Unreleased")
    missing = unlisted_changes(names, current_names(), unreleased)
    assert missing == [], (
        f"public names changed since {version} without a line naming them under "
        f"[Unreleased] in CHANGELOG.md: {missing}"
    )


def test_the_listed_names_are_those_of_the_last_release() -> None:
    version, _names = released()
    newest = re.search(r"^## \[(\d+\.\d+\.\d+)\]", CHANGELOG.read_text(), re.M)
    assert newest is not None and newest.group(1) == version


def test_a_name_changed_without_a_line_is_caught_and_one_with_a_line_is_not() -> None:
    before = {"mcpbind.App", "mcpbind.Server"}
    after = {"mcpbind.App", "mcpbind.Timer"}
    assert unlisted_changes(before, after, "- `Timer`: ...") == ["mcpbind.Server"]
    assert unlisted_changes(before, after, "- `Timer`, and `mcpbind.Server` ...") == []


REMOVED_MODULES = (
    "mcpbind.http_client",
    "mcpbind.sse_legacy",
    "mcpbind.streamable_http",
)
REMOVED_NAMES = (
    ("mcpbind._client.client", "ClientSession", "modern"),
    ("mcpbind.methods", "RequestContext", "modern"),
    ("mcpbind._core.session", "SessionContext", "modern"),
    ("mcpbind._core.lifecycle", "Bindings", "modern_versions"),
    ("mcpbind._server.server", "Server", "modern_versions"),
    ("mcpbind._core.lifecycle", None, "modern_versions"),
    ("mcpbind._core.session", None, "RequestContext"),
    ("mcpbind._server.server", None, "run_stdio"),
    ("mcpbind._server.server", None, "serve_stdio"),
)


@pytest.mark.parametrize("module", REMOVED_MODULES)
def test_the_shim_modules_removed_before_0_1_0_stay_removed(module: str) -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(module)


@pytest.mark.parametrize(("module", "owner", "name"), REMOVED_NAMES)
def test_the_deprecated_names_removed_before_0_1_0_stay_removed(
    module: str, owner: str | None, name: str
) -> None:
    place = importlib.import_module(module)
    if owner is not None:
        place = getattr(place, owner)
    assert not hasattr(place, name), f"{module}.{owner or ''}.{name} is back"


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/project/test_public_names.py --write")
    version = re.search(r'^version = "(.*)"', (ROOT / "pyproject.toml").read_text(), re.M)
    assert version is not None
    RELEASED.write_text("\n".join([version.group(1), *sorted(current_names())]) + "\n")
