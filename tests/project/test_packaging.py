"""What a user installs: the wheel and sdist build, install into fresh virtual
environments, and work from outside the repository: the release's version everywhere it is
written, and the README's quick start run by the installed wheel from a directory outside the
checkout, nothing of the checkout on its path.

One build (sdist, then the wheel from the sdist, as ``python -m build`` does)
is shared by the tests of this module. The fresh environments install from
the package index through pip's cache, like a user's would.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_docs_snippets import parse

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = sorted(
    p.name for p in (ROOT / "codegen" / "mcpbind_codegen" / "templates").glob("*.j2")
)


@dataclass
class Build:
    wheel: Path
    sdist: Path


# What would let an installed environment import the checkout, or mypy read it, instead of
# what was installed.
CHECKOUT_PATHS = ("PYTHONPATH", "MYPYPATH")


def run(*command: str | Path, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in CHECKOUT_PATHS}
    return subprocess.run(
        [str(c) for c in command], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


def version() -> str:
    """The version pyproject.toml gives the distribution."""
    found = re.search(r'^version = "(.+)"$', (ROOT / "pyproject.toml").read_text(), re.M)
    assert found is not None
    return found.group(1)


def checked(*command: str | Path, cwd: Path, timeout: float = 300) -> str:
    done = run(*command, cwd=cwd, timeout=timeout)
    assert (
        done.returncode == 0
    ), f"{' '.join(map(str, command))} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def fresh_venv(where: Path, *install: str | Path) -> Path:
    """A new virtual environment with ``install`` pip-installed; its python."""
    checked(sys.executable, "-m", "venv", where, cwd=where.parent)
    python = where / "bin" / "python"
    checked(
        python,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        *install,
        cwd=where.parent,
    )
    return python


@pytest.fixture(scope="module")
def build(tmp_path_factory: pytest.TempPathFactory) -> Build:
    out = tmp_path_factory.mktemp("dist")
    checked(sys.executable, "-m", "build", "--outdir", out, ROOT, cwd=out)
    (wheel,) = out.glob("mcpbind-*.whl")
    (sdist,) = out.glob("mcpbind-*.tar.gz")
    return Build(wheel, sdist)


@pytest.fixture(scope="module")
def installed_sdist(build: Build, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The python of a fresh venv with the sdist (built into a wheel by pip) and no extras."""
    return fresh_venv(tmp_path_factory.mktemp("sdist-env") / "venv", build.sdist)


@pytest.fixture(scope="module")
def installed(build: Build, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The python of a fresh venv with the wheel and no extras."""
    return fresh_venv(tmp_path_factory.mktemp("wheel-env") / "venv", build.wheel)


@pytest.fixture(scope="module")
def quick_start(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A directory outside the repository with the README's quick start files."""
    scratch = tmp_path_factory.mktemp("quickstart")
    assert ROOT not in scratch.parents
    readme = parse(ROOT / "README.md")
    for name, text in readme.files.items():
        (scratch / name).write_text(text)
    yield scratch


def test_wheel_contents(build: Build) -> None:
    names = zipfile.ZipFile(build.wheel).namelist()
    for package in ("mcpbind_codegen", "mcpbind_protocol", "mcpbind"):
        assert f"{package}/py.typed" in names
    assert [
        n.rsplit("/", 1)[1] for n in names if n.startswith("mcpbind_codegen/templates/")
    ] == TEMPLATES
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert "mcpbind_protocol/v2025_11_25/types.py" in names
    # What type checkers read of the front door.
    assert "mcpbind/__init__.pyi" in names
    # The extensions' schemas ship with the pins that name them.
    assert "mcpbind_codegen/defaults/extensions/tasks.json" in names
    assert "mcpbind_protocol/ext_tasks/types.py" in names
    assert not [
        n
        for n in names
        if n.startswith(("tests/", "mcpbind_protocol/vdraft/")) or "__pycache__" in n
    ]
    metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
    text = zipfile.ZipFile(build.wheel).read(metadata).decode()
    assert "Requires-Python: >=3.11" in text
    assert "License-Expression: MIT" in text
    assert "Requires-Dist: typing-extensions>=4.10" in text
    for extra in ("codegen", "http", "docs", "test", "bench"):
        assert f"Provides-Extra: {extra}" in text


def test_sdist_contents(build: Build) -> None:
    names = {name.split("/", 1)[1] for name in tarfile.open(build.sdist).getnames() if "/" in name}
    for needed in (
        "LICENSE",
        "README.md",
        "CHANGELOG.md",
        "pyproject.toml",
        "mkdocs.yml",
        "schema/pins.toml",
    ):
        assert needed in names
    assert "runtime/mcpbind/py.typed" in names
    assert not [n for n in names if "node_modules" in n or "__pycache__" in n]


def test_the_version_is_the_same_everywhere_it_is_written(build: Build) -> None:
    """pyproject.toml, ``mcpbind.__version__``, the newest release of CHANGELOG.md (under
    an empty [Unreleased]) and the names of the wheel and the sdist say one version."""
    released = version()
    assert build.wheel.name.startswith(f"mcpbind-{released}-")
    assert build.sdist.name == f"mcpbind-{released}.tar.gz"
    init = (ROOT / "runtime" / "mcpbind" / "__init__.py").read_text()
    assert f'__version__ = "{released}"' in init
    sections = re.findall(r"^## \[([^]]+)\](.*)$", (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert sections[0] == ("Unreleased", "")
    assert sections[1][0] == released and re.fullmatch(r" - \d{4}-\d{2}-\d{2}", sections[1][1])


@pytest.mark.parametrize("install", ["installed", "installed_sdist"])
def test_the_installed_package_is_the_release(
    install: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """Each install, run from outside the checkout, imports its own copy and reports the
    release's version."""
    python: Path = request.getfixturevalue(install)
    out = checked(
        python,
        "-c",
        "import importlib.metadata, mcpbind, mcpbind_protocol, mcpbind_codegen; "
        "print(mcpbind.__version__, importlib.metadata.version('mcpbind')); "
        "print(mcpbind.__file__, mcpbind_protocol.__file__, mcpbind_codegen.__file__, sep='\\n')",
        cwd=tmp_path,
    )
    versions, *files = out.splitlines()
    assert versions == f"{version()} {version()}"
    venv = python.parent.parent
    for file in files:
        assert Path(file).is_relative_to(venv) and not Path(file).is_relative_to(ROOT), file


def test_quick_start_against_the_wheel(installed: Path, quick_start: Path) -> None:
    """The README's server.py and client.py, saved outside the checkout, run by the wheel's
    environment (client.py starts server.py with the same python)."""
    assert not quick_start.is_relative_to(ROOT)
    where = checked(installed, "-c", "import mcpbind; print(mcpbind.__file__)", cwd=quick_start)
    assert Path(where.strip()).is_relative_to(installed.parent.parent)
    out = checked(installed, "client.py", cwd=quick_start, timeout=60)
    expected = parse(ROOT / "README.md").outputs["client.py"]
    assert out.splitlines() == expected


def test_wheel_is_visible_to_mypy(installed: Path, quick_start: Path) -> None:
    """mypy --strict on the quick start against the wheel, which tells it each front door
    name's type (``__init__.pyi``), not Any."""
    (quick_start / "front_door_types.py").write_text(
        "import mcpbind\n\nreveal_type(mcpbind.App)\nreveal_type(mcpbind.Image)\n"
    )
    out = checked(
        sys.executable,
        "-m",
        "mypy",
        "--strict",
        "--python-executable",
        installed,
        "--no-incremental",
        "server.py",
        "client.py",
        "front_door_types.py",
        cwd=quick_start,
    )
    revealed = re.findall(r'Revealed type is "(.*)"', out)
    assert len(revealed) == 2, out
    assert "mcpbind.app._app.App" in revealed[0] and "mcpbind.app._media.Image" in revealed[1]


def test_editable_install_is_visible_to_mypy(tmp_path: Path, quick_start: Path) -> None:
    python = fresh_venv(tmp_path / "venv", "-e", ROOT)
    pth = list((tmp_path / "venv").glob("lib/python*/site-packages/*mcpbind*.pth"))
    assert pth, "the editable install is not a .pth"
    assert {Path(line) for line in pth[0].read_text().split()} == {
        ROOT / "codegen",
        ROOT / "generated",
        ROOT / "runtime",
    }
    checked(
        sys.executable,
        "-m",
        "mypy",
        "--strict",
        "--python-executable",
        python,
        "--no-incremental",
        "server.py",
        "client.py",
        cwd=quick_start,
    )


def test_missing_extras_name_the_extra(installed: Path, tmp_path: Path) -> None:
    done = run(installed.parent / "mcp-codegen", "--check", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith(
        "mcp-codegen needs the 'codegen' extra: pip install 'mcpbind[codegen]'"
    )
    assert len(done.stderr.splitlines()) == 1 and "Traceback" not in done.stderr
    done = run(installed, "-c", "import mcpbind._transports.http.client.streamable", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1].startswith(
        "mcpbind._core.extras.MissingExtra: mcpbind._transports.http.client.streamable needs the 'http' extra:"
        " pip install 'mcpbind[http]'"
    )
