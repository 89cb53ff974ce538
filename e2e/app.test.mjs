// The real app, end to end: the Tauri binary with the embedded UI, driven through tauri-driver and WebKitWebDriver
// under Xvfb (scripts/e2e.sh starts them). Each test opens a fresh app window.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fit, launch, openFile, root, waitMessage, work } from "./harness.mjs";
import { click, pointOf } from "./gestures.mjs";

let browser;

/** A fresh app window, with the whole workflow in view so every node's state can be read. */
async function open() {
  browser = await launch();
  // Shift+1 can arrive before the window has focus on a loaded machine; as a person would, press it again until the
  // whole example is in view (nodes outside the view are not drawn).
  for (let attempt = 0; attempt < 5; attempt++) {
    await fit(browser);
    const inView = await browser
      .$('[data-testid="node-publish"]')
      .waitForExist({ timeout: 1000 })
      .then(() => true, () => false);
    if (inView) return;
  }
  assert.fail("the example never came fully into view");
}

const node = (id) => browser.$(`[data-testid="node-${id}"]`);
const status = async (id) => (await node(id)).getAttribute("data-status");
async function waitStatus(id, wanted, timeout = 15000) {
  await browser.waitUntil(async () => (await status(id)) === wanted, { timeout, timeoutMsg: `${id} never became ${wanted} (is ${await status(id)})` });
}
async function finalOrder(ids) {
  // The order nodes reached their final state: each node carries the sequence number of that event.
  const seqs = await Promise.all(ids.map(async (id) => [id, Number(await (await node(id)).getAttribute("data-finished"))]));
  return seqs.sort((a, b) => a[1] - b[1]).map(([id]) => id);
}
async function problemsText() {
  await (await browser.$('[data-testid="tab-problems"]')).click();
  return (await browser.$('[data-testid="problems"]')).getText();
}

before(async () => {
  await open();
});

after(async () => {
  await browser?.deleteSession();
});

test("the example opens, runs with its script, pauses for approval, and continues after Approve", async () => {
  assert.match(await (await browser.$('[data-testid="answers-path"]')).getText(), /approval-flow\.script\.yaml/);
  await (await browser.$('[data-testid="run"]')).click();
  await waitStatus("review", "waiting");
  assert.equal(await status("draft"), "succeeded");
  const dialog = await browser.$('[data-testid="approval-dialog"]');
  await dialog.waitForDisplayed();
  assert.match(await (await browser.$('[data-testid="approval-previous"]')).getText(), /Dark mode arrives next week/);
  await (await browser.$('[data-testid="approval-note"]')).setValue("ship it");
  await (await browser.$('[data-testid="approval-approve"]')).click();
  await waitStatus("publish", "succeeded");
  await waitStatus("revise", "skipped");
  assert.equal(await status("review"), "succeeded");
  assert.deepEqual(await finalOrder(["publish", "review", "draft", "start"]), ["start", "draft", "review", "publish"]);
});

test("a second run is rejected in the dialog and takes the reject branch", async () => {
  await (await browser.$('[data-testid="run"]')).waitForClickable({ timeout: 10000 });
  await (await browser.$('[data-testid="run"]')).click();
  await waitStatus("review", "waiting");
  await (await browser.$('[data-testid="approval-reject"]')).click();
  await waitStatus("revise", "succeeded");
  await waitStatus("publish", "skipped");
});

test("a validation error appears on the canvas, blocks Run, and clears on undo", async () => {
  await (await browser.$('[data-testid="add-agent"]')).click();
  await node("agent").waitForExist();
  const id = await browser.$('[data-testid="inspector-id"]');
  await browser.waitUntil(async () => (await id.getValue()) === "agent", { timeout: 5000, timeoutMsg: "the inspector does not show the new node" });
  await id.setValue("draft"); // a duplicate id
  await browser.keys("Tab"); // the field commits when it loses focus
  await browser.waitUntil(async () => !(await node("agent").isExisting()), { timeout: 5000, timeoutMsg: "the rename was not applied" });
  await browser.waitUntil(async () => (await problemsText()).includes("DUPLICATE_NODE_ID"), { timeout: 5000 });
  assert.equal(await (await browser.$('[data-testid="run"]')).isEnabled(), false);
  assert.match(await (await browser.$('[data-testid="run-blocked"]')).getProperty("textContent"), /used more than once/);
  await (await browser.$('[data-testid="canvas"]')).click({ x: 5, y: 5 });
  await browser.keys(["Control", "z"]);
  await browser.waitUntil(async () => !(await problemsText()).includes("DUPLICATE_NODE_ID"), { timeout: 5000 });
  assert.equal(await (await browser.$('[data-testid="run"]')).isEnabled(), true);
});

test("Export YAML writes the canonical document, identical to the command line's", async () => {
  const target = join(work, "exported.yaml");
  const example = join(root, "examples/approval-flow.yaml");
  await openFile(browser, example);
  await fit(browser);
  await browser.execute((path) => (window.__switchyardDialog = { save: path }), target);
  await (await browser.$('[data-testid="export"]')).click();
  await waitMessage(browser, /Exported canonical YAML to exported\.yaml/);
  const expected = execFileSync(join(root, "target/debug/switchyard"), ["export", join(root, "examples/approval-flow.yaml")], { encoding: "utf8" });
  assert.equal(readFileSync(target, "utf8"), expected);
});

test("a workflow node's child is checked beside the open file: a missing one is named in Problems", async () => {
  const file = join(work, "parent.yaml");
  writeFileSync(
    file,
    "switchyard: 1\nname: Parent\nnodes:\n  - {id: start, type: start, position: {x: 0, y: 0}}\n" +
      "  - {id: inner, type: workflow, workflow: children/missing.yaml, position: {x: 300, y: 0}}\nedges:\n  - {from: start, to: inner}\n",
  );
  await openFile(browser, file);
  await node("inner").waitForExist({ timeout: 5000 });
  await browser.waitUntil(async () => (await problemsText()).includes("CHILD_MISSING"), { timeout: 5000, timeoutMsg: `no CHILD_MISSING: ${await problemsText()}` });
  const problems = await problemsText();
  assert.match(problems, /children\/missing\.yaml/);
  assert.doesNotMatch(problems, /CHILD_NOT_CHECKED/, "the open file's path reached the check");
  if (process.env.DEBUG_SHOTS) await browser.saveScreenshot("/tmp/look/child-missing.png");
});

test("Open child workflow opens a workflow node's child, and the breadcrumb goes back to the parent", async () => {
  // The parent the test before opened; its child exists now.
  mkdirSync(join(work, "children"), { recursive: true });
  writeFileSync(join(work, "children/missing.yaml"), "switchyard: 1\nname: The child\nnodes:\n  - {id: start, type: start, position: {x: 0, y: 0}}\n  - {id: deep, type: agent, position: {x: 300, y: 0}}\nedges:\n  - {from: start, to: deep}\n");
  await click(browser, await pointOf(browser, '[data-testid="node-inner"]'));
  await (await browser.$('[data-testid="open-child"]')).waitForEnabled({ timeout: 5000 });
  await click(browser, await pointOf(browser, '[data-testid="open-child"]'));
  await node("deep").waitForExist({ timeout: 5000 });
  assert.match(await (await browser.$('[data-testid="doc-title"]')).getText(), /The child\s+missing\.yaml/);
  assert.equal(await (await browser.$('[data-testid="trail-0"]')).getText(), "parent.yaml");
  if (process.env.DEBUG_SHOTS) await browser.saveScreenshot("/tmp/look/child-opened.png");
  await click(browser, await pointOf(browser, '[data-testid="trail-0"]'));
  await node("inner").waitForExist({ timeout: 5000 });
  assert.match(await (await browser.$('[data-testid="doc-title"]')).getText(), /Parent\s+parent\.yaml/);
  assert.equal(await (await browser.$('[data-testid="trail"]')).isExisting(), false, "back at the top, no breadcrumb");
  // A double-click on the node opens it too.
  const { x, y } = await pointOf(browser, '[data-testid="node-inner"]');
  const press = [{ type: "pointerDown", button: 0 }, { type: "pause", duration: 40 }, { type: "pointerUp", button: 0 }];
  await browser.performActions([{ type: "pointer", id: "mouse", parameters: { pointerType: "mouse" }, actions: [
    { type: "pointerMove", origin: "viewport", x, y, duration: 0 }, ...press, { type: "pause", duration: 60 }, ...press,
  ] }]);
  await browser.releaseActions();
  await node("deep").waitForExist({ timeout: 5000 });
  await click(browser, await pointOf(browser, '[data-testid="trail-0"]'));
  await node("inner").waitForExist({ timeout: 5000 });
});

test("an AgentFlow file with legacy data imports, with its notes shown", async () => {
  const file = join(work, "legacy.json");
  writeFileSync(
    file,
    JSON.stringify({
      nodes: [
        { id: "s", type: "start", x: 0, y: 0, data: { initialInput: "hello" } },
        { id: "ask", type: "input", x: 250, y: 0, data: { prompt: "OK?" } },
        { id: "gate", type: "if", x: 500, y: 0, data: { condition: "yes", conditions: [] } },
      ],
      connections: [
        { source: "s", target: "ask", sourceHandle: "output", targetHandle: "input" },
        { source: "ask", target: "gate", sourceHandle: "approve" },
      ],
    }),
  );
  await openFile(browser, file);
  await node("ask").waitForExist({ timeout: 5000 });
  assert.match(await (await node("ask")).getAttribute("class"), /\bwf-approval\b/, "the legacy input node is an approval (its card has the approval icon)");
  await waitMessage(browser, /Imported agentflow/);
  await (await browser.$("button*=Import notes")).click();
  assert.match(await (await browser.$(".bottom-body")).getText(), /legacy type `input` became `approval`/);
});

test("a paused run survives quitting the app and continues after a restart", async () => {
  const example = join(root, "examples/approval-flow.yaml");
  await openFile(browser, example);
  await fit(browser);
  await (await browser.$('[data-testid="run"]')).click();
  await waitStatus("review", "waiting");
  await browser.deleteSession(); // quits the app with the run paused
  await open();
  const paused = await browser.$('[data-testid="paused-runs"]');
  await paused.waitForExist({ timeout: 10000 });
  await paused.selectByIndex(1);
  await (await browser.$('[data-testid="approval-dialog"]')).waitForDisplayed({ timeout: 10000 });
  assert.equal(await status("draft"), "succeeded", "what ran before the pause is shown again");
  await (await browser.$('[data-testid="approval-approve"]')).click();
  await (await browser.$('[data-testid="approval-dialog"]')).waitForExist({ reverse: true, timeout: 5000 });
  await fit(browser);
  await waitStatus("publish", "succeeded");
  assert.equal(await status("revise"), "skipped");
});

test("the app killed mid-run offers the interrupted run at launch, continues it without re-running what completed, and replays it", async () => {
  const wf = join(work, "slow.yaml");
  writeFileSync(
    wf,
    `switchyard: 1
name: slow review
nodes:
  - {id: start, type: start, position: {x: 0, y: 0}}
  - {id: draft, type: agent, user_prompt: Write, position: {x: 300, y: 0}}
  - {id: review, type: agent, user_prompt: "Review {{ draft.text }}", position: {x: 600, y: 0}}
  - {id: ship, type: agent, position: {x: 900, y: 0}}
edges:
  - {from: start, to: draft}
  - {from: draft, to: review}
  - {from: review, to: ship}
`,
  );
  // The script beside the workflow is picked for it; `review` takes a minute.
  const script = join(work, "slow.script.yaml");
  writeFileSync(script, "nodes: {draft: {text: D}, review: {text: R, delay_ms: 60000}, ship: {text: S}}\n");
  await openFile(browser, wf);
  await fit(browser);
  await (await browser.$('[data-testid="run"]')).click();
  await waitStatus("review", "running");
  // The app dies as a crash would: SIGKILL, no chance to say how the run ended.
  execFileSync("pkill", ["-KILL", "-f", "target/debug/switchyard-app"]);
  await browser.deleteSession().catch(() => undefined);
  const cli = join(root, "target/debug/switchyard");
  const [row] = JSON.parse(execFileSync(cli, ["runs", "--json"], { encoding: "utf8" }));
  assert.equal(row.status, "interrupted");
  // The same answers without the delay: only `review` (in flight when the app died) and `ship` run again.
  writeFileSync(script, "nodes: {draft: {text: NOT AGAIN}, review: {text: R}, ship: {text: S}}\n");

  await open();
  await waitMessage(browser, /interrupted when Switchyard stopped/);
  const entry = await browser.$(`[data-testid="history-${row.id}"]`);
  await entry.waitForDisplayed({ timeout: 5000 });
  assert.equal(await entry.getAttribute("data-status"), "interrupted");
  await click(browser, await pointOf(browser, `[data-testid="history-resume-${row.id}"]`));
  await fit(browser);
  await waitStatus("ship", "succeeded");
  assert.equal(await status("draft"), "succeeded");
  const shown = JSON.parse(execFileSync(cli, ["show", row.id, "--json"], { encoding: "utf8" }));
  assert.equal(shown.status, "completed");
  assert.equal(shown.results.draft.data.text, "D", "draft's recorded result, not a new run of it");
  assert.equal(shown.trace.steps.filter((s) => s.node === "draft").length, 1);

  // Replay plays it again on the canvas from the recording.
  await (await browser.$('[data-testid="tab-history"]')).click();
  await (await browser.$(`[data-testid="history-replay-${row.id}"]`)).click();
  await waitMessage(browser, /Replaying run .* no model or tool is called/);
  await waitStatus("ship", "succeeded");
  assert.equal(await status("review"), "succeeded");
});
