// The official TypeScript SDK client against examples/production_server.py,
// spawned over stdio (argv: command, args...) or at a Streamable HTTP URL
// (argv: http://...; it sends X-Tenant: acme), printing what it saw as one
// JSON object. Run with NODE_PATH set to tests/peers/node_modules.
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");
const { ToolListChangedNotificationSchema } = require("@modelcontextprotocol/sdk/types.js");

async function main() {
  const [command, ...args] = process.argv.slice(2);
  const transport = command.startsWith("http://")
    ? new StreamableHTTPClientTransport(new URL(command), { requestInit: { headers: { "X-Tenant": "acme" } } })
    : new StdioClientTransport({ command, args, stderr: "inherit", env: process.env });
  const client = new Client({ name: "ts-production-client", version: "1.0.0" });
  let listChanged = 0;
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => { listChanged += 1; });
  await client.connect(transport);
  const before = await client.listTools();
  const first = await client.callTool({ name: "add_note", arguments: { text: "from node" } });
  const second = await client.callTool({ name: "add_note", arguments: { text: "again" } });
  const recent = await client.callTool({ name: "recent_notes", arguments: {} });
  const idOf = (result) => JSON.parse(result.content[0].text).id; // no structuredContent at 2024-11-05
  const card = await client.callTool({ name: "note_card", arguments: { id: idOf(first) } });
  const read = await client.readResource({ uri: `note://${idOf(second)}` });
  const unlocked = await client.callTool({ name: "unlock_admin", arguments: { code: "letmein" } });
  const after = await client.listTools();
  const exported = await client.callTool({ name: "export_notes", arguments: {} });
  // As a task, where the server declares tasks (2025-11-25): the stream's messages, in order.
  const asTask = [];
  if (client.getServerCapabilities().tasks) {
    const stream = client.experimental.tasks.callToolStream(
      { name: "export_notes", arguments: {} }, undefined, { task: { ttl: 60000 } });
    for await (const message of stream) {
      asTask.push(message.type === "result" ? { type: "result", result: message.result }
        : message.type === "error" ? { type: "error", error: String(message.error) }
        : { type: message.type, status: message.task && message.task.status });
    }
  }
  const seen = {
    version: transport.protocolVersion || null,
    server: client.getServerVersion(),
    before: before.tools.map((tool) => tool.name),
    after: after.tools.map((tool) => tool.name),
    first, recent, card, read, unlocked, exported, asTask, listChanged,
  };
  process.stdout.write(JSON.stringify(seen));
  await client.close();
}

main().catch((error) => {
  process.stderr.write(`${error.stack || error}\n`);
  process.exit(1);
});
