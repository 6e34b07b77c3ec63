"""Project automation: `nox -s tests` is what CI runs."""

from __future__ import annotations

import nox

nox.options.sessions = ["tests", "tests_newer"]
nox.options.reuse_existing_virtualenvs = True

PYTHON = "3.11"
TYPED = [
    "codegen/mcpbind_codegen",
    "generated/mcpbind_protocol",
    "runtime/mcpbind",
    "examples",
    "bench",
]


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """Up-to-date check of generated/, the lint step, mypy --strict, the documentation site
    (mkdocs build --strict), then the whole test suite (the import layers, cycles and private
    imports are checked by tests/project/test_architecture.py)."""
    session.install("-e", ".[test]")
    session.run("python", "tests/peers/install.py")
    session.run("mcp-codegen", "--check")
    lint(session)
    session.run("mypy", *TYPED)
    session.run("mkdocs", "build", "--strict", env={"NO_MKDOCS_2_WARNING": "1"})
    # Both cores (pytest-xdist): every test takes free ports and its own tmp paths.
    session.run("pytest", "-n", "2", *session.posargs)


# The newer Pythons the classifiers claim, and the part of the suite run on them: what needs
# neither Node.js, nor redis-server, nor the official SDK as a peer (the `tests` session runs
# everything on PYTHON).
NEWER = ["3.12", "3.13"]
FAST = "not node and not redis and not peers"


@nox.session(python=NEWER, download_python="never")
def tests_newer(session: nox.Session) -> None:
    """The fast part of the test suite on Python 3.12 and 3.13 (`-m "not node and not redis
    and not peers" -n 2`). An interpreter nox does not find is skipped with the reason ("Python
    interpreter 3.13 not found"; with `CI` set, pass --no-error-on-missing-interpreters, as
    .ci/run does). Under pyenv, name the versions: PYENV_VERSION=3.11.7:3.12.1:3.13.0."""
    session.install("-e", ".[test]")
    # The fast part is xdist-safe (free ports, tmp paths): both cores (pytest-xdist).
    session.run("pytest", "-m", FAST, "-n", "2", *session.posargs)


LINTED = ["codegen", "runtime", "examples", "bench", "tests", "noxfile.py"]


def lint(session: nox.Session) -> None:
    """Format (black) and lint with import order (ruff), as configured in pyproject.toml."""
    session.run("black", "--check", "--quiet", *LINTED)
    session.run("ruff", "check", "--quiet", *LINTED)


@nox.session(python=PYTHON, name="lint")
def lint_only(session: nox.Session) -> None:
    """The lint step of `tests` alone."""
    session.install("black>=24.0", "ruff>=0.6")
    lint(session)


@nox.session(python=PYTHON)
def conformance(session: nox.Session) -> None:
    """The official MCP conformance suite, requirement sets 2025-11-25 and 2026-07-28,
    against examples/everything_server.py and examples/conformance_client.py
    (pass e.g. `-- --requirements 2026-07-28 --no-client`; figures go to build/conformance/)."""
    session.install("-e", ".[test]")
    session.run("python", "tests/peers/install.py")
    session.run("python", "tests/conformance.py", *session.posargs)


@nox.session(python=PYTHON)
def conformance_sdk(session: nox.Session) -> None:
    """The official Python SDK's client (tests/support/sdk_conformance_client.py) through the
    conformance suite's client scenarios, both requirement sets: the figures set beside ours."""
    session.install("-e", ".[test]")
    session.run("python", "tests/peers/install.py")
    session.run("python", "tests/conformance.py", "--no-server", "--sdk-client", *session.posargs)


@nox.session(python=PYTHON)
def bench(session: nox.Session) -> None:
    """This project against the official Python SDK, side by side (`python -m bench`;
    pass e.g. `-- --quick`, or `-- --write` to update bench/results.json and results.md)."""
    session.install("-e", ".[bench]")
    session.run("python", "-m", "bench", *session.posargs)


@nox.session(python=PYTHON)
def generate(session: nox.Session) -> None:
    """Regenerate every pinned revision (pass e.g. `-- --revision draft` for others)."""
    session.install("-e", ".[codegen]")
    session.run("mcp-codegen", *(session.posargs or ["--all"]))
