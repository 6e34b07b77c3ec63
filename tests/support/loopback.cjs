// Preloaded into a Node server under test (node --require): a listen() given
// only a port binds the loopback address instead of every interface.
"use strict";
const net = require("net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const port = args[0];
  if ((typeof port === "number" || /^\d+$/.test(String(port))) && typeof args[1] !== "string") {
    args.splice(0, 1, Number(port), "127.0.0.1");
  }
  return listen.apply(this, args);
};
