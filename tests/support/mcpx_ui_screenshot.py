"""The screenshot of the MCP Apps host guide (docs/assets/mcpx-ui.png): mcpx ui
hosting the greeting App of tests/support/apps_server.py (its page on the
official ext-apps bridge), in headless Chromium (Debian's, through Playwright).

    python tests/support/mcpx_ui_screenshot.py [docs/assets/mcpx-ui.png]

Needs the npm peers (python tests/peers/install.py) for the bridge's bundle.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from support.browser import chromium, mcpx_ui  # noqa: E402

REPO = HERE.parents[1]
BUNDLE = REPO / "tests/peers/node_modules/@modelcontextprotocol/ext-apps/dist/src/app-with-deps.js"


def main(target: Path) -> None:
    server = [sys.executable, str(HERE / "apps_server.py")]
    with mcpx_ui(*server, env={"EXT_APPS_BUNDLE": str(BUNDLE)}) as url, chromium() as browser:
        page = browser.new_page(viewport={"width": 1100, "height": 640})
        page.goto(url)
        page.wait_for_selector("body[data-ready=true]")
        page.click("#tools button[data-tool='greet']")
        page.fill("#fields [name='name']", "Ada")
        page.click("#run")
        app = page.frame_locator("iframe.app-frame").frame_locator("iframe")
        app.locator("#greeting", has_text="Hello, Ada!").wait_for()
        app.locator("#count").click()
        app.locator("#count-answer", has_text="letters").wait_for()
        app.locator("#say").click()
        page.locator("#messages li").first.wait_for()
        page.screenshot(path=str(target))
    print(f"wrote {target}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "docs" / "assets" / "mcpx-ui.png")
