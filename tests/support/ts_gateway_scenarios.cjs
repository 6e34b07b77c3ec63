// The official TypeScript SDK client, at its default protocol revision, in
// front of `mcpx serve`, for one scenario (argv[2]):
//   logs     sets the log level to info, calls example_log, sets it to warning
//            and calls it again, keeping the notifications/message it hears;
//   url      declares elicitation {form, url}, lists the tools and calls
//            everything_trigger-url-elicitation, keeping the questions its
//            elicitation handler is asked;
//   scope    (HTTP only) calls p_whoami then p_admin_reset with the bearer
//            token of $MCP_TOKEN, keeping each POST's status and challenge and
//            the error the SDK raises.
// The gateway is argv[3]: a Streamable HTTP URL, or "stdio" followed by the
// command and its arguments. Prints what it saw as one JSON object. Run with
// NODE_PATH set to tests/peers/node_modules.
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");
const { ElicitRequestSchema, LoggingMessageNotificationSchema } = require("@modelcontextprotocol/sdk/types.js");

const CONSENT = "https://example.com/consent";

function transportFor(target, command, posts) {
  if (target === "stdio") {
    return new StdioClientTransport({ command: command[0], args: command.slice(1), env: { ...process.env } });
  }
  const token = process.env.MCP_TOKEN;
  // Every POST's status and challenge, as the gateway answered it.
  const recording = async (url, init) => {
    const response = await fetch(url, init);
    if ((init?.method || "GET") === "POST") {
      posts.push({ status: response.status, challenge: response.headers.get("www-authenticate") });
    }
    return response;
  };
  return new StreamableHTTPClientTransport(new URL(target), {
    fetch: recording,
    requestInit: token ? { headers: { Authorization: `Bearer ${token}` } } : undefined,
  });
}

function text(result) {
  return result.content.map((block) => block.text || "").join("");
}

async function logs(client) {
  const heard = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => {
    heard.push([notification.params.level, notification.params.data]);
  });
  await client.setLoggingLevel("info");
  const first = text(await client.callTool({ name: "example_log", arguments: { message: "first" } }));
  const atInfo = heard.splice(0);
  await client.setLoggingLevel("warning");
  const second = text(await client.callTool({ name: "example_log", arguments: { message: "second" } }));
  return { first, atInfo, second, atWarning: heard.splice(0) };
}

async function url(client) {
  const asked = [];
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    asked.push(request.params);
    return { action: "accept" };
  });
  const tools = (await client.listTools()).tools.map((tool) => tool.name);
  const result = await client.callTool({ name: "everything_trigger-url-elicitation", arguments: { url: CONSENT } });
  return { tools, asked, text: text(result) };
}

async function scope(client, posts) {
  const whoami = text(await client.callTool({ name: "p_whoami", arguments: {} }));
  const before = posts.length;
  let error = null;
  try {
    await client.callTool({ name: "p_admin_reset", arguments: {} });
  } catch (caught) {
    error = { name: caught.constructor.name, code: caught.code, message: caught.message };
  }
  return { whoami, error, refused: posts.slice(before) };
}

const SCENARIOS = { logs, url, scope };

async function main() {
  const [scenario, target, ...command] = process.argv.slice(2);
  const posts = [];
  const transport = transportFor(target, command, posts);
  const client = new Client(
    { name: "ts-gateway-scenarios", version: "1.0.0" },
    { capabilities: scenario === "url" ? { elicitation: { form: {}, url: {} } } : {} },
  );
  // The revision the initialize result names (the client hands it to its
  // transport; the stdio transport has no such method of its own).
  let negotiated = null;
  const setProtocolVersion = transport.setProtocolVersion?.bind(transport);
  transport.setProtocolVersion = (version) => {
    negotiated = version;
    setProtocolVersion?.(version);
  };
  await client.connect(transport);
  const seen = await SCENARIOS[scenario](client, posts);
  seen.protocolVersion = negotiated;
  process.stdout.write(JSON.stringify(seen));
  await client.close();
}

main().then(
  () => process.exit(0),
  (error) => {
    process.stderr.write(`${error.stack || error}\n`);
    process.exit(1);
  },
);
