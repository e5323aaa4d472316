// The MCP TypeScript SDK v2 client (`@modelcontextprotocol/client`, 2026-07-28 by default)
// driving the langchain-fstools server. It negotiates with `server/discover` and falls
// back to the initialize handshake on servers of the older protocol (mcp 1.x).
//
//   node client.mjs SCENARIO TARGET [ANSWER]
//
// TARGET is an http:// URL, or a JSON array [command, ...args] to spawn over stdio.
// SCENARIO "handles": read a file, edit another never read (refused), edit that one
// with the read's read_handle (refused), edit the read file with it (applied). SCENARIO "approval": a write that needs a person's approval,
// answered with ANSWER ("accept" approves, "decline" declines) by the elicitation handler.
// Prints one JSON object with what the client saw; the Python test asserts on it.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";

const [scenario, target, answer] = process.argv.slice(2);

async function open(elicited) {
  const client = new Client(
    { name: "fstools-ts2-test", version: "1.0.0" },
    { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: "auto" } },
  );
  client.setRequestHandler("elicitation/create", async (request) => {
    elicited.push(request.params.message);
    if (answer === "accept") {
      return { action: "accept", content: { approve: true } };
    }
    return { action: "decline" };
  });
  let transport;
  if (target.startsWith("http")) {
    // The server's bearer token, from the environment the tests give both.
    const headers = { Authorization: `Bearer ${process.env.LANGCHAIN_FSTOOLS_MCP_TOKEN}` };
    transport = new StreamableHTTPClientTransport(new URL(target), { requestInit: { headers } });
  } else {
    const [command, ...args] = JSON.parse(target);
    transport = new StdioClientTransport({ command, args, env: process.env, stderr: "inherit" });
  }
  await client.connect(transport);
  return client;
}

function summary(result) {
  return {
    isError: result.isError === true,
    text: result.content.filter((b) => b.type === "text").map((b) => b.text).join("\n"),
    handle: result.structuredContent?.read_handle,
  };
}

async function handles() {
  const client = await open([]);
  const out = { protocol: client.getNegotiatedProtocolVersion() };
  out.read = summary(await client.callTool({ name: "read_file", arguments: { file_path: "/notes.txt" } }));
  const handle = out.read.handle;
  const other = { file_path: "/src/app.py", old_string: "Helo", new_string: "Hello" };
  out.blind = summary(await client.callTool({ name: "edit_file", arguments: other }));
  out.misdirected = summary(
    await client.callTool({ name: "edit_file", arguments: { ...other, read_handle: handle } }),
  );
  const edit = { file_path: "/notes.txt", old_string: "alpha", new_string: "ALPHA", read_handle: handle };
  out.edited = summary(await client.callTool({ name: "edit_file", arguments: edit }));
  await client.close();
  return out;
}

async function approval() {
  const elicited = [];
  const client = await open(elicited);
  const protocol = client.getNegotiatedProtocolVersion();
  const written = summary(
    await client.callTool({ name: "write_file", arguments: { file_path: "/approved.txt", content: "yes\n" } }),
  );
  await client.close();
  return { protocol, written, elicited };
}

const scenarios = { handles, approval };
try {
  const result = await scenarios[scenario]();
  process.stdout.write(JSON.stringify(result) + "\n");
  process.exit(0);
} catch (error) {
  process.stderr.write(`${error?.stack ?? error}\n`);
  process.exit(1);
}
