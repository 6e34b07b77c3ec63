"""Writing generated packages without ever leaving a half-written one.

Everything is rendered in memory first; a revision package is then written to
a temporary folder beside its target and swapped in with renames, so an error
at any point leaves ``generated/`` as it was.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path


def read_tree(folder: Path) -> dict[str, str]:
    if not folder.is_dir():
        return {}
    return {
        path.name: path.read_text(encoding="utf-8")
        for path in sorted(folder.iterdir())
        if path.is_file() and not path.name.endswith((".pyc",))
    }


def write_package(target: Path, files: dict[str, str]) -> None:
    """Replace the folder ``target`` with exactly ``files``."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    staging.chmod(0o755)
    try:
        for name, content in files.items():
            (staging / name).write_text(content, encoding="utf-8")
            (staging / name).chmod(0o644)
        backup = None
        if target.exists():
            backup = target.with_name(f".{target.name}.old")
            if backup.exists():
                shutil.rmtree(backup)
            os.replace(target, backup)
        os.replace(staging, target)
        if backup is not None:
            shutil.rmtree(backup, ignore_errors=True)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


def write_files(folder: Path, files: dict[str, str]) -> None:
    """Write single files into ``folder``, each through a rename; a file
    that already has the content is left alone."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        try:
            if (folder / name).read_text(encoding="utf-8") == content:
                continue
        except OSError:
            pass
        handle, temporary = tempfile.mkstemp(prefix=f".{name}.", dir=folder)
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(content)
        os.chmod(temporary, 0o644)
        os.replace(temporary, folder / name)


def stale_files(expected: dict[Path, str]) -> list[Path]:
    """The paths whose content on disk differs from what was expected."""
    stale = []
    for path, content in sorted(expected.items()):
        try:
            current = path.read_text(encoding="utf-8")
        except OSError:
            stale.append(path)
            continue
        if current != content:
            stale.append(path)
    return stale
