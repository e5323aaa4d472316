// The official MCP TypeScript SDK client driving the langchain-fstools server.
//
//   node client.mjs SCENARIO TARGET [ANSWER]
//
// TARGET is an http:// URL, or a JSON array [command, ...args] to spawn over stdio.
// SCENARIO "tools": list tools, read text and an image, edit after a read in one
// session, an edit refused in a fresh session and applied in another with the read's
// read_handle, progress notifications.
// SCENARIO "approval": a write that needs a person's approval; the elicitation is
// answered with ANSWER ("accept" approves, "decline" declines).
// Prints one JSON object with what the client saw; the Python test asserts on it.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema, ProgressNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const [scenario, target, answer] = process.argv.slice(2);

async function open(elicited) {
  const client = new Client(
    { name: "fstools-ts-test", version: "1.0.0" },
    { capabilities: { elicitation: {} } },
  );
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    elicited.push({
      message: request.params.message,
      schema: request.params.requestedSchema,
    });
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

function texts(result) {
  return result.content.filter((b) => b.type === "text").map((b) => b.text).join("\n");
}

function summary(result) {
  return {
    isError: result.isError === true,
    text: texts(result),
    types: result.content.map((b) => b.type),
    mimeTypes: result.content.filter((b) => b.mimeType).map((b) => b.mimeType),
    handle: result.structuredContent?.read_handle,
  };
}

async function tools() {
  const out = {};
  const first = await open([]);
  // The SDK hands a progress notification to `onprogress` in a microtask, after a
  // response that arrived in the same chunk has dropped the call's progress handler: a
  // call's last notification, sent just before its result, is then lost ("unknown
  // token"). So every notification is kept here as it arrives, and each call takes the
  // ones that came while it ran (the calls are one after another).
  const notified = [];
  const progress = [];
  first.setNotificationHandler(ProgressNotificationSchema, (n) => notified.push(n.params));
  const during = async (tool, call) => {
    const before = notified.length;
    const result = await call({ onprogress: () => {} }); // asks the server for progress
    for (const p of notified.slice(before)) {
      progress.push({ tool, progress: p.progress, message: p.message });
    }
    return result;
  };
  out.server = first.getServerVersion();
  out.tools = Object.fromEntries(
    (await first.listTools()).tools.map((t) => [
      t.name,
      { annotations: t.annotations, properties: Object.keys(t.inputSchema.properties ?? {}) },
    ]),
  );
  out.readText = summary(await first.callTool({ name: "read_file", arguments: { file_path: "/notes.txt" } }));
  out.readImage = summary(await first.callTool({ name: "read_file", arguments: { file_path: "/logo.png" } }));
  out.readAgain = summary(await first.callTool({ name: "read_file", arguments: { file_path: "/notes.txt" } }));
  const edit = { file_path: "/src/app.py", old_string: "Helo", new_string: "Hello" };
  await first.callTool({ name: "read_file", arguments: { file_path: "/src/app.py" } });
  out.editAfterRead = summary(await first.callTool({ name: "edit_file", arguments: edit }));

  const fresh = await open([]);
  out.editInFreshSession = summary(
    await fresh.callTool({
      name: "edit_file",
      arguments: { file_path: "/notes.txt", old_string: "alpha", new_string: "ALPHA" },
    }),
  );
  await fresh.close();
  const another = await open([]);
  out.editWithHandleInFreshSession = summary(
    await another.callTool({
      name: "edit_file",
      arguments: {
        file_path: "/notes.txt",
        old_string: "alpha",
        new_string: "ALPHA",
        read_handle: out.readText.handle,
      },
    }),
  );
  await another.close();

  out.grep = summary(
    await during("grep", (options) =>
      first.callTool({ name: "grep", arguments: { pattern: "needle" } }, undefined, options),
    ),
  );
  if (out.tools.execute) {
    const command = "for i in 1 2 3; do echo tick$i; sleep 0.3; done";
    out.execute = summary(
      await during("execute", (options) =>
        first.callTool({ name: "execute", arguments: { command } }, undefined, options),
      ),
    );
  }
  out.progress = progress;
  await first.close();
  return out;
}

async function approval() {
  const elicited = [];
  const client = await open(elicited);
  const written = summary(
    await client.callTool({
      name: "write_file",
      arguments: { file_path: "/approved.txt", content: "yes\n" },
    }),
  );
  await client.close();
  return { written, elicited };
}

const scenarios = { tools, approval };
try {
  const result = await scenarios[scenario]();
  process.stdout.write(JSON.stringify(result) + "\n");
  process.exit(0);
} catch (error) {
  process.stderr.write(`${error?.stack ?? error}\n`);
  process.exit(1);
}
