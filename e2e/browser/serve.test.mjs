// The canvas in a browser, end to end: a real PostgreSQL cluster, `switchyard serve` serving the built UI (dist/),
// a real `switchyard worker`, and headless Chromium driven by pointer and keyboard input (Playwright over CDP). A
// person signs in with a token, follows runs live, and approves a step; the server's API confirms what the page
// shows. Screenshots go to target/e2e-shots/browser-*.png.
import { execFileSync, spawn } from "node:child_process";
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { chromium } from "playwright-core";
import { chromiumPath, HEADLESS } from "../../scripts/chromium.mjs";

const root = resolve(import.meta.dirname, "../..");
const binary = join(root, "target/debug/switchyard");
const shots = join(root, "target/e2e-shots");
const work = mkdtempSync(join(tmpdir(), "switchyard-browser-"));
// The cluster runs as the `postgres` user when the tests run as root (CI): it must reach its folder.
chmodSync(work, 0o755);
const WORKFLOW = "Publish with approval";
/** A workflow whose run fails: its check answers nothing its output schema takes. */
const FAILING = "Weekly report";
const FAILING_YAML = `switchyard: 1
name: ${FAILING}
nodes:
  - {id: start, type: start}
  - id: check
    type: agent
    user_prompt: Check the week's numbers
    output_schema: {type: object, required: [verdict], properties: {verdict: {type: string}}}
edges:
  - {from: start, to: check}
`;

let db, base, token, browser;
const processes = [];

const freePort = () =>
  new Promise((ok) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => ok(port));
    });
  });

function start(args, name) {
  const child = spawn(binary, ["--db", db, ...args], { env: { ...process.env, SWITCHYARD_HOME: join(work, "home") }, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout.on("data", (d) => (output += d));
  child.stderr.on("data", (d) => (output += d));
  child.log = () => `${name}:\n${output}`;
  processes.push(child);
  return child;
}

async function api(method, path, body) {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}

/** Waits until `check` returns something truthy: what the run or the page does, never a fixed time. */
async function until(what, check, timeout = 60000) {
  const end = Date.now() + timeout;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}\n${processes.map((p) => p.log()).join("\n")}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

const runStatus = async (id) => (await api("GET", `/api/runs/${id}`)).body.run?.status;

before(async () => {
  mkdirSync(shots, { recursive: true });
  const folder = join(work, "workflows");
  mkdirSync(folder);
  for (const f of ["approval-flow.yaml", "approval-flow.script.yaml"]) copyFileSync(join(root, "examples", f), join(folder, f));
  writeFileSync(join(folder, "weekly-report.yaml"), FAILING_YAML);
  db = execFileSync("bash", [join(root, "scripts/postgres.sh"), "start", join(work, "pg")], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] }).trim().split("\n").at(-1);
  token = execFileSync(binary, ["--db", db, "token", "create", "browser-test"], { encoding: "utf8" }).trim().split("\n").at(-1);
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  start(["serve", "--workflows", folder, "--answers", join(folder, "approval-flow.script.yaml"), "--listen", `127.0.0.1:${port}`, "--ui", join(root, "dist")], "serve");
  start(["worker"], "worker");
  await until("the server", () => fetch(`${base}/healthz`).then((r) => r.ok).catch(() => false));
  await until("the workflows served", async () => {
    const served = (await api("GET", "/api/workflows")).body.workflows ?? [];
    return [WORKFLOW, FAILING].every((name) => served.some((w) => w.name === name));
  });
  browser = await chromium.launch({ executablePath: chromiumPath(), args: HEADLESS });
});

after(async () => {
  await browser?.close();
  for (const p of processes) p.kill("SIGTERM");
  await Promise.all(processes.map((p) => (p.exitCode === null ? new Promise((r) => p.once("exit", r)) : null)));
  if (db) execFileSync("bash", [join(root, "scripts/postgres.sh"), "stop", join(work, "pg")], { stdio: "ignore" });
  rmSync(work, { recursive: true, force: true });
});

/** A new page signed in as a person does: the token typed into the sign-in form. */
async function signedIn(path = "/") {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  await page.goto(`${base}${path}`);
  await page.getByTestId("sign-in-token").click();
  await page.keyboard.type(token);
  await page.keyboard.press("Enter");
  await page.getByTestId("node-start").waitFor();
  return page;
}

test("a wrong token is refused at sign-in, saying how to get one", async () => {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  await page.goto(base);
  await page.getByTestId("sign-in-token").click();
  await page.keyboard.type("sy_not-a-token");
  await page.keyboard.press("Enter");
  const problem = page.getByTestId("sign-in-problem");
  await problem.waitFor();
  assert.match(await problem.innerText(), /switchyard token create/);
  assert.equal(await page.getByTestId("node-start").count(), 0, "nothing of the app shows without a token");
  await page.screenshot({ path: join(shots, "browser-sign-in-refused.png") });
  await page.close();
});

test("Sign out forgets the token: the page asks for one again, also after a reload, and shows nothing of the app", async () => {
  const page = await signedIn();
  assert.ok(await page.evaluate(() => window.localStorage.getItem("switchyard.token")), "signed in, the browser keeps its token");
  await page.getByTestId("sign-out").click();
  await page.getByTestId("sign-in-token").waitFor();
  assert.equal(await page.getByTestId("node-start").count(), 0, "nothing of the app shows once signed out");
  assert.equal(await page.evaluate(() => window.localStorage.getItem("switchyard.token")), null, "the token is forgotten");
  await page.reload();
  await page.getByTestId("sign-in-token").waitFor();
  assert.equal(await page.getByTestId("node-start").count(), 0, "a reload does not sign the browser in again");
  await page.screenshot({ path: join(shots, "browser-signed-out.png") });
  await page.close();
});

test("a run started elsewhere is opened from History, followed live, and approved in the browser", async () => {
  const started = await api("POST", "/api/runs", { workflow: WORKFLOW });
  assert.equal(started.status, 201, JSON.stringify(started.body));
  const id = started.body.id;
  await until("the run to wait for its approval", async () => (await runStatus(id)) === "paused");

  const page = await signedIn();
  await page.getByTestId("tab-history").click();
  await page.getByTestId(`history-open-${id}`).click();
  // The run as the worker left it: the draft written, the review waiting for a person.
  await until("the draft shown done", async () => (await page.getByTestId("node-draft").getAttribute("data-status")) === "succeeded");
  await page.getByTestId("approval-dialog").waitFor();
  await page.screenshot({ path: join(shots, "browser-approval.png") });
  await page.getByTestId("approval-approve").click();

  // The worker carries the run on; the page hears it over the event stream, with no reload.
  await until("the run completed on the server", async () => (await runStatus(id)) === "completed");
  await until("the publish step shown done", async () => (await page.getByTestId("node-publish").getAttribute("data-status")) === "succeeded");
  assert.equal(await page.getByTestId("node-revise").getAttribute("data-status"), "skipped");
  await page.screenshot({ path: join(shots, "browser-followed.png") });

  // Who did what, as the page says it: this browser's token approved the step, and started the run through the API.
  await page.getByTestId("tab-run").click();
  const decided = page.getByTestId("run-decided-review-1");
  await decided.waitFor();
  assert.match(await decided.innerText(), /^approved by browser-test, \d\d:\d\d$/);
  await page.getByTestId("tab-history").click();
  assert.match(await page.getByTestId(`history-origin-${id}`).innerText(), /started by browser-test via the API/);
  await page.screenshot({ path: join(shots, "browser-who.png") });

  // What the page showed is what the run log holds: each event once, numbered without a gap.
  const events = (await api("POST", "/api/commands/run_events", { runId: id })).body;
  assert.deepEqual(events.map((e) => e.seq), events.map((_, i) => i + 1));
  const received = events.filter((e) => e.type === "approval:received");
  assert.equal(received.length, 1, "the decision was applied once");
  assert.equal(received[0].node, "review");
  await page.close();
});

test("Run in the browser starts the served workflow on the server and the canvas follows it from its first step", async () => {
  const page = await signedIn(`/?workflow=${encodeURIComponent(WORKFLOW)}`);
  assert.match(await page.getByTestId("run-on-server").innerText(), /Runs on 127\.0\.0\.1/);
  const before = (await api("GET", "/api/runs?limit=1000")).body.length;
  await page.getByTestId("run").click();
  await page.getByTestId("approval-dialog").waitFor();
  const runs = (await api("GET", "/api/runs?limit=1000")).body;
  assert.equal(runs.length, before + 1, "one run was started");
  const id = runs[0].id;
  assert.equal(await runStatus(id), "paused");
  await page.getByTestId("approval-reject").click();
  await until("the run completed on the server", async () => (await runStatus(id)) === "completed");
  await until("the revise step shown done", async () => (await page.getByTestId("node-revise").getAttribute("data-status")) === "succeeded");
  assert.equal(await page.getByTestId("node-publish").getAttribute("data-status"), "skipped");
  await page.screenshot({ path: join(shots, "browser-run.png") });
  await page.close();
});

test("History finds a failed run from an hour ago by its status and when it started, among runs of every age", async () => {
  // Two runs that fail, then the database's clock is moved back for them: one started 70 minutes ago, one 3 days ago.
  const failing = [];
  for (let i = 0; i < 2; i++) {
    const started = await api("POST", "/api/runs", { workflow: FAILING });
    assert.equal(started.status, 201, JSON.stringify(started.body));
    failing.push(started.body.id);
  }
  for (const id of failing) await until(`run ${id} to fail`, async () => (await runStatus(id)) === "failed");
  const [hourAgo, daysAgo] = failing;
  const backdate = (id, age) => execFileSync("psql", [db, "-qc", `UPDATE runs SET started_at = started_at - interval '${age}' WHERE id = '${id}'`]);
  backdate(hourAgo, "70 minutes");
  backdate(daysAgo, "3 days");

  const page = await signedIn(`/?workflow=${encodeURIComponent(FAILING)}`);
  await page.getByTestId("tab-history").click();
  const shown = () => page.locator('tr[data-testid^="history-"]').evaluateAll((rows) => rows.map((r) => r.dataset.testid.slice("history-".length)));
  const showing = (what, ids) => until(what, async () => JSON.stringify((await shown()).sort()) === JSON.stringify([...ids].sort()), 10000);

  // The status by the keyboard: Shift+Tab from the search box to the list, then the first letters of "failed".
  await page.getByTestId("history-search").click();
  await page.keyboard.press("Shift+Tab");
  await page.keyboard.type("fa");
  await showing("both failed runs", failing);
  // When they started: Tab past the search box to the list, then down to "in the last 24 hours".
  await page.keyboard.press("Tab");
  await page.keyboard.press("Tab");
  assert.equal(await page.evaluate(() => document.activeElement?.getAttribute("data-testid")), "history-since");
  await page.keyboard.press("ArrowDown");
  await page.keyboard.press("ArrowDown");
  await showing("only the run from an hour ago", [hourAgo]);
  await page.screenshot({ path: join(shots, "browser-history-filter.png") });
  // In the last hour, nothing failed: the list says so.
  await page.keyboard.press("ArrowUp");
  await until("the empty list said so", async () => /No run matches/.test(await page.getByTestId("history").innerText()), 10000);
  // Back to the last 24 hours, and the run opens on the canvas, its check shown failed.
  await page.keyboard.press("ArrowDown");
  await showing("the run from an hour ago again", [hourAgo]);
  await page.getByTestId(`history-open-${hourAgo}`).click();
  await until("the failed check shown", async () => (await page.getByTestId("node-check").getAttribute("data-status")) === "failed", 10000);
  await page.close();
});
