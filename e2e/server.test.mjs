// The desktop app connected to a server: scripts/e2e.sh starts PostgreSQL, `switchyard serve` and a worker, and gives
// the app the token in SWITCHYARD_TOKEN. Settings name the server; History lists its runs beside this computer's; a
// run waiting on the server is opened, followed live and approved from the app, and the server says it completed.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { chord, click, KEY, pointOf, type } from "./gestures.mjs";
import { appForFile, frames, waitStatus } from "./harness.mjs";

const server = process.env.SWITCHYARD_E2E_SERVER;
const token = process.env.SWITCHYARD_TOKEN;
const settingsFile = join(process.env.SWITCHYARD_HOME, "settings.yaml");
const kept = existsSync(settingsFile) ? readFileSync(settingsFile, "utf8") : null;

async function api(method, path, body) {
  const r = await fetch(`${server}${path}`, { method, headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: body && JSON.stringify(body) });
  return { status: r.status, body: await r.json() };
}

/** Waits for what the run or the window does (polling its state), never a fixed time. */
async function until(what, check, timeout = 30000) {
  const end = Date.now() + timeout;
  for (;;) {
    if (await check()) return;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

let waiting;
// Before the window opens: the settings name the server (the token stays in the environment), and a run started by
// someone else waits on the server for its approval.
before(async () => {
  assert.ok(server && token, "scripts/e2e.sh starts the server and exports SWITCHYARD_E2E_SERVER and SWITCHYARD_TOKEN");
  writeFileSync(settingsFile, `server:\n  url: ${server}\n  token_env: SWITCHYARD_TOKEN\n`);
  const started = await api("POST", "/api/runs", { workflow: "Publish with approval" });
  assert.equal(started.status, 201, JSON.stringify(started.body));
  waiting = started.body.id;
  await until("the server's run to wait for its approval", async () => (await api("GET", `/api/runs/${waiting}`)).body.run?.status === "paused");
});

let browser;
appForFile((b) => (browser = b));

after(() => {
  if (kept === null) rmSync(settingsFile, { force: true });
  else writeFileSync(settingsFile, kept);
});

test("a run waiting on the server is listed in History, followed live, and approved from the desktop app", async () => {
  await click(browser, await pointOf(browser, '[data-testid="tab-history"]'));
  const tag = await browser.$(`[data-testid="history-server-${waiting}"]`);
  await tag.waitForDisplayed({ timeout: 15000 });
  assert.equal(await tag.getText(), new URL(server).host, "the run is marked with the server it is on");
  assert.equal(await (await browser.$(`[data-testid="history-resume-${waiting}"]`)).isExisting(), false, "the server's workers resume it, not this app");

  await click(browser, await pointOf(browser, `[data-testid="history-open-${waiting}"]`));
  await waitStatus(browser, "draft", "succeeded");
  assert.match(await (await browser.$('[data-testid="doc-title"]')).getText(), /not saved yet/, "the server's file is not this computer's to save");
  const dialog = await browser.$('[data-testid="approval-dialog"]');
  await dialog.waitForDisplayed({ timeout: 15000 });
  await click(browser, await pointOf(browser, '[data-testid="approval-approve"]'));

  // The server's worker carries the run on; the window hears it over the server's event stream.
  await waitStatus(browser, "publish", "succeeded", 30000);
  assert.equal(await (await browser.$('[data-testid="node-revise"]')).getAttribute("data-status"), "skipped");
  const run = (await api("GET", `/api/runs/${waiting}`)).body.run;
  assert.equal(run.status, "completed");
  const events = (await api("POST", "/api/commands/run_events", { runId: waiting })).body;
  const received = events.filter((e) => e.type === "approval:received");
  assert.deepEqual(received.map((e) => [e.node, e.decision]), [["review", "approve"]], "decided once, from the app");
});

test("Settings name the server and refuse a token pasted where the name of its variable goes", async () => {
  await click(browser, await pointOf(browser, '[data-testid="settings-button"]'));
  const url = await browser.$('[data-testid="settings-server-url"]');
  await url.waitForDisplayed({ timeout: 10000 });
  assert.equal(await url.getValue(), server);
  // The dialog scrolls to its Server section, as a person scrolls it with the wheel.
  await (await browser.$('[data-testid="settings-server-token-env"]')).scrollIntoView({ block: "center" });
  await click(browser, await pointOf(browser, '[data-testid="settings-server-token-env"]'));
  await chord(browser, [KEY.control, "a"]);
  await type(browser, "sy_not-a-variable");
  await click(browser, await pointOf(browser, '[data-testid="settings-save"]'));
  const problem = await browser.$('[data-testid="problem-server.token_env"]');
  await problem.waitForDisplayed({ timeout: 10000 });
  assert.match(await problem.getText(), /never the token/);
  assert.match(readFileSync(settingsFile, "utf8"), /token_env: SWITCHYARD_TOKEN/, "nothing was written");
  await chord(browser, [KEY.escape]);
  await frames(browser);
});
