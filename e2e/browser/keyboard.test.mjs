// The editor from the keyboard, and what a browser offers, end to end: `switchyard serve` (a real PostgreSQL cluster)
// serving the built UI, headless Chromium driven by real key presses (Playwright over CDP). A person adds nodes after
// the selected one and connects two nodes without the mouse, reaches the node palette in two key presses, never tabs
// into a closed inspector; in the browser, commands only the desktop app can do say why instead of failing silently,
// and an address naming no served workflow says so. Screenshots go to target/e2e-shots/browser-keyboard-*.png.
import { execFileSync, spawn } from "node:child_process";
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
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
const work = mkdtempSync(join(tmpdir(), "switchyard-keyboard-"));
chmodSync(work, 0o755); // the cluster runs as `postgres` when the tests run as root
const WORKFLOW = "Publish with approval";

let db, base, token, browser, server;
let output = "";

const freePort = () =>
  new Promise((ok) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => ok(port));
    });
  });

async function until(what, check, timeout = 30000) {
  const end = Date.now() + timeout;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}\n${output}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

before(async () => {
  mkdirSync(shots, { recursive: true });
  const folder = join(work, "workflows");
  mkdirSync(folder);
  copyFileSync(join(root, "examples", "approval-flow.yaml"), join(folder, "approval-flow.yaml"));
  db = execFileSync("bash", [join(root, "scripts/postgres.sh"), "start", join(work, "pg")], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] }).trim().split("\n").at(-1);
  token = execFileSync(binary, ["--db", db, "token", "create", "keyboard-test"], { encoding: "utf8" }).trim().split("\n").at(-1);
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  server = spawn(binary, ["--db", db, "serve", "--workflows", folder, "--listen", `127.0.0.1:${port}`, "--ui", join(root, "dist")], { env: { ...process.env, SWITCHYARD_HOME: join(work, "home") }, stdio: ["ignore", "pipe", "pipe"] });
  server.stdout.on("data", (d) => (output += d));
  server.stderr.on("data", (d) => (output += d));
  await until("the server", () => fetch(`${base}/healthz`).then((r) => r.ok).catch(() => false));
  browser = await chromium.launch({ executablePath: chromiumPath(), args: HEADLESS });
});

after(async () => {
  await browser?.close();
  if (server && server.exitCode === null) {
    server.kill("SIGTERM");
    await new Promise((r) => server.once("exit", r));
  }
  if (db) execFileSync("bash", [join(root, "scripts/postgres.sh"), "stop", join(work, "pg")], { stdio: "ignore" });
  rmSync(work, { recursive: true, force: true });
});

/** A page signed in with the token typed; `errors` collects what the page throws or leaves unhandled. */
async function signedIn(path, ready = "node-start") {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  page.errors = [];
  page.on("pageerror", (e) => page.errors.push(String(e)));
  await page.goto(`${base}${path}`);
  await page.getByTestId("sign-in-token").click();
  await page.keyboard.type(token);
  await page.keyboard.press("Enter");
  await page.getByTestId(ready).waitFor();
  return page;
}

const served = `/?workflow=${encodeURIComponent(WORKFLOW)}`;
const nodeIds = (page) => page.evaluate(() => [...document.querySelectorAll(".react-flow__node")].map((n) => n.dataset.id));
const selectedIds = (page) => page.evaluate(() => [...document.querySelectorAll(".react-flow__node.selected")].map((n) => n.dataset.id));
/** Where the focus is: the element's tag, and whether it is in the inspector, the palette or the canvas. */
const focus = (page) =>
  page.evaluate(() => {
    const a = document.activeElement;
    return { tag: a?.tagName, inInspector: Boolean(a?.closest(".pane-inspector")), inPalette: Boolean(a?.closest(".palette")), testId: a?.getAttribute("data-testid") };
  });

test("with a node selected, Tab adds the chosen node after it, to its right, connected and selected, and the loop goes on from the keyboard", async () => {
  const page = await signedIn(served);
  await page.getByTestId("node-publish").waitFor();
  // Select publish from the keyboard: Find, its name, Enter.
  await page.keyboard.press("Control+k");
  await page.getByTestId("find").waitFor();
  await page.keyboard.type("publish");
  await page.keyboard.press("Enter");
  await until("publish selected", async () => (await selectedIds(page)).join() === "publish");
  // The canvas draws only the nodes in view: what was there is known from the file.
  const before = ["start", "draft", "review", "publish", "revise"];

  await page.keyboard.press("Tab");
  await page.getByTestId("quick-add").waitFor();
  await page.keyboard.type("agent");
  await page.screenshot({ path: join(shots, "browser-keyboard-add.png") });
  await page.keyboard.press("Enter");

  const added = await until("a node added", async () => (await nodeIds(page)).find((id) => !before.includes(id)));
  assert.deepEqual(await selectedIds(page), [added], "the new node is selected");
  await page.getByTestId(`rf__edge-publish->${added}`).waitFor({ state: "attached" });
  // Both cards measured in one frame: the view may still be moving to keep the new node in view beside the inspector
  // (two boxes read one after the other can come from two zoom levels).
  const [from, to] = await page.evaluate((ids) => ids.map((id) => document.querySelector(`[data-testid="node-${id}"]`).getBoundingClientRect().toJSON()), ["publish", added]);
  assert.ok(to.x > from.x + from.width, `placed to the right of publish (${JSON.stringify({ from, to })})`);
  assert.ok(Math.abs(to.y - from.y) < from.height, "level with publish");
  // The focus is on the new node's first inspector field: typing names it.
  await until("the focus in the inspector", async () => (await focus(page)).inInspector && ["INPUT", "TEXTAREA", "SELECT"].includes((await focus(page)).tag));
  await page.screenshot({ path: join(shots, "browser-keyboard-added.png") });

  // Escape gives the canvas its keys back; Tab adds the next node after the new one.
  await page.keyboard.press("Escape");
  await page.keyboard.press("Tab");
  await page.getByTestId("quick-add").waitFor();
  await page.keyboard.type("approv");
  await page.keyboard.press("Enter");
  const next = await until("a second node", async () => (await nodeIds(page)).find((id) => !before.includes(id) && id !== added));
  await page.getByTestId(`rf__edge-${added}->${next}`).waitFor({ state: "attached" });
  assert.deepEqual(await selectedIds(page), [next]);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test("C connects the selected node to one picked by name", async () => {
  const page = await signedIn(served);
  await page.getByTestId("node-revise").waitFor();
  assert.equal(await page.getByTestId("rf__edge-revise->publish").count(), 0);
  await page.keyboard.press("Control+k");
  await page.getByTestId("find").waitFor();
  await page.keyboard.type("revise");
  await page.keyboard.press("Enter");
  await until("revise selected", async () => (await selectedIds(page)).join() === "revise");
  await page.keyboard.press("c");
  await page.getByTestId("quick-connect").waitFor();
  await page.keyboard.type("publ");
  await page.screenshot({ path: join(shots, "browser-keyboard-connect.png") });
  await page.keyboard.press("Enter");
  await page.getByTestId("rf__edge-revise->publish").waitFor({ state: "attached" });

  // The node's menu offers both, with their keys.
  await page.getByTestId("node-draft").click({ button: "right" });
  assert.match(await page.getByTestId("menu-add-after").innerText(), /Tab/);
  assert.match(await page.getByTestId("menu-connect-to").innerText(), /\bC\b/);
  await page.getByTestId("menu-connect-to").click();
  await page.getByTestId("quick-connect").waitFor();
  assert.match(await page.getByTestId("quick-connect").innerText(), /Connect draft to/);
  assert.equal(await page.getByTestId("quick-connect-review").getAttribute("aria-disabled"), "true", "draft already leads to review");
  await page.keyboard.press("Escape");
  assert.deepEqual(page.errors, []);
  await page.close();
});

test("the node palette is two key presses from the page's start, and a closed inspector's fields are never tabbed into", async () => {
  const page = await signedIn(served, "node-publish"); // the served workflow shown, not the empty one before it
  await page.locator("body").focus();
  await page.keyboard.press("Tab");
  assert.equal((await focus(page)).testId, "skip-to-palette", "the first tab stop leads to the palette");
  await page.keyboard.press("Enter");
  assert.ok((await focus(page)).inPalette, "Enter puts the focus on the palette's first node type");
  await page.keyboard.press("Enter");
  const added = await until("a node added from the palette", async () => (await selectedIds(page))[0]);
  assert.ok(!["start", "draft", "review", "publish", "revise"].includes(added), added);

  // Nothing selected: the inspector closes, and walking the whole page with Tab never lands in it.
  await page.keyboard.press("Escape");
  await page.keyboard.press("Escape");
  await until("the inspector closed", async () => (await selectedIds(page)).length === 0 && (await page.locator(".pane-inspector").boundingBox()).width < 2);
  await page.locator("body").focus();
  const seen = [];
  for (let i = 0; i < 120; i++) {
    await page.keyboard.press("Tab");
    const f = await focus(page);
    assert.ok(!f.inInspector, `Tab press ${i + 1} reached the closed inspector (${f.tag} ${f.testId ?? ""})`);
    seen.push(f.tag);
  }
  assert.ok(seen.includes("BUTTON"), "Tab went through the page");
  await page.close();
});

test("in a browser, New, Open, Save and Settings are not offered, and their shortcuts say why", async () => {
  const page = await signedIn(served);
  for (const id of ["new", "open", "save", "settings-button"]) assert.equal(await page.getByTestId(id).count(), 0, `${id} is not in the toolbar`);
  await page.keyboard.press("Control+k");
  await page.getByTestId("find").waitFor();
  await page.keyboard.type("new");
  assert.doesNotMatch(await page.getByTestId("find-results").innerText(), /New workflow/i);
  await page.keyboard.press("Control+a");
  await page.keyboard.type("settings");
  assert.doesNotMatch(await page.getByTestId("find-results").innerText(), /Open Settings/i);
  await page.keyboard.press("Control+a");
  await page.keyboard.type("save");
  assert.doesNotMatch(await page.getByTestId("find-results").innerText(), /Save/i);
  await page.keyboard.press("Escape");

  for (const [keys, says] of [["Control+o", /Opening a file from this computer is not available in a browser/], ["Control+n", /New workflow is not available in a browser/], ["Control+s", /Saving is not available in a browser/]]) {
    await page.keyboard.press(keys);
    const message = page.getByTestId("message-error").filter({ hasText: says });
    await message.waitFor();
  }
  await page.screenshot({ path: join(shots, "browser-keyboard-not-here.png") });
  assert.deepEqual(page.errors, [], "no unhandled rejection");
  await page.close();
});

test("an address naming no served workflow says so and lists the served ones, with no editable canvas", async () => {
  const page = await signedIn(`/?workflow=${encodeURIComponent("Publish with aproval")}`, "no-such-workflow");
  assert.equal(await page.getByTestId("missing-name").innerText(), "Publish with aproval");
  const list = page.getByTestId("served-workflows");
  assert.match(await list.innerText(), /Publish with approval/);
  assert.equal(await page.locator(".react-flow").count(), 0, "no canvas");
  assert.doesNotMatch(await page.locator("body").innerText(), /Untitled/);
  await page.screenshot({ path: join(shots, "browser-keyboard-no-such-workflow.png") });
  // The listed workflow opens.
  await list.getByRole("link", { name: WORKFLOW }).click();
  await page.getByTestId("node-publish").waitFor();
  await page.close();
});
