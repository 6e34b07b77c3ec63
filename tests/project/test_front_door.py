"""``mcpbind`` is the front door: every name it lists resolves, to the same object as
the module that defines it, type checkers see each one (through ``__init__.pyi``, generated
from the one table: ``python tests/project/test_front_door.py --write`` rewrites it), ``import mcpbind`` costs no
import of its own modules, and without the optional extras the core names still load
while the others fail with the one-line MissingExtra error naming their extra."""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import mcpbind

ROOT = Path(__file__).resolve().parents[2]
FRONT_DOOR = ROOT / "runtime" / "mcpbind" / "__init__.py"
STUB = FRONT_DOOR.with_suffix(".pyi")
SOURCE_ROOTS = [ROOT / "runtime", ROOT / "generated", ROOT / "codegen"]


def declared() -> dict[str, tuple[str, str | None]]:
    """Each exported name: the module it loads from and the extra that module needs."""
    return {
        name: ("mcpbind" + module, extra)
        for module, (extra, names) in mcpbind._MODULES.items()
        for name in names
    }


def isort(name: str) -> tuple[int, str]:
    """The import order of the lint step (ruff's isort): constants, classes, then the rest."""
    return (0 if name.isupper() else 1 if name[0].isupper() else 2, name.lower())


def render_stub() -> str:
    """``__init__.pyi`` as the table ``_MODULES`` says it: what type checkers read."""
    lines = [
        '"""The front door as type checkers see it: generated from ``_MODULES`` in',
        '__init__.py by ``python tests/project/test_front_door.py --write``; do not edit."""',
        "",
    ]
    for module, (_extra, names) in sorted(mcpbind._MODULES.items()):
        lines += [f"from {module} import {name} as {name}" for name in sorted(names, key=isort)]
    lines += [
        "",
        "__version__: str",
        "_MODULES: dict[str, tuple[str | None, tuple[str, ...]]]",
        "_HOME: dict[str, str]",
        "",
        "__all__ = [",
        *(f'    "{name}",' for name in mcpbind.__all__),
        "]",
        "",
        "def __dir__() -> list[str]: ...",
        "",
    ]
    return "\n".join(lines)


def optional_modules() -> set[str]:
    """Top-level modules of the distributions the extras bring (the core ones excepted)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]

    def distribution(requirement: str) -> str:
        found = re.match(r"[A-Za-z0-9._-]+", requirement)
        assert found is not None, requirement
        return re.sub(r"[-_.]+", "-", found.group()).lower()

    core = {distribution(r) for r in project["dependencies"]}
    extras = (
        {
            distribution(r)
            for requirements in project["optional-dependencies"].values()
            for r in requirements
        }
        - core
        - {"mcp-codegen"}
    )
    return {
        module
        for module, distributions in importlib.metadata.packages_distributions().items()
        if any(distribution(d) in extras for d in distributions)
    }


def run_python(code: str) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(p) for p in SOURCE_ROOTS)}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


# Run first in a fresh interpreter: a finder that refuses every module of an extra.
WITHOUT_EXTRAS = """
import importlib.abc, json, sys
BLOCKED = set(json.loads(sys.argv[1]))

class Uninstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Uninstalled())
"""


def test_every_listed_name_resolves_to_its_modules_object() -> None:
    names = declared()
    assert len(mcpbind.__all__) == len(set(mcpbind.__all__)), "listed twice"
    assert set(mcpbind.__all__) == set(names)
    for name, (module, _extra) in names.items():
        assert getattr(mcpbind, name) is getattr(importlib.import_module(module), name), name
    assert set(mcpbind.__all__) <= set(dir(mcpbind))


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Sever'"):
        mcpbind.Sever  # type: ignore[attr-defined]  # noqa: B018


def test_type_checkers_are_told_the_same_modules() -> None:
    """``__init__.pyi``, which mypy and IDEs read in place of ``__init__.py``, is the one
    generated from the lazy table."""
    assert STUB.read_text() == render_stub(), (
        "mcpbind/__init__.pyi is out of date with _MODULES: "
        "run python tests/project/test_front_door.py --write"
    )


def test_the_names_are_listed_once_and_the_app_layer_is_whole() -> None:
    """One table: a name has one home, and every public name of ``mcpbind.app`` (what
    the quick starts and guides import) is at the front door too."""
    homes = [name for _extra, names in mcpbind._MODULES.values() for name in names]
    assert len(homes) == len(set(homes)), "a name listed twice"
    assert mcpbind.__all__ == homes
    app = importlib.import_module("mcpbind.app")
    assert set(app.__all__) <= set(mcpbind.__all__)


def test_the_reference_lists_the_front_door() -> None:
    """docs/reference/index.md names each module's front door names, as the table has them."""
    page = (ROOT / "docs" / "reference" / "index.md").read_text()
    for module, (_extra, names) in mcpbind._MODULES.items():
        row = f"| `mcpbind{module}` | " + ", ".join(f"`{n}`" for n in names) + " |"
        assert row in page.splitlines(), f"docs/reference/index.md lacks the row {row}"


def test_importing_the_package_imports_none_of_its_modules_nor_an_extra() -> None:
    loaded = json.loads(run_python("""
import json, sys
before = set(sys.modules)
import mcpbind
print(json.dumps(sorted(set(sys.modules) - before)))
"""))  # fmt: skip
    assert [m for m in loaded if m.startswith("mcpbind.")] == []
    assert {m.partition(".")[0] for m in loaded} & optional_modules() == set()


def test_without_extras_core_names_load_and_others_name_their_extra() -> None:
    blocked = sorted(optional_modules())
    # The check would prove nothing if the finder had nothing to refuse.
    assert {"aiohttp", "httpx2", "redis", "joserfc", "uvicorn"} <= set(blocked)
    code = WITHOUT_EXTRAS + """
import mcpbind
from mcpbind import MissingExtra
found = {}
for name in mcpbind.__all__:
    try:
        getattr(mcpbind, name)
        found[name] = None
    except MissingExtra as error:
        assert str(error).count("\\n") == 0, str(error)
        found[name] = error.extra
print(json.dumps(found))
"""
    done = subprocess.run(
        [sys.executable, "-c", code, json.dumps(blocked)],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(str(p) for p in SOURCE_ROOTS)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    expected = {name: extra for name, (_module, extra) in declared().items()}
    assert found == expected, {n: (found[n], expected[n]) for n in found if found[n] != expected[n]}


def test_mypy_sees_every_name(tmp_path: Path) -> None:
    names = sorted(mcpbind.__all__)
    source = "import mcpbind\nfrom mcpbind import (\n"
    source += "".join(f"    {name},\n" for name in names) + ")\n\n"
    source += "".join(f"reveal_type({name})\n" for name in names)
    source += "reveal_type(mcpbind.App)\n"
    (tmp_path / "front_door_use.py").write_text(source)
    env = {
        **os.environ,
        "MYPYPATH": os.pathsep.join(str(p) for p in SOURCE_ROOTS),
    }
    env.pop("PYTHONPATH", None)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-error-summary",
            "--no-pretty",
            "--cache-dir",
            str(ROOT / "build" / "mypy-docs"),
            "front_door_use.py",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    revealed = re.findall(r'Revealed type is "(.*)"', done.stdout)
    assert len(revealed) == len(names) + 1, done.stdout
    assert "Any" not in revealed, done.stdout
    assert "mcpbind.app._app.App" in revealed[-1]


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/project/test_front_door.py --write")
    STUB.write_text(render_stub())
