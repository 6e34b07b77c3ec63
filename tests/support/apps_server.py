"""An MCP App served by this project's app layer, for mcpx ui's tests.

Built on the typed Apps API (``app.ui_resource``, ``@app.tool(ui=...,
ui_visibility=...)``). The tool ``greet`` links the UI resource
``ui://greeting/app.html`` (HTML served as ``text/html;profile=mcp-app``,
named in the tool's ``_meta.ui.resourceUri``); its
page talks to the host with the official ``@modelcontextprotocol/ext-apps``
app-side bridge, whose bundle (``app-with-deps.js``, an ES module) is inlined
as a ``data:`` module. Its buttons call ``count-letters`` (a tool only Apps
may call), grow the page, ask to open a link and send a message. The tool
``model-only`` is one Apps may not call, and ``host-capabilities`` answers
with what the client declared.

The bundle's path is given in ``EXT_APPS_BUNDLE`` (the npm peers' copy).
"""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

import msgspec

from mcpbind.app import App, Context

RESOURCE = "ui://greeting/app.html"

app = App("greeting-app", "1.0.0")

PAGE = """<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Greeting</title>
<style>body { font-family: sans-serif; margin: 8px; } #filler { height: 0; }</style></head>
<body>
<h1 id="greeting">waiting for the result</h1>
<p>Arguments: <code id="arguments">none yet</code></p>
<p><input id="word" value="extension"> <button id="count">Count letters</button>
<span id="count-answer"></span></p>
<p><button id="grow">Grow</button> <button id="link">Open link</button>
<span id="link-answer"></span> <button id="say">Say hello</button></p>
<div id="filler"></div>
<script type="module">
import { App } from "data:text/javascript;base64,__BUNDLE__";
const $ = (id) => document.getElementById(id);
const app = new App({ name: "greeting-page", version: "1.0.0" });
window.app = app;
app.ontoolinput = (params) => { $("arguments").textContent = JSON.stringify(params.arguments); };
app.ontoolresult = (result) => {
  $("greeting").textContent = result.structuredContent?.greeting ?? result.content[0].text;
};
$("count").onclick = async () => {
  const result = await app.callServerTool({ name: "count-letters", arguments: { word: $("word").value } });
  $("count-answer").textContent = result.content[0].text;
};
$("grow").onclick = () => { $("filler").style.height = "700px"; };
$("link").onclick = async () => {
  const answer = await app.openLink({ url: "https://example.com/docs" });
  $("link-answer").textContent = answer.isError ? "declined" : "opened";
};
$("say").onclick = () => app.sendMessage({ role: "user", content: [{ type: "text", text: "hello from the App" }] });
await app.connect();
</script>
</body>
</html>
"""


def page() -> str:
    """The greeting App, with the app-side bridge inlined (read at each resources/read)."""
    bundle = Path(os.environ["EXT_APPS_BUNDLE"]).read_bytes()
    return PAGE.replace("__BUNDLE__", base64.b64encode(bundle).decode())


greeting = app.ui_resource(RESOURCE, page, name="greeting-app", description="The greeting App.")


@app.tool(ui=greeting)
def greet(name: str) -> dict[str, str]:
    """Greet someone, in an App."""
    return {"greeting": f"Hello, {name}!"}


@app.tool(name="count-letters", ui=greeting, ui_visibility=["app"])
def count_letters(word: str) -> str:
    """How many letters a word has (called by the App, not the model)."""
    return f"{word} has {len(word)} letters"


@app.tool(name="model-only", ui=greeting, ui_visibility=["model"])
def model_only() -> str:
    """A tool the model may call and Apps may not."""
    return "for the model"


@app.tool(name="host-capabilities")
def host_capabilities(ctx: Context) -> dict[str, Any]:
    """The capabilities the client declared."""
    declared: dict[str, Any] = msgspec.to_builtins(ctx.client_capabilities)
    return declared


if __name__ == "__main__":
    app.run()
