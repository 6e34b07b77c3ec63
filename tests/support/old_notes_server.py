"""The example notes server speaking only 2024-11-05 (a backend of an older revision)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

NOTES = Path(__file__).resolve().parents[2] / "examples" / "notes_server.py"

spec = importlib.util.spec_from_file_location("notes_server_old", NOTES)
assert spec is not None and spec.loader is not None
module = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = module  # msgspec resolves the Structs' annotations through it
spec.loader.exec_module(module)
module.app.versions = ("2024-11-05",)
module.app.run("stdio")
