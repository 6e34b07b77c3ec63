// The official TypeScript SDK client on a stdio server: the command and its
// arguments are argv[2...]. It connects, lists the tools, prints one JSON line
// (the server's pid and the tools' names), waits for a line on its own stdin,
// then closes the transport as the SDK does (stdin ended, SIGTERM 2 s later,
// SIGKILL 2 s after that) and exits. Run with NODE_PATH set to tests/peers/node_modules.
const readline = require("node:readline");
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");

async function main() {
  const [command, ...args] = process.argv.slice(2);
  const transport = new StdioClientTransport({ command, args, env: { ...process.env } });
  const client = new Client({ name: "ts-stdio-close-client", version: "1.0.0" });
  await client.connect(transport);
  const tools = await client.listTools();
  process.stdout.write(JSON.stringify({ pid: transport.pid, tools: tools.tools.map((t) => t.name) }) + "\n");
  const lines = readline.createInterface({ input: process.stdin });
  await new Promise((resolve) => lines.once("line", resolve));
  lines.close();
  await client.close();
}

main().then(
  () => process.exit(0),
  (error) => {
    process.stderr.write(`${error.stack || error}\n`);
    process.exit(1);
  },
);
