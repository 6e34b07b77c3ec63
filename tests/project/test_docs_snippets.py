"""The Python blocks of README.md and docs/ marked runnable run as written.

A fenced block is runnable when the line just before it is an HTML comment
(invisible on GitHub and on the documentation site):

* ``<!-- runnable: server.py -->``: saved as ``server.py``;
* ``<!-- runnable: client.py run -->``: saved as ``client.py``, then run with
  ``python client.py``; it must exit 0 within a minute;
* ``<!-- runnable: output client.py -->``: a text block whose lines begin
  lines that the run of ``client.py`` prints, in that order (what follows on a
  printed line, such as a timing, is not compared).

Each document's blocks go into a scratch directory of their own outside the
repository and run there against the packages of this tree, in the order of the
document once all its files are saved; then mypy --strict checks them all, so
the typed claims of the documents hold too. docs/contributing.md describes the
convention to writers.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
MARKER = re.compile(
    r"^<!-- runnable: (?:(?P<output>output) )?(?P<file>[\w.-]+\.py)(?P<run> run)? -->$"
)
FENCE = re.compile(r"^(?P<fence>`{3,})(?P<info>\S*)")
RUN_TIMEOUT = 60


@dataclass
class Document:
    """The runnable blocks of one Markdown file."""

    path: Path
    files: dict[str, str] = field(default_factory=dict)
    runs: list[str] = field(default_factory=list)
    outputs: dict[str, list[str]] = field(default_factory=dict)


def parse(path: Path) -> Document:
    document = Document(path)
    lines = path.read_text().splitlines()
    for number, line in enumerate(lines):
        marker = MARKER.match(line.strip())
        if marker is None:
            if line.strip().startswith("<!-- runnable"):
                raise AssertionError(f"{path.name}:{number + 1}: malformed marker {line.strip()!r}")
            continue
        fence = FENCE.match(lines[number + 1]) if number + 1 < len(lines) else None
        if fence is None:
            raise AssertionError(
                f"{path.name}:{number + 1}: a runnable marker must precede a fenced block"
            )
        end = lines.index(fence["fence"], number + 2)
        body = lines[number + 2 : end]
        name = marker["file"]
        if marker["output"]:
            document.outputs[name] = [text for text in body if text.strip()]
            continue
        assert fence["info"] == "python", f"{path.name}:{number + 1}: runnable blocks are python"
        assert name not in document.files, f"{path.name}:{number + 1}: {name} saved twice"
        document.files[name] = "\n".join(body) + "\n"
        if marker["run"]:
            document.runs.append(name)
    for name in document.outputs:
        assert name in document.runs, f"{path.name}: output of {name}, which is not run"
    return document


RUNNABLE = [document for document in map(parse, DOCUMENTS) if document.files]


def test_the_readme_quick_start_is_runnable() -> None:
    readme = next(document for document in RUNNABLE if document.path.name == "README.md")
    assert {"server.py", "client.py"} <= set(readme.files)
    assert "client.py" in readme.runs and "client.py" in readme.outputs


def _environment() -> dict[str, str]:
    # The blocks import the packages of this tree (its source roots, as an editable install
    # puts them on the path), not whichever checkout the environment happens to have installed.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    roots = os.pathsep.join(str(ROOT / root) for root in ("codegen", "generated", "runtime"))
    env["PYTHONPATH"] = env["MYPYPATH"] = roots
    env["PYTHONUNBUFFERED"] = "1"
    return env


@pytest.mark.parametrize("document", RUNNABLE, ids=lambda d: str(d.path.relative_to(ROOT)))
def test_runnable_blocks(document: Document, tmp_path_factory: pytest.TempPathFactory) -> None:
    scratch = tmp_path_factory.mktemp(document.path.stem)
    assert ROOT not in scratch.parents
    for name, text in document.files.items():
        (scratch / name).write_text(text)
    for name in document.runs:
        done = subprocess.run(
            [sys.executable, name],
            cwd=scratch,
            env=_environment(),
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
        )
        assert done.returncode == 0, f"{name} of {document.path.name} failed:\n{done.stderr}"
        printed = iter(done.stdout.splitlines())
        for expected in document.outputs.get(name, []):
            assert any(
                line.strip().startswith(expected.strip()) for line in printed
            ), f"{name} of {document.path.name} did not print {expected!r} (in order); it printed:\n{done.stdout}"
    checked = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-error-summary",
            "--cache-dir",
            str(ROOT / "build" / "mypy-docs"),
            *document.files,
        ],
        cwd=scratch,
        env=_environment(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert (
        checked.returncode == 0
    ), f"mypy --strict on {document.path.name}:\n{checked.stdout}{checked.stderr}"
