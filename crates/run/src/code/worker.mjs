// Switchyard's JavaScript worker: runs code steps of one run, one at a time, in one warm Node.js process.
//
// Requests come on stdin, one JSON object a line: {"node", "key", "code" | "module", "names"}. The step's idempotency
// key is set in the environment as SWITCHYARD_IDEMPOTENCY_KEY while it runs. Inline code is the body of
// an async function whose parameters are the names (state, input, context, ...); what it returns is the step's
// output. A module's default export (or its `run`) is called with the state and a context object (OpenExpertise's
// tool contract). Replies are written on stdout as one line each, starting with the record separator and the nonce
// Switchyard gave this process (SWITCHYARD_WORKER), so anything else the code prints is told apart. Before each
// reply the marker alone goes to stderr as a line, so everything the step wrote there is read before it ends.
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";

const NONCE = process.env.SWITCHYARD_WORKER ?? "";
delete process.env.SWITCHYARD_WORKER;
const AsyncFunction = (async () => {}).constructor;
// `new AsyncFunction(...)` puts two lines of its own above the body.
const BODY_OFFSET = 2;

function send(message) {
  // Writes to pipes are synchronous on Linux: the stderr marker lands after all the step wrote there.
  process.stderr.write("\x1e" + NONCE + "\n");
  process.stdout.write("\x1e" + NONCE + JSON.stringify(message) + "\n");
}

function where(error) {
  const match = /<anonymous>:(\d+):\d+/.exec(String(error?.stack ?? ""));
  return match ? ` (line ${Number(match[1]) - BODY_OFFSET})` : "";
}

async function callModule(path, names) {
  const module = await import(pathToFileURL(path).href);
  const run = typeof module.default === "function" ? module.default : module.run;
  if (typeof run !== "function") {
    throw new Error(`${path} exports no function: export a default function (or one named run)`);
  }
  return await run(names.state, names);
}

async function handle(request) {
  const names = request.names;
  if (request.module) return await callModule(request.module, names);
  const step = new AsyncFunction(...Object.keys(names), request.code);
  return await step(...Object.values(names));
}

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  const request = JSON.parse(line);
  process.env.SWITCHYARD_IDEMPOTENCY_KEY = request.key ?? "";
  let reply;
  try {
    const value = await handle(request);
    try {
      reply = { ok: value === undefined ? null : JSON.parse(JSON.stringify(value)) };
    } catch (error) {
      reply = { error: `the step returned something that is not JSON data (${error.message})` };
    }
  } catch (error) {
    if (error?.stack) process.stderr.write(String(error.stack) + "\n");
    const name = error?.name ?? "Error";
    reply = { error: `${name}: ${error?.message ?? String(error)}${where(error)}` };
  }
  send(reply);
}
