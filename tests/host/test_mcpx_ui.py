"""mcpx ui hosts MCP Apps in headless Chromium: an App served by this project's
app layer whose page uses the official ext-apps app-side bridge, and three of
the official example App servers from npm. For each, the tool's result reaches
the App (asserted on its DOM), a control inside the App calls a server tool and
shows the answer, a size change resizes the frame, and open-link is asked in
the page. Screenshots are kept under the test's tmp directory."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from support.browser import chromium, mcpx_page, mcpx_ui
from support.peers import NODE, SUPPORT, TESTS, require

if TYPE_CHECKING:
    from playwright.sync_api import Browser, FrameLocator, Page, Response

pytestmark = [pytest.mark.node, pytest.mark.peers]

PACKAGES = TESTS / "peers" / "node_modules" / "@modelcontextprotocol"
EXT_APPS_BUNDLE = PACKAGES / "ext-apps" / "dist" / "src" / "app-with-deps.js"
WAIT = 60_000  # ms: a loaded two-core machine starting Node and Chromium is slow
FIRST_HEIGHT = 120  # the frame's height before the App says its size (host.js)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as started:
        yield started


@pytest.fixture
def page(browser: Browser, tmp_path: Path) -> Iterator[Page]:
    opened = browser.new_page(viewport={"width": 1280, "height": 900})
    opened.set_default_timeout(WAIT)
    try:
        yield opened
    finally:
        opened.screenshot(path=str(tmp_path / "mcpx-ui.png"), full_page=True)
        opened.close()


def is_call(name: str) -> Callable[[Response], bool]:
    def matches(response: Response) -> bool:
        asked = response.request.post_data
        if "/api/request" not in response.url or not asked:
            return False
        request = json.loads(asked)
        return bool(request["method"] == "tools/call" and request["params"]["name"] == name)

    return matches


def call_from_form(page: Page, url: str, tool: str, **fields: str) -> tuple[Any, FrameLocator]:
    """Open the page, call ``tool`` with its form; the result and the App's frame."""
    page.goto(url)
    page.wait_for_selector("body[data-ready=true]")
    page.click(f"#tools button[data-tool='{tool}']")
    for name, value in fields.items():
        page.fill(f"#fields [name='{name}']", value)
    with page.expect_response(is_call(tool)) as answered:
        page.click("#run")
    result = answered.value.json()["result"]
    return result, page.frame_locator("iframe.app-frame").frame_locator("iframe")


def frame_height(page: Page) -> float:
    height: float = page.locator("iframe.app-frame").evaluate(
        "frame => frame.getBoundingClientRect().height"
    )
    return height


def wait_resized(page: Page) -> None:
    """The App said its size (ui/notifications/size-changed) and the frame took it."""
    page.wait_for_selector("iframe.app-frame[data-size-changes]")
    page.wait_for_function(
        "() => document.querySelector('iframe.app-frame').getBoundingClientRect().height"
        f" !== {FIRST_HEIGHT + 2}"  # the frame's border
    )


def open_link_is_asked(page: Page, app: FrameLocator, url: str, click: str | None) -> None:
    """The App's ui/open-link shows a dialog naming the URL; nothing opens until
    the person answers, and Cancel declines."""
    if click is not None:
        app.locator(click).click()
    else:  # an App without a link control: its bridge's request, as the App would send it
        app.locator("body").evaluate(
            "(body, url) => window.parent.postMessage({jsonrpc: '2.0', id: 'probe-link',"
            " method: 'ui/open-link', params: {url}}, '*')",
            url,
        )
    page.wait_for_selector("#open-link[open]")
    assert page.inner_text("#open-link-url") == url
    assert len(page.context.pages) == 1  # not opened silently
    page.click("#open-link-cancel")
    page.locator("#open-link").wait_for(state="hidden")
    assert len(page.context.pages) == 1


# ---------------------------------------------------------------- our App server


@pytest.fixture(scope="module")
def our_app() -> Iterator[str]:
    bundle = require(EXT_APPS_BUNDLE, "@modelcontextprotocol/ext-apps")
    with mcpx_ui(
        "python", str(SUPPORT / "apps_server.py"), env={"EXT_APPS_BUNDLE": str(bundle)}
    ) as url:
        yield url


def test_an_app_of_our_app_layer_on_the_official_bridge_is_hosted(page: Page, our_app: str) -> None:
    """Spec (MCP Apps, 2026-01-26): "Host MUST send this notification with the
    complete tool arguments after the View's initialize request completes" and
    the tool result "after tool execution completes"; the host forwards the
    App's tools/call to the server; size-changed resizes the frame."""
    result, app = call_from_form(page, our_app, "greet", name="Ada")
    assert result["structuredContent"] == {"greeting": "Hello, Ada!"}
    app.locator("#greeting", has_text="Hello, Ada!").wait_for()
    assert json.loads(app.locator("#arguments").inner_text()) == {"name": "Ada"}
    wait_resized(page)
    # A control of the App calls a tool the server shows only to Apps.
    with page.expect_response(is_call("count-letters")):
        app.locator("#count").click()
    app.locator("#count-answer", has_text="extension has 9 letters").wait_for()
    before = frame_height(page)
    app.locator("#grow").click()
    page.wait_for_function(
        "h => document.querySelector('iframe.app-frame').getBoundingClientRect().height > h + 600",
        arg=before,
    )
    open_link_is_asked(page, app, "https://example.com/docs", "#link")
    app.locator("#link-answer", has_text="declined").wait_for()
    app.locator("#say").click()
    page.locator("#messages li", has_text="hello from the App").wait_for()


def test_apps_call_only_the_tools_shown_to_apps_and_the_model_sees_only_its_own(
    page: Page, our_app: str
) -> None:
    """Spec (MCP Apps): "Host MUST reject tools/call requests from apps for
    tools that don't include "app" in visibility" and "Host MUST NOT include
    tools in the agent's tool list when their visibility does not include
    "model"."""
    _, app = call_from_form(page, our_app, "greet", name="Bo")
    app.locator("#greeting", has_text="Hello, Bo!").wait_for()
    listed = [b.get_attribute("data-tool") for b in page.locator("#tools button").all()]
    assert "count-letters" not in listed and "greet" in listed
    refused = app.locator("body").evaluate("""() => new Promise((resolve) => {
            addEventListener("message", (event) => {
                if (event.data && event.data.id === "probe-call") resolve(event.data.error);
            });
            window.parent.postMessage({jsonrpc: "2.0", id: "probe-call", method: "tools/call",
                params: {name: "model-only", arguments: {}}}, "*");
        })""")
    assert refused["code"] == -32602 and "not callable by the App" in refused["message"]


def test_the_app_runs_on_another_origin_under_the_resources_csp(page: Page, our_app: str) -> None:
    """Spec (MCP Apps): "Host and Sandbox MUST have different origins", and with
    no ``_meta.ui.csp`` the App gets no network ("connect-src 'self'")."""
    _, app = call_from_form(page, our_app, "greet", name="Cy")
    app.locator("#greeting", has_text="Hello, Cy!").wait_for()
    proxy = page.locator("iframe.app-frame").get_attribute("src")
    assert proxy is not None
    page_origin = re.match(r"http://[^/]+", our_app)
    proxy_origin = re.match(r"http://[^/]+", proxy)
    assert page_origin and proxy_origin and page_origin[0] != proxy_origin[0]
    # The App cannot reach the host page's API (another origin, not in connect-src).
    reached = app.locator("body").evaluate(
        "(body, url) => fetch(url).then(() => 'reached', (error) => 'refused')",
        f"{our_app}api/config",
    )
    assert reached == "refused"


def test_dev_ui_shows_the_edited_app_with_the_last_result(page: Page, tmp_path: Path) -> None:
    """mcpx dev --ui: an edit of the server's file reloads the App on the page,
    which gets the last call's input and result again."""
    bundle = require(EXT_APPS_BUNDLE, "@modelcontextprotocol/ext-apps")
    source = tmp_path / "apps_server.py"
    source.write_text((SUPPORT / "apps_server.py").read_text())
    env = {"EXT_APPS_BUNDLE": str(bundle)}
    with mcpx_page("dev", "--ui", "--ui-port", "0", str(source), env=env) as url:
        _, app = call_from_form(page, url, "greet", name="Di")
        app.locator("#greeting", has_text="Hello, Di!").wait_for()
        source.write_text(source.read_text().replace("Arguments:", "Given:"))
        page.locator("#status", has_text="reloaded").wait_for()
        app.locator("p", has_text="Given:").wait_for()
        app.locator("#greeting", has_text="Hello, Di!").wait_for()
        assert json.loads(app.locator("#arguments").inner_text()) == {"name": "Di"}


# ---------------------------------------------------------------- official example Apps


@dataclass(frozen=True)
class Example:
    package: str
    tool: str
    # What of the tool's result the App shows: (selector in the App, expected text).
    shown: Callable[[Any], tuple[str, str]]
    # A control of the App and the (app-visible) tool it calls, and how the answer shows.
    control: Callable[[FrameLocator], None]
    calls: str
    answer: Callable[[Any], tuple[str, str]]
    link: str | None = None


def _toggle_polling(app: FrameLocator) -> None:
    button = app.locator("#poll-toggle-btn")
    if button.inner_text().strip() == "Stop":  # the App starts polling on its own
        button.click()
        app.locator("#poll-toggle-btn", has_text="Start").wait_for()
    button.click()


EXAMPLES = [
    Example(
        "server-basic-vanillajs",
        "get-time",
        shown=lambda result: ("#server-time", result["structuredContent"]["time"]),
        control=lambda app: app.locator("#get-time-btn").click(),
        calls="get-time",
        answer=lambda result: ("#server-time", result["structuredContent"]["time"]),
        link="#open-link-btn",
    ),
    Example(
        "server-system-monitor",
        "get-system-info",
        shown=lambda result: ("#info-hostname", result["structuredContent"]["hostname"]),
        control=_toggle_polling,
        calls="poll-system-stats",
        answer=lambda result: (
            "#memory-percent",
            f"{result['structuredContent']['memory']['usedPercent']}%",
        ),
    ),
    Example(
        "server-debug",
        "debug-tool",
        # Its event log shows each payload's first 100 characters.
        shown=lambda result: ("#event-log", str(result["_meta"]["debugInfo"]["processedAt"])),
        control=lambda app: app.locator("#call-debug-tool-btn").click(),
        calls="debug-tool",
        answer=lambda result: (
            "#event-log",
            '{"content":[{"type":"text","text":"%s"}]' % result["content"][0]["text"],
        ),
        link="#open-link-btn",
    ),
]


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.package for e in EXAMPLES])
def test_an_official_example_app_is_hosted(page: Page, example: Example, tmp_path: Path) -> None:
    """The App's own page, from npm, hosted by mcpx ui: see the module's description."""
    server = require(PACKAGES / example.package / "dist" / "index.js", example.package)
    node = str(require(NODE, "Node 22"))
    # server-debug logs what its App sends to this file (else to /tmp).
    log = {"DEBUG_LOG_FILE": str(tmp_path / "debug-server.log")}
    with mcpx_ui(node, str(server), "--stdio", env=log) as url:
        result, app = call_from_form(page, url, example.tool)
        selector, text = example.shown(result)
        app.locator(selector, has_text=text).first.wait_for()
        wait_resized(page)
        # Every answer the App gets from now on: one of them is what it shows.
        answers: list[Any] = []
        page.on(
            "response",
            lambda r: answers.append(r.json()["result"]) if is_call(example.calls)(r) else None,
        )
        with page.expect_response(is_call(example.calls)):
            example.control(app)
        shows_one_of(app, lambda: {example.answer(answer) for answer in answers})
        open_link_is_asked(page, app, "https://modelcontextprotocol.io/", example.link)


def shows_one_of(app: FrameLocator, expected: Callable[[], set[tuple[str, str]]]) -> None:
    """Wait until the App shows one of the (selector, text) pairs, the text in
    the element's (the App may call again meanwhile: a poll)."""
    deadline = time.monotonic() + WAIT / 1000
    while True:
        wanted = expected()
        shown = {s: app.locator(s).first.inner_text() for s, _ in wanted}
        if any(text in shown[s] for s, text in wanted):
            return
        assert time.monotonic() < deadline, f"the App shows {shown}, not one of {wanted}"
        time.sleep(0.2)
