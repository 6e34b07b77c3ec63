"""A stdio server that fails to start, saying why on stderr, until the file
named by its first argument exists; then it is the notes example."""

import os
import sys
from pathlib import Path

NOTES_SERVER = Path(__file__).resolve().parents[2] / "examples" / "notes_server.py"

if not Path(sys.argv[1]).exists():
    print("loading the configuration", file=sys.stderr)
    print("flaky: API_KEY is not set", file=sys.stderr)
    sys.exit(3)
os.execv(sys.executable, [sys.executable, str(NOTES_SERVER)])
