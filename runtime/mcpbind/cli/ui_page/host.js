// The host page of mcpx ui: the server's tools, a form per tool built from its
// input schema, and the App of a tool that links a UI resource
// (_meta.ui.resourceUri), rendered through the sandbox proxy (another origin)
// and bridged to the MCP session (POST /api/request) as MCP Apps lay out.

const PROTOCOL_VERSION = "2026-01-26";
const RESOURCE_MIME = "text/html;profile=mcp-app";
const $ = (id) => document.getElementById(id);

let config = null;
let tools = [];
let generation = 0;
let current = null; // the App on the page: {tool, frame, bridge, args, result}

async function request(method, params) {
  const answer = await fetch("/api/request", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ method, params }),
  });
  const body = await answer.json();
  if (body.error) {
    const error = new Error(body.error.message);
    error.code = body.error.code;
    throw error;
  }
  return body.result;
}

function uiMeta(item) {
  const meta = (item && item._meta) || {};
  const ui = meta.ui && typeof meta.ui === "object" ? meta.ui : {};
  // The key of the first drafts, still sent by some servers.
  const resourceUri = ui.resourceUri || meta["ui/resourceUri"];
  return { ...ui, resourceUri };
}

function visibleTo(tool, who) {
  const visibility = uiMeta(tool).visibility;
  return !Array.isArray(visibility) || visibility.includes(who);
}

async function listTools() {
  const all = [];
  let cursor;
  do {
    const page = await request("tools/list", cursor ? { cursor } : {});
    all.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor);
  return all;
}

function renderTools() {
  const list = $("tools");
  list.replaceChildren();
  for (const tool of tools.filter((t) => visibleTo(t, "model"))) {
    const item = document.createElement("li");
    const button = document.createElement("button");
    button.type = "button";
    button.dataset.tool = tool.name;
    button.textContent = tool.title || (tool.annotations && tool.annotations.title) || tool.name;
    if (uiMeta(tool).resourceUri) button.textContent += " ▣";
    button.addEventListener("click", () => chooseTool(tool.name));
    item.append(button);
    list.append(item);
  }
}

function chooseTool(name) {
  const tool = tools.find((t) => t.name === name);
  if (!tool) return;
  for (const button of $("tools").querySelectorAll("button")) {
    button.classList.toggle("chosen", button.dataset.tool === name);
  }
  const form = $("call");
  form.hidden = false;
  form.dataset.tool = name;
  $("tool-name").textContent = tool.title || tool.name;
  $("tool-description").textContent = tool.description || "";
  const fields = $("fields");
  fields.replaceChildren();
  const schema = tool.inputSchema || {};
  const required = new Set(schema.required || []);
  for (const [key, field] of Object.entries(schema.properties || {})) {
    fields.append(fieldFor(key, field || {}, required.has(key)));
  }
}

function fieldFor(key, field, required) {
  const label = document.createElement("label");
  const caption = document.createElement("span");
  caption.textContent = `${field.title || key}${required ? " *" : ""}${field.description ? " — " + field.description : ""}`;
  label.append(caption);
  const type = Array.isArray(field.type) ? field.type.find((t) => t !== "null") : field.type;
  let input;
  if (Array.isArray(field.enum)) {
    input = document.createElement("select");
    for (const value of field.enum) {
      const option = document.createElement("option");
      option.value = JSON.stringify(value);
      option.textContent = String(value);
      if (field.default === value) option.selected = true;
      input.append(option);
    }
    input.dataset.kind = "enum";
  } else if (type === "boolean") {
    input = document.createElement("input");
    input.type = "checkbox";
    input.checked = field.default === true;
    input.dataset.kind = "boolean";
  } else if (type === "number" || type === "integer") {
    input = document.createElement("input");
    input.type = "number";
    if (type === "integer") input.step = "1";
    else input.step = "any";
    if (field.default !== undefined) input.value = String(field.default);
    input.dataset.kind = type;
  } else if (type === "string") {
    input = document.createElement("input");
    input.type = "text";
    if (field.default !== undefined) input.value = String(field.default);
    input.dataset.kind = "string";
  } else {
    input = document.createElement("textarea");
    input.rows = 3;
    input.placeholder = "JSON";
    if (field.default !== undefined) input.value = JSON.stringify(field.default);
    input.dataset.kind = "json";
  }
  input.name = key;
  input.required = required && input.dataset.kind !== "boolean";
  label.append(input);
  return label;
}

function formArguments() {
  const values = {};
  for (const input of $("fields").querySelectorAll("[name]")) {
    const kind = input.dataset.kind;
    if (kind === "boolean") {
      values[input.name] = input.checked;
      continue;
    }
    if (input.value === "") continue;
    if (kind === "enum" || kind === "json") values[input.name] = JSON.parse(input.value);
    else if (kind === "number" || kind === "integer") values[input.name] = Number(input.value);
    else values[input.name] = input.value;
  }
  return values;
}

function showResult(result) {
  const shown = $("result");
  shown.hidden = false;
  const text = (result.content || [])
    .filter((block) => block.type === "text")
    .map((block) => block.text)
    .join("\n");
  shown.textContent = (result.isError ? "Error: " : "") + (text || JSON.stringify(result, null, 2));
}

async function callTool(event) {
  event.preventDefault();
  const tool = tools.find((t) => t.name === $("call").dataset.tool);
  let args;
  try {
    args = formArguments();
  } catch (error) {
    $("result").hidden = false;
    $("result").textContent = `Bad JSON in a field: ${error.message}`;
    return;
  }
  $("result").hidden = true;
  const resourceUri = uiMeta(tool).resourceUri;
  const app = resourceUri ? await openApp(tool, resourceUri, args) : null;
  if (app === null) closeApp();
  let result;
  try {
    result = await request("tools/call", { name: tool.name, arguments: args });
  } catch (error) {
    result = { content: [{ type: "text", text: error.message }], isError: true };
  }
  showResult(result);
  if (app) app.deliverResult(result);
}

// ---------------------------------------------------------------- the App

function closeApp() {
  if (current) {
    current.bridge.close();
    current.frame.remove();
    current = null;
  }
}

async function readUi(resourceUri) {
  const read = await request("resources/read", { uri: resourceUri });
  const content = (read.contents || []).find((c) => c.uri === resourceUri) || read.contents[0];
  if (!content) throw new Error(`${resourceUri}: no contents`);
  if (content.mimeType && content.mimeType !== RESOURCE_MIME) {
    throw new Error(`${resourceUri} is ${content.mimeType}, not ${RESOURCE_MIME}`);
  }
  const html =
    typeof content.text === "string"
      ? content.text
      : new TextDecoder().decode(Uint8Array.from(atob(content.blob || ""), (c) => c.charCodeAt(0)));
  // _meta.ui of the content, else of the resource's listing.
  let meta = uiMeta(content);
  if (!meta.csp && !meta.permissions) {
    try {
      const listed = await request("resources/list", {});
      const entry = (listed.resources || []).find((r) => r.uri === resourceUri);
      if (entry) meta = { ...uiMeta(entry), ...meta };
    } catch (error) {
      // A server without resources/list: the content's metadata is all there is.
    }
  }
  return { html, meta };
}

async function openApp(tool, resourceUri, args) {
  closeApp();
  let ui;
  try {
    ui = await readUi(resourceUri);
  } catch (error) {
    addEntry("log", `cannot render ${resourceUri}: ${error.message}`);
    return null;
  }
  const frame = document.createElement("iframe");
  frame.className = "app-frame";
  frame.title = `App of ${tool.name}`;
  frame.dataset.resource = resourceUri;
  frame.style.height = "120px";
  // The proxy needs its own origin (allow-same-origin) to write the App's document.
  frame.setAttribute("sandbox", "allow-scripts allow-same-origin allow-forms");
  const csp = JSON.stringify(ui.meta.csp || {});
  const sandboxOrigin = `${location.protocol}//${location.hostname}:${config.sandboxPort}`;
  frame.src = `${sandboxOrigin}/sandbox.html?csp=${encodeURIComponent(csp)}`;
  if (ui.meta.prefersBorder === false) frame.style.border = "0";
  const bridge = new Bridge(frame, sandboxOrigin, tool, ui, args);
  current = { tool, frame, bridge, args, resourceUri };
  $("app-area").replaceChildren(frame);
  return bridge;
}

class Bridge {
  constructor(frame, origin, tool, ui, args) {
    this.frame = frame;
    this.origin = origin;
    this.tool = tool;
    this.ui = ui;
    this.args = args;
    this.result = null;
    this.initialized = false;
    this.nextId = 1;
    this.listener = (event) => this.receive(event);
    window.addEventListener("message", this.listener);
  }

  close() {
    window.removeEventListener("message", this.listener);
    if (this.initialized) {
      this.post({ jsonrpc: "2.0", id: `teardown-${this.nextId++}`, method: "ui/resource-teardown", params: {} });
    }
  }

  post(message) {
    if (this.frame.contentWindow) this.frame.contentWindow.postMessage(message, this.origin);
  }

  notify(method, params) {
    this.post({ jsonrpc: "2.0", method, params });
  }

  deliverResult(result) {
    this.result = result;
    if (this.initialized) this.notify("ui/notifications/tool-result", result);
  }

  receive(event) {
    if (event.source !== this.frame.contentWindow || event.origin !== this.origin) return;
    const message = event.data;
    if (!message || message.jsonrpc !== "2.0") return;
    if (message.method === "ui/notifications/sandbox-proxy-ready") {
      this.notify("ui/notifications/sandbox-resource-ready", {
        html: this.ui.html,
        csp: this.ui.meta.csp,
        permissions: this.ui.meta.permissions,
      });
      return;
    }
    if (message.method === undefined) return; // an answer to our teardown
    if (message.id === undefined || message.id === null) {
      this.onNotification(message.method, message.params || {});
      return;
    }
    this.onRequest(message.method, message.params || {}).then(
      (result) => this.post({ jsonrpc: "2.0", id: message.id, result }),
      (error) =>
        this.post({
          jsonrpc: "2.0",
          id: message.id,
          error: { code: typeof error.code === "number" ? error.code : -32603, message: error.message },
        }),
    );
  }

  onNotification(method, params) {
    if (method === "ui/notifications/initialized") {
      this.initialized = true;
      this.notify("ui/notifications/tool-input", { arguments: this.args });
      if (this.result !== null) this.notify("ui/notifications/tool-result", this.result);
    } else if (method === "ui/notifications/size-changed") {
      if (typeof params.height === "number") {
        this.frame.style.height = `${Math.ceil(params.height)}px`;
      }
      this.frame.dataset.sizeChanges = String(Number(this.frame.dataset.sizeChanges || 0) + 1);
    } else if (method === "notifications/message") {
      addEntry("log", `[${params.level}] ${typeof params.data === "string" ? params.data : JSON.stringify(params.data)}`);
    } else if (method === "ui/notifications/request-teardown") {
      closeApp();
    }
  }

  async onRequest(method, params) {
    switch (method) {
      case "ui/initialize":
        return {
          protocolVersion: PROTOCOL_VERSION,
          hostInfo: { name: "mcpx ui", version: "1" },
          hostCapabilities: {
            openLinks: {},
            serverTools: {},
            serverResources: {},
            logging: {},
            message: { text: {} },
            updateModelContext: { text: {} },
          },
          hostContext: {
            toolInfo: { tool: this.tool },
            theme: "light",
            displayMode: "inline",
            availableDisplayModes: ["inline"],
            containerDimensions: { width: this.frame.clientWidth, maxHeight: 2000 },
            locale: navigator.language,
            timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone,
            platform: "web",
          },
        };
      case "ping":
        return {};
      case "tools/call": {
        // An App calls only the tools its server lets Apps call.
        const tool = tools.find((t) => t.name === params.name);
        if (!tool || !visibleTo(tool, "app")) {
          throw Object.assign(new Error(`tool ${params.name} is not callable by the App`), { code: -32602 });
        }
        return request("tools/call", params);
      }
      case "tools/list": {
        const listed = await request("tools/list", params);
        return { ...listed, tools: listed.tools.filter((t) => visibleTo(t, "app")) };
      }
      case "resources/read":
      case "resources/list":
      case "resources/templates/list":
        return request(method, params);
      case "ui/open-link":
        return askOpenLink(String(params.url));
      case "ui/message":
        addEntry("messages", (params.content || []).map((c) => (c.type === "text" ? c.text : `[${c.type}]`)).join("\n"));
        return {};
      case "ui/update-model-context":
        addEntry("log", `model context: ${JSON.stringify(params)}`);
        return {};
      case "ui/request-display-mode":
        return { mode: "inline" };
      default:
        throw Object.assign(new Error(`method not found: ${method}`), { code: -32601 });
    }
  }
}

function askOpenLink(url) {
  // Never opened silently: the person says yes or no in the page.
  const dialog = $("open-link");
  $("open-link-url").textContent = url;
  return new Promise((resolve) => {
    dialog.addEventListener(
      "close",
      () => {
        if (dialog.returnValue === "open" && /^https?:/i.test(url)) {
          window.open(url, "_blank", "noopener,noreferrer");
          resolve({});
        } else {
          resolve({ isError: true });
        }
      },
      { once: true },
    );
    dialog.returnValue = "";
    dialog.showModal();
  });
}

function addEntry(list, text) {
  const item = document.createElement("li");
  item.textContent = text;
  $(list).append(item);
}

// ---------------------------------------------------------------- reloads

async function watchChanges() {
  for (;;) {
    let changed;
    try {
      const answer = await fetch(`/api/changes?since=${generation}`);
      changed = await answer.json();
    } catch (error) {
      $("status").textContent = "disconnected";
      await new Promise((resolve) => setTimeout(resolve, 2000));
      continue;
    }
    if (changed.generation === generation) continue;
    generation = changed.generation;
    $("status").textContent = `reloaded (${generation})`;
    tools = await listTools();
    renderTools();
    const chosen = $("call").dataset.tool;
    if (chosen && tools.some((t) => t.name === chosen)) chooseTool(chosen);
    if (current) {
      // The server changed: its App is read again and shown the last call anew.
      const { tool, args, resourceUri, bridge } = current;
      const fresh = tools.find((t) => t.name === tool.name) || tool;
      const app = await openApp(fresh, resourceUri, args);
      if (app && bridge.result !== null) app.deliverResult(bridge.result);
    }
  }
}

async function start() {
  config = await (await fetch("/api/config")).json();
  const changes = await (await fetch(`/api/changes?since=-1`)).json();
  generation = changes.generation;
  $("server").textContent = config.server;
  tools = await listTools();
  renderTools();
  $("call").addEventListener("submit", callTool);
  document.body.dataset.ready = "true";
  watchChanges();
}

start();
