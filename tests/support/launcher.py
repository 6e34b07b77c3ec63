"""Start the command given as arguments as a child process sharing this
process's stdio, and wait for it: what launchers such as npx or uvx do. The
MCP server is then a grandchild of the client."""

from __future__ import annotations

import subprocess
import sys

if __name__ == "__main__":
    sys.exit(subprocess.call(sys.argv[1:]))
