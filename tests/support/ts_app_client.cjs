// The official TypeScript SDK client against a server spawned over stdio
// (argv: command, args...) or at a Streamable HTTP URL (argv: http://...):
// lists and calls what examples/notes_server.py serves and prints what it
// saw as one JSON object. Run with NODE_PATH set to tests/peers/node_modules.
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");

async function main() {
  const [command, ...args] = process.argv.slice(2);
  const transport = command.startsWith("http://")
    ? new StreamableHTTPClientTransport(new URL(command))
    : new StdioClientTransport({ command, args, stderr: "inherit" });
  const client = new Client({ name: "ts-app-client", version: "1.0.0" });
  await client.connect(transport);
  const tools = await client.listTools();
  const added = await client.callTool({ name: "add_note", arguments: { text: "from node", tags: ["ts"] } });
  const found = await client.callTool({ name: "search_notes", arguments: { query: "node" } });
  const invalid = await client.callTool({ name: "add_note", arguments: { text: "" } });
  const read = await client.readResource({ uri: `note://${added.structuredContent.id}` });
  const prompt = await client.getPrompt({ name: "summarize", arguments: { topic: "node" } });
  const seen = {
    server: client.getServerVersion(),
    tools: tools.tools.map((tool) => tool.name),
    added, found, invalid, read, prompt,
  };
  process.stdout.write(JSON.stringify(seen));
  await client.close();
}

main().catch((error) => {
  process.stderr.write(`${error.stack || error}\n`);
  process.exit(1);
});
