// The official TypeScript SDK client against a gateway at a Streamable HTTP
// URL (argv[2]) serving server-everything under the prefix "everything": calls
// get-resource-links and reads every resource link of its result through the
// gateway, printing the links and what each read answered as one JSON object.
// Run with NODE_PATH set to tests/peers/node_modules.
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");

async function main() {
  const transport = new StreamableHTTPClientTransport(new URL(process.argv[2]));
  const client = new Client({ name: "ts-links-client", version: "1.0.0" });
  await client.connect(transport);
  const linked = await client.callTool({ name: "everything_get-resource-links", arguments: { count: 2 } });
  const links = linked.content.filter((block) => block.type === "resource_link").map((block) => block.uri);
  const read = [];
  for (const uri of links) {
    const answer = await client.readResource({ uri });
    read.push(answer.contents.map((content) => content.uri));
  }
  process.stdout.write(JSON.stringify({ links, read }));
  await client.close();
}

main().catch((error) => {
  process.stderr.write(`${error.stack || error}\n`);
  process.exit(1);
});
