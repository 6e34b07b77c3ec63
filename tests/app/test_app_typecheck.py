"""mypy holds a server written with the app layer to what the wire carries.

The modules in tests/app/typecheck/ are checked with ``mypy --strict`` (and the
repository's configuration) in one run, as tests/protocol/test_methods_typecheck.py
does for the generated interfaces: a line marked ``# E: <code>`` (optionally
followed by part of the message) must get exactly that error, every other line
none. ``app_mistakes.py`` plants the typical mistakes (a prompt or completion
returning ``int``, a misspelled tool annotation, the lifespan state, headers
and session state used wrongly); ``app_ok.py`` is a clean production-style server.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

FIXTURES = Path(__file__).resolve().parent / "typecheck"
MODULES = sorted(FIXTURES.glob("*.py"))
_MARK = re.compile(r"#\s*E:\s*(?P<code>[a-z-]+)(?:\s+(?P<text>.*\S))?\s*$")
_ERROR = re.compile(
    r"^(?P<path>[^:]+):(?P<line>\d+): error: (?P<message>.*?)\s+\[(?P<code>[a-z-]+)\]$"
)


def expected_errors(path: Path) -> dict[int, tuple[str, str | None]]:
    marks = {}
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        match = _MARK.search(line)
        if match:
            marks[number] = (match["code"], match["text"])
    return marks


@pytest.fixture(scope="module")
def mypy_errors(
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, dict[int, list[tuple[str, str]]]]:
    env = {
        **os.environ,
        "MYPYPATH": os.pathsep.join(str(REPO / p) for p in ("generated", "runtime")),
    }
    command = [
        sys.executable, "-m", "mypy", "--strict",
        "--config-file", str(REPO / "pyproject.toml"),
        "--cache-dir", str(tmp_path_factory.mktemp("mypy-cache")),
        "--show-error-codes", "--no-error-summary", "--no-pretty", "--no-color-output",
        *(str(p.relative_to(REPO)) for p in MODULES),
    ]  # fmt: skip
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode in (0, 1), result.stdout + result.stderr
    errors: dict[str, dict[int, list[tuple[str, str]]]] = {}
    for line in result.stdout.splitlines():
        if ": note: " in line:
            continue
        match = _ERROR.match(line)
        assert match, f"unexpected mypy output: {line}"
        errors.setdefault(Path(match["path"]).name, {}).setdefault(int(match["line"]), []).append(
            (match["code"], match["message"])
        )
    return errors


def test_every_planted_mistake_is_marked() -> None:
    marks = expected_errors(FIXTURES / "app_mistakes.py")
    assert len(marks) >= 10 and not expected_errors(FIXTURES / "app_ok.py")


@pytest.mark.parametrize("path", MODULES, ids=[p.stem for p in MODULES])
def test_mypy_reports_exactly_the_marked_errors(
    path: Path, mypy_errors: dict[str, dict[int, list[tuple[str, str]]]]
) -> None:
    found = mypy_errors.get(path.name, {})
    expected = expected_errors(path)
    assert sorted(found) == sorted(
        expected
    ), f"errors on lines {sorted(found)}, marked {sorted(expected)}: {found}"
    for line, (code, text) in expected.items():
        codes = [c for c, _ in found[line]]
        assert codes == [code], (line, found[line])
        if text:
            assert text in found[line][0][1], (line, found[line][0][1])
