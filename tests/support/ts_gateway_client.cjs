// The official TypeScript SDK client against a gateway at a Streamable HTTP
// URL (argv[2]): lists its tools and calls one tool of each backend
// (server-everything's echo, the notes example's add_note), printing what it
// saw as one JSON object. Run with NODE_PATH set to tests/peers/node_modules.
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");

async function main() {
  const transport = new StreamableHTTPClientTransport(new URL(process.argv[2]));
  const client = new Client({ name: "ts-gateway-client", version: "1.0.0" });
  await client.connect(transport);
  const tools = await client.listTools();
  const echoed = await client.callTool({ name: "everything_echo", arguments: { message: "from node" } });
  const added = await client.callTool({ name: "notes_add_note", arguments: { text: "from node" } });
  const templates = await client.listResourceTemplates();
  const seen = {
    capabilities: client.getServerCapabilities(),
    tools: tools.tools.map((tool) => tool.name),
    echoed, added,
    templates: templates.resourceTemplates.map((template) => template.uriTemplate),
  };
  process.stdout.write(JSON.stringify(seen));
  await client.close();
}

main().catch((error) => {
  process.stderr.write(`${error.stack || error}\n`);
  process.exit(1);
});
