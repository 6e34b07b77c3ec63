// The sandbox proxy of mcpx ui: served on its own origin (another loopback port
// than the host page), under the Content-Security-Policy header the host built
// from the resource's _meta.ui.csp. It writes the App's HTML into an inner
// sandboxed iframe of this origin (which inherits the policy) and relays
// JSON-RPC messages between the host page and the App, checking both origins.
"use strict";
(function () {
  if (window.self === window.top || !document.referrer) {
    document.body.textContent = "This page only runs inside mcpx ui.";
    return;
  }
  const HOST_ORIGIN = new URL(document.referrer).origin;
  if (!/^http:\/\/(127\.0\.0\.1|localhost|\[::1\])(:\d+)?$/.test(HOST_ORIGIN)) {
    document.body.textContent = "Not embedded by a loopback host.";
    return;
  }
  const OWN_ORIGIN = window.location.origin;
  const inner = document.createElement("iframe");
  inner.setAttribute("sandbox", "allow-scripts allow-same-origin allow-forms");
  document.body.appendChild(inner);

  function allowList(permissions) {
    const allowed = [];
    for (const name of ["camera", "microphone", "geolocation", "clipboardWrite"]) {
      if (permissions && permissions[name]) {
        allowed.push(name === "clipboardWrite" ? "clipboard-write" : name);
      }
    }
    return allowed.join("; ");
  }

  window.addEventListener("message", (event) => {
    if (event.source === window.parent) {
      if (event.origin !== HOST_ORIGIN) return;
      const message = event.data;
      if (message && message.method === "ui/notifications/sandbox-resource-ready") {
        const { html, sandbox, permissions } = message.params || {};
        if (typeof sandbox === "string") inner.setAttribute("sandbox", sandbox);
        const allow = allowList(permissions);
        if (allow) inner.setAttribute("allow", allow);
        // Written rather than srcdoc: the document keeps this origin (and its
        // policy), which canvas and WebGL Apps need.
        const doc = inner.contentDocument;
        if (doc) {
          doc.open();
          doc.write(typeof html === "string" ? html : "");
          doc.close();
        } else {
          inner.srcdoc = typeof html === "string" ? html : "";
        }
        return;
      }
      if (inner.contentWindow) inner.contentWindow.postMessage(message, "*");
    } else if (event.source === inner.contentWindow) {
      if (event.origin !== OWN_ORIGIN) return;
      window.parent.postMessage(event.data, HOST_ORIGIN);
    }
  });

  window.parent.postMessage(
    { jsonrpc: "2.0", method: "ui/notifications/sandbox-proxy-ready", params: {} },
    HOST_ORIGIN,
  );
})();
