"""mypy holds a server written with the app layer to what the wire carries.

The modules in tests/app/typecheck/ are checked with ``mypy --strict`` (and the
repository's configuration) in one run, as tests/protocol/test_methods_typecheck.py
does for the generated interfaces: a line marked ``# E: <code>`` (optionally
followed by part of the message) must get exactly that error, every other line
none. ``app_mistakes.py`` plants the typical mistakes (a prompt or completion
returning ``int``, a prompt returning a Struct of its own, which the wire cannot
carry as a prompt, a misspelled tool annotation, the lifespan state, headers
and session state used wrongly); ``app_ok.py`` is a clean production-style server.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.typecheck import Errors, expected_errors, mypy_strict

FIXTURES = Path(__file__).resolve().parent / "typecheck"
MODULES = sorted(FIXTURES.glob("*.py"))


@pytest.fixture(scope="module")
def mypy_errors(tmp_path_factory: pytest.TempPathFactory) -> Errors:
    """mypy's errors, by fixture file name and line: (code, message)."""
    return mypy_strict(MODULES, tmp_path_factory.mktemp("mypy-cache"))


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
