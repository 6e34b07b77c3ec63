"""Running mypy --strict over fixture modules whose expected errors are marked by line.

A line marked ``# E: <code>`` (optionally followed by part of the message) must get
exactly that error from mypy, every other line none.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from conftest import REPO

MARK = re.compile(r"#\s*E:\s*(?P<code>[a-z-]+)(?:\s+(?P<text>.*\S))?\s*$")
ERROR = re.compile(
    r"^(?P<path>[^:]+):(?P<line>\d+): error: (?P<message>.*?)\s+\[(?P<code>[a-z-]+)\]$"
)

# mypy's errors, by file name and line: (code, message) each.
Errors = dict[str, dict[int, list[tuple[str, str]]]]


def expected_errors(path: Path) -> dict[int, tuple[str, str | None]]:
    """The marked lines of ``path``: (code, part of the message or None)."""
    marks = {}
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        match = MARK.search(line)
        if match:
            marks[number] = (match["code"], match["text"])
    return marks


def mypy_strict(
    modules: Sequence[Path], cache_dir: Path, cwd: Path = REPO, config: bool = True
) -> Errors:
    """Run ``mypy --strict`` once over ``modules`` (with the repository's configuration
    when ``config``), the generated packages and the runtime on its path."""
    env = {
        **os.environ,
        "MYPYPATH": os.pathsep.join(str(REPO / p) for p in ("generated", "runtime")),
    }
    options = ["--config-file", str(REPO / "pyproject.toml")] if config else []
    command = [
        sys.executable, "-m", "mypy", "--strict", *options,
        "--cache-dir", str(cache_dir),
        "--show-error-codes", "--no-error-summary", "--no-pretty", "--no-color-output",
        *(str(p.relative_to(cwd)) for p in modules),
    ]  # fmt: skip
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode in (0, 1), result.stdout + result.stderr
    errors: Errors = {}
    for line in result.stdout.splitlines():
        if ": note: " in line:
            continue
        match = ERROR.match(line)
        assert match, f"unexpected mypy output: {line}\n{result.stderr}"
        errors.setdefault(Path(match["path"]).name, {}).setdefault(int(match["line"]), []).append(
            (match["code"], match["message"])
        )
    return errors
