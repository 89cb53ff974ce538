// An agent that adds two numbers with a real MCP server's `add` in two model turns, on a model server on 127.0.0.1
// that answers the OpenAI way, deterministically, counting what it is asked. Shared by the e2e files that need an
// agent's turns (fork.test.mjs, replay-turns.test.mjs): `sumAgent()` starts the model server and writes the settings
// that name it and the MCP server before the window opens, and puts the settings back after the file's tests.
import { after, before } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { join } from "node:path";
import { click, pointOf } from "./gestures.mjs";
import { nodeSel, openFile, root, waitStatus, work } from "./harness.mjs";

/** An OpenAI-compatible chat completion, streamed: text, or one tool call. */
function stream(res, { text = "", call = null }) {
  res.writeHead(200, { "content-type": "text/event-stream" });
  const chunk = (delta, finish = null, usage = undefined) => res.write(`data: ${JSON.stringify({ choices: [{ index: 0, delta, finish_reason: finish }], ...(usage && { usage }) })}\n\n`);
  if (call) chunk({ role: "assistant", tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: call.name, arguments: JSON.stringify(call.arguments) } }] });
  else chunk({ role: "assistant", content: text });
  chunk({}, call ? "tool_calls" : "stop", { prompt_tokens: 20, completion_tokens: 5, total_tokens: 25 });
  res.end("data: [DONE]\n\n");
}

/** The workflow: start → adder (the agent, offered `test/add`) → report (an agent with no tools). */
export const WORKFLOW = `switchyard: 1
name: Fork a sum
nodes:
  - {id: start, type: start, position: {x: 0, y: 120}}
  - {id: adder, type: agent, name: Adder, model: fake/m, user_prompt: Add 20 and 22 with the tool, tools: {mcp: [test/add]}, position: {x: 300, y: 120}}
  - {id: report, type: agent, name: Report, model: fake/m, user_prompt: "Report: {{ adder.text }}", position: {x: 620, y: 120}}
edges:
  - {from: start, to: adder}
  - {from: adder, to: report}
`;

/**
 * Starts the model server for this file's tests and names it (and the MCP server) in the settings. Returns what the
 * model server was asked, per node: `adder` (offered tools: the number of messages of each ask) and `report` (its
 * prompt).
 */
export function sumAgent() {
  const asked = { adder: [], report: [] };
  // The agent asks for the tool first, then says the sum; `report` repeats what reached it.
  const answer = (body, res) => {
    const messages = body.messages ?? [];
    const last = messages[messages.length - 1];
    if (body.tools?.length) {
      asked.adder.push(messages.length);
      const add = body.tools.map((t) => t.function.name).find((n) => n.endsWith("add"));
      if (last.role === "user") return stream(res, { call: { name: add, arguments: { a: 20, b: 22 } } });
      return stream(res, { text: `The sum is ${last.content}.` });
    }
    const user = messages.find((m) => m.role === "user")?.content ?? "";
    asked.report.push(user);
    return stream(res, { text: `Reported: ${user.replace(/^Report: /, "").split("\n\n")[0]}` });
  };
  const model = createServer((req, res) => {
    let raw = "";
    req.on("data", (d) => (raw += d));
    req.on("end", () => {
      if (req.method !== "POST" || !req.url.endsWith("/chat/completions")) return res.writeHead(404).end("{}");
      answer(JSON.parse(raw), res);
    });
  });
  const settingsFile = join(process.env.SWITCHYARD_HOME, "settings.yaml");
  const kept = existsSync(settingsFile) ? readFileSync(settingsFile, "utf8") : null;
  // Before the window opens: the settings name the model server and the MCP server (the window reads them at start).
  before(async () => {
    const python = process.env.SWITCHYARD_TEST_MCP_PYTHON;
    assert.ok(python, "SWITCHYARD_TEST_MCP_PYTHON must name a python with the mcp package (scripts/e2e.sh sets it)");
    await new Promise((r) => model.listen(0, "127.0.0.1", r));
    const server = join(root, "crates/engine/tests/mcp/server.py");
    writeFileSync(
      settingsFile,
      `providers:\n  - {id: fake, kind: openai, base_url: "http://127.0.0.1:${model.address().port}/v1"}\nmcp_servers:\n  test: {command: ${JSON.stringify(python)}, args: [${JSON.stringify(server)}, stdio]}\n`,
    );
  });
  after(() => {
    model.close();
    if (kept === null) rmSync(settingsFile, { force: true });
    else writeFileSync(settingsFile, kept);
  });
  return asked;
}

/**
 * Writes WORKFLOW to `name` in the tests' folder, opens it with the Open button and runs it on the model with the Run
 * button, to its end: two turns of `adder` (the tool call, then the sum) and one of `report`.
 */
export async function openAndRun(browser, name, asked) {
  const file = join(work, name);
  writeFileSync(file, WORKFLOW);
  await openFile(browser, file);
  await browser.$(nodeSel("adder")).waitForExist({ timeout: 5000 });
  await (await browser.$('[data-testid="run"]')).waitForClickable({ timeout: 10000 });
  await click(browser, await pointOf(browser, '[data-testid="run"]'));
  await waitStatus(browser, "report", "succeeded", 60000);
  assert.equal(asked.adder.length, 2, "adder: the tool call, then the sum");
}
