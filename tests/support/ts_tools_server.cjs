// A server built with the official TypeScript SDK (McpServer, zod schemas):
// tools with structured output, a prompt and a resource template, for the
// typed-bindings tests. Its modules come from tests/peers/node_modules.
const path = require("path");
const peers = path.join(__dirname, "..", "peers", "node_modules");
const load = (name) => require(require.resolve(name, { paths: [peers] }));
const { McpServer, ResourceTemplate } = load("@modelcontextprotocol/sdk/server/mcp.js");
const { StdioServerTransport } = load("@modelcontextprotocol/sdk/server/stdio.js");
const { z } = load("zod");

const server = new McpServer({ name: "ts-geo", version: "1.0.0" });

server.registerTool(
  "distance",
  {
    description: "Distance between two points on a plane.",
    inputSchema: {
      from: z.object({ x: z.number(), y: z.number() }),
      to: z.object({ x: z.number(), y: z.number() }),
      unit: z.enum(["m", "km"]).default("m"),
    },
    outputSchema: { distance: z.number(), unit: z.enum(["m", "km"]) },
  },
  async ({ from, to, unit }) => {
    const metres = Math.hypot(to.x - from.x, to.y - from.y);
    const output = { distance: unit === "km" ? metres / 1000 : metres, unit };
    return { content: [{ type: "text", text: JSON.stringify(output) }], structuredContent: output };
  },
);

server.registerTool(
  "label",
  {
    description: "Label a place.",
    inputSchema: { name: z.string().min(1).max(20), tags: z.array(z.string()).optional() },
  },
  async ({ name, tags }) => ({
    content: [{ type: "text", text: `${name} [${(tags || []).join(",")}]` }],
  }),
);

server.registerPrompt(
  "describe",
  { description: "Describe a place.", argsSchema: { place: z.string() } },
  ({ place }) => ({ messages: [{ role: "user", content: { type: "text", text: `Describe ${place}.` } }] }),
);

server.registerResource(
  "place",
  new ResourceTemplate("geo://place/{id}", { list: undefined }),
  { description: "A place by id." },
  async (uri, { id }) => ({ contents: [{ uri: uri.href, text: `place ${id}` }] }),
);

server.connect(new StdioServerTransport());
